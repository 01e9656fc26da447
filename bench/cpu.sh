#!/usr/bin/env bash
# CPU per call, by process and by gateway thread, against the static nginx of
# bench/nginx.sh: what each call costs wrk, the static nginx and the proxy in front of it
# (nginx itself as a proxy, the gateway with the store off, the gateway with the store
# on), in microseconds of user and kernel time, read from /proc before and after a wrk
# run. Calls per second swing with the machine from minute to minute; the CPU a call
# costs swings far less, and on cores the load keeps busy it is what bounds the ratios the
# performance targets name. The script prints, for each target ratio, the most CPU a call
# may cost the proxy for that ratio to be reachable, beside what it costs. Run it with
# nothing else busy: the budgets assume wrk, nginx and the proxy share the cores alone.
#   cargo build --release -p switchyard-cli && bench/cpu.sh
#   ROUNDS=5 DUR=4s CONNS=32 bench/cpu.sh
# The summary gives each case as times the floor — nginx itself proxying the same load in
# the same run — beside issue 37's target, and the store's own threads per call. The
# spread-apart case streams from an upstream that writes each event on its own
# (bench/spread_upstream.py), as a model does, through nginx and through the gateway.
# Peer gateways, each proxying the same load to the static nginx, when given:
#   LITELLM_BIN=venv/bin/litellm        (pip install 'litellm[proxy]')
#   PORTKEY_JS=node_modules/@portkey-ai/gateway/build/start-server.js
#                                       (npm install @portkey-ai/gateway)
#   TENSORZERO_BIN=target/release/gateway   (TensorZero's gateway, built from its source)
# Needs nginx, wrk and GNU time (installed with apt-get when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nginx >/dev/null && command -v wrk >/dev/null && [ -x /usr/bin/time ] ||
  apt-get install -y nginx wrk time >/dev/null || {
  echo "bench/cpu.sh needs nginx, wrk and GNU time: apt-get install -y nginx wrk time" >&2
  exit 1
}
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
DUR=${DUR:-4s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
NGINX_PORT=${NGINX_PORT:-4430}
GW_PORT=${GW_PORT:-4431}
PROXY_PORT=${PROXY_PORT:-4432}
SPREAD_PORT=${SPREAD_PORT:-4433}
SPREAD_PROXY_PORT=${SPREAD_PROXY_PORT:-4434}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-cpu.XXXXXX")
ulimit -n 65536 2>/dev/null || true

. bench/nginx-lib.sh
fixed_bodies 20
nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
nginx_proxy "$WORK/proxy" "$PROXY_PORT" "$NGINX_PORT"
PROXY_PID=$NGINX_STARTED
SSE="$SSE" python3 bench/spread_upstream.py "$SPREAD_PORT" &
SPREAD_PID=$!
nginx_proxy "$WORK/spread-proxy" "$SPREAD_PROXY_PORT" "$SPREAD_PORT"
SPREAD_PROXY_PID=$NGINX_STARTED
PEER_PIDS=
if [ -n "${LITELLM_BIN:-}" ]; then
  cat >"$WORK/litellm.yaml" <<YAML
model_list:
  - model_name: fixed
    litellm_params: {model: openai/fixed, api_base: "http://127.0.0.1:$NGINX_PORT/v1", api_key: none}
YAML
  # Its proxy refuses to start without a master key; the calls carry it.
  LITELLM_KEY="sk-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
  LITELLM_MASTER_KEY="$LITELLM_KEY" "$LITELLM_BIN" --config "$WORK/litellm.yaml" --host 127.0.0.1 \
    --port 4435 --num_workers 1 >"$WORK/litellm.log" 2>&1 &
  LITELLM_PID=$!
  PEER_PIDS="$PEER_PIDS $LITELLM_PID"
fi
if [ -n "${PORTKEY_JS:-}" ]; then
  node "$PORTKEY_JS" --port=4436 >"$WORK/portkey.log" 2>&1 &
  PORTKEY_PID=$!
  PEER_PIDS="$PEER_PIDS $PORTKEY_PID"
fi
if [ -n "${TENSORZERO_BIN:-}" ]; then
  # TensorZero's gateway standalone (no ClickHouse or PostgreSQL), its OpenAI-compatible
  # endpoint in front of the same static nginx.
  cat >"$WORK/tensorzero.toml" <<TOML
[gateway]
observability.enabled = false
disable_pseudonymous_usage_analytics = true

[models.fixed]
routing = ["upstream"]

[models.fixed.providers.upstream]
type = "openai"
model_name = "fixed"
api_base = "http://127.0.0.1:$NGINX_PORT/v1/"
api_key_location = "none"
TOML
  RUST_LOG=warn "$TENSORZERO_BIN" --config-file "$WORK/tensorzero.toml" --bind-address 127.0.0.1:4437 \
    >"$WORK/tensorzero.log" 2>&1 &
  TENSORZERO_PID=$!
  PEER_PIDS="$PEER_PIDS $TENSORZERO_PID"
fi
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
echo "  ngxspread: {base_url: \"http://127.0.0.1:$SPREAD_PORT/v1\", apis: [chat], key_required: false, prices: {fixed: {input: 1, output: 2}}}" >>"$WORK/gateway.yaml"
GW_PID=
trap 'gateway_stop; kill $NGINX_PID $PROXY_PID $SPREAD_PID $SPREAD_PROXY_PID $PEER_PIDS 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
start_gateway() { gateway_start "$BIN" "$WORK/gateway.yaml" "$@"; } # extra serve arguments
sleep 0.3
# A peer serves once it answers a call (LiteLLM takes seconds to start).
HI='{"model":"fixed","messages":[{"role":"user","content":"hi"}]}'
ready() { # url header [header [body]]
  for _ in $(seq 600); do
    curl -sf -o /dev/null -H 'content-type: application/json' -H "$2" -H "${3:-x-none: 1}" \
      -d "${4:-$HI}" "$1" && return 0
    sleep 0.1
  done
  echo "a peer at $1 did not start" >&2
  exit 1
}
[ -n "${LITELLM_BIN:-}" ] && ready "http://127.0.0.1:4435/v1/chat/completions" "authorization: Bearer $LITELLM_KEY"
PORTKEY_HEADERS="x-portkey-provider: openai;x-portkey-custom-host: http://127.0.0.1:$NGINX_PORT/v1;authorization: Bearer none"
[ -n "${TENSORZERO_BIN:-}" ] && ready "http://127.0.0.1:4437/openai/v1/chat/completions" "x-none: 1" \
  "x-none: 2" '{"model":"tensorzero::model_name::fixed","messages":[{"role":"user","content":"hi"}]}'
[ -n "${PORTKEY_JS:-}" ] && ready "http://127.0.0.1:4436/v1/chat/completions" "x-portkey-provider: openai" "x-portkey-custom-host: http://127.0.0.1:$NGINX_PORT/v1"
true
# nginx's worker, not its master, serves the calls.
worker() { pgrep -P "$1" nginx | head -1; }
STATIC=$(worker "$NGINX_PID")
PROXY=$(worker "$PROXY_PID")
SPREAD_PROXY=$(worker "$SPREAD_PROXY_PID")

# "pid:tid:name utime stime" (clock ticks) of every thread of each pid given (the kernel
# keeps a thread's first 15 bytes of name: switchyard-lane, switchyard-reco, ...).
ticks() {
  for pid in "$@"; do
    for task in /proc/"$pid"/task/*; do
      printf '%s:%s:%s %s\n' "$pid" "${task##*/}" "$(tr ' ' _ <"$task/comm")" "$(awk '{print $14, $15}' "$task/stat")"
    done
  done
}

