// Deallocation: Py_DECREF's slow path and what runs at count zero (the C API's
// deallocators and the C++ API's release), finalizers called from a
// deallocator, and the trashcan: deallocations nest to a bounded depth, deeper
// ones are deferred to the outermost.
#include "heap.hpp"
#include "object_checks.hpp"
#include "shared_heap.hpp"

#include <algorithm>

namespace cyclegc::internal {
namespace {

// A refused deallocation keeps the object with one reference nobody owns;
// in a shared heap, every thread then counts it atomically (its word was
// made plain for the deallocation).
void keep_with_one_reference(cgc_object *op) {
    op->ob_refcnt = 1;
    rebias_if_shared(op);
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
        keep_with_one_reference(op);
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
// of any tracked object while a collection analyses the graph). A member of
// the cycle being cleared (most of a collection's deaths) goes as
// release_cxx_slow would take it, without its tests, which release_cxx
// made already (not held, no weak references).
[[gnu::noinline]] void release_cxx_untracking(cgc_object *op, GcMeta &meta, cgc_destructor destroy_and_free) {
    Heap &heap = heap_of(op);
    Phase phase = heap.phase;
    bool cleared_member = phase == Phase::clearing && (meta.flags & kCollecting);
    if (phase != Phase::idle && !cleared_member) {
        release_cxx_slow(op, destroy_and_free);
        return;
    }
    untrack_not_newest(heap, meta, op);
    if (cleared_member) {
        // Its destructor sees its traced references cleared (docs/cpp.md).
        if (cgc_inquiry clear = op->ob_type->tp_clear) clear(op);
    }
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
    Trashcan &trashcan = trashcan_of(heap);
    op->ob_refcnt = static_cast<cgc_ssize_t>(~(reinterpret_cast<uintptr_t>(trashcan.deferred) | was_tracked));
    trashcan.deferred = op;
}

// A deferred object's link (defer_dealloc): the next one, bit 0 "was tracked".
uintptr_t deferred_link(const cgc_object *op) { return ~static_cast<uintptr_t>(op->ob_refcnt); }
cgc_object *deferred_next(uintptr_t link) { return reinterpret_cast<cgc_object *>(link & ~uintptr_t(1)); }

bool is_deferred(Heap &heap, const cgc_object *op) {
    for (const cgc_object *next = trashcan_of(heap).deferred; next; next = deferred_next(deferred_link(next)))
        if (next == op) return true;
    return false;
}


// Runs an untracked C++ object's destructor and frees it (in dealloc_shared,
// which counted it in the trashcan's depth). While every deallocation it
// is inside destroys an untracked object too, no object of the thread is
// tracked at count 0: a stop asked meanwhile (the local heap's threshold
// poked to 0) parks the thread here, where freeing a large tree would
// otherwise hold the stop up until its end.
void destroy_untracked(cgc_object *op, Heap &local, cgc_destructor destroy_and_free) {
    Trashcan &trashcan = t_shared_trashcan;
    if (trashcan.untracked + 1 == trashcan.depth &&
        std::atomic_ref(local.generations[0].threshold).load(std::memory_order_relaxed) == 0) [[unlikely]] {
        Heap &shared = *local.home;
        if (shared.shared->stop_requested.load(std::memory_order_relaxed)) park_in_release(shared);
    }
    ++trashcan.untracked;
    destroy_and_free(op);
    --trashcan.untracked;
}

// release_cxx for a C++ object of the calling thread's shared heap, in a
// page lent to the thread (its local heap `local`) or in the shared heap's
// own pages (most often a collection's survivor): false (nothing done) for
// any other, or while a collection runs. Untracked first, its destructor a
// park point (destroy_untracked).
// (Out of line: the C API's deaths in dealloc_shared_other pass it by.)
[[gnu::noinline]] bool release_shared_cxx(cgc_object *op, Heap &local, cgc_destructor destroy_and_free) {
    Page *page = page_of(op);
    GcMeta &meta = page->meta[page->index_of(op)];
    Heap *heap = page_heap(page);
    // (Flags read only in a page of this thread or of the shared heap: in a
    // page lent to another thread, its owner writes them unlocked.)
    if ((heap != &local && heap != local.home) || (meta.flags & (kHeld | kHasWeakrefs))) return false;
    if (heap != &local || ((meta.flags & kTracked) && !untrack_own(local, meta))) {
        // In the shared heap's pages, or listed in its lists (a stop took
        // it back and collected nothing, an incremental cycle): untracked
        // under the state lock, so that its destructor may park too.
        Heap &home = *local.home;
        StateLock guard(home);
        if (home.collecting()) return false;
        if (meta.flags & kTracked) untrack_tracked(home, meta, op);
    }
    destroy_untracked(op, local, destroy_and_free);
    return true;
}

// The shared trashcan's deferred deallocations (deallocations nested too
// deep). Between two of them no deallocation runs and every deferred object
// is untracked: a stop asked meanwhile parks the thread there. A C++ object
// goes as release_shared_cxx takes it (its destructors park too; it has no
// finalizer to resurrect it, so it is not tracked again first).
void run_shared_deferred_deallocs(Trashcan &trashcan) {
    while (cgc_object *op = trashcan.deferred) {
        if (Heap *shared = t_attached_heap) safepoint(*shared);
        uintptr_t link = deferred_link(op);
        trashcan.deferred = deferred_next(link);
        op->ob_refcnt = 0;
        trashcan.depth = 1;
        Heap *local = t_current_heap;
        cgc_destructor destroy_cxx = op->ob_type->tp_cxx_destroy;
        if (!destroy_cxx || !local || !local->is_local() || !release_shared_cxx(op, *local, destroy_cxx)) {
            if (link & 1) cgc_gc_track(op);
            destroy(op);
        }
        trashcan.depth = 0;
    }
}

// Runs `deallocate` inside the thread's trashcan (a shared heap's).
template <class Deallocate>
void in_shared_trashcan(Deallocate deallocate) {
    Trashcan &trashcan = t_shared_trashcan;
    ++trashcan.depth;
    deallocate();
    if (--trashcan.depth == 0 && trashcan.deferred) run_shared_deferred_deallocs(trashcan);
}

[[gnu::noinline]] void dealloc_shared_other(cgc_object *op, Heap &local, cgc_destructor destroy_cxx) {
    in_shared_trashcan([&] {
        if (!destroy_cxx || !release_shared_cxx(op, local, destroy_cxx)) destroy(op);
    });
}

}  // namespace

// (Out of line, so that the tests before them save no registers.)
[[gnu::noinline]] void release_lent_cxx(cgc_object *op, Heap &local, cgc_destructor destroy_and_free) {
    in_shared_trashcan([&] { destroy_untracked(op, local, destroy_and_free); });
}

[[gnu::noinline]] void dealloc_lent(cgc_object *op) {
    in_shared_trashcan([&] {
        cgc_destructor dealloc = op->ob_type->tp_dealloc;
        (dealloc ? dealloc : cgc_default_dealloc)(op);
    });
}

// (A thread with a local heap runs while no collection analyses the graph:
// the analysis runs with the world stopped. A collection's member dying
// meanwhile, from a finalizer, takes destroy's general path.)
void dealloc_shared_at(cgc_object *op, Page *page, GcMeta &meta) {
    Heap *local = t_current_heap;
    // (The shared heap made current by a stopped world goes the general way.)
    if (!local || !local->is_local() || t_shared_trashcan.depth >= kMaxDeallocDepth) [[unlikely]]
        return cgc_dealloc(op);
    cgc_destructor destroy_cxx = op->ob_type->tp_cxx_destroy;
    // A C++ object in a page lent to this thread, the common case, tested
    // here with the page and slot known. (The flags of a page lent to
    // another thread are not read: its thread writes them unlocked.)
    if (destroy_cxx && page_heap(page) == local && !(meta.flags & (kHeld | kHasWeakrefs)) &&
        (!(meta.flags & kTracked) || untrack_private(meta))) [[likely]]
        return release_lent_cxx(op, *local, destroy_cxx);
    dealloc_shared_other(op, *local, destroy_cxx);
}

void dealloc_shared(cgc_object *op) {
    Page *page = page_of(op);
    dealloc_shared_at(op, page, page->meta[page->index_of(op)]);
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
        keep_with_one_reference(op);
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
        // (The collector sets the trashcan's depth to its limit meanwhile, to come here.)
        dealloc_while_analysing(op);
        return;
    }
    Trashcan &trashcan = trashcan_of(heap);
    if (trashcan.depth >= kMaxDeallocDepth) {
        defer_dealloc(heap, op);
        return;
    }
    ++trashcan.depth;
    destroy(op);
    --trashcan.depth;
    if (trashcan.depth == 0 && trashcan.deferred) {
        if (heap.shared)
            run_shared_deferred_deallocs(trashcan);
        else
            run_deferred_deallocs(trashcan);
    }
}

void run_deferred_deallocs(Trashcan &trashcan) {
    while (cgc_object *op = trashcan.deferred) {
        uintptr_t link = deferred_link(op);
        trashcan.deferred = deferred_next(link);
        op->ob_refcnt = 0;
        if (link & 1) cgc_gc_track(op);
        trashcan.depth = 1;
        destroy(op);
        trashcan.depth = 0;
    }
}

bool release_cleared_cxx(Heap &heap, cgc_object *op, GcMeta &meta) {
    cgc_destructor destroy_and_free = op->ob_type->tp_cxx_destroy;
    if (!destroy_and_free || op->ob_refcnt != 1 || heap.is_shared() || t_current_heap != &heap ||
        heap.trashcan.depth >= kMaxDeallocDepth || !allocated_without(meta, kHeld | kHasWeakrefs) ||
        !(meta.flags & kTracked))
        return false;
    op->ob_refcnt = 0;
    untrack_not_newest(heap, meta, op);
    destroy_cxx_in_trashcan(heap, op, destroy_and_free);
    return true;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

void cgc_dealloc(cgc_object *op) {
    // The common case: a count that reached exactly zero, not deep in a
    // chain of deallocations.
    Heap *heap = t_current_heap;
    if (op->ob_refcnt == 0 && heap && heap->trashcan.depth < kMaxDeallocDepth) {
        ++heap->trashcan.depth;
        if (cgc_destructor destroy_cxx = op->ob_type->tp_cxx_destroy)
            release_cxx(op, destroy_cxx);
        else
            destroy(op);
        if (--heap->trashcan.depth == 0 && heap->trashcan.deferred) run_deferred_deallocs(heap->trashcan);
        return;
    }
    dealloc_slow(op);
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
    if (--self->ob_refcnt != 0) {  // resurrected: the dealloc must stop
        rebias_if_shared(self);
        return -1;
    }
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
