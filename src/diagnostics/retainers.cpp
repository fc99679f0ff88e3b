// Who holds it: the shortest chain of references from a root (an object
// with references from outside the graph) to an object, as
// objgraph.find_backref_chain, found by one breadth-first search from every
// root at once over the heap's graph.
#include "guard.hpp"
#include "heap_graph.hpp"

#include <cyclegc/diagnostics.h>

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
        out->links[i] = {op, type_name_of(op), op->ob_refcnt, static_cast<cgc_ssize_t>(graph.external[nodes[i]])};
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

// The chain to the first node that `wanted` accepts, into `out`: 1, 0, -1.
template <typename Wanted>
int chain_into(const HeapGraph &graph, Wanted wanted, cgc_diag_chain *out, const char *function) {
    std::vector<uint32_t> parent;
    uint32_t found = search_from_roots(graph, parent, wanted);
    if (found == kNoNode) return 0;
    return fill_chain(graph, chain_to(parent, found), out, function) ? 1 : -1;
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
        return chain_into(graph, [&](uint32_t node) { return node == target; }, out, function);
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
        return chain_into(graph, [&](uint32_t node) { return std::strcmp(graph.type_name_at(node), type_name) == 0; },
                          out, function);
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
