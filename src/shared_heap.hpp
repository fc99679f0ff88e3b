// The state a shared heap (cgc_heap_new_shared) has beyond a confined one:
// the threads attached to it and the stop-the-world protocol
// (stop_the_world.cpp), and the biased reference counts of its objects
// (shared_counts.cpp). A confined heap has none (Heap::shared is null).
#pragma once

#include "pages.hpp"

#include <cyclegc/cyclegc.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace cyclegc::internal {

struct SharedHeap {
    // ---- Threads and stop-the-world (stop_the_world.cpp) ----
    // Serializes the changes to the heap's state (pages, generations,
    // tracking, weak-reference table, the gc module's settings) made by the
    // attached threads (StateLock). Never held while user code runs or
    // while a thread parks, so a parked thread holds no lock.
    std::mutex state_lock;
    // Guards the counts below; world_changed wakes the stopping thread when
    // one parks or detaches, and the parked threads when the world restarts.
    std::mutex world_lock;
    std::condition_variable world_changed;
    // Set while a thread stops the world (and until it restarts it): read
    // without the lock at every safepoint.
    std::atomic<bool> stop_requested{false};
    // Attached threads neither detached nor parked (changed under the
    // lock; read without it by the stopping thread while it spins).
    std::atomic<int> running{0};
    int attached = 0;  // attached threads (detached ones included)
    // The attached threads' local heaps (local_heaps.cpp), each used by its
    // thread's fast paths without the state lock, and by a stopped world.
    std::vector<Heap *> locals;

    // ---- Biased reference counts (shared_counts.cpp) ----
    // Objects whose shared count a thread that does not own them took
    // below zero: each holds one reference (the dropped one) until a thread
    // merges it, its owner or (the object merged meanwhile) any thread.
    std::mutex queue_lock;
    std::vector<cgc_object *> queue;
    std::atomic<size_t> queued{0};  // queue.size(), read without the lock
    // The tag of the one thread that ever owned objects here (note_owner),
    // kManyOwners once another did (never back: an exiting thread may leave
    // owned objects in pages lent to others), 0 before any.
    static constexpr uint32_t kManyOwners = UINT32_MAX;
    std::atomic<uint32_t> sole_owner{0};
    // The garbage a collection's clearing counts plainly
    // (make_garbage_counts_plain); its storage kept between collections.
    std::vector<cgc_object *> plain_garbage;

    SharedHeap();
    ~SharedHeap();
    SharedHeap(const SharedHeap &) = delete;
    SharedHeap &operator=(const SharedHeap &) = delete;
};

// The shared heap the calling thread is attached to and not detached from
// (null: none; stop_the_world.cpp keeps it): a release on another thread's
// behalf is checked against it with one load (unattached_use otherwise).
extern thread_local constinit Heap *t_attached_heap __attribute__((tls_model("initial-exec")));

// ---- The count word of a shared heap's objects (cyclegc.h, "The count
// word"): bit 63 set, bit 62 clear (so a count below zero or a trashcan
// link, whose bits 62 and 63 are both set, is never taken for one), the
// owner's tag in bits 32..61 (0: merged), its local count in bits 0..31.
constexpr uint64_t kSharedWordBit = uint64_t(1) << 63;
constexpr uint32_t kMaxThreadTag = (uint32_t(1) << 30) - 1;
inline bool is_shared_word(cgc_ssize_t word) { return (static_cast<uint64_t>(word) >> 62) == 2; }
inline uint32_t word_tag(cgc_ssize_t word) { return static_cast<uint32_t>(static_cast<uint64_t>(word) >> 32) & kMaxThreadTag; }
inline uint32_t word_local(cgc_ssize_t word) { return static_cast<uint32_t>(word); }
inline cgc_ssize_t load_word(const cgc_object *op) { return CGC_COUNT_LOAD(&op->ob_refcnt); }
inline void store_word(cgc_object *op, cgc_ssize_t word) { CGC_COUNT_STORE(&op->ob_refcnt, word); }

// The shared count: the references counted by threads other than the owner
// (and all of them once merged), times 4, plus two flags.
constexpr int64_t kSharedQueued = 1;  // queued for merging (SharedHeap::queue)
constexpr int64_t kSharedMerged = 2;  // no owner: the count is the whole count
constexpr int64_t kSharedOne = 4;
inline std::atomic<int64_t> &shared_count_of(const cgc_object *op) {
    Page *page = page_of(op);
    return page->shared_counts[page->index_of(op)];
}

// cgc_refcount inline (the collector's reads, with no call on a shared
// heap): a shared word's local and shared counts summed.
inline cgc_ssize_t refcount_of(const cgc_object *op) {
    cgc_ssize_t word = load_word(op);
    if (word >= 0 || !is_shared_word(word)) [[likely]] return word;
    return static_cast<cgc_ssize_t>(word_local(word)) + (shared_count_of(op).load(std::memory_order_acquire) >> 2);
}

