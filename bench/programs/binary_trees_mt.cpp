// binary-trees, the Computer Language Benchmarks Game program in its
// multi-threaded form: the stretch tree and the long-lived tree built by the
// main thread, then each depth's iterations split across worker threads,
// each building, checking and dropping its own trees.
//
//     binary_trees_mt VARIANT [DEPTH] [THREADS]    (DEPTH: 18, THREADS: 2)
//
// Its output is binary_trees' (the same lines in the same order, so the
// same checksum). Every worker holds a copy of the long-lived tree (a count
// taken and dropped on a thread that did not make it) and checks it at its
// end: its objects are read by threads other than their maker. The main
// thread waits for the workers, who do all the iterations whatever THREADS
// is, so 1 and 2 threads compare alone. Throughput: trees made per wall
// second, the whole program's.
//
// Variants: cyclegc on one shared heap that every thread is attached to
// (a worker's check calls cyclegc::safepoint() every 1,024 nodes, as
// docs/cpp.md asks of a loop that allocates nothing),
// shared_ptr (atomic counts, threads running), unique_ptr (the floor; the
// workers read the long-lived tree by reference), boehm (threads registered).
#define GC_THREADS 1  // Boehm's thread support, before <gc.h>
#include "trees.hpp"

#include <cstdlib>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace programs;

// What a thread does around the workers, per collector: `worker` is held by
// each worker thread for its life, `waiting` by the main thread while it
// joins them.
struct plain_threads : no_collector {
    struct worker {};
    struct waiting {};
};

// One shared heap, current on the main thread from init() on; each worker
// attaches to it, and the main thread detaches while it waits (so that a
// collection on a worker need not wait for it).
struct shared_heap_threads : cyclegc_collector {
    static cyclegc::heap &heap() {
        static cyclegc::heap shared = cyclegc::heap::shared();
        return shared;
    }
    static void init() { static const cyclegc::heap::scope current(heap().get()); }
    // Also the stops (request to every other thread parked) on stderr.
    static void report(program_result &r) {
        cyclegc_collector::report(r);
        cgc_pause_stats stops{};
        cgc_get_stop_stats(&stops);
        std::fprintf(stderr, "stops: %llu (%llu found no collection due), p50 %.1f us, p99 %.1f us, longest %.1f us, "
                     "total %.3f s\n", (unsigned long long)stops.count, (unsigned long long)stops.not_due,
                     double(stops.p50_ns) * 1e-3, double(stops.p99_ns) * 1e-3, double(stops.max_ns) * 1e-3,
                     double(stops.total_ns) * 1e-9);
    }
    // A worker's walks call it: a walk of a deep tree allocates nothing.
    static void poll() { cyclegc::safepoint(); }
    struct worker {
        cyclegc::heap::scope attached{heap().get()};
    };
    struct waiting {
        cyclegc::detached_scope detached;
    };
};

template <class Trees, class Threads>
struct threaded : Trees {
    using collector = Threads;
};

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
// Boehm scans the stacks of the threads registered with it.
struct boehm_threads : boehm_collector {
    static void init() {
        boehm_collector::init();
        GC_allow_register_threads();
    }
    struct worker {
        worker() {
            GC_stack_base base;
            GC_get_stack_base(&base);
            GC_register_my_thread(&base);
        }
        worker(const worker &) = delete;
        worker &operator=(const worker &) = delete;
        ~worker() { GC_unregister_my_thread(); }
    };
    struct waiting {};
};
#endif

// The depths of the iterations: min_depth, min_depth + 2, ..., max_depth.
struct depths {
    static constexpr int min = 4;
    int max;
    int count() const { return (max - min) / 2 + 1; }
    int at(int index) const { return min + 2 * index; }
    long iterations(int index) const { return 1L << (max - at(index) + min); }
};

// One worker's part: of each depth's iterations, those from
// iterations * index / threads on; its sums per depth, and its check of the
// long-lived tree.
template <class P>
struct worker_part {
    std::vector<long> sums;
    long lived = 0;

