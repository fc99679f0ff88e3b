// Medium-lived cycles: each iteration makes a pair of objects that refer to
// each other and keeps it LIFETIME iterations in a ring buffer, then drops
// it; beside it lives a tree of HEAP objects, made first and walked last.
// Reports the loop's CPU time per iteration (ns_per_iter).
//
//     medium_cycles VARIANT [ITERATIONS] [HEAP] [LIFETIME]
//                           (10000000, 10000000, 10000 by default)
//
// The pair is what each variant's user writes: two strong refs with
// cyclegc (a garbage cycle once dropped), an owning shared_ptr and a
// weak_ptr back, an owning unique_ptr and a raw pointer back (the floor),
// or two raw pointers into Boehm's heap. Checksum: the pairs' values read
// as they leave the ring, and the tree's node count.
#include "trees.hpp"

#include <vector>

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
#include <gc/gc_allocator.h>
#endif

namespace {

using namespace programs;

struct cyclegc_cycles : cyclegc_trees<> {
    struct pair_node : cyclegc::object {
        cyclegc::ref<pair_node> partner;
        uint64_t value;
        explicit pair_node(uint64_t v) : value(v) {}
        void trace(cyclegc::tracer &t) { t(partner); }
    };
    using handle = cyclegc::ref<pair_node>;
    using ring = std::vector<handle>;
    static handle make_pair(uint64_t i) {
        auto a = cyclegc::make<pair_node>(i);
        auto b = cyclegc::make<pair_node>(i + 1);
        b->partner = a;
        a->partner = std::move(b);
        return a;
    }
};

template <bool Shared>
struct std_cycles : std_trees<Shared> {
    struct pair_node;
    using handle = std::conditional_t<Shared, std::shared_ptr<pair_node>, std::unique_ptr<pair_node>>;
    using back = std::conditional_t<Shared, std::weak_ptr<pair_node>, pair_node *>;
    struct pair_node {
        handle partner;
        back owner{};
        uint64_t value;
        explicit pair_node(uint64_t v) : value(v) {}
    };
    using ring = std::vector<handle>;
    static handle make_pair(uint64_t i) {
        if constexpr (Shared) {
            auto a = std::make_shared<pair_node>(i);
            auto b = std::make_shared<pair_node>(i + 1);
            b->owner = a;
            a->partner = std::move(b);
            return a;
        } else {
            auto a = std::make_unique<pair_node>(i);
            auto b = std::make_unique<pair_node>(i + 1);
            b->owner = a.get();
            a->partner = std::move(b);
            return a;
        }
    }
};

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
struct boehm_cycles : boehm_trees<> {
    struct pair_node {
        pair_node *partner;
        uint64_t value;
    };
    using handle = pair_node *;
    using ring = std::vector<handle, gc_allocator<handle>>;  // scanned by the collector
    static handle make_pair(uint64_t i) {
        auto *a = collector::make<pair_node>(nullptr, i);
        auto *b = collector::make<pair_node>(a, i + 1);
        a->partner = b;
        return a;
    }
};
#endif

struct medium_cycles {
    static constexpr const char *name = "medium-cycles";

    static double cpu_ns() {
        timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
    }

    template <class P>
    static void run(int argc, char **argv, program_result &r) {
        const long iterations = program_arg(argc, argv, 2, 10000000);
        const long heap_size = program_arg(argc, argv, 3, 10000000);
        const long lifetime = program_arg(argc, argv, 4, 10000);
        auto heap = balanced<P>(heap_size);
        typename P::ring ring(static_cast<size_t>(lifetime));
        double start = cpu_ns();
        for (long i = 0; i < iterations; ++i) {
            auto &slot = ring[size_t(i % lifetime)];
            if (slot) r.checksum += slot->value + slot->partner->value;
            slot = P::make_pair(uint64_t(i));
        }
        r.ns_per_iter = (cpu_ns() - start) / double(iterations);
        r.checksum += check(*heap);
    }
};

}  // namespace

int main(int argc, char **argv) {
    return programs::main<medium_cycles, cyclegc_cycles, std_cycles<true>, std_cycles<false>
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , boehm_cycles
#endif
                          >(argc, argv);
}
