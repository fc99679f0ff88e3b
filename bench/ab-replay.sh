#!/bin/bash
# Compares builds of cyclegc-replay on one graph: runs them in turn, ROUNDS
# times (interleaved, so that the machine's drift hits each alike), and
# prints the median of each step per binary. For changes of a few percent,
# which a single run cannot tell from noise (use 9 rounds or more). Each
# run replays the graph REPEAT times (default 3; REPEAT=1: cold runs only),
# with the options in REPLAY_FLAGS (e.g. REPLAY_FLAGS=--aged).
#
#   bench/ab-replay.sh ROUNDS GRAPH.cgcgraph.gz BINARY...
#   e.g. bench/ab-replay.sh 9 ../shared/graphs/test-garbage.cgcgraph.gz /tmp/replay-before build/bench-release/bench/cyclegc-replay
set -euo pipefail
if [ $# -lt 3 ]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
rounds=$1 graph=$2
shift 2
for _ in $(seq "$rounds"); do
    for binary in "$@"; do
        "$binary" --repeat "${REPEAT:-3}" ${REPLAY_FLAGS:-} -q "$graph" 2>&1 | grep -E '^(build|full collect|churn|drop)' |
            sed 's/ *floor.*//' |
            awk -v b="$binary" '{v = $NF; $NF = ""; sub(/ +[0-9]+ +[0-9]+ *$/, ""); sub(/ +[0-9]+ *$/, ""); print b "\t" $0 "\t" v}'
    done
done | python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
order = []
for line in sys.stdin:
    binary, step, value = line.rstrip("\n").split("\t")
    if step not in order: order.append(step)
    runs[(step, binary)].append(float(value))
binaries = list(dict.fromkeys(b for _, b in runs))
print("step".ljust(32) + "".join(f"{i:>10}" for i in range(1, len(binaries) + 1)))
for step in order:
    print(step.ljust(32) + "".join(f"{statistics.median(runs[(step, b)]):10.2f}" for b in binaries))
for i, b in enumerate(binaries, 1): print(f"{i}: {b}")
'