    void run(depths d, int index, int threads, const typename P::tree &long_lived) {
        typename P::collector::worker attached;
        // A copy of the tree where the variant can copy it (a count taken
        // on this thread); unique_ptr's workers read it through the reference.
        const auto &mine = held_copy(long_lived);
        for (int k = 0; k < d.count(); ++k) {
            long first = d.iterations(k) * index / threads, end = d.iterations(k) * (index + 1) / threads, sum = 0;
            for (long i = first; i < end; ++i) sum += walk(*bottom_up<P>(d.at(k)));
            sums.push_back(sum);
        }
        lived = walk(*mine);
    }

  private:
    using tree = typename P::tree;
    // check, with the collector's safepoints where it has them.
    template <class Node>
    static long walk(const Node &n) {
        if constexpr (requires { P::collector::poll(); }) {
            unsigned steps = 0;
            return check(n, [] { P::collector::poll(); }, steps);
        } else {
            return check(n);
        }
    }
    static decltype(auto) held_copy(const tree &t) {
        if constexpr (std::is_copy_constructible_v<tree>)
            return tree(t);
        else
            return (t);
    }
};

struct binary_trees_mt {
    static constexpr const char *name = "binary-trees-mt";

    template <class P>
    static void run(int argc, char **argv, program_result &r) {
        const depths d{std::max(depths::min + 2, int(program_arg(argc, argv, 2, 18)))};
        const int threads = int(program_arg(argc, argv, 3, 2));
        r.program = program_name(threads);
        const int stretch_depth = d.max + 1;
        long stretch = check(*bottom_up<P>(stretch_depth));
        std::printf("stretch tree of depth %d\t check: %ld\n", stretch_depth, stretch);
        r.checksum += stretch;

        auto long_lived = bottom_up<P>(d.max);
        std::vector<worker_part<P>> parts(threads);
        run_workers<P>(d, parts, long_lived);
        double trees = 2;
        for (int k = 0; k < d.count(); ++k) {
            long sum = 0;
            for (auto &part : parts) sum += part.sums[k];
            std::printf("%ld\t trees of depth %d\t check: %ld\n", d.iterations(k), d.at(k), sum);
            r.checksum += sum;
            trees += double(d.iterations(k));
        }
        long lived = check(*long_lived);
        for (auto &part : parts) check_agrees(part.lived, lived);
        std::printf("long lived tree of depth %d\t check: %ld\n", d.max, lived);
        r.checksum += lived;
        r.throughput = trees / ((program_now_ns() - *program_wall_origin()) * 1e-9);
    }

  private:
    template <class P>
    static void run_workers(depths d, std::vector<worker_part<P>> &parts, const typename P::tree &long_lived) {
        std::vector<std::thread> workers;
        const int threads = int(parts.size());
        for (int t = 0; t < threads; ++t)
            workers.emplace_back([&, t] { parts[size_t(t)].run(d, t, threads, long_lived); });
        typename P::collector::waiting waiting;
        for (auto &w : workers) w.join();
    }

    // "binary-trees-mt-N": each thread count is a program of its own in
    // run.sh's table (programs.list names it so).
    static const char *program_name(int threads) {
        static char name[48];
        std::snprintf(name, sizeof name, "%s-%d", binary_trees_mt::name, threads);
        return name;
    }

    static void check_agrees(long worker_lived, long lived) {
        if (worker_lived == lived) return;
        std::fprintf(stderr, "binary-trees-mt: a worker checked the long-lived tree as %ld, the main thread as %ld\n",
                     worker_lived, lived);
        std::exit(1);
    }
};

}  // namespace

int main(int argc, char **argv) {
    return programs::main<binary_trees_mt, threaded<cyclegc_trees<>, shared_heap_threads>,
                          threaded<std_trees<true>, plain_threads>, threaded<std_trees<false>, plain_threads>
#ifdef CYCLEGC_BENCH_HAVE_BOEHM
                          , threaded<boehm_trees<>, boehm_threads>
#endif
                          >(argc, argv);
}
