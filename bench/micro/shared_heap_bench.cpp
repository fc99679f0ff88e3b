// Shared heaps (cgc_heap_new_shared): make + release on the thread of a
// shared heap against a confined heap's, the time from a stop's request to
// the world stopped with a second attached thread allocating, and a full
// collection's pause on a large shared heap (what parallel marking would
// have to shorten).
#include "micro.hpp"

#include <cyclegc/cyclegc.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <string>
#include <thread>

namespace {

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

void make_release_on(benchmark::State &state, cyclegc::heap &heap) {
    auto scope = heap.use();
    for (auto _ : state) {
        auto r = cyclegc::make<Node>();
        benchmark::DoNotOptimize(r.get());
    }
    state.SetItemsProcessed(state.iterations());
}

void make_release_confined(benchmark::State &state) {
    cyclegc::heap heap;
    make_release_on(state, heap);
}

void make_release_shared(benchmark::State &state) {
    auto heap = cyclegc::heap::shared();
    make_release_on(state, heap);
}

// Young collections of a small heap requested while a second attached
// thread allocates and drops objects (parking at its allocations): the
// counters are cgc_get_stop_stats' (request to stopped).
void time_to_stop(benchmark::State &state) {
    auto heap = cyclegc::heap::shared();
    auto scope = heap.use();
    std::atomic<bool> stop{false};
    std::atomic<long> made{0};
    std::thread other([&] {
        auto attached = heap.use();
        while (!stop.load(std::memory_order_relaxed)) {
            benchmark::DoNotOptimize(cyclegc::make<Node>().get());
            made.fetch_add(1, std::memory_order_relaxed);
        }
    });
    cgc_reset_pause_stats();
    for (auto _ : state) {
        // Each stop finds the other thread running, between two allocations.
        for (long seen = made.load(); made.load() < seen + 100;) std::this_thread::yield();
        cgc_collect(0);
    }
    cgc_pause_stats stops{};
    cgc_get_stop_stats(&stops);
    stop = true;
    {
        cyclegc::detached_scope detached;  // (the other thread may be collecting)
        other.join();
    }
    state.counters["stop_p50_us"] = static_cast<double>(stops.p50_ns) / 1e3;
    state.counters["stop_p99_us"] = static_cast<double>(stops.p99_ns) / 1e3;
    state.counters["stop_max_us"] = static_cast<double>(stops.max_ns) / 1e3;
}

// A full collection of a shared heap of `live` objects (a chain): its
// analysis is what marking in parallel on the stopped threads would share.
void full_collection_shared(benchmark::State &state, long live) {
    auto heap = cyclegc::heap::shared();
    auto scope = heap.use();
    cyclegc::ref<Node> head = cyclegc::make<Node>();
    Node *last = head.get();
    for (long i = 1; i < live; ++i) {
        last->next = cyclegc::make<Node>();
        last = last->next.get();
    }
    for (auto _ : state) benchmark::DoNotOptimize(cgc_collect(2));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * live);
    head = nullptr;
}

}  // namespace

namespace cgcmicro {

// (--max_heap=1e7 for the 10M-object heap of BENCHMARKS.md.)
void register_shared_heap_benchmarks(const Config &config) {
    benchmark::RegisterBenchmark(("shared_heap_full_collection/heap:" + std::to_string(config.max_heap)).c_str(),
                                 full_collection_shared, config.max_heap)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(3);
}

}  // namespace cgcmicro

BENCHMARK(make_release_confined)->Name("shared_heap_make_release/confined");
BENCHMARK(make_release_shared)->Name("shared_heap_make_release/shared");
BENCHMARK(time_to_stop)->Name("shared_heap_time_to_stop/2_threads")->UseRealTime();
