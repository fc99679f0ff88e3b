// Who holds it: the shortest chain of references from a root (an object
// with references from outside the graph) to an object, as
// objgraph.find_backref_chain, found by a breadth-first search backwards
// from the object over the references to it, which stops at the nearest
// roots: it visits the object's nearest ancestors only, where a search
// forwards from every root visits most of the heap, in an order that jumps
// from root to root (measured: docs/design.md).
#include "guard.hpp"
#include "heap_graph.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cyclegc::internal::diag {
namespace {

bool fill_chain(const HeapGraph &graph, const std::vector<uint32_t> &nodes, cgc_diag_chain *out,
                const char *function) {
    out->links = static_cast<cgc_diag_link *>(std::calloc(nodes.size() + 1, sizeof(cgc_diag_link)));
    if (!out->links) {
        report(CGC_ERR_MEMORY, "%s: out of memory", function);
        return false;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
        cgc_object *op = graph.objects[nodes[i]];
        out->links[i] = {op, type_name_of(op), cgc_refcount(op), static_cast<cgc_ssize_t>(graph.external[nodes[i]])};
    }
    out->length = static_cast<cgc_ssize_t>(nodes.size());
    return true;
}

bool check_out(cgc_diag_chain *out, const char *function) {
    if (!out) {
        report(CGC_ERR_MISUSE, "%s: the output chain is NULL", function);
        return false;
    }
    *out = cgc_diag_chain{};
    return true;
}

// The references to each node: sources[start[n] .. start[n + 1]) refer to n.
struct ReverseEdges {
    GraphVector<uint64_t> start;
    GraphVector<uint32_t> sources;
};

// Counts each node's references in start[n + 1], sums them into where
// each node's sources begin, places the sources while advancing start[n] to
// where n's end, then shifts start back: no array besides the result.
ReverseEdges reverse_edges(const HeapGraph &graph) {
    size_t n = graph.node_count();
    ReverseEdges reverse;
    reverse.start.assign(n + 1, 0);
    for (uint32_t target : graph.edges) ++reverse.start[target + 1];
    for (size_t node = 0; node < n; ++node) reverse.start[node + 1] += reverse.start[node];
    reverse.sources.resize(graph.edge_count());
    for (uint32_t source = 0; source < n; ++source)
        for (uint64_t e = graph.edge_start[source]; e < graph.edge_start[source + 1]; ++e)
            reverse.sources[reverse.start[graph.edges[e]]++] = source;
    for (size_t node = n; node > 0; --node) reverse.start[node] = reverse.start[node - 1];
    reverse.start[0] = 0;
    return reverse;
}

// A shortest chain from a root to any of `targets`, root first (empty: no
// root reaches them): backwards from the targets one level of referrers at
// a time; the first level with a root ends the search, and its first root
// in node order starts the chain. Iterative: no recursion.
std::vector<uint32_t> nearest_chain(const HeapGraph &graph, std::vector<uint32_t> level) {
    if (level.empty()) return {};
    ReverseEdges reverse = reverse_edges(graph);
    NodeMap toward;  // node -> the node, one reference nearer the targets, that it refers to
    toward.assign(graph.node_count(), kNoNode);
    for (uint32_t target : level) toward[target] = target;
    std::vector<uint32_t> next_level;
    while (!level.empty()) {
        uint32_t root = kNoNode;
        for (uint32_t node : level)
            if (graph.external[node] > 0) root = std::min(root, node);
        if (root != kNoNode) {
            std::vector<uint32_t> chain{root};
            while (toward[chain.back()] != chain.back()) chain.push_back(toward[chain.back()]);
            return chain;
        }
        next_level.clear();
        for (uint32_t node : level)
            for (uint64_t e = reverse.start[node]; e < reverse.start[node + 1]; ++e)
                if (uint32_t source = reverse.sources[e]; toward[source] == kNoNode) {
                    toward[source] = node;
                    next_level.push_back(source);
                }
        level.swap(next_level);
    }
    return {};
}

// The chain to the nearest of `targets`, into `out`: 1, 0, -1.
int chain_into(const HeapGraph &graph, std::vector<uint32_t> targets, cgc_diag_chain *out, const char *function) {
    std::vector<uint32_t> chain = nearest_chain(graph, std::move(targets));
    if (chain.empty()) return 0;
    return fill_chain(graph, chain, out, function) ? 1 : -1;
}

}  // namespace

// The node of `object` in a graph of the current heap, or kNoNode (misuse:
// reported, naming `function`).
uint32_t node_of_argument(const HeapGraph &graph, cgc_object *object, const char *function) {
    uint32_t node = graph.node_of(object);
    if (node == kNoNode)
        report(CGC_ERR_MISUSE, "%s: %s%p is not a tracked object of the current heap", function,
               object ? type_name_of(object) : "", static_cast<void *>(object));
    return node;
}

}  // namespace cyclegc::internal::diag

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

extern "C" {

int cgc_diag_retainer_chain(cgc_object *object, cgc_diag_chain *out) {
    const char *function = "cgc_diag_retainer_chain (objgraph.find_backref_chain)";
    if (!check_out(out, function)) return -1;
    return guarded(function, [&] {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        uint32_t target = node_of_argument(graph, object, function);
        if (target == kNoNode) return -1;
        return chain_into(graph, {target}, out, function);
    });
}

int cgc_diag_retainer_chain_to_type(const char *type_name, cgc_diag_chain *out) {
    const char *function = "cgc_diag_retainer_chain_to_type";
    if (!check_out(out, function)) return -1;
    if (!type_name) {
        report(CGC_ERR_MISUSE, "%s: the type name is NULL", function);
        return -1;
    }
    return guarded(function, [&] {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        std::vector<uint32_t> targets;
        const cgc_type *last = nullptr;
        bool named = false;  // whether `last` is named type_name
        for (uint32_t node = 0; node < graph.node_count(); ++node) {
            const cgc_type *type = graph.objects[node]->ob_type;
            if (type != last) last = type, named = std::strcmp(graph.type_name_at(node), type_name) == 0;
            if (named) targets.push_back(node);
        }
        return chain_into(graph, std::move(targets), out, function);
    });
}

void cgc_diag_chain_release(cgc_diag_chain *chain) {
    if (!chain) return;
    std::free(chain->links);
    *chain = cgc_diag_chain{};
}

int cgc_diag_show_chain(cgc_object *object) {
    cgc_diag_chain chain;
    int found = cgc_diag_retainer_chain(object, &chain);
    Heap &heap = current_heap();
    if (found == 0) log_line(heap, "<%s %p>: no root reaches it (garbage)", type_name_of(object), static_cast<void *>(object));
    for (cgc_ssize_t i = 0; i < chain.length; ++i) {
        const cgc_diag_link &link = chain.links[i];
        log_line(heap, "%s<%s %p> refcount %td, external %td", i ? "  -> " : "", link.type_name,
                 static_cast<void *>(link.object), link.refcount, link.external);
    }
    cgc_diag_chain_release(&chain);
    return found;
}

cgc_ssize_t cgc_diag_external_refs(cgc_object *object) {
    const char *function = "cgc_diag_external_refs";
    return guarded(function, [&]() -> cgc_ssize_t {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        uint32_t node = node_of_argument(graph, object, function);
        return node == kNoNode ? -1 : static_cast<cgc_ssize_t>(graph.external[node]);
    });
}

}  // extern "C"
