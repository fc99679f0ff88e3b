// Heaps: creation, the current heap, independent state, deletion; the error
// API and hooks; the settings' getters and setters; automatic collection at
// allocation and at safepoints; cgc_finalize.
#include "test_types.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstring>
#include <latch>
#include <thread>

using namespace cgc_test;

namespace {

// Tests here manage heaps themselves. Every heap made with make_heap() gets
// a capturing error hook and is deleted at the end (if the test did not).
class HeapTest : public ::testing::Test {
  protected:
    void SetUp() override {
        reset_node_state();
        cgc_heap_set_current(nullptr);
        default_heap_ = cgc_heap_current();
    }

    void TearDown() override {
        reset_node_state();
        for (cgc_heap *heap : heaps_) {
            cgc_heap_set_current(heap);
            cgc_collect(2);
            EXPECT_EQ(tracked_total(), 0) << "the test left tracked objects behind";
            cgc_heap_set_current(nullptr);
            cgc_heap_delete(heap);
        }
        cgc_heap_set_current(nullptr);
        EXPECT_TRUE(errors_.empty()) << "unexpected errors:\n" << describe(errors_);
    }

    cgc_heap *make_heap() {
        cgc_heap *heap = cgc_heap_new();
        EXPECT_NE(heap, nullptr);
        cgc_heap *previous = cgc_heap_current();
        cgc_heap_set_current(heap);
        cgc_set_error_hook(&HeapTest::capture, this);
        cgc_heap_set_current(previous == default_heap_ ? nullptr : previous);
        heaps_.push_back(heap);
        return heap;
    }

    void forget_heap(cgc_heap *heap) { heaps_.erase(std::find(heaps_.begin(), heaps_.end(), heap)); }

    static void capture(cgc_error_kind kind, const char *message, void *context) {
        static_cast<HeapTest *>(context)->errors_.push_back({kind, message});
    }

    std::vector<ReportedError> take_errors() {
        std::vector<ReportedError> taken;
        taken.swap(errors_);
        return taken;
    }

    cgc_heap *default_heap_ = nullptr;
    std::vector<cgc_heap *> heaps_;
    std::vector<ReportedError> errors_;
};

// ---- Heaps ---------------------------------------------------------------------

TEST_F(HeapTest, SetCurrentSwitchesAndNullRestoresTheDefault) {
    ASSERT_NE(default_heap_, nullptr);
    cgc_heap *heap = make_heap();
    EXPECT_NE(heap, default_heap_);
    EXPECT_EQ(cgc_heap_current(), default_heap_);
    cgc_heap_set_current(heap);
    EXPECT_EQ(cgc_heap_current(), heap);
    cgc_heap_set_current(nullptr);
    EXPECT_EQ(cgc_heap_current(), default_heap_);
    cgc_initialize();  // optional, changes nothing
    EXPECT_EQ(cgc_heap_current(), default_heap_);
}

TEST_F(HeapTest, TwoHeapsHaveIndependentState) {
    cgc_heap *one = make_heap();
    cgc_heap *two = make_heap();

    cgc_heap_set_current(one);
    cgc_set_threshold(0, 5);
    cgc_set_threshold(1, 6);
    cgc_set_threshold(2, 7);
    EXPECT_EQ(cgc_disable(), 1);
    cgc_set_auto_mode(CGC_AUTO_AT_SAFEPOINT);
    cgc_error_set(CGC_ERR_VALUE, "only in one");
    std::vector<Node *> nodes;
    for (int i = 0; i < 3; ++i) nodes.push_back(new_node(i));
    EXPECT_EQ(cgc_get_count(0), 3);
    cgc_collect(0);
    cgc_collect(0);
    EXPECT_EQ(cgc_get_count(1), 2);
    EXPECT_EQ(stats_of(0).collections, 2u);

    cgc_heap_set_current(two);
    EXPECT_EQ(cgc_get_threshold(0), 700);
    EXPECT_EQ(cgc_get_threshold(1), 10);
    EXPECT_EQ(cgc_get_threshold(2), 10);
    EXPECT_EQ(cgc_is_enabled(), 1);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);
    EXPECT_STREQ(cgc_error_message(), "");
    EXPECT_EQ(cgc_error_count(CGC_ERR_VALUE), 0u);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(tracked_total(), 0);
    // Automatic collection at allocation still works here (not safepoint mode).
    cgc_set_threshold(0, 10);
    for (int i = 0; i < 30; ++i) make_garbage_self_cycle();
    EXPECT_GE(stats_of(0).collections, 2u);
    EXPECT_GE(counters.deallocated, 20);

