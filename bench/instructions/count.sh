#!/bin/bash
# Instructions per iteration of the hot loops (callgrind: the difference
# between two sizes, so start-up and set-up cancel out), for cyclegc (its C
# and C++ loops, confined and on a shared heap's owner thread) and,
# if Debian's libpython3-dev is installed, for the same loops against
# CPython's static core (as the micro-benchmarks link it):
#   bench/instructions/count.sh [LIBCYCLEGC.a]   (default build/bench-release/libcyclegc.a)
# valgrind maps a 16 GiB arena instead of 64 GiB (src/arena.cpp), so this
# counts the arena path users run; CYCLEGC_NO_ARENA=1 counts the fallback.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lib="${1:-$here/../../build/bench-release/libcyclegc.a}"
command -v valgrind > /dev/null || { echo "count.sh: needs valgrind" >&2; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc -std=c11 -O2 -I"$here/../../include" "$here/driver.c" "$lib" -lstdc++ -lm -o "$out/cyclegc"
c++ -std=c++20 -O2 -I"$here/../../include" "$here/cpp_driver.cpp" "$lib" -lpthread -o "$out/cpp"
drivers=(cyclegc)
python=/usr/bin/python3
if [ -x "$python-config" ]; then
    # libpython3.x.a and what it needs, as bench/CMakeLists.txt finds them.
    mapfile -t static < <("$python" -c "import sysconfig as s; v = s.get_config_var; print(v('LIBPL') + '/' + v('LIBRARY')); print(' '.join(v(n) or '' for n in ('MODLIBS', 'LIBS', 'SYSLIBS')))")
    if [ -f "${static[0]}" ]; then
        # shellcheck disable=SC2086  # (the libraries' list splits into words)
        cc -std=c11 -O2 -no-pie -DDRIVER_CPYTHON $("$python-config" --includes) "$here/driver.c" \
            "${static[0]}" ${static[1]} -lm -o "$out/cpython"
        drivers+=(cpython)
    fi
fi
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$out/$driver" "$@" 2>&1 | awk '/Collected/ {print $4}'; }
for driver in "${drivers[@]}"; do
    a=$(count acyclic 100000); b=$(count acyclic 200000)
    echo "$driver: acyclic allocate + track + release: $(( (b - a) / 100000 )) per object"
    a=$(count cycles 100000); b=$(count cycles 200000)
    echo "$driver: 2-cycle loop: $(( (b - a) / 100000 )) per cycle"
    if [ "$driver" = cyclegc ]; then
        a=$(count acyclic-shared 100000); b=$(count acyclic-shared 200000)
        echo "$driver: the same on a shared heap (its one thread): $(( (b - a) / 100000 )) per object"
        a=$(count cycles-shared 100000); b=$(count cycles-shared 200000)
        echo "$driver: 2-cycle loop on a shared heap: $(( (b - a) / 100000 )) per cycle"
        for loop in make copy; do
            for heap in confined shared; do
                a=$(driver=cpp count $loop 100000 $heap); b=$(driver=cpp count $loop 200000 $heap)
                echo "C++: $loop (+ release), $heap heap: $(( (b - a) / 100000 )) per iteration"
            done
        done
    fi
    a=$(count tree 200000 1); b=$(count tree 200000 3)
    echo "$driver: full collection of a live binary tree: $(( (b - a) / 400000 )) per object"
done
