// Shared heaps with several threads: attached threads, the state lock and
// stop-the-world collections. Each thread builds, links and drops its own
// objects (the counts of an object shared between threads are the count
// word's tests); frees are counted, a second free of one object is caught
// by a poisoned field, and every collection must find the garbage of all.
// Run under the tsan preset too.
#include <cyclegc/Python.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <sys/resource.h>

namespace {

constexpr int kAlive = 0x5eed;
constexpr int kDead = 0xdead;

struct Pair {
    PyObject_HEAD
    PyObject *first;
    PyObject *second;
    int state;
};

std::atomic<long> g_made{0};
std::atomic<long> g_freed{0};
std::atomic<long> g_freed_twice{0};

int pair_traverse(PyObject *self, visitproc visit, void *arg) {
    auto *pair = reinterpret_cast<Pair *>(self);
    Py_VISIT(pair->first);
    Py_VISIT(pair->second);
    return 0;
}

int pair_clear(PyObject *self) {
    auto *pair = reinterpret_cast<Pair *>(self);
    Py_CLEAR(pair->first);
    Py_CLEAR(pair->second);
    return 0;
}

void pair_dealloc(PyObject *self) {
    auto *pair = reinterpret_cast<Pair *>(self);
    PyObject_GC_UnTrack(self);
    if (pair->state != kAlive) g_freed_twice.fetch_add(1, std::memory_order_relaxed);
    pair->state = kDead;
    pair_clear(self);
    g_freed.fetch_add(1, std::memory_order_relaxed);
    PyObject_GC_Del(self);
}

PyTypeObject pair_type = [] {
    PyTypeObject type{};
    type.tp_name = "shared_test.Pair";
    type.tp_basicsize = sizeof(Pair);
    type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    type.tp_traverse = pair_traverse;
    type.tp_clear = pair_clear;
    type.tp_dealloc = pair_dealloc;
    return type;
}();

PyObject *new_pair(PyTypeObject *type = &pair_type) {
    Pair *pair = PyObject_GC_New(Pair, type);
    if (!pair) return nullptr;
    pair->first = pair->second = nullptr;
    pair->state = kAlive;
    PyObject_GC_Track(reinterpret_cast<PyObject *>(pair));
    g_made.fetch_add(1, std::memory_order_relaxed);
    return reinterpret_cast<PyObject *>(pair);
}

// pair_type with a finalizer (to be readied).
PyTypeObject pair_type_finalized_by(const char *name, destructor finalize) {
    PyTypeObject type = pair_type;
    type.tp_name = name;
    type.tp_finalize = finalize;
    type.tp_flags &= ~Py_TPFLAGS_READY;
    return type;
}

// A ring of `length` pairs, each also pointing back to the first: dropped,
// it is garbage only a collection frees.
void make_and_drop_ring(int length) {
    PyObject *head = new_pair();
    PyObject *last = head;
    for (int i = 1; i < length; ++i) {
        PyObject *next = new_pair();
        reinterpret_cast<Pair *>(last)->first = next;
        reinterpret_cast<Pair *>(next)->second = Py_NewRef(head);
        last = next;
    }
    reinterpret_cast<Pair *>(last)->first = Py_NewRef(head);
    // (Each non-head pair is owned by its predecessor.)
    Py_DECREF(head);
}

// A chain that reference counting alone frees.
void make_and_drop_chain(int length) {
    PyObject *head = new_pair();
    PyObject *last = head;
    for (int i = 1; i < length; ++i) {
        PyObject *next = new_pair();
        reinterpret_cast<Pair *>(last)->first = next;
        last = next;
    }
    Py_DECREF(head);
}

class SharedHeapTest : public ::testing::Test {
  protected:
    void SetUp() override {
        g_made = g_freed = g_freed_twice = 0;
        heap_ = cgc_heap_new_shared();
        ASSERT_NE(heap_, nullptr);
        previous_ = cgc_heap_current();
        cgc_heap_set_current(heap_);
        errors_before_ = cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION);
    }
    void TearDown() override {
        EXPECT_EQ(cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION), errors_before_);
        cgc_heap_set_current(previous_);
        cgc_heap_delete(heap_);
    }
    // Collects everything left, then checks the counts.
    void expect_all_freed_once() {
        cgc_collect(2);
        EXPECT_EQ(g_freed_twice.load(), 0);
        EXPECT_EQ(g_freed.load(), g_made.load());
    }

    cgc_heap *heap_ = nullptr;
    cgc_heap *previous_ = nullptr;
    uint64_t errors_before_ = 0;
};

// Joins threads attached to the calling thread's shared heap: detached
// meanwhile, or a collection on one of them would wait for this thread.
void join_detached(std::vector<std::thread> &threads) {
    Py_BEGIN_ALLOW_THREADS
    for (auto &thread : threads) thread.join();
    Py_END_ALLOW_THREADS
}

