// Retained sizes: what would be freed if an object (its dominator subtree)
// or every object of a type died.
#include "dominators.hpp"
#include "guard.hpp"
#include "heap_graph.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cyclegc::internal::diag {
namespace {

Dominators dominators_of(const HeapGraph &graph) {
    return compute_dominators(CsrGraph{graph.edge_start, graph.edges, graph.sizes}, roots_of(graph));
}

// Bytes reachable from the roots without passing through a node `skip`
// accepts (iterative breadth-first search).
template <typename Skip>
uint64_t reachable_bytes(const HeapGraph &graph, Skip skip) {
    std::vector<char> seen(graph.node_count());
    std::vector<uint32_t> queue;
    for (uint32_t root : roots_of(graph))
        if (!skip(root)) seen[root] = 1, queue.push_back(root);
    uint64_t bytes = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
        uint32_t node = queue[head];
        bytes += graph.sizes[node];
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e) {
            uint32_t target = graph.edges[e];
            if (!seen[target] && !skip(target)) seen[target] = 1, queue.push_back(target);
        }
    }
    return bytes;
}

}  // namespace
}  // namespace cyclegc::internal::diag

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

extern "C" {

cgc_ssize_t cgc_diag_retained_size(cgc_object *object) {
    const char *function = "cgc_diag_retained_size";
    return guarded(function, [&]() -> cgc_ssize_t {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        uint32_t node = node_of_argument(graph, object, function);
        if (node == kNoNode) return -1;
        return static_cast<cgc_ssize_t>(dominators_of(graph).retained[node]);
    });
}

cgc_ssize_t cgc_diag_retained_size_of_type(const char *type_name) {
    const char *function = "cgc_diag_retained_size_of_type";
    if (!type_name) {
        report(CGC_ERR_MISUSE, "%s: the type name is NULL", function);
        return -1;
    }
    return guarded(function, [&]() -> cgc_ssize_t {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        auto none = [](uint32_t) { return false; };
        auto of_type = [&](uint32_t node) { return std::strcmp(graph.type_name_at(node), type_name) == 0; };
        return static_cast<cgc_ssize_t>(reachable_bytes(graph, none) - reachable_bytes(graph, of_type));
    });
}

cgc_ssize_t cgc_diag_largest_dominators(cgc_ssize_t limit, cgc_diag_retained *out) {
    const char *function = "cgc_diag_largest_dominators";
    if (limit < 0 || (limit > 0 && !out)) {
        report(CGC_ERR_MISUSE, "%s: %td entries at %p", function, limit, static_cast<void *>(out));
        return -1;
    }
    return guarded(function, [&]() -> cgc_ssize_t {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        Dominators dominators = dominators_of(graph);
        std::vector<uint32_t> nodes = dominators.order;
        size_t count = std::min<size_t>(static_cast<size_t>(limit), nodes.size());
        std::partial_sort(nodes.begin(), nodes.begin() + count, nodes.end(), [&](uint32_t a, uint32_t b) {
            return dominators.retained[a] != dominators.retained[b] ? dominators.retained[a] > dominators.retained[b] : a < b;
        });
        for (size_t i = 0; i < count; ++i) {
            uint32_t node = nodes[i];
            cgc_object *op = graph.objects[node];
            out[i] = {op, type_name_of(op), static_cast<cgc_ssize_t>(graph.sizes[node]),
                      static_cast<cgc_ssize_t>(dominators.retained[node])};
        }
        return static_cast<cgc_ssize_t>(count);
    });
}

}  // extern "C"
