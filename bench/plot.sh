#!/usr/bin/env bash
# Plots the benchmark results as PNGs (gnuplot, Debian package `gnuplot`
# or `gnuplot-nox`: sudo apt-get install gnuplot-nox).
#
#   bench/plot.sh MICRO.json [REPLAY.jsonl] [OUTDIR]
#
# MICRO.json:   cyclegc_bench --benchmark_out=MICRO.json --benchmark_out_format=json ...
# REPLAY.jsonl: cyclegc-replay --json --cpython ... > REPLAY.jsonl   (optional)
# OUTDIR:       default: an img folder beside MICRO.json
# Writes full_collect.png, young_collect.png and (with a replay) replay.png.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
micro="${1:?usage: bench/plot.sh MICRO.json [REPLAY.jsonl] [OUTDIR]}"
replay="${2:-}"
out="${3:-$(dirname "$micro")/img}"
if ! command -v gnuplot > /dev/null; then
  echo "plot.sh: gnuplot is missing: sudo apt-get install gnuplot-nox" >&2
  exit 1
fi
mkdir -p "$out"
dat="$(mktemp -d)"
trap 'rm -rf "$dat"' EXIT
args=(--micro "$micro" --dat "$dat")
[ -n "$replay" ] && args+=(--replay "$replay")
python3 "$here/report.py" "${args[@]}"

term='set terminal pngcairo size 900,560 enhanced font "sans,11"'

gnuplot <<GP
$term
set output "$out/full_collect.png"
set title "Full collection of a live heap (binary tree): time per object"
set xlabel "objects in the heap"
set ylabel "ns per object (CPU)"
set logscale x
set format x "10^{%L}"
set yrange [0:*]
set grid
set key top left
plot "$dat/full_collect.dat" using 1:3 with linespoints lw 2 pt 7 title "CPython 3.11", \
     "$dat/full_collect.dat" using 1:2 with linespoints lw 2 pt 5 title "cyclegc", \
     "$dat/full_collect.dat" using 1:4 with linespoints lw 2 pt 9 title "floor (CSR mark)"
GP

gnuplot <<GP
$term
set output "$out/young_collect.png"
set title "Young collection of 1,000 new objects, against the old heap's size"
set xlabel "objects in the old heap"
set ylabel "µs per young collection (CPU)"
set logscale x
set format x "10^{%L}"
set yrange [0:*]
set grid
set key top left
plot "$dat/young_collect.dat" using 1:3 with linespoints lw 2 pt 7 title "CPython 3.11", \
     "$dat/young_collect.dat" using 1:2 with linespoints lw 2 pt 5 title "cyclegc"
GP

if [ -s "$dat/replay.dat" ]; then
gnuplot <<GP
$term
set output "$out/replay.png"
set title "Heap-graph replays: full collection with every root held"
set ylabel "ns per live node (CPU, log scale)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set yrange [1:*]
set grid ytics
set xtics rotate by -20
set key top left
plot "$dat/replay.dat" using 3:xtic(1) title "CPython 3.11", \
     "" using 2 title "cyclegc", \
     "" using 4 title "floor (CSR mark)"
GP
fi
echo "plot.sh: wrote $(ls "$out"/*.png | tr '\n' ' ')"