    cgc_heap_set_current(one);
    EXPECT_EQ(cgc_get_threshold(0), 5);
    EXPECT_EQ(cgc_get_threshold(1), 6);
    EXPECT_EQ(cgc_get_threshold(2), 7);
    EXPECT_EQ(cgc_is_enabled(), 0);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_VALUE);
    EXPECT_STREQ(cgc_error_message(), "only in one");
    EXPECT_EQ(cgc_error_count(CGC_ERR_VALUE), 1u);
    EXPECT_EQ(stats_of(0).collections, 2u);
    EXPECT_EQ(tracked_total(), 3);
    for (Node *node : nodes) cgc_decref(obj(node));

    std::vector<ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].message, "only in one");
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, ObjectsAreCollectedOnlyByTheirHeap) {
    cgc_heap *one = make_heap();
    cgc_heap *two = make_heap();
    cgc_heap_set_current(one);
    cgc_disable();
    Node *a = new_node(1);
    Node *b = new_node(2);
    link_next(a, b);
    link_next(b, a);
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    cgc_heap_set_current(two);
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(stats_of(2).examined, 0u);
    EXPECT_EQ(counters.deallocated, 0);
    cgc_heap_set_current(one);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(counters.deallocated, 2);
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, DeletingAHeapRunsItsFinalCollections) {
    cgc_heap *heap = make_heap();
    cgc_heap_set_current(heap);
    cgc_disable();
    Node *a = new_node(1);
    Node *b = new_node(2);
    link_next(a, b);
    link_next(b, a);
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    cgc_heap_set_current(nullptr);
    forget_heap(heap);
    cgc_heap_delete(heap);  // not current: made current for the collections
    EXPECT_EQ(counters.deallocated, 2);
    EXPECT_EQ(cgc_heap_current(), default_heap_);

    cgc_heap *current = cgc_heap_new();  // deleting the current heap
    ASSERT_NE(current, nullptr);
    cgc_heap_set_current(current);
    make_garbage_self_cycle();
    cgc_heap_delete(current);
    EXPECT_EQ(counters.deallocated, 3);
    EXPECT_EQ(cgc_heap_current(), default_heap_);
}

TEST_F(HeapTest, DeletingAHeapWithLiveObjectsIsRefused) {
    cgc_heap *heap = make_heap();
    cgc_heap *caller = make_heap();
    cgc_heap_set_current(heap);
    Node *live = new_node(1);
    cgc_heap_set_current(caller);
    cgc_heap_delete(heap);  // refused: the error goes to the caller's heap
    std::vector<ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 1u) << describe(errors);
    EXPECT_EQ(errors[0].kind, CGC_ERR_MISUSE);
    EXPECT_CONTAINS(errors[0].message, "cgc_heap_delete");
    EXPECT_CONTAINS(errors[0].message, "live tracked objects");
    EXPECT_EQ(cgc_error_count(CGC_ERR_MISUSE), 1u);
    EXPECT_EQ(counters.deallocated, 0);

    // The heap is intact: its object can still be used and freed there.
    cgc_heap_set_current(heap);
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(cgc_gc_is_tracked(obj(live)));
    cgc_decref(obj(live));
    EXPECT_EQ(counters.deallocated, 1);
    cgc_heap_set_current(nullptr);  // TearDown deletes it, now empty
}

