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
// object, tracked at count 0 for a moment, would look like garbage, unless
// every deallocation it is in untracked its object first (park_in_release).
//
// A thread that waits on world_changed (the stopping one for the others to
// park, a parked one for the restart) spins first, for a time a young
// collection or an allocating thread's next safepoint takes: a sleep and
// its futex wake cost 10-20 us on each side, most of a stop's time.
//
// Each attached thread has a local heap (local_heaps.cpp), its
// t_current_heap while it runs attached: a stopped world takes every local
// heap back before the collection, and the stopping thread's fast paths use
// the shared heap itself until it restarts the world.
#include "heap.hpp"
#include "shared_heap.hpp"

#include <cstdio>
#include <cstdlib>

#include <sched.h>
#include <unistd.h>

namespace cyclegc::internal {

constinit thread_local Trashcan t_shared_trashcan __attribute__((tls_model("initial-exec")));
constinit thread_local Heap *t_attached_heap __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {

// How long a thread spins before it sleeps on world_changed: the stopping
// thread, and a parked one.
constexpr uint64_t kStopSpinNs = 100'000;
constexpr uint64_t kRestartSpinNs = 50'000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Waits on world_changed until `done()` holds, `world` held, spinning with
// it released for up to `spin_ns` first (yielding now and then to a thread
// that shares the core). `done` reads atomics only.
template <class Done>
void wait_for_world(SharedHeap &shared, std::unique_lock<std::mutex> &world, uint64_t spin_ns, Done done) {
    if (done()) return;
    world.unlock();
    uint64_t start = pause_clock_ns(false);
    for (unsigned round = 1; !done(); ++round) {
        if (round % 64 != 0) {
            cpu_relax();
            continue;
        }
        if (pause_clock_ns(false) - start > spin_ns) break;
        sched_yield();
    }
    world.lock();
    shared.world_changed.wait(world, done);
}

// Counts the thread among the running ones, once no stop is in force.
void enter_running(SharedHeap &shared, std::unique_lock<std::mutex> &world) {
    wait_for_world(shared, world, kRestartSpinNs,
                   [&] { return !shared.stop_requested.load(std::memory_order_acquire); });
    ++shared.running;
}

// The calling thread's attachment to a shared heap. Its destructor detaches
// a thread that exits attached.
struct Attachment {
    Heap *heap = nullptr;  // the shared heap the thread is attached to
    Heap *local = nullptr;  // its local heap (null: out of memory, all slow paths)
    bool detached = false;  // between cgc_thread_detach and cgc_thread_attach
    Heap *stopped = nullptr;  // the heap whose world this thread stopped (it collects)
    Heap *before_stop = nullptr;  // its t_current_heap before (restored at the restart)
    int lock_depth = 0;  // StateLock scopes open on this thread

    ~Attachment() { leave(); }

    // The fast paths' heap while the thread runs attached.
    void use_local() const { t_current_heap = local; }

    void leave() {
        if (!heap) return;
        SharedHeap &shared = *heap->shared;
        if (local) {
            // The local heap goes back running (not during a collection).
            if (detached) {
                std::unique_lock world(shared.world_lock);
                enter_running(shared, world);
                detached = false;
            }
            if (t_current_heap == local) t_current_heap = nullptr;
            {
                StateLock guard(*heap);
                hand_back(*heap, *local);
            }
            std::lock_guard guard(shared.world_lock);
            std::lock_guard state(shared.state_lock);  // (young_count_with_locals reads the list)
            std::erase(shared.locals, local);
        }
        {
            std::lock_guard guard(shared.world_lock);
            if (!detached) --shared.running;
            --shared.attached;
        }
        shared.world_changed.notify_all();
        delete_local_heap(local);
        local = nullptr;
        heap = nullptr;
        detached = false;
        t_attached_heap = nullptr;
    }
};
thread_local Attachment t_attachment;

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
    if (self.heap == heap) {
        if (heap && !self.detached && !self.stopped) self.use_local();
        return;
    }
    self.leave();
    if (!heap || !heap->shared) return;
    SharedHeap &shared = *heap->shared;
    std::unique_lock world(shared.world_lock);
    ++shared.attached;
    enter_running(shared, world);
    self.heap = heap;
    t_attached_heap = heap;
    t_last_shared_heap = nullptr;
    self.local = make_local_heap(*heap);
    if (self.local) {
        try {
            std::lock_guard state(shared.state_lock);  // (young_count_with_locals reads the list)
            shared.locals.push_back(self.local);
        } catch (const std::bad_alloc &) {
            delete_local_heap(self.local);
            self.local = nullptr;
        }
    }
    self.use_local();
}

bool attached_here(const Heap &heap) { return t_attachment.heap == &heap && !t_attachment.detached; }

bool unattached_use(const Heap &heap, const char *function, const cgc_object *op) {
    const Attachment &self = t_attachment;
    if (attached_here(heap) || self.stopped == &heap) return false;
    report(CGC_ERR_MISUSE,
           "%s: object %p of type '%s' belongs to a shared heap that thread %ld %s; only the threads "
           "attached to a shared heap may use its objects (cgc_heap_set_current, or cgc_thread_attach "
           "after cgc_thread_detach); refused", function, static_cast<const void *>(op),
           op ? type_name_of(op) : "<none>", static_cast<long>(gettid()),
           self.heap == &heap ? "is detached from (cgc_thread_detach)" : "is not attached to");
    return true;
}

namespace {

// Whether the calling thread may park now: not the thread that stopped the
// world, nor one of another heap or a detached one (which must not be
// here), nor one holding the state lock.
bool may_park(const Heap &heap) {
    const Attachment &self = t_attachment;
    return !self.stopped && attached_here(heap) && self.lock_depth == 0;
}

void park_while_stopped(SharedHeap &shared) {
    std::unique_lock world(shared.world_lock);
    if (!shared.stop_requested.load(std::memory_order_relaxed)) return;
    leave_running(shared);
    enter_running(shared, world);
}

}  // namespace

void park(Heap &heap) {
    // (Nor inside a deallocation: see the top of this file.)
    if (may_park(heap) && t_shared_trashcan.depth == 0) park_while_stopped(*heap.shared);
}

void park_in_release(Heap &heap) {
    if (may_park(heap)) park_while_stopped(*heap.shared);
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
bool stop_world(Heap &heap, bool give_way) {
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
        if (give_way) return false;
        requested = pause_clock_ns(false);
    }
    shared.stop_requested.store(true, std::memory_order_relaxed);
    {
        // (The mutex itself: waiting through lock_state would park this
        // thread for its own stop. No thread waits for the world lock while
        // it holds the state lock.)
        std::lock_guard state(shared.state_lock);
        poke_local_heaps(heap);
    }
    int self_count = counted ? 1 : 0;
    wait_for_world(shared, world, kStopSpinNs,
                   [&] { return shared.running.load(std::memory_order_acquire) == self_count; });
    self.stopped = &heap;
    world.unlock();
    StateLock guard(heap);  // (the statistics are read from any thread)
    heap.stops.record(pause_clock_ns(false) - requested);
    for (Heap *local : shared.locals) take_back(heap, *local);
    // Alone with the heap until the restart: the fast paths use it as a
    // confined heap's (a collection's deaths, its finalizers' allocations).
    self.before_stop = t_current_heap;
    t_current_heap = &heap;
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
    t_current_heap = t_attachment.before_stop;
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
    if (t_attachment.heap == &heap && t_attachment.detached) {
        // (Its finalizers would run while the thread counts as detached.)
        report(CGC_ERR_MISUSE, "cgc_collect: thread %ld is detached from the shared heap (cgc_thread_detach); "
               "not collected", static_cast<long>(gettid()));
        return 0;
    }
    {
        // One collection at a time: while another runs its finalizers with
        // the world running, a stop would only find it collecting.
        StateLock guard(heap);
        if (heap.collecting()) return 0;
    }
    // (Two threads over the threshold at once: the second gives way to the
    // first's collection rather than stop the world again to find none due.)
    if (!stop_world(heap, automatic)) return 0;
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
    t_attached_heap = nullptr;
    t_current_heap = nullptr;  // (a detached thread's local heap is the stopped world's to take back)
    leave_running(shared);
}

void cgc_thread_attach(void) {
    Attachment &self = t_attachment;
    if (!self.heap || !self.detached) return;
    SharedHeap &shared = *self.heap->shared;
    std::unique_lock world(shared.world_lock);
    enter_running(shared, world);
    self.detached = false;
    t_attached_heap = self.heap;
    self.use_local();
}

}  // extern "C"
