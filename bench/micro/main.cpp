// cyclegc_bench: Google Benchmark micro-benchmarks (see BENCHMARKS.md).
//
// Besides Google Benchmark's own flags:
//   --max_heap=N    largest heap of the young/full collection series (default 1000000)
//   --old_heap=N    live old heap beside the cycle loop (default 1000000)
//   --no_cpython    do not run the loops against the embedded CPython
#include "micro.hpp"

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
    cgcmicro::Config config;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        auto number = [&](const char *prefix, long &out) {
            size_t n = std::strlen(prefix);
            if (std::strncmp(a, prefix, n) != 0) return false;
            out = static_cast<long>(std::strtod(a + n, nullptr));  // accepts 1e7
            return true;
        };
        if (number("--max_heap=", config.max_heap) || number("--old_heap=", config.old_heap)) continue;
        if (std::strcmp(a, "--no_cpython") == 0) {
            config.cpython = false;
            continue;
        }
        argv[kept++] = argv[i];
    }
    argc = kept;
    cgcmicro::register_heap_benchmarks(config);
    cgcmicro::register_shared_heap_benchmarks(config);
    benchmark::AddCustomContext("max_heap", std::to_string(config.max_heap));
    benchmark::AddCustomContext("old_heap", std::to_string(config.old_heap));
    benchmark::AddCustomContext("linked", CYCLEGC_BENCH_LINK_NOTE);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    cgcmicro::release_cached_heaps();
    benchmark::Shutdown();
    return 0;
}