TEST_F(HeapTest, DefaultHeapCannotBeDeleted) {
    cgc_error_hook previous = cgc_set_error_hook(&HeapTest::capture, this);
    uint64_t misuse_before = cgc_error_count(CGC_ERR_MISUSE);
    cgc_heap_delete(default_heap_);
    cgc_set_error_hook(previous, nullptr);
    cgc_error_clear();
    EXPECT_EQ(cgc_heap_current(), default_heap_);
    EXPECT_EQ(cgc_error_count(CGC_ERR_MISUSE), misuse_before + 1);
    std::vector<ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, CGC_ERR_MISUSE);
    EXPECT_CONTAINS(errors[0].message, "default heap cannot be deleted");
    cgc_heap_delete(nullptr);  // a no-op
}

// A node type for threads: frees counted per thread (node_type's counters
// are process-wide).
thread_local int t_thread_nodes_freed = 0;
struct ThreadNode {
    cgc_object ob_base;
    cgc_object *next;
};
int thread_node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    cgc_object *next = reinterpret_cast<ThreadNode *>(self)->next;
    return next ? visit(next, arg) : 0;
}
int thread_node_clear(cgc_object *self) {
    cgc_object *next = reinterpret_cast<ThreadNode *>(self)->next;
    reinterpret_cast<ThreadNode *>(self)->next = nullptr;
    cgc_xdecref(next);
    return 0;
}
void thread_node_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    thread_node_clear(self);
    cgc_gc_del(self);
    ++t_thread_nodes_freed;
}
cgc_type unready_thread_node_type() {
    cgc_type type{};
    type.tp_name = "test.ThreadNode";
    type.tp_basicsize = sizeof(ThreadNode);
    type.tp_flags = CGC_TPFLAGS_HAVE_GC;
    type.tp_dealloc = thread_node_dealloc;
    type.tp_traverse = thread_node_traverse;
    type.tp_clear = thread_node_clear;
    return type;
}
cgc_type thread_node_type = unready_thread_node_type();

// Makes `cycles` garbage self-cycles with automatic collection on, then
// collects: returns how many nodes this thread freed.
int churn_cycles(int cycles) {
    int before = t_thread_nodes_freed;
    for (int i = 0; i < cycles; ++i) {
        auto *node = reinterpret_cast<ThreadNode *>(cgc_gc_new(&thread_node_type));
        node->next = &node->ob_base;
        cgc_incref(&node->ob_base);
        cgc_gc_track(node);
        cgc_decref(&node->ob_base);
    }
    cgc_collect(2);
    return t_thread_nodes_freed - before;
}

TEST_F(HeapTest, NewThreadsGetAHeapOfTheirOwn) {
    cgc_heap *heap = make_heap();
    cgc_heap_set_current(heap);
    cgc_heap *seen = nullptr;
    cgc_ssize_t collected = -1;
    std::thread worker([&] {
        seen = cgc_heap_current();
        Node *node = new_node(7);
        link_next(node, node);
        cgc_decref(obj(node));
        collected = cgc_collect(2);
    });
    worker.join();
    EXPECT_NE(seen, nullptr);
    EXPECT_NE(seen, default_heap_);
    EXPECT_NE(seen, heap);
    EXPECT_EQ(collected, 1);
    EXPECT_EQ(cgc_heap_current(), heap);  // this thread's heap did not change
    cgc_heap_set_current(nullptr);
    EXPECT_EQ(cgc_heap_current(), default_heap_);  // NULL: the thread's own heap
}

