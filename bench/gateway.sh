#!/usr/bin/env bash
# Gateway benchmark: the mock (release) as the fast upstream, the gateway (release) in
# front of it, wrk as the load; gateway and direct measured in the same run.
#   cargo build --release -p switchyard-cli && bench/gateway.sh
# Needs wrk (apt-get install wrk) and python3. Writes figures to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/nginx-lib.sh
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
DUR=${DUR:-10s}
MOCK_PORT=${MOCK_PORT:-4410}
GW_PORT=${GW_PORT:-4411}
# Metering into the store is on: every call is recorded under DATA_DIR (a fresh folder on
# the work disk by default, removed at the end unless KEEP_DATA=1).
mkdir -p "${CARGO_TARGET_DIR:-target}"
DATA_DIR=${DATA_DIR:-$(mktemp -d "${CARGO_TARGET_DIR:-target}/gateway-bench.XXXXXX")}
ulimit -n 65536 2>/dev/null || true

"$BIN" mock --port "$MOCK_PORT" >/dev/null &
MOCK_PID=$!
"$BIN" serve --listen "127.0.0.1:$GW_PORT" --no-mock --data-dir "$DATA_DIR" \
  "backends.mock.base_url=http://127.0.0.1:$MOCK_PORT/v1" \
  "backends.upm.from=mock" "backends.upm.apis=[messages]" >/dev/null &
GW_PID=$!
trap 'kill $GW_PID $MOCK_PID 2>/dev/null || true; wait 2>/dev/null || true; [ "${KEEP_DATA:-0}" = 1 ] || rm -rf "$DATA_DIR"' EXIT
sleep 0.5
backlog() { curl -s "http://127.0.0.1:$GW_PORT/metrics" | awk '/^switchyard_gateway_store_backlog / {print $2}'; }
rss() { awk '/VmRSS/ {printf "%.1f MB", $2/1024}' "/proc/$1/status"; }
echo "gateway idle RSS: $(rss $GW_PID)"
SLOW='{"model":"mock/lorem-20+delay-100ms","stream":true,"messages":[{"role":"user","content":"hi"}]}'
echo "== 1,000 concurrent streams held open on the fresh gateway (each ~2 s)"
python3 bench/streams.py 127.0.0.1:$GW_PORT $GW_PID 1000 "$SLOW"

CHAT_DIRECT='{"model":"echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
CHAT_GW='{"model":"mock/echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
CHAT_TRANSLATED='{"model":"upm/echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
run() { # name conns body url
  echo "== $1 ($2 connections)"
  local t=2; [ "$2" -lt 2 ] && t=1
  BODY="$3" wrk -t$t -c"$2" -d"$DUR" --latency -s bench/post.lua "$4" | grep -E 'Requests/sec|^ +50%|^ +99%|Non-2xx|Socket errors'
  echo "   gateway RSS: $(rss $GW_PID), store backlog: $(backlog)"
}
U_DIRECT="http://127.0.0.1:$MOCK_PORT/v1/chat/completions"
U_GW="http://127.0.0.1:$GW_PORT/v1/chat/completions"
for c in 32 1; do
  run "direct, non-streamed" "$c" "$CHAT_DIRECT" "$U_DIRECT"
  run "gateway pass-through, non-streamed" "$c" "$CHAT_GW" "$U_GW"
done
run "gateway translated chat -> messages, non-streamed" 32 "$CHAT_TRANSLATED" "$U_GW"

echo "== stream time to first byte (1 connection, 500 streams)"
S_DIRECT='{"model":"echo","stream":true,"messages":[{"role":"user","content":"hello"}]}'
S_GW='{"model":"mock/echo","stream":true,"messages":[{"role":"user","content":"hello"}]}'
S_TR='{"model":"upm/echo","stream":true,"messages":[{"role":"user","content":"hello"}]}'
echo "direct:              $(python3 bench/ttfb.py 127.0.0.1:$MOCK_PORT /v1/chat/completions "$S_DIRECT" 500)"
echo "gateway passthrough: $(python3 bench/ttfb.py 127.0.0.1:$GW_PORT /v1/chat/completions "$S_GW" 500)"
echo "gateway translated:  $(python3 bench/ttfb.py 127.0.0.1:$GW_PORT /v1/chat/completions "$S_TR" 500)"

echo "gateway RSS after the load phases: $(rss $GW_PID), store backlog: $(backlog)"
echo "== 1,000 concurrent streams held open after the load phases (each ~2 s)"
python3 bench/streams.py 127.0.0.1:$GW_PORT $GW_PID 1000 "$SLOW"
echo "gateway RSS after: $(rss $GW_PID)"

echo "== the store"
echo "gateway RSS before stopping: $(rss $GW_PID)"
T0=$(date +%s.%N)
kill -TERM $GW_PID; wait $GW_PID 2>/dev/null || true
T1=$(date +%s.%N)
echo "SIGTERM to exit (drain + every pending record written): $(python3 -c "print(f'{($T1-$T0)*1000:.0f} ms')")"
echo "records: $(recorded "$BIN" "$DATA_DIR"), index rows: $(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from llm_calls').fetchone()[0])" "$DATA_DIR/calls.sqlite"), size: $(du -sh "$DATA_DIR" | cut -f1)"

echo "== start-up to serving (5 runs, ms)"
for i in 1 2 3 4 5; do python3 bench/startup.py "$BIN" serve --no-mock; done | tr '\n' ' '; echo
