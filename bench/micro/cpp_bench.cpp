// The C++ API against the standard library's shared_ptr.
#include <cyclegc/cyclegc.hpp>

#include <benchmark/benchmark.h>

#include <memory>

namespace {

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

struct SharedNode {
    std::shared_ptr<SharedNode> next;
};

// make + release: allocate, construct, (track,) destroy, free.
void cpp_make_release_cyclegc(benchmark::State &state) {
    for (auto _ : state) {
        cyclegc::ref<Node> r = cyclegc::make<Node>();
        benchmark::DoNotOptimize(r.get());
    }
    state.SetItemsProcessed(state.iterations());
}

void cpp_make_release_shared(benchmark::State &state) {
    for (auto _ : state) {
        std::shared_ptr<SharedNode> r = std::make_shared<SharedNode>();
        benchmark::DoNotOptimize(r.get());
    }
    state.SetItemsProcessed(state.iterations());
}

// Copy a reference and drop the copy: an increment and a decrement
// (atomic for shared_ptr in a program that has threads, as any program
// linking libpthread or glibc >= 2.34 does).
void cpp_copy_ref(benchmark::State &state) {
    cyclegc::ref<Node> r = cyclegc::make<Node>();
    for (auto _ : state) {
        cyclegc::ref<Node> copy = r;
        benchmark::DoNotOptimize(copy);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}

void cpp_copy_shared(benchmark::State &state) {
    std::shared_ptr<SharedNode> r = std::make_shared<SharedNode>();
    for (auto _ : state) {
        std::shared_ptr<SharedNode> copy = r;
        benchmark::DoNotOptimize(copy);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(cpp_make_release_cyclegc)->Name("cpp_make_release/cyclegc::make");
BENCHMARK(cpp_make_release_shared)->Name("cpp_make_release/std::make_shared");
BENCHMARK(cpp_copy_ref)->Name("cpp_copy/cyclegc::ref");
BENCHMARK(cpp_copy_shared)->Name("cpp_copy/std::shared_ptr");