// Threads that never choose a heap each get their own: building and
// dropping cycles side by side, each frees exactly its own (on one shared
// heap they would race on its lists and counts, and crash or lose objects).
TEST_F(HeapTest, ThreadsThatChooseNoHeapDoNotShareOne) {
    constexpr int kThreads = 4, kCycles = 20000;
    int freed[kThreads] = {};
    cgc_heap *heaps[kThreads] = {};
    std::latch all_started(kThreads);  // (all alive at once: no heap's address reused)
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t)
        workers.emplace_back([&, t] {
            heaps[t] = cgc_heap_current();
            all_started.arrive_and_wait();
            freed[t] = churn_cycles(kCycles);
        });
    for (std::thread &worker : workers) worker.join();
    for (int t = 0; t < kThreads; ++t) {
        EXPECT_EQ(freed[t], kCycles) << "thread " << t;
        EXPECT_NE(heaps[t], default_heap_);
        for (int u = 0; u < t; ++u) EXPECT_NE(heaps[t], heaps[u]);
    }
}

// A static type is shared by every thread and readied by the first that
// allocates one: threads that start together all see it ready and valid
// (unserialized, one of them found another's "readying" mark on a base and
// was refused with "is its own base", or read slots not yet filled). Each
// round's type has a long chain of unready bases, so readying takes long
// enough for the threads to meet in it.
TEST_F(HeapTest, ThreadsReadyAStaticTypeTogether) {
    constexpr int kThreads = 2, kRounds = 60, kChain = 2000;
    std::vector<cgc_type> types(kRounds * kChain);
    for (int round = 0; round < kRounds; ++round)
        for (int i = 0; i < kChain; ++i) {
            cgc_type &type = types[round * kChain + i];
            type = unready_thread_node_type();
            type.tp_flags |= CGC_TPFLAGS_BASETYPE;
            if (i > 0) type.tp_base = &types[round * kChain + i - 1];
        }
    std::atomic<int> made{0};
    std::barrier in_step(kThreads);  // all threads meet each round's type at once
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t)
        workers.emplace_back([&] {
            for (int round = 0; round < kRounds; ++round) {
                in_step.arrive_and_wait();
                cgc_object *op = cgc_gc_new(&types[round * kChain + kChain - 1]);
                if (!op) continue;
                ++made;
                cgc_gc_del(op);
            }
        });
    for (std::thread &worker : workers) worker.join();
    EXPECT_EQ(made, kThreads * kRounds);
    for (cgc_type &type : types) EXPECT_TRUE(type.tp_flags & CGC_TPFLAGS_READY);
}

// A heap is confined to the thread that made it current: another thread's
// track, untrack or free of its objects is refused and reported, naming the
// function, the type and both threads.
TEST_F(HeapTest, ASharedHeapIsSharedAndBelongsToNoThread) {
    cgc_heap *shared = cgc_heap_new_shared();
    ASSERT_NE(shared, nullptr);
    EXPECT_EQ(cgc_heap_is_shared(shared), 1);
    EXPECT_EQ(cgc_heap_is_shared(default_heap_), 0);
    EXPECT_EQ(cgc_heap_is_shared(nullptr), 0);
    cgc_heap_set_current(shared);
    cgc_set_error_hook(&HeapTest::capture, this);
    heaps_.push_back(shared);
    Node *node = new_node(1);  // tracked, in the shared heap
    cgc_heap_set_current(nullptr);
    std::thread other([&] {
        cgc_heap_set_current(shared);
        cgc_gc_untrack(node);  // another thread may: no misuse report
        cgc_heap_set_current(nullptr);
    });
    other.join();
    EXPECT_EQ(generation_of(node), -1);
    cgc_heap_set_current(shared);
    cgc_decref(obj(node));
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, ObjectsOfAnotherThreadsHeapAreRefused) {
    Node *node = new_node(1);        // tracked, in this thread's heap
    Node *loose = new_node(&node_type, 2, false);  // not tracked
    std::vector<ReportedError> seen;
    std::thread worker([&] {
        cgc_set_error_hook(
            [](cgc_error_kind kind, const char *message, void *context) {
                static_cast<std::vector<ReportedError> *>(context)->push_back({kind, message});
            },
            &seen);
        cgc_gc_untrack(node);
        cgc_gc_track(loose);
        cgc_gc_del(loose);
    });
    worker.join();
    ASSERT_EQ(seen.size(), 3u) << describe(seen);
    for (const ReportedError &error : seen) {
        EXPECT_EQ(error.kind, CGC_ERR_MISUSE);
        EXPECT_CONTAINS(error.message, "test.Node");
        EXPECT_CONTAINS(error.message, "confined to thread");
    }
    EXPECT_CONTAINS(seen[0].message, "PyObject_GC_UnTrack");
    EXPECT_CONTAINS(seen[1].message, "PyObject_GC_Track");
    EXPECT_CONTAINS(seen[2].message, "PyObject_GC_Del");
    EXPECT_EQ(generation_of(node), 0);  // still tracked
    EXPECT_EQ(generation_of(loose), -1);  // not tracked, not freed
    cgc_decref(obj(node));
    cgc_decref(obj(loose));
}

