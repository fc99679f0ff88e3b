// A heap graph in the `cgcgraph 1` format (docs/graph-format.md), held as a
// compressed sparse row (CSR) array, plus the model that says what a
// reference-counting cycle collector must free at each step of a replay.
#ifndef CYCLEGC_BENCH_GRAPH_HPP
#define CYCLEGC_BENCH_GRAPH_HPP

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cgcbench {

struct Graph {
    std::string name;                 // file name without .cgcgraph.gz, or gen-random-N / gen-chain-N
    uint32_t nodes = 0;
    std::vector<uint32_t> offsets;    // nodes + 1 entries: node i's edges are targets[offsets[i] .. offsets[i+1])
    std::vector<uint32_t> targets;    // edges, in tp_traverse order; duplicates and self references allowed
    std::vector<uint32_t> external;   // references from outside the graph; > 0 means root
    uint64_t python_bytes = 0;        // sum of the `size` fields (sys.getsizeof in real graphs)
    std::vector<std::string> comments;
    // From a "# stats: ... roots=R garbage=G" comment, when present.
    std::optional<uint64_t> stated_roots, stated_garbage;

    uint64_t edges() const { return targets.size(); }
    uint32_t degree(uint32_t i) const { return offsets[i + 1] - offsets[i]; }
};

// Reads a .cgcgraph.gz (or an uncompressed .cgcgraph: zlib reads both).
// Throws std::runtime_error with the file name and line on a malformed file.
Graph read_graph(const std::string &path);
// The two synthetic graphs of the format's "Graphs here" section, made in
// memory with a fixed seed: out-degree uniform in 0..8, uniform targets, 10%
// of the nodes roots; and a chain 0 -> 1 -> ... -> n-1 with node 0 the root.
Graph make_random_graph(uint32_t nodes, uint64_t seed = 20261122);
Graph make_chain_graph(uint32_t nodes);
// Writes a graph (used by tests and to save generated graphs).
void write_graph(const Graph &graph, const std::string &path, const std::vector<std::string> &comments);

// splitmix64: small, fast, the same sequence on every platform.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    // Uniform in [0, bound): Lemire's multiply-shift (bias < bound / 2^64).
    uint32_t below(uint32_t bound) {
        return static_cast<uint32_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
    }
};

// One edge rewrite of the churn step: node's reference number `slot` now
// points to `target` (incref the new target first, then decref the old one).
struct ChurnOp {
    uint32_t node, slot, target;
};

// What a correct replay frees at each step, computed on the graph alone
// (reachability and a simulation of reference counts), and the churn step.
struct Model {
    uint64_t roots = 0;            // nodes with external > 0
    uint64_t root_refs = 0;        // sum of external
    uint64_t garbage = 0;          // nodes no root reaches
    uint64_t acyclic_garbage = 0;  // garbage that reference counting frees as soon as the graph is built
    uint64_t live = 0;             // nodes a root reaches
    uint64_t live_edges = 0;       // edges from live nodes
    std::vector<ChurnOp> churn;    // rewrites 10% of the live edges, fixed seed
    std::vector<uint32_t> churned_targets;  // Graph::targets after the churn (its floor's edges)
    uint64_t churn_freed_by_refcount = 0;  // freed while the churn runs
    uint64_t churn_freed_by_collect = 0;   // freed by the full collection after it
    uint64_t drop_freed_by_refcount = 0;   // freed when every root reference is dropped
    uint64_t drop_freed_by_collect = 0;    // freed by the final collection (the rest)

    uint64_t cyclic_garbage() const { return garbage - acyclic_garbage; }
    uint64_t live_after_churn() const { return live - churn_freed_by_refcount - churn_freed_by_collect; }
};

// churn_fraction: the share of live edges rewritten (0.10 in the suite).
Model build_model(const Graph &graph, double churn_fraction = 0.10, uint64_t seed = 42);

}  // namespace cgcbench

#endif
