#!/usr/bin/env bash
# CTest bench.binary_trees_mt: every variant of the multi-threaded
# binary-trees, on 1, 2 and 3 threads (3 does not divide the iterations),
# prints exactly the single-threaded program's output, and a result line
# naming its thread count with a throughput.
#
#     binary_trees_mt_test.sh PROGRAM_BINARY_TREES_MT PROGRAM_BINARY_TREES [DEPTH]
set -euo pipefail
mt=$1 single=$2 depth=${3:-12}
fail() { echo "binary_trees_mt_test: $*" >&2; exit 1; }
expected=$("$single" cyclegc "$depth" | sed '$d')
[[ -n $expected ]] || fail "$single printed nothing"
for variant in $("$mt" --variants); do
    for threads in 1 2 3; do
        out=$("$mt" "$variant" "$depth" "$threads") || fail "$variant on $threads threads failed"
        [[ $(sed '$d' <<<"$out") == "$expected" ]] ||
            fail "$variant on $threads threads printed another output:"$'\n'"$out"
        result=$(tail -n 1 <<<"$out")
        [[ $result == *"\"program\":\"binary-trees-mt-$threads\""* ]] || fail "result line: $result"
        [[ $result =~ \"throughput\":[0-9]+ ]] || fail "no throughput: $result"
        echo "$variant, $threads threads: $result"
    done
done
