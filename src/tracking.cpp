// Tracking: PyObject_GC_Track and PyObject_GC_UnTrack (with their slow
// paths), and the young generations' arrays a tracked object is placed in and
// removed from.
#include "arena.hpp"
#include "heap.hpp"
#include "object_checks.hpp"

#include <atomic>
#include <cstdlib>

namespace cyclegc::internal {

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

// Whether a young object placed in a full array goes unlisted instead of
// growing it (Heap::young_unlisted). Asked when the array must grow, so the
// count of the heap's objects (a pass over its pages) is rare; never below
// what generation 0 gathers between two collections (young_capacity_kept).
bool unlist_young(Heap &heap, int generation) {
    size_t listed = heap.young[generation].size();
    if (listed < heap.young_capacity_kept()) return false;
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
    // A shared heap's object promoted in a page lent to a thread stays out
    // of the lists, so that its thread untracks it without the state lock
    // (untrack_own); a collection of generation 1 walks the pages for it.
    bool lent = generation == 1 && heap.is_shared() && page_heap(page_of(op)) != &heap;
    if (lent || (list.size() == list.capacity() && unlist_young(heap, generation))) {
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

[[gnu::noinline]] void remove_from_lists(Heap &heap, cgc_object *op, GcMeta &meta) {
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
                // (Atomic: see meta_bits.)
                __atomic_store_n(&meta_of(last).word, static_cast<uint32_t>(index), __ATOMIC_RELAXED);
            }
            list.pop_back();
        }
    }
    meta.flags = static_cast<uint8_t>(meta.flags & ~(kTracked | kCollecting | kReachable | kUncollectable));
}

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
    if (heap_of(op).shared && unattached_use(heap_of(op), function, op)) return;
    StateLock guard(heap_of(op));
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

[[gnu::noinline]] void untrack_slow(cgc_object *op) {
    void *memory = op;
    if (!has_gc_head(op)) {
        report(CGC_ERR_MISUSE, "cgc_gc_untrack (PyObject_GC_UnTrack): object %p of type '%s' is "
               "not a GC object", memory, type_name_of(op));
        return;
    }
    GcMeta &meta = meta_of(op);
    Heap &heap = heap_of(op);
    if (heap.shared && unattached_use(heap, "cgc_gc_untrack (PyObject_GC_UnTrack)", op)) return;
    StateLock guard(heap);
    if (!(meta.flags & kTracked)) return;
    if (!owned_here(heap, "cgc_gc_untrack (PyObject_GC_UnTrack)", op)) return;
    if (heap.phase == Phase::finding_unreachable) {
        report(CGC_ERR_MISUSE, "cgc_gc_untrack (PyObject_GC_UnTrack): object %p of type '%s' "
               "untracked from inside tp_traverse, which must not change the object graph; "
               "ignored", memory, type_name_of(op));
        return;
    }
    remove_from_lists(heap, op, meta);
}

namespace {

// cgc_gc_untrack of a tracked object outside the thread's current heap: in
// a page lent to a thread while this one stops the world (the shared heap's
// lists hold it: take_back), untracked there without the lock; else the
// slow path, which checks that the thread owns the heap.
[[gnu::noinline]] void untrack_other(Page *page, GcMeta &meta, cgc_object *op) {
    Heap *user = page_heap(page);
    Heap &heap = *user->home;
    if (!lent_while_stopped(user, t_current_heap) || heap.phase == Phase::finding_unreachable) {
        untrack_slow(op);
        return;
    }
    untrack_tracked(heap, meta, op);
}

}  // namespace

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

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

void cgc_gc_untrack(void *memory) {
    auto *op = static_cast<cgc_object *>(memory);
    if (!op) return;
    if ((op->ob_type->tp_flags & CGC_TPFLAGS_HAVE_GC) && !op->ob_type->tp_is_gc) {
        Page *page = page_of(op);
        GcMeta &meta = page->meta[page->index_of(op)];
        if (!(meta.flags & kTracked)) return;
        Heap &heap = *page_heap(page);
        if (&heap != t_current_heap) [[unlikely]] {
            // (Another heap than the thread's current one: inline, a page
            // lent to a thread while this one stops the world, a
            // collection's clearing; else untrack_other.)
            // (t_current_heap read again, relaxed-atomic: kept in a register
            // from the test above, it costs the common path an instruction.)
            Heap &home = *heap.home;
            if (&home == std::atomic_ref(t_current_heap).load(std::memory_order_relaxed) &&
                home.phase == Phase::clearing)
                return untrack_tracked(home, meta, op);
            return untrack_other(page, meta, op);
        }
        if (untrack_newest(heap, meta, op)) return;
        if (heap.phase != Phase::finding_unreachable) {  // (else misuse: the slow path reports it)
            // (A local heap's own objects only: the rest are the shared heap's.)
            if (!heap.is_local()) {
                untrack_not_newest(heap, meta, op);
                return;
            }
            if (untrack_own(heap, meta)) return;
        }
    }
    untrack_slow(op);
}

int cgc_gc_untrack_dying(cgc_object *op) {
    cgc_gc_untrack(op);
    return heap_of(op).collecting();
}

int cgc_is_gc(cgc_object *op) { return op && has_gc_head(op); }

int cgc_gc_is_tracked(cgc_object *op) { return op && has_gc_head(op) && (meta_of(op).flags & kTracked); }

int cgc_gc_is_finalized(cgc_object *op) {
    return op && has_gc_head(op) && (meta_of(op).flags & kFinalized);
}

}  // extern "C"
