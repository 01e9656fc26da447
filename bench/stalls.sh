#!/usr/bin/env bash
# What stalls the calls' lanes at 32 connections: wrk's p50 and p99 beside, for each
# thread of the proxy, its CPU per call, the time it waited on the run queue (runnable,
# but no core free: /proc/<pid>/task/<tid>/schedstat), and its voluntary (it blocked: a
# lock, a channel, I/O) and involuntary (the scheduler took the core) context switches
# per thousand calls. The gateway with the store on and off, and nginx as a proxy, in
# front of the same static nginx, in one run, ROUNDS times.
#   cargo build --release -p switchyard-cli && bench/stalls.sh
#   SWITCHYARD_BIN=path/to/switchyard DUR=8s ROUNDS=3 bench/stalls.sh
# PERF=1 also records the scheduler's switches of the whole machine (`perf sched`) during
# each round's runs of the gateway, counts the times a lane waited over a millisecond between
# being woken and running, and sums what ran on that core meanwhile, by task: what
# stalls the lanes.
# Needs nginx, wrk and python3 (and perf, with tracefs mounted, for PERF=1).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
DUR=${DUR:-6s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
NGINX_PORT=${NGINX_PORT:-4440}
GW_PORT=${GW_PORT:-4441}
PROXY_PORT=${PROXY_PORT:-4442}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-stalls.XXXXXX")
ulimit -n 65536 2>/dev/null || true

. bench/nginx-lib.sh
fixed_bodies 20
nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
nginx_proxy "$WORK/proxy" "$PROXY_PORT" "$NGINX_PORT"
PROXY_PID=$NGINX_STARTED
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
GW_PID=
trap 'gateway_stop; kill $NGINX_PID $PROXY_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
start_gateway() { gateway_start "$BIN" "$WORK/gateway.yaml" "$@"; } # extra serve arguments

# "tid name cpu_ns runqueue_ns voluntary involuntary" of every thread of a pid.
threads() {
  for task in /proc/"$1"/task/*; do
    printf '%s %s %s %s %s\n' "${task##*/}" "$(tr ' ' _ <"$task/comm")" \
      "$(awk '{print $1, $2}' "$task/schedstat")" \
      "$(awk '/^voluntary_ctxt_switches/ {v=$2} /^nonvoluntary_ctxt_switches/ {n=$2} END {print v, n}' "$task/status")"
  done
}

measure() { # name pid url body [perf]
  local name=$1 pid=$2 perf=
  threads "$pid" >"$WORK/before"
  if [ -n "${5:-}" ]; then
    perf sched record -a -o "$WORK/perf.data" -- sleep "${DUR%s}" >/dev/null 2>&1 &
    perf=$!
  fi
  BODY="$4" wrk -t1 -c"$CONNS" -d"$DUR" --latency -s bench/post.lua "$3" >"$WORK/wrk.out"
  threads "$pid" >"$WORK/after"
  if [ -n "$perf" ]; then
    wait "$perf" || true
    perf sched timehist -i "$WORK/perf.data" 2>/dev/null >"$WORK/timehist.txt" || true
    python3 - "$round" "$name" "$WORK/timehist.txt" <<'PY'
import collections, re, sys
rnd, name, path = sys.argv[1:]
rows = []
for line in open(path):
    p = line.split()
    try:
        rows.append((float(p[0]), p[1], re.sub(r"\[\d+(/\d+)?\]$", "", p[2]), float(p[4]), float(p[5])))
    except (ValueError, IndexError):
        continue
lanes = [r for r in rows if r[2].startswith("switchyard-lane")]
long = [r for r in lanes if r[3] > 1.0]
held = collections.Counter()
for t, cpu, task, delay, _ in long:
    for t2, cpu2, task2, _, run2 in rows:
        if cpu2 == cpu and t - delay / 1000 < t2 <= t and task2 != task:
            held[task2] += run2
print(f"round {rnd} {name:16}   perf: {len(lanes)} times a lane was given a core, {len(long)} after waiting over 1 ms"
      f" (longest {max((r[3] for r in lanes), default=0):.2f} ms); what held that core meanwhile, ms:")
for task, ms in held.most_common(6):
    print(f"round {rnd} {name:16}     {task:24} {ms:7.2f}")
PY
  fi
  python3 - "$name" "$round" "$WORK/before" "$WORK/after" "$WORK/wrk.out" <<'PY'
import re, sys
name, rnd, before, after, out = sys.argv[1:]
def read(path):
    return {l.split()[0]: (l.split()[1], *map(int, l.split()[2:])) for l in open(path)}
b, a = read(before), read(after)
text = open(out).read()
calls = int(re.search(r"(\d+) requests in", text).group(1))
def us(v):
    unit = "us" if v.endswith("us") else "ms" if v.endswith("ms") else "s"
    return float(v[: -len(unit)]) * {"us": 1, "ms": 1000, "s": 1e6}[unit]
p50 = us(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
p99 = us(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
by = {}
for tid, (thread, cpu, wait, vol, invol) in a.items():
    _, cpu0, wait0, vol0, invol0 = b.get(tid, (thread, 0, 0, 0, 0))
    t = by.setdefault(thread, [0, 0, 0, 0])
    for i, v in enumerate((cpu - cpu0, wait - wait0, vol - vol0, invol - invol0)):
        t[i] += v
rows = [(t, v) for t, v in sorted(by.items()) if v[0] > 0]
print(f"round {rnd} {name:16} p50 {p50:7.0f} µs  p99 {p99:7.0f} µs  p99/p50 {p99 / p50:5.1f}  ({calls} calls)")
for t, (cpu, wait, vol, invol) in rows:
    print(f"round {rnd} {name:16}   {t:16} cpu {cpu / calls / 1000:6.1f} µs  run-queue wait {wait / calls / 1000:6.1f} µs"
          f"  switches per 1k calls: blocked {vol * 1000 / calls:6.0f}  preempted {invol * 1000 / calls:6.0f}")
PY
}

ASK='"messages":[{"role":"user","content":"hello there, how are you today?"}]}'
PROXY=$(pgrep -P "$PROXY_PID" nginx | head -1)
for round in $(seq "$ROUNDS"); do
  measure nginx-proxy "$PROXY" "http://127.0.0.1:$PROXY_PORT/v1/chat/completions" "{\"model\":\"fixed\",$ASK"
  start_gateway
  measure gateway-nostore "$GW_PID" "http://127.0.0.1:$GW_PORT/v1/chat/completions" "{\"model\":\"ngx/fixed\",$ASK" "${PERF:-}"
  gateway_stop
  start_gateway --data-dir "$WORK/data-$round"
  measure gateway-store "$GW_PID" "http://127.0.0.1:$GW_PORT/v1/chat/completions" "{\"model\":\"ngx/fixed\",$ASK" "${PERF:-}"
  gateway_stop
  rm -rf "$WORK/data-$round"
done
