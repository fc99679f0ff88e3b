#!/usr/bin/env bash
# Runs every variant of every program of bench/programs, interleaved (one
# run of each in turn, one at a time), ROUNDS times; appends the result lines
# to BUILD_DIR/bench-results/programs.jsonl (programs-quick.jsonl with
# --quick), then prints the table of medians (report.py). Exits non-zero if
# a run fails or the variants of a program disagree on its checksum.
#
#     bench/programs/run.sh [--quick] [--only GLOB] BUILD_DIR [ROUNDS]   (ROUNDS: 7)
#
# BUILD_DIR is a build with the programs built (the release preset:
# cmake --build build/release --target programs). --quick: small sizes, a
# smoke test of a few seconds. --only: the programs whose names match GLOB
# (e.g. 'binary-trees-mt-*', the multi-threaded binary-trees on 1 and 2 threads).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
quick=0
only='*'
positional=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) quick=1 ;;
        --only) only=${2:?--only needs a GLOB}; shift ;;
        -h | --help) sed -n '2,13s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) positional+=("$1") ;;
    esac
    shift
done
if [[ ${#positional[@]} -lt 1 ]]; then
    echo "usage: $0 [--quick] [--only GLOB] BUILD_DIR [ROUNDS]" >&2
    exit 2
fi
build=${positional[0]}
rounds=${positional[1]:-7}
list=$build/bench/programs/programs.list
if [[ ! -f $list ]]; then
    echo "$0: $list not found: configure $build with CYCLEGC_BUILD_BENCHMARKS=ON" >&2
    exit 2
fi

# Each program's sizes: the issue's (default) or a smoke test's (--quick).
sizes() {
    case $1:$quick in
        binary-trees:0) echo 18 ;;
        binary-trees:1) echo 10 ;;
        gcbench:0) echo 16 ;;
        gcbench:1) echo 10 ;;
        document:0) echo 1000000 1000000 ;;
        document:1) echo 20000 20000 ;;
        medium-cycles:0) echo 10000000 10000000 10000 ;;
        medium-cycles:1) echo 200000 100000 1000 ;;
        binary-trees-mt-*:0) echo 18 "${1##*-}" ;;
        binary-trees-mt-*:1) echo 10 "${1##*-}" ;;
        *) echo "$0: no sizes for program $1" >&2; exit 2 ;;
    esac
}

runs=()
while IFS=$'\t' read -r name path; do
    # shellcheck disable=SC2053  # a glob match
    [[ $name == $only ]] || continue
    [[ -x $path ]] || { echo "$0: $path is not built" >&2; exit 2; }
    for variant in $("$path" --variants); do runs+=("$name"$'\t'"$path"$'\t'"$variant"); done
done <"$list"

mkdir -p "$build/bench-results"
out=$build/bench-results/programs.jsonl
[[ $quick == 1 ]] && out=$build/bench-results/programs-quick.jsonl
: >"$out"
for ((round = 1; round <= rounds; ++round)); do
    for run in "${runs[@]}"; do
        IFS=$'\t' read -r name path variant <<<"$run"
        # shellcheck disable=SC2046  # the sizes are separate arguments
        line=$("$path" "$variant" $(sizes "$name") | tail -n 1)
        if [[ $line != '{'* ]]; then
            echo "$0: $name $variant printed no result line" >&2
            exit 1
        fi
        echo "$line" >>"$out"
        echo "round $round/$rounds: $name $variant (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    done
done
echo "raw results: $out" >&2
python3 "$here/report.py" "$out"
