// Object storage: size-class pages with the collector's metadata on the side.
//
// Every GC object lives in a slot of a page. A page is 64 KiB, aligned to
// its size, so the page of an object is its address with the low 16 bits
// cleared; objects too large for a size class get a page of their own (one
// slot, same alignment, the object within its first 64 KiB). The page starts
// with a header and one 8-byte GcMeta per slot, then the slots:
//
//   page (64 KiB aligned)
//   +--------+-----------------------------+---------------------------+
//   | header | meta[0] meta[1] ... meta[n] | slot 0 | slot 1 | ... | n  |
//   +--------+-----------------------------+---------------------------+
//
// So the collector's bookkeeping is 8 bytes per object, outside the object:
// the object is exactly PyObject_HEAD + its fields. The collector walks pages
// in address order (sequential, prefetch-friendly) for full collections
// (page_walk.hpp); young collections use per-generation arrays of the young
// objects.
//
// A C++ object (cyclegc::object) may start its C part a few bytes into its
// slot (after a vtable pointer): GcMeta::object_offset records where.
#pragma once

#include "poison.hpp"

#include <cyclegc/cyclegc.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace cyclegc::internal {

// Pages only keep a pointer to their heap.
struct Heap;

// Counts an allocation the pages make for themselves (a page): defined by
// the heap (heap.cpp), it throws std::bad_alloc when fault injection says
// this one fails.
void note_page_allocation(Heap &heap);
// Whether the heap's pages carry shared reference counts (a shared heap:
// shared_counts.cpp).
bool pages_carry_shared_counts(const Heap &heap);

// The per-object metadata: 8 bytes.
struct GcMeta {
    // gc_refs while the collector counts references; otherwise the object's
    // index in its young-generation array or in the collector's unreachable
    // array.
    uint32_t word;
    uint8_t flags;
    uint8_t generation;  // 0, 1, 2, or kPermanent (frozen)
    uint8_t object_offset;
    uint8_t schedule;  // kPromotedPending or 0 (the collector's schedule)
};
static_assert(sizeof(GcMeta) == 8);

// A GcMeta as one 64-bit value (little-endian: word in the low 32 bits,
// then flags, generation, object_offset), for hot paths that read or write
// it whole.
constexpr uint64_t kMetaWordBits = 0xFFFFFFFFu;
constexpr uint64_t kMetaGenerationBits = uint64_t(0xFF) << 40;
constexpr uint64_t kMetaGeneration1 = uint64_t(1) << 40;
constexpr uint64_t kMetaGeneration2 = uint64_t(2) << 40;  // generation 2 (and above: permanent)
constexpr uint64_t kMetaObjectOffsetBits = uint64_t(0xFF) << 48;
// GcMeta::schedule: promoted to generation 2 by a generation-1 collection
// since the last full collection, and counted in Heap::long_lived_pending
// until then, or until it is untracked (dies).
constexpr uint8_t kPromotedPending = 1;
constexpr uint64_t kMetaPromotedPending = uint64_t(kPromotedPending) << 56;
// GcMeta::schedule, an incremental cycle's marks on generation-2 objects
// (incremental.cpp): a candidate of the cycle; marked reachable by it; held
// in the cycle's mark stack or gathered set at index GcMeta::word (an entry
// that untracking the object must clear).
constexpr uint8_t kIncrCandidate = 2;
constexpr uint8_t kIncrMarked = 4;
constexpr uint8_t kIncrListed = 8;
constexpr uint64_t kMetaIncrListed = uint64_t(kIncrListed) << 56;
// Proven garbage that waits, in the cycle's to-clear list (kIncrListed too),
// for a later slice's tp_clear: in no generation's set, no collection's
// candidate, and not seen by the heap's introspection (in_collection_set).
constexpr uint8_t kIncrClearing = 16;
constexpr uint64_t kMetaScheduleBits = uint64_t(0xFF) << 56;
constexpr uint64_t meta_flag_bits(uint8_t flags) { return uint64_t(flags) << 32; }
// (Relaxed-atomic: a thread attached to a shared heap reads the GcMeta of
// its own objects on its fast paths while another, under the state lock,
// may move such an object in a generation's array and store its index.)
inline uint64_t meta_bits(const GcMeta &meta) {
    return __atomic_load_n(reinterpret_cast<const uint64_t *>(&meta), __ATOMIC_RELAXED);
}
inline void set_meta_bits(GcMeta &meta, uint64_t bits) { std::memcpy(&meta, &bits, sizeof bits); }
static_assert(std::endian::native == std::endian::little, "GcMeta bit layout");

