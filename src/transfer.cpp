// cgc_heap_transfer: an isolated graph moves from one confined heap to
// another by moving the pages that hold it (docs/design.md, "Transfer").
//
// The sending thread (the source heap's owner) gathers everything the root
// reaches through tp_traverse in the source heap, checks that nothing
// outside the graph refers into it (each object's count equals the
// references from inside, the root's less the caller's one) and that its
// pages hold nothing else, then untracks its objects (marked kInTransit),
// takes its pages out of the source heap and delivers them to the receiving
// heap's inbox. The receiving thread takes them in at its next page release,
// slow allocation or collection, and tracks the objects again in its
// generation 0. A page never holds objects of two heaps, so no walk, count
// or free ever crosses threads.
#include "arena.hpp"
#include "heap.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace cyclegc::internal {
namespace {

constexpr const char *kFunction = "cgc_heap_transfer";

// The heaps that exist: a heap handle given to cgc_heap_transfer is checked
// against them (a deleted heap is refused, not written to).
struct HeapRegistry {
    std::mutex lock;
    std::unordered_set<const Heap *> heaps;
};
HeapRegistry &registry() {
    static auto *heaps = new HeapRegistry;  // (never destroyed: heaps die at exit after it)
    return *heaps;
}

bool heap_exists(const Heap *heap) {
    HeapRegistry &known = registry();
    std::lock_guard guard(known.lock);
    return known.heaps.contains(heap);
}

// The heap whose page holds `op`, or null: an object outside the pages (a
// confined heap's non-GC object, from malloc).
Heap *home_of(const cgc_object *op) { return g_arena->contains(op) ? &heap_of(op) : nullptr; }  // (a lent page's: the shared heap)

// The graph: every object of the source heap (and every non-GC object
// outside the pages) that the root reaches, with the references to each from
// the others; gathered without recursion.
struct Graph {
    explicit Graph(Heap &from) : source(from) {}
    Heap &source;
    std::unordered_map<const cgc_object *, cgc_ssize_t> inside;
    std::vector<cgc_object *> members;  // root first
    std::vector<cgc_object *> stack;
    cgc_object *holder = nullptr;   // the member being traversed
    cgc_object *foreign = nullptr;  // an object of another confined heap it refers to
    bool out_of_memory = false;

    void add(cgc_object *op) {
        auto [entry, added] = inside.try_emplace(op, 0);
        if (!added) return;
        members.push_back(op);
        stack.push_back(op);
    }
};

int gather_visit(cgc_object *op, void *arg) {
    auto &graph = *static_cast<Graph *>(arg);
    if (!op) return 0;
    Heap *home = home_of(op);
    if (home && home->is_shared()) return 0;  // (any thread may use it: not part of the graph)
    if (home && home != &graph.source) {
        graph.foreign = op;
        return 1;
    }
    try {
        graph.add(op);
        ++graph.inside[op];
    } catch (const std::bad_alloc &) {
        graph.out_of_memory = true;
        return 1;
    }
    return 0;
}

// Traverses every member once. Runs as an analysis does (the graph must not
// change: tracking from tp_traverse is refused, and a count reaching zero
// does not free a tracked object).
void gather(Graph &graph, cgc_object *root) {
    graph.add(root);
    Phase before = graph.source.phase;
    graph.source.phase = Phase::finding_unreachable;
    while (!graph.stack.empty() && !graph.foreign && !graph.out_of_memory) {
        cgc_object *op = graph.stack.back();
        graph.stack.pop_back();
        graph.holder = op;
        if (cgc_traverseproc traverse = op->ob_type->tp_traverse) traverse(op, gather_visit, &graph);
    }
    graph.source.phase = before;
}

// A tracked object of the source heap outside the graph that refers to
// `target`, or null.
struct Probe {
    const cgc_object *target;
    bool found = false;
};
int probe_visit(cgc_object *op, void *arg) {
    auto &probe = *static_cast<Probe *>(arg);
    if (op == probe.target) probe.found = true;
    return probe.found ? 1 : 0;
}
cgc_object *referrer_outside(Graph &graph, const cgc_object *target) {
    cgc_object *referrer = nullptr;
    Heap &heap = graph.source;
    Phase before = heap.phase;
    heap.phase = Phase::finding_unreachable;
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &) {
        if (referrer || graph.inside.contains(op) || !op->ob_type->tp_traverse) return;
        Probe probe{target};
        op->ob_type->tp_traverse(op, probe_visit, &probe);
        if (probe.found) referrer = op;
    });
    heap.phase = before;
    return referrer;
}

