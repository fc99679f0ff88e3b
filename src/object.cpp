// Objects: allocation, tracking, and deallocation with a bounded stack.
#include "arena.hpp"
#include "heap.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cyclegc::internal {
namespace {

bool ensure_ready(cgc_type *type, const char *function) {
    if (!type) {
        report(CGC_ERR_MISUSE, "%s: the type is NULL", function);
        return false;
    }
    if (type->tp_flags & CGC_TPFLAGS_READY) return true;
    return cgc_type_ready(type) == 0;
}

// Size of the object part (without the collector header), or -1.
cgc_ssize_t object_size(cgc_type *type, cgc_ssize_t nitems, const char *function) {
    if (nitems < 0) {
        report(CGC_ERR_VALUE, "%s: negative size %td for an object of type '%s'", function, nitems,
               type_name(type));
        return -1;
    }
    cgc_ssize_t items = 0;
    if (__builtin_mul_overflow(nitems, type->tp_itemsize, &items)) items = -1;
    cgc_ssize_t size = 0;
    if (items < 0 || __builtin_add_overflow(type->tp_basicsize, items, &size) ||
        size > PTRDIFF_MAX / 2) {
        report(CGC_ERR_MEMORY, "%s: an object of type '%s' with %td items is too large", function,
               type_name(type), nitems);
        return -1;
    }
    if (size < static_cast<cgc_ssize_t>(sizeof(cgc_object))) size = sizeof(cgc_object);
    return size;
}

// Refuses use of an object whose slot is free already (a freed object),
// reporting `function`, the pointer it was given and what is refused.
// (A freed object's header stays readable: poison.hpp. A large object's
// page was given back: it reads as zeros, no type; `op` is null for raw
// memory, whose object offset a free slot no longer records.)
bool refuse_if_freed(const GcMeta &meta, const char *function, const void *memory, const cgc_object *op,
                     const char *refused) {
    if (meta.flags & kAllocated) return false;
    if (op && op->ob_type)
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' was freed already; %s", function, memory,
               type_name_of(op), refused);
    else
        report(CGC_ERR_MISUSE, "%s: memory %p was freed already; %s", function, memory, refused);
    return true;
}

// Refuses a GC object larger than a slot can be (reported: malloc may well
// serve that size, so "out of memory" would mislead). `type` may be null.
bool refuse_if_too_large(size_t size, const char *function, const cgc_type *type) {
    if (size <= kMaxObjectSize) [[likely]] return false;
    report(CGC_ERR_MEMORY, "%s: %zu bytes for an object of type '%s' is larger than the 4 GiB a GC "
           "object may have", function, size, type ? type_name(type) : "(raw memory)");
    return true;
}

}  // namespace

cgc_object *allocate_object(cgc_type *type, cgc_ssize_t nitems, const char *function,
                            bool spare_item) {
    if (!type || !(type->tp_flags & CGC_TPFLAGS_READY)) {
        if (!ensure_ready(type, function)) return nullptr;
    }
    cgc_ssize_t size = nitems == 0 && type->tp_basicsize >= static_cast<cgc_ssize_t>(sizeof(cgc_object))
                           ? type->tp_basicsize
                           : object_size(type, nitems, function);
    if (size >= 0 && spare_item && type->tp_itemsize) size += type->tp_itemsize;
    if (size < 0) return nullptr;
    bool gc = (type->tp_flags & CGC_TPFLAGS_HAVE_GC) != 0;
    cgc_object *op;
    if (gc) {
        if (refuse_if_too_large(static_cast<size_t>(size), function, type)) return nullptr;
        // Counting (and maybe collecting) before the allocation: the new
        // object never takes part in the collection it triggers.
        Heap &heap = current_heap();
        note_gc_allocation(heap);
        op = static_cast<cgc_object *>(heap.space.allocate(heap, static_cast<size_t>(size)));
        if (!op) {
            report(CGC_ERR_MEMORY, "%s: out of memory for an object of type '%s'", function,
                   type_name(type));
            return nullptr;
        }
    } else {
        op = static_cast<cgc_object *>(std::calloc(1, static_cast<size_t>(size)));
        if (!op) {
            report(CGC_ERR_MEMORY, "%s: out of memory for an object of type '%s'", function,
                   type_name(type));
            return nullptr;
        }
    }
    op->ob_refcnt = 1;
    op->ob_type = type;
    if (type->tp_itemsize != 0) reinterpret_cast<cgc_var_object *>(op)->ob_size = nitems;
    if (type->tp_flags & CGC_TPFLAGS_HEAPTYPE) cgc_incref(reinterpret_cast<cgc_object *>(type));
    return op;
}

