// Local heaps: each thread attached to a shared heap allocates, tracks,
// untracks and frees its own objects without the shared heap's state lock,
// through the same inline fast paths as a confined heap, in a part of the
// shared heap that is its own (a Heap whose home is the shared heap):
//  - pages lent to it (PageSpace::lend): only it takes and frees their
//    slots; another thread's free of one goes to the page's remote list
//    (a lock-free push), which the thread takes back at its next slow
//    allocation, and a stopped world at once;
//  - the objects it tracks in them: flagged tracked with GcMeta::word
//    kPrivateYoung, in no list; any thread untracks one by its flag;
//  - its count of allocations less frees, added to the shared heap's at
//    each slow allocation, with a threshold of what the shared heap's count
//    leaves.
// A stopped world takes every part in (take_back): the private objects
// listed in the shared heap's generation 0 (found in the pages where they
// can be: PageSpace::fresh_pages), the counts added; the collection then
// sees one heap, as a confined one. The pages stay lent (the empty ones go
// back): the collection leaves its survivors in them out of the lists
// (unlisted in generation 1, or old: place_in_generation), so that their
// thread untracks and frees them later without the lock (untrack_own),
// counting in its local heap what the shared heap's counts lose. A thread
// that leaves the heap hands every page back (hand_back). A thread parks
// only at a safepoint, where its part is consistent (slow paths change a
// part only under the state lock, whose wait is a safepoint before
// anything is changed).
#include "heap.hpp"
#include "shared_heap.hpp"

#include <algorithm>
#include <new>

