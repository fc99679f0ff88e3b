// The state a shared heap (cgc_heap_new_shared) has beyond a confined one:
// the threads attached to it and the stop-the-world protocol
// (stop_the_world.cpp), and the biased reference counts of its objects
// (shared_counts.cpp). A confined heap has none (Heap::shared is null).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

namespace cyclegc::internal {

struct SharedHeap {
    // ---- Threads and stop-the-world (stop_the_world.cpp) ----
    // Serializes the changes to the heap's state (pages, generations,
    // tracking, weak-reference table) made by the attached threads.
    std::mutex state_lock;

    // ---- Biased reference counts (shared_counts.cpp) ----
};

}  // namespace cyclegc::internal