namespace {

[[gnu::noinline]] cgc_object *allocate_gc(cgc_type *type, cgc_ssize_t nitems, const char *function) {
    if (!ensure_ready(type, function)) return nullptr;
    if (!(type->tp_flags & CGC_TPFLAGS_HAVE_GC)) {
        report(CGC_ERR_MISUSE, "%s: type '%s' does not have Py_TPFLAGS_HAVE_GC; allocate it with "
               "PyObject_New instead", function, type_name(type));
        return nullptr;
    }
    return allocate_object(type, nitems, function);
}

// destroy() of an object that cyclegc holds or that has weak references,
// or one freed already.
[[gnu::noinline]] void destroy_unusual(cgc_object *op, GcMeta &meta) {
    if (!owned_here(heap_of(op), "Py_DECREF", op)) {
        op->ob_refcnt = 1;  // (kept: freeing it would race with its owner)
        return;
    }
    if (!(meta.flags & kAllocated)) {
        // Freed (PyObject_GC_Del) while references to it remained: the
        // last of them just went. (Its header stays readable: poison.hpp.)
        report(CGC_ERR_MISUSE,
               "Py_DECREF: object %p of type '%s' lost its last reference after it was freed "
               "(PyObject_GC_Del while references to it remained); not deallocated again",
               static_cast<void *>(op), type_name_of(op));
        return;
    }
    if (meta.flags & kHeld) {
        // cyclegc holds a reference while the object's finalizer or
        // tp_clear runs: someone dropped one that was not theirs. Give
        // the reference back; the object is freed when it is let go.
        report(CGC_ERR_CORRUPTION,
               "Py_DECREF: object %p of type '%s' lost its last reference while cyclegc held one "
               "for its finalizer or tp_clear: a Py_DECREF too many; not freed now",
               static_cast<void *>(op), type_name_of(op));
        op->ob_refcnt = 1;
        return;
    }
    // Weak references die with their referent and call back before its
    // destructor runs; but if a finalizer is still to run (inside
    // tp_dealloc), it may resurrect the object, so they wait for it
    // (cgc_call_finalizer_from_dealloc, or at the latest cgc_gc_del).
    bool finalizer_pending = op->ob_type->tp_finalize && !(meta.flags & kFinalized);
    if (!finalizer_pending) cgc_clear_weakrefs(op);
    cgc_destructor dealloc = op->ob_type->tp_dealloc;
    (dealloc ? dealloc : cgc_default_dealloc)(op);
}

// Runs the deallocator of an object whose count reached zero.
[[gnu::always_inline]] inline void destroy(cgc_object *op) {
    if (has_gc_head(op)) {
        GcMeta &meta = meta_of(op);
        if (!CYCLEGC_OWNED_HERE(heap_of(op), "Py_DECREF", op)) {
            op->ob_refcnt = 1;  // (kept: freeing it would race with its owner)
            return;
        }
        if (!allocated_without(meta, kHeld | kHasWeakrefs)) [[unlikely]] {
            destroy_unusual(op, meta);
            return;
        }
    }
    cgc_destructor dealloc = op->ob_type->tp_dealloc;
    (dealloc ? dealloc : cgc_default_dealloc)(op);
}

// release_cxx() when the object is held or has weak references, or a
// collection runs.
[[gnu::noinline]] void release_cxx_slow(cgc_object *op, cgc_destructor destroy_and_free) {
    GcMeta &meta = meta_of(op);
    Heap &heap = heap_of(op);
    if (!owned_here(heap, "cyclegc::ref release", op)) {
        op->ob_refcnt = 1;  // (kept: freeing it would race with its owner)
        return;
    }
    if ((meta.flags & (kHeld | kHasWeakrefs)) || heap.phase == Phase::finding_unreachable) {
        destroy(op);
        return;
    }
    if (meta.flags & kTracked) untrack_tracked(heap, meta, op);
    // During a collection, every destructor in a collected cycle sees its
    // traced references cleared (docs/cpp.md).
    if (cgc_inquiry clear = op->ob_type->tp_clear) clear(op);
    destroy_and_free(op);
}

// release_cxx() of a tracked object that is not the newest young one (or
// of any tracked object while a collection analyses the graph).
[[gnu::noinline]] void release_cxx_untracking(cgc_object *op, GcMeta &meta, cgc_destructor destroy_and_free) {
    Heap &heap = heap_of(op);
    if (heap.phase != Phase::idle) {
        release_cxx_slow(op, destroy_and_free);
        return;
    }
    untrack_not_newest(heap, meta, op);
    destroy_and_free(op);
}

// A C++ object (its type has tp_cxx_destroy and no finalizer) at count 0:
// what cyclegc::detail::cxx_type<T>::dealloc does, in one call. The type's
// tp_cxx_destroy runs ~T and frees the memory (cgc_gc_raw_free, which
// handles weak references or tracking the destructor may have added), so
// it is a tail call and nothing here outlives it; so are the calls of the
// unusual cases (no registers to save on the common path).
[[gnu::noinline]] void release_cxx(cgc_object *op, cgc_destructor destroy_and_free) {
    Page *page = page_of(op);
    GcMeta &meta = page->meta[page->index_of(op)];
    Heap &heap = *page->heap;
    uint8_t flags = meta.flags;
    if (!CYCLEGC_OWNED_HERE(heap, "cyclegc::ref release", op)) {
        op->ob_refcnt = 1;  // (kept: freeing it would race with its owner)
        return;
    }
    if (flags & (kHeld | kHasWeakrefs)) [[unlikely]] {
        release_cxx_slow(op, destroy_and_free);
        return;
    }
    if (flags & kTracked) {
        // The newest young object goes in any phase (while a collection
        // analyses, generation 0 is parked and this fails): it was tracked
        // after the collection started, so it is in no collected cycle.
        if (!untrack_newest(heap, meta, op)) [[unlikely]] {
            release_cxx_untracking(op, meta, destroy_and_free);
            return;
        }
    } else if (heap.phase != Phase::idle) [[unlikely]] {
        release_cxx_slow(op, destroy_and_free);
        return;
    }
    destroy_and_free(op);
}

// Defers a deallocation to the outermost one. The object's count is 0, so
// its ob_refcnt field is free to hold the link; untracking it keeps a
// collection that starts meanwhile from seeing it (its tp_dealloc untracks
// it anyway, idempotently). The link is stored complemented, so that the
// count reads below zero meanwhile: a weak reference's getter sees a dead
// object (CPython's trashcan leaves the count at 0), and a Py_DECREF too
// many is reported and undone (dealloc_slow) instead of freeing the object
// while it waits or breaking the list.
void defer_dealloc(Heap &heap, cgc_object *op) {
    // Bit 0 of the link remembers that it was tracked: it is tracked again
    // before its tp_dealloc runs, which may resurrect it (a finalizer).
    uintptr_t was_tracked = 0;
    if (has_gc_head(op) && (meta_of(op).flags & kTracked)) {
        cgc_gc_untrack(op);
        was_tracked = 1;
    }
    op->ob_refcnt = static_cast<cgc_ssize_t>(~(reinterpret_cast<uintptr_t>(heap.deferred_deallocs) | was_tracked));
    heap.deferred_deallocs = op;
}

// A deferred object's link (defer_dealloc): the next one, bit 0 "was tracked".
uintptr_t deferred_link(const cgc_object *op) { return ~static_cast<uintptr_t>(op->ob_refcnt); }
cgc_object *deferred_next(uintptr_t link) { return reinterpret_cast<cgc_object *>(link & ~uintptr_t(1)); }

bool is_deferred(const Heap &heap, const cgc_object *op) {
    for (const cgc_object *next = heap.deferred_deallocs; next; next = deferred_next(deferred_link(next)))
        if (next == op) return true;
    return false;
}

void run_deferred_deallocs(Heap &heap) {
    while (cgc_object *op = heap.deferred_deallocs) {
        uintptr_t link = deferred_link(op);
        heap.deferred_deallocs = deferred_next(link);
        op->ob_refcnt = 0;
        if (link & 1) cgc_gc_track(op);
        heap.dealloc_depth = 1;
        destroy(op);
        heap.dealloc_depth = 0;
    }
}

}  // namespace

