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

// Numbers the heap's slots page by page and the tracked objects in page
// order; fills objects, sizes and external (set to the reference count).
// Reads each page's metadata directly, writing by index into arrays sized
// for every live object: the per-object work is a few stores.
void number_nodes(Heap &heap, HeapGraph &graph) {
    const std::vector<Page *> &pages = heap.space.pages();
    graph.slot_base.resize(pages.size() + 1);
    uint64_t slots = 0;
    for (size_t p = 0; p < pages.size(); ++p) {
        graph.slot_base[p] = slots;
        slots += pages[p]->bump;
    }
    graph.slot_base[pages.size()] = slots;
    graph.node_of_slot.resize(slots);  // (every entry is written below)
    size_t capacity = heap.space.live_objects();  // (an upper bound of the tracked ones)
    if (capacity >= HeapGraph::kOffsetNode) throw std::bad_alloc();  // (node numbers are 31 bits)
    graph.objects.resize(capacity);
    graph.sizes.resize(capacity);
    graph.external.resize(capacity);
    uint32_t node = 0;
    for (size_t p = 0; p < pages.size(); ++p) {
        const Page *page = pages[p];
        uint32_t *slot_nodes = graph.node_of_slot.data() + graph.slot_base[p];
        for (uint32_t i = 0, n = page->bump; i < n; ++i) {
            GcMeta meta = page->meta[i];
            if (!(meta.flags & kTracked) || in_collection_set(meta) || node == capacity) {
                slot_nodes[i] = kNoNode;
                continue;
            }
            cgc_object *op = object_at_slot(page->slot(i), meta);
            slot_nodes[i] = node | (meta.object_offset ? HeapGraph::kOffsetNode : 0);
            graph.objects[node] = op;
            graph.sizes[node] = page->slot_size;
            graph.external[node] = cgc_refcount(op);
            ++node;
        }
    }
    graph.objects.resize(node);
    graph.sizes.resize(node);
    graph.external.resize(node);
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
    // A pointer into the slot but not at its object is not the object. A C
    // object starts its slot, which spares a read of its metadata; a C++
    // object may start after its vtable pointer (kOffsetNode).
    if (!(node & kOffsetNode)) return reinterpret_cast<const char *>(op) == page->slot(index) ? node : kNoNode;
    node &= ~kOffsetNode;
    return op == objects[node] ? node : kNoNode;
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

std::vector<uint32_t> chain_to(const NodeMap &parent, uint32_t node) {
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
