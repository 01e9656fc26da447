#!/usr/bin/env bash
# Memory per idle kept-alive connection, and memory given back after a burst: the gateway
# (release, store on, lanes as `serve` runs them) in front of `switchyard mock`; N
# connections each make one call and stay open, idle (as a client's pool leaves them);
# then they close, and the gateway's RSS is read each second for WAIT seconds. The idle
# figure is read after WARMUP calls (N by default) over 64 connections, as many as the
# burst opens at once, then closed: the caches calls fill and the upstream connections 64
# calls at once open are in it, so that what the burst adds is the connections' (WARMUP=0:
# a fresh gateway's idle figure, the calls' share counted with the connections').
#   cargo build --release -p switchyard-cli && bench/memory.sh
#   N=10000 WAIT=60 ROUNDS=3 WARMUP=0 SWITCHYARD_BIN=path/to/switchyard bench/memory.sh
# Needs python3. Prints one line per round, and the targets beside the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
N=${N:-10000}
WAIT=${WAIT:-60}
WARMUP=${WARMUP:-$N}
ROUNDS=${ROUNDS:-1}
MOCK_PORT=${MOCK_PORT:-4470}
GW_PORT=${GW_PORT:-4471}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-memory.XXXXXX")
# The gateway serves at most (soft open-file limit - 128) / 2 connections (docs/gateway.md,
# *The connection cap*): the limit is raised as far as the hard one allows, and N lowered
# to what it lets the gateway hold at once (9,936 under a hard limit of 20,000).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
LIMIT=$(ulimit -n)
if [ "$LIMIT" != unlimited ] && [ $(((LIMIT - 128) / 2)) -lt "$N" ]; then
  echo "N lowered from $N to $(((LIMIT - 128) / 2)): under the open-file limit of $LIMIT the gateway holds at most that many connections" >&2
  N=$(((LIMIT - 128) / 2))
fi

# Room for every connection under the cap, and an idle deadline longer than the run, so
# that no connection is closed for the gateway's own reasons while it is measured.
cat >"$WORK/gateway.yaml" <<EOF
listen:
  max_connections: $((N + 1000))
  idle_timeout_seconds: 600
backends:
  mock:
    base_url: http://127.0.0.1:$MOCK_PORT/v1
EOF

"$BIN" mock --port "$MOCK_PORT" >/dev/null &
MOCK_PID=$!
GW_PID=
trap 'kill $GW_PID $MOCK_PID 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
BODY='{"model":"mock/echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
echo "targets: an idle kept-alive connection at most 8 KB of RSS; RSS back within 10 % of its idle figure a minute after the burst closes"
for round in $(seq "$ROUNDS"); do
  RUST_LOG=warn "$BIN" serve --listen "127.0.0.1:$GW_PORT" --no-mock \
    --config "$WORK/gateway.yaml" --data-dir "$WORK/data-$round" ${LANES:+--lanes "$LANES"} >/dev/null 2>>"$WORK/gateway.err" &
  GW_PID=$!
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$GW_PORT/healthz" >/dev/null && break
    sleep 0.05
  done
  python3 bench/idle_connections.py "127.0.0.1:$GW_PORT" "$GW_PID" "$N" "$BODY" "$WAIT" "$WARMUP" >"$WORK/out.json"
  python3 - "$round" "$WORK/out.json" <<'EOF'
import json, sys
rnd, r = sys.argv[1], json.load(open(sys.argv[2]))
mb = lambda kib: f"{kib / 1024:.1f} MB"
idle, last = r["idle_rss_kib"], r["after_rss_kib"]
final_s = max(last, key=int)
final = last[final_s]
back = r["within_10_percent_after_seconds"]
print(f"round {rnd}: after {r['warmup_calls']} warm-up calls, {r['connections']} idle connections ({r['gateway_descriptors_added']} held by the gateway, opened in {r['open_seconds']} s): "
      f"RSS {mb(idle)} -> {mb(r['held_rss_kib'])}, {r['per_connection_bytes'] / 1000:.1f} KB each "
      f"(anonymous {r['per_connection_anon_bytes'] / 1000:.1f} KB) [target <= 8 KB]")
print(f"  closed: RSS after " + ", ".join(f"{s} s {mb(k)}" for s, k in last.items())
      + f"; {final / idle * 100 - 100:+.0f} % of idle after {final_s} s"
      + (f", within 10 % after {back} s" if back else ", never within 10 %")
      + " [target <= +10 % after 60 s]")
EOF
  kill "$GW_PID"
  wait "$GW_PID" 2>/dev/null || true
  GW_PID=
done