[[gnu::noinline]] void *raw_alloc_slow(size_t size, size_t alignment) {
    Heap &heap = current_heap();
    note_gc_allocation(heap);
    if (alignment > 16) {
        report(CGC_ERR_VALUE, "cgc_gc_raw_alloc: alignment %zu is more than 16", alignment);
        return nullptr;
    }
    if (refuse_if_too_large(size, "cgc_gc_raw_alloc", nullptr)) return nullptr;
    void *memory = heap.space.allocate(heap, size);
    if (!memory) report(CGC_ERR_MEMORY, "cgc_gc_raw_alloc: out of memory for %zu bytes", size);
    return memory;
}

// Frees a slot whose object has weak references or is still tracked
// (cgc_gc_del, cgc_gc_raw_free). Weak references die with their referent:
// here, after its finalizer (which may have resurrected it, in which case we
// are not here) and its destructor, as CPython's dealloc clears them;
// callbacks see them dead. (CPython warns in debug builds about a tracked
// object freed.) A slot that is free already is refused: freeing it again
// would put it on its page's free list twice, and two later allocations
// would share it. `op` is the object the caller was given (null: raw
// memory, whose object offset a free slot no longer records).
[[gnu::noinline]] void raw_free_slow(Page *page, uint32_t index, void *memory, cgc_object *op,
                                     const char *function) {
    GcMeta &meta = page->meta[index];
    if (refuse_if_freed(meta, function, memory, op, "not freed again (a second free of it)")) return;
    Heap &heap = *page->heap;
    void *slot = page->slot(index);
    cgc_object *object = object_at_slot(slot, meta);
    if (!owned_here(heap, function, object)) return;
    if (meta.flags & kHeld) {
        // The collector holds a reference while the object's tp_clear or
        // finalizer runs, and drops it afterwards: freed now, that would be
        // a Py_DECREF of freed memory (or of the next object given the slot).
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' freed while cyclegc holds a reference to it "
               "for its tp_clear or finalizer; not freed", function, memory, type_name_of(object));
        return;
    }
    if ((meta.flags & kTracked) && heap.phase == Phase::finding_unreachable) {
        report(CGC_ERR_MISUSE, "%s: tracked object %p of type '%s' freed inside tp_traverse, which must "
               "not change the object graph; not freed", function, memory, type_name_of(object));
        return;
    }
    if (meta.flags & kHasWeakrefs) cgc_clear_weakrefs(object);
    if (meta.flags & kTracked) remove_from_lists(heap, object, meta);
    if (is_weakref(object)) detach_weakref(object);  // freed without its tp_dealloc (which detaches it)
    free_slot(heap, page, index);
}

// A count reached zero inside tp_traverse. Freeing a tracked object there
// would leave the collector a dangling pointer: refused (the object stays,
// with one reference nobody owns). An untracked object is no concern of the
// collector's: freed.
static void dealloc_while_analysing(cgc_object *op) {
    if (has_gc_head(op) && (meta_of(op).flags & kTracked)) {
        report(CGC_ERR_MISUSE,
               "Py_DECREF: the last reference to object %p of type '%s' was dropped inside "
               "tp_traverse, which must not change the object graph; the object is not freed",
               static_cast<void *>(op), type_name_of(op));
        op->ob_refcnt = 1;
        return;
    }
    destroy(op);
}

