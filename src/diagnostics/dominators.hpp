// Dominators and retained sizes of a graph with a virtual root that refers
// to the given roots: node d dominates n when every path from the root to n
// passes through d; n's retained size is the bytes of the nodes it
// dominates (itself included): what would be freed if it died.
//
// Lengauer-Tarjan (the simple version, path compression without balancing:
// O(m log n)), with an explicit stack for the depth-first search and the
// compression, so that a chain of ten million objects needs no recursion.
// It depends on nothing of the heap: cyclegc-inspect runs it on snapshots.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cyclegc::internal::diag {

using std::size_t;

struct CsrGraph {
    std::span<const uint64_t> edge_start;  // node_count + 1 entries
    std::span<const uint32_t> edges;
    std::span<const uint32_t> sizes;  // bytes per node
    size_t node_count() const { return edge_start.size() - 1; }
};

struct Dominators {
    static constexpr uint32_t kUnreached = UINT32_MAX;
    uint32_t virtual_root = 0;   // = node count
    std::vector<uint32_t> idom;  // node -> immediate dominator (virtual_root, or kUnreached)
    std::vector<uint64_t> retained;  // node -> retained bytes (0: unreached)
    std::vector<uint32_t> order;     // reached nodes in depth-first preorder (dominators come first)
};

// Throws std::bad_alloc.
Dominators compute_dominators(const CsrGraph &graph, const std::vector<uint32_t> &roots);

}  // namespace cyclegc::internal::diag
