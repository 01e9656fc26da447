#!/usr/bin/env bash
# The console over a million recorded calls (docs/performance.md, "The console over a
# million calls"): a generated store (examples/generate_store.rs: the recorder's format,
# calls.sqlite and segments), `switchyard log view` on it (release build), then each
# request timed RUNS times with curl; the medians printed in milliseconds.
#
#   bench/console.sh [N]      N calls (1,000,000 by default); STORE=DIR keeps the store
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-1000000}"
RUNS="${RUNS:-7}"
STORE="${STORE:-${TMPDIR:-/tmp}/switchyard-console-bench-$N}"
PORT="${PORT:-18471}"
cargo build --release -q -p switchyard-cli
cargo build --release -q -p switchyard-console --example generate_store
TARGET="${CARGO_TARGET_DIR:-target}"
if [ ! -f "$STORE/calls.sqlite" ]; then
  "$TARGET/release/examples/generate_store" "$STORE" "$N"
fi
echo "store: $STORE ($(du -sh "$STORE" | cut -f1))"
"$TARGET/release/switchyard" log view "$STORE" --port "$PORT" >/dev/null &
VIEW=$!
trap 'kill $VIEW' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/console" >/dev/null && break
  sleep 0.1
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_it() {
  local name="$1" path="$2"
  local times=()
  for _ in $(seq "$RUNS"); do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$PORT$path")")
  done
  printf '%-34s %8.1f ms   %s\n' "$name" \
    "$(printf '%s\n' "${times[@]}" | median | awk '{print $1 * 1000}')" "$path"
}
time_it "first page (50, newest)" "/console/api/calls"
time_it "deep page (offset 900,000)" "/console/api/calls?offset=900000"
time_it "last page, oldest first" "/console/api/calls?order=asc&offset=999950"
time_it "filtered + sorted by cost" "/console/api/calls?key=alice&reference=openai/gpt-5.4&sort=cost"
time_it "errors of a kind, by latency" "/console/api/calls?kind=Timeout&sort=latency"
time_it "text search + time range" "/console/api/calls?q=gemini&since=2025-12-01&until=2026-06-01&sort=tokens"
time_it "one call in full" "/console/api/calls/777777"
time_it "its raw bytes" "/console/api/calls/777777/raw"
time_it "spend by model per day" "/console/api/spend?by=model&bucket=day"
time_it "spend by key per hour, 1 month" "/console/api/spend?by=key&bucket=hour&since=2026-11-01"
time_it "summary (the filters' choices)" "/console/api/summary"