// Refuses a member referred to from outside the graph, naming who refers to
// it if a tracked object does.
bool refuse_outside_references(Graph &graph, cgc_object *root) {
    for (cgc_object *op : graph.members) {
        cgc_ssize_t expected = cgc_refcount(op) - (op == root ? 1 : 0);
        cgc_ssize_t inside = graph.inside[op];
        if (inside == expected) continue;
        if (inside > expected) {
            report(CGC_ERR_MISUSE, "%s: object %p of type '%s' has %zd reference(s) from the graph's tp_traverse "
                   "but a count of %zd: a traversal visits a reference it does not hold; not transferred",
                   kFunction, static_cast<void *>(op), type_name_of(op), static_cast<cgc_ssize_t>(inside),
                   static_cast<cgc_ssize_t>(cgc_refcount(op)));
            return true;
        }
        char who[160] = "not from a tracked object of the heap (a variable, gc.garbage, an untracked object)";
        if (cgc_object *referrer = referrer_outside(graph, op))
            std::snprintf(who, sizeof who, "one from object %p of type '%s'", static_cast<void *>(referrer),
                          type_name_of(referrer));
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' in the graph of root %p has %zd reference(s) from "
               "outside the graph (%s); only an isolated graph moves, and the caller's one reference to the "
               "root; not transferred", kFunction, static_cast<void *>(op), type_name_of(op),
               static_cast<void *>(root), static_cast<cgc_ssize_t>(expected - inside), who);
        return true;
    }
    return false;
}

// Refuses a member the move cannot carry: one with weak references (their
// table is the source heap's), a weak reference, one the collector holds.
bool refuse_unmovable(Graph &graph) {
    for (cgc_object *op : graph.members) {
        if (!home_of(op)) continue;  // (outside the pages: moves as it is)
        const GcMeta &meta = meta_of(op);
        const char *why = nullptr;
        if (meta.flags & kHasWeakrefs)
            why = "has weak references (kept by the source heap; clear them first)";
        else if (is_weakref(op))
            why = "is a weak reference (listed by its referent's heap)";
        else if ((meta.flags & (kHeld | kCollecting | kUncollectable)) || in_collection_set(meta))
            why = "is held by a collection of the source heap";
        if (!why) continue;
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' in the graph %s; not transferred", kFunction,
               static_cast<void *>(op), type_name_of(op), why);
        return true;
    }
    return false;
}

// The pages that hold the graph's GC objects, or an empty list (refused,
// reported) if one holds an object outside the graph: a page moves whole.
std::vector<Page *> pages_of(Graph &graph) {
    std::unordered_map<Page *, uint32_t> held;
    for (cgc_object *op : graph.members)
        if (home_of(op)) ++held[page_of(op)];
    std::vector<Page *> pages;
    for (auto [page, count] : held) {
        if (page->used == count) {
            pages.push_back(page);
            continue;
        }
        for (uint32_t i = 0; i < page->bump; ++i) {
            cgc_object *op = page->object_at(i);
            if (!(page->meta[i].flags & kAllocated) || graph.inside.contains(op)) continue;
            report(CGC_ERR_MISUSE, "%s: object %p of type '%s', not part of the graph, shares a page with "
                   "it; a transfer moves whole pages: build the graph while a heap of its own is current "
                   "(docs/gc.md, \"Transfer\"); not transferred", kFunction, static_cast<void *>(op),
                   type_name_of(op));
            return {};
        }
    }
    return pages;
}

// Refuses what the arguments make impossible; the source heap, or null.
Heap *source_heap(cgc_object *root, Heap *to) {
    if (!root || !to) {
        report(CGC_ERR_MISUSE, "%s: the %s is NULL", kFunction, root ? "receiving heap" : "root");
        return nullptr;
    }
    if (!heap_exists(to)) {
        report(CGC_ERR_MISUSE, "%s: the receiving heap %p is not a heap (deleted?); not transferred", kFunction,
               static_cast<void *>(to));
        return nullptr;
    }
    if (to->is_shared()) {
        report(CGC_ERR_MISUSE, "%s: the receiving heap is shared; objects meant for several threads are "
               "made on the shared heap; not transferred", kFunction);
        return nullptr;
    }
    if (!has_gc_head(root) || !g_arena->contains(root)) {
        report(CGC_ERR_MISUSE, "%s: root %p of type '%s' is not a GC object of a heap; not transferred",
               kFunction, static_cast<void *>(root), type_name_of(root));
        return nullptr;
    }
    Heap &source = heap_of(root);
    const char *why = nullptr;
    if (source.is_shared())
        why = "belongs to a shared heap, whose objects every attached thread may use already";
    else if (&source == to)
        why = "belongs to the receiving heap already";
    else if (source.collecting())
        why = "belongs to a heap that is collecting";
    if (why) {
        report(CGC_ERR_MISUSE, "%s: root %p of type '%s' %s; not transferred", kFunction, static_cast<void *>(root),
               type_name_of(root), why);
        return nullptr;
    }
    if (!owned_here(source, kFunction, root)) return nullptr;
    return &source;
}

