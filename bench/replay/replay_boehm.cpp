// The Boehm-Demers-Weiser replay (libgc-dev): a tracing, conservative,
// non-moving collector, for scale. Nodes are GC_MALLOC'd arrays of
// pointers; the roots are held in an uncollectable array. Boehm has no
// reference counts, so there is no "acyclic garbage at build" and no churn
// step: it is built, fully collected twice (the graph's garbage, then a pure
// full mark with every root held), and collected again after the roots are
// dropped. One marker thread, for a per-node comparison with single-threaded
// collectors.
#include "replay.hpp"
#include "timer.hpp"

#ifdef CYCLEGC_BENCH_HAVE_BOEHM
#define GC_THREADS 1  // Debian's libgc is the threaded build
#include <gc.h>
#endif

namespace cgcbench {

#ifdef CYCLEGC_BENCH_HAVE_BOEHM

namespace {

struct Node {
    size_t count;
    Node *items[];
};

void initialise() {
    static bool done = [] {
        GC_set_markers_count(1);
        GC_INIT();
        return true;
    }();
    (void)done;
}

}  // namespace

bool boehm_available() { return true; }

ReplayResult replay_boehm(const Graph &g, const Model &m) {
    initialise();
    ReplayResult r;
    r.ran = true;
    GC_gcollect();
    size_t heap0 = GC_get_heap_size() - GC_get_free_bytes();
    release_free_memory();
    double rss0 = rss_bytes();
    GC_disable();
    // Node pointers live in collector-visible memory until they are linked.
    auto **nodes = static_cast<Node **>(GC_MALLOC_UNCOLLECTABLE(sizeof(Node *) * (g.nodes ? g.nodes : 1)));
    auto **roots = static_cast<Node **>(GC_MALLOC_UNCOLLECTABLE(sizeof(Node *) * (m.roots ? m.roots : 1)));
    Timer build_timer;
    for (uint32_t i = 0; i < g.nodes; ++i) {
        uint32_t k = g.degree(i);
        auto *node = static_cast<Node *>(GC_MALLOC(sizeof(Node) + sizeof(Node *) * k));
        if (!node) {
            r.error = "boehm: out of memory";
            GC_enable();
            return r;
        }
        node->count = k;
        nodes[i] = node;
    }
    for (uint32_t i = 0; i < g.nodes; ++i) {
        Node *node = nodes[i];
        for (uint32_t j = g.offsets[i], slot = 0; j < g.offsets[i + 1]; ++j, ++slot) node->items[slot] = nodes[g.targets[j]];
    }
    for (uint32_t i = 0, n = 0; i < g.nodes; ++i)
        if (g.external[i] > 0) roots[n++] = nodes[i];
    r.build.ns = build_timer.ns();
    r.rss_bytes = (rss_bytes() - rss0) / g.nodes;
    r.heap_bytes = double(GC_get_heap_size() - GC_get_free_bytes() - heap0) / g.nodes;
    GC_FREE(nodes);
    GC_enable();
    Timer t1;
    GC_gcollect();
    r.collect_garbage.ns = t1.ns();
    Timer t2;
    GC_gcollect();
    r.collect_live.ns = t2.ns();
    Timer t3;
    GC_FREE(roots);
    r.drop.ns = t3.ns();
    Timer t4;
    GC_gcollect();
    r.drop_collect.ns = t4.ns();
    return r;
}

#else

bool boehm_available() { return false; }
ReplayResult replay_boehm(const Graph &, const Model &) { return {}; }

#endif

}  // namespace cgcbench
