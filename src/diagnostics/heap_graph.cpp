// Building the heap's graph: number the tracked objects by their slots, then
// traverse each once, keeping the references to tracked objects as edges
// and subtracting them from the targets' counts.
#include "heap_graph.hpp"

#include "../arena.hpp"

#include <new>

namespace cyclegc::internal::diag {
namespace {

// Whether `op` may be read as a GC object: inside the arena, or (pages
// outside it exist) a GC type. NULL and stray pointers inside the arena
// are sorted out by the page lookup that follows.
bool is_gc_object(const cgc_object *op) {
    if (!op) return false;
    if (g_arena->contains(op)) return true;
    return !g_arena->holds_every_page() && has_gc_head(const_cast<cgc_object *>(op));
}

// Numbers the heap's slots page by page and the tracked objects in walk
// order; fills objects, sizes and external (set to the reference count).
void number_nodes(Heap &heap, HeapGraph &graph) {
    const std::vector<Page *> &pages = heap.space.pages();
    graph.slot_base.resize(pages.size() + 1);
    uint64_t slots = 0;
    for (size_t p = 0; p < pages.size(); ++p) {
        graph.slot_base[p] = slots;
        slots += pages[p]->bump;
    }
    graph.slot_base[pages.size()] = slots;
    graph.node_of_slot.assign(slots, kNoNode);
    size_t live = heap.space.live_objects();  // (an upper bound of the tracked ones)
    graph.objects.reserve(live);
    graph.sizes.reserve(live);
    graph.external.reserve(live);
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &meta) {
        if (meta.flags & kCollecting) return;
        Page *page = page_of(op);
        auto node = static_cast<uint32_t>(graph.objects.size());
        graph.node_of_slot[graph.slot_base[page->index_in_heap] + page->index_of(op)] = node;
        graph.objects.push_back(op);
        graph.sizes.push_back(page->slot_size);
        graph.external.push_back(op->ob_refcnt);
    });
}

struct EdgeCollector {
    HeapGraph &graph;
};

int collect_edge(cgc_object *child, void *arg) {
    HeapGraph &graph = static_cast<EdgeCollector *>(arg)->graph;
    uint32_t target = graph.node_of(child);
    if (target == kNoNode) return 0;
    graph.edges.push_back(target);
    --graph.external[target];
    return 0;
}

void collect_edges(HeapGraph &graph) {
    size_t n = graph.node_count();
    graph.edge_start.resize(n + 1);
    graph.edges.reserve(2 * n);  // (a guess: most heaps average a few references per container)
    EdgeCollector collector{graph};
    for (size_t node = 0; node < n; ++node) {
        graph.edge_start[node] = graph.edges.size();
        cgc_object *op = graph.objects[node];
        if (cgc_traverseproc traverse = op->ob_type->tp_traverse) traverse(op, collect_edge, &collector);
    }
    graph.edge_start[n] = graph.edges.size();
}

}  // namespace

uint32_t HeapGraph::node_of(const cgc_object *op) const {
    if (!is_gc_object(op)) return kNoNode;
    Page *page = page_of(op);
    if (page->heap != heap) return kNoNode;  // (another heap's object, or not in a page)
    size_t p = page->index_in_heap;
    if (p + 1 >= slot_base.size() || (*pages)[p] != page) return kNoNode;
    uint32_t index = page->size_class == kLargeClass ? 0 : page->index_of(op);
    if (index >= slot_base[p + 1] - slot_base[p]) return kNoNode;
    uint32_t node = node_of_slot[slot_base[p] + index];
    if (node == kNoNode) return kNoNode;
    // A pointer into the slot but not at its object (a C++ object starts
    // after its vtable pointer): the slot's start is checked first, which
    // spares C objects a read of the metadata.
    bool at_object = reinterpret_cast<const char *>(op) == page->slot(index) ? page->meta[index].object_offset == 0
                                                                             : op == page->object_at(index);
    return at_object ? node : kNoNode;
}

bool build_graph(Heap &heap, HeapGraph &graph, const char *function) {
    if (heap.collecting()) {
        report(CGC_ERR_MISUSE, "%s: called during a collection (the heap's graph is being rewritten)", function);
        return false;
    }
    graph = HeapGraph{};
    graph.heap = &heap;
    graph.pages = &heap.space.pages();
    try {
        number_nodes(heap, graph);
        collect_edges(graph);
    } catch (const std::bad_alloc &) {
        graph = HeapGraph{};
        report(CGC_ERR_MEMORY, "%s: out of memory for the heap's graph", function);
        return false;
    }
    return true;
}

std::vector<uint32_t> roots_of(const HeapGraph &graph) {
    std::vector<uint32_t> roots;
    for (size_t node = 0; node < graph.node_count(); ++node)
        if (graph.external[node] > 0) roots.push_back(static_cast<uint32_t>(node));
    return roots;
}

std::vector<uint32_t> chain_to(const std::vector<uint32_t> &parent, uint32_t node) {
    std::vector<uint32_t> chain;
    if (node == kNoNode || parent[node] == kNoNode) return chain;
    for (;;) {
        chain.push_back(node);
        if (parent[node] == node) break;
        node = parent[node];
    }
    return {chain.rbegin(), chain.rend()};
}

}  // namespace cyclegc::internal::diag
