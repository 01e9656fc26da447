#!/usr/bin/env bash
# 1-connection latency: direct vs gateway (store on), DUR each, ROUNDS rounds interleaved.
set -u
BIN=${1:-${CARGO_TARGET_DIR:-target}/release/switchyard}; DUR=${DUR:-5s}; ROUNDS=${ROUNDS:-3}
cd "$(dirname "$0")/.."; mkdir -p "${CARGO_TARGET_DIR:-target}"
DATA=$(mktemp -d "${CARGO_TARGET_DIR:-target}"/lat.XXXX)
$BIN mock --port 4510 >/dev/null & M=$!
$BIN serve --listen 127.0.0.1:4511 --no-mock --data-dir $DATA "backends.mock.base_url=http://127.0.0.1:4510/v1" >/dev/null & G=$!
sleep 0.7
D='{"model":"echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
W='{"model":"mock/echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}'
for r in $(seq $ROUNDS); do
  echo "direct:  $(BODY="$D" wrk -t1 -c1 -d$DUR --latency -s bench/post.lua http://127.0.0.1:4510/v1/chat/completions | grep -E '^ +(50|99)%' | awk '{print $1, $2}' | tr '\n' ' ')"
  echo "gateway: $(BODY="$W" wrk -t1 -c1 -d$DUR --latency -s bench/post.lua http://127.0.0.1:4511/v1/chat/completions | grep -E '^ +(50|99)%' | awk '{print $1, $2}' | tr '\n' ' ')"
done
kill $G $M; wait 2>/dev/null; rm -rf $DATA
