#!/bin/bash
set -x
cd /work/main
R=bench/results/session11
mkdir -p $R
date -u > $R/when.txt; git rev-parse --short HEAD >> $R/when.txt
cmake --build build/bench-release -j2 && cmake --build build/bench-shared -j2
build/bench-release/bench/cyclegc-replay --json --cpython --boehm --repeat 3 \
    ../shared/graphs/{stdlib-import,test-garbage,ring-1m,pairs-500k,star-1m}.cgcgraph.gz > $R/replay-shared.jsonl 2> $R/replay-shared.log
build/bench-release/bench/cyclegc-replay --json --cpython --repeat 5 \
    bench/results/session8/new-heap.cgcgraph.gz bench/results/session8/heap8.cgcgraph.gz bench/results/session9/heap9.cgcgraph.gz > $R/replay-unseen.jsonl 2> $R/replay-unseen.log
# Aged heaps (--aged): the nodes scattered among kept fillers (BENCHMARKS.md, session 11)
build/bench-release/bench/cyclegc-replay --json --cpython --aged --repeat 3 \
    ../shared/graphs/{stdlib-import,test-garbage}.cgcgraph.gz > $R/replay-aged-shared.jsonl 2> $R/replay-aged-shared.log
build/bench-release/bench/cyclegc-replay --json --cpython --aged --repeat 3 \
    bench/results/session8/new-heap.cgcgraph.gz bench/results/session8/heap8.cgcgraph.gz bench/results/session9/heap9.cgcgraph.gz > $R/replay-aged-unseen.jsonl 2> $R/replay-aged-unseen.log
for i in 1 2 3; do build/bench-release/bench/cyclegc-replay --json --cpython --repeat 1 \
    ../shared/graphs/{stdlib-import,test-garbage}.cgcgraph.gz; done > $R/replay-cold.jsonl 2> $R/replay-cold.log
build/bench-release/bench/cyclegc_bench --benchmark_filter='acyclic|cpp_|^cycle_loop/' \
    --benchmark_repetitions=9 --benchmark_report_aggregates_only=true \
    --benchmark_out=$R/micro-hot.json --benchmark_out_format=json > $R/micro-hot.txt 2>&1
build/bench-release/bench/cyclegc_bench --max_heap=1e7 --old_heap=1e7 \
    --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out=$R/micro.json --benchmark_out_format=json > $R/micro.txt 2>&1
build/bench-release/bench/cyclegc-replay --json --cpython --boehm --repeat 3 \
    --gen-random 1000000 --gen-chain 10000000 > $R/replay-generated.jsonl 2> $R/replay-generated.log
build/bench-shared/bench/cyclegc_bench --benchmark_filter='acyclic|cpp_|^cycle_loop/' \
    --benchmark_repetitions=9 --benchmark_report_aggregates_only=true \
    --benchmark_out=$R/micro-hot-shared.json --benchmark_out_format=json > $R/micro-hot-shared.txt 2>&1
date -u >> $R/when.txt