// ---- The error API -----------------------------------------------------------------

struct HookLog {
    std::vector<ReportedError> errors;
    std::vector<void *> contexts;
};
void hook_a(cgc_error_kind kind, const char *message, void *context) {
    static_cast<HookLog *>(context)->errors.push_back({kind, std::string("a:") + message});
}
void hook_b(cgc_error_kind kind, const char *message, void *context) {
    static_cast<HookLog *>(context)->errors.push_back({kind, std::string("b:") + message});
}

TEST_F(HeapTest, ErrorsAreRecordedCountedAndCleared) {
    cgc_heap *heap = make_heap();
    cgc_heap_set_current(heap);
    HookLog log;
    cgc_set_error_hook(hook_a, &log);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);
    EXPECT_STREQ(cgc_error_message(), "");

    cgc_error_set(CGC_ERR_VALUE, "first problem");
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_VALUE);
    EXPECT_STREQ(cgc_error_message(), "first problem");
    EXPECT_EQ(cgc_error_count(CGC_ERR_VALUE), 1u);
    ASSERT_EQ(log.errors.size(), 1u);
    EXPECT_EQ(log.errors[0].kind, CGC_ERR_VALUE);
    EXPECT_EQ(log.errors[0].message, "a:first problem");

    cgc_error_set(CGC_ERR_MEMORY, "second");  // the last one wins
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_MEMORY);
    EXPECT_STREQ(cgc_error_message(), "second");
    EXPECT_EQ(cgc_error_count(CGC_ERR_MEMORY), 1u);
    EXPECT_EQ(cgc_error_count(CGC_ERR_VALUE), 1u);

    cgc_error_clear();
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);
    EXPECT_STREQ(cgc_error_message(), "");
    EXPECT_EQ(cgc_error_count(CGC_ERR_VALUE), 1u);  // counts are history

    // A message is text, not a format.
    cgc_error_set(CGC_ERR_TYPE, "100% sure: %s %d %n");
    EXPECT_STREQ(cgc_error_message(), "100% sure: %s %d %n");
    ASSERT_EQ(log.errors.size(), 3u);
    EXPECT_EQ(log.errors[2].message, "a:100% sure: %s %d %n");

    EXPECT_EQ(cgc_error_count(static_cast<cgc_error_kind>(99)), 0u);
    EXPECT_EQ(cgc_error_count(static_cast<cgc_error_kind>(-1)), 0u);
    EXPECT_EQ(cgc_error_count(CGC_ERR_NONE), 0u);
    cgc_set_error_hook(&HeapTest::capture, this);
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, ErrorHookReturnsThePreviousOne) {
    cgc_heap *heap = make_heap();
    cgc_heap_set_current(heap);
    HookLog log_a, log_b;
    cgc_set_error_hook(nullptr, nullptr);  // back to the default
    cgc_error_hook default_hook = cgc_set_error_hook(hook_a, &log_a);
    ASSERT_NE(default_hook, nullptr);
    EXPECT_NE(default_hook, hook_a);
    EXPECT_EQ(cgc_set_error_hook(hook_b, &log_b), hook_a);
    cgc_error_set(CGC_ERR_MISUSE, "to b");
    ASSERT_EQ(log_b.errors.size(), 1u);
    EXPECT_EQ(log_b.errors[0].message, "b:to b");  // with b's context
    EXPECT_TRUE(log_a.errors.empty());
    EXPECT_EQ(cgc_set_error_hook(nullptr, nullptr), hook_b);

    // The default prints "cyclegc: <message>" to stderr.
    ::testing::internal::CaptureStderr();
    cgc_error_set(CGC_ERR_MISUSE, "to stderr");
    default_hook(CGC_ERR_VALUE, "called directly", nullptr);
    std::string printed = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(printed, "cyclegc: to stderr\ncyclegc: called directly\n");
    EXPECT_EQ(log_b.errors.size(), 1u);

    EXPECT_EQ(cgc_set_error_hook(&HeapTest::capture, this), default_hook);
    cgc_heap_set_current(nullptr);
}

