#!/bin/bash
# Instructions per iteration of the hot loops (callgrind: the difference
# between two sizes, so start-up and set-up cancel out):
#   bench/instructions/count.sh [LIBCYCLEGC.a]   (default build/bench-release/libcyclegc.a)
# valgrind maps a 16 GiB arena instead of 64 GiB (src/arena.cpp), so this
# counts the arena path users run; CYCLEGC_NO_ARENA=1 counts the fallback.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="${1:-$here/../../build/bench-release/libcyclegc.a}"
command -v valgrind > /dev/null || { echo "count.sh: needs valgrind" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc -std=c11 -O2 -I"$here/../../include" "$here/driver.c" "$lib" -lstdc++ -lm -o "$out/driver"
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$out/driver" "$@" 2>&1 | awk '/Collected/ {print $4}'; }
a=$(count acyclic 100000); b=$(count acyclic 200000)
echo "acyclic allocate + track + release: $(( (b - a) / 100000 )) per object"
a=$(count cycles 100000); b=$(count cycles 200000)
echo "2-cycle loop: $(( (b - a) / 100000 )) per cycle"
a=$(count tree 200000 1); b=$(count tree 200000 3)
echo "full collection of a live binary tree: $(( (b - a) / 400000 )) per object"
