// Size-class pages for GC objects (see pages.hpp).
#include "pages.hpp"

#include "arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cyclegc::internal {
namespace {

// Size classes above 512 bytes (below, every multiple of 16 is a class):
// about 25% apart, so rounding wastes at most a fifth of an object.
constexpr uint32_t kMediumSizes[] = {640,  768,  896,  1024, 1280, 1536, 1792, 2048,
                                     2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192};
constexpr size_t kSmallClasses = 512 / kGranule;  // 32

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

}  // namespace

int PageSpace::class_of(size_t size) {
    if (size <= 512) return size == 0 ? 0 : static_cast<int>((size - 1) / kGranule);
    for (size_t i = 0; i < sizeof kMediumSizes / sizeof *kMediumSizes; ++i)
        if (size <= kMediumSizes[i]) return static_cast<int>(kSmallClasses + i);
    return -1;  // large: a page of its own
}

size_t PageSpace::class_size(int size_class) {
    if (static_cast<size_t>(size_class) < kSmallClasses) return (static_cast<size_t>(size_class) + 1) * kGranule;
    return kMediumSizes[static_cast<size_t>(size_class) - kSmallClasses];
}

PageSpace::~PageSpace() {
    auto release = [](Page *page) {
        std::free(page->shared_counts);
        Arena::instance().release(page, page->region_size);  // (new_page unpoisons it before reuse)
    };
    for (Parcel *parcel = inbox_.exchange(nullptr, std::memory_order_acquire), *next; parcel; parcel = next) {
        next = parcel->next;
        for (Page *page : parcel->pages) release(page);  // (not in pages_ yet)
        delete parcel;
    }
    for (Parcel *parcel = arrived_, *next; parcel; parcel = next) {
        next = parcel->next;
        delete parcel;
    }
    for (Page *page : pages_) release(page);
}

void PageSpace::detach(Page *page) {
    if (page->in_partial_list) unlink_partial(page);
    Page *last = pages_.back();
    pages_[page->index_in_heap] = last;
    last->index_in_heap = page->index_in_heap;
    pages_.pop_back();
    page_bytes_ -= page->region_size;
}

void PageSpace::receive_slow() {
    Parcel *parcel = inbox_.exchange(nullptr, std::memory_order_acquire);
    while (parcel) {
        Parcel *next = parcel->next;
        try {
            pages_.reserve(pages_.size() + parcel->pages.size());
        } catch (const std::bad_alloc &) {
            deliver(parcel);  // (taken in at a later call)
            parcel = next;
            continue;
        }
        for (Page *page : parcel->pages) {
            if (!owner_) owner_ = page_heap(page);  // (a heap whose first pages came by transfer)
            page->index_in_heap = static_cast<uint32_t>(pages_.size());
            pages_.push_back(page);
            page_bytes_ += page->region_size;
            if (page->used < page->slot_count) link_partial(page);
        }
        parcel->next = arrived_;
        arrived_ = parcel;
        parcel = next;
    }
}

