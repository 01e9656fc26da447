#!/usr/bin/env bash
# Builds compared in paired rounds, each measurement on a gateway started afresh with an
# empty data directory (no backlog, index or dirty pages left by the case before): the
# added median at one connection (over direct nginx, measured in the same round) and the
# p99 over the p50 at 32 connections, store on, for each binary in BINS, then store off
# for the first. Prints one line per round and the medians. On a noisy machine only
# builds measured in the same rounds compare.
#   BINS="/path/to/old/switchyard target/release/switchyard" bench/pair.sh
#   ROUNDS=10 DUR=3s CASES=one bench/pair.sh        # CASES: one, tail or both (default)
# Needs nginx, wrk and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:-${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}}
ROUNDS=${ROUNDS:-6}
DUR=${DUR:-4s}
CASES=${CASES:-one tail}
NGINX_PORT=${NGINX_PORT:-4460}
GW_PORT=${GW_PORT:-4461}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-pair.XXXXXX")
ulimit -n 65536 2>/dev/null || true

. bench/nginx-lib.sh
fixed_bodies 20
nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
GW_PID=
trap 'gateway_stop; kill $NGINX_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT

ASK='"messages":[{"role":"user","content":"hello there, how are you today?"}]}'
DIRECT="{\"model\":\"fixed\",$ASK"
VIA="{\"model\":\"ngx/fixed\",$ASK"
# wrk, one thread: "p50 p99" in µs.
latency() { # conns body url
  local rps p50 p99
  read -r rps p50 p99 _ <<<"$(wrk_measure "$@")"
  echo "$p50 $p99"
}
# One measurement of a gateway started afresh: "p50 p99" at `conns`.
gateway() { # binary store(on|off) conns
  local store=()
  [ "$2" = on ] && store=(--data-dir "$WORK/data")
  gateway_start "$1" "$WORK/gateway.yaml" "${store[@]}"
  latency "$3" "$VIA" "http://127.0.0.1:$GW_PORT/v1/chat/completions"
  gateway_stop
  rm -rf "$WORK/data"
}

RESULTS="$WORK/results"
FIRST=${BINS%% *}
for r in $(seq "$ROUNDS"); do
  line="round $r"
  if [[ " $CASES " == *" one "* ]]; then
    read -r direct _ <<<"$(latency 1 "$DIRECT" "http://127.0.0.1:$NGINX_PORT/v1/chat/completions")"
    for bin in $BINS; do
      read -r p50 _ <<<"$(gateway "$bin" on 1)"
      echo "one $bin on $((p50 - direct))" >>"$RESULTS"
      line="$line | one conn, $(basename "$bin") added $((p50 - direct)) µs"
    done
    read -r p50 _ <<<"$(gateway "$FIRST" off 1)"
    echo "one $FIRST off $((p50 - direct))" >>"$RESULTS"
    line="$line | store off $((p50 - direct)) µs"
  fi
  if [[ " $CASES " == *" tail "* ]]; then
    for bin in $BINS; do
      read -r p50 p99 <<<"$(gateway "$bin" on 32)"
      echo "tail $bin on $(python3 -c "print(round($p99 / $p50, 2))")" >>"$RESULTS"
      line="$line | 32 conns, $(basename "$bin") p99/p50 $p99/$p50"
    done
    read -r p50 p99 <<<"$(gateway "$FIRST" off 32)"
    echo "tail $FIRST off $(python3 -c "print(round($p99 / $p50, 2))")" >>"$RESULTS"
    line="$line | store off $p99/$p50"
  fi
  echo "$line"
done

echo
python3 - "$RESULTS" <<'EOF'
import statistics, sys
series = {}
for line in open(sys.argv[1]):
    case, binary, store, value = line.split()
    series.setdefault((case, binary, store), []).append(float(value))
names = {"one": "added median at 1 conn, µs", "tail": "p99 / p50 at 32 conns"}
for (case, binary, store), values in series.items():
    shown = ", ".join(f"{v:g}" for v in values)
    print(f"{names[case]:28} {binary} store {store:3}  {shown}  median {statistics.median(values):g}")
EOF
