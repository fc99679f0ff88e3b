// Weak references. A weak reference object (a tracked GC object, so that the
// collector knows whether it is garbage itself) points to its referent
// without owning a reference; the referent's weak references form a doubly
// linked list found through the heap's side table, so any GC type supports
// them without a tp_weaklistoffset field.
#include "heap.hpp"
#include "shared_heap.hpp"

#include <mutex>

namespace cyclegc::internal {

struct WeakRef {
    cgc_object ob_base;
    cgc_object *referent;  // borrowed; NULL once the referent is dead
    WeakRef *previous;
    WeakRef *next;
    cgc_weakref_callback callback;
    void *context;
    void (*destroy_context)(void *);
};

namespace {

WeakRef *as_weakref(cgc_object *op) { return reinterpret_cast<WeakRef *>(op); }
cgc_object *as_object(WeakRef *wr) { return &wr->ob_base; }

// Unlinks `wr` from its referent's list; the referent becomes NULL. (The
// lists are kept by the referent's heap, whichever heap is current.)
void detach(WeakRef *wr) {
    StateLock guard(heap_of(as_object(wr)));  // (a weak reference lives on its referent's heap)
    cgc_object *referent = wr->referent;
    if (!referent) return;
    Heap &heap = heap_of(referent);
    if (wr->previous) {
        wr->previous->next = wr->next;
    } else {
        auto found = heap.weakref_lists.find(referent);
        if (wr->next) {
            found->second = wr->next;
        } else {
            heap.weakref_lists.erase(found);
            meta_of(referent).flags &= static_cast<uint8_t>(~kHasWeakrefs);
        }
    }
    if (wr->next) wr->next->previous = wr->previous;
    wr->referent = nullptr;
    wr->previous = wr->next = nullptr;
}

WeakRef *first_weakref(cgc_object *referent) {
    if (!has_gc_head(referent) || !(meta_of(referent).flags & kHasWeakrefs)) return nullptr;
    Heap &heap = heap_of(referent);
    StateLock guard(heap);
    auto found = heap.weakref_lists.find(referent);
    return found == heap.weakref_lists.end() ? nullptr : found->second;
}

// Detaches every weak reference to `referent`; those with a callback for
// which `wants_callback` holds are incref'd and queued.
template <typename Predicate>
void detach_all(cgc_object *referent, std::vector<WeakRef *> &queue, Predicate wants_callback) {
    StateLock guard(heap_of(referent));  // (the callbacks run later, without it)
    while (WeakRef *wr = first_weakref(referent)) {
        Heap &heap = heap_of(referent);
        detach(wr);
        if (wr->callback && wants_callback(wr)) {
            try {
                push_counted(heap, queue, wr);
            } catch (...) {
                report(CGC_ERR_MEMORY, "weak references: out of memory for the callback queue; the "
                       "callback of a weak reference to <%s object at %p> does not run",
                       type_name_of(referent), static_cast<void *>(referent));
                continue;
            }
            cgc_incref(as_object(wr));
        }
    }
}

// Runs the queued callbacks; returns how many weak reference objects died
// when the queue let go of them (a callback may drop the last other
// reference to its own weak reference).
cgc_ssize_t run_callbacks(std::vector<WeakRef *> &queue) {
    cgc_ssize_t freed = 0;
    for (WeakRef *wr : queue) {
        call_user_code("a weak reference callback", as_object(wr), [&] { wr->callback(as_object(wr), wr->context); });
        if (cgc_refcount(as_object(wr)) == 1) ++freed;
        cgc_decref(as_object(wr));
    }
    return freed;
}

int weakref_traverse(cgc_object *, cgc_visitproc, void *) { return 0; }

int weakref_clear(cgc_object *self) {
    detach(as_weakref(self));
    return 0;
}

void weakref_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    WeakRef *wr = as_weakref(self);
    detach(wr);
    if (wr->destroy_context) wr->destroy_context(wr->context);
    cgc_gc_del(self);
}

}  // namespace

void detach_weakref(cgc_object *weakref) { detach(as_weakref(weakref)); }

bool is_weakref(cgc_object *op) {
    for (cgc_type *t = op->ob_type; t; t = t->tp_base)
        if (t == &cgc_weakref_type) return true;
    return false;
}

void queue_weakref_callbacks(Heap &heap, const std::vector<cgc_object *> &unreachable,
                             std::vector<WeakRef *> &queue) {
    // No weak reference is attached to anything: nothing to clear (a weak
    // reference object whose referent died is detached already).
    if (heap.weakref_lists.empty()) return;
    for (cgc_object *op : unreachable) {
        if (!op) continue;
        // A weak reference that is garbage itself must never call back
        // (bpo-38006): its referent may die while the garbage is cleared.
        if (is_weakref(op)) detach(as_weakref(op));
        // Only weak references that survive get their callback.
        detach_all(op, queue, [](WeakRef *wr) { return !(meta_of(wr).flags & kCollecting); });
    }
}

cgc_ssize_t run_weakref_callbacks(std::vector<WeakRef *> &queue) { return run_callbacks(queue); }

