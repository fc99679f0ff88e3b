// Allocation and freeing of objects: PyObject_New and PyObject_GC_New (with
// their fast path), resizing, the C++ API's raw slots, and PyObject_GC_Del.
#include "heap.hpp"
#include "object_checks.hpp"
#include "shared_heap.hpp"

#include <cstdlib>
#include <cstring>

namespace cyclegc::internal {
namespace {

bool ensure_ready(cgc_type *type, const char *function) {
    if (!type) {
        report(CGC_ERR_MISUSE, "%s: the type is NULL", function);
        return false;
    }
    return type_is_ready(type) || cgc_type_ready(type) == 0;
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
    if (!type || !type_is_ready(type)) {
        if (!ensure_ready(type, function)) return nullptr;
    }
    cgc_ssize_t size = nitems == 0 && type->tp_basicsize >= static_cast<cgc_ssize_t>(sizeof(cgc_object))
                           ? type->tp_basicsize
                           : object_size(type, nitems, function);
    if (size >= 0 && spare_item && type->tp_itemsize) size += type->tp_itemsize;
    if (size < 0) return nullptr;
    Heap &heap = current_heap();
    void *memory;
    if (type->tp_flags & CGC_TPFLAGS_HAVE_GC) {
        if (refuse_if_too_large(static_cast<size_t>(size), function, type)) return nullptr;
        // Counting (and maybe collecting) before the allocation: the new
        // object never takes part in the collection it triggers.
        memory = allocate_counted(heap, static_cast<size_t>(size));
    } else if (heap.is_shared()) [[unlikely]] {
        // A shared heap's objects all live in its pages, which carry their
        // shared counts (cgc_object_del finds them there).
        StateLock guard(heap);
        memory = heap.space.allocate(heap, static_cast<size_t>(size));
    } else {
        memory = std::calloc(1, static_cast<size_t>(size));
    }
    if (!memory) {
        report(CGC_ERR_MEMORY, "%s: out of memory for an object of type '%s'", function, type_name(type));
        return nullptr;
    }
    auto *op = static_cast<cgc_object *>(memory);
    store_word(op, 1);  // (relaxed: a thread exiting may read it, give_up_heap)
    op->ob_type = type;
    if (heap.is_shared()) [[unlikely]] init_shared_object(heap, *heap.shared, op);
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

}  // namespace

[[gnu::noinline]] void *raw_alloc_slow(size_t size, size_t alignment) {
    Heap &heap = current_heap();
    if (alignment > 16) {
        note_gc_allocation(heap);
        report(CGC_ERR_VALUE, "cgc_gc_raw_alloc: alignment %zu is more than 16", alignment);
        return nullptr;
    }
    if (refuse_if_too_large(size, "cgc_gc_raw_alloc", nullptr)) {
        note_gc_allocation(heap);
        return nullptr;
    }
    void *memory = allocate_counted(heap, size);
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
    Heap *user = page_heap(page);
    // (A freed slot first: a page given back reads zeros, its heap null.)
    if (is_plain_allocated(meta) && lent_while_stopped(user, t_current_heap)) {
        // A collection's death in a page lent to a thread, with the world
        // stopped by this one: freed as its thread would (release_slot).
        free_slot(*user, page, index);
        return;
    }
    if (refuse_if_freed(meta, function, memory, op, "not freed again (a second free of it)")) return;
    Heap &heap = *user->home;
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
    if (meta.flags & kHasWeakrefs) cgc_clear_weakrefs(object);  // (callbacks: not under the state lock)
    StateLock guard(heap);
    if (meta.flags & kTracked) remove_from_lists(heap, object, meta);
    if (is_weakref(object)) detach_weakref(object);  // freed without its tp_dealloc (which detaches it)
    release_slot(heap, page, index);
}

namespace {

// Whether an allocation that counts toward generation 0 calls for an
// automatic collection now (else perhaps later: collection_due).
bool count_gc_allocation(Heap &heap) {
    Generation &young = heap.generations[0];
    young.count++;
    // (Disabled, or a threshold of 0: generation 0's threshold is none.)
    if (young.count <= young.threshold || heap.collecting()) return false;
    if (heap.shared && young_count_with_locals(heap) <= young.threshold) [[unlikely]]
        return false;
    if (heap.auto_mode == CGC_AUTO_AT_SAFEPOINT || trashcan_of(heap).depth > 0) {
        // Inside a deallocation objects may be half-destroyed: collect later.
        set_collection_due(heap, true);
        return false;
    }
    return true;
}

}  // namespace

void note_gc_allocation(Heap &heap) {
    if (heap.shared) [[unlikely]] {
        // An allocation is a safepoint; the collection, if due, runs with
        // the world stopped, so not under the state lock.
        safepoint(heap);
        bool due;
        {
            StateLock guard(heap);
            due = count_gc_allocation(heap);
        }
        if (due) collect_stopped(heap, 0, true);
        return;
    }
    if (count_gc_allocation(heap)) collect_automatic(heap);
}

namespace {

// A shared heap's slot (state lock held): in a page lent to the calling
// thread if it has a local heap and the size is small.
void *allocate_shared(Heap &heap, Heap *local, size_t size) {
    if (local)
        if (void *memory = allocate_in_local(heap, *local, size)) return memory;
    return heap.space.allocate(heap, size);
}

}  // namespace

void *allocate_counted(Heap &heap, size_t size) {
    if (!heap.shared) [[likely]] {
        note_gc_allocation(heap);
        return heap.space.allocate(heap, size);
    }
    // A shared heap's allocation: a safepoint, then the count (the local
    // heap's added) and the slot under one hold of the state lock, unless a
    // collection is due (it runs with the world stopped, so not under the
    // lock).
    safepoint(heap);
    Heap *local = local_heap_here(heap);
    {
        StateLock guard(heap);
        if (local) fold_count(heap, *local);
        if (!count_gc_allocation(heap)) return allocate_shared(heap, local, size);
    }
    collect_stopped(heap, 0, true);
    StateLock guard(heap);
    return allocate_shared(heap, local, size);
}

namespace {

// cgc_gc_raw_bind_slot's end: the offset and the tracking in one store (see
// track_fast). (A shared heap's object is tracked under its state lock, by
// track_slow.)
[[gnu::always_inline]] inline void bind_tracked(Heap &heap, GcMeta &meta, uint64_t bits, cgc_object *op, int track,
                                                bool maybe_local) {
    bool tracked = track && &heap == t_current_heap && try_track(heap, bits, op, maybe_local);
    set_meta_bits(meta, bits);
    if (track && !tracked) track_slow(op);
}

[[gnu::noinline]] void bind_shared_slow(Page *page, Heap &heap, GcMeta &meta, uint64_t bits, cgc_object *op,
                                        int track) {
    init_shared_object(*heap.home, *heap.shared, op, shared_count_at(page, meta));
    bind_tracked(heap, meta, bits, op, track, true);
}

[[gnu::noinline]] void mark_fresh_page(Heap &local, Page *page) { local.space.mark_fresh(page); }

// cgc_gc_raw_bind_slot on a shared heap (its arguments, so that the call
// moves none). The common case inline: a fresh slot in a page lent to the
// calling thread, which allocated in the heap last, nothing queued; the
// object owned (init_shared_object), tracked as try_track tracks in a
// local heap (unlisted, kPrivateYoung). Only tail calls.
[[gnu::noinline]] void bind_shared_slot(cgc_raw_slot slot, cgc_object *op, int track) {
    auto &meta = *static_cast<GcMeta *>(slot.gc_meta);
    uint64_t old = meta_bits(meta);
    auto offset = static_cast<uint64_t>(reinterpret_cast<char *>(op) - static_cast<char *>(slot.memory));
    uint64_t bits = (old & ~kMetaObjectOffsetBits) | offset << 48;
    Page *page = page_of(slot.memory);
    Heap &heap = *page_heap(page);
    if (&heap != t_current_heap || !heap.is_local() || t_last_shared_heap != heap.home ||
        heap.shared->queued.load(std::memory_order_relaxed) != 0 || (track && old != meta_flag_bits(kAllocated)))
        [[unlikely]]
        return bind_shared_slow(page, heap, meta, bits, op, track);
    own_new_object(op, shared_count_at(page, meta));
    if (!track) return set_meta_bits(meta, bits);
    CYCLEGC_INVARIANT(heap.young[0].capacity() == 0 && heap.young_unlisted[0] > 0,
                      "bind_shared_slot: a local heap lists its young objects");
    ++heap.young_unlisted[0];
    set_meta_bits(meta, bits | meta_flag_bits(kTracked) | kPrivateYoung);
    if (!page->fresh) [[unlikely]] return mark_fresh_page(heap, page);
}

}  // namespace

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

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
    // (Relaxed-atomic, a plain load: a thread stopping a shared heap's world
    // sets a local heap's threshold to 0, see poke_local_heaps.)
    if (!page || young.count >= std::atomic_ref(young.threshold).load(std::memory_order_relaxed)) return nullptr;
    // (Relaxed-atomic, a plain store: young_count_with_locals reads a local
    // heap's count from other threads.)
    std::atomic_ref(young.count).store(young.count + 1, std::memory_order_relaxed);
    return page;
}

// PyObject_GC_New and PyObject_GC_NewVar in the common case: a ready GC
// type, a small object, fast_page. Null: take the general path.
[[gnu::always_inline]] inline cgc_object *try_new_gc(cgc_type *type, cgc_ssize_t nitems) {
    constexpr unsigned long kReadyGc = CGC_TPFLAGS_READY | CGC_TPFLAGS_HAVE_GC;
    Heap *heap = t_current_heap;
    // (Acquire: pairs with cgc_type_ready's release on another thread.)
    if (!heap || !type || (std::atomic_ref(type->tp_flags).load(std::memory_order_acquire) & kReadyGc) != kReadyGc)
        return nullptr;
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
    if (heap->is_shared()) [[unlikely]] init_shared_object(*heap->home, *heap->shared, op);
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
    StateLock guard(heap);  // (the new slot in a page of the heap's own: not lent)
    auto *moved = static_cast<cgc_var_object *>(heap.space.allocate(heap, static_cast<size_t>(size)));
    if (!moved) {
        report(CGC_ERR_MEMORY, "%s: out of memory for %td items of type '%s'", function, nitems,
               type_name(type));
        return nullptr;
    }
    std::memcpy(static_cast<void *>(moved), static_cast<void *>(op), capacity);
    if (heap.is_shared())
        shared_count_of(&moved->ob_base).store(shared_count_of(&op->ob_base).load(std::memory_order_acquire),
                                               std::memory_order_relaxed);
    GcMeta &moved_meta = meta_of(moved);
    moved_meta.flags = static_cast<uint8_t>(moved_meta.flags | (meta.flags & (kFinalized | kHasWeakrefs)));
    if (meta.flags & kHasWeakrefs) move_weakrefs(heap, &op->ob_base, &moved->ob_base);
    release_slot(heap, page_of(op), page_of(op)->index_of(op), false);
    moved->ob_size = nitems;
    return moved;
}

namespace {

// Whether the fast path frees the slot, in `user` (its page's heap): an
// object untracked, without weak references, in a page of the thread's
// current heap, or lent to a thread while this one stops the world.
inline bool frees_fast(Page *page, uint32_t index, Heap *&user) {
    if (!is_plain_allocated(page->meta[index])) return false;
    user = page_heap(page);
    if (user == t_current_heap) [[likely]] return true;
    return lent_while_stopped(user, t_current_heap);
}

}  // namespace

void cgc_gc_del(void *memory) {
    if (!memory) return;
    auto *op = static_cast<cgc_object *>(memory);
    Page *page = page_of(op);
    uint32_t index = page->index_of(op);  // (the object lies within its slot)
    // (An object of another heap than the thread's current one: the slow
    // path checks that the thread owns it.)
    Heap *user;
    if (!frees_fast(page, index, user)) [[unlikely]] {
        raw_free_slow(page, index, op, op, "cgc_gc_del (PyObject_GC_Del)");
        return;
    }
    free_slot(*user, page, index);
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
    Heap &heap = *page_heap(page_of(slot.memory));
    // (Out of line, so that the confined path makes no call but the slow
    // path's tail call, and saves no registers.)
    if (heap.is_shared()) [[unlikely]] return bind_shared_slot(slot, op, track);
    auto &meta = *static_cast<GcMeta *>(slot.gc_meta);
    auto offset = static_cast<uint64_t>(reinterpret_cast<char *>(op) - static_cast<char *>(slot.memory));
    uint64_t bits = (meta_bits(meta) & ~kMetaObjectOffsetBits) | offset << 48;
    bind_tracked(heap, meta, bits, op, track, false);
}

void cgc_gc_raw_bind(void *memory, cgc_object *op, int track) {
    cgc_gc_raw_bind_slot({memory, &meta_of(memory)}, op, track);
}

void cgc_gc_raw_free(void *memory) {
    if (!memory) return;
    Page *page = page_of(memory);
    uint32_t index = page->index_of(memory);
    // (A shared heap's slot outside the thread's lent pages is freed under
    // its state lock, by raw_free_slow.)
    Heap *user;
    if (frees_fast(page, index, user))  // the common case
        free_slot(*user, page, index);
    else
        raw_free_slow(page, index, memory, nullptr, "cgc_gc_raw_free");
}

}  // extern "C"
