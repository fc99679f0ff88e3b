// The replays of a heap graph: cyclegc (native C API), CPython (embedded),
// Boehm (if built with it) and the floor pass. Each lives in its own
// translation unit, so that cyclegc's and CPython's Py* names never meet.
#ifndef CYCLEGC_BENCH_REPLAY_HPP
#define CYCLEGC_BENCH_REPLAY_HPP

#include "graph.hpp"

#include <cstdint>
#include <string>

namespace cgcbench {

// One step of a replay: its wall time and the objects freed during it.
struct Step {
    double ns = 0;
    uint64_t freed = 0;
    int64_t collected = -1;  // what the collection call returned (-1: not a collection)
    double longest_pause_ns = -1;  // --pause-budget: the collection's longest slice
    uint64_t pauses = 0;           // and its slices
};

struct ReplayResult {
    bool ran = false;
    std::string error;  // non-empty: the replay failed or a count was wrong
    Step build;          // allocate + track every node, set its references, hold the roots, drop the rest
    Step collect_garbage;// full collection #1: the graph's own cyclic garbage
    Step collect_live;   // full collection #2 with every root held: nothing to free
    Step churn;          // rewrite 10% of the live edges (incref new, decref old)
    Step churn_collect;  // full collection #3
    Step drop;           // drop every root reference
    Step drop_collect;   // full collection #4: the rest
    double rss_bytes = -1;     // process RSS growth while the nodes were built (/proc/self/statm)
    double malloc_bytes = -1;  // malloc'd bytes in use growth (mallinfo2), -1 if not meaningful
    double heap_bytes = -1;    // the collector's own heap growth (Boehm: GC_get_heap_size)
    using Collections = Step ReplayResult::*;  // (one of the four full collections)
};

// --aged: the heap of a program that has run a while, where the objects a
// collector lists lie scattered in memory. Before the build (untimed), each
// replay allocates two fillers of each node's size, in the graph's order,
// with its runtime's own allocator (the size class the node will take), and
// frees `freed_before_build` of them in that order: a seeded random half.
// The nodes then land in those holes, in an order unrelated to the order
// they are made, which is CPython's list order (gc.get_objects()). The
// other half stays allocated, as a real heap's untracked objects (strings,
// numbers) do, until the replay has freed every node. Both replays get the
// same plan. Empty: a fresh heap (the default).
struct Aging {
    std::vector<uint32_t> freed_before_build;  // filler ids: 2i and 2i+1 are node i's size
    bool on() const { return !freed_before_build.empty(); }
};
Aging make_aging(const Graph &graph, uint64_t seed = 7);

// A replay's fillers (Aging), made with its runtime's allocator: node i's
// two are `header` + one pointer per reference bytes, the size the runtime
// asks for the node. Those the plan keeps are freed with the object.
class Fillers {
  public:
    using Allocate = void *(*)(size_t);
    using Free = void (*)(void *);
    Fillers(Allocate allocate, Free free) : allocate_(allocate), free_(free) {}
    Fillers(const Fillers &) = delete;
    Fillers &operator=(const Fillers &) = delete;
    ~Fillers();
    // Allocates them and frees those freed before the build; false: out of memory.
    bool make(const Graph &graph, const Aging &aging, size_t header);

  private:
    Allocate allocate_;
    Free free_;
    std::vector<void *> memory_;
};

// Replays `graph` as cyclegc objects: a variable-size GC type whose items
// are the references. Frees everything it made before returning.
// fresh_memory: give back the pages cyclegc keeps before building.
// --pause-budget NS: cyclegc's full collections run as incremental cycles,
// slices of about NS each (cgc_collect_slice); 0: cgc_collect(2).
void set_replay_pause_budget(uint64_t ns);
ReplayResult replay_cyclegc(const Graph &graph, const Model &model, const Aging &aging, bool fresh_memory);

// The same in an embedded CPython (initialised on first use), if built in.
bool cpython_available();
std::string cpython_version();
ReplayResult replay_cpython(const Graph &graph, const Model &model, const Aging &aging);

// Boehm-Demers-Weiser: GC_MALLOC'd nodes; build, full collection with the
// roots held (a full mark), drop the roots and collect. No churn step.
bool boehm_available();
ReplayResult replay_boehm(const Graph &graph, const Model &model);

// The floor: one explicit-stack mark from the roots over a plain CSR array
// copy of the graph, the least work any tracing of the live nodes can do.
// `targets`: the edges' targets (the graph's own, or those after the churn,
// Model::churned_targets, for the floor of the collection after it).
struct FloorResult {
    double ns = 0;
    uint64_t marked = 0;
};
FloorResult floor_pass(const Graph &graph, const std::vector<uint32_t> &targets);
// The graph with its nodes numbered in a seeded random order, and `targets`
// (the graph's or the churned ones) renumbered alike: the floor of an aged
// heap (Aging), whose mark array and edge lists are as scattered as the
// replays' nodes.
Graph renumbered(const Graph &graph, const std::vector<uint32_t> &targets, uint64_t seed = 7);

// Memory probes.
double rss_bytes();       // resident set size, from /proc/self/statm
double malloc_in_use();   // bytes malloc has handed out (mallinfo2: arena + mmapped)
void release_free_memory();  // malloc_trim(0): gives free pages back, so RSS deltas count new memory

}  // namespace cgcbench

#endif
