// The C++ API against the standard library's shared_ptr.
#include <cyclegc/cyclegc.hpp>

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace {

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

struct SharedNode {
    std::shared_ptr<SharedNode> next;
};

// A leaf: no references, so no trace member, never tracked.
struct Leaf : cyclegc::object {
    long value = 0;
};
struct SharedLeaf {
    long value = 0;
};

// make + release: allocate, construct, (track,) destroy, free. `make`
// returns the owning pointer (cyclegc::ref or std::shared_ptr).
template <class Make>
void make_release(benchmark::State &state, Make make) {
    for (auto _ : state) {
        auto r = make();
        benchmark::DoNotOptimize(r.get());
    }
    state.SetItemsProcessed(state.iterations());
}

void cpp_make_release_cyclegc(benchmark::State &state) { make_release(state, [] { return cyclegc::make<Node>(); }); }
void cpp_make_release_shared(benchmark::State &state) {
    make_release(state, [] { return std::make_shared<SharedNode>(); });
}
void cpp_make_release_leaf_cyclegc(benchmark::State &state) { make_release(state, [] { return cyclegc::make<Leaf>(); }); }
void cpp_make_release_leaf_shared(benchmark::State &state) {
    make_release(state, [] { return std::make_shared<SharedLeaf>(); });
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

// The same on a shared heap, on the thread that owns the objects (biased
// counting's owner path: plain stores of the local count).
// (Made for one benchmark and deleted at its end, after the scopes and
// references declared below it.)
struct SharedHeap {
    cgc_heap *heap = cgc_heap_new_shared();
    ~SharedHeap() { cgc_heap_delete(heap); }
};

void cpp_make_release_cyclegc_shared_heap(benchmark::State &state) {
    SharedHeap shared;
    cyclegc::heap::scope on(shared.heap);
    make_release(state, [] { return cyclegc::make<Node>(); });
}

void cpp_copy_ref_shared_heap_owner(benchmark::State &state) {
    SharedHeap shared;
    cyclegc::heap::scope on(shared.heap);
    cpp_copy_ref(state);
}

// A thread that does not own the object (its owner is alive, waiting):
// every copy and release counts atomically in the shared count, as
// shared_ptr's do.
void cpp_copy_ref_shared_heap_other(benchmark::State &state) {
    SharedHeap shared;
    cyclegc::heap::scope on(shared.heap);
    cyclegc::ref<Node> r;
    std::atomic<int> stage{0};
    std::thread owner([&] {
        cyclegc::heap::scope owner_on(shared.heap);
        r = cyclegc::make<Node>();
        stage = 1;
        while (stage.load() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (stage.load() != 1) std::this_thread::yield();
    for (auto _ : state) {
        cyclegc::ref<Node> copy = r;
        benchmark::DoNotOptimize(copy);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations());
    stage = 2;
    owner.join();
}

}  // namespace

BENCHMARK(cpp_make_release_cyclegc_shared_heap)->Name("cpp_make_release/cyclegc::make/shared-heap-owner");
BENCHMARK(cpp_copy_ref_shared_heap_owner)->Name("cpp_copy/cyclegc::ref/shared-heap-owner");
BENCHMARK(cpp_copy_ref_shared_heap_other)->Name("cpp_copy/cyclegc::ref/shared-heap-other-thread");
BENCHMARK(cpp_make_release_cyclegc)->Name("cpp_make_release/cyclegc::make");
BENCHMARK(cpp_make_release_shared)->Name("cpp_make_release/std::make_shared");
BENCHMARK(cpp_make_release_leaf_cyclegc)->Name("cpp_make_release_leaf/cyclegc::make");
BENCHMARK(cpp_make_release_leaf_shared)->Name("cpp_make_release_leaf/std::make_shared");
BENCHMARK(cpp_copy_ref)->Name("cpp_copy/cyclegc::ref");
BENCHMARK(cpp_copy_shared)->Name("cpp_copy/std::shared_ptr");