// GcMeta::flags
constexpr uint8_t kAllocated = 1;     // the slot holds an object
constexpr uint8_t kTracked = 2;       // the collector considers it
constexpr uint8_t kFinalized = 4;     // tp_finalize has run (for life)
constexpr uint8_t kCollecting = 8;    // in the set being collected
constexpr uint8_t kReachable = 16;    // found reachable by this collection
constexpr uint8_t kHasWeakrefs = 32;  // weak references to it exist
constexpr uint8_t kUncollectable = 64;  // set apart by this collection (legacy finalizer)
constexpr uint8_t kHeld = 128;          // the collector holds a reference while user code runs
constexpr uint8_t kPermanent = 3;     // GcMeta::generation of frozen objects
// In a collection's set: the running collection's (kCollecting), or the
// incremental cycle's garbage waiting to be cleared. The program cannot
// reach it: walks over the heap for the program skip it.
inline bool in_collection_set(const GcMeta &meta) {
    return (meta.flags & kCollecting) || (meta.schedule & kIncrClearing);
}

// The slot holds an object and none of `flags` is set: the fast paths'
// test, which sends a slot freed already to their slow path too (one more
// instruction than testing `flags` alone).
inline bool allocated_without(const GcMeta &meta, uint8_t flags) {
    return ((meta.flags ^ kAllocated) & (kAllocated | flags)) == 0;
}
// An allocated slot's GcMeta that needs nothing when it is freed: not
// tracked, no weak references, not held by the collector.
inline bool is_plain_allocated(const GcMeta &meta) { return allocated_without(meta, kTracked | kHasWeakrefs | kHeld); }

constexpr size_t kPageSize = size_t(64) << 10;
constexpr size_t kGranule = 16;
// The largest GC object: Page::slot_size is 32 bits (4 GiB less a granule).
constexpr size_t kMaxObjectSize = size_t(UINT32_MAX) / kGranule * kGranule;

struct Page {
    // What meta_of() reads first, in the page's first cache line.
    char *slots;
    uint32_t reciprocal;  // floor(2^32 / slot_size) + 1: index = offset * reciprocal >> 32
    uint32_t slot_size;
    uint32_t slot_count;
    uint32_t bump;  // slots [bump, slot_count) were never used
    Heap *heap;
    // Freed slots: index + 1 of the first (0: none), each freed slot's GcMeta
    // word holding the next. The slot's own memory is left alone, so a stray
    // Py_DECREF of a freed object finds its count at 0 and is reported
    // (a count below zero) instead of corrupting a free-list link. (Under
    // ASan or memcheck, the rest of a freed slot is poisoned: poison.hpp.)
    uint32_t free_head;
    uint32_t used;
    uint32_t size_class;     // kLargeClass for a large page
    uint32_t index_in_heap;  // in PageSpace::pages() (a full collection's walk order)
    Page *prev_partial;      // pages of this size class with free slots (and perhaps a
                             // head page that just filled up: see take_slot)
    Page *next_partial;
    size_t region_size;  // bytes of the allocation (large pages: more than kPageSize)
    bool in_partial_list;
    // Sent to another heap by cgc_heap_transfer and not yet taken in by it
    // (transfer.cpp): kept even when it empties, as the receiving heap will
    // read the GcMeta of its transferred objects.
    bool in_transit;
    // Set by the last walk that found none of the page's slots free or
    // untracked (for_each_tracked, page_walk.hpp): its next walk takes the
    // plain loop, whose test is predictable there. Only a hint: a wrong
    // one costs that walk its mispredictions, and the walk corrects it.
    bool walk_all_tracked;
    // A page lent to a thread that may hold objects it tracked since the
    // last stop of the world (PageSpace::fresh_pages): walked at the next.
    bool fresh;
    // A kept page handed out again (Arena::allocate's `dirty`): its header
    // and GcMetas were zeroed, its never-used slots [bump, slot_count) hold
    // old bytes, zeroed as they are handed out (not the whole page at once).
    bool dirty_slots;
    // A shared heap's page: each slot's shared reference count
    // (shared_heap.hpp), allocated with the page; null in a confined heap.
    std::atomic<int64_t> *shared_counts;
    // A shared heap's page lent to a thread (its local heap, PageSpace::lend):
    // slots that other threads freed, pushed without a lock for that thread
    // to take back (index + 1 of the first, 0: none; each slot's shared
    // count holds the next). See push_remote and drain_remote.
    std::atomic<uint32_t> remote_free;
    alignas(8) GcMeta meta[];  // slot_count entries (a flexible array: GNU C++); 8-aligned: AS_GC