measure() { # name proxy-pid url body
  local name=$1 proxy=$2 url=$3
  ticks "$STATIC" ${proxy:+"$proxy"} >"$WORK/before"
  BODY="$4" /usr/bin/time -f '%U %S' -o "$WORK/wrk.time" \
    wrk -t1 -c"$CONNS" -d"$DUR" -s bench/post.lua "$url" >"$WORK/wrk.out"
  ticks "$STATIC" ${proxy:+"$proxy"} >"$WORK/after"
  python3 - "$name" "$round" "$STATIC" "${proxy:-0}" "$WORK/before" "$WORK/after" "$WORK/wrk.out" "$WORK/wrk.time" "$(getconf CLK_TCK)" <<'EOF'
import re, sys
name, rnd, static, proxy, before, after, out, wrk_time, hz = sys.argv[1:]
def read(path):
    return {k: (int(u), int(s)) for k, u, s in (l.split() for l in open(path))}
b, a = read(before), read(after)
text = open(out).read()
calls = int(re.search(r"(\d+) requests in", text).group(1))
if re.search(r"Non-2xx", text):
    sys.exit(f"{name}: some answers were not 2xx:\n{text}")
us = lambda ticks: ticks / int(hz) / calls * 1e6
wu, ws = map(float, open(wrk_time).read().split()[-2:])
parts = [("wrk", wu / calls * 1e6, ws / calls * 1e6)]
for label, pid in (("static", static), ("proxy", proxy)):
    if pid == "0":  # a direct case: no proxy
        continue
    threads = {k: (a[k][0] - b.get(k, (0, 0))[0], a[k][1] - b.get(k, (0, 0))[1]) for k in a if k.startswith(pid + ":")}
    parts.append((label, us(sum(t[0] for t in threads.values())), us(sum(t[1] for t in threads.values()))))
    if label == "proxy":
        by = {}
        for k, (u, s) in threads.items():
            thread = k.split(":", 2)[2]  # the lanes (switchyard-lane-N, cut to 15 bytes) together
            by.setdefault(thread, [0, 0])
            by[thread][0] += u
            by[thread][1] += s
        busy = [(t, us(u), us(s)) for t, (u, s) in sorted(by.items()) if u + s > 0]
seconds = float(re.search(r"in ([\d.]+)s", text).group(1))
print(f"round {rnd} {name:18} calls/s {calls / seconds:.0f}  "
      + "  ".join(f"{l} {u:.1f}+{s:.1f}" for l, u, s in parts))
if proxy != "0":
    print(f"round {rnd} {name:18} threads " + "  ".join(f"{t} {u:.1f}+{s:.1f}" for t, u, s in busy))
EOF
}

