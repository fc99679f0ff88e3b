#!/usr/bin/env bash
# Runs the pauses program (pauses.cpp) stop-the-world and with a 1 ms pause
# budget, side by side, ROUNDS times each, for the tree heap of HEAP objects
# and the serving loop, then binary-trees (depth 18) and GCBench (depth 16)
# the same two ways (CYCLEGC_PAUSE_BUDGET_NS); prints each run's line.
#
#     bench/programs/pauses.sh BUILD_DIR [HEAP] [ROUNDS]    (1000000, 3)
#
# BUILD_DIR is a build with the programs built (the release preset:
# cmake --build build/release --target program_pauses). Pauses are measured
# in thread CPU time (CYCLEGC_PAUSE_CLOCK=thread) unless the environment says
# otherwise: on a machine shared with other work, wall time counts the waits
# for a core.
set -euo pipefail
export CYCLEGC_PAUSE_CLOCK=${CYCLEGC_PAUSE_CLOCK:-thread}

if [[ $# -lt 1 ]]; then
    echo "usage: $0 BUILD_DIR [HEAP] [ROUNDS]" >&2
    exit 2
fi
program=$1/bench/programs/program_pauses
heap=${2:-1000000}
rounds=${3:-3}
[[ -x $program ]] || { echo "$0: $program is not built" >&2; exit 2; }
allocations=$((heap * 20))
for round in $(seq "$rounds"); do
    for mode in tree serve; do
        size=$heap
        [[ $mode == serve ]] && size=$((heap / 10))  # (the cache's starting size)
        for budget in 0 1000000; do
            "$program" --mode "$mode" --heap "$size" --allocations "$allocations" --pause-budget "$budget"
        done
    done
    for classic in "binary_trees 18" "gcbench 16"; do
        read -r name depth <<<"$classic"
        for budget in 0 1000000; do
            echo -n "budget_ns=$budget "
            CYCLEGC_PAUSE_BUDGET_NS=$budget "$1/bench/programs/program_$name" cyclegc "$depth" | tail -n 1
        done
    done
done