[[gnu::noinline]] void dealloc_slow(cgc_object *op) {
    if (op->ob_refcnt < 0) {
        // The decrement is undone: a freed object's count stays 0 (each
        // Py_DECREF too many reads -1), a deferred one's link stays whole.
        cgc_ssize_t count = op->ob_refcnt++;
        Heap *heap = t_current_heap;
        if (heap && op->ob_refcnt < 0 && is_deferred(*heap, op))
            report(CGC_ERR_CORRUPTION,
                   "Py_DECREF: object %p of type '%s' is being deallocated (deferred: deallocations "
                   "nest too deep), but a reference to it was dropped: a Py_DECREF without a "
                   "matching Py_INCREF; ignored", static_cast<void *>(op), type_name_of(op));
        else
            report(CGC_ERR_CORRUPTION,
                   "Py_DECREF: the reference count of object %p of type '%s' fell below zero (%td): "
                   "a Py_DECREF without a matching Py_INCREF; the object is not freed again",
                   static_cast<void *>(op), type_name_of(op), count);
        return;
    }
    Heap &heap = current_heap();
    if (heap.phase == Phase::finding_unreachable) {
        // (The collector sets dealloc_depth to its limit meanwhile, to come here.)
        dealloc_while_analysing(op);
        return;
    }
    if (heap.dealloc_depth >= kMaxDeallocDepth) {
        defer_dealloc(heap, op);
        return;
    }
    ++heap.dealloc_depth;
    destroy(op);
    --heap.dealloc_depth;
    if (heap.dealloc_depth == 0 && heap.deferred_deallocs) run_deferred_deallocs(heap);
}

void ObjectArray::grow(size_t needed) {
    note_internal_allocation(current_heap());
    size_t capacity = capacity_ ? capacity_ * 2 : first_capacity_;
    while (capacity < needed) capacity *= 2;
    auto *items = static_cast<cgc_object **>(std::realloc(items_, capacity * sizeof *items_));
    if (!items) throw std::bad_alloc();
    items_ = items;
    capacity_ = capacity;
}

namespace {

// The Python 2.0 API handled GC objects through their header pointer
// (PyObject_DEL(PyObject_AS_GC(op)), PyObject_FREE, PyObject_REALLOC): a
// pointer into a GC page is either an object's GcMeta or inside its slot.
struct GcPointer {
    cgc_object *object = nullptr;  // nullptr: not in a GC page (plain memory)
    bool is_head = false;          // the pointer is the object's GcMeta
};

GcPointer resolve_gc_pointer(void *memory) {
    if (!memory) return {};
    // A plain malloc block never lies in the arena's reservations.
    if (!g_arena->contains(memory)) return {};
    Page *page = page_of(memory);
    auto *meta = static_cast<GcMeta *>(memory);
    if (meta >= page->meta && meta < page->meta + page->slot_count)
        return {page->object_at(static_cast<uint32_t>(meta - page->meta)), true};
    return {page->object_at(page->index_of(memory)), false};
}

}  // namespace

// Frees the object a GC pointer designates (see GcPointer). Returns false for
// any other pointer (which the caller frees as plain memory).
bool free_gc_pointer(void *memory) {
    GcPointer gc = resolve_gc_pointer(memory);
    if (gc.object) cgc_gc_del(gc.object);
    return gc.object != nullptr;
}

namespace {

// Whether a young object placed in a full array goes unlisted instead of
// growing it (Heap::young_unlisted). Asked when the array must grow, so the
// count of the heap's objects (a pass over its pages) is rare.
bool unlist_young(Heap &heap, int generation) {
    size_t listed = heap.young[generation].size();
    if (listed < heap.young_list_cap) return false;
    return heap.young_unlisted[generation] > 0 || heap.unlist_whatever_the_heap ||
           2 * listed >= heap.space.live_objects();
}

}  // namespace

void place_in_generation(Heap &heap, cgc_object *op, GcMeta &meta, int generation) {
    meta.generation = static_cast<uint8_t>(generation);
    if (generation >= 2) {  // the old generation is implicit: found by walking pages
        meta.word = 0;      // full collections count references up from 0
        return;
    }
    auto &list = heap.young[generation];
    if (list.size() == list.capacity() && unlist_young(heap, generation)) {
        meta.word = kUnlisted;
        ++heap.young_unlisted[generation];
        return;
    }
    try {
        list.push_back(op);
    } catch (...) {
        // No memory for the young list: the object joins the old generation,
        // which needs no list (it is still collected, by full collections).
        meta.generation = 2;
        meta.word = 0;
        return;
    }
    meta.word = static_cast<uint32_t>(list.size() - 1);
}

void remove_from_lists(Heap &heap, cgc_object *op, GcMeta &meta) {
    if (meta.schedule & kIncrListed) forget_listed(heap, op, meta.word);
    meta.schedule = static_cast<uint8_t>(meta.schedule & kPromotedPending);
    auto take_out = [&](std::vector<cgc_object *> &list) {
        if (meta.word < list.size() && list[meta.word] == op) list[meta.word] = nullptr;
    };
    if (meta.flags & kCollecting) {
        take_out(heap.unreachable);
    } else if (meta.flags & kUncollectable) {
        take_out(heap.uncollectable);
    } else if (meta.generation < 2 && meta.word == kUnlisted) {
        size_t &unlisted = heap.young_unlisted[meta.generation];
        if (unlisted > 0) --unlisted;
    } else if (meta.generation < 2) {
        auto &list = heap.young[meta.generation];
        size_t index = meta.word;
        if (index < list.size() && list[index] == op) {  // (not during a full collection's analysis)
            if (index + 1 != list.size()) {  // else: the newest, the common case
                cgc_object *last = list.back();
                list[index] = last;
                meta_of(last).word = static_cast<uint32_t>(index);
            }
            list.pop_back();
        }
    }
    meta.flags = static_cast<uint8_t>(meta.flags & ~(kTracked | kCollecting | kReachable | kUncollectable));
}

