#!/bin/bash
# CPython's full collection in the real process against the replays of the
# same program's snapshot (fresh and aged), interleaved ROUNDS times, for
# the DOM and records programs beside this script and session 12's program
# (BENCHMARKS.md, session 13). From the repository's root:
#   bench/results/session13/real-vs-replay.sh [ROUNDS] > bench/results/session13/real-vs-replay.txt
set -euo pipefail
here=bench/results/session13
python=/usr/bin/python3
replay=build/bench-release/bench/cyclegc-replay
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for program in dom records; do
    $python tools/snapshot_heap.py "$here/${program}_program.py" "$work/$program.cgcgraph.gz" | tail -1
done
for round in $(seq "${1:-3}"); do
    echo "== round $round, $(date -u +%H:%M:%S) UTC"
    for program in dom records; do
        (cd "$here" && $python real_collect.py "${program}_program.py")
        for mode in fresh aged; do
            flags=(); [ "$mode" = aged ] && flags=(--aged)
            echo "$program replay ($mode): $($replay --cpython "${flags[@]}" --repeat 1 -q "$work/$program.cgcgraph.gz" |
                grep 'roots held' | awk '{print "cyclegc", $7, "CPython", $8, "ns per node"}')"
        done
    done
    (cd "$here" && $python real_collect.py ../session12/real_cpython_gc.py)
done
