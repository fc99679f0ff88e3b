#!/usr/bin/env bash
# Plots the pauses of pauses.cpp, stop-the-world and with a 1 ms budget, on
# tree 1M, tree 10M and serve (cache of 100k; 20M allocations each): their
# distribution (the fraction of pauses at least so long) and the longest
# pause over each run's time, as one SVG (gnuplot, Debian package
# `gnuplot-nox`).
#
#     bench/programs/plot_pauses.sh BUILD_DIR [OUT.svg] [--plot-only]
#                                   (docs/img/pauses.svg)
#
# BUILD_DIR has program_pauses built; the pause logs go to
# BUILD_DIR/pause-logs (--plot-only plots the logs already there). The six
# runs go one after another, and print their lines as pauses.sh does; the
# pause clock is the thread's CPU time unless the environment says otherwise.
set -euo pipefail
export CYCLEGC_PAUSE_CLOCK=${CYCLEGC_PAUSE_CLOCK:-thread}
here=$(cd "$(dirname "$0")" && pwd)
if [[ $# -lt 1 ]]; then
    echo "usage: $0 BUILD_DIR [OUT.svg] [--plot-only]" >&2
    exit 2
fi
if ! command -v gnuplot > /dev/null; then
    echo "$0: gnuplot is missing: sudo apt-get install gnuplot-nox" >&2
    exit 1
fi
program=$1/bench/programs/program_pauses
out=${2:-$here/../../docs/img/pauses.svg}
logs=$1/pause-logs
mkdir -p "$logs"
# name, mode, heap, title
runs=("tree1m tree 1000000 tree, 1M live nodes" "tree10m tree 10000000 tree, 10M live nodes"
      "serve serve 100000 serve, a cache from 100k")
if [[ ${3:-} != --plot-only ]]; then
    [[ -x $program ]] || { echo "$0: $program is not built" >&2; exit 2; }
    for run in "${runs[@]}"; do
        read -r name mode heap _ <<<"$run"
        for budget in 0 1000000; do
            "$program" --mode "$mode" --heap "$heap" --allocations 20000000 --pause-budget "$budget" \
                --pause-log "$logs/$name-$budget.log" | head -n 1
        done
    done
fi
python3 "$here/plot_pauses.py" "$logs"/*.log --out "$logs"

# One row of panels, a program each: its two runs' EXT files drawn WITH.
row() {
    local ext=$1 with=$2 run name mode heap title
    for run in "${runs[@]}"; do
        read -r name mode heap title <<<"$run"
        echo "set title '$title'"
        echo "plot '$logs/$name-0.$ext' w $with lc rgb '#d62728' t 'budget 0', \\"
        echo "     '$logs/$name-1000000.$ext' w $with lc rgb '#1f77b4' t 'budget 1 ms'"
    done
}

# The distribution above, the time below.
{
    echo 'set terminal svg size 1200,720 dynamic font "sans,12"'
    echo "set output '$out'"
    echo 'set multiplot layout 2,3 title "Pauses, stop-the-world (budget 0) and incremental (budget 1 ms); CPU time of the collecting thread; dashed: 1 ms"'
    echo 'set logscale xy; set grid; set format y "%g"; set key top right'
    echo 'set arrow 1 from 1, graph 0 to 1, graph 1 nohead dt 2 lc rgb "#888888"'
    echo 'set xlabel "pause length (ms, log)"; set ylabel "fraction of pauses at least that long"'
    echo 'set xrange [0.001:3000]; set format x "%g"; set yrange [1e-5:1.5]'
    row ccdf "l lw 2"
    echo 'set key bottom right; unset arrow 1; set arrow 2 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lc rgb "#888888"'
    echo 'unset logscale x; set xrange [0:*]; set yrange [0.001:3000]'
    echo 'set xlabel "time in the run (s, CPU)"; set ylabel "longest pause per 1/300 of the run (ms, log)"'
    row time "p pt 7 ps 0.35"
    echo 'unset multiplot'
} | gnuplot
echo "$0: wrote $out"
