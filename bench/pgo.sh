#!/usr/bin/env bash
# A release build of `switchyard` optimised with a profile of the gateway's own calls
# (profile-guided optimisation): built once instrumented, trained on every client dialect
# whole and streamed, passed through and translated, with the store on and off (the mock
# provider upstream), then built again with the profile. The profile lays the calls' hot
# code out together, away from the cold, and guides what is inlined: the call's path is
# more code than the first-level instruction cache holds, and the build with the profile
# runs a fifth fewer instructions a call and misses that cache a quarter less often
# (docs/performance.md, *A build optimised with a profile*).
#
#   bench/pgo.sh                  # prints the optimised binary's path last
#   OUT=DIR TRAIN=3s bench/pgo.sh # where the two builds and the profile go; each case's time
#
# Needs rustup's `llvm-tools` component (added if missing: `llvm-profdata` must be of the
# compiler's LLVM) and wrk. Two release builds: some 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/target/pgo}
TRAIN=${TRAIN:-2s}
HOST=$(rustc -vV | sed -n 's/^host: //p')
PROFDATA="$(rustc --print sysroot)/lib/rustlib/$HOST/bin/llvm-profdata"
if [ ! -x "$PROFDATA" ]; then
  rustup component add llvm-tools
fi
for tool in wrk curl; do
  command -v "$tool" >/dev/null || { echo "bench/pgo.sh needs $tool" >&2; exit 1; }
done
mkdir -p "$OUT"
RAW="$OUT/raw"
rm -rf "$RAW"

# --target keeps RUSTFLAGS off the build scripts and proc macros: only the binary is
# instrumented, and only the binary is optimised with the profile.
echo "== instrumented build" >&2
RUSTFLAGS="-Cprofile-generate=$RAW" CARGO_TARGET_DIR="$OUT/gen" \
  cargo build --release -p switchyard-cli --target "$HOST"
GEN="$OUT/gen/$HOST/release/switchyard"

echo "== training" >&2
MOCK_PORT=${MOCK_PORT:-4580} GW_PORT=${GW_PORT:-4581}
WORK=$(mktemp -d)
. bench/nginx-lib.sh
MOCK_PID=
trap 'kill $MOCK_PID 2>/dev/null || true; gateway_stop; wait 2>/dev/null; rm -rf "$WORK"' EXIT
URL="http://127.0.0.1:$GW_PORT"
# The mock provider (the same binary, so its code is in the profile too) behind backends
# that speak every dialect (passed through), only chat and only Messages (translated).
# None of bench/'s cases is trained on: their upstream is a static nginx.
LLVM_PROFILE_FILE="$RAW/mock-%p-%m.profraw" "$GEN" mock --port "$MOCK_PORT" >/dev/null 2>&1 &
MOCK_PID=$!
M="http://127.0.0.1:$MOCK_PORT/v1"
cat >"$WORK/gw.yaml" <<YAML
backends:
  mk: {base_url: "$M", apis: [chat, responses, messages, gemini], key_required: false, prices: {echo: {input: 1, output: 2}}}
  mkc: {base_url: "$M", apis: [chat], key_required: false, prices: {echo: {input: 1, output: 2}}}
  mkm: {base_url: "$M", apis: [messages], key_required: false, prices: {echo: {input: 1, output: 2}}}
YAML
SAY='hello there, how are you today? Tell me about the weather in three short sentences.'
CHAT="\"messages\":[{\"role\":\"user\",\"content\":\"$SAY\"}]"
GEMINI="{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"$SAY\"}]}]}"
# One case, URL path then body, for $TRAIN: kept-alive connections (wrk), then one call by
# curl that must answer 200 (wrk counts any status as a call).
train() {
  BODY="$2" wrk -t1 -c"${CONNS:-16}" -d"$TRAIN" -s bench/post.lua "$URL$1" >/dev/null
  curl -sf -o /dev/null -H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' \
    -d "$2" "$URL$1" || { echo "training call $1 with $2 did not answer 200" >&2; exit 1; }
}
# Every door, whole and streamed, passed through (mk) and translated (mkc, mkm).
cases() {
  for stream in false true; do
    for model in mk/echo mkm/echo; do
      train /v1/chat/completions "{\"model\":\"$model\",\"stream\":$stream,$CHAT}"
    done
    for model in mk/echo mkc/echo; do
      train /v1/messages "{\"model\":\"$model\",\"max_tokens\":64,\"stream\":$stream,$CHAT}"
    done
    train /v1/responses "{\"model\":\"mk/echo\",\"stream\":$stream,\"input\":\"$SAY\"}"
  done
  for model in mk/echo mkc/echo; do
    train "/v1beta/models/$model:generateContent" "$GEMINI"
    train "/v1beta/models/$model:streamGenerateContent?alt=sse" "$GEMINI"
  done
}
for _ in $(seq 100); do curl -sf -o /dev/null "$M/models" && break; sleep 0.05; done
curl -sf -o /dev/null "$M/models" || { echo "the mock provider (port $MOCK_PORT) did not start" >&2; exit 1; }
# The gateway as every bench script starts it (bench/nginx-lib.sh), writing its profile.
export LLVM_PROFILE_FILE="$RAW/serve-%p-%m.profraw"
for store in on off; do
  extra=()
  [ "$store" = on ] && extra=(--data-dir "$WORK/data")
  gateway_start "$GEN" "$WORK/gw.yaml" "${extra[@]}"
  cases
  gateway_stop
done
unset LLVM_PROFILE_FILE
# The mock writes its profile when it ends at ctrl-c (SIGINT); a SIGTERM ends it
# without writing it.
kill -INT "$MOCK_PID" && wait "$MOCK_PID" || true
# The reading side, over the calls just recorded.
LLVM_PROFILE_FILE="$RAW/log-%p-%m.profraw" "$GEN" log stats "$WORK/data" >/dev/null
LLVM_PROFILE_FILE="$RAW/log-%p-%m.profraw" "$GEN" log show "$WORK/data" 1 >/dev/null
"$PROFDATA" merge -o "$OUT/merged.profdata" "$RAW"
# Named by its content: cargo rebuilds on a change of RUSTFLAGS, not of the file it names.
PROFILE="$OUT/profile-$(sha256sum "$OUT/merged.profdata" | cut -c1-16).profdata"
mv "$OUT/merged.profdata" "$PROFILE"

echo "== optimised build" >&2
RUSTFLAGS="-Cprofile-use=$PROFILE" CARGO_TARGET_DIR="$OUT/use" \
  cargo build --release -p switchyard-cli --target "$HOST"
echo "$OUT/use/$HOST/release/switchyard"