// ---- Settings --------------------------------------------------------------------

TEST_F(HeapTest, SettingsGettersAndInvalidGenerations) {
    cgc_heap *heap = make_heap();
    cgc_heap_set_current(heap);
    EXPECT_EQ(cgc_get_threshold(0), 700);
    EXPECT_EQ(cgc_get_threshold(1), 10);
    EXPECT_EQ(cgc_get_threshold(2), 10);
    for (int bad : {-1, 3, 100}) {
        EXPECT_EQ(cgc_get_threshold(bad), -1);
        EXPECT_EQ(cgc_get_count(bad), -1);
        cgc_generation_stats stats;
        std::memset(&stats, 0xFF, sizeof stats);
        cgc_get_stats(bad, &stats);
        EXPECT_EQ(stats.collections + stats.collected + stats.uncollectable + stats.examined +
                      stats.total_ns + stats.max_pause_ns,
                  0u);
    }
    cgc_get_stats(0, nullptr);  // ignored
    EXPECT_TRUE(take_errors().empty());

    cgc_set_threshold(1, 25);
    EXPECT_EQ(cgc_get_threshold(1), 25);
    cgc_set_threshold(3, 5);
    cgc_set_threshold(-1, 5);
    cgc_set_threshold(0, -1);
    std::vector<ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 3u) << describe(errors);
    for (const ReportedError &error : errors) {
        EXPECT_EQ(error.kind, CGC_ERR_VALUE);
        EXPECT_CONTAINS(error.message, "cgc_set_threshold");
    }
    EXPECT_EQ(cgc_get_threshold(0), 700);
    EXPECT_EQ(cgc_get_threshold(1), 25);
    EXPECT_EQ(cgc_get_threshold(2), 10);

    EXPECT_EQ(cgc_collect(-1), -1);
    EXPECT_EQ(cgc_collect(3), -1);
    errors = take_errors();
    ASSERT_EQ(errors.size(), 2u) << describe(errors);
    EXPECT_EQ(errors[0].kind, CGC_ERR_VALUE);
    EXPECT_CONTAINS(errors[0].message, "invalid generation -1");
    EXPECT_CONTAINS(errors[1].message, "invalid generation 3");
    for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) EXPECT_EQ(stats_of(g).collections, 0u);
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, EnableAndDisableReturnThePreviousState) {
    cgc_heap_set_current(make_heap());
    EXPECT_EQ(cgc_is_enabled(), 1);
    EXPECT_EQ(cgc_disable(), 1);
    EXPECT_EQ(cgc_disable(), 0);
    EXPECT_EQ(cgc_is_enabled(), 0);
    EXPECT_EQ(cgc_enable(), 0);
    EXPECT_EQ(cgc_enable(), 1);
    EXPECT_EQ(cgc_is_enabled(), 1);
    cgc_heap_set_current(nullptr);
}

// ---- Automatic collection ---------------------------------------------------------