    uint32_t index_of(const void *p) const {
        uint64_t offset = static_cast<uint64_t>(static_cast<const char *>(p) - slots);
        return static_cast<uint32_t>((offset * reciprocal) >> 32);
    }
    char *slot(uint32_t index) const { return slots + size_t(index) * slot_size; }
    cgc_object *object_at(uint32_t index) const {
        return reinterpret_cast<cgc_object *>(slot(index) + meta[index].object_offset);
    }
};

constexpr uint32_t kLargeClass = UINT32_MAX;

inline cgc_object *object_at_slot(void *slot, const GcMeta &meta) {
    return reinterpret_cast<cgc_object *>(static_cast<char *>(slot) + meta.object_offset);
}

inline Page *page_of(const void *p) {
    return reinterpret_cast<Page *>(reinterpret_cast<uintptr_t>(p) & ~(uintptr_t(kPageSize) - 1));
}
// The heap whose fast paths use the page: its heap, or the local heap of
// the thread a shared heap lent it to. Atomic: another thread may lend the
// page meanwhile; acquire, to read the local heap's fields (home) its
// thread wrote before the page was lent (a plain load and store on x86).
inline Heap *page_heap(const Page *page) {
    return std::atomic_ref(const_cast<Page *>(page)->heap).load(std::memory_order_acquire);
}
inline void set_page_heap(Page *page, Heap *heap) {
    std::atomic_ref(page->heap).store(heap, std::memory_order_release);
}
inline GcMeta &meta_of(const void *p) {
    Page *page = page_of(p);
    return page->meta[page->index_of(p)];
}

// Zeroes a slot (a multiple of kGranule bytes). Up to 64 bytes, the common
// sizes, with four 16-byte stores that overlap for smaller slots: no loop.
inline void zero_slot(char *slot, uint32_t size) {
    static_assert(kGranule == 16);
    if (size <= 64) {
        __builtin_memset(slot, 0, 16);
        __builtin_memset(slot + size - 16, 0, 16);
        if (size > 32) {
            __builtin_memset(slot + 16, 0, 16);
            __builtin_memset(slot + size - 32, 0, 16);
        }
        return;
    }
    for (uint32_t i = 0; i < size; i += kGranule) __builtin_memset(slot + i, 0, kGranule);
}

// GcMeta::schedule of an object that cgc_heap_transfer untracked on its way
// to another heap: that heap tracks it again when it takes its page in
// (receive_transfers), unless it was freed or tracked meanwhile.
constexpr uint8_t kInTransit = 32;

// Pages sent to another heap by one cgc_heap_transfer (transfer.cpp).
struct Parcel {
    Parcel *next = nullptr;
    std::vector<Page *> pages;
};

// Takes in the pages other threads transferred to `heap`, and tracks their
// transferred objects again unless a collection is analysing (transfer.cpp).
void receive_transfers(Heap &heap);

// A slot just handed out, and its GcMeta.
struct SlotRef {
    void *memory;
    GcMeta *meta;
};

