// The C-level micro-benchmarks: the loops of loops.h run against cyclegc
// and, if built in, against the embedded CPython, plus the floor for full
// collections. Heaps are built once per (API, size) and kept between the
// runs Google Benchmark makes of one benchmark.
#include "loops_api.h"
#include "micro.hpp"

#include <cyclegc/cyclegc.h>

#include <benchmark/benchmark.h>

#include <time.h>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace cgcmicro {
namespace {

struct Api {
    std::string name;
    void (*acyclic)(long);
    void (*cycles)(long);
    void (*cycles_into)(void **, long, long, uint64_t *);
    void **(*build_tree)(long);
    void (*release_tree)(void **, long);
    void *(*new_object)();
    void (*release_object)(void *);
    void (*incref_decref)(void *, long);
    long (*collect)(int);
    void (*set_enabled)(int);
};

#define CYCLEGC_BENCH_API(label, p) \
    Api { label, p##_acyclic, p##_cycles, p##_cycles_into, p##_build_tree, p##_release_tree, \
          p##_new_object, p##_release_object, p##_incref_decref, p##_collect, p##_set_enabled }

constexpr long kBatch = 1000;

// The young-collection series times only the collection, on the thread's
// CPU clock (as Google Benchmark's CPU column).
double thread_cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// One live old heap per API: a binary tree of n tracked objects, collected
// once after it is built so that it sits in the oldest generation.
struct Heap {
    long n = 0;
    void **nodes = nullptr;
};
std::map<std::string, Heap> heaps;

void drop_heap(const Api &api) {
    Heap &h = heaps[api.name];
    if (!h.nodes) return;
    api.release_tree(h.nodes, h.n);
    h = Heap{};
    api.collect(2);
}

void **ensure_heap(const Api &api, long n) {
    Heap &h = heaps[api.name];
    if (h.nodes && h.n == n) return h.nodes;
    drop_heap(api);
    api.set_enabled(0);
    h.nodes = api.build_tree(n);
    h.n = n;
    api.collect(2);
    api.set_enabled(1);
    return h.nodes;
}

void acyclic(benchmark::State &state, Api api) {
    drop_heap(api);
    api.set_enabled(1);
    while (state.KeepRunningBatch(kBatch)) api.acyclic(kBatch);
    state.SetItemsProcessed(state.iterations());
}

// The loops on a shared heap, on the thread that owns its objects (biased
// counting's owner path), beside the confined heap's (cyclegc only).
template <class Loop>
void on_shared_heap(benchmark::State &state, Api api, Loop loop) {
    drop_heap(api);  // (the confined heap's tree)
    cgc_heap *was = cgc_heap_current();
    cgc_heap *shared = cgc_heap_new_shared();
    cgc_heap_set_current(shared);
    api.set_enabled(1);
    api.collect(1);
    while (state.KeepRunningBatch(kBatch)) loop(kBatch);
    api.collect(1);
    cgc_heap_set_current(was);
    cgc_heap_delete(shared);
    state.SetItemsProcessed(state.iterations());
}

void acyclic_shared_heap(benchmark::State &state, Api api) { on_shared_heap(state, api, api.acyclic); }
void cycle_loop_shared_heap(benchmark::State &state, Api api) { on_shared_heap(state, api, api.cycles); }

// Short-lived 2-cycles with automatic collection on; `old` > 0 keeps a live
// old heap of that many objects while the loop runs.
void cycle_loop(benchmark::State &state, Api api, long old) {
    if (old > 0)
        ensure_heap(api, old);
    else
        drop_heap(api);
    api.set_enabled(1);
    api.collect(1);
    while (state.KeepRunningBatch(kBatch)) api.cycles(kBatch);
    api.collect(1);  // the loop is over: untimed
    state.SetItemsProcessed(state.iterations());
    state.counters["old_heap"] = double(old);
}

// One young collection of 1000 new objects (500 garbage 2-cycles, each
// object also referring to a random old object), with an old heap of
// `old` objects present. Only the collection is timed.
void young_collect(benchmark::State &state, Api api, long old) {
    void **nodes = ensure_heap(api, old);
    api.set_enabled(0);
    api.collect(0);
    uint64_t seed = 12345;
    for (auto _ : state) {
        api.cycles_into(nodes, old, 500, &seed);
        double start = thread_cpu_seconds();
        api.collect(0);
        state.SetIterationTime(thread_cpu_seconds() - start);
    }
    api.set_enabled(1);
    state.counters["old_heap"] = double(old);
}

// A full collection of a live heap of n objects (nothing to free).
void full_collect(benchmark::State &state, Api api, long n) {
    ensure_heap(api, n);
    api.set_enabled(0);
    for (auto _ : state) benchmark::DoNotOptimize(api.collect(2));
    api.set_enabled(1);
    state.counters["heap"] = double(n);
    state.counters["per_object"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate |
                                                                     benchmark::Counter::kInvert);
}

// The floor for the same tree: one explicit-stack mark over CSR arrays.
void full_collect_floor(benchmark::State &state, long n) {
    std::vector<uint32_t> offsets(size_t(n) + 1), targets;
    for (long i = 0; i < n; ++i) {
        offsets[size_t(i)] = uint32_t(targets.size());
        if (2 * i + 1 < n) targets.push_back(uint32_t(2 * i + 1));
        if (2 * i + 2 < n) targets.push_back(uint32_t(2 * i + 2));
    }
    offsets[size_t(n)] = uint32_t(targets.size());
    std::vector<uint8_t> mark;
    std::vector<uint32_t> stack;
    for (auto _ : state) {
        mark.assign(size_t(n), 0);
        stack.push_back(0);
        mark[0] = 1;
        while (!stack.empty()) {
            uint32_t x = stack.back();
            stack.pop_back();
            for (uint32_t j = offsets[x]; j < offsets[x + 1]; ++j) {
                uint32_t t = targets[j];
                if (!mark[t]) {
                    mark[t] = 1;
                    stack.push_back(t);
                }
            }
        }
        benchmark::DoNotOptimize(mark.data());
    }
    state.counters["heap"] = double(n);
    state.counters["per_object"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate |
                                                                     benchmark::Counter::kInvert);
}

void incref_decref(benchmark::State &state, Api api) {
    void *op = api.new_object();
    while (state.KeepRunningBatch(kBatch)) api.incref_decref(op, kBatch);
    api.release_object(op);
    state.SetItemsProcessed(state.iterations());
}

std::vector<Api> registered;

// 1, 3, 10, 30, ... times `from`, up to `to`.
std::vector<long> sizes(long from, long to) {
    std::vector<long> out;
    for (long s = from; s <= to; s *= 10) {
        out.push_back(s);
        if (3 * s <= to) out.push_back(3 * s);
    }
    return out;
}

}  // namespace

void register_heap_benchmarks(const Config &config) {
    std::vector<Api> apis{CYCLEGC_BENCH_API("cyclegc", cgcloop)};
    if (cgcloop_setup() != 0) std::fprintf(stderr, "cyclegc_bench: PyType_Ready failed for cyclegc\n");
#ifdef CYCLEGC_BENCH_HAVE_CPYTHON
    if (config.cpython) {
        if (cpyloop_setup() == 0)
            apis.push_back(CYCLEGC_BENCH_API("cpython", cpyloop));
        else
            std::fprintf(stderr, "cyclegc_bench: the embedded CPython could not start; cyclegc only\n");
    }
#endif
    for (const Api &api : apis)
        benchmark::RegisterBenchmark(("acyclic_alloc_track_release/" + api.name).c_str(), acyclic, api);
    for (const Api &api : apis)
        benchmark::RegisterBenchmark(("cycle_loop/" + api.name).c_str(), cycle_loop, api, 0L);
    benchmark::RegisterBenchmark("acyclic_alloc_track_release/cyclegc/shared-heap-owner", acyclic_shared_heap, apis[0]);
    benchmark::RegisterBenchmark("cycle_loop/cyclegc/shared-heap-owner", cycle_loop_shared_heap, apis[0]);
    for (const Api &api : apis)
        benchmark::RegisterBenchmark(("cycle_loop_old_heap/" + api.name + "/old:" + std::to_string(config.old_heap)).c_str(),
                                     cycle_loop, api, config.old_heap);
    for (long old : sizes(10000, config.max_heap))
        for (const Api &api : apis)
            benchmark::RegisterBenchmark(("young_collect/" + api.name + "/old:" + std::to_string(old)).c_str(),
                                         young_collect, api, old)
                ->UseManualTime()
                ->Unit(benchmark::kMicrosecond);
    for (long n : sizes(1000, config.max_heap)) {
        for (const Api &api : apis)
            benchmark::RegisterBenchmark(("full_collect/" + api.name + "/heap:" + std::to_string(n)).c_str(),
                                         full_collect, api, n)
                ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("full_collect/floor/heap:" + std::to_string(n)).c_str(), full_collect_floor, n)
            ->Unit(benchmark::kMicrosecond);
    }
    for (const Api &api : apis)
        benchmark::RegisterBenchmark(("incref_decref/" + api.name).c_str(), incref_decref, api);
    registered = apis;
}

void release_cached_heaps() {
    for (const Api &api : registered) drop_heap(api);
}

}  // namespace cgcmicro
