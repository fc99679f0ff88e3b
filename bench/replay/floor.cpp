// The floor pass, the aged heap's plan and the memory probes.
#include "replay.hpp"
#include "timer.hpp"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <numeric>
#include <vector>

namespace cgcbench {

// One mark from the roots with an explicit stack, over plain arrays: the
// CSR offsets and targets (4 bytes per node and per edge) and one mark byte
// per node. Any collector that finds the live nodes does at least this.
FloorResult floor_pass(const Graph &g, const std::vector<uint32_t> &edge_targets) {
    std::vector<uint32_t> stack;
    stack.reserve(1024);
    Timer timer;
    std::vector<uint8_t> mark(g.nodes, 0);
    const uint32_t *offsets = g.offsets.data();
    const uint32_t *targets = edge_targets.data();
    uint64_t marked = 0;
    for (uint32_t i = 0; i < g.nodes; ++i) {
        if (g.external[i] == 0 || mark[i]) continue;
        mark[i] = 1;
        ++marked;
        stack.push_back(i);
        while (!stack.empty()) {
            uint32_t x = stack.back();
            stack.pop_back();
            for (uint32_t j = offsets[x], end = offsets[x + 1]; j < end; ++j) {
                uint32_t t = targets[j];
                if (!mark[t]) {
                    mark[t] = 1;
                    ++marked;
                    stack.push_back(t);
                }
            }
        }
    }
    FloorResult r;
    r.ns = timer.ns();
    r.marked = marked;
    return r;
}

namespace {

// 0 .. n-1 in a seeded random order (Fisher-Yates).
std::vector<uint32_t> shuffled(uint32_t n, uint64_t seed) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    Rng rng(seed);
    for (uint32_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    return order;
}

}  // namespace

Aging make_aging(const Graph &g, uint64_t seed) {
    Aging a;
    if (g.nodes == 0) return a;
    a.freed_before_build = shuffled(2 * g.nodes, seed);
    a.freed_before_build.resize(g.nodes);
    return a;
}

bool Fillers::make(const Graph &g, const Aging &aging, size_t header) {
    if (!aging.on()) return true;
    memory_.assign(size_t(2) * g.nodes, nullptr);
    for (size_t f = 0; f < memory_.size(); ++f) {
        size_t size = header + sizeof(void *) * g.degree(static_cast<uint32_t>(f / 2));
        if (!(memory_[f] = allocate_(size))) return false;
    }
    for (uint32_t f : aging.freed_before_build) {
        free_(memory_[f]);
        memory_[f] = nullptr;
    }
    return true;
}

Fillers::~Fillers() {
    for (void *p : memory_)
        if (p) free_(p);
}

Graph renumbered(const Graph &g, const std::vector<uint32_t> &targets, uint64_t seed) {
    std::vector<uint32_t> old_of = shuffled(g.nodes, seed);  // new id -> old id
    std::vector<uint32_t> new_of(g.nodes);
    for (uint32_t id = 0; id < g.nodes; ++id) new_of[old_of[id]] = id;
    Graph r;
    r.name = g.name;
    r.nodes = g.nodes;
    r.offsets.reserve(g.nodes + 1);
    r.targets.reserve(targets.size());
    r.external.reserve(g.nodes);
    r.offsets.push_back(0);
    for (uint32_t id = 0; id < g.nodes; ++id) {
        uint32_t old = old_of[id];
        for (uint32_t j = g.offsets[old]; j < g.offsets[old + 1]; ++j) r.targets.push_back(new_of[targets[j]]);
        r.offsets.push_back(static_cast<uint32_t>(r.targets.size()));
        r.external.push_back(g.external[old]);
    }
    return r;
}

double rss_bytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, resident = 0;
    int got = std::fscanf(f, "%lu %lu", &size, &resident);
    std::fclose(f);
    return got == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) : 0;
}

double malloc_in_use() {
    struct mallinfo2 info = mallinfo2();
    return double(info.uordblks) + double(info.hblkhd);
}

void release_free_memory() { malloc_trim(0); }

}  // namespace cgcbench
