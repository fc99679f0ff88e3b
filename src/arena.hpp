// The address ranges GC pages come from. Reserved virtual memory (no
// physical memory until used) lets the collector tell whether a pointer is a
// GC object from its address alone, without reading the object: during a
// collection, most of the time goes into following references to objects
// that are not in cache, and this saves one cache miss per reference.
//
// The first reservation is as large as the address-space limit allows (64
// GiB without one, a quarter of `ulimit -v` under one): testing it is one
// subtraction and compare. When it is full (or could not be had), more
// reservations follow, each as large as the limit allows; they are found by
// a page map (two loads, no search), on the collector's cold path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cyclegc::internal {

// Which 64 KiB pages of the address space lie in a reservation other than
// the first: one bit per page, in 8 KiB leaves of 4 GiB each, made as
// reservations are. Readers take no lock; bits are only ever set.
class PageMap {
  public:
    using Word = std::atomic<uint64_t>;
    bool contains(uintptr_t address) const {
        if (address >> kAddressBits) return false;
        std::atomic<Word *> *top = top_.load(std::memory_order_acquire);
        if (!top) return false;
        Word *leaf = top[address >> kLeafShift].load(std::memory_order_acquire);
        if (!leaf) return false;
        size_t page = (address >> kPageShift) & (kPagesPerLeaf - 1);
        return (leaf[page / 64].load(std::memory_order_relaxed) >> (page % 64)) & 1;
    }
    // Marks [begin, end) (page-aligned, below 2^kAddressBits); false when out
    // of memory for the map. Writers hold the arena's lock.
    bool add(uintptr_t begin, uintptr_t end);

    static constexpr unsigned kAddressBits = 48;

  private:
    static constexpr unsigned kPageShift = 16;  // kPageSize
    static constexpr unsigned kLeafShift = 32;
    static constexpr size_t kPagesPerLeaf = size_t(1) << (kLeafShift - kPageShift);
    static constexpr size_t kLeaves = size_t(1) << (kAddressBits - kLeafShift);
    std::atomic<std::atomic<Word *> *> top_{nullptr};  // kLeaves entries
};

class Arena {
  public:
    static Arena &instance();

    // `bytes` (a multiple of the page size) aligned to the page size, or
    // nullptr. Thread-safe: heaps on different threads share the arena.
    // `dirty` says whether the memory may hold old data (else it is zero).
    void *allocate(size_t bytes, bool &dirty);
    // Single pages are kept (memory and all) for reuse up to a bound; the
    // memory of the rest is given back to the system (the addresses stay
    // reserved: a stale pointer reads zeros, never unmapped memory).
    void release(void *region, size_t bytes);
    // Gives the memory of the kept pages back; returns how many bytes.
    size_t release_retained();

    // The first reservation (size 0: none, CYCLEGC_NO_ARENA).
    bool reserved() const { return base_ != 0; }
    const void *base() const { return reinterpret_cast<const void *>(base_); }
    size_t size() const { return size_; }
    bool in_first_reservation(const void *p) const { return reinterpret_cast<uintptr_t>(p) - base_ < size_; }
    // Whether every GC page is in the first reservation (once false, it
    // stays false).
    bool holds_every_page() const { return reserved() && !overflowed_.load(std::memory_order_relaxed); }
    // Whether `p` lies in a reservation other than the first (lock-free).
    bool in_other_reservation(const void *p) const { return others_.contains(reinterpret_cast<uintptr_t>(p)); }
    // Whether `p` lies in any reservation: in a GC page, or in one freed.
    bool contains(const void *p) const {
        return in_first_reservation(p) || (!holds_every_page() && in_other_reservation(p));
    }

  private:
    Arena();
    bool reserve_first(size_t size);
    bool grow(size_t bytes);
    static void before_fork();
    static void after_fork();
    uintptr_t base_ = 0;
    uintptr_t size_ = 0;
    size_t growth_ = 0;  // the size of the reservations after the first
    PageMap others_;
    std::atomic<bool> overflowed_{false};
};

// The one arena, for the hot check in the collector.
extern Arena *g_arena;

}  // namespace cyclegc::internal