namespace cyclegc::internal {

namespace {

// A local heap counts from this bias, not from 0: free_slot stops a count
// at 0, and a local count at 0 after each fold would drop the frees of
// objects made before it, so the shared count would only grow (binary-trees
// on one thread: twice a confined heap's young collections, most of them
// on a few thousand objects).
constexpr cgc_ssize_t kLocalCountBias = cgc_ssize_t(1) << 40;

// A local heap's threshold is read by its thread's allocation fast path
// while a stopping thread may set it (poke_local_heaps): relaxed atomics.
void set_local_threshold(Heap &local, cgc_ssize_t threshold) {
    std::atomic_ref(local.generations[0].threshold).store(threshold, std::memory_order_relaxed);
}

}  // namespace

void poke_local_heaps(Heap &shared) {
    for (Heap *local : shared.shared->locals) set_local_threshold(*local, 0);
}

Heap *make_local_heap(Heap &shared) {
    Heap *local = new (std::nothrow) Heap();
    if (!local) return nullptr;
    local->home = &shared;
    local->shared = shared.shared;  // (is_shared(): objects get the count word)
    local->space.set_borrows();
    local->unlisted_word = kPrivateYoung;
    // Its generation 0 array has no room, so that try_track places each
    // object unlisted (word kPrivateYoung), not in an array of its own.
    local->young_unlisted[0] = 1;
    local->generations[0].count = kLocalCountBias;
    set_local_threshold(*local, 0);  // (its first allocation borrows a page)
    // Deaths take cgc_dealloc's general path, with the thread's trashcan
    // (t_shared_trashcan) and the shared heap's phase.
    local->trashcan.depth = kMaxDeallocDepth;
    return local;
}

void delete_local_heap(Heap *local) {
    if (!local) return;
    local->shared = nullptr;  // (the shared heap's, not deleted with it)
    delete local;
}

Heap *local_heap_here(const Heap &shared) {
    Heap *current = t_current_heap;
    return current && current->home == &shared && current != &shared ? current : nullptr;
}

cgc_ssize_t young_count_with_locals(const Heap &shared) {
    cgc_ssize_t count = shared.generations[0].count;
    // (Each owner writes its local count with relaxed atomic stores: an
    // estimate, exact at a stop, which takes every local heap back. The
    // slots other threads freed in its pages count as freed already: its
    // count goes down only as it releases them.)
    for (Heap *local : shared.shared->locals)
        count += std::atomic_ref(local->generations[0].count).load(std::memory_order_relaxed) - kLocalCountBias -
                 static_cast<cgc_ssize_t>(local->space.remote_pending());
    return count;
}

void fold_count(Heap &shared, Heap &local) {
    cgc_ssize_t &count = shared.generations[0].count;
    count = std::max<cgc_ssize_t>(count + (local.generations[0].count - kLocalCountBias), 0);
    local.generations[0].count = kLocalCountBias;
}

namespace {

// The untrackings of collection survivors the local heap's thread made
// without the lock (untrack_own), counted in the shared heap.
void fold_local_changes(Heap &shared, Heap &local) {
    size_t &unlisted = shared.young_unlisted[1];
    unlisted -= std::min(unlisted, local.young_unlisted[1]);
    local.young_unlisted[1] = 0;
    shared.long_lived_pending += local.long_lived_pending;
    local.long_lived_pending = 0;
}

// The slots other threads freed in the local heap's pages, released (and
// uncounted) here.
void take_remote_frees(Heap &local) {
    Generation &young = local.generations[0];
    local.space.drain_remote_frees([&] {
        if (young.count > 0) young.count--;
    });
}

// Lists the objects the thread tracked since the last stop in the shared
// heap's generation 0 (only the fresh pages can hold them).
// (In generation 0 already, as try_track left them: pushed inline while
// its array has room, through place_in_generation once it is full.)
void list_private_young(Heap &shared, Heap &local) {
    ObjectArray &young = shared.young[0];
    for (Page *page : local.space.fresh_pages()) {
        for (uint32_t i = 0; i < page->bump; ++i) {
            GcMeta &meta = page->meta[i];
            if (!(meta.flags & kTracked) || meta.word != kPrivateYoung) continue;
            cgc_object *op = page->object_at(i);
            if (meta.generation != 0 || young.size() == young.capacity()) {
                place_in_generation(shared, op, meta, 0);
                continue;
            }
            meta.word = static_cast<uint32_t>(young.size());
            young.push_back(op);
        }
    }
}

}  // namespace

void take_back(Heap &shared, Heap &local) {
    take_remote_frees(local);
    list_private_young(shared, local);
    // The pages stay lent: the objects surviving the collection in them
    // stay the thread's to free without the lock (place_in_generation).
    local.space.give_back_empty(shared.space);
    local.space.restart_fresh();
    fold_count(shared, local);
    fold_local_changes(shared, local);
    set_local_threshold(local, 0);  // (its next allocation works out its threshold again)
}

void hand_back(Heap &shared, Heap &local) {
    take_back(shared, local);
    local.space.give_back(shared.space, [] {});
}

void *allocate_in_local(Heap &shared, Heap &local, size_t size) {
    take_remote_frees(local);
    Page *page;
    try {
        page = local.space.page_to_fill(shared.space, shared, local, size);
    } catch (const std::bad_alloc &) {
        page = nullptr;
    }
    if (!page) return nullptr;
    const Generation &total = shared.generations[0];
    cgc_ssize_t left = total.threshold == PTRDIFF_MAX
                           ? PTRDIFF_MAX
                           : kLocalCountBias + std::max<cgc_ssize_t>(total.threshold - young_count_with_locals(shared), 0);
    // (A stop asked before this thread took the state lock poked the local
    // heaps already: keep this one poked.)
    set_local_threshold(local, shared.shared->stop_requested.load(std::memory_order_relaxed) ? 0 : left);
    return local.space.take_slot<true>(page).memory;
}

void release_slot(Heap &heap, Page *page, uint32_t index, bool counted) {
    Heap *user = page_heap(page);
    // (Not lent, or lent to this thread, or the world stopped by this
    // thread: the page's thread is parked or detached, its part untouched.)
    if (user == &heap || user == t_current_heap || (heap.is_shared() && stopped_by_this_thread(heap))) {
        if (counted)
            free_slot(*user, page, index);
        else
            user->space.release_at(page, index);
        return;
    }
    // Lent to another thread: the slot reads as free (a second free of it
    // is refused) until that thread takes it back.
    GcMeta &meta = page->meta[index];
    set_meta_bits(meta, meta_bits(meta) & kMetaObjectOffsetBits);
    user->space.push_remote(page, index);
}

}  // namespace cyclegc::internal
