// The threads attached to a shared heap, its state lock, and the
// stop-the-world protocol of its collections (shared_heap.hpp).
//
// A thread attaches to a shared heap by making it current; it then counts as
// running until it detaches (cgc_thread_detach, another current heap, its
// exit). A collection stops the world: the collecting thread sets
// stop_requested and waits until it is the only running thread; every other
// attached thread parks at its next safepoint (an allocation, cgc_safepoint,
// attach/detach, a wait for the state lock) until the world restarts. A
// thread parks holding no lock, so the collector never waits for a lock a
// parked thread holds; and it does not park inside a deallocation, where its
// object, tracked at count 0 for a moment, would look like garbage.
#include "heap.hpp"
#include "shared_heap.hpp"

#include <cstdio>
#include <cstdlib>

namespace cyclegc::internal {

constinit thread_local Trashcan t_shared_trashcan __attribute__((tls_model("initial-exec")));

namespace {

// The calling thread's attachment to a shared heap. Its destructor detaches
// a thread that exits attached.
struct Attachment {
    Heap *heap = nullptr;  // the shared heap the thread is attached to
    bool detached = false;  // between cgc_thread_detach and cgc_thread_attach
    Heap *stopped = nullptr;  // the heap whose world this thread stopped (it collects)
    int lock_depth = 0;  // StateLock scopes open on this thread

    ~Attachment() { leave(); }

    void leave() {
        if (!heap) return;
        SharedHeap &shared = *heap->shared;
        {
            std::lock_guard guard(shared.world_lock);
            if (!detached) --shared.running;
            --shared.attached;
        }
        shared.world_changed.notify_all();
        heap = nullptr;
        detached = false;
    }
};
thread_local Attachment t_attachment;

// Counts the thread among the running ones, once no stop is in force.
void enter_running(SharedHeap &shared, std::unique_lock<std::mutex> &world) {
    shared.world_changed.wait(world, [&] { return !shared.stop_requested.load(std::memory_order_relaxed); });
    ++shared.running;
}

// Stops counting the thread as running (the stopping thread may be waiting
// for that).
void leave_running(SharedHeap &shared) {
    --shared.running;
    shared.world_changed.notify_all();
}

}  // namespace

Heap *attached_heap() { return t_attachment.heap; }

void attach_to(Heap *heap) {
    Attachment &self = t_attachment;
    if (self.heap == heap) return;
    self.leave();
    if (!heap || !heap->shared) return;
    SharedHeap &shared = *heap->shared;
    std::unique_lock world(shared.world_lock);
    ++shared.attached;
    enter_running(shared, world);
    self.heap = heap;
}

bool attached_here(const Heap &heap) { return t_attachment.heap == &heap && !t_attachment.detached; }

void park(Heap &heap) {
    Attachment &self = t_attachment;
    // Not parked: the thread that stopped the world, a thread of another
    // heap or a detached one (which must not be here), one holding the
    // state lock or inside a deallocation (see the top of this file).
    if (self.stopped || !attached_here(heap) || self.lock_depth > 0 || t_shared_trashcan.depth > 0) return;
    SharedHeap &shared = *heap.shared;
    std::unique_lock world(shared.world_lock);
    if (!shared.stop_requested.load(std::memory_order_relaxed)) return;
    leave_running(shared);
    enter_running(shared, world);
}

void safepoint_slow(Heap &heap) {
    if (heap.shared->stop_requested.load(std::memory_order_relaxed)) park(heap);
}

void lock_state(Heap &heap) {
    Attachment &self = t_attachment;
    if (self.lock_depth++ > 0) return;  // (nested: held already)
    std::mutex &lock = heap.shared->state_lock;
    if (lock.try_lock()) return;
    // Waiting for the lock is a safepoint: park first if a stop is asked.
    --self.lock_depth;
    safepoint(heap);
    ++self.lock_depth;
    lock.lock();
}

void unlock_state(Heap &heap) {
    if (--t_attachment.lock_depth == 0) heap.shared->state_lock.unlock();
}

int other_attached_threads(Heap &heap) {
    std::lock_guard guard(heap.shared->world_lock);
    return heap.shared->attached - (t_attachment.heap == &heap ? 1 : 0);
}

bool stopped_by_this_thread(const Heap &heap) { return t_attachment.stopped == &heap; }

// Another thread's stop in force makes this thread park first (one
// collects, the others wait).
bool stop_world(Heap &heap) {
    Attachment &self = t_attachment;
    if (self.lock_depth > 0) {
        report(CGC_ERR_MISUSE, "collector: a collection of a shared heap was asked while the heap's state lock "
                               "is held; not collected");
        return false;
    }
    SharedHeap &shared = *heap.shared;
    bool counted = attached_here(heap);
    uint64_t requested = pause_clock_ns(false);
    std::unique_lock world(shared.world_lock);
    if (shared.stop_requested.load(std::memory_order_relaxed)) {
        // Another thread collects. Inside a deallocation this thread cannot
        // park (see above): that collection will do.
        if (!counted || t_shared_trashcan.depth > 0) return false;
        leave_running(shared);
        enter_running(shared, world);
        requested = pause_clock_ns(false);
    }
    shared.stop_requested.store(true, std::memory_order_relaxed);
    int self_count = counted ? 1 : 0;
    shared.world_changed.wait(world, [&] { return shared.running == self_count; });
    self.stopped = &heap;
    world.unlock();
    StateLock guard(heap);  // (the statistics are read from any thread)
    heap.stops.record(pause_clock_ns(false) - requested);
    return true;
}

void restart_world(Heap &heap) {
    SharedHeap &shared = *heap.shared;
    {
        std::lock_guard guard(shared.world_lock);
        shared.stop_requested.store(false, std::memory_order_relaxed);
        t_attachment.stopped = nullptr;
    }
    shared.world_changed.notify_all();
}

bool let_world_run(Heap &heap) {
    if (!heap.shared || !stopped_by_this_thread(heap) || !attached_here(heap) || t_shared_trashcan.depth > 0)
        return false;
    restart_world(heap);
    return true;
}

void stop_world_again(Heap &heap) {
    // (Cannot fail: the thread is attached, outside any deallocation, and
    // holds no state lock, as when let_world_run restarted the world.)
    if (!stop_world(heap)) [[unlikely]] {
        report(CGC_ERR_CORRUPTION, "collector: the world of a shared heap could not be stopped again");
        std::abort();
    }
}

cgc_ssize_t collect_stopped(Heap &heap, int generation, bool automatic) {
    {
        // One collection at a time: while another runs its finalizers with
        // the world running, a stop would only find it collecting.
        StateLock guard(heap);
        if (heap.collecting()) return 0;
    }
    if (!stop_world(heap)) return 0;
    cgc_ssize_t found = automatic ? collect_automatic(heap) : collect(heap, generation);
    restart_world(heap);
    return found;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

void cgc_thread_detach(void) {
    Attachment &self = t_attachment;
    if (!self.heap || self.detached || self.stopped) return;
    SharedHeap &shared = *self.heap->shared;
    std::lock_guard guard(shared.world_lock);
    self.detached = true;
    leave_running(shared);
}

void cgc_thread_attach(void) {
    Attachment &self = t_attachment;
    if (!self.heap || !self.detached) return;
    SharedHeap &shared = *self.heap->shared;
    std::unique_lock world(shared.world_lock);
    enter_running(shared, world);
    self.detached = false;
}

}  // extern "C"
