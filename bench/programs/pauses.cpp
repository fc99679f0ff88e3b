// Pauses: a large live heap under a mutator that keeps making garbage, run
// stop-the-world or with a pause budget (incremental full collections).
//
//     pauses [--mode tree|serve] [--heap N] [--allocations M] [--pause-budget NS]
//            [--pause-log FILE]   (tree, 1000000, 20000000, 0, none by default)
//
// tree: a live binary tree of N nodes, each with a cross edge to another
// node; the loop makes short-lived pairs (garbage at once) and medium-lived
// ones (kept in a ring of 10000, so that some die old), and rewrites the
// cross edges of 1% of the tree's nodes per million allocations.
// serve: a serving loop; each request builds a ring of 100 objects, each
// referring into a cache that grows by one object per request, then drops
// the ring (the shape whose memory grew under CPython 3.14's incremental
// collector). N is the cache's starting size.
//
// Prints one line: CPU time and total collection time (the setup included,
// then the loop alone), the pause distribution (cgc_get_pause_stats,
// collections and slices alike), the loop's full collections (or cycles),
// peak RSS, and per incremental cycle the heap's growth: the most objects
// during the cycle, and the objects allocated during it, over those at its
// start (the largest of the loop's cycles, then of the setup's;
// cgc_set_pause_observer tells when a cycle starts and ends); then each
// generation's collections, total and longest pause. --pause-log writes
// every pause to FILE, one line each: "end_s ms kind" (end on the pause
// clock from the loop's start; kind young, full, slice or last_slice), for
// plot_pauses.sh.
#include <cyclegc/cyclegc.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

// The heap's objects (all nodes): how many exist, the most since `peak`
// was last reset, and how many were ever made.
struct node_counts {
    long live = 0, peak = 0, made = 0;
} counts;

struct node : cyclegc::object {
    cyclegc::ref<node> left, right, cross;
    uint64_t value = 0;
    node() {
        ++counts.made;
        if (++counts.live > counts.peak) counts.peak = counts.live;
    }
    ~node() { --counts.live; }
    node(const node &) = delete;
    node &operator=(const node &) = delete;
    void trace(cyclegc::tracer &t) { t(left, right, cross); }
};
using handle = cyclegc::ref<node>;

// A small deterministic generator (xorshift64*).
struct random_source {
    uint64_t state = 0x9E3779B97F4A7C15ull;
    uint64_t next() {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        return state * 0x2545F4914F6CDD1Dull;
    }
    size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// Time in collections so far, every generation.
uint64_t collection_ns() {
    uint64_t ns = 0;
    for (int g = 0; g < 3; ++g) ns += cyclegc::get_stats(g).total_ns;
    return ns;
}

// The pauses, observed (cgc_set_pause_observer): each cycle's growth, and
// (with --pause-log) every pause, kept in memory until the end.
struct pause_record {
    uint64_t end_ns, ns;
    cgc_pause_kind kind;
};
struct pause_watch {
    bool thread_clock = false;  // (the pause clock: CYCLEGC_PAUSE_CLOCK)
    bool logging = false;
    uint64_t origin_ns = 0;
    std::vector<pause_record> log;
    bool in_cycle = false;
    long cycle_start_live = 0, cycle_start_made = 0;
    // The cycles while the heap is built (all it allocates lives), then in
    // the loop: how many, the largest growth and allocations of a cycle over
    // the heap at its start.
    struct cycles_seen {
        long count = 0;
        double most_growth = 0, most_allocated = 0;
    } setup, loop;
    cycles_seen *cycles = &setup;
    uint64_t full_at_start = 0;  // (gen-2 collections before the loop)
    double cpu_at_start = 0;
    uint64_t collection_ns_at_start = 0;