// The pages of one heap, by size class.
class PageSpace {
  public:
    PageSpace() = default;
    PageSpace(const PageSpace &) = delete;
    PageSpace &operator=(const PageSpace &) = delete;
    ~PageSpace();

    // A zero-filled slot of at least `size` bytes with its GcMeta marked
    // allocated (not tracked), or nullptr when out of memory.
    void *allocate(Heap &heap, size_t size) {
        if (Page *page = page_with_room(size)) return take_slot<true>(page).memory;
        return allocate_slow(heap, size);
    }
    // The fast path's page for `size` bytes: a page of its small size class
    // with a free slot, or nullptr (then allocate() takes its slow path).
    Page *page_with_room(size_t size) const {
        if (size - 1 >= kSmallLimit) return nullptr;  // (size 0 wraps around)
        Page *page = partial_[(size - 1) / kGranule];
        return page && page->used < page->slot_count ? page : nullptr;
    }
    // A slot of a page with room (small classes: page_with_room()), zeroed if
    // `Zero` (else the caller initializes it: a C++ constructor). No call:
    // a page that fills up stays in its class list until the next allocation
    // finds it full (allocate_slow unlinks it), so callers stay leaf
    // functions with nothing to save.
    template <bool Zero = true>
    SlotRef take_slot(Page *page) {
        // (Two tests of `head`: written as one branch, GCC gives
        // cyclegc::make's path two more instructions.)
        uint32_t index;
        uint32_t head = page->free_head;
        if (head) {
            index = head - 1;
            page->free_head = page->meta[index].word;
        } else {
            index = page->bump++;
        }
        char *slot = page->slot(index);
        if (head || page->dirty_slots) {
            // Reused, or never used in a kept page: zero it (a fresh page's
            // slots are zero).
            uint32_t size = page->slot_size;
            unpoison_slot(slot, size);
            if constexpr (Zero) zero_slot(slot, size);
        } else {
            unpoison_zeroed(slot, page->slot_size);
        }
        ++page->used;
        set_meta_bits(page->meta[index], meta_flag_bits(kAllocated));  // (one store: see track_fast)
        return {slot, &page->meta[index]};
    }
    void release(void *slot) {
        Page *page = page_of(slot);
        release_at(page, page->index_of(slot));
    }
    // release() for a caller that knows the slot's page and index.
    void release_at(Page *page, uint32_t index) {
        // (Before the GcMeta, and its object offset, is overwritten.)
        if constexpr (kPoisonSlots)
            poison_free_slot(page->slot(index), page->slot_size, page->meta[index].object_offset);
        // The common case: the page stays (it keeps other objects, or it is
        // its class's only page with room, which is kept even when empty).
        if (page->in_partial_list && (page->used > 1 || (!page->next_partial && !page->prev_partial))) {
            push_free(page, index);
            return;
        }
        release_slow(page, index);
    }
    // Slot capacity of the object at `p` (for resize).
    static size_t capacity(const void *p) { return page_of(p)->slot_size; }

    // cgc_heap_transfer (transfer.cpp). The sending thread takes a page out
    // of its heap's space (detach) and delivers the parcel to the receiving
    // heap's inbox (any thread, lock-free); the receiving heap's thread takes
    // the inbox's pages into its space (receive: at a page's release, a slow
    // allocation, a collection), then takes the parcels (take_arrived) to
    // track their objects again and end their pages' transit (end_transit).
    void detach(Page *page);
    void deliver(Parcel *parcel) {
        parcel->next = inbox_.load(std::memory_order_relaxed);
        while (!inbox_.compare_exchange_weak(parcel->next, parcel, std::memory_order_release,
                                             std::memory_order_relaxed)) {
        }
    }
    void receive() {
        if (inbox_.load(std::memory_order_relaxed)) [[unlikely]] receive_slow();
    }
    Parcel *take_arrived() { return std::exchange(arrived_, nullptr); }
    void end_transit(Page *page);
    bool walking() const { return walks_ != 0; }

