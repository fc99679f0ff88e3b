#!/bin/bash
# CPython's full collection in the real process against the replays of the
# same program's snapshot (fresh and aged), interleaved ROUNDS times, for
# the DOM and records programs beside this script and session 12's program
# (BENCHMARKS.md, session 13). Needs a release build (build/bench-release).
# From the repository's root:
#   bench/results/session13/real-vs-replay.sh [ROUNDS] > bench/results/session13/real-vs-replay.txt
set -euo pipefail
here=bench/results/session13
python=/usr/bin/python3
replay=build/bench-release/bench/cyclegc-replay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
programs=("$here/dom_program.py" "$here/records_program.py" bench/results/session12/real_cpython_gc.py)
for program in "${programs[@]}"; do
    $python tools/snapshot_heap.py "$program" "$work/$(basename "$program" .py).cgcgraph.gz" | tail -1
done
for round in $(seq "${1:-3}"); do
    echo "== round $round, $(date -u +%H:%M:%S) UTC"
    for program in "${programs[@]}"; do
        $python "$here/real_collect.py" "$program"
        for mode in fresh aged; do
            flags=(); [ "$mode" = aged ] && flags=(--aged)
            echo "$(basename "$program" .py) replay ($mode): $($replay --cpython "${flags[@]}" --repeat 1 -q \
                "$work/$(basename "$program" .py).cgcgraph.gz" |
                grep 'roots held' | awk '{print "cyclegc", $7, "CPython", $8, "ns per node"}')"
        done
    done
done
