#!/usr/bin/env bash
# Prints a Markdown table row per target from the logs `run.sh` left in fuzz/logs:
# executions, median exec/s over the run's status lines, executions per wall-clock second,
# wall time, corpus (inputs/size), and
# whether libFuzzer reported a crash. `fuzz/stats.sh [TARGET...]` (default: every log).
set -uo pipefail
cd "$(dirname "$0")"
logs=("$@")
[ ${#logs[@]} -gt 0 ] || logs=($(cd logs && ls *.log | sed 's/\.log$//'))
for t in "${logs[@]}"; do
    log=logs/$t.log
    runs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | awk '{print $2}')
    secs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | awk '{print $5}')
    # A run a crash stopped has no `Done` line: its last status line says how far it got.
    [ -n "$runs" ] || runs="<$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')"
    median=$(grep -oE 'exec/s: [0-9]+' "$log" | awk '{print $2}' | sort -n |
        awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "?"}')
    # The corpus libFuzzer kept at the end (the directory also holds superseded inputs).
    corpus=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | grep -oE 'corp: [^ ]+' | cut -d' ' -f2)
    crash=$(grep -cE '^==[0-9]+== ERROR|panicked at|deadly signal' "$log" || true)
    overall=$([ -n "$secs" ] && [ "$secs" -gt 0 ] && echo $((runs / secs)) || echo "?")
    printf '| `%s` | %s | %s | %s | %s s | %s | %s |\n' "$t" "${runs:-?}" "$median" "$overall" \
        "${secs:-?}" "$corpus" \
        "$([ "$crash" -gt 0 ] && echo crash || echo none)"
done
