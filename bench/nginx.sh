#!/usr/bin/env bash
# The gateway against the fastest upstream this machine can run: a static nginx
# (worker_processes 1) answering a fixed chat completion, a fixed Messages reply and a
# fixed chat SSE stream on loopback. Direct and through the gateway are measured in the
# same run, alternating, with wrk (one thread, keep-alive); the store is on.
#   cargo build --release -p switchyard-cli && bench/nginx.sh
#   BASE_BIN=/path/to/older/switchyard bench/nginx.sh     # also measures an older build
#   STORE=0 ONLY='gateway-32|direct-32' ROUNDS=7 bench/nginx.sh   # no store; some cases only
#   PG=1 bench/nginx.sh    # also the PostgreSQL store (a server started with scripts/pg),
#                          # and a key with a budget and rpm/tpm on either store
# Needs nginx and wrk (installed with apt-get when missing). Writes each measurement, then
# the ratios the performance targets name (each round's own, and their median).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in nginx wrk; do
  command -v "$tool" >/dev/null || apt-get install -y nginx wrk >/dev/null || {
    echo "bench/nginx.sh needs nginx and wrk: apt-get install -y nginx wrk" >&2
    exit 1
  }
done
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
BASE_BIN=${BASE_BIN:-}
DUR=${DUR:-6s}
ROUNDS=${ROUNDS:-3}
STORE=${STORE:-1}
PG=${PG:-0}
ONLY=${ONLY:-.*}
NGINX_PORT=${NGINX_PORT:-4420}
GW_PORT=${GW_PORT:-4421}
PROXY_PORT=${PROXY_PORT:-4422}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-nginx.XXXXXX")
ulimit -n 65536 2>/dev/null || true

CHUNKS=${CHUNKS:-20}
. bench/nginx-lib.sh
fixed_bodies "$CHUNKS"
# Events a client reads per stream: the role, the words, the finish, [DONE] (the usage
# chunk is hidden from a client that did not ask for it).
EVENTS=$((CHUNKS + 3))

nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
# The floor any proxy meets here: a second nginx (one worker) proxying to the first over
# kept-alive connections, measured beside the gateway in every round of the new build.
nginx_proxy "$WORK/proxy" "$PROXY_PORT" "$NGINX_PORT"
PROXY_PID=$NGINX_STARTED
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
# The PostgreSQL cases: the same gateway with `store: postgres`, and both stores with a
# key that has a budget (a reservation and a settlement per call) and rpm/tpm (a window
# counter per call), the limits far above what the load reaches.
KEYS='keys: [{name: bench, key_env: BENCH_GATEWAY_KEY, budget_usd: 1000000000, budget_period: total, rpm: 1000000000, tpm: 1000000000000}]'
export BENCH_GATEWAY_KEY=bench-key-not-secret
if [ "$PG" = 1 ]; then
  eval "$(scripts/pg start)"
  export SWITCHYARD_PG_URL=$SWITCHYARD_TEST_PG_URL
  { cat "$WORK/gateway.yaml"; echo "store: {postgres: {url_env: SWITCHYARD_PG_URL}}"; } >"$WORK/gateway-pg.yaml"
  { cat "$WORK/gateway-pg.yaml"; echo "$KEYS"; } >"$WORK/gateway-pg-keyed.yaml"
  { cat "$WORK/gateway.yaml"; echo "$KEYS"; } >"$WORK/gateway-keyed.yaml"
fi
GW_PID=
trap 'gateway_stop; kill $NGINX_PID $PROXY_PID 2>/dev/null; wait 2>/dev/null; [ "$PG" = 1 ] && scripts/pg stop >/dev/null 2>&1; rm -rf "$WORK"' EXIT
start_gateway() { # binary data-dir (none: no store) [config]
  local store=()
  [ "$STORE" = 1 ] && [ "$2" != none ] && store=(--data-dir "$2")
  gateway_start "$1" "${3:-$WORK/gateway.yaml}" "${store[@]}"
}
sleep 0.3