// Moves the checked graph: untracks its objects in the source heap, takes
// its pages out and delivers them to `to`. Cannot fail once the parcel
// exists.
void move(Graph &graph, std::vector<Page *> &pages, Heap &to, std::unique_ptr<Parcel> parcel) {
    Heap &source = graph.source;
    cgc_ssize_t moved = 0;
    for (cgc_object *op : graph.members) {
        if (!home_of(op)) continue;
        ++moved;
        GcMeta &meta = meta_of(op);
        if (!(meta.flags & kTracked)) continue;
        untrack_tracked(source, meta, op);
        meta.schedule = kInTransit;
    }
    source.generations[0].count = std::max<cgc_ssize_t>(source.generations[0].count - moved, 0);
    for (Page *page : pages) {
        source.space.detach(page);
        set_page_heap(page, &to);
        page->in_transit = true;
    }
    parcel->pages = std::move(pages);
    to.space.deliver(parcel.release());
}

int transfer(cgc_object *root, Heap *to) {
    Heap *source = source_heap(root, to);
    if (!source) return -1;
    // (A running incremental cycle pins the pages and lists objects.)
    if (source->incremental.running()) abandon_cycle(*source);
    if (source->space.walking()) {
        report(CGC_ERR_MISUSE, "%s: root %p of type '%s': its heap's pages are being walked (from a "
               "traversal or callback); not transferred", kFunction, static_cast<void *>(root), type_name_of(root));
        return -1;
    }
    Graph graph(*source);
    std::unique_ptr<Parcel> parcel;
    std::vector<Page *> pages;
    try {
        gather(graph, root);
        if (graph.out_of_memory) throw std::bad_alloc();
        if (graph.foreign) {
            report(CGC_ERR_MISUSE, "%s: object %p of type '%s' in the graph refers to object %p of type '%s' "
                   "of another confined heap (only a shared heap's objects may be shared); not transferred",
                   kFunction, static_cast<void *>(graph.holder), type_name_of(graph.holder),
                   static_cast<void *>(graph.foreign), type_name_of(graph.foreign));
            return -1;
        }
        if (refuse_outside_references(graph, root) || refuse_unmovable(graph)) return -1;
        pages = pages_of(graph);
        if (pages.empty()) return -1;
        parcel = std::make_unique<Parcel>();
        parcel->pages.reserve(pages.size());
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "%s: out of memory gathering the graph of root %p; not transferred", kFunction,
               static_cast<void *>(root));
        return -1;
    }
    move(graph, pages, *to, std::move(parcel));
    return 0;
}

// Tracks the transferred objects of a received page again (those freed or
// tracked meanwhile are left alone), then ends its transit.
void track_received(Heap &heap, Page *page) {
    for (uint32_t i = 0; i < page->bump; ++i) {
        GcMeta &meta = page->meta[i];
        if (!(meta.flags & kAllocated) || !(meta.schedule & kInTransit)) continue;
        meta.schedule = static_cast<uint8_t>(meta.schedule & ~kInTransit);
        cgc_object *op = page->object_at(i);
        if ((meta.flags & kTracked) || cgc_refcount(op) <= 0) continue;  // (tracked, or in a trashcan)
        meta.flags = static_cast<uint8_t>((meta.flags & ~(kCollecting | kReachable)) | kTracked);
        place_in_generation(heap, op, meta, 0);
        ++heap.generations[0].count;  // (its allocation, as the source heap no longer counts it)
    }
    heap.space.end_transit(page);
}

}  // namespace

void note_heap_made(const Heap *heap) {
    HeapRegistry &known = registry();
    std::lock_guard guard(known.lock);
    known.heaps.insert(heap);
}

void note_heap_gone(const Heap *heap) {
    HeapRegistry &known = registry();
    std::lock_guard guard(known.lock);
    known.heaps.erase(heap);
}

void receive_transfers(Heap &heap) {
    heap.space.receive();
    // (Generation 0's array is parked while a collection analyses: they are
    // tracked at the next call.)
    if (heap.phase == Phase::finding_unreachable) return;
    for (Parcel *parcel = heap.space.take_arrived(), *next; parcel; parcel = next) {
        next = parcel->next;
        for (Page *page : parcel->pages) track_received(heap, page);
        delete parcel;
    }
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" int cgc_heap_transfer(cgc_object *root, cgc_heap *to) {
    return transfer(root, reinterpret_cast<Heap *>(to));
}