    uint64_t now_ns() const {
        timespec now;
        clock_gettime(thread_clock ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &now);
        return uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
    }
    // From the measured loop's start on.
    void start() {
        cyclegc::reset_pause_stats();
        log.clear();
        origin_ns = now_ns();
        cycles = &loop;  // (the setup's collect() ended its cycle)
        full_at_start = cyclegc::get_stats(2).collections;
        cpu_at_start = cpu_seconds();
        collection_ns_at_start = collection_ns();
    }
    void observe(cgc_pause_kind kind, uint64_t ns) {
        if (logging) log.push_back({now_ns() - origin_ns, ns, kind});
        bool slice = kind == CGC_PAUSE_SLICE || kind == CGC_PAUSE_LAST_SLICE;
        if (slice && !in_cycle) {
            // (The first slice frees nothing: the heap is as the cycle found it.)
            in_cycle = true;
            cycle_start_live = counts.live;
            cycle_start_made = counts.made;
            counts.peak = counts.live;
        }
        if (kind == CGC_PAUSE_LAST_SLICE || kind == CGC_PAUSE_FULL) {
            if (in_cycle && cycle_start_live > 0) {
                auto start = double(cycle_start_live);
                cycles->most_growth = std::max(cycles->most_growth, double(counts.peak) / start - 1);
                cycles->most_allocated =
                    std::max(cycles->most_allocated, double(counts.made - cycle_start_made) / start);
                ++cycles->count;
            }
            in_cycle = false;
        }
    }
    static void observer(cgc_pause_kind kind, uint64_t ns, void *context) {
        static_cast<pause_watch *>(context)->observe(kind, ns);
    }
    void write(const std::string &path) const {
        static const char *const kinds[] = {"young", "full", "slice", "last_slice"};
        FILE *out = std::fopen(path.c_str(), "w");
        if (!out) {
            std::perror(path.c_str());
            return;
        }
        for (const pause_record &p : log)
            std::fprintf(out, "%.6f %.6f %s\n", double(p.end_ns) / 1e9, double(p.ns) / 1e6, kinds[p.kind]);
        std::fclose(out);
    }
} watch;

long peak_rss_kb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

// A complete binary tree of n nodes, breadth first; `all` lists them.
handle build_tree(long n, std::vector<node *> &all) {
    std::vector<handle> nodes(static_cast<size_t>(n));
    for (auto &h : nodes) {
        h = cyclegc::make<node>();
        all.push_back(h.get());
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (2 * i + 1 < nodes.size()) nodes[i]->left = nodes[2 * i + 1];
        if (2 * i + 2 < nodes.size()) nodes[i]->right = nodes[2 * i + 2];
    }
    return nodes.empty() ? nullptr : nodes[0];
}

// A pair of nodes that refer to each other.
handle make_pair(uint64_t value) {
    handle a = cyclegc::make<node>();
    handle b = cyclegc::make<node>();
    a->value = value;
    b->left = a;
    a->left = std::move(b);
    return a;
}

uint64_t run_tree(long heap, long allocations, random_source &random) {
    std::vector<node *> all;
    handle root = build_tree(heap, all);
    cyclegc::collect();
    watch.start();
    std::vector<handle> ring(10000);
    const long rewrites = heap / 100;  // per million allocations
    uint64_t checksum = 0;
    for (long made = 0, i = 0; made < allocations; ++i) {
        checksum += make_pair(uint64_t(i))->value;  // garbage at once
        made += 2;
        if (i % 4 == 0) {
            handle &slot = ring[random.below(ring.size())];
            if (slot) checksum += slot->value;
            slot = make_pair(uint64_t(i));
            made += 2;
        }
        if (i % 100'000 == 0)
            for (long k = 0; k < rewrites / 5; ++k)  // (one fifth every 100,000 iterations of about 5 allocations)
                all[random.below(all.size())]->cross = handle::borrow(all[random.below(all.size())]);
    }
    return checksum + (root ? 1 : 0);
}

uint64_t run_serve(long cache_start, long allocations, random_source &random) {
    std::vector<handle> cache;
    for (long i = 0; i < cache_start; ++i) cache.push_back(cyclegc::make<node>());
    cyclegc::collect();
    watch.start();
    uint64_t checksum = 0;
    constexpr int kRequestObjects = 100;
    for (long made = 0, request = 0; made < allocations; ++request) {
        handle first = cyclegc::make<node>();
        handle last = first;
        for (int k = 1; k < kRequestObjects; ++k) {
            handle next = cyclegc::make<node>();
            next->cross = cache[random.below(cache.size())];
            next->value = uint64_t(k);
            last->left = next;
            last = std::move(next);
        }
        last->left = first;  // the request's objects form a cycle
        for (handle h = first->left; h.get() != first.get(); h = h->left) checksum += h->value;
        cache.push_back(cyclegc::make<node>());  // the cache grows
        made += kRequestObjects + 1;
    }
    return checksum + cache.size();
}

}  // namespace

int main(int argc, char **argv) {
    std::string mode = "tree";
    long heap = 1'000'000, allocations = 20'000'000;
    uint64_t budget = 0;
    std::string log_path;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!std::strcmp(argv[i], "--heap")) heap = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--allocations")) allocations = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--pause-budget")) budget = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!std::strcmp(argv[i], "--pause-log")) log_path = argv[i + 1];
        else {
            std::fprintf(stderr, "usage: pauses [--mode tree|serve] [--heap N] [--allocations M] [--pause-budget NS] "
                                 "[--pause-log FILE]\n");
            return 2;
        }
    }
    if (heap < 1 || (mode != "tree" && mode != "serve")) {
        std::fprintf(stderr, "pauses: a heap of at least 1, mode tree or serve\n");
        return 2;
    }
    cyclegc::set_pause_budget(std::chrono::nanoseconds(budget));
    const char *clock = std::getenv("CYCLEGC_PAUSE_CLOCK");
    watch.thread_clock = clock && !std::strcmp(clock, "thread");
    watch.logging = !log_path.empty();
    if (watch.logging) watch.log.reserve(1 << 16);
    cgc_set_pause_observer(pause_watch::observer, &watch);
    random_source random;
    double cpu_start = cpu_seconds();
    uint64_t before_gc = collection_ns();
    uint64_t checksum = mode == "tree" ? run_tree(heap, allocations, random) : run_serve(heap, allocations, random);
    double cpu = cpu_seconds() - cpu_start;
    uint64_t gc_ns = collection_ns() - before_gc;
    double loop_cpu = cpu_seconds() - watch.cpu_at_start;
    uint64_t loop_gc_ns = collection_ns() - watch.collection_ns_at_start;
    cyclegc::pause_stats pauses = cyclegc::get_pause_stats();
    std::printf("pauses mode=%s heap=%ld allocations=%ld budget_ns=%llu cpu_s=%.2f gc_s=%.3f loop_cpu_s=%.2f "
                "loop_gc_s=%.3f pauses=%llu max_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f full=%llu "
                "peak_rss_mb=%.0f cycles=%ld "
                "cycle_growth_max=%.3f cycle_allocated_max=%.3f setup_cycles=%ld setup_growth_max=%.3f "
                "setup_allocated_max=%.3f checksum=%llu\n",
                mode.c_str(), heap, allocations, static_cast<unsigned long long>(budget), cpu, double(gc_ns) / 1e9,
                loop_cpu, double(loop_gc_ns) / 1e9,
                static_cast<unsigned long long>(pauses.count), double(pauses.max_ns) / 1e6,
                double(pauses.p50_ns) / 1e6, double(pauses.p99_ns) / 1e6, double(pauses.p999_ns) / 1e6,
                static_cast<unsigned long long>(cyclegc::get_stats(2).collections - watch.full_at_start),
                double(peak_rss_kb()) / 1024, watch.loop.count, watch.loop.most_growth,
                watch.loop.most_allocated, watch.setup.count, watch.setup.most_growth, watch.setup.most_allocated,
                static_cast<unsigned long long>(checksum));
    cgc_set_pause_observer(nullptr, nullptr);
    if (watch.logging) watch.write(log_path);
    for (int g = 0; g < 3; ++g) {
        auto stats = cyclegc::get_stats(g);
        std::printf("  generation %d: %llu collections, %.3f s, longest %.3f ms\n", g,
                    static_cast<unsigned long long>(stats.collections), double(stats.total_ns) / 1e9,
                    double(stats.max_pause_ns) / 1e6);
    }
    return 0;
}