void note_gc_allocation(Heap &heap) {
    Generation &young = heap.generations[0];
    young.count++;
    // (Disabled, or a threshold of 0: generation 0's threshold is none.)
    if (young.count <= young.threshold || heap.collecting()) return;
    if (heap.auto_mode == CGC_AUTO_AT_SAFEPOINT || heap.dealloc_depth > 0) {
        // Inside a deallocation objects may be half-destroyed: collect later.
        heap.collection_due = true;
        return;
    }
    collect_automatic(heap);
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

void cgc_dealloc(cgc_object *op) {
    // The common case: a count that reached exactly zero, not deep in a
    // chain of deallocations.
    Heap *heap = t_current_heap;
    if (op->ob_refcnt == 0 && heap && heap->dealloc_depth < kMaxDeallocDepth) {
        ++heap->dealloc_depth;
        if (cgc_destructor destroy_cxx = op->ob_type->tp_cxx_destroy)
            release_cxx(op, destroy_cxx);
        else
            destroy(op);
        if (--heap->dealloc_depth == 0 && heap->deferred_deallocs) run_deferred_deallocs(*heap);
        return;
    }
    dealloc_slow(op);
}

cgc_object *cgc_object_new(cgc_type *type) { return allocate_object(type, 0, "cgc_object_new (PyObject_New)"); }

cgc_object *cgc_object_new_var(cgc_type *type, cgc_ssize_t nitems) {
    return allocate_object(type, nitems, "cgc_object_new_var (PyObject_NewVar)");
}

void cgc_object_del(void *memory) {
    if (!memory) return;
    if (free_gc_pointer(memory)) return;
    auto *op = static_cast<cgc_object *>(memory);
    if (op->ob_type && has_gc_head(op))
        cgc_gc_del(op);
    else
        std::free(op);
}

namespace {

// The allocation fast path's page for `size` bytes: a page with room, when
// no collection is due; the allocation is counted (the caller takes a slot
// of it at once). No call, so the callers save no registers. Null: take the
// general path.
[[gnu::always_inline]] inline Page *fast_page(Heap &heap, size_t size) {
    Page *page = heap.space.page_with_room(size);
    Generation &young = heap.generations[0];
    if (!page || young.count >= young.threshold) return nullptr;
    young.count++;
    return page;
}

// PyObject_GC_New and PyObject_GC_NewVar in the common case: a ready GC
// type, a small object, fast_page. Null: take the general path.
[[gnu::always_inline]] inline cgc_object *try_new_gc(cgc_type *type, cgc_ssize_t nitems) {
    constexpr unsigned long kReadyGc = CGC_TPFLAGS_READY | CGC_TPFLAGS_HAVE_GC;
    Heap *heap = t_current_heap;
    if (!heap || !type || (type->tp_flags & kReadyGc) != kReadyGc) return nullptr;
    // (Below the small limit nothing overflows; a tp_basicsize below
    // sizeof(cgc_object) gets the smallest class, which holds one; a
    // negative size or count is not small.)
    auto size = static_cast<size_t>(type->tp_basicsize);
    if (nitems != 0) {  // (PyObject_GC_New: known at compile time)
        if (static_cast<size_t>(nitems) > 512 || static_cast<size_t>(type->tp_itemsize) > 512) return nullptr;
        size += static_cast<size_t>(nitems) * static_cast<size_t>(type->tp_itemsize);
    }
    Page *page = fast_page(*heap, size);
    if (!page) return nullptr;
    auto *op = static_cast<cgc_object *>(heap->space.take_slot<true>(page).memory);
    op->ob_refcnt = 1;
    op->ob_type = type;
    if (nitems != 0 && type->tp_itemsize != 0) reinterpret_cast<cgc_var_object *>(op)->ob_size = nitems;  // (else 0: zeroed)
    if (type->tp_flags & CGC_TPFLAGS_HEAPTYPE) cgc_incref(reinterpret_cast<cgc_object *>(type));
    return op;
}

}  // namespace

cgc_object *cgc_gc_new(cgc_type *type) {
    if (cgc_object *op = try_new_gc(type, 0)) return op;
    return allocate_gc(type, 0, "cgc_gc_new (PyObject_GC_New)");
}

cgc_object *cgc_gc_new_var(cgc_type *type, cgc_ssize_t nitems) {
    if (cgc_object *op = try_new_gc(type, nitems)) return op;
    return allocate_gc(type, nitems, "cgc_gc_new_var (PyObject_GC_NewVar)");
}

cgc_var_object *cgc_gc_resize(cgc_var_object *op, cgc_ssize_t nitems) {
    const char *function = "cgc_gc_resize (PyObject_GC_Resize)";
    if (!op) {
        report(CGC_ERR_MISUSE, "%s: the object is NULL", function);
        return nullptr;
    }
    cgc_type *type = op->ob_base.ob_type;
    if (!has_gc_head(&op->ob_base)) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is not a GC object", function,
               static_cast<void *>(op), type_name(type));
        return nullptr;
    }
    GcMeta &meta = meta_of(op);
    if (refuse_if_freed(meta, function, op, &op->ob_base, "it cannot be resized")) return nullptr;
    if (type->tp_itemsize == 0) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is of a fixed-size type (tp_itemsize is 0): "
               "it has no ob_size to resize", function, static_cast<void *>(op), type_name(type));
        return nullptr;
    }
    if (meta.flags & kTracked) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is tracked; resize it before "
               "PyObject_GC_Track", function, static_cast<void *>(op), type_name(type));
        return nullptr;
    }
    cgc_ssize_t size = object_size(type, nitems, function);
    if (size < 0) return nullptr;
    size_t capacity = PageSpace::capacity(op) - meta.object_offset;
    if (static_cast<size_t>(size) <= capacity) {
        op->ob_size = nitems;
        return op;
    }
    if (refuse_if_too_large(static_cast<size_t>(size), function, type)) return nullptr;
    Heap &heap = heap_of(&op->ob_base);
    auto *moved = static_cast<cgc_var_object *>(heap.space.allocate(heap, static_cast<size_t>(size)));
    if (!moved) {
        report(CGC_ERR_MEMORY, "%s: out of memory for %td items of type '%s'", function, nitems,
               type_name(type));
        return nullptr;
    }
    std::memcpy(static_cast<void *>(moved), static_cast<void *>(op), capacity);
    GcMeta &moved_meta = meta_of(moved);
    moved_meta.flags = static_cast<uint8_t>(moved_meta.flags | (meta.flags & (kFinalized | kHasWeakrefs)));
    if (meta.flags & kHasWeakrefs) move_weakrefs(heap, &op->ob_base, &moved->ob_base);
    heap.space.release(op);
    moved->ob_size = nitems;
    return moved;
}

