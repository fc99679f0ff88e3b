// Pauses: a large live heap under a mutator that keeps making garbage, run
// stop-the-world or with a pause budget (incremental full collections).
//
//     pauses [--mode tree|serve] [--heap N] [--allocations M] [--pause-budget NS]
//            (tree, 1000000, 20000000, 0 by default)
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
// Prints one line: CPU time, total collection time, the pause distribution
// (cgc_get_pause_stats, collections and slices alike), full collections,
// peak RSS; then each generation's collections, total and longest pause.
#include <cyclegc/cyclegc.hpp>

#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct node : cyclegc::object {
    cyclegc::ref<node> left, right, cross;
    uint64_t value = 0;
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
    cyclegc::reset_pause_stats();
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
    cyclegc::reset_pause_stats();
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
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--mode")) mode = argv[i + 1];
        else if (!std::strcmp(argv[i], "--heap")) heap = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--allocations")) allocations = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--pause-budget")) budget = std::strtoull(argv[i + 1], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: pauses [--mode tree|serve] [--heap N] [--allocations M] [--pause-budget NS]\n");
            return 2;
        }
    }
    if (heap < 1 || (mode != "tree" && mode != "serve")) {
        std::fprintf(stderr, "pauses: a heap of at least 1, mode tree or serve\n");
        return 2;
    }
    cyclegc::set_pause_budget(std::chrono::nanoseconds(budget));
    random_source random;
    double cpu_start = cpu_seconds();
    uint64_t before_gc = 0;
    for (int g = 0; g < 3; ++g) before_gc += cyclegc::get_stats(g).total_ns;
    uint64_t before_full = cyclegc::get_stats(2).collections + 1;  // (and the one after the setup)
    uint64_t checksum = mode == "tree" ? run_tree(heap, allocations, random) : run_serve(heap, allocations, random);
    double cpu = cpu_seconds() - cpu_start;
    uint64_t gc_ns = 0;
    for (int g = 0; g < 3; ++g) gc_ns += cyclegc::get_stats(g).total_ns;
    gc_ns -= before_gc;
    cyclegc::pause_stats pauses = cyclegc::get_pause_stats();
    std::printf("pauses mode=%s heap=%ld allocations=%ld budget_ns=%llu cpu_s=%.2f gc_s=%.3f pauses=%llu "
                "max_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f full=%llu peak_rss_mb=%.0f checksum=%llu\n",
                mode.c_str(), heap, allocations, static_cast<unsigned long long>(budget), cpu, double(gc_ns) / 1e9,
                static_cast<unsigned long long>(pauses.count), double(pauses.max_ns) / 1e6,
                double(pauses.p50_ns) / 1e6, double(pauses.p99_ns) / 1e6, double(pauses.p999_ns) / 1e6,
                static_cast<unsigned long long>(cyclegc::get_stats(2).collections - before_full),
                double(peak_rss_kb()) / 1024,
                static_cast<unsigned long long>(checksum));
    for (int g = 0; g < 3; ++g) {
        auto stats = cyclegc::get_stats(g);
        std::printf("  generation %d: %llu collections, %.3f s, longest %.3f ms\n", g,
                    static_cast<unsigned long long>(stats.collections), double(stats.total_ns) / 1e9,
                    double(stats.max_pause_ns) / 1e6);
    }
    return 0;
}
