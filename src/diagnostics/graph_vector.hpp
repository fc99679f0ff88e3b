// The arrays of a heap's graph: std::vector with an allocator for arrays of
// millions of entries. Large arrays are mapped with MAP_POPULATE, so that
// the kernel supplies their pages in one call instead of one page fault
// each, and elements are default-initialized: resize() writes nothing
// (every entry is written before it is read). Page faults were a third of
// the CPU time of a graph of ten million objects (docs/design.md).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace cyclegc::internal::diag {

// Blocks of at least this many bytes are mapped.
constexpr size_t kMappedArrayBytes = size_t(2) << 20;

void *allocate_graph_array(size_t bytes);
void free_graph_array(void *block, size_t bytes);

template <typename T>
struct GraphAllocator {
    using value_type = T;
    GraphAllocator() = default;
    template <typename U>
    GraphAllocator(const GraphAllocator<U> &) {}

    T *allocate(size_t n) { return static_cast<T *>(allocate_graph_array(n * sizeof(T))); }
    void deallocate(T *p, size_t n) { free_graph_array(p, n * sizeof(T)); }
    // Default-initialization (no zeroing) for resize() and emplace_back().
    template <typename U>
    void construct(U *p) {
        ::new (static_cast<void *>(p)) U;
    }
    template <typename U, typename... Args>
    void construct(U *p, Args &&...args) {
        ::new (static_cast<void *>(p)) U(static_cast<Args &&>(args)...);
    }
    template <typename U>
    bool operator==(const GraphAllocator<U> &) const {
        return true;
    }
};

template <typename T>
using GraphVector = std::vector<T, GraphAllocator<T>>;

}  // namespace cyclegc::internal::diag