BODY_DIRECT='{"model":"fixed","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
BODY_GW='{"model":"ngx/fixed","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
BODY_TR='{"model":"ngxm/fixed","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
BODY_S_DIRECT='{"model":"fixed","stream":true,"messages":[{"role":"user","content":"hello"}]}'
BODY_S_GW='{"model":"ngxs/fixed","stream":true,"messages":[{"role":"user","content":"hello"}]}'
D="http://127.0.0.1:$NGINX_PORT"
G="http://127.0.0.1:$GW_PORT"

case_() { # name conns body url: one measurement, when ONLY matches its name
  [[ "$1" =~ ^($ONLY)$ ]] || return 0
  printf 'round %s %s %-16s %s\n' "$round" "$name" "$1" "$(wrk_measure "$2" "$3" "$4")"
}

shipped() { curl -s "$G/healthz" | python3 -c 'import json,sys; print(json.load(sys.stdin)["postgres"]["shipped"])'; }

# The PostgreSQL store against the embedded one, this build only.
pg_cases() {
  start_gateway "$bin" "$data-keyed" "$WORK/gateway-keyed.yaml"
  KEY=$BENCH_GATEWAY_KEY case_ gateway-keyed-32 32 "$BODY_GW" "$G/v1/chat/completions"
  KEY=$BENCH_GATEWAY_KEY case_ gateway-keyed-1 1 "$BODY_GW" "$G/v1/chat/completions"
  gateway_stop
  start_gateway "$bin" "$data-pg" "$WORK/gateway-pg.yaml"
  case_ gateway-pg-32 32 "$BODY_GW" "$G/v1/chat/completions"
  # Records per second the shipper sustains: what it had shipped when the load ended,
  # and how long the rest took.
  local at_end recorded start
  at_end=$(shipped)
  start=$(date +%s.%N)
  recorded=$(recorded "$bin" "$data-pg")
  while [ "$(shipped)" -lt "$recorded" ]; do sleep 0.05; done
  echo "round $round $name pg-shipped       $recorded records, $at_end shipped when the load ended, the rest in $(python3 -c "print(f'{$(date +%s.%N) - $start:.2f}')") s"
  case_ gateway-pg-1 1 "$BODY_GW" "$G/v1/chat/completions"
  gateway_stop
  start_gateway "$bin" "$data-pg-keyed" "$WORK/gateway-pg-keyed.yaml"
  KEY=$BENCH_GATEWAY_KEY case_ gateway-pg-keyed-32 32 "$BODY_GW" "$G/v1/chat/completions"
  KEY=$BENCH_GATEWAY_KEY case_ gateway-pg-keyed-1 1 "$BODY_GW" "$G/v1/chat/completions"
  gateway_stop
  rm -rf "$data-keyed" "$data-pg" "$data-pg-keyed"
}

builds=("$BIN")
[ -n "$BASE_BIN" ] && builds+=("$BASE_BIN")
for round in $(seq "$ROUNDS"); do
  for bin in "${builds[@]}"; do
    name=$([ "$bin" = "$BIN" ] && echo new || echo base)
    data="$WORK/data-$name-$round"
    start_gateway "$bin" "$data"
    case_ direct-32 32 "$BODY_DIRECT" "$D/v1/chat/completions"
    case_ gateway-32 32 "$BODY_GW" "$G/v1/chat/completions"
    case_ direct-1 1 "$BODY_DIRECT" "$D/v1/chat/completions"
    case_ gateway-1 1 "$BODY_GW" "$G/v1/chat/completions"
    case_ direct-msg-32 32 "$BODY_DIRECT" "$D/v1/messages"
    case_ translated-32 32 "$BODY_TR" "$G/v1/chat/completions"
    case_ direct-sse-32 32 "$BODY_S_DIRECT" "$D/sse/v1/chat/completions"
    case_ gateway-sse-32 32 "$BODY_S_GW" "$G/v1/chat/completions"
    if [ "$name" = new ]; then
      case_ nginx-proxy-32 32 "$BODY_DIRECT" "http://127.0.0.1:$PROXY_PORT/v1/chat/completions"
      case_ nginx-proxy-1 1 "$BODY_DIRECT" "http://127.0.0.1:$PROXY_PORT/v1/chat/completions"
    fi
    [ "$STORE" = 1 ] && echo "round $round $name backlog          $(curl -s "$G/metrics" | awk '/^switchyard_gateway_store_backlog / {print $2}')"
    gateway_stop
    [ "$STORE" = 1 ] && echo "round $round $name recorded         $(recorded "$bin" "$data")"
    rm -rf "$data"
    # The same build with no store: what recording costs.
    if [ "$STORE" = 1 ] && [[ gateway-nostore-32 =~ ^($ONLY)$ || gateway-nostore-1 =~ ^($ONLY)$ ]]; then
      start_gateway "$bin" none
      case_ gateway-nostore-32 32 "$BODY_GW" "$G/v1/chat/completions"
      case_ gateway-nostore-1 1 "$BODY_GW" "$G/v1/chat/completions"
      gateway_stop
    fi
    if [ "$PG" = 1 ] && [ "$name" = new ]; then
      pg_cases
    fi
  done