    // Keeps every page at its index in pages() until unpin(), as a walk
    // does (pages that empty meanwhile are freed then): an incremental
    // cycle walks the pages slice by slice with a (page, slot) cursor.
    void pin() { ++walks_; }
    void unpin() {
        if (--walks_ == 0 && emptied_during_walk_) walks_ended();
    }

    // Bounded release (a pause budget is set): the pages that emptied while
    // walks ran are freed a few per release_emptied_step(), not all when the
    // walks end (on a 10M-object heap, 0.8 ms in one pause). Turning it off
    // frees those still waiting (when no walk runs).
    void bound_release(bool bounded);
    // Frees at most kReleasesPerStep of the waiting pages, reading at most
    // kVisitsPerStep page headers; nothing while a walk runs.
    void release_emptied_step();
    bool release_waiting() const { return release_cursor_ != 0 || emptied_during_walk_; }
    // The most pages freed by one release (a step, or all at a walk's end).
    size_t most_released_at_once() const { return most_released_at_once_; }
    static constexpr size_t kReleasesPerStep = 8;
    static constexpr size_t kVisitsPerStep = 512;

    const std::vector<Page *> &pages() const { return pages_; }
    size_t page_bytes() const { return page_bytes_; }
    // (Pages lent to a thread are not counted: it changes their counts
    // without the lock; a stopped world has taken them back.)
    size_t live_objects() {
        receive();  // (pages transferred here count)
        size_t live = 0;
        for (Page *page : pages_)
            if (page_heap(page) == owner_) live += page->used;
        return live;
    }

    // ---- A shared heap's pages lent to its threads' local heaps ----
    // (The lender's calls hold the shared heap's state lock.)
    // A local heap's page with a free slot of the small class of `size`
    // bytes: one of its own, or one `lender` (the shared heap's space)
    // lends it. Null: not a small size, or out of memory.
    Page *page_to_fill(PageSpace &lender, Heap &shared, Heap &local, size_t size);
    // Every borrowed page back to `lender`, its remote frees taken first
    // (released with release_at: the caller counts them).
    template <class Released>
    void give_back(PageSpace &lender, Released released) {
        forget_fresh();
        for (Page *page : pages_) {
            drain_remote(page, released);
            return_page(lender, page);
        }
        pages_.clear();
    }
    // The borrowed pages left empty back to `lender` (they hold nothing a
    // thread could free lock-free; kept, they would hoard memory).
    void give_back_empty(PageSpace &lender) {
        std::erase_if(pages_, [&](Page *page) {
            if (page->used != 0) return false;
            return_page(lender, page);
            return true;
        });
    }
    // The borrowed pages where the thread may have tracked objects since the
    // last stop of the world: those in a class list at that stop and those
    // linked in since (a page allocates only from a class list), and those
    // where it tracked an object allocated before (mark_fresh).
    const std::vector<Page *> &fresh_pages() const { return fresh_; }
    void mark_fresh(Page *page) {
        if (page->fresh) return;
        page->fresh = true;
        fresh_.push_back(page);  // (room reserved: fresh_ holds borrowed pages, each once)
    }
    // A stop listed the fresh pages' new objects: from now on only the pages
    // with room are fresh (after give_back_empty).
    void restart_fresh() {
        forget_fresh();
        for (Page *head : partial_)
            for (Page *page = head; page; page = page->next_partial) mark_fresh(page);
    }
    // Slots other threads freed in the borrowed pages, released here.
    template <class Released>
    void drain_remote_frees(Released released) {
        for (Page *page : pages_) drain_remote(page, released);
    }
    // Frees a slot of a page lent to another thread (this space's): pushed
    // on its remote list, for that thread (or a stopped world) to release.
    void push_remote(Page *page, uint32_t index) {
        // (Counted first: remote_pending() never misses a pushed slot.)
        remote_pending_.fetch_add(1, std::memory_order_relaxed);
        uint32_t head = page->remote_free.load(std::memory_order_relaxed);
        do {
            page->shared_counts[index].store(head, std::memory_order_relaxed);
        } while (!page->remote_free.compare_exchange_weak(head, index + 1, std::memory_order_release,
                                                          std::memory_order_relaxed));
    }
    const std::vector<Page *> &borrowed() const { return pages_; }
    // Slots pushed on the remote lists and not yet released (an estimate
    // while other threads push).
    size_t remote_pending() const { return remote_pending_.load(std::memory_order_relaxed); }