ASK='"messages":[{"role":"user","content":"hello there, how are you today?"}]}'
D="http://127.0.0.1:$NGINX_PORT"
G="http://127.0.0.1:$GW_PORT/v1/chat/completions"
for round in $(seq "$ROUNDS"); do
  measure direct "" "$D/v1/chat/completions" "{\"model\":\"fixed\",$ASK"
  measure nginx-proxy "$PROXY" "http://127.0.0.1:$PROXY_PORT/v1/chat/completions" "{\"model\":\"fixed\",$ASK"
  start_gateway
  measure gateway-nostore "$GW_PID" "$G" "{\"model\":\"ngx/fixed\",$ASK"
  gateway_stop
  measure direct-msg "" "$D/v1/messages" "{\"model\":\"fixed\",$ASK"
  measure direct-sse "" "$D/sse/v1/chat/completions" "{\"model\":\"fixed\",\"stream\":true,$ASK"
  measure nginx-proxy-sse "$PROXY" "http://127.0.0.1:$PROXY_PORT/sse/v1/chat/completions" "{\"model\":\"fixed\",\"stream\":true,$ASK"
  # The gateway as `serve --data-dir` runs it: metering and the store on.
  start_gateway --data-dir "$WORK/data-$round"
  measure gateway "$GW_PID" "$G" "{\"model\":\"ngx/fixed\",$ASK"
  measure translated "$GW_PID" "$G" "{\"model\":\"ngxm/fixed\",$ASK"
  measure gateway-sse "$GW_PID" "$G" "{\"model\":\"ngxs/fixed\",\"stream\":true,$ASK"
  measure gateway-spread "$GW_PID" "$G" "{\"model\":\"ngxspread/fixed\",\"stream\":true,$ASK"
  gateway_stop
  if [ -n "${LITELLM_BIN:-}" ]; then
    KEY="$LITELLM_KEY" measure litellm "$LITELLM_PID" "http://127.0.0.1:4435/v1/chat/completions" "{\"model\":\"fixed\",$ASK"
  fi
  if [ -n "${TENSORZERO_BIN:-}" ]; then
    measure tensorzero "$TENSORZERO_PID" "http://127.0.0.1:4437/openai/v1/chat/completions" "{\"model\":\"tensorzero::model_name::fixed\",$ASK"
  fi
  if [ -n "${PORTKEY_JS:-}" ]; then
    HEADERS="$PORTKEY_HEADERS" measure portkey "$PORTKEY_PID" "http://127.0.0.1:4436/v1/chat/completions" "{\"model\":\"fixed\",$ASK"
  fi
  measure nginx-proxy-spread "$SPREAD_PROXY" "http://127.0.0.1:$SPREAD_PROXY_PORT/v1/chat/completions" "{\"model\":\"fixed\",\"stream\":true,$ASK"
  rm -rf "$WORK/data-$round"