void cgc_gc_del(void *memory) {
    if (!memory) return;
    auto *op = static_cast<cgc_object *>(memory);
    Page *page = page_of(op);
    uint32_t index = page->index_of(op);  // (the object lies within its slot)
    // (An object of another heap than the thread's current one: the slow
    // path checks that the thread owns it.)
    if (!is_plain_allocated(page->meta[index]) || page->heap != t_current_heap) [[unlikely]] {
        raw_free_slow(page, index, op, op, "cgc_gc_del (PyObject_GC_Del)");
        return;
    }
    free_slot(*page->heap, page, index);
}

void cgc_gc_track(void *memory) {
    auto *op = static_cast<cgc_object *>(memory);
    // (An object outside the first reservation takes the slow path, which
    // refuses one that no GC page holds before reading its GcMeta.)
    if (g_arena->in_first_reservation(op) && (op->ob_type->tp_flags & CGC_TPFLAGS_HAVE_GC) &&
        !op->ob_type->tp_is_gc) {
        Page *page = page_of(op);
        if (track_fast(page, page->meta[page->index_of(op)], op)) return;
    }
    track_slow(op);
}

}  // extern "C"

namespace cyclegc::internal {

[[gnu::noinline]] void track_slow(cgc_object *op) {
    void *memory = op;
    const char *function = "cgc_gc_track (PyObject_GC_Track)";
    if (!op) {
        report(CGC_ERR_MISUSE, "%s: the object is NULL", function);
        return;
    }
    if (!has_gc_head(op)) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is not a GC object (its type lacks "
               "Py_TPFLAGS_HAVE_GC); it cannot be tracked", function, memory, type_name_of(op));
        return;
    }
    if (!g_arena->contains(op)) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is not an object of this heap (cyclegc did "
               "not allocate it: a GC object comes from PyObject_GC_New); it cannot be tracked",
               function, memory, type_name_of(op));
        return;
    }
    GcMeta &meta = meta_of(op);
    if (refuse_if_freed(meta, function, memory, op, "it cannot be tracked")) return;
    if (!owned_here(heap_of(op), function, op)) return;
    if (meta.flags & kTracked) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is already tracked", function, memory,
               type_name_of(op));
        return;
    }
    Heap &heap = heap_of(op);
    if (heap.phase == Phase::finding_unreachable) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' tracked from inside tp_traverse, "
               "which must not change the object graph; not tracked", function, memory,
               type_name_of(op));
        return;
    }
    meta.flags = static_cast<uint8_t>((meta.flags & ~(kCollecting | kReachable)) | kTracked);
    place_in_generation(heap, op, meta, 0);
}

}  // namespace cyclegc::internal

extern "C" {

void cgc_gc_untrack(void *memory) {
    auto *op = static_cast<cgc_object *>(memory);
    if (!op) return;
    if ((op->ob_type->tp_flags & CGC_TPFLAGS_HAVE_GC) && !op->ob_type->tp_is_gc) {
        Page *page = page_of(op);
        GcMeta &meta = page->meta[page->index_of(op)];
        if (!(meta.flags & kTracked)) return;
        Heap &heap = *page->heap;
        // (Another heap than the thread's current one: the slow path checks
        // that the thread owns it.)
        if (&heap == t_current_heap) {
            if (untrack_newest(heap, meta, op)) return;
            if (heap.phase != Phase::finding_unreachable) {  // (else misuse: the slow path reports it)
                untrack_not_newest(heap, meta, op);
                return;
            }
        }
    }
    untrack_slow(op);
}

}  // extern "C"

namespace cyclegc::internal {

[[gnu::noinline]] void untrack_slow(cgc_object *op) {
    void *memory = op;
    if (!has_gc_head(op)) {
        report(CGC_ERR_MISUSE, "cgc_gc_untrack (PyObject_GC_UnTrack): object %p of type '%s' is "
               "not a GC object", memory, type_name_of(op));
        return;
    }
    GcMeta &meta = meta_of(op);
    if (!(meta.flags & kTracked)) return;
    Heap &heap = heap_of(op);
    if (!owned_here(heap, "cgc_gc_untrack (PyObject_GC_UnTrack)", op)) return;
    if (heap.phase == Phase::finding_unreachable) {
        report(CGC_ERR_MISUSE, "cgc_gc_untrack (PyObject_GC_UnTrack): object %p of type '%s' "
               "untracked from inside tp_traverse, which must not change the object graph; "
               "ignored", memory, type_name_of(op));
        return;
    }
    remove_from_lists(heap, op, meta);
}

}  // namespace cyclegc::internal

