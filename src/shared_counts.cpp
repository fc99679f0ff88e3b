// Biased reference counting for the objects of shared heaps (the count word:
// shared_heap.hpp and cyclegc.h). The owner thread counts in the word with
// plain stores (cyclegc.h's inline paths); every other thread counts in the
// object's shared count with atomic operations (here). The protocol that
// lets the object die exactly once:
//  - the owner's local count reaching 0 merges: the word loses its owner,
//    the shared count gets the merged flag, and the object dies if that
//    count is 0;
//  - a non-owner's decrement of an unmerged object whose shared count is 0
//    does not go below 0: it queues the object (the queue holds the dropped
//    reference) for a thread that may merge it: its owner, at its next
//    allocation, safepoint or exit, or any thread once it is merged, or a
//    collection (merge_all_queues);
//  - a merged object dies on the thread whose decrement takes the shared
//    count to 0.
// A dying object's word is set to a plain 0 and cgc_dealloc takes it from
// there, as for a confined object. A collection, the world stopped, merges
// with the same CAS: the attached threads are parked, but Py_INCREF does
// not check that its thread is attached (Py_DECREF does), and a plain
// store would lose a detached thread's misplaced increment. It merges
// only the garbage other threads own (disown_for_clearing), so in one
// thread's loops there is none.
#include "arena.hpp"
#include "heap.hpp"
#include "shared_heap.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

using namespace cyclegc::internal;

// (The definitions repeat the declarations' TLS model: without it, this
// file reaches them through __tls_get_addr calls, which make the paths
// that read them save registers.)
extern "C" {
CGC_THREAD_LOCAL uint32_t cgc_thread_count_tag CGC_TLS_MODEL = 0;
}

