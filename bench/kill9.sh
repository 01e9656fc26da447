#!/usr/bin/env bash
# What `kill -9` of a loaded gateway loses, per durability mode: wrk sends calls with
# unique ids (mock/echo echoes them back) through `switchyard serve --data-dir`, the
# gateway is killed with SIGKILL mid-load, and the ids answered 200 are compared with the
# records on disk. Answered but not recorded is what the mode lost.
#   cargo build --release -p switchyard-cli && bench/kill9.sh
#   MODES="fast answered" CONNS=64 AFTER=3 RUNS=3 bench/kill9.sh
# Needs wrk. Writes one line per run.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SWITCHYARD_BIN:-${CARGO_TARGET_DIR:-target}/release/switchyard}
MODES=${MODES:-fast answered synced}
CONNS=${CONNS:-64}
AFTER=${AFTER:-3}
RUNS=${RUNS:-3}
PORT=${PORT:-4431}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-kill9.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
ulimit -n 65536 2>/dev/null || true
for mode in $MODES; do
  for run in $(seq "$RUNS"); do
    data="$WORK/$mode-$run"
    printf 'store: {path: %s, durability: %s}\n' "$data" "${mode%%-*}" >"$WORK/gw.yaml"
    extra=()
    case "$mode" in fast-*) printf 'store: {path: %s, durability: fast, max_backlog: %s}\n' "$data" "${mode#fast-}" >"$WORK/gw.yaml" ;; esac
    RUST_LOG=error "$BIN" serve --listen "127.0.0.1:$PORT" --config "$WORK/gw.yaml" "${extra[@]}" >/dev/null 2>&1 &
    gw=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done
    ANSWERED="$WORK/answered-$mode-$run" wrk -t2 -c"$CONNS" -d"$((AFTER + 2))s" -s bench/kill9.lua \
      "http://127.0.0.1:$PORT/v1/chat/completions" >/dev/null 2>&1 &
    load=$!
    sleep "$AFTER"
    backlog=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^switchyard_gateway_store_backlog / {print $2}')
    kill -9 "$gw"
    wait "$gw" 2>/dev/null || true
    wait "$load" 2>/dev/null || true
    python3 - "$mode" "$run" "$data" "$backlog" "$WORK"/answered-"$mode-$run".* <<'PY'
import glob, json, sys
mode, run, data, backlog, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
answered = set()
for f in files:
    answered.update(l.strip() for l in open(f) if l.strip())
recorded = set()
for seg in sorted(glob.glob(f"{data}/llm_log/segment-*.jsonl")):
    for line in open(seg, "rb"):
        if not line.endswith(b"\n"):
            continue  # a line cut by the kill is not a record
        r = json.loads(line)
        for m in r.get("request", {}).get("messages", []):
            for p in m.get("content", []):
                t = p.get("text") if isinstance(p, dict) else None
                if t and t.startswith("kill9-"):
                    recorded.add(t)
lost = answered - recorded
print(f"{mode:<10} run {run}: answered {len(answered):>7}, recorded {len(recorded):>7}, "
      f"answered but not recorded {len(lost):>5} ({100 * len(lost) / max(1, len(answered)):.2f} %), "
      f"recorded but not answered {len(recorded - answered):>4}, backlog before the kill {backlog}")
PY
  done
done
