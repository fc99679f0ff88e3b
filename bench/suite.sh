#!/bin/bash
# The whole benchmark suite of BENCHMARKS.md, one benchmark at a time, raw
# outputs to OUTDIR (default build/bench-release/bench-results; about 30
# minutes on 2 cores):
#   bench/suite.sh [OUTDIR]
# Needs the two release builds (both libraries static, then both shared):
#   cmake --preset release -B build/bench-release
#   cmake --preset release -B build/bench-shared -DCYCLEGC_BENCH_LINK=shared
# and ../shared/graphs beside the project.
set -euxo pipefail
cd "$(dirname "$0")/.."
R=${1:-build/bench-release/bench-results}
mkdir -p "$R"
date -u > "$R/when.txt"; git rev-parse --short HEAD >> "$R/when.txt"
cmake --build build/bench-release -j2 && cmake --build build/bench-shared -j2
replay=build/bench-release/bench/cyclegc-replay
# Heaps of programs unlike the shared graphs: snapshots of bench/graphs/*-program.py (tools/snapshot_heap.py)
unseen=(bench/graphs/{mixed,ast,data}-program.cgcgraph.gz)
$replay --json --cpython --boehm --repeat 3 \
    ../shared/graphs/{stdlib-import,test-garbage,ring-1m,pairs-500k,star-1m}.cgcgraph.gz > "$R/replay-shared.jsonl" 2> "$R/replay-shared.log"
$replay --json --cpython --repeat 5 "${unseen[@]}" > "$R/replay-unseen.jsonl" 2> "$R/replay-unseen.log"
# Aged heaps: the nodes scattered among kept fillers (BENCHMARKS.md, "Method")
$replay --json --cpython --aged --repeat 3 \
    ../shared/graphs/{stdlib-import,test-garbage}.cgcgraph.gz > "$R/replay-aged-shared.jsonl" 2> "$R/replay-aged-shared.log"
$replay --json --cpython --aged --repeat 3 "${unseen[@]}" > "$R/replay-aged-unseen.jsonl" 2> "$R/replay-aged-unseen.log"
for _ in 1 2 3; do $replay --json --cpython --repeat 1 \
    ../shared/graphs/{stdlib-import,test-garbage}.cgcgraph.gz; done > "$R/replay-cold.jsonl" 2> "$R/replay-cold.log"
build/bench-release/bench/cyclegc_bench --benchmark_filter='acyclic|cpp_|^cycle_loop/' \
    --benchmark_repetitions=9 --benchmark_report_aggregates_only=true \
    --benchmark_out="$R/micro-hot.json" --benchmark_out_format=json > "$R/micro-hot.txt" 2>&1
build/bench-release/bench/cyclegc_bench --max_heap=1e7 --old_heap=1e7 \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$R/micro.json" --benchmark_out_format=json > "$R/micro.txt" 2>&1
$replay --json --cpython --boehm --repeat 3 \
    --gen-random 1000000 --gen-chain 10000000 > "$R/replay-generated.jsonl" 2> "$R/replay-generated.log"
build/bench-shared/bench/cyclegc_bench --benchmark_filter='acyclic|cpp_|^cycle_loop/' \
    --benchmark_repetitions=9 --benchmark_report_aggregates_only=true \
    --benchmark_out="$R/micro-hot-shared.json" --benchmark_out_format=json > "$R/micro-hot-shared.txt" 2>&1
date -u >> "$R/when.txt"