namespace cyclegc::internal {
namespace {

// The live shared heaps, for threads that exit: they give up the ownership
// of their objects in the heaps they allocated in, if those still exist.
struct SharedHeapRegistry {
    std::mutex lock;
    std::unordered_map<SharedHeap *, Heap *> heaps;
};
SharedHeapRegistry &registry() {
    static auto *instance = new SharedHeapRegistry();  // (never destroyed: threads may exit late)
    return *instance;
}

void give_up_ownership();

// The shared heaps the calling thread allocated objects in (it owns some).
struct ThreadOwnership {
    std::vector<SharedHeap *> heaps;
    ~ThreadOwnership() { give_up_ownership(); }
};
thread_local ThreadOwnership t_ownership;

bool owned_here(cgc_ssize_t word) { return CGC_COUNT_OWNED_HERE(word); }

void die(cgc_object *op) {
    store_word(op, 0);
    dealloc_shared(op);
}

bool may_have_weakrefs(cgc_object *op) { return has_gc_head(op) && (meta_of(op).flags & kHasWeakrefs); }

// Merges an object the calling thread owns, or one merged already: the
// local count goes into the shared count, plus `extra` (-1: the queue's
// reference), and the word loses its owner before the shared count says so
// (a try_incref between the two sees an unmerged, live object). Returns the
// merged count.
int64_t merge(cgc_object *op, int64_t extra) {
    cgc_ssize_t word = load_word(op);
    int64_t local = word_local(word);
    store_word(op, static_cast<cgc_ssize_t>(kSharedWordBit));
    std::atomic<int64_t> &shared = shared_count_of(op);
    int64_t old = shared.load(std::memory_order_relaxed);
    int64_t count;
    do {
        count = (old >> 2) + local + extra;
    } while (!shared.compare_exchange_weak(old, count * kSharedOne | kSharedMerged, std::memory_order_acq_rel));
    return count;
}

// The owner's local count reaches 0.
[[gnu::noinline]] void merge_zero_local(cgc_object *op) {
    if (merge(op, -1) == 0) die(op);
}

// release_owned_last for a type whose tp_is_gc decides whether it has a
// collector header (and so perhaps weak references).
[[gnu::noinline]] void release_owned_last_checked(cgc_object *op) {
    if (may_have_weakrefs(op))
        merge_zero_local(op);
    else
        die(op);
}

// The owner drops its last local reference, by a thread attached to the
// object's heap: without another reference and a weak reference that could
// take one, no other thread can see the object any more, and it dies
// without a merge (no atomic write). Only tail calls, so that it saves no
// registers.
[[gnu::noinline]] void release_owned_last_attached(cgc_object *op) {
    Page *page = page_of(op);
    uint32_t index = page->index_of(op);
    if (page->shared_counts[index].load(std::memory_order_acquire) != 0) return merge_zero_local(op);
    const cgc_type *type = op->ob_type;
    GcMeta &meta = page->meta[index];  // (a shared heap's objects all live in its pages)
    if (type->tp_flags & CGC_TPFLAGS_HAVE_GC) {
        if (type->tp_is_gc) [[unlikely]] return release_owned_last_checked(op);
        if (meta.flags & kHasWeakrefs) return merge_zero_local(op);
    }
    store_word(op, 0);
    dealloc_shared_at(op, page, meta);
}

void decref_unattached(cgc_object *op, cgc_ssize_t word);

// release_owned_last's other cases, attached or not.
[[gnu::noinline]] void release_owned_last_other(cgc_object *op) {
    if (t_attached_heap != &heap_of(op)) [[unlikely]]  // (a lent page's heap is a local heap: its home)
        return decref_unattached(op, load_word(op));
    release_owned_last_attached(op);
}

// The same in one step for the common case: an object in a page lent to
// the calling thread (which is attached, then; a lent page holds GC objects
// only), no tp_is_gc, no shared count, not held, no weak references, the
// trashcan not full; a C++ object is untracked here (its local heap's
// flag), as dealloc_shared_at would. (Out of line: inlined, it spreads
// cgc_decref_slow over more cache lines, and another thread's copy + release
// took 20.8 ns, not 18.6.)
[[gnu::noinline]] void release_owned_last(cgc_object *op) {
    Page *page = page_of(op);
    uint32_t index = page->index_of(op);
    Heap *local = t_current_heap;
    const cgc_type *type = op->ob_type;
    if (page_heap(page) != local || !local->is_local() || type->tp_is_gc ||
        page->shared_counts[index].load(std::memory_order_acquire) != 0 ||
        t_shared_trashcan.depth >= kMaxDeallocDepth) [[unlikely]]
        return release_owned_last_other(op);
    GcMeta &meta = page->meta[index];
    if (!allocated_without(meta, kHeld | kHasWeakrefs)) [[unlikely]] return release_owned_last_other(op);
    if (cgc_destructor destroy_cxx = type->tp_cxx_destroy) [[likely]] {
        if ((meta.flags & kTracked) && !untrack_private(meta)) [[unlikely]] return release_owned_last_other(op);
        store_word(op, 0);
        return release_lent_cxx(op, *local, destroy_cxx);
    }
    store_word(op, 0);
    dealloc_lent(op);
}

[[gnu::noinline]] void enqueue(cgc_object *op) {
    SharedHeap &shared = *heap_of(op).shared;  // (atomic: another thread may be lending the page)
    std::lock_guard<std::mutex> guard(shared.queue_lock);
    try {
        shared.queue.push_back(op);
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "Py_DECREF: out of memory for the merge queue of a shared heap; object %p "
               "of type '%s' is never freed", static_cast<void *>(op), type_name_of(op));
        return;
    }
    shared.queued.store(shared.queue.size(), std::memory_order_relaxed);
}

// cgc_decref_slow on a plain count: one below 1 (the inline path takes the
// others) deallocates, or reports a count below zero.
[[gnu::noinline]] void decref_plain(cgc_object *op, cgc_ssize_t word) {
    op->ob_refcnt = word - 1;
    if (word <= 1) cgc_dealloc(op);
}

void decref_shared_count(cgc_object *op);

// decref_shared_count on a shared count of 0: queued, unless another
// thread changed the count meanwhile (then taken again from the start).
[[gnu::noinline]] void queue_or_decref(cgc_object *op) {
    int64_t zero = 0;
    if (shared_count_of(op).compare_exchange_strong(zero, kSharedQueued, std::memory_order_acq_rel))
        enqueue(op);
    else
        decref_shared_count(op);
}

// A decrement by a thread that does not own the object. Its common case
// calls nothing but in tail position, so that it saves no registers.
[[gnu::noinline]] void decref_shared_count(cgc_object *op) {
    std::atomic<int64_t> &shared = shared_count_of(op);
    int64_t old = shared.load(std::memory_order_relaxed);
    do {
        if (old == 0) [[unlikely]] return queue_or_decref(op);
    } while (!shared.compare_exchange_weak(old, old - kSharedOne, std::memory_order_acq_rel));
    if (old - kSharedOne == kSharedMerged) [[unlikely]] die(op);
}

// cgc_decref_slow on a shared word, by a thread attached to its heap.
// `release_last`: release_owned_last where the caller checked the thread's
// attachment (its fallback checks it again), else release_owned_last_attached.
inline void decref_attached(cgc_object *op, cgc_ssize_t word, void (*release_last)(cgc_object *)) {
    if (!owned_here(word))
        decref_shared_count(op);
    else if (word_local(word) > 1)  // (an owned word's local count is never 0)
        store_word(op, word - 1);
    else
        release_last(op);
}

// The same by a thread not attached to its heap: refused (the reference is
// kept), as the release could race with a collection that does not wait
// for this thread, unless unattached_use lets it through.
[[gnu::noinline]] void decref_unattached(cgc_object *op, cgc_ssize_t word) {
    if (!unattached_use(heap_of(op), "Py_DECREF", op)) decref_attached(op, word, release_owned_last_attached);
}

// Takes the queue entries `mine` accepts; merges them after the lock.
template <class Mine>
void merge_queue(Heap &heap, Mine mine) {
    SharedHeap &shared = *heap.shared;
    if (shared.queued.load(std::memory_order_relaxed) == 0) return;
    std::vector<cgc_object *> taken;
    {
        std::lock_guard<std::mutex> guard(shared.queue_lock);
        auto split = std::stable_partition(shared.queue.begin(), shared.queue.end(),
                                           [&](cgc_object *op) { return !mine(op); });
        taken.assign(split, shared.queue.end());
        shared.queue.erase(split, shared.queue.end());
        shared.queued.store(shared.queue.size(), std::memory_order_relaxed);
    }
    for (cgc_object *op : taken)
        if (merge(op, -1) == 0) die(op);
}

// Counts the thread tagged `tag` among the heap's owners (SharedHeap::sole_owner).
void note_sole_owner(SharedHeap &shared, uint32_t tag) {
    uint32_t seen = 0;
    if (!shared.sole_owner.compare_exchange_strong(seen, tag, std::memory_order_relaxed) && seen != tag)
        shared.sole_owner.store(SharedHeap::kManyOwners, std::memory_order_relaxed);
}

// Registers the calling thread as an owner of objects in `heap`, with a tag.
[[gnu::noinline]] void note_owner(Heap &heap) {
    ThreadOwnership &ownership = t_ownership;
    if (cgc_thread_count_tag == 0) {
        // (Even: cgc_decref's one compare of the word minus 2, cyclegc.h.)
        static std::atomic<uint32_t> next_tag{2};
        uint32_t tag = next_tag.fetch_add(2, std::memory_order_relaxed);
        if (tag > kMaxThreadTag) {
            std::fprintf(stderr, "cyclegc: more than %u threads used shared heaps\n", kMaxThreadTag / 2);
            std::abort();
        }
        cgc_thread_count_tag = static_cast<uint32_t>(kSharedWordBit >> 32) | tag;
    }
    t_last_shared_heap = &heap;
    note_sole_owner(*heap.shared, cgc_thread_count_tag);
    if (std::find(ownership.heaps.begin(), ownership.heaps.end(), heap.shared) != ownership.heaps.end()) return;
    ownership.heaps.push_back(heap.shared);
    SharedHeapRegistry &live = registry();
    std::lock_guard<std::mutex> guard(live.lock);
    live.heaps[heap.shared] = &heap;
}

// At the thread's exit: its queued objects merged, then every object it
// still owns (found by a walk of the heap's pages, under the heap's state
// lock), so that they die on whichever thread drops them last. Done attached
// to the heap (a collection waits for it), the thread's attachment restored.
// Pages lent to other threads are skipped (they change them without the
// lock): an object there that it owns is queued by the decrement that
// would take its shared count below zero, and merged by the next
// collection.
void give_up_heap(Heap &heap) {
    Heap *was = attached_heap();
    attach_to(&heap);
    merge_own_queue(heap);
    std::vector<cgc_object *> dead;
    {
        StateLock guard(heap);
        PageSpace::WalkGuard walking(heap.space);
        Heap *own = local_heap_here(heap);
        for (Page *page : heap.space.pages()) {
            Heap *user = page_heap(page);
            if (user != &heap && user != own) continue;
            for (uint32_t i = 0; i < page->bump; ++i) {
                if (!(page->meta[i].flags & kAllocated)) continue;
                cgc_object *op = page->object_at(i);
                cgc_ssize_t word = load_word(op);
                if (!is_shared_word(word) || !owned_here(word)) continue;
                if (merge(op, 0) == 0) dead.push_back(op);
            }
        }
    }
    for (cgc_object *op : dead) die(op);
    attach_to(was);
}

void give_up_ownership() {
    ThreadOwnership &ownership = t_ownership;
    for (SharedHeap *shared : ownership.heaps) {
        Heap *heap = nullptr;
        {
            SharedHeapRegistry &live = registry();
            std::lock_guard<std::mutex> guard(live.lock);
            auto found = live.heaps.find(shared);
            if (found != live.heaps.end()) heap = found->second;
        }
        if (heap) give_up_heap(*heap);
    }
    ownership.heaps.clear();
    t_last_shared_heap = nullptr;
}

}  // namespace