TEST_F(HeapTest, AllocationCollectsAutomaticallyAndBoundsGarbage) {
    cgc_heap_set_current(make_heap());  // defaults: enabled, 700/10/10
    const int n = 100'000;
    int max_alive = 0;
    for (int i = 0; i < n; ++i) {
        make_garbage_self_cycle();
        max_alive = std::max(max_alive, (i + 1) - counters.deallocated);
    }
    EXPECT_LE(max_alive, 701 + 10) << "garbage piles up: automatic collection does not keep up";
    uint64_t automatic = stats_of(0).collections + stats_of(1).collections + stats_of(2).collections;
    EXPECT_GE(automatic, static_cast<uint64_t>(n / 702 - 1));  // one per ~701 allocations
    // Every 11th is of generation 1 (or a full one, or with a pause budget
    // an incremental cycle's final step beside the young collections).
    EXPECT_GE(stats_of(1).collections + stats_of(2).collections, automatic / 11 - 1);
    cgc_collect(2);
    EXPECT_EQ(counters.deallocated, n);
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, NoAutomaticCollectionWhenDisabledOrThresholdZero) {
    cgc_heap_set_current(make_heap());
    cgc_disable();
    for (int i = 0; i < 2000; ++i) make_garbage_self_cycle();
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(cgc_collect(2), 2000);

    cgc_enable();
    cgc_set_threshold(0, 0);  // also disables automatic collection
    for (int i = 0; i < 2000; ++i) make_garbage_self_cycle();
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(cgc_collect_if_enabled(), 2000);
    EXPECT_EQ(counters.deallocated, 4000);

    cgc_disable();
    make_garbage_self_cycle();
    EXPECT_EQ(cgc_collect_if_enabled(), 0);  // PyGC_Collect does nothing when disabled
    EXPECT_EQ(counters.deallocated, 4000);
    EXPECT_EQ(cgc_collect(0), 1);
    cgc_heap_set_current(nullptr);
}

TEST_F(HeapTest, SafepointModeDefersCollectionsToTheSafepoint) {
    cgc_heap_set_current(make_heap());
    cgc_set_threshold(0, 10);
    cgc_set_auto_mode(CGC_AUTO_AT_SAFEPOINT);
    EXPECT_EQ(cgc_safepoint(), 0);  // nothing due
    EXPECT_EQ(stats_of(0).collections, 0u);

    for (int i = 0; i < 50; ++i) make_garbage_self_cycle();
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(cgc_get_count(0), 50);

    EXPECT_EQ(cgc_safepoint(), 50);
    EXPECT_EQ(stats_of(0).collections, 1u);
    EXPECT_EQ(counters.deallocated, 50);
    EXPECT_EQ(cgc_safepoint(), 0);  // done: nothing due any more
    EXPECT_EQ(stats_of(0).collections, 1u);

    // Back at allocation: the same loop collects by itself.
    cgc_set_auto_mode(CGC_AUTO_AT_ALLOCATION);
    for (int i = 0; i < 50; ++i) make_garbage_self_cycle();
    EXPECT_GE(stats_of(0).collections, 1u + 4u);
    EXPECT_GE(counters.deallocated, 50 + 40);
    cgc_heap_set_current(nullptr);
}

// ---- cgc_finalize ------------------------------------------------------------------

TEST_F(HeapTest, FinalizeCollectsEverythingItCan) {
    cgc_heap_set_current(make_heap());
    cgc_disable();
    Node *a = new_node(1);
    Node *b = new_node(2);
    link_next(a, b);
    link_next(b, a);
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    // A finalizer that makes new garbage once: a second round frees it.
    on_finalize = [](Node *node) {
        if (node->id == 3) make_garbage_self_cycle(&node_type, 4);
    };
    make_garbage_self_cycle(&final_node_type, 3);
    EXPECT_EQ(cgc_finalize(), 0);
    EXPECT_EQ(counters.deallocated, 4);
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(tracked_total(), 0);
    EXPECT_EQ(stats_of(2).collections, 3u);  // garbage, garbage made by the finalizer, nothing
    cgc_heap_set_current(nullptr);
}

}  // namespace