    // Held by a walk over the pages (page_walk.hpp): pages that empty while
    // walks run stay in place until the last one ends (they nest: a traversal
    // may ask gc_module for referrers), which frees them.
    struct WalkGuard {
        explicit WalkGuard(PageSpace &walked) : space(walked) { ++space.walks_; }
        ~WalkGuard() {
            if (--space.walks_ == 0 && space.emptied_during_walk_) space.walks_ended();
        }
        WalkGuard(const WalkGuard &) = delete;
        WalkGuard &operator=(const WalkGuard &) = delete;
        PageSpace &space;
    };

  private:
    // The last walk ended and pages emptied during it: freed now, or (bounded)
    // a round of release steps begins.
    void walks_ended();
    void free_emptied_pages();
    // Whether pages_[p] is an empty page of this heap's to free (not lent).
    bool goes_back(size_t p) const;
    // A page of the small class of `size` bytes with a free slot, taken
    // off this (lender's) class list for `to`, or null (out of memory).
    Page *lend(Heap &heap, size_t size, Heap &to);
    void forget_fresh() {
        for (Page *page : fresh_) page->fresh = false;
        fresh_.clear();
    }
    void return_page(PageSpace &lender, Page *page) {
        if (page->in_partial_list) unlink_partial(page);
        page->fresh = false;
        set_page_heap(page, const_cast<Heap *>(lender.owner_));
        if (page->used < page->slot_count) lender.link_partial(page);
    }
    template <class Released>
    void drain_remote(Page *page, Released released) {
        uint32_t head = page->remote_free.exchange(0, std::memory_order_acquire);
        while (head) {
            uint32_t index = head - 1;
            head = static_cast<uint32_t>(page->shared_counts[index].load(std::memory_order_relaxed));
            release_at(page, index);
            remote_pending_.fetch_sub(1, std::memory_order_relaxed);
            released();
        }
    }

    static constexpr int kClassCount = 48;
    static constexpr size_t kSmallLimit = 512;  // every multiple of kGranule up to here is a class

    // Puts a freed slot on its page's free list.
    static void push_free(Page *page, uint32_t index) {
        set_meta_bits(page->meta[index], page->free_head);  // (the free-list link, in one store)
        page->free_head = index + 1;
        --page->used;
    }
    void *allocate_slow(Heap &heap, size_t size);
    void release_slow(Page *page, uint32_t index);
    void receive_slow();
    static int class_of(size_t size);
    static size_t class_size(int size_class);
    Page *new_page(Heap &heap, uint32_t slot_size, uint32_t size_class, size_t region_size);
    void free_page(Page *page);
    void link_partial(Page *page);
    void unlink_partial(Page *page);

    Page *partial_[kClassCount] = {};
    std::vector<Page *> pages_;
    std::vector<Page *> fresh_;  // (a local heap's: fresh_pages)
    size_t page_bytes_ = 0;
    int walks_ = 0;
    bool emptied_during_walk_ = false;
    // Bounded release: the pages below this index are still to be checked
    // (0: none). Checked downwards: free_page() moves the last page into the
    // freed one's place, so a page below the cursor stays below it.
    size_t release_cursor_ = 0;
    bool bounded_release_ = false;
    size_t most_released_at_once_ = 0;
    std::atomic<Parcel *> inbox_{nullptr};  // delivered, not yet received
    std::atomic<size_t> remote_pending_{0};  // (a local heap's: remote_pending)
    Parcel *arrived_ = nullptr;             // received, objects not yet tracked again
    const Heap *owner_ = nullptr;  // (set by the first new_page)
    // A local heap's: its pages are lent (pages_ lists them), never made or
    // freed here (release_slow keeps an empty one).
    bool borrows_ = false;

  public:
    void set_borrows() { borrows_ = true; }
};

}  // namespace cyclegc::internal