Page *PageSpace::new_page(Heap &heap, uint32_t slot_size, uint32_t size_class, size_t region_size) {
    size_t header = offsetof(Page, meta);
    uint32_t count = 1;
    if (size_class != kLargeClass) {
        count = static_cast<uint32_t>((region_size - header - kGranule) / (slot_size + sizeof(GcMeta)));
        while (round_up(header + count * sizeof(GcMeta), kGranule) + size_t(count) * slot_size > region_size) --count;
    }
    region_size = round_up(region_size, kPageSize);
    try {
        note_page_allocation(heap);
    } catch (const std::bad_alloc &) {
        return nullptr;  // injected failure
    }
    bool dirty = false;
    void *memory = Arena::instance().allocate(region_size, dirty);
    if (!memory) return nullptr;
    std::atomic<int64_t> *shared_counts = nullptr;
    if (pages_carry_shared_counts(heap)) {
        shared_counts = static_cast<std::atomic<int64_t> *>(std::calloc(count, sizeof *shared_counts));
        if (!shared_counts) {
            Arena::instance().release(memory, region_size);
            return nullptr;
        }
    }
    // A reused page may hold poisoned slots of its last use.
    unpoison_zeroed(memory, region_size);
    try {
        pages_.push_back(static_cast<Page *>(memory));
    } catch (...) {
        std::free(shared_counts);
        Arena::instance().release(memory, region_size);
        return nullptr;
    }
    // Fresh arena memory is zero, and so is memory given back with
    // MADV_DONTNEED; a kept page needs clearing: its header and GcMetas now,
    // a small class's slots as take_slot hands them out (a C++ object's
    // constructor writes its own).
    size_t meta_end = round_up(header + count * sizeof(GcMeta), kGranule);
    bool dirty_slots = dirty && size_class != kLargeClass;
    if (dirty) std::memset(memory, 0, dirty_slots ? meta_end : region_size);
    auto *page = static_cast<Page *>(memory);
    page->dirty_slots = dirty_slots;
    owner_ = &heap;
    page->heap = &heap;
    page->walk_all_tracked = true;
    page->fresh = false;
    page->in_transit = false;
    page->shared_counts = shared_counts;  // (the common case of a page filled by new objects)
    page->slots = static_cast<char *>(memory) + meta_end;
    page->region_size = region_size;
    page->slot_size = slot_size;
    page->slot_count = count;
    page->reciprocal = size_class == kLargeClass ? 0 : static_cast<uint32_t>((uint64_t(1) << 32) / slot_size + 1);
    page->size_class = size_class;
    page->index_in_heap = static_cast<uint32_t>(pages_.size() - 1);
    page_bytes_ += region_size;
    if (size_class != kLargeClass) link_partial(page);
    // Slots are unpoisoned as they are handed out (the rest of the region too:
    // padding after the last slot, or after a large object).
    poison_region(page->slots, region_size - static_cast<size_t>(page->slots - static_cast<char *>(memory)));
    return page;
}

void PageSpace::free_page(Page *page) {
    detach(page);
    std::free(page->shared_counts);
    Arena::instance().release(page, page->region_size);  // (new_page unpoisons it before reuse)
}

void PageSpace::link_partial(Page *page) {
    if (page->size_class >= kClassCount) return;  // large pages have no class list
    if (borrows_) mark_fresh(page);  // (a page allocates only from its class list)
    Page *&head = partial_[page->size_class];
    page->prev_partial = nullptr;
    page->next_partial = head;
    if (head) head->prev_partial = page;
    head = page;
    page->in_partial_list = true;
}

void PageSpace::unlink_partial(Page *page) {
    if (page->size_class >= kClassCount) return;
    if (page->prev_partial)
        page->prev_partial->next_partial = page->next_partial;
    else
        partial_[page->size_class] = page->next_partial;
    if (page->next_partial) page->next_partial->prev_partial = page->prev_partial;
    page->prev_partial = page->next_partial = nullptr;
    page->in_partial_list = false;
}

void *PageSpace::allocate_slow(Heap &heap, size_t size) {
    if (inbox_.load(std::memory_order_relaxed) || arrived_) [[unlikely]]
        receive_transfers(heap);  // (their pages' free slots first)
    int size_class = class_of(size);
    Page *page;
    if (size_class < 0) {
        if (size > SIZE_MAX / 2) return nullptr;
        size_t slot_size = round_up(size, kGranule);
        size_t region = round_up(offsetof(Page, meta) + sizeof(GcMeta), kGranule) + slot_size;
        if (slot_size > UINT32_MAX) return nullptr;
        page = new_page(heap, static_cast<uint32_t>(slot_size), kLargeClass, region);
        if (!page) return nullptr;
    } else {
        page = partial_[size_class];
        while (page && page->used == page->slot_count) {  // filled up by take_slot
            unlink_partial(page);
            page = partial_[size_class];
        }
        if (!page) {
            page = new_page(heap, static_cast<uint32_t>(class_size(size_class)),
                            static_cast<uint32_t>(size_class), kPageSize);
            if (!page) return nullptr;
        }
    }
    if (page->size_class != kLargeClass) return take_slot(page).memory;
    page->bump = 1;
    page->used = 1;
    set_meta_bits(page->meta[0], meta_flag_bits(kAllocated));
    unpoison_zeroed(page->slot(0), page->slot_size);
    return page->slot(0);
}

// Whether an empty page goes back to the system: a large one, or one that is
// not its class's only page with room (keeping one avoids thrashing at a
// page boundary).
static bool empty_page_goes_back(const Page *page) {
    return page->used == 0 && !page->in_transit &&
           (page->size_class == kLargeClass || page->next_partial || page->prev_partial);
}