SharedHeap::SharedHeap() = default;

SharedHeap::~SharedHeap() {
    SharedHeapRegistry &live = registry();
    std::lock_guard<std::mutex> guard(live.lock);
    live.heaps.erase(this);
}

bool pages_carry_shared_counts(const Heap &heap) { return heap.is_shared(); }

// (A plain thread-local: t_ownership, with a destructor, is reached through
// a guard each time. Set after the thread's tag.)
constinit thread_local const Heap *t_last_shared_heap __attribute__((tls_model("initial-exec"))) = nullptr;

void init_shared_object_slow(Heap &heap, cgc_object *op) {
    if (t_last_shared_heap != &heap || cgc_thread_count_tag == 0) note_owner(heap);
    own_new_object(op, shared_count_of(op));
    if (heap.shared->queued.load(std::memory_order_relaxed) != 0) [[unlikely]]
        merge_own_queue(heap);
}

void rebias_if_shared(cgc_object *op) {
    cgc_ssize_t count = load_word(op);
    if (count < 0 || !g_arena->contains(op) || !heap_of(op).is_shared()) return;
    shared_count_of(op).store(count * kSharedOne | kSharedMerged, std::memory_order_release);
    store_word(op, static_cast<cgc_ssize_t>(kSharedWordBit));
}

