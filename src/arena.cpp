// The GC page arena (see arena.hpp).
#include "arena.hpp"

#include "pages.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace cyclegc::internal {
namespace {

// 64 GiB of address space: a billion small objects. Reserving costs nothing
// but page-table entries for what is used. Where that much cannot be had
// (an address-space limit; valgrind, which cannot map 64 GiB), smaller ones
// are tried (smaller_reservation), down to kMinReservation.
constexpr size_t kFirstReservation = size_t(64) << 30;
constexpr size_t kMinReservation = size_t(1) << 20;

// The next size to try: a quarter down to 1 GiB (64, 16, 4, 1 GiB: valgrind
// maps 32 GiB, but its leak check then takes minutes at exit, against
// seconds for 16), then halves.
size_t smaller_reservation(size_t size) {
    size_t smaller = size > (size_t(1) << 30) ? size / 4 : size / 2;
    return smaller / kPageSize * kPageSize;
}

// Empty single pages are kept for reuse, up to this many bytes, without
// giving their memory back: handing such a page out again costs a memset
// (about 2 us for 64 KiB) instead of a madvise call now and 16 page faults
// at its next use (docs/design.md, "kept empty pages").
// Beyond it, the memory of pages goes back to the system at once.
constexpr size_t kMaxRetainedBytes = size_t(32) << 20;

struct ArenaState {
    std::mutex mutex;  // (held across fork(): Arena::before_fork)
    uintptr_t next = 0;                          // never-used space of the current reservation
    uintptr_t end = 0;
    std::vector<void *> retained_pages;          // released single pages, memory kept (dirty)
    std::vector<void *> free_pages;              // single pages, memory given back (zero)
    std::multimap<size_t, void *> free_regions;  // larger regions, memory given back, by size
};

ArenaState &state() {
    static ArenaState *s = new ArenaState();  // outlives every heap
    return *s;
}

// `size` bytes of address space aligned to kPageSize (0: none to be had).
uintptr_t map_aligned(size_t size) {
    void *p = mmap(nullptr, size + kPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    auto start = reinterpret_cast<uintptr_t>(p);
    uintptr_t begin = (start + kPageSize - 1) & ~(uintptr_t(kPageSize) - 1);
    if (begin != start) munmap(p, begin - start);
    munmap(reinterpret_cast<void *>(begin + size), start + kPageSize - begin);
    if ((begin + size) >> PageMap::kAddressBits) {  // beyond what the page map covers
        munmap(reinterpret_cast<void *>(begin), size);
        return 0;
    }
    return begin;
}

// Remembers a region whose memory was given back, for reuse.
void keep_free(ArenaState &s, void *region, size_t bytes) {
    try {
        if (bytes == kPageSize)
            s.free_pages.push_back(region);
        else
            s.free_regions.emplace(bytes, region);
    } catch (...) {
        // Losing track of a region leaks address space, not memory.
    }
}

// A free region of at least `bytes`, split if larger (the rest stays free).
void *take_free_region(ArenaState &s, size_t bytes) {
    auto found = s.free_regions.lower_bound(bytes);
    if (found == s.free_regions.end()) return nullptr;
    auto [size, region] = *found;
    s.free_regions.erase(found);
    if (size > bytes) keep_free(s, static_cast<char *>(region) + bytes, size - bytes);
    return region;
}

}  // namespace

Arena *g_arena = &Arena::instance();

Arena &Arena::instance() {
    static Arena *arena = new Arena();
    return *arena;
}

Arena::Arena() {
    // A child forked while another thread is inside the arena would find its
    // lock held for ever: the lock is taken around fork() instead.
    pthread_atfork(before_fork, after_fork, after_fork);
    if (std::getenv("CYCLEGC_NO_ARENA")) return;  // tests: every region a reservation of its own
    if (const char *bytes = std::getenv("CYCLEGC_ARENA_BYTES")) {  // a small arena, to test its growth
        reserve_first(std::strtoull(bytes, nullptr, 10) / kPageSize * kPageSize);
        return;
    }
    // Under an address-space limit, start with at most a quarter of it: the
    // rest of the program needs address space too (more is reserved when
    // this fills up).
    size_t size = kFirstReservation;
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        size = std::min<size_t>(size, limit.rlim_cur / 4 / kPageSize * kPageSize);
    for (; size >= kMinReservation; size = smaller_reservation(size))
        if (reserve_first(size)) return;
}

bool Arena::reserve_first(size_t size) {
    if (size == 0) return false;
    uintptr_t begin = map_aligned(size);
    if (!begin) return false;
    base_ = begin;
    size_ = size;
    growth_ = size;
    state().next = begin;
    state().end = begin + size;
    return true;
}

void Arena::before_fork() { state().mutex.lock(); }
void Arena::after_fork() { state().mutex.unlock(); }

// A new reservation for at least `bytes`, as large as the first if the
// address space allows (s.mutex held). What the current one has left
// becomes free pages.
bool Arena::grow(size_t bytes) {
    ArenaState &s = state();
    uintptr_t begin = 0;
    size_t size = std::max(bytes, growth_);
    while (!(begin = map_aligned(size)) && size > bytes)
        size = std::max(bytes, size / 2 / kPageSize * kPageSize);
    if (!begin) return false;
    // (Without memory for the map, the reservation stays unused but mapped:
    // pages it marked must never hold other memory.)
    if (!others_.add(begin, begin + size)) return false;
    overflowed_.store(true, std::memory_order_relaxed);
    for (; s.next < s.end; s.next += kPageSize) keep_free(s, reinterpret_cast<void *>(s.next), kPageSize);
    s.next = begin;
    s.end = begin + size;
    return true;
}

void *Arena::allocate(size_t bytes, bool &dirty) {
    dirty = false;
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (bytes == kPageSize && !s.retained_pages.empty()) {
        void *page = s.retained_pages.back();
        s.retained_pages.pop_back();
        dirty = true;
        return page;
    }
    if (bytes == kPageSize && !s.free_pages.empty()) {
        void *page = s.free_pages.back();
        s.free_pages.pop_back();
        return page;
    }
    if (void *region = take_free_region(s, bytes)) return region;
    if (s.end - s.next < bytes && !grow(bytes)) return nullptr;
    void *region = reinterpret_cast<void *>(s.next);
    s.next += bytes;
    return region;
}

void Arena::release(void *region, size_t bytes) {
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (bytes == kPageSize && (s.retained_pages.size() + 1) * kPageSize <= kMaxRetainedBytes) {
        try {
            s.retained_pages.push_back(region);
            return;
        } catch (...) {
            // No room to remember it: give it back below.
        }
    }
    // Give the memory back to the system; keep the addresses for reuse.
    madvise(region, bytes, MADV_DONTNEED);
    keep_free(s, region, bytes);
}

size_t Arena::release_retained() {
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t released = 0;
    while (!s.retained_pages.empty()) {
        void *page = s.retained_pages.back();
        madvise(page, kPageSize, MADV_DONTNEED);
        keep_free(s, page, kPageSize);
        s.retained_pages.pop_back();
        released += kPageSize;
    }
    return released;
}

bool PageMap::add(uintptr_t begin, uintptr_t end) {
    std::atomic<Word *> *top = top_.load(std::memory_order_relaxed);
    if (!top) {
        top = static_cast<std::atomic<Word *> *>(std::calloc(kLeaves, sizeof *top));
        if (!top) return false;
        top_.store(top, std::memory_order_release);
    }
    for (uintptr_t page = begin; page < end; page += kPageSize) {
        std::atomic<Word *> &entry = top[page >> kLeafShift];
        Word *leaf = entry.load(std::memory_order_relaxed);
        if (!leaf) {
            leaf = static_cast<Word *>(std::calloc(kPagesPerLeaf / 64, sizeof(Word)));
            if (!leaf) return false;
            entry.store(leaf, std::memory_order_release);
        }
        size_t index = (page >> kPageShift) & (kPagesPerLeaf - 1);
        leaf[index / 64].fetch_or(uint64_t(1) << (index % 64), std::memory_order_relaxed);
    }
    return true;
}

}  // namespace cyclegc::internal