// A new object of a shared heap (its count word plain, as allocated): owned
// by the calling thread, its count moved into the local count, the shared
// count zero. Merges the calling thread's queue when it has entries.
void init_shared_object_slow(Heap &heap, cgc_object *op);
// The shared heap the calling thread last allocated in (it has a tag);
// null again at each attachment to a heap, so that a heap made at the
// address of a deleted one is noted (note_owner) at its first allocation.
extern constinit thread_local const Heap *t_last_shared_heap __attribute__((tls_model("initial-exec")));
// The shared count of the slot whose GcMeta is `meta`: for the allocation
// paths, which know the slot's index (shared_count_of computes it).
inline std::atomic<int64_t> &shared_count_at(Page *page, const GcMeta &meta) {
    return page->shared_counts[&meta - page->meta];
}
// The new object's count word and shared count (`count`), owned by the
// calling thread (which has a tag). (The word is read before the shared
// count is stored, which could alias it: the fast paths then store their
// constant count once.)
inline void own_new_object(cgc_object *op, std::atomic<int64_t> &count) {
    auto local = static_cast<uint64_t>(op->ob_refcnt);
    count.store(0, std::memory_order_relaxed);
    store_word(op, static_cast<cgc_ssize_t>(uint64_t(cgc_thread_count_tag) << 32 | local));
}
// init_shared_object, inline in the allocation fast paths when the thread
// allocated in `shared` last and nothing is queued.
inline void init_shared_object(Heap &heap, const SharedHeap &shared, cgc_object *op, std::atomic<int64_t> &count) {
    if (t_last_shared_heap != &heap || shared.queued.load(std::memory_order_relaxed) != 0) [[unlikely]] {
        init_shared_object_slow(heap, op);
        return;
    }
    own_new_object(op, count);
}
inline void init_shared_object(Heap &heap, const SharedHeap &shared, cgc_object *op) {
    init_shared_object(heap, shared, op, shared_count_of(op));
}
// An object of a shared heap whose count word is plain again (a finalizer
// resurrected it, or a refusal kept it with count 1): merged, so that every
// thread counts it atomically from now on. Does nothing to other objects.
void rebias_if_shared(cgc_object *op);
// The merges a thread owes (its queued objects, and the merged ones any
// thread may take), and those of every thread (a collection of a shared
// heap calls it first, with the world stopped, until the queue stays empty).
void merge_own_queue(Heap &heap);
void merge_all_queues(Heap &heap);
// With the world stopped (the owners parked): the objects a collection
// found unreachable that other threads own lose their owners, so that the
// references its clearing drops free them there and then (a decrement by a
// thread that does not own an object would queue it for its owner). The
// collecting thread's own objects keep their owner: its clearing counts
// them with plain stores, and no other thread can reach garbage (one a
// finalizer resurrects and hands over is counted as any shared object).
// Nothing to do when the collecting thread is the heap's sole owner.
void disown_for_clearing(const Heap &heap, std::vector<cgc_object *> &objects);
// With the world stopped by the calling thread through the clearing (after
// the finalizers): the garbage whose whole count is its owner's local count
// gets it as a plain count, so that the clearing's releases take the
// confined paths (no owner test, no merge); no other thread can reach it.
// It lists them (SharedHeap::plain_garbage) for rebias_plain_survivors
// after the clearing: those still alive (survivors, or untracked by user
// code meanwhile) get a shared heap's count word before the world restarts.
void make_garbage_counts_plain(Heap &heap);
void rebias_plain_survivors(Heap &heap);
// ---- Local heaps (local_heaps.cpp): an attached thread's part of a shared
// heap, used by its fast paths without the state lock: pages lent to it,
// the objects it tracked there (kPrivateYoung, in no list), its count of
// allocations. A stopped world takes every part back (a collection sees one
// heap); slow paths hold the state lock.
Heap *make_local_heap(Heap &shared);
void delete_local_heap(Heap *local);
// Lists the local heap's new tracked objects in the shared heap's
// generation 0 and adds its counts to the shared heap's; its pages stay
// lent (the empty ones go back). hand_back: all its pages go back too (its
// thread leaves the heap). The caller holds the state lock; the local
// heap's thread is the caller, or parked, or detached.
void take_back(Heap &shared, Heap &local);
void hand_back(Heap &shared, Heap &local);
// Sends every local heap's next allocation to the slow path, a safepoint:
// a stopping thread's request reaches threads that allocate on fast paths.
// The caller holds the state lock, and has set stop_requested.
void poke_local_heaps(Heap &shared);
// Counts the local heap's allocations in the shared heap's generation 0
// (state lock held).
void fold_count(Heap &shared, Heap &local);
// The shared heap's generation 0 count with every local heap's added, as
// far as their threads have counted (state lock held: it guards the list
// of local heaps). An allocation stops the world only when this crosses
// the threshold: folding in another thread's frees at the stop would
// often find none due.
cgc_ssize_t young_count_with_locals(const Heap &shared);
// A slot of `size` bytes in a page lent to the calling thread (borrowed
// under the state lock, which the caller holds), or null: not a small size,
// or out of memory. Sets the local count's threshold to what is left of
// the shared heap's.
void *allocate_in_local(Heap &shared, Heap &local, size_t size);
// The calling thread's local heap of `shared` (null: none, or stopped).
Heap *local_heap_here(const Heap &shared);

// Deallocates a shared heap's object whose count reached zero (its word a
// plain 0): on a thread with a local heap as cgc_dealloc's fast path does a
// confined one, with the thread's trashcan; a C++ object in a page lent to
// the thread released in one call (dealloc.cpp).
void dealloc_shared(cgc_object *op);
// The same with the object's page and GcMeta known.
void dealloc_shared_at(cgc_object *op, Page *page, GcMeta &meta);
// The deallocations of an object in a page lent to the calling thread
// (`local`, its local heap), allocated, not held, without weak references,
// the trashcan not full: a C++ object, untracked already (its destructor a
// park point), or a C object (its tp_dealloc).
void release_lent_cxx(cgc_object *op, Heap &local, cgc_destructor destroy_and_free);
void dealloc_lent(cgc_object *op);
// Takes a reference to `op` unless its count reached zero (a weak
// reference's referent, which another thread may be releasing).
bool try_incref(cgc_object *op);

}  // namespace cyclegc::internal
