#!/usr/bin/env bash
# Runs the fuzz targets: `fuzz/run.sh [TARGET...]` (no target: all of them, one after
# the other). RUNS (default 10,000,000 executions per target), MAX_LEN (default 2048
# bytes per input) and MAX_TIME (seconds per target, whichever of RUNS and MAX_TIME comes
# first; default 0, no limit) can be set. Each target's corpus is seeded from the wire crate's
# fixtures and examples/, its log goes to fuzz/logs/TARGET.log and a crash to
# fuzz/artifacts/TARGET/.
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). No nightly compiler: the
# stable one is told to accept the unstable flags (RUSTC_BOOTSTRAP=1), and no sanitizer
# is built in (`--sanitizer none`, which libFuzzer's coverage does not need) but debug
# assertions are (`-a`), so overflow checks still fire. Comparisons are not traced
# (`--no-trace-compares`): that instrumentation took ~40% of a stream target's time, and
# a dictionary of the inputs' words (below) gives the fuzzer the keys it would find.
set -euo pipefail
cd "$(dirname "$0")"

export RUSTC_BOOTSTRAP=1
RUNS="${RUNS:-10000000}"
MAX_LEN="${MAX_LEN:-2048}"
MAX_TIME="${MAX_TIME:-0}"
ALL=(sse_parser usage_scan raw_body config record_reader
    request_chat request_responses request_messages request_gemini
    reply_chat reply_responses reply_messages reply_gemini
    stream_chat stream_responses stream_messages stream_gemini model_url)
fixtures=../crates/switchyard-wire/tests/fixtures
# The fixtures' directory for each dialect, in the order of `Dialect::ALL` (the byte a
# target reads to pick a dialect).
DIALECTS=(chat responses messages gemini)

# seed TARGET: writes seed inputs into corpus/TARGET (the fuzzer adds its own there).
seed() {
    local target=$1 dir=corpus/$1 f i
    mkdir -p "$dir"
    case $target in
    sse_parser)
        for f in "$fixtures"/*/*.sse; do
            { printf '\0'; cat "$f"; } >"$dir/seed-$(basename "$f")"
        done ;;
    stream_*)
        for f in "$fixtures/${target#stream_}"/*.sse; do
            { printf '\0'; cat "$f"; } >"$dir/seed-$(basename "$f")"
            # The same stream cut into 1-, 3- and 5-byte chunks.
            { printf '\3\1\3\5'; cat "$f"; } >"$dir/seed-cut-$(basename "$f")"
        done ;;
    request_*)
        for f in "$fixtures/${target#request_}"/*request*.json; do
            cp "$f" "$dir/seed-$(basename "$f")"
        done ;;
    reply_*)
        for f in "$fixtures/${target#reply_}"/*.json; do
            case $f in *request*) ;; *) cp "$f" "$dir/seed-$(basename "$f")" ;; esac
        done ;;
    usage_scan)
        for i in "${!DIALECTS[@]}"; do
            for f in "$fixtures/${DIALECTS[$i]}"/*.json; do
                { printf "\\$(printf %o "$i")"; cat "$f"; } >"$dir/seed-$(basename "$f")"
            done
        done ;;
    raw_body)
        for f in "$fixtures"/*/*request*.json; do
            # Two edits: the body's first key, then an absent `seed`.
            { printf '\1\0\0\202\2'; cat "$f"; } >"$dir/seed-$(basename "$f")"
        done ;;
    config)
        for f in ../examples/*.yaml; do
            cp "$f" "$dir/seed-$(basename "$f")"
        done ;;
    model_url)
        # A streaming byte, then an id: real ones, and the hostile ones of issue 33.
        i=0
        while IFS= read -r id; do
            { if ((i % 2)); then printf '\1'; else printf '\0'; fi; printf '%s' "$id"; } \
                >"$dir/seed-$i"
            i=$((i + 1))
        done <<'IDS'
gemini-2.5-pro
accounts/fireworks/models/glm-5p3-flash
Qwen/Qwen3-30B-A3B-Instruct-2507-FP8
claude-sonnet-4@20250514
say:Hello {World} a/b+c
mock-small+x/../mock-large
../../v1/fine_tuning/jobs#
a%2F..%2Fb
a\..\b
x?alt=json
IDS
        ;;
    record_reader)
        # A bound byte, then a recorded segment: whole, and each of its lines alone. The
        # seeds/ segment is a gateway's, of record format 4 (raw bytes after each line).
        for f in ../examples/runs/*/llm_log/*.jsonl seeds/record_reader/*.jsonl; do
            { printf '\4'; cat "$f"; } >"$dir/seed-$(basename "$f")"
            i=0
            while IFS= read -r line; do
                i=$((i + 1))
                printf '\7%s\n' "$line" >"$dir/seed-line-$i-$(basename "$f")"
            done <"$f"
        done ;;
    esac
}

# dict TARGET: writes dicts/TARGET, libFuzzer's dictionary of the words the target's
# input is made of (the JSON strings of its fixtures, the SSE field names, the run
# config's keys), so that mutations can splice in whole keys.
dict() {
    local target=$1 out=dicts/$1 files=()
    mkdir -p dicts
    case $target in
    config) files=(../examples/*.yaml ../crates/switchyard/src/registry/builtins.yaml) ;;
    model_url) files=() ;;
    record_reader) files=(../examples/runs/*/llm_log/*.jsonl seeds/record_reader/*.jsonl) ;;
    *_chat | *_responses | *_messages | *_gemini) files=("$fixtures/${target#*_}"/*) ;;
    *) files=("$fixtures"/*/*) ;;
    esac
    {
        if [ "$target" = config ]; then
            grep -ohE '[A-Za-z_]{2,32}:' "${files[@]}"
        elif [ "$target" = model_url ]; then
            # What URL parsers read as structure, plainly and escaped.
            printf '%s\n' '/' '..' '.' '%2F' '%2f' '%2E' '%2e' '%2E%2E' '%25' '#' '?' '\\' \
                '%5C' ':' '@' '+' '{' '}' ' ' '//' '/../' '/./' '\x09' '\x00' ':generateContent'
        else
            grep -ohE '"[A-Za-z0-9_.:/-]{2,40}"' "${files[@]}" | sed 's/"/\\"/g'
        fi
        printf '%s\n' 'data: ' 'event: ' 'id: ' ': ' '[DONE]' '\\u00e9'
    } | sort -u | sed 's/.*/"&"/' >"$out"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL[@]}")
mkdir -p logs
for target in "${targets[@]}"; do
    seed "$target"
    dict "$target"
    echo "== $target: $RUNS runs" >&2
    nice -n 19 cargo fuzz run --sanitizer none -a --no-trace-compares "$target" \
        "corpus/$target" -- -runs="$RUNS" -max_total_time="$MAX_TIME" -max_len="$MAX_LEN" -dict="dicts/$target" \
        -print_final_stats=1 2>&1 | tee "logs/$target.log"
done