void merge_own_queue(Heap &heap) {
    merge_queue(heap, [](cgc_object *op) {
        cgc_ssize_t word = load_word(op);
        return owned_here(word) || word_tag(word) == 0;
    });
}

void merge_all_queues(Heap &heap) {
    // Until none is left: a merged object that dies drops its references,
    // which may queue others (the collector would count their queue's
    // reference as external, and keep them and all they reach).
    while (heap.shared->queued.load(std::memory_order_relaxed) != 0)
        merge_queue(heap, [](cgc_object *) { return true; });
}

void disown_for_clearing(const Heap &heap, std::vector<cgc_object *> &objects) {
    // (Tags are never reused, and a thread tags objects only after it
    // noted its ownership: then every tagged object is the collecting
    // thread's, or none is tagged.)
    if (heap.shared->sole_owner.load(std::memory_order_relaxed) == cgc_thread_count_tag) return;
    for (cgc_object *op : objects) {
        if (!op) continue;
        cgc_ssize_t word = load_word(op);
        if (is_shared_word(word) && word_tag(word) != 0 && !owned_here(word)) merge(op, 0);
    }
}

void make_garbage_counts_plain(Heap &heap) {
    std::vector<cgc_object *> &plain = heap.shared->plain_garbage;
    try {
        plain.reserve(heap.unreachable.size());
    } catch (const std::bad_alloc &) {
        return;  // (none made plain: the clearing takes the shared paths)
    }
    for (cgc_object *op : heap.unreachable) {
        if (!op) continue;
        cgc_ssize_t word = load_word(op);
        if (!is_shared_word(word) || word_tag(word) == 0) continue;
        // (An owner's count alone: no other thread's references, flags or
        // weak references to see a merge. The set's objects are tracked:
        // each has its GcMeta.)
        Page *page = page_of(op);
        uint32_t index = page->index_of(op);
        if (page->shared_counts[index].load(std::memory_order_relaxed) != 0 || (page->meta[index].flags & kHasWeakrefs))
            continue;
        store_word(op, word_local(word));
        plain.push_back(op);
    }
}

