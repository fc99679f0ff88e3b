// The state a shared heap (cgc_heap_new_shared) has beyond a confined one:
// the threads attached to it and the stop-the-world protocol
// (stop_the_world.cpp), and the biased reference counts of its objects
// (shared_counts.cpp). A confined heap has none (Heap::shared is null).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace cyclegc::internal {

struct SharedHeap {
    // ---- Threads and stop-the-world (stop_the_world.cpp) ----
    // Serializes the changes to the heap's state (pages, generations,
    // tracking, weak-reference table, the gc module's settings) made by the
    // attached threads (StateLock). Never held while user code runs or
    // while a thread parks, so a parked thread holds no lock.
    std::mutex state_lock;
    // Guards the counts below; world_changed wakes the stopping thread when
    // one parks or detaches, and the parked threads when the world restarts.
    std::mutex world_lock;
    std::condition_variable world_changed;
    // Set while a thread stops the world (and until it restarts it): read
    // without the lock at every safepoint.
    std::atomic<bool> stop_requested{false};
    int running = 0;  // attached threads neither detached nor parked
    int attached = 0;  // attached threads (detached ones included)

    // ---- Biased reference counts (shared_counts.cpp) ----
};

}  // namespace cyclegc::internal
