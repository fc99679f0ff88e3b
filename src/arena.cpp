// The GC page arena (see arena.hpp).
#include "arena.hpp"

#include "pages.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace cyclegc::internal {
namespace {

// 64 GiB of address space: a billion small objects. Reserving costs nothing
// but page-table entries for what is used. Where that much cannot be had
// (an address-space limit; valgrind, which cannot map 64 GiB), smaller ones
// are tried: the exact "is a GC object" test is worth having even then, and
// pages beyond a full arena come from posix_memalign (Arena::allocate).
constexpr size_t kReservations[] = {size_t(64) << 30, size_t(16) << 30, size_t(4) << 30, size_t(1) << 30};

// Empty single pages are kept for reuse, up to this many bytes, without
// giving their memory back: handing such a page out again costs a memset
// (about 2 us for 64 KiB) instead of a madvise call now and 16 page faults
// at its next use (measured: a refcount cascade freeing 1M objects, 190 ->
// 148 ns per churn rewrite on ring-1m; building into reused pages 2x faster).
// Beyond it, pages go back to the system at once.
constexpr size_t kMaxRetainedBytes = size_t(32) << 20;

struct ArenaState {
    std::mutex mutex;
    uintptr_t next = 0;                         // never-used space starts here
    std::vector<void *> retained_pages;         // released single pages, memory kept (dirty)
    std::vector<void *> free_pages;             // released single pages, memory given back (zero)
    std::multimap<size_t, void *> free_regions;  // released larger regions, by size
    std::unordered_set<uintptr_t> outside;      // regions from posix_memalign, in use
};

ArenaState &state() {
    static ArenaState *s = new ArenaState();  // outlives every heap
    return *s;
}

}  // namespace

Arena *g_arena = &Arena::instance();

Arena &Arena::instance() {
    static Arena *arena = new Arena();
    return *arena;
}

Arena::Arena() {
    if (std::getenv("CYCLEGC_NO_ARENA")) return;  // test the fallback path
    if (const char *bytes = std::getenv("CYCLEGC_ARENA_BYTES")) {  // a small arena, to test its overflow
        reserve(std::strtoull(bytes, nullptr, 10) / kPageSize * kPageSize);
        return;
    }
    // Under an address-space limit, take at most a quarter of it: the rest
    // of the program needs address space too, and pages beyond a full arena
    // come from posix_memalign anyway.
    size_t cap = SIZE_MAX;
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) cap = limit.rlim_cur / 4;
    for (size_t size : kReservations)
        if (size <= cap && reserve(size)) return;
}

bool Arena::reserve(size_t size) {
    if (size == 0) return false;
    // One alignment's worth extra, to start at an aligned address.
    void *p = mmap(nullptr, size + kPageSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    base_ = (reinterpret_cast<uintptr_t>(p) + kPageSize - 1) & ~(uintptr_t(kPageSize) - 1);
    size_ = size;
    state().next = base_;
    return true;
}

namespace {
// A region outside the arena, remembered (s.mutex held) so that a pointer
// into it can still be told from plain memory (is_outside_page).
void *allocate_outside(ArenaState &s, size_t bytes, bool &dirty) {
    void *memory = nullptr;
    dirty = true;
    if (posix_memalign(&memory, kPageSize, bytes) != 0) return nullptr;
    try {
        s.outside.insert(reinterpret_cast<uintptr_t>(memory));
    } catch (...) {
        std::free(memory);
        return nullptr;
    }
    return memory;
}
}  // namespace

void *Arena::allocate(size_t bytes, bool &dirty) {
    dirty = false;
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!reserved()) return allocate_outside(s, bytes, dirty);
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
    if (bytes > kPageSize) {
        auto found = s.free_regions.lower_bound(bytes);
        if (found != s.free_regions.end() && found->first == bytes) {
            void *region = found->second;
            s.free_regions.erase(found);
            return region;
        }
    }
    if (s.next + bytes > base_ + size_) {
        // The arena is full: pages from here on are outside it, and the
        // collector asks their objects' types whether they are GC objects.
        overflowed_.store(true, std::memory_order_relaxed);
        return allocate_outside(s, bytes, dirty);
    }
    void *region = reinterpret_cast<void *>(s.next);
    s.next += bytes;
    return region;
}

void Arena::release(void *region, size_t bytes) {
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!contains(region)) {
        s.outside.erase(reinterpret_cast<uintptr_t>(region));
        std::free(region);
        return;
    }
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
    try {
        if (bytes == kPageSize)
            s.free_pages.push_back(region);
        else
            s.free_regions.emplace(bytes, region);
    } catch (...) {
        // Losing track of a region leaks address space, not memory.
    }
}

bool Arena::remembers_outside_page(const void *page_start) const {
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.outside.count(reinterpret_cast<uintptr_t>(page_start)) != 0;
}

size_t Arena::release_retained() {
    if (!reserved()) return 0;
    ArenaState &s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    size_t released = 0;
    while (!s.retained_pages.empty()) {
        void *page = s.retained_pages.back();
        madvise(page, kPageSize, MADV_DONTNEED);
        try {
            s.free_pages.push_back(page);
        } catch (...) {
            // Losing track of a page leaks address space, not memory.
        }
        s.retained_pages.pop_back();
        released += kPageSize;
    }
    return released;
}

}  // namespace cyclegc::internal