void clear_weakrefs_silently(Heap &heap, const std::vector<cgc_object *> &unreachable) {
    if (heap.weakref_lists.empty()) return;  // (see handle_weakrefs)
    std::vector<WeakRef *> none;
    for (cgc_object *op : unreachable) {
        if (!op) continue;
        if (is_weakref(op)) detach(as_weakref(op));
        detach_all(op, none, [](WeakRef *) { return false; });
    }
}

void move_weakrefs(Heap &heap, cgc_object *from, cgc_object *to) {
    auto found = heap.weakref_lists.find(from);
    if (found == heap.weakref_lists.end()) return;
    WeakRef *first = found->second;
    heap.weakref_lists.erase(found);
    heap.weakref_lists[to] = first;  // erased one entry first: no allocation failure in practice
    for (WeakRef *wr = first; wr; wr = wr->next) wr->referent = to;
    meta_of(to).flags |= kHasWeakrefs;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

cgc_type cgc_weakref_type = {
    .ob_base = {{1, &cgc_type_type}, 0},
    .tp_name = "weakref",
    .tp_basicsize = sizeof(WeakRef),
    .tp_dealloc = weakref_dealloc,
    .tp_flags = CGC_TPFLAGS_HAVE_GC,
    .tp_doc = "a weak reference",
    .tp_traverse = weakref_traverse,
    .tp_clear = weakref_clear,
};

int cgc_weakref_check(cgc_object *op) { return op && is_weakref(op); }

cgc_object *cgc_weakref_new(cgc_object *object, cgc_weakref_callback callback, void *context) {
    return cgc_weakref_new_owning(object, callback, context, nullptr);
}

cgc_object *cgc_weakref_new_owning(cgc_object *object, cgc_weakref_callback callback, void *context,
                                   void (*destroy)(void *)) {
    const char *function = "cgc_weakref_new (PyWeakref_NewRef)";
    if (!object) {
        report(CGC_ERR_MISUSE, "%s: the object is NULL", function);
        return nullptr;
    }
    if (!has_gc_head(object)) {
        report(CGC_ERR_TYPE, "%s: cannot create weak reference to '%s' object (not a GC type)",
               function, type_name_of(object));
        return nullptr;
    }
    Heap &heap = heap_of(object);
    if (!callback && !destroy) {
        StateLock guard(heap);
        for (WeakRef *wr = first_weakref(object); wr; wr = wr->next) {
            if (!wr->callback && !wr->context && !wr->destroy_context) {
                cgc_incref(as_object(wr));
                return as_object(wr);
            }
        }
    }
    // (Allocated without the state lock: the allocation may collect.)
    auto *wr = reinterpret_cast<WeakRef *>(cgc_gc_new(&cgc_weakref_type));
    if (!wr) return nullptr;
    StateLock guard(heap);
    // The allocation may have collected, and freed weak references to the
    // object: look its list up again.
    WeakRef *first = first_weakref(object);
    try {
        heap.weakref_lists[object] = wr;
    } catch (...) {
        cgc_gc_del(wr);
        report(CGC_ERR_MEMORY, "%s: out of memory", function);
        return nullptr;
    }
    wr->referent = object;
    wr->next = first;
    if (first) first->previous = wr;
    wr->callback = callback;
    wr->context = context;
    wr->destroy_context = destroy;
    meta_of(object).flags |= kHasWeakrefs;
    cgc_gc_track(wr);
    return as_object(wr);
}

cgc_object *cgc_weakref_get(cgc_object *weakref) {
    cgc_object *out = nullptr;
    cgc_weakref_get_ref(weakref, &out);
    return out;
}

int cgc_weakref_get_ref(cgc_object *weakref, cgc_object **out) {
    if (out) *out = nullptr;
    if (!weakref || !is_weakref(weakref) || !out) {
        report(CGC_ERR_TYPE, "cgc_weakref_get_ref (PyWeakref_GetRef): expected a weak reference, "
               "got %s", weakref ? type_name_of(weakref) : "NULL");
        return -1;
    }
    // In a shared heap, the referent's last reference may go on another
    // thread meanwhile: its weak references are cleared under the heap's
    // state lock (cgc_clear_weakrefs), and try_incref fails once its count
    // reached zero. (The lock also keeps a detach on another thread out.)
    StateLock guard(heap_of(weakref));
    cgc_object *referent = as_weakref(weakref)->referent;
    if (!referent || !try_incref(referent)) return 0;
    *out = referent;
    return 1;
}

void cgc_clear_weakrefs(cgc_object *object) {
    if (!object) return;
    if (!first_weakref(object)) return;
    std::vector<WeakRef *> queue;
    {
        // (See cgc_weakref_get_ref.)
        StateLock guard(heap_of(object));
        detach_all(object, queue, [](WeakRef *) { return true; });
    }
    run_callbacks(queue);
}

cgc_ssize_t cgc_weakref_count(cgc_object *object) {
    cgc_ssize_t count = 0;
    if (!object || !has_gc_head(object)) return 0;
    StateLock guard(heap_of(object));
    for (WeakRef *wr = object ? first_weakref(object) : nullptr; wr; wr = wr->next) ++count;
    return count;
}

}  // extern "C"