void rebias_plain_survivors(Heap &heap) {
    std::vector<cgc_object *> &plain = heap.shared->plain_garbage;
    // (A dead object's word reads 0, its slot free, or a new object's: a
    // shared heap's.)
    for (cgc_object *op : plain)
        if (load_word(op) > 0 && (meta_of(op).flags & kAllocated)) [[unlikely]] rebias_if_shared(op);
    plain.clear();
}

bool try_incref(cgc_object *op) {
    cgc_ssize_t word = load_word(op);
    if (!is_shared_word(word)) {
        if (word <= 0) return false;
        op->ob_refcnt = word + 1;
        return true;
    }
    if (owned_here(word)) {
        store_word(op, word + 1);
        return true;
    }
    // Merged with a count of 0: dying. (Unmerged with a shared count of 0:
    // its owner's local count keeps it alive, and the owner's merge will
    // see this increment.)
    std::atomic<int64_t> &shared = shared_count_of(op);
    int64_t old = shared.load(std::memory_order_relaxed);
    do {
        if (old == kSharedMerged) return false;
    } while (!shared.compare_exchange_weak(old, old + kSharedOne, std::memory_order_acq_rel));
    return true;
}

}  // namespace cyclegc::internal

extern "C" {

void cgc_incref_shared(cgc_object *op) {
    cgc_ssize_t word = load_word(op);
    if (!is_shared_word(word)) {
        op->ob_refcnt = word + 1;  // (a count below zero: cgc_dealloc reports it)
    } else if (owned_here(word)) {
        store_word(op, word + 1);
    } else {
        shared_count_of(op).fetch_add(kSharedOne, std::memory_order_relaxed);
    }
}

void cgc_decref_slow(cgc_object *op) {
    cgc_ssize_t word = load_word(op);
    if (!is_shared_word(word)) [[unlikely]] {
        decref_plain(op, word);
        return;
    }
    if (t_attached_heap != &heap_of(op)) [[unlikely]]  // (a lent page's heap is a local heap: its home)
        return decref_unattached(op, word);
    decref_attached(op, word, release_owned_last);
}

cgc_ssize_t cgc_refcount_shared(const cgc_object *op) { return refcount_of(op); }

void cgc_set_refcount_shared(cgc_object *op, cgc_ssize_t n) {
    cgc_ssize_t word = load_word(op);
    if (!is_shared_word(word)) {
        op->ob_refcnt = n;
        return;
    }
    if (n < 0 || n > cgc_ssize_t(UINT32_MAX)) {
        report(CGC_ERR_MISUSE, "Py_SET_REFCNT: %td is not a reference count for object %p of type '%s' "
               "of a shared heap; the count is unchanged", n, static_cast<void *>(op), type_name_of(op));
        return;
    }
    std::atomic<int64_t> &shared = shared_count_of(op);
    if (word_tag(word) == 0) {
        shared.store(n * kSharedOne | kSharedMerged, std::memory_order_release);
    } else {
        shared.store(0, std::memory_order_relaxed);
        store_word(op, static_cast<cgc_ssize_t>((static_cast<uint64_t>(word) & ~uint64_t(UINT32_MAX)) | uint64_t(n)));
    }
}

}  // extern "C"
