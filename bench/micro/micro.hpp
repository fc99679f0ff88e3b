// Shared by the micro-benchmark files.
#ifndef CYCLEGC_BENCH_MICRO_HPP
#define CYCLEGC_BENCH_MICRO_HPP

namespace cgcmicro {

struct Config {
    long max_heap = 1000000;  // largest heap of the collection-cost series
    long old_heap = 1000000;  // the live old heap beside the cycle loop
    bool cpython = true;      // also run the loops against the embedded CPython
};

void register_heap_benchmarks(const Config &config);
void register_shared_heap_benchmarks(const Config &config);
// Frees the heaps kept between runs (call after the benchmarks ran).
void release_cached_heaps();

}  // namespace cgcmicro

#endif