Page *PageSpace::lend(Heap &heap, size_t size, Heap &to) {
    int size_class = class_of(size);
    Page *page = partial_[size_class];
    while (page && page->used == page->slot_count) {  // filled up by take_slot
        unlink_partial(page);
        page = partial_[size_class];
    }
    if (!page) page = new_page(heap, static_cast<uint32_t>(class_size(size_class)), static_cast<uint32_t>(size_class), kPageSize);
    if (!page) return nullptr;
    unlink_partial(page);
    set_page_heap(page, &to);
    return page;
}

Page *PageSpace::page_to_fill(PageSpace &lender, Heap &shared, Heap &local, size_t size) {
    if (size - 1 >= kSmallLimit) return nullptr;
    int size_class = class_of(size);
    for (Page *page = partial_[size_class]; page; page = partial_[size_class]) {
        if (page->used < page->slot_count) return page;
        unlink_partial(page);  // (full: taken back into the list when a slot is freed)
    }
    if (pages_.size() == pages_.capacity()) {  // (may throw: before a page is lent)
        pages_.reserve(2 * pages_.size() + 8);
        fresh_.reserve(pages_.capacity());  // (mark_fresh never allocates)
    }
    Page *page = lender.lend(shared, size, local);
    if (!page) return nullptr;
    pages_.push_back(page);
    link_partial(page);
    return page;
}

// (release_at() has poisoned the slot.)
void PageSpace::release_slow(Page *page, uint32_t index) {
    receive();  // (a page transferred here is in pages_ before it may be freed)
    if (borrows_) {  // (a lent page stays lent, empty or not, until given back)
        push_free(page, index);
        if (!page->in_partial_list) link_partial(page);
        return;
    }
    if (page->size_class == kLargeClass) {
        // A kept page keeps its header: its one slot must read as free, so
        // that a second free of the object is refused, not a second release.
        set_meta_bits(page->meta[index], 0);
        page->used = 0;
    } else {
        push_free(page, index);
        if (!page->in_partial_list) link_partial(page);
    }
    if (!empty_page_goes_back(page)) return;
    if (walks_) {
        emptied_during_walk_ = true;  // freed when the walk ends (for_each_tracked)
        return;
    }
    free_page(page);
}

void PageSpace::end_transit(Page *page) {
    page->in_transit = false;
    if (!empty_page_goes_back(page)) return;
    if (walks_)
        emptied_during_walk_ = true;
    else
        free_page(page);
}

bool PageSpace::goes_back(size_t p) const {
    return page_heap(pages_[p]) == owner_ && empty_page_goes_back(pages_[p]);  // (not a lent page)
}

void PageSpace::walks_ended() {
    if (!bounded_release_) {
        free_emptied_pages();
        return;
    }
    emptied_during_walk_ = false;
    release_cursor_ = pages_.size();  // (a round under way starts again: it covers every page)
}

void PageSpace::free_emptied_pages() {
    emptied_during_walk_ = false;
    release_cursor_ = 0;
    size_t released = 0;
    for (size_t p = 0; p < pages_.size();) {
        if (goes_back(p)) {
            free_page(pages_[p]);  // (the last page takes its place)
            ++released;
        } else {
            ++p;
        }
    }
    most_released_at_once_ = std::max(most_released_at_once_, released);
}

void PageSpace::bound_release(bool bounded) {
    bounded_release_ = bounded;
    if (bounded || !release_cursor_) return;
    release_cursor_ = 0;
    emptied_during_walk_ = true;
    if (!walks_) free_emptied_pages();
}

void PageSpace::release_emptied_step() {
    if (walks_ || !release_cursor_) return;
    size_t released = 0;
    // (Pages freed since the last step made pages_ shorter.)
    release_cursor_ = std::min(release_cursor_, pages_.size());
    for (size_t visits = 0; release_cursor_ && visits < kVisitsPerStep && released < kReleasesPerStep; ++visits) {
        size_t p = --release_cursor_;
        if (!goes_back(p)) continue;
        free_page(pages_[p]);  // (the last page, checked already, takes its place)
        ++released;
    }
    most_released_at_once_ = std::max(most_released_at_once_, released);
}

}  // namespace cyclegc::internal