extern "C" {

int cgc_gc_untrack_dying(cgc_object *op) {
    cgc_gc_untrack(op);
    return heap_of(op).collecting();
}

int cgc_is_gc(cgc_object *op) { return op && has_gc_head(op); }

int cgc_gc_is_tracked(cgc_object *op) { return op && has_gc_head(op) && (meta_of(op).flags & kTracked); }

int cgc_gc_is_finalized(cgc_object *op) {
    return op && has_gc_head(op) && (meta_of(op).flags & kFinalized);
}

cgc_raw_slot cgc_gc_raw_alloc_slot(size_t size, size_t alignment) {
    Heap *heap = t_current_heap;
    if (heap && alignment <= 16) {
        if (Page *page = fast_page(*heap, size)) {
            SlotRef slot = heap->space.take_slot<false>(page);
            return {slot.memory, slot.meta};
        }
    }
    void *memory = raw_alloc_slow(size, alignment);
    return {memory, memory ? static_cast<void *>(&meta_of(memory)) : nullptr};
}

void *cgc_gc_raw_alloc(size_t size, size_t alignment) { return cgc_gc_raw_alloc_slot(size, alignment).memory; }

void cgc_gc_raw_bind_slot(cgc_raw_slot slot, cgc_object *op, int track) {
    auto &meta = *static_cast<GcMeta *>(slot.gc_meta);
    auto offset = static_cast<uint64_t>(reinterpret_cast<char *>(op) - static_cast<char *>(slot.memory));
    uint64_t bits = (meta_bits(meta) & ~kMetaObjectOffsetBits) | offset << 48;
    // The offset and the tracking in one store (see track_fast).
    bool tracked = track && try_track(*page_of(slot.memory)->heap, bits, op);
    set_meta_bits(meta, bits);
    if (track && !tracked) track_slow(op);
}

void cgc_gc_raw_bind(void *memory, cgc_object *op, int track) {
    cgc_gc_raw_bind_slot({memory, &meta_of(memory)}, op, track);
}

cgc_gc_head *cgc_gc_head_of(cgc_object *op) {
    if (!op || !has_gc_head(op)) {
        report(CGC_ERR_MISUSE, "cgc_gc_head_of (PyObject_AS_GC): %s is not a GC object",
               op ? type_name_of(op) : "NULL");
        return nullptr;
    }
    return reinterpret_cast<cgc_gc_head *>(&meta_of(op));
}

cgc_object *cgc_object_of_gc_head(cgc_gc_head *head) {
    if (!head) return nullptr;
    auto *meta = reinterpret_cast<GcMeta *>(head);
    Page *page = page_of(meta);
    uint32_t index = static_cast<uint32_t>(meta - page->meta);
    return page->object_at(index);
}

void cgc_gc_raw_free(void *memory) {
    if (!memory) return;
    Page *page = page_of(memory);
    uint32_t index = page->index_of(memory);
    if (!is_plain_allocated(page->meta[index]))
        raw_free_slow(page, index, memory, nullptr, "cgc_gc_raw_free");
    else  // the common case
        free_slot(*page->heap, page, index);
}

void *cgc_malloc(size_t size) { return std::malloc(size ? size : 1); }
void *cgc_calloc(size_t count, size_t size) { return std::calloc(count ? count : 1, size ? size : 1); }
void *cgc_realloc(void *memory, size_t size) { return std::realloc(memory, size ? size : 1); }
void cgc_free(void *memory) {
    if (!free_gc_pointer(memory)) std::free(memory);
}

// Python 2.0's PyObject_REALLOC (spec 004): "for objects participating in
// GC, these macros deal with PyGC_Head pointers". 2.0 resized a container
// (untracked by PyObject_GC_Fini) with
//     g = PyObject_REALLOC(PyObject_AS_GC(op), object_size + PyGC_HEAD_SIZE);
//     op = PyObject_FROM_GC(g);
// Here the header is not in front of the object, so a pointer to a GC
// object's metadata (or to the object itself, then `size` counts the object
// only) resizes the object: a variable-size object to room for enough items
// (its ob_size is left as it was: the caller sets it), a fixed-size one only
// within its tp_basicsize. Any other pointer is plain memory (cgc_realloc).
void *cgc_object_realloc(void *memory, size_t size) {
    const char *function = "cgc_object_realloc (PyObject_REALLOC)";
    GcPointer gc = resolve_gc_pointer(memory);
    if (!gc.object) return cgc_realloc(memory, size);
    cgc_object *op = gc.object;
    bool is_head = gc.is_head;
    if (!is_head && static_cast<void *>(op) != memory) {
        report(CGC_ERR_MISUSE, "%s: %p points inside object %p of type '%s', not to it or to its "
               "collector header", function, memory, static_cast<void *>(op), type_name_of(op));
        return nullptr;
    }
    if (refuse_if_freed(meta_of(op), function, op, op, "it cannot be reallocated")) return nullptr;
    if (cgc_gc_is_tracked(op)) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is tracked; untrack it (PyObject_GC_Fini) "
               "before resizing it", function, static_cast<void *>(op), type_name_of(op));
        return nullptr;
    }
    auto head_size = static_cast<size_t>(CGC_GC_HEAD_SIZE);
    size_t object_bytes = !is_head ? size : size > head_size ? size - head_size : 0;
    cgc_type *type = op->ob_type;
    cgc_object *resized = op;
    if (type->tp_itemsize > 0) {
        auto basic = static_cast<size_t>(type->tp_basicsize);
        auto item = static_cast<size_t>(type->tp_itemsize);
        size_t items = object_bytes > basic ? (object_bytes - basic + item - 1) / item : 0;
        if (items > static_cast<size_t>(PTRDIFF_MAX) / item) {
            report(CGC_ERR_MEMORY, "%s: %zu bytes for an object of type '%s' is too large", function,
                   size, type_name(type));
            return nullptr;
        }
        auto *var = reinterpret_cast<cgc_var_object *>(op);
        cgc_ssize_t ob_size = var->ob_size;
        cgc_var_object *moved = cgc_gc_resize(var, static_cast<cgc_ssize_t>(items));
        if (!moved) return nullptr;
        moved->ob_size = ob_size;
        resized = &moved->ob_base;
    } else if (object_bytes > static_cast<size_t>(type->tp_basicsize)) {
        report(CGC_ERR_VALUE, "%s: object %p of type '%s' has a fixed size (tp_basicsize %td, "
               "tp_itemsize 0) and cannot grow to %zu bytes", function, static_cast<void *>(op),
               type_name(type), type->tp_basicsize, object_bytes);
        return nullptr;
    }
    return is_head ? static_cast<void *>(cgc_gc_head_of(resized)) : static_cast<void *>(resized);
}