done | tee "$WORK/rounds.txt"

# The ratios of docs/performance.md's targets, from the rounds above.
python3 - "$WORK/rounds.txt" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) (\w+) (\S+)\s+(\d+) (\d+) (\d+)", line)
    if m:
        rows.setdefault((m[2], m[3]), {})[m[1]] = tuple(map(int, m.groups()[3:]))
print()
for build in ("new", "base"):
    def ratios(gateway, direct, field=0, op=lambda g, d: g / d):
        g, d = rows.get((build, gateway), {}), rows.get((build, direct), {})
        return [op(g[r][field], d[r][field]) for r in sorted(g) if r in d]
    for what, values, fmt in (
        ("pass-through / direct, 32 conns (target >= 0.333)", ratios("gateway-32", "direct-32"), "{:.3f}"),
        ("translated / direct messages (target >= 0.2)", ratios("translated-32", "direct-msg-32"), "{:.3f}"),
        ("store on / store off, 32 conns (target >= 0.9)", ratios("gateway-32", "gateway-nostore-32"), "{:.3f}"),
        ("stream chunks/s / direct (target >= 0.333)", ratios("gateway-sse-32", "direct-sse-32"), "{:.3f}"),
        ("added p50 at 1 conn, us (target <= 50)", ratios("gateway-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
        ("added p99 at 1 conn, us (target <= 300)", ratios("gateway-1", "direct-1", 2, lambda g, d: g - d), "{:.0f}"),
        ("added p50 at 1 conn, store off, us", ratios("gateway-nostore-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
        ("nginx as a proxy / direct, 32 conns (the floor)", ratios("nginx-proxy-32", "direct-32"), "{:.3f}"),
        ("nginx as a proxy, added p50 at 1 conn, us", ratios("nginx-proxy-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
        ("nginx as a proxy, added p99 at 1 conn, us", ratios("nginx-proxy-1", "direct-1", 2, lambda g, d: g - d), "{:.0f}"),
        ("postgres store / direct, 32 conns", ratios("gateway-pg-32", "direct-32"), "{:.3f}"),
        ("postgres store / embedded store, 32 conns", ratios("gateway-pg-32", "gateway-32"), "{:.3f}"),
        ("postgres added p50 at 1 conn, us", ratios("gateway-pg-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
        ("postgres added p99 at 1 conn, us", ratios("gateway-pg-1", "direct-1", 2, lambda g, d: g - d), "{:.0f}"),
        ("keyed / direct, embedded, 32 conns", ratios("gateway-keyed-32", "direct-32"), "{:.3f}"),
        ("keyed / direct, postgres, 32 conns", ratios("gateway-pg-keyed-32", "direct-32"), "{:.3f}"),
        ("keyed added p50 at 1 conn, embedded, us", ratios("gateway-keyed-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
        ("keyed added p50 at 1 conn, postgres, us", ratios("gateway-pg-keyed-1", "direct-1", 1, lambda g, d: g - d), "{:.0f}"),
    ):
        if values:
            shown = ", ".join(fmt.format(v) for v in values)
            print(f"{build:4} {what:52} {shown}  median {fmt.format(statistics.median(values))}")
EOF
