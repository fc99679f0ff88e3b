// The floor pass and the memory probes.
#include "replay.hpp"
#include "timer.hpp"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
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