int cgc_call_finalizer_from_dealloc(cgc_object *self) {
    cgc_destructor finalize = self->ob_type->tp_finalize;
    if (!finalize) return 0;
    if (self->ob_refcnt != 0) {
        report(CGC_ERR_MISUSE, "cgc_call_finalizer_from_dealloc (PyObject_CallFinalizerFromDealloc): "
               "object %p of type '%s' has reference count %td, expected 0", static_cast<void *>(self),
               type_name_of(self), self->ob_refcnt);
        return 0;
    }
    GcMeta *meta = has_gc_head(self) ? &meta_of(self) : nullptr;
    if (meta && refuse_if_freed(*meta, "cgc_call_finalizer_from_dealloc (PyObject_CallFinalizerFromDealloc)",
                                self, self, "its finalizer does not run"))
        return -1;  // (the dealloc must stop: nothing is left to destroy)
    if (meta && (meta->flags & kFinalized)) return 0;
    std::vector<cgc_object *> *running = nullptr;  // (objects without a GcMeta)
    if (!meta) {
        running = &current_heap().finalizing_without_header;
        if (std::find(running->begin(), running->end(), self) != running->end()) {
            // Its finalizer, running further up, dropped the temporary
            // reference below: undone, and this deallocation stops.
            report(CGC_ERR_CORRUPTION,
                   "cgc_call_finalizer_from_dealloc (PyObject_CallFinalizerFromDealloc): object %p of "
                   "type '%s' lost its last reference inside its own finalizer: a Py_DECREF too many; "
                   "not deallocated now", static_cast<void *>(self), type_name_of(self));
            self->ob_refcnt = 1;
            return -1;
        }
        try {
            running->push_back(self);
        } catch (...) {
            running = nullptr;  // no memory to watch it: unwatched, as in CPython
        }
    }
    self->ob_refcnt = 1;  // a temporary reference, so the finalizer can use the object
    // The finalized flag is set after the finalizer, as CPython's
    // PyObject_CallFinalizer does (PyObject_GC_IsFinalized is 0 inside it).
    // It cannot run twice meanwhile: no collection takes the object (the
    // temporary reference is external), and a Py_DECREF too many inside it
    // is refused (kHeld, or the list above) instead of deallocating, and
    // finalizing, again.
    bool nested = meta && hold(*meta);
    call_user_code("tp_finalize", self, [&] { finalize(self); });
    if (meta) {
        meta->flags |= kFinalized;
        let_go(*meta, nested);
    }
    if (running) running->erase(std::find(running->begin(), running->end(), self));
    if (--self->ob_refcnt != 0) return -1;  // resurrected: the dealloc must stop
    if (meta && (meta->flags & kHasWeakrefs)) {
        // Dying for good: weak references (some perhaps made by the
        // finalizer) die now. Callbacks must not see the object, so it is
        // kept at count 0 meanwhile.
        cgc_clear_weakrefs(self);
    }
    return 0;
}

void cgc_default_dealloc(cgc_object *self) {
    cgc_type *type = self->ob_type;
    bool gc = has_gc_head(self);
    if (gc) cgc_gc_untrack(self);
    if (type->tp_finalize) {
        // Tracked while the finalizer runs, so that a resurrected object
        // stays visible to the collector.
        if (gc) cgc_gc_track(self);
        if (cgc_call_finalizer_from_dealloc(self) < 0) return;
        if (gc) cgc_gc_untrack(self);
    }
    // Beyond CPython: drop the references the type knows how to drop, so a
    // type with tp_clear but no tp_dealloc does not leak its referents.
    if (type->tp_clear) type->tp_clear(self);
    cgc_freefunc free_function = type->tp_free ? type->tp_free : (gc ? cgc_gc_del : cgc_object_del);
    free_function(self);
    if (type->tp_flags & CGC_TPFLAGS_HEAPTYPE) cgc_decref(reinterpret_cast<cgc_object *>(type));
}

}  // extern "C"
