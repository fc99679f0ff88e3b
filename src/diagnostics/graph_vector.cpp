// Memory for the graph's large arrays: mapped on their own and populated
// in one call (see graph_vector.hpp).
#include "graph_vector.hpp"

namespace cyclegc::internal::diag {

void *allocate_graph_array(size_t bytes) {
    if (bytes < kMappedArrayBytes) {
        if (void *block = std::malloc(bytes ? bytes : 1)) return block;
        throw std::bad_alloc();
    }
    void *block = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (block == MAP_FAILED) throw std::bad_alloc();
    return block;
}

void free_graph_array(void *block, size_t bytes) {
    if (!block) return;
    if (bytes < kMappedArrayBytes) std::free(block);
    else munmap(block, bytes);
}

}  // namespace cyclegc::internal::diag
