#!/usr/bin/env bash
# What reading a gateway's records costs: a store is filled by each binary of WRITERS (wrk
# against the gateway in front of the static nginx, pass-through whole chat calls, store
# on, for DUR), then READER (a binary) times `log show` of one call and `log stats` over
# every call of each store, RUNS times each (the best and the median are printed), and
# the console's first page and one call in full (`log view`, curl, medians of RUNS).
# A binary of record format 3 and one of format 2 as writers show what deriving the
# canonical forms on read costs, the same reader reading both:
#   WRITERS="OLD/switchyard NEW/switchyard" READER=NEW/switchyard DUR=20s bench/log_read.sh
# STORES=DIR keeps the stores there (DIR/data-1, DIR/data-2…). Needs nginx, wrk and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
READER=${READER:-${CARGO_TARGET_DIR:-target}/release/switchyard}
WRITERS=${WRITERS:-$READER}
DUR=${DUR:-20s}
RUNS=${RUNS:-5}
NGINX_PORT=${NGINX_PORT:-4470}
GW_PORT=${GW_PORT:-4471}
VIEW_PORT=${VIEW_PORT:-4472}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-log-read.XXXXXX")

. bench/nginx-lib.sh
fixed_bodies 20
nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
trap 'kill $NGINX_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
BODY='{"model":"ngx/fixed","messages":[{"role":"user","content":"hello there, how are you today?"}]}'

# Seconds of the fastest and the median of RUNS runs of a command.
timed() {
  python3 - "$RUNS" "$@" <<'PY'
import subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    times.append(time.perf_counter() - t)
times.sort()
print(f"best {times[0]*1000:.1f} ms, median {times[len(times)//2]*1000:.1f} ms")
PY
}

i=0
for bin in $WRITERS; do
  i=$((i + 1))
  data="${STORES:-$WORK}/data-$i"
  "$bin" serve --listen "127.0.0.1:$GW_PORT" --no-mock --config "$WORK/gateway.yaml" \
    --data-dir "$data" >/dev/null 2>"$WORK/gateway.log" &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$GW_PORT/healthz" >/dev/null && break; sleep 0.1; done
  BODY="$BODY" wrk -t1 -c8 -d"$DUR" -s bench/post.lua "http://127.0.0.1:$GW_PORT/v1/chat/completions" >/dev/null
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  calls=$(recorded "$READER" "$data")
  format=$(head -c 12 "$data/llm_log/segment-000001.jsonl")
  echo "$bin: $calls calls, $(du -sh "$data/llm_log" | cut -f1) of records, lines $format…"
  echo "  log show of call $((calls / 2)): $(timed "$READER" log show "$data" $((calls / 2)))"
  echo "  log stats over $calls calls: $(timed "$READER" log stats "$data")"
  "$READER" log view "$data" --port "$VIEW_PORT" >/dev/null 2>&1 &
  view=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$VIEW_PORT/console" >/dev/null && break; sleep 0.1; done
  for page in "first page (50 calls, newest first)|/console/api/calls" \
    "one call in full, derived|/console/api/calls/$((calls / 2))"; do
    times=$(for _ in $(seq "$RUNS"); do
      curl -sf -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$VIEW_PORT${page#*|}"
    done | sort -n)
    echo "  console ${page%%|*}: median $(echo "$times" | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]*1000}') ms"
  done
  kill "$view"; wait "$view" 2>/dev/null || true
done
