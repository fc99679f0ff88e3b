// The address range GC pages come from. One large reservation of virtual
// memory (no physical memory until used) lets the collector tell whether a
// pointer is a GC object with one subtraction and compare, without reading
// the object: during a collection, most of the time goes into following
// references to objects that are not in cache, and this saves one cache miss
// per reference. If no reservation can be had (a low address-space limit),
// or once the arena is full, pages come from posix_memalign and the
// collector asks the object's type instead.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cyclegc::internal {

class Arena {
  public:
    static Arena &instance();

    // `bytes` (a multiple of the page size) aligned to the page size, or
    // nullptr. Thread-safe: heaps on different threads share the arena.
    // `dirty` says whether the memory may hold old data (else it is zero).
    void *allocate(size_t bytes, bool &dirty);
    // Single pages are kept (memory and all) for reuse up to a bound; the
    // rest is given back to the system.
    void release(void *region, size_t bytes);
    // Gives the memory of the kept pages back; returns how many bytes.
    size_t release_retained();

    bool reserved() const { return base_ != 0; }
    // Whether every GC page is in the arena: it is reserved and has never
    // been full. (Once false, it stays false.)
    bool holds_every_page() const { return reserved() && !overflowed_.load(std::memory_order_relaxed); }
    const void *base() const { return reinterpret_cast<const void *>(base_); }
    size_t size() const { return size_; }
    bool contains(const void *p) const { return reinterpret_cast<uintptr_t>(p) - base_ < size_; }
    // Whether `page_start` starts a GC region outside the arena (no arena,
    // or one that filled up). Inline while every page is inside; else it
    // takes a lock: for cold paths only.
    bool is_outside_page(const void *page_start) const {
        return !holds_every_page() && remembers_outside_page(page_start);
    }

  private:
    Arena();
    bool reserve(size_t size);
    bool remembers_outside_page(const void *page_start) const;
    uintptr_t base_ = 0;
    uintptr_t size_ = 0;
    std::atomic<bool> overflowed_{false};
};

// The one arena, for the hot check in the collector.
extern Arena *g_arena;

}  // namespace cyclegc::internal
