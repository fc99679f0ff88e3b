// The heap as a graph, built once per question: one node per tracked object
// of the heap, one edge per reference its tp_traverse visits to another
// tracked object of the heap, and for every node its *external* count: its
// reference count minus the edges to it, i.e. the references the collector
// cannot see (C variables, globals, untracked objects). Nodes with an
// external count above zero are the roots every diagnostic starts from.
//
// Building it reads the heap and runs tp_traverse; it writes nothing the
// heap owns (no count, generation, flag, finalizer or weak reference
// changes), so a diagnostic never changes what it looks at.
#pragma once

#include "../heap.hpp"
#include "graph_vector.hpp"

#include <cstdint>
#include <vector>

namespace cyclegc::internal::diag {

constexpr uint32_t kNoNode = UINT32_MAX;

struct HeapGraph {
    GraphVector<cgc_object *> objects;  // node -> object
    GraphVector<uint32_t> sizes;        // node -> bytes of its slot
    GraphVector<int64_t> external;      // node -> references from outside the graph (< 0: a traverse bug)
    GraphVector<uint64_t> edge_start;   // node -> its first edge; node_count() + 1 entries
    GraphVector<uint32_t> edges;        // targets, grouped by source node in node order

    size_t node_count() const { return objects.size(); }
    size_t edge_count() const { return edges.size(); }
    // The node of a tracked object of this heap, or kNoNode (any pointer,
    // NULL included; a non-GC object's type is read).
    uint32_t node_of(const cgc_object *op) const;
    const char *type_name_at(uint32_t node) const { return type_name_of(objects[node]); }

    // Node numbers by slot: slot_base[page index] + slot index. A node whose
    // object does not start its slot (a C++ object after its vtable
    // pointer) has kOffsetNode set here.
    std::vector<uint64_t> slot_base;
    GraphVector<uint32_t> node_of_slot;
    static constexpr uint32_t kOffsetNode = uint32_t(1) << 31;
    const std::vector<Page *> *pages = nullptr;
    const Heap *heap = nullptr;
};

// Builds the graph of `heap` into `graph`. False (reported, naming
// `function`) during a collection or when out of memory.
bool build_graph(Heap &heap, HeapGraph &graph, const char *function);

// The nodes with an external count above zero, in node order.
std::vector<uint32_t> roots_of(const HeapGraph &graph);

// node -> a node (a parent in a search), kNoNode for none.
using NodeMap = GraphVector<uint32_t>;

// Breadth-first search from every root at once: parent[n] is the node
// that first reached n (a root's parent is itself; kNoNode: no root
// reaches n). Stops at the first node for which stop(node) is true and
// returns it (kNoNode if none). Iterative: no recursion.
template <typename Stop>
uint32_t search_from_roots(const HeapGraph &graph, NodeMap &parent, Stop stop) {
    parent.assign(graph.node_count(), kNoNode);
    GraphVector<uint32_t> queue;
    queue.reserve(graph.node_count());
    for (size_t node = 0; node < graph.node_count(); ++node)
        if (graph.external[node] > 0) {
            parent[node] = static_cast<uint32_t>(node);
            queue.push_back(static_cast<uint32_t>(node));
        }
    for (size_t head = 0; head < queue.size(); ++head) {
        uint32_t node = queue[head];
        if (stop(node)) return node;
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e) {
            uint32_t target = graph.edges[e];
            if (parent[target] != kNoNode) continue;
            parent[target] = node;
            queue.push_back(target);
        }
    }
    return kNoNode;
}

// Every node a root reaches, in breadth-first order from every root at
// once, with `parent` as search_from_roots leaves it.
inline std::vector<uint32_t> reached_from_roots(const HeapGraph &graph, NodeMap &parent) {
    std::vector<uint32_t> order;
    search_from_roots(graph, parent, [&](uint32_t node) {
        order.push_back(node);
        return false;
    });
    return order;
}

// The chain root .. node along `parent` (from search_from_roots), root first.
std::vector<uint32_t> chain_to(const NodeMap &parent, uint32_t node);

}  // namespace cyclegc::internal::diag

namespace cyclegc::internal::diag {
// The node of `object` in a graph of the current heap, or kNoNode (misuse:
// reported, naming `function`).
uint32_t node_of_argument(const HeapGraph &graph, cgc_object *object, const char *function);
}  // namespace cyclegc::internal::diag