done | tee "$WORK/rounds.txt"

# CPU per call in µs (user+kernel), each round's and the median; then the budget. Two
# cores kept busy by the load serve calls/s = cores / (CPU per call of every process), so a
# proxy reaches a ratio R of direct only if wrk + static + proxy <= (wrk + static of
# direct) / R: the proxy's budget per call is that bound less what wrk and the static
# nginx spend on a proxied call.
python3 - "$WORK/rounds.txt" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ (\S+)\s+calls/s (\d+)\s+(.*)", line)
    if m:
        cpu = {l: float(u) + float(s) for l, u, s in re.findall(r"(\w+) ([\d.]+)\+([\d.]+)", m[3])}
        rows.setdefault(m[1], []).append((int(m[2]), cpu))
med = lambda xs: statistics.median(xs)
print()
for name, rs in rows.items():
    total = med([sum(c.values()) for _, c in rs])
    print(f"{name:18} median calls/s {med([r for r, _ in rs]):8.0f}   CPU per call, µs: "
          + "  ".join(f"{l} {med([c[l] for _, c in rs]):.1f}" for l in rs[0][1]) + f"   all {total:.1f}")
def cpu(name, part):
    return med([sum(c.values()) if part == "all" else c[part] for _, c in rows[name]])
# (proxied case, its direct case, the target ratio): the proxy's budget per call.
for name, direct, target in (
    ("nginx-proxy", "direct", 1 / 3),
    ("gateway-nostore", "direct", 1 / 3),
    ("gateway", "direct", 1 / 3),
    ("translated", "direct-msg", 0.2),
    ("nginx-proxy-sse", "direct-sse", 1 / 3),
    ("gateway-sse", "direct-sse", 1 / 3),
):
    base = cpu(direct, "wrk") + cpu(direct, "static")
    around = cpu(name, "wrk") + cpu(name, "static")
    proxy = cpu(name, "proxy")
    print(f"{name:18} for {target:.3f} of {direct} the proxy may use {base / target - around:5.1f} µs per call;"
          f" it uses {proxy:5.1f} (so at most {base / (around + proxy):.3f} of {direct})")
# Store on / store off >= 0.9: the store may add a ninth of the store-off call's CPU.
off, on = cpu("gateway-nostore", "all"), cpu("gateway", "all")
print(f"{'store on / off':18} for 0.9 the store may add {off / 0.9 - off:5.1f} µs per call; it adds {on - off:5.1f}"
      f" (so at most {off / on:.3f})")
# The store's own threads (the gateway's store, the recorder's writer, the index; kernel
# names cut to 15 bytes): at most 5 µs per call.
store = {}
for line in open(sys.argv[1]):
    m = re.match(r"round \d+ gateway\s+threads (.*)", line)
    if m:
        parts = re.findall(r"(\S+) ([\d.]+)\+([\d.]+)", m[1])
        store.setdefault("all", []).append(sum(
            float(u) + float(s) for t, u, s in parts
            if t.startswith(("switchyard-gate", "switchyard-reco", "switchyard-inde"))))
if store:
    threads = med(store["all"])
    print(f"{'store threads':18} {threads:5.1f} µs per call (target <= 5){'  met' if threads <= 5 else '  not met'}")
# Issue 37: the proxy's CPU per call as times the floor, nginx proxying the same load.
print()
print("CPU per call of the proxy, times the floor (nginx as a proxy, same run), medians:")
for name, floor, target in (
    ("gateway", "nginx-proxy", 2.5),
    ("gateway-nostore", "nginx-proxy", None),
    ("translated", "nginx-proxy", 4.0),
    ("gateway-sse", "nginx-proxy-sse", 2.5),
    ("gateway-spread", "nginx-proxy-spread", 2.5),
    ("litellm", "nginx-proxy", None),
    ("portkey", "nginx-proxy", None),
    ("tensorzero", "nginx-proxy", None),
):
    if name not in rows or floor not in rows:
        continue
    ratio = cpu(name, "proxy") / cpu(floor, "proxy")
    goal = f"target <= {target}x" if target else ""
    print(f"  {name:18} {cpu(name, 'proxy'):6.1f} µs / {cpu(floor, 'proxy'):5.1f} = {ratio:4.2f}x   {goal}"
          f"{'' if not target else ('  met' if ratio <= target else '  not met')}")
EOF
