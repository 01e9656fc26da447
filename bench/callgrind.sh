#!/usr/bin/env bash
# Instructions per call in the gateway, counted by callgrind: steady on a noisy machine,
# where wall-clock figures are not. The gateway runs under valgrind in front of a static
# nginx; N calls are made one after another over one keep-alive connection; the count of
# a run with no call (start-up and shutdown) is subtracted.
#   cargo build --release -p switchyard-cli && bench/callgrind.sh
#   BINS="/path/to/old/switchyard target/release/switchyard" N=2000 bench/callgrind.sh
#   CACHE_SIM=1 bench/callgrind.sh   # also the first-level cache misses per call (the host's
#                                    # caches, as valgrind reads them; slower)
# Needs valgrind and nginx. Prints instructions per call for each binary and case.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=${BINS:-${CARGO_TARGET_DIR:-target}/release/switchyard}
N=${N:-2000}
CASES=${CASES:-"whole stream translated whole+store"}
# valgrind counts each byte of a `rep movsb` as an instruction, and glibc's memcpy takes
# that path for copies past ~2 KiB: a future growing past that size would read as ~8,000
# instructions per call that a real CPU does in a few dozen cycles. Raising the threshold
# counts such copies as the vector loop they are below it (set CALLGRIND_REP_MOVSB=1 to
# count as glibc's default does).
if [ "${CALLGRIND_REP_MOVSB:-0}" != 1 ]; then
  export GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.cpu.x86_rep_movsb_threshold=1000000
fi
NGINX_PORT=${NGINX_PORT:-4460}
GW_PORT=${GW_PORT:-4461}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/switchyard-callgrind.XXXXXX")

. bench/nginx-lib.sh
fixed_bodies 20
nginx_start "$WORK/nginx" "$(nginx_static "$NGINX_PORT")"
NGINX_PID=$NGINX_STARTED
trap 'kill $NGINX_PID 2>/dev/null; wait 2>/dev/null; rm -rf "$WORK"' EXIT
gateway_backends "$NGINX_PORT" >"$WORK/gateway.yaml"
# `route1`: a route of one member (docs/routing.md), which must cost what its reference
# does. Written only when asked: a binary older than routes refuses the section.
case " $CASES " in *" route1 "*)
  printf 'routes:\n  one: {try: [ngx/fixed]}\n' >>"$WORK/gateway.yaml" ;;
esac

# Total instructions of one gateway run making `n` calls of `model` (stream or not).
count() { # bin n model stream store
  local out="$WORK/cg.out" extra=() sim=()
  [ "$5" = store ] && extra=(--data-dir "$WORK/data-$RANDOM")
  [ "${CACHE_SIM:-0}" = 1 ] && sim=(--cache-sim=yes)
  # Without SSL_CERT_FILE: its bundle is parsed once, at the first call, which the idle
  # run (no call) would not subtract.
  env -u SSL_CERT_FILE RUST_LOG=warn valgrind --tool=callgrind "${sim[@]}" --callgrind-out-file="$out" \
    "$1" serve --listen "127.0.0.1:$GW_PORT" --no-mock --config "$WORK/gateway.yaml" "${extra[@]}" \
    >/dev/null 2>"$WORK/valgrind.log" &
  local pid=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$GW_PORT/healthz" >/dev/null && break; sleep 0.1; done
  python3 - "$GW_PORT" "$2" "$3" "$4" <<'PY'
import http.client, json, sys
port, n, model, stream = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
body = json.dumps({"model": model, "stream": stream,
                   "messages": [{"role": "user", "content": "hello there, how are you today?"}]})
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  # The run's totals: instructions, then (with the cache simulated) the misses of the
  # instruction cache and of the data cache's reads and writes, comma-separated.
  awk '/^events:/ {for (i = 2; i <= NF; i++) col[$i] = i}
       /^(summary|totals):/ {
         line = $(col["Ir"])
         if ("I1mr" in col) line = line "," $(col["I1mr"]) "," $(col["D1mr"]) "," $(col["D1mw"])
         print line; exit }' "$out"
  if [ -n "${KEEP:-}" ]; then cp "$out" "$KEEP.$2"; fi
}

# ", misses per call: …" from two runs' totals, when the cache was simulated.
misses() { # busy idle
  [ "${1#*,}" = "$1" ] && return
  local b1 b2 b3 i1 i2 i3
  IFS=, read -r _ b1 b2 b3 <<<"$1"
  IFS=, read -r _ i1 i2 i3 <<<"$2"
  echo ", misses per call: instructions $(( (b1 - i1) / N )), data read $(( (b2 - i2) / N )), data written $(( (b3 - i3) / N ))"
}

for bin in $BINS; do
  for case in $CASES; do
    case "$case" in
      whole) model=ngx/fixed; stream=0; store=none ;;
      route1) model=one; stream=0; store=none ;;
      stream) model=ngxs/fixed; stream=1; store=none ;;
      translated) model=ngxm/fixed; stream=0; store=none ;;
      whole+store) model=ngx/fixed; stream=0; store=store ;;
      stream+store) model=ngxs/fixed; stream=1; store=store ;;
      translated+store) model=ngxm/fixed; stream=0; store=store ;;
    esac
    idle=$(count "$bin" 0 "$model" "$stream" "$store")
    busy=$(count "$bin" "$N" "$model" "$stream" "$store")
    echo "$bin $case: $(( (${busy%%,*} - ${idle%%,*}) / N )) instructions per call ($N calls; ${busy%%,*} - ${idle%%,*})$(misses "$busy" "$idle")"
  done
done