// Waits (detached, at most 20 s) until `done` is set by another thread.
void wait_detached_until(const std::atomic<bool> &done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    Py_BEGIN_ALLOW_THREADS
    while (!done && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Py_END_ALLOW_THREADS
}

// Runs `body(index)` on `count` threads attached to `heap`, and joins them.
template <typename Body>
void on_attached_threads(cgc_heap *heap, int count, Body body) {
    std::vector<std::thread> threads;
    for (int index = 0; index < count; ++index)
        threads.emplace_back([heap, index, &body] {
            cgc_heap_set_current(heap);
            body(index);
            cgc_heap_set_current(nullptr);
        });
    join_detached(threads);
}

TEST_F(SharedHeapTest, ThreadsSeeTheSharedHeapAsCurrent) {
    EXPECT_EQ(cgc_heap_current(), heap_);
    EXPECT_TRUE(cgc_heap_is_shared(cgc_heap_current()));
    on_attached_threads(heap_, 2, [&](int) { EXPECT_EQ(cgc_heap_current(), heap_); });
}

TEST_F(SharedHeapTest, CollectionsFromEveryThreadWhileOthersAllocate) {
    std::atomic<long> collected{0};
    on_attached_threads(heap_, 3, [&](int index) {
        for (int round = 0; round < 2000; ++round) {
            make_and_drop_ring(1 + (round + index) % 7);
            make_and_drop_chain(5);
            if (round % 10 == index) collected += cgc_collect((round / 10) % 3);
        }
    });
    EXPECT_GT(collected.load(), 0);
    expect_all_freed_once();
}

// Weak references made, read and cleared on several threads (the heap's
// weak-reference table under its state lock); callbacks counted.
std::atomic<long> g_callbacks{0};

TEST_F(SharedHeapTest, WeakReferencesOnSeveralThreads) {
    g_callbacks = 0;
    std::atomic<long> expected_callbacks{0};
    on_attached_threads(heap_, 3, [&](int index) {
        for (int round = 0; round < 500; ++round) {
            PyObject *head = new_pair();
            PyObject *other = new_pair();
            reinterpret_cast<Pair *>(head)->first = Py_NewRef(other);
            reinterpret_cast<Pair *>(other)->first = Py_NewRef(head);
            Py_DECREF(other);
            PyObject *watch = cgc_weakref_new(head, [](cgc_object *, void *) { ++g_callbacks; }, nullptr);
            PyObject *plain = cgc_weakref_new(other, nullptr, nullptr);
            EXPECT_EQ(cgc_weakref_get(plain), other);
            Py_DECREF(other);  // (the reference cgc_weakref_get returned)
            Py_DECREF(head);   // the cycle is garbage now
            if (round % 5 == index) cgc_collect(round % 3);
            cgc_collect(0);
            if (PyObject *alive = cgc_weakref_get(watch))
                Py_DECREF(alive);  // (promoted by another thread's collection: left to the last)
            else
                ++expected_callbacks;
            Py_DECREF(watch);
            Py_DECREF(plain);
        }
    });
    cgc_collect(2);
    EXPECT_EQ(g_callbacks.load(), expected_callbacks.load());
    EXPECT_GT(g_callbacks.load(), 0);
    expect_all_freed_once();
}

TEST_F(SharedHeapTest, AutomaticCollectionsStartOnDifferentThreads) {
    cgc_set_threshold(0, 50);
    static std::mutex mutex;
    static std::set<std::thread::id> starters;
    starters.clear();
    auto note_start = [](const char *phase, const cgc_collection_info *, void *) {
        if (std::string(phase) != "start") return;
        std::lock_guard guard(mutex);
        starters.insert(std::this_thread::get_id());
    };
    ASSERT_EQ(cgc_add_collection_callback(note_start, nullptr), 0);
    on_attached_threads(heap_, 3, [&](int) {
        for (int round = 0; round < 5000; ++round) make_and_drop_ring(3);
    });
    cgc_remove_collection_callback(note_start, nullptr);
    EXPECT_GE(starters.size(), 2u);
    expect_all_freed_once();
}

TEST_F(SharedHeapTest, DetachedThreadDoesNotDelayACollection) {
    std::atomic<bool> detached{false};
    std::thread sleeper([&] {
        cgc_heap_set_current(heap_);
        make_and_drop_ring(4);
        Py_BEGIN_ALLOW_THREADS
        detached = true;
        std::this_thread::sleep_for(std::chrono::seconds(2));
        Py_END_ALLOW_THREADS
        make_and_drop_ring(4);  // (attached again: it may use the heap)
    });
    while (!detached) std::this_thread::yield();
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(cgc_collect(2), 4);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    std::vector<std::thread> threads;
    threads.push_back(std::move(sleeper));
    join_detached(threads);
    expect_all_freed_once();
}

TEST_F(SharedHeapTest, ThreadExitWhileAttachedDetachesIt) {
    std::thread([&] {
        cgc_heap_set_current(heap_);
        make_and_drop_ring(5);
    }).join();  // (exits attached)
    // A thread still counted as attached would never park: this would hang.
    std::atomic<bool> done{false};
    cgc_ssize_t found = -1;
    std::thread collector([&] {
        cgc_heap_set_current(heap_);
        found = cgc_collect(2);
        done = true;
    });
    wait_detached_until(done);
    ASSERT_TRUE(done) << "the collection waited for a thread that had exited";
    collector.join();
    EXPECT_EQ(found, 5);
    expect_all_freed_once();
}

// A finalizer that resurrects its object (once) into a list the test
// drains, while other threads allocate and drop their own objects.
std::mutex g_resurrected_lock;
std::vector<PyObject *> g_resurrected;

void pair_finalize_resurrect(PyObject *self) {
    std::lock_guard guard(g_resurrected_lock);
    g_resurrected.push_back(Py_NewRef(self));
}

TEST_F(SharedHeapTest, FinalizersResurrectWhileOtherThreadsRun) {
    PyTypeObject resurrecting = pair_type_finalized_by("shared_test.Resurrecting", pair_finalize_resurrect);
    ASSERT_EQ(PyType_Ready(&resurrecting), 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> others;
    for (int i = 0; i < 2; ++i)
        others.emplace_back([&] {
            cgc_heap_set_current(heap_);
            while (!stop) {
                make_and_drop_ring(3);
                make_and_drop_chain(3);
            }
            cgc_heap_set_current(nullptr);
        });
    for (int round = 0; round < 50; ++round) {
        // A two-object cycle of resurrecting pairs.
        Pair *a = PyObject_GC_New(Pair, &resurrecting);
        Pair *b = PyObject_GC_New(Pair, &resurrecting);
        a->state = b->state = kAlive;
        a->first = Py_NewRef(reinterpret_cast<PyObject *>(b));
        a->second = nullptr;
        b->first = reinterpret_cast<PyObject *>(a);
        b->second = nullptr;
        g_made += 2;
        PyObject_GC_Track(reinterpret_cast<PyObject *>(a));
        PyObject_GC_Track(reinterpret_cast<PyObject *>(b));
        Py_DECREF(b);
        // (A collection asked while another thread's runs its finalizers
        // returns 0 at once: asked again, one finds the pair. Between tries
        // the thread waits detached, so that the other collection ends.)
        std::vector<PyObject *> back;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (back.size() < 2 && std::chrono::steady_clock::now() < deadline) {
            cgc_collect(2);
            {
                std::lock_guard guard(g_resurrected_lock);
                back.insert(back.end(), g_resurrected.begin(), g_resurrected.end());
                g_resurrected.clear();
            }
            if (back.size() < 2) {
                Py_BEGIN_ALLOW_THREADS
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
                Py_END_ALLOW_THREADS
            }
        }
        EXPECT_EQ(back.size(), 2u) << "round " << round;
        for (PyObject *op : back) EXPECT_EQ(reinterpret_cast<Pair *>(op)->state, kAlive);
        for (PyObject *op : back) Py_DECREF(op);  // (finalized once: freed by the next collection)
    }
    stop = true;
    join_detached(others);
    expect_all_freed_once();
}

// A finalizer that waits for a lock another attached thread holds while it
// allocates (a safepoint): with the world stopped during finalizers, that
// thread would be parked holding the lock and the finalizer would wait for
// ever. CPython's order restarts the world for finalizers and callbacks.
std::mutex g_held_by_other;
std::atomic<bool> g_finalizer_waits{false};
std::atomic<int> g_finalizer_got_lock{0};

void pair_finalize_wait_for_lock(PyObject *) {
    g_finalizer_waits = true;
    // (Polled: ThreadSanitizer does not follow std::timed_mutex's timed lock.)
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!g_held_by_other.try_lock()) {
        if (std::chrono::steady_clock::now() > deadline) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ++g_finalizer_got_lock;
    g_held_by_other.unlock();
}

void weakref_callback_wait_for_lock(cgc_object *, void *) { pair_finalize_wait_for_lock(nullptr); }

TEST_F(SharedHeapTest, FinalizersAndCallbacksRunWhileOtherThreadsRun) {
    PyTypeObject waiting = pair_type_finalized_by("shared_test.Waiting", pair_finalize_wait_for_lock);
    ASSERT_EQ(PyType_Ready(&waiting), 0);
    for (bool finalizer : {true, false}) {
        g_finalizer_waits = false;
        g_finalizer_got_lock = 0;
        std::atomic<bool> holding{false};
        std::vector<std::thread> other;
        other.emplace_back([&] {
            cgc_heap_set_current(heap_);
            std::lock_guard guard(g_held_by_other);
            holding = true;
            // Allocates (safepoints) until the finalizer waits, and a while more.
            while (!g_finalizer_waits) make_and_drop_chain(2);
            for (int i = 0; i < 1000; ++i) make_and_drop_chain(2);
            // (unlocked here, then detached)
        });
        while (!holding) std::this_thread::yield();
        PyObject *a = new_pair();
        PyObject *b = new_pair(finalizer ? &waiting : &pair_type);
        reinterpret_cast<Pair *>(a)->first = Py_NewRef(b);
        reinterpret_cast<Pair *>(b)->first = a;
        // A weak reference (reachable) to the cycle, whose callback waits.
        PyObject *weak = finalizer ? nullptr : cgc_weakref_new(b, weakref_callback_wait_for_lock, nullptr);
        Py_DECREF(b);
        EXPECT_EQ(cgc_collect(2), 2);
        EXPECT_EQ(g_finalizer_got_lock, 1) << (finalizer ? "finalizer" : "weak reference callback");
        join_detached(other);
        Py_XDECREF(weak);
    }
    expect_all_freed_once();
}

TEST_F(SharedHeapTest, TheErrorIndicatorIsPerThread) {
    cgc_error_clear();
    std::thread([&] {
        cgc_heap_set_current(heap_);
        cgc_set_error_hook([](cgc_error_kind, const char *, void *) {}, nullptr);
        cgc_error_set(CGC_ERR_VALUE, "on the other thread");
        EXPECT_EQ(cgc_error_occurred(), CGC_ERR_VALUE);
        cgc_set_error_hook(nullptr, nullptr);
    }).join();
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);
}

TEST_F(SharedHeapTest, StopsAreTimedWithTwoAttachedThreads) {
    cgc_reset_pause_stats();
    std::atomic<bool> stop{false};
    std::thread other([&] {
        cgc_heap_set_current(heap_);
        while (!stop) make_and_drop_chain(2);
        cgc_heap_set_current(nullptr);
    });
    for (int i = 0; i < 20; ++i) cgc_collect(0);
    stop = true;
    std::vector<std::thread> threads;
    threads.push_back(std::move(other));
    join_detached(threads);
    cgc_pause_stats stops{};
    cgc_get_stop_stats(&stops);
    EXPECT_GE(stops.count, 20u);
    EXPECT_GT(stops.max_ns, 0u);
    expect_all_freed_once();
}

// The times the calling thread slept (voluntary context switches; -1: not
// counted on this system).
long sleeps_of_this_thread() {
#ifdef RUSAGE_THREAD
    rusage usage{};
    if (getrusage(RUSAGE_THREAD, &usage) == 0) return usage.ru_nvcsw;
#endif
    return -1;
}

// A stop that finds the other thread allocating, and a young collection of
// a few objects, are short: the stopping thread spins until the other
// parks, and the parked thread spins until the restart, neither sleeping on
// the condition variable. (Without the spins every stop slept: the
// stopping thread holds the world lock until it waits.)
TEST_F(SharedHeapTest, ShortStopsSleepOnNeitherSide) {
    if (sleeps_of_this_thread() < 0) GTEST_SKIP() << "no per-thread count of sleeps";
    cgc_set_threshold(0, 0);  // (no automatic collection)
    std::atomic<bool> stop{false};
    std::atomic<long> made{0}, other_sleeps{0};
    std::thread other([&] {
        cgc_heap_set_current(heap_);
        long before = sleeps_of_this_thread();
        while (!stop) {
            make_and_drop_chain(1);
            made.fetch_add(1, std::memory_order_relaxed);
        }
        other_sleeps = sleeps_of_this_thread() - before;
        cgc_heap_set_current(nullptr);
    });
    constexpr int kStops = 100;
    int stops_without_sleep = 0;
    for (int i = 0; i < kStops; ++i) {
        // (Each stop finds the other thread running.)
        for (long seen = made.load(); made.load() < seen + 10;) {
            cyclegc::safepoint();
            std::this_thread::yield();
        }
        long before = sleeps_of_this_thread();
        cgc_collect(0);
        if (sleeps_of_this_thread() == before) ++stops_without_sleep;
    }
    stop = true;
    std::vector<std::thread> threads;
    threads.push_back(std::move(other));
    join_detached(threads);
    EXPECT_GT(stops_without_sleep, 0) << "every stop slept until the other thread parked";
    // (A restart between its release of the world lock and its sleep spares
    // a parked thread the sleep without spinning: 97 of 100 slept.) Only
    // where the stops show the threads had their cores: on a loaded machine
    // a collection outlasts the parked thread's spin.
    if (stops_without_sleep >= kStops / 2) {
        EXPECT_LT(other_sleeps.load(), kStops / 2) << "the other thread slept in most of its parks";
    }
    expect_all_freed_once();
}

TEST_F(SharedHeapTest, DeletingAHeapOtherThreadsAreAttachedToIsRefused) {
    std::atomic<bool> attached{false}, release{false};
    std::thread other([&] {
        cgc_heap_set_current(heap_);
        attached = true;
        Py_BEGIN_ALLOW_THREADS
        while (!release) std::this_thread::yield();
        Py_END_ALLOW_THREADS
        cgc_heap_set_current(nullptr);
    });
    while (!attached) std::this_thread::yield();  // (it allocates nothing: no collection waits)
    cgc_heap *other_heap = cgc_heap_new_shared();
    cgc_heap_set_current(other_heap);
    cgc_heap_set_current(heap_);
    cgc_heap_delete(other_heap);  // (no thread attached: deleted)
    uint64_t misuse = cgc_error_count(CGC_ERR_MISUSE);
    auto hook = cgc_set_error_hook([](cgc_error_kind, const char *, void *) {}, nullptr);
    cgc_heap_delete(heap_);  // refused: `other` is attached
    cgc_set_error_hook(hook, nullptr);
    EXPECT_EQ(cgc_error_count(CGC_ERR_MISUSE), misuse + 1);
    errors_before_ += 1;
    release = true;
    other.join();
}

TEST_F(SharedHeapTest, CxxHeapAndDetachedScope) {
    auto shared = cyclegc::heap::shared();
    EXPECT_TRUE(shared.is_shared());
    auto scope = shared.use();
    EXPECT_EQ(cgc_heap_current(), shared.get());
    {
        cyclegc::detached_scope detached;
    }
    make_and_drop_ring(3);
    EXPECT_EQ(cgc_collect(2), 3);
}

// Each attached thread allocates in pages of its own (local heaps): the
// objects another thread frees go back to their page's thread, which
// allocates in their slots again, each freed once.
TEST_F(SharedHeapTest, SlotsFreedByAnotherThreadAreReusedByTheirOwner) {
    constexpr int kObjects = 2000;
    std::vector<PyObject *> handed(kObjects);
    std::set<PyObject *> first_slots;
    for (PyObject *&op : handed) {
        op = new_pair();
        first_slots.insert(op);
    }
    std::thread consumer([&] {
        cgc_heap_set_current(heap_);
        for (PyObject *op : handed) Py_INCREF(op);  // (counted in the shared counts)
        cgc_heap_set_current(nullptr);
    });
    std::vector<std::thread> threads;
    threads.push_back(std::move(consumer));
    join_detached(threads);
    threads.clear();
    for (PyObject *op : handed) Py_DECREF(op);  // the owner's counts merge: the consumer's are the last
    std::thread dropper([&] {
        cgc_heap_set_current(heap_);
        for (PyObject *op : handed) Py_DECREF(op);  // freed on this thread, into the owner's pages
        cgc_heap_set_current(nullptr);
    });
    threads.push_back(std::move(dropper));
    join_detached(threads);
    EXPECT_EQ(g_freed.load(), kObjects);
    int reused = 0;
    for (PyObject *&op : handed) {
        op = new_pair();
        reused += first_slots.count(op) ? 1 : 0;
    }
    // (The first new ones fill the never-used end of the owner's last page.)
    EXPECT_GE(reused, kObjects / 2) << "slots freed by another thread were not given back to their owner";
    for (PyObject *op : handed) Py_DECREF(op);
    expect_all_freed_once();
}

// A thread's tracked objects are in no list until a stopped world takes its
// local heap back: one that exits leaves its garbage to a young collection.
TEST_F(SharedHeapTest, AThreadThatExitsLeavesItsYoungObjectsToACollection) {
    cgc_set_threshold(0, 0);  // (no automatic collection)
    std::thread([&] {
        cgc_heap_set_current(heap_);
        for (int i = 0; i < 10; ++i) make_and_drop_ring(3);
    }).join();  // (exits attached)
    EXPECT_EQ(cgc_collect(0), 30);
    std::thread([&] {
        cgc_heap_set_current(heap_);
        for (int i = 0; i < 10; ++i) make_and_drop_ring(3);
        cgc_heap_set_current(nullptr);
    }).join();
    EXPECT_EQ(cgc_collect(0), 30);
    expect_all_freed_once();
}

// A thread whose allocations all take the fast paths (each object freed
// before the next) still parks when another stops the world.
TEST_F(SharedHeapTest, AStopReachesAThreadThatAllocatesOnFastPathsOnly) {
    std::atomic<bool> stop{false}, started{false}, done{false};
    std::thread other([&] {
        cgc_heap_set_current(heap_);
        while (!stop) {
            make_and_drop_chain(1);
            started = true;
        }
        cgc_heap_set_current(nullptr);
    });
    std::thread collector([&] {
        while (!started) std::this_thread::yield();
        cgc_heap_set_current(heap_);
        for (int i = 0; i < 20; ++i) cgc_collect(0);
        cgc_heap_set_current(nullptr);
        done = true;
    });
    wait_detached_until(done);
    ASSERT_TRUE(done) << "a stop waited for a thread that allocates on fast paths";
    stop = true;
    std::vector<std::thread> threads;
    threads.push_back(std::move(other));
    threads.push_back(std::move(collector));
    join_detached(threads);
    expect_all_freed_once();
}

// Allocations on a thread's local heap count toward the shared heap's
// automatic collections.
TEST_F(SharedHeapTest, LocalAllocationsStartAutomaticCollections) {
    cgc_set_threshold(0, 100);
    on_attached_threads(heap_, 2, [&](int) {
        for (int round = 0; round < 1000; ++round) make_and_drop_ring(3);
    });
    EXPECT_GT(g_freed.load(), 0) << "no automatic collection ran";
    expect_all_freed_once();
}

// Frees count against generation 0 also when their objects were allocated
// before the thread's last slow allocation: chains longer than a page,
// built and dropped, never reach a threshold above their length (as on a
// confined heap).
TEST_F(SharedHeapTest, FreesOfEarlierAllocationsKeepTheCountDown) {
    cgc_set_threshold(0, 20000);
    cgc_generation_stats before{};
    cgc_get_stats(0, &before);
    on_attached_threads(heap_, 1, [&](int) {
        for (int round = 0; round < 100; ++round) make_and_drop_chain(5000);
    });
    cgc_generation_stats after{};
    cgc_get_stats(0, &after);
    EXPECT_EQ(after.collections, before.collections) << "frees did not lower the count of generation 0";
    expect_all_freed_once();
}

// Stops of the world and collections of every generation so far.
uint64_t stops_so_far() {
    cgc_pause_stats stops{};
    cgc_get_stop_stats(&stops);
    return stops.count;
}
uint64_t collections_so_far() {
    uint64_t collections = 0;
    for (int g = 0; g < 3; ++g) {
        cgc_generation_stats stats{};
        cgc_get_stats(g, &stats);
        collections += static_cast<uint64_t>(stats.collections);
    }
    return collections;
}

// A pair with 1000 more pointers: too large for a fast path, so that its
// allocation's slow path folds the thread's local count in.
PyObject *new_big_pair() {
    static PyTypeObject big_type = [] {
        PyTypeObject type = pair_type_finalized_by("shared_test.Big", nullptr);
        type.tp_itemsize = sizeof(PyObject *);
        return type;
    }();
    if (PyType_Ready(&big_type) != 0) return nullptr;
    PyObject *big = reinterpret_cast<PyObject *>(PyObject_GC_NewVar(Pair, &big_type, 1000));
    reinterpret_cast<Pair *>(big)->first = reinterpret_cast<Pair *>(big)->second = nullptr;
    reinterpret_cast<Pair *>(big)->state = kAlive;
    g_made++;
    return big;
}

// A thread that counted 600 allocations in the shared heap (its slow path
// folds its local count in), then freed them on its fast paths, leaves the
// combined count near 0: another thread's allocations stop the world only
// when a collection is due with both counts added, and every stop collects.
TEST_F(SharedHeapTest, EveryStopFindsACollectionDueWithAllThreadsCountsAdded) {
    cgc_set_threshold(0, 700);
    std::atomic<bool> counted{false}, done{false};
    std::thread other([&] {
        cgc_heap_set_current(heap_);
        std::vector<PyObject *> kept;
        for (int i = 0; i < 600; ++i) kept.push_back(new_pair());
        kept.push_back(new_big_pair());  // (its slow path folds the 600 in)
        for (PyObject *op : kept) Py_DECREF(op);
        counted = true;
        wait_detached_until(done);
        cgc_heap_set_current(nullptr);
    });
    wait_detached_until(counted);
    uint64_t stops = stops_so_far(), collections = collections_so_far();
    std::vector<PyObject *> kept;
    for (int i = 0; i < 1000; ++i) kept.push_back(new_pair());
    EXPECT_GE(collections_so_far() - collections, 1u);
    EXPECT_EQ(stops_so_far() - stops, collections_so_far() - collections) << "a stop found no collection due";
    for (PyObject *op : kept) Py_DECREF(op);
    done = true;
    std::vector<std::thread> threads;
    threads.push_back(std::move(other));
    join_detached(threads);
    expect_all_freed_once();
}

// Objects another thread freed in a thread's pages (pushed on their remote
// lists, released by that thread at its next slow allocation or stop) count
// as freed: a thread's allocations after it freed another's 600 stop the
// world only when a collection is due.
TEST_F(SharedHeapTest, FreesIntoAnotherThreadsPagesKeepTheCountDown) {
    cgc_set_threshold(0, 700);
    std::vector<PyObject *> handed;
    std::atomic<bool> made{false}, shared{false}, dropped{false}, done{false};
    std::thread maker([&] {
        cgc_heap_set_current(heap_);
        for (int i = 0; i < 600; ++i) handed.push_back(new_pair());
        handed.push_back(new_big_pair());  // (its slow path folds the 600 in)
        made = true;
        wait_detached_until(shared);
        for (PyObject *op : handed) Py_DECREF(op);  // (the other thread's references are the last)
        dropped = true;
        wait_detached_until(done);  // (its remote lists wait meanwhile)
        cgc_heap_set_current(nullptr);
    });
    wait_detached_until(made);
    for (PyObject *op : handed) Py_INCREF(op);  // (counted in the shared counts)
    shared = true;
    wait_detached_until(dropped);
    cgc_pause_stats before{};
    cgc_get_stop_stats(&before);
    for (PyObject *op : handed) Py_DECREF(op);  // freed here, into the maker's pages
    ASSERT_EQ(g_freed.load(), 601);
    std::vector<PyObject *> kept;
    for (int i = 0; i < 300; ++i) kept.push_back(new_pair());
    cgc_pause_stats after{};
    cgc_get_stop_stats(&after);
    EXPECT_EQ(after.not_due, before.not_due) << "a stop found no collection due: remote frees were not counted";
    EXPECT_EQ(after.count, before.count) << "300 allocations after 601 frees stopped the world";
    for (PyObject *op : kept) Py_DECREF(op);
    done = true;
    std::vector<std::thread> threads;
    threads.push_back(std::move(maker));
    join_detached(threads);
    expect_all_freed_once();
}

// Waits (detached, at most 20 s) until `step` reaches `value`.
void wait_detached_for_step(const std::atomic<int> &step, int value) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    Py_BEGIN_ALLOW_THREADS
    while (step < value && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Py_END_ALLOW_THREADS
}

uintptr_t page_address(const void *op) { return reinterpret_cast<uintptr_t>(op) >> 16; }  // (64 KiB pages)

// The survivors of a collection stay in the pages lent to the thread that
// made them (so that it frees them without the heap's lock): another
// thread's new objects do not go into those pages.
TEST_F(SharedHeapTest, SurvivorsStayInTheirThreadsPages) {
    cgc_set_threshold(0, 0);  // (no automatic collection)
    std::vector<PyObject *> kept;
    std::atomic<int> step{0};
    std::thread maker([&] {
        cgc_heap_set_current(heap_);
        for (int i = 0; i < 100; ++i) kept.push_back(new_pair());
        step = 1;
        wait_detached_for_step(step, 2);
        for (PyObject *op : kept) Py_DECREF(op);  // (survivors freed by their thread)
        cgc_heap_set_current(nullptr);
    });
    wait_detached_for_step(step, 1);
    cgc_collect(0);
    std::set<uintptr_t> survivor_pages;
    for (PyObject *op : kept) survivor_pages.insert(page_address(op));
    std::vector<PyObject *> mine;
    for (int i = 0; i < 100; ++i) mine.push_back(new_pair());
    int shared = 0;
    for (PyObject *op : mine) shared += survivor_pages.count(page_address(op)) ? 1 : 0;
    EXPECT_EQ(shared, 0) << "another thread's objects went into the pages of a thread's survivors";
    step = 2;
    std::vector<std::thread> threads;
    threads.push_back(std::move(maker));
    join_detached(threads);
    for (PyObject *op : mine) Py_DECREF(op);
    expect_all_freed_once();
}

// Survivors left in a thread's pages (unlisted in generation 1, then old)
// are still found by the collections of their generation, after their
// thread untracked and freed others of them without the lock.
TEST_F(SharedHeapTest, CollectionsFindGarbageAmongSurvivorsInThreadsPages) {
    cgc_set_threshold(0, 0);  // (no automatic collection)
    constexpr int kRings = 10;
    std::vector<PyObject *> rings, chains;
    std::atomic<int> step{0};
    std::thread maker([&] {
        cgc_heap_set_current(heap_);
        auto make_ring = [] {
            PyObject *head = new_pair(), *next = new_pair();
            reinterpret_cast<Pair *>(head)->first = next;
            reinterpret_cast<Pair *>(next)->first = Py_NewRef(head);
            return head;
        };
        for (int i = 0; i < kRings; ++i) rings.push_back(make_ring());
        for (int i = 0; i < 50; ++i) {
            chains.push_back(new_pair());
            reinterpret_cast<Pair *>(chains.back())->first = new_pair();
        }
        step = 1;
        wait_detached_for_step(step, 2);  // (all survived a collection of generation 0)
        for (PyObject *op : chains) Py_DECREF(op);  // freed here: 100 survivors untracked
        for (int i = 0; i < kRings / 2; ++i) Py_DECREF(rings[i]);
        step = 3;
        wait_detached_for_step(step, 4);  // (the others survived one of generation 1)
        for (int i = kRings / 2; i < kRings; ++i) Py_DECREF(rings[i]);
        step = 5;
        wait_detached_for_step(step, 6);
        cgc_heap_set_current(nullptr);
    });
    wait_detached_for_step(step, 1);
    EXPECT_EQ(cgc_collect(0), 0);
    step = 2;
    wait_detached_for_step(step, 3);
    EXPECT_EQ(cgc_collect(1), kRings) << "garbage among generation 1's survivors was missed";
    step = 4;
    wait_detached_for_step(step, 5);
    EXPECT_EQ(cgc_collect(2), kRings) << "garbage among old survivors was missed";
    step = 6;
    std::vector<std::thread> threads;
    threads.push_back(std::move(maker));
    join_detached(threads);
    expect_all_freed_once();
}

// C++ objects whose destructors, from the 1000th on, each wait 200 us (5 s
// at most in all) until another thread's collection has run: it must stop
// the world while this thread is still releasing them, between two
// destructors.
struct WaitingTree : cyclegc::object {
    static inline std::atomic<long> destroyed{0};
    static inline long nodes = 0;
    static inline std::atomic<bool> stop_wanted{false}, collected{false}, collected_before_end{false};
    static inline std::chrono::steady_clock::time_point deadline;
    cyclegc::ref<WaitingTree> left, right;
    void trace(cyclegc::tracer &t) { t(left, right); }
    ~WaitingTree() {
        long n = ++destroyed;
        if (n == 1000) {
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            stop_wanted = true;
        } else if (n > 1000 && n < nodes - 100) {
            if (!collected && std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
        } else if (n == nodes - 100) {
            collected_before_end = collected.load();
        }
    }
    static void reset() {
        destroyed = 0;
        nodes = 0;
        stop_wanted = collected = collected_before_end = false;
    }
    static cyclegc::ref<WaitingTree> build(int depth) {
        auto node = cyclegc::make<WaitingTree>();
        ++nodes;
        if (depth > 0) {
            node->left = build(depth - 1);
            node->right = build(depth - 1);
        }
        return node;
    }
    // A list of `length` objects, each the next one's `left`: releasing
    // its head nests deeper than the trashcan's limit.
    static cyclegc::ref<WaitingTree> chain(long length) {
        cyclegc::ref<WaitingTree> head;
        for (long i = 0; i < length; ++i) {
            auto node = cyclegc::make<WaitingTree>();
            node->left = std::move(head);
            head = std::move(node);
        }
        nodes += length;
        return head;
    }
};

// `release` (on an attached thread) makes and releases WaitingTree
// objects; another attached thread, which calls cyclegc::safepoint() while
// it waits, collects once 1000 are destroyed: the stop must not wait for
// the end of the release.
template <class Release>
void expect_a_stop_during(cgc_heap *heap, Release release) {
    WaitingTree::reset();
    cgc_set_threshold(0, 0);  // (no automatic collection)
    std::thread releaser([&] {
        cgc_heap_set_current(heap);
        release();
        cgc_heap_set_current(nullptr);
    });
    std::thread collector([&] {
        cgc_heap_set_current(heap);
        while (!WaitingTree::stop_wanted) {
            cyclegc::safepoint();
            std::this_thread::yield();
        }
        cgc_collect(0);
        WaitingTree::collected = true;
        cgc_heap_set_current(nullptr);
    });
    std::vector<std::thread> threads;
    threads.push_back(std::move(releaser));
    threads.push_back(std::move(collector));
    join_detached(threads);
    EXPECT_TRUE(WaitingTree::collected_before_end) << "the stop waited for the end of the release";
    EXPECT_EQ(WaitingTree::destroyed.load(), WaitingTree::nodes);
}

// A thread that releases a large tree of C++ objects parks between its
// objects' destructors when another thread stops the world (each object
// untracked before its destructor runs, none is tracked at count 0).
TEST_F(SharedHeapTest, AStopReachesAThreadReleasingALargeTree) {
    expect_a_stop_during(heap_, [] { WaitingTree::build(14); /* (dropped at once) */ });
}

// The same with a tree that a stop took back before its release (listed
// in the shared heap's generation 0: no collection ran), which untracks
// each object under the state lock.
TEST_F(SharedHeapTest, AStopReachesAThreadReleasingATreeListedByAStop) {
    expect_a_stop_during(heap_, [] {
        auto tree = WaitingTree::build(14);
        EXPECT_GT(cyclegc::get_objects(0).size(), 16000u);  // (a stop, the tree listed)
    });
}

// The same with a list nested deeper than the trashcan's limit: the thread
// parks between two deferred deallocations too.
TEST_F(SharedHeapTest, AStopReachesAThreadReleasingALongList) {
    expect_a_stop_during(heap_, [] { WaitingTree::chain(20000); });
}

// Threads that never choose a heap each get one of their own.
TEST(FirstUseHeap, ThreadsThatChooseNoHeapDoNotShareOne) {
    for (int run = 0; run < 20; ++run) {
        g_made = g_freed = g_freed_twice = 0;
        std::atomic<uint64_t> errors{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 2; ++t)
            threads.emplace_back([&] {
                uint64_t before = cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION);
                for (int i = 0; i < 200; ++i) {
                    make_and_drop_ring(4);
                    make_and_drop_chain(4);
                }
                cgc_collect(2);
                errors += cgc_error_count(CGC_ERR_MISUSE) + cgc_error_count(CGC_ERR_CORRUPTION) - before;
            });
        for (auto &thread : threads) thread.join();
        ASSERT_EQ(errors.load(), 0u) << "run " << run;
        ASSERT_EQ(g_freed_twice.load(), 0) << "run " << run;
        ASSERT_EQ(g_freed.load(), g_made.load()) << "run " << run;
    }
}

}  // namespace
