// The collector header in front of every GC object, and the intrusive
// circular lists that hold tracked objects (one per generation).
//
// Layout (two words, `cgc_gc_head`):
//   link[0] "next": address of the next header in the list, 0 when the object
//           is untracked. Bit 0 (kUnreachableTag) marks, during a collection
//           only, an object tentatively moved to the unreachable list.
//   link[1] "prev": address of the previous header | flag bits:
//           bit 0 kFinalized   tp_finalize has run (kept for the object's life)
//           bit 1 kCollecting  the object is in the set being collected
//           bit 2 kHasWeakrefs weak references to it exist (weakref.cpp)
//           While the collector computes reference counts, "prev" holds
//           (gc_refs << 3) | flags instead of an address; no user code runs
//           then except tp_traverse, which must not change the graph.
// Headers are 16-byte aligned (malloc; list sentinels 8), so the low three
// bits of an address are free.
#pragma once

#include <cyclegc/cyclegc.h>

#include <cstdint>

namespace cyclegc::internal {

using GcHead = cgc_gc_head;

constexpr uintptr_t kUnreachableTag = 1;
constexpr uintptr_t kFinalized = 1;
constexpr uintptr_t kCollecting = 2;
constexpr uintptr_t kHasWeakrefs = 4;
constexpr uintptr_t kFlagMask = 7;
// The flags an object keeps when it is untracked or changes lists.
constexpr uintptr_t kLifetimeFlags = kFinalized | kHasWeakrefs;
constexpr int kRefsShift = 3;

inline GcHead *head_of(const void *op) {
    return static_cast<GcHead *>(const_cast<void *>(op)) - 1;
}
inline cgc_object *object_of(GcHead *h) { return reinterpret_cast<cgc_object *>(h + 1); }

inline GcHead *next_of(const GcHead *h) {
    return reinterpret_cast<GcHead *>(h->link[0] & ~kUnreachableTag);
}
inline void set_next(GcHead *h, GcHead *next) { h->link[0] = reinterpret_cast<uintptr_t>(next); }
inline bool is_tracked(const GcHead *h) { return h->link[0] != 0; }
inline bool is_tagged_unreachable(const GcHead *h) { return (h->link[0] & kUnreachableTag) != 0; }

inline GcHead *prev_of(const GcHead *h) { return reinterpret_cast<GcHead *>(h->link[1] & ~kFlagMask); }
inline void set_prev(GcHead *h, GcHead *prev) {
    h->link[1] = reinterpret_cast<uintptr_t>(prev) | (h->link[1] & kFlagMask);
}
inline bool is_finalized(const GcHead *h) { return (h->link[1] & kFinalized) != 0; }
inline void set_finalized(GcHead *h) { h->link[1] |= kFinalized; }
inline bool is_collecting(const GcHead *h) { return (h->link[1] & kCollecting) != 0; }
inline void clear_collecting(GcHead *h) { h->link[1] &= ~kCollecting; }
inline bool has_weakrefs(const GcHead *h) { return (h->link[1] & kHasWeakrefs) != 0; }
inline void set_has_weakrefs(GcHead *h, bool on) {
    h->link[1] = on ? (h->link[1] | kHasWeakrefs) : (h->link[1] & ~kHasWeakrefs);
}

// gc_refs: only while the collector computes reachability.
inline cgc_ssize_t refs_of(const GcHead *h) {
    return static_cast<cgc_ssize_t>(h->link[1] >> kRefsShift);
}
inline void set_refs(GcHead *h, cgc_ssize_t refs) {
    h->link[1] = (static_cast<uintptr_t>(refs) << kRefsShift) | (h->link[1] & kLifetimeFlags) | kCollecting;
}

// A circular doubly linked list with a sentinel. Outside a collection every
// member's "prev" is a real address, so unlinking is O(1) from anywhere.
struct GcList {
    GcHead sentinel;

    GcList() { reset(); }
    GcList(const GcList &) = delete;
    GcList &operator=(const GcList &) = delete;

    void reset() {
        set_next(&sentinel, &sentinel);
        sentinel.link[1] = reinterpret_cast<uintptr_t>(&sentinel);
    }
    GcHead *end() { return &sentinel; }
    GcHead *first() { return next_of(&sentinel); }
    GcHead *last() { return prev_of(&sentinel); }
    bool empty() const { return next_of(&sentinel) == &sentinel; }

    void append(GcHead *h) {
        GcHead *tail = last();
        set_next(tail, h);
        set_next(h, &sentinel);
        h->link[1] = reinterpret_cast<uintptr_t>(tail) | (h->link[1] & kFlagMask);
        sentinel.link[1] = reinterpret_cast<uintptr_t>(h);
    }
    // Moves every member of `from` to the end of this list.
    void splice(GcList &from) {
        if (from.empty()) return;
        GcHead *tail = last();
        GcHead *first_in = from.first();
        GcHead *last_in = from.last();
        set_next(tail, first_in);
        set_prev(first_in, tail);
        set_next(last_in, &sentinel);
        sentinel.link[1] = reinterpret_cast<uintptr_t>(last_in);
        from.reset();
    }
    cgc_ssize_t size() {
        cgc_ssize_t n = 0;
        for (GcHead *h = first(); h != end(); h = next_of(h)) ++n;
        return n;
    }
};

inline void unlink(GcHead *h) {
    GcHead *prev = prev_of(h);
    GcHead *next = next_of(h);
    set_next(prev, next);
    set_prev(next, prev);
}

}  // namespace cyclegc::internal
