// Biased reference counting on a shared heap: counts exact and objects freed
// exactly once whichever thread counts or drops the last reference, the
// owner thread's exit, weak references racing the last release, objects of
// non-GC types, and Py_REFCNT / Py_SET_REFCNT.
#include <cyclegc/Python.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <utility>
#include <vector>

namespace shared_counts_test {
namespace {

using cyclegc::make;
using cyclegc::ref;
using cyclegc::weak;

constexpr int kIterations = 10'000'000;

std::atomic<int> g_freed{0};

void counting_dealloc(cgc_object *op) {
    g_freed.fetch_add(1);
    cgc_object_del(op);
}
int traverse_nothing(cgc_object *, cgc_visitproc, void *) { return 0; }
void counting_gc_dealloc(cgc_object *op) {
    g_freed.fetch_add(1);
    cgc_gc_del(op);
}

cgc_type plain_type = [] {
    cgc_type t{};
    t.tp_name = "shared_counts_test.Plain";
    t.tp_basicsize = sizeof(cgc_object);
    t.tp_dealloc = counting_dealloc;
    return t;
}();

cgc_type gc_type = [] {
    cgc_type t{};
    t.tp_name = "shared_counts_test.Gc";
    t.tp_basicsize = sizeof(cgc_object);
    t.tp_dealloc = counting_gc_dealloc;
    t.tp_traverse = traverse_nothing;
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    return t;
}();

struct Counted : cyclegc::object {
    static inline std::atomic<int> destroyed{0};
    int value = 7;
    ~Counted() {
        EXPECT_EQ(value, 7);
        value = 0;
        destroyed.fetch_add(1);
    }
};

class SharedCountsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(cgc_type_ready(&plain_type), 0);
        ASSERT_EQ(cgc_type_ready(&gc_type), 0);
        heap_ = cgc_heap_new_shared();
        ASSERT_NE(heap_, nullptr);
        attach();
        cgc_disable();  // (no collection while other threads run: not this part's subject)
        g_freed = 0;
        Counted::destroyed = 0;
    }
    void TearDown() override {
        cgc_heap_set_current(nullptr);
        cgc_heap_delete(heap_);
    }
    void attach() { cgc_heap_set_current(heap_); }

    // Runs `body` on a thread attached to the shared heap.
    template <class Body>
    std::thread attached_thread(Body body) {
        return std::thread([this, body = std::move(body)]() mutable {
            attach();
            body();
            cgc_heap_set_current(nullptr);
        });
    }

    cgc_heap *heap_ = nullptr;
};

// Both threads count the object up then down: a lost update on either
// side leaves the count wrong (and the object freed early or never).
void count_up_then_down(cgc_object *op, std::barrier<> &middle) {
    for (int i = 0; i < kIterations; ++i) Py_INCREF(op);
    middle.arrive_and_wait();
    middle.arrive_and_wait();
    for (int i = 0; i < kIterations; ++i) Py_DECREF(op);
}

TEST_F(SharedCountsTest, TwoThreadsCountOneObjectExactly) {
    for (cgc_type *type : {&gc_type, &plain_type}) {
        g_freed = 0;
        cgc_object *op = type == &gc_type ? cgc_gc_new(type) : cgc_object_new(type);
        ASSERT_NE(op, nullptr);
        std::barrier middle(2);
        std::thread other = attached_thread([&] { count_up_then_down(op, middle); });
        for (int i = 0; i < kIterations; ++i) Py_INCREF(op);  // (the owner: its local count)
        middle.arrive_and_wait();
        EXPECT_EQ(Py_REFCNT(op), 1 + 2 * cgc_ssize_t(kIterations)) << type->tp_name;
        middle.arrive_and_wait();
        for (int i = 0; i < kIterations; ++i) Py_DECREF(op);
        other.join();
        EXPECT_EQ(Py_REFCNT(op), 1) << type->tp_name;
        EXPECT_EQ(g_freed.load(), 0) << type->tp_name;
        Py_DECREF(op);
        EXPECT_EQ(g_freed.load(), 1) << type->tp_name;
    }
}

TEST_F(SharedCountsTest, TwoThreadsCopyOneRefExactly) {
    ref<Counted> object = make<Counted>();
    std::barrier middle(2);
    auto copy_and_release = [&] {
        for (int i = 0; i < kIterations; ++i) {
            ref<Counted> copy = object;
            ref<Counted> again = copy;
        }
        std::vector<ref<Counted>> held(1000, object);
        middle.arrive_and_wait();
        middle.arrive_and_wait();
    };
    std::thread other = attached_thread(copy_and_release);
    copy_and_release();
    other.join();
    EXPECT_EQ(object.use_count(), 1);
    EXPECT_EQ(Counted::destroyed.load(), 0);
    object.reset();
    EXPECT_EQ(Counted::destroyed.load(), 1);
}

TEST_F(SharedCountsTest, UseCountIsExactWhileAnotherThreadHolds) {
    ref<Counted> object = make<Counted>();
    std::barrier middle(2);
    std::thread other = attached_thread([&] {
        std::vector<ref<Counted>> held(5, object);
        middle.arrive_and_wait();
        middle.arrive_and_wait();
    });
    ref<Counted> mine = object;
    middle.arrive_and_wait();
    EXPECT_EQ(object.use_count(), 7);
    EXPECT_EQ(Py_REFCNT(object->as_cobject()), 7);
    middle.arrive_and_wait();
    other.join();
    EXPECT_EQ(object.use_count(), 2);
}

// The other thread's reference is counted in the shared count; the owner
// drops its own first (merging the object), so the last one goes on the
// other thread, which frees the object, once.
TEST_F(SharedCountsTest, TheLastReleaseOnAnotherThreadFreesOnce) {
    ref<Counted> object = make<Counted>();
    std::atomic<int> stage{0};
    std::thread other = attached_thread([&] {
        ref<Counted> mine = object;
        stage = 1;
        while (stage.load() != 2) std::this_thread::yield();
        EXPECT_EQ(mine.use_count(), 1);
        mine.reset();
        EXPECT_EQ(Counted::destroyed.load(), 1);
    });
    while (stage.load() != 1) std::this_thread::yield();
    object.reset();
    EXPECT_EQ(Counted::destroyed.load(), 0);
    stage = 2;
    other.join();
    EXPECT_EQ(Counted::destroyed.load(), 1);
}

// The other thread drops first, before the owner: the object waits in the
// owner's queue, which the owner merges at its next allocation.
TEST_F(SharedCountsTest, AReleaseOnAnotherThreadFirstIsMergedByTheOwner) {
    ref<Counted> object = make<Counted>();
    std::thread other = attached_thread([given = object]() mutable { given.reset(); });
    other.join();
    EXPECT_EQ(object.use_count(), 2);  // (the queue's reference counts)
    object.reset();
    EXPECT_EQ(Counted::destroyed.load(), 0);
    ref<Counted> next = make<Counted>();       // merges the queue
    EXPECT_EQ(Counted::destroyed.load(), 1);
    next.reset();
    EXPECT_EQ(Counted::destroyed.load(), 2);
}

// A release by the thread tagged just before the owner, of an object whose
// local count is 1: Py_DECREF's one compare (the word minus 2, whose tag a
// borrow lowers by one) must not take it for the thread's own and store a
// local count of 0; it is queued, and merged by the owner.
TEST_F(SharedCountsTest, AReleaseByTheThreadTaggedBeforeTheOwnerIsQueued) {
    cgc_object *object = nullptr;
    std::atomic<int> stage{0};
    auto wait_for = [&](int value) {
        while (stage.load() != value) std::this_thread::yield();
    };
    std::thread first = attached_thread([&] {
        make<Counted>().reset();  // (its tag, before the owner's)
        stage = 1;
        wait_for(2);
        Py_DECREF(object);
        stage = 3;
    });
    std::thread owner = attached_thread([&] {
        wait_for(1);
        object = cgc_object_new(&plain_type);
        stage = 2;
        wait_for(3);
        EXPECT_EQ(g_freed.load(), 0);
        make<Counted>().reset();  // merges its queue
        EXPECT_EQ(g_freed.load(), 1);
    });
    first.join();
    owner.join();
    EXPECT_EQ(g_freed.load(), 1);
}

struct Holder : cyclegc::object {
    ref<Counted> held;
    void trace(cyclegc::tracer &t) { t(held); }
};

// A collection merges the queue first, and again for what the first merges
// queued: a queued object's count includes the queue's reference, which the
// analysis would take as external, keeping it alive. Here the holder's merge
// frees it, and its release of the held object (owned by a live thread that
// is not the collecting one) queues that one.
TEST_F(SharedCountsTest, ACollectionMergesWhatItsMergesQueue) {
    std::atomic<bool> made{false}, done{false};
    ref<Holder> given;
    std::thread owner = attached_thread([&] {
        {
            ref<Holder> holder = make<Holder>();
            holder->held = make<Counted>();
            given = holder;
        }
        made = true;
        Py_BEGIN_ALLOW_THREADS  // (stays alive, owning both, without parking a collection)
        while (!done) std::this_thread::yield();
        Py_END_ALLOW_THREADS
    });
    while (!made) std::this_thread::yield();
    given.reset();  // (not the owner, shared count 0: queued)
    EXPECT_EQ(Counted::destroyed.load(), 0);
    EXPECT_GE(cgc_collect(2), 0);
    EXPECT_EQ(Counted::destroyed.load(), 1);  // (the held one, freed by the collection)
    done = true;
    owner.join();
    EXPECT_EQ(Counted::destroyed.load(), 1);
}

struct Linked : cyclegc::object {
    static inline std::atomic<int> destroyed{0};
    ref<Linked> next;
    ~Linked() { destroyed.fetch_add(1); }
    void trace(cyclegc::tracer &t) { t(next); }
};

void make_two_cycle() {
    ref<Linked> a = make<Linked>(), b = make<Linked>();
    a->next = b;
    b->next = a;
}

// Garbage the collecting thread owns and garbage another (alive) thread
// owns: the collection frees both at once (the other thread's merged, so
// that the clearing's releases are not queued for its owner).
TEST_F(SharedCountsTest, ACollectionFreesTheGarbageOfEveryOwnerAtOnce) {
    Linked::destroyed = 0;
    std::atomic<bool> made{false}, done{false};
    std::thread owner = attached_thread([&] {
        make_two_cycle();
        made = true;
        Py_BEGIN_ALLOW_THREADS  // (stays alive, owning its cycle, without parking a collection)
        while (!done) std::this_thread::yield();
        Py_END_ALLOW_THREADS
    });
    while (!made) std::this_thread::yield();
    make_two_cycle();
    EXPECT_EQ(Linked::destroyed.load(), 0);
    EXPECT_GE(cgc_collect(2), 4);
    EXPECT_EQ(Linked::destroyed.load(), 4);
    done = true;
    owner.join();
    EXPECT_EQ(Linked::destroyed.load(), 4);
}

// A 2-cycle member whose tp_clear keeps itself (a reference in a global).
struct Keeper {
    cgc_object ob_base;
    cgc_object *other;
};
cgc_object *g_kept = nullptr;
bool g_keep_other_untracked = false;  // (keep the other member, untracked, not itself)
int keeper_traverse(cgc_object *op, cgc_visitproc visit, void *arg) {
    Py_VISIT(reinterpret_cast<Keeper *>(op)->other);
    return 0;
}
int keeper_clear(cgc_object *op) {
    if (!g_kept) {
        cgc_object *kept = g_keep_other_untracked ? reinterpret_cast<Keeper *>(op)->other : op;
        Py_INCREF(kept);
        if (g_keep_other_untracked) PyObject_GC_UnTrack(kept);
        g_kept = kept;
    }
    Py_CLEAR(reinterpret_cast<Keeper *>(op)->other);
    return 0;
}
void keeper_dealloc(cgc_object *op) {
    PyObject_GC_UnTrack(op);
    Py_CLEAR(reinterpret_cast<Keeper *>(op)->other);
    g_freed.fetch_add(1);
    cgc_gc_del(op);
}
cgc_type keeper_type = [] {
    cgc_type t{};
    t.tp_name = "shared_counts_test.Keeper";
    t.tp_basicsize = sizeof(Keeper);
    t.tp_dealloc = keeper_dealloc;
    t.tp_traverse = keeper_traverse;
    t.tp_clear = keeper_clear;
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    return t;
}();

// The clearing counts its garbage with plain counts while the world is
// stopped: an object it leaves alive (a survivor, or one a tp_clear
// untracked) gets a shared heap's count word back, so that two threads
// then count it exactly.
class PlainGarbageTest : public SharedCountsTest, public ::testing::WithParamInterface<bool> {};

TEST_P(PlainGarbageTest, AnObjectTheClearingKeepsAliveIsCountedByEveryThreadAgain) {
    ASSERT_EQ(cgc_type_ready(&keeper_type), 0);
    g_kept = nullptr;
    g_keep_other_untracked = GetParam();
    auto *a = reinterpret_cast<Keeper *>(cgc_gc_new(&keeper_type));
    auto *b = reinterpret_cast<Keeper *>(cgc_gc_new(&keeper_type));
    ASSERT_TRUE(a && b);
    a->other = &b->ob_base;
    b->other = &a->ob_base;
    cgc_gc_track(a);
    cgc_gc_track(b);
    cgc_collect(2);
    ASSERT_NE(g_kept, nullptr);
    EXPECT_EQ(g_freed.load(), GetParam() ? 0 : 1);  // (untracked: the other one keeps the first)
    EXPECT_LT(g_kept->ob_refcnt, 0);  // (a shared heap's count word, not a plain count)
    EXPECT_EQ(Py_REFCNT(g_kept), 1);
    cgc_object *kept = g_kept;
    std::barrier middle(2);
    std::thread other = attached_thread([&] { count_up_then_down(kept, middle); });
    count_up_then_down(kept, middle);
    other.join();
    EXPECT_EQ(Py_REFCNT(kept), 1);
    g_kept = nullptr;
    Py_DECREF(kept);
    EXPECT_EQ(g_freed.load(), 2);
}

INSTANTIATE_TEST_SUITE_P(SurvivorOrUntracked, PlainGarbageTest, ::testing::Bool());

// A thread that exits gives up its objects: they die on the thread that
// drops them last, once, with their counts exact.
TEST_F(SharedCountsTest, TheOwnerExitsWhileOthersHoldItsObjects) {
    ref<Counted> kept;
    cgc_object *plain = nullptr;
    std::thread owner = attached_thread([&] {
        kept = make<Counted>();
        ref<Counted> extra = kept;
        plain = cgc_object_new(&plain_type);
        Py_INCREF(plain);
        Py_DECREF(plain);
        std::thread([&] {
            cgc_heap_set_current(heap_);
            { ref<Counted> hop = kept; }  // (released while attached: after, it would be refused)
            cgc_heap_set_current(nullptr);
        }).join();
    });
    owner.join();
    EXPECT_EQ(kept.use_count(), 1);
    EXPECT_EQ(Py_REFCNT(plain), 1);
    ref<Counted> copy = kept;
    EXPECT_EQ(kept.use_count(), 2);
    copy.reset();
    kept.reset();
    EXPECT_EQ(Counted::destroyed.load(), 1);
    Py_DECREF(plain);
    EXPECT_EQ(g_freed.load(), 1);
}

// weak::lock() on one thread while the last strong reference goes on
// another: either a live object or nothing, and one destruction.
TEST_F(SharedCountsTest, WeakLockRacesTheLastRelease) {
    constexpr int kRounds = 1000;
    for (int round = 0; round < kRounds; ++round) {
        ref<Counted> object = make<Counted>();
        weak<Counted> watch(object);
        std::atomic<int> stage{0};
        std::thread other = attached_thread([&] {
            ref<Counted> mine = object;  // (in the shared count)
            stage = 1;
            while (stage.load() != 2) std::this_thread::yield();
            mine.reset();
        });
        while (stage.load() != 1) std::this_thread::yield();
        object.reset();  // the owner's local count reaches 0: merged
        stage = 2;
        while (ref<Counted> locked = watch.lock()) EXPECT_EQ(locked->value, 7);
        other.join();
        EXPECT_EQ(Counted::destroyed.load(), round + 1);
    }
}

// A chain of C objects, each holding the next, freed by the owner's last
// release of its head: the deallocations nest through the thread's
// trashcan (deferred past its depth), not one stack frame per link.
struct Link {
    cgc_object base;
    cgc_object *next;
};
int link_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    cgc_object *next = reinterpret_cast<Link *>(self)->next;
    return next ? visit(next, arg) : 0;
}
void link_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    cgc_object *next = std::exchange(reinterpret_cast<Link *>(self)->next, nullptr);
    g_freed.fetch_add(1);
    cgc_gc_del(self);
    if (next) Py_DECREF(next);
}
cgc_type link_type = [] {
    cgc_type t{};
    t.tp_name = "shared_counts_test.Link";
    t.tp_basicsize = sizeof(Link);
    t.tp_dealloc = link_dealloc;
    t.tp_traverse = link_traverse;
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    return t;
}();

TEST_F(SharedCountsTest, TheOwnersLastReleaseOfALongChainFreesEveryLink) {
    ASSERT_EQ(cgc_type_ready(&link_type), 0);
    constexpr int kLinks = 1'000'000;  // (a frame per link would overflow the stack)
    cgc_object *head = nullptr;
    for (int i = 0; i < kLinks; ++i) {
        cgc_object *link = cgc_gc_new(&link_type);
        ASSERT_NE(link, nullptr);
        reinterpret_cast<Link *>(link)->next = head;
        cgc_gc_track(link);
        head = link;
    }
    Py_DECREF(head);
    EXPECT_EQ(g_freed.load(), kLinks);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);
}

// The owner's last release of its own object that has a weak reference
// (in a page lent to the thread, no other thread's reference): the weak
// reference dies with it, and the object is destroyed once.
TEST_F(SharedCountsTest, TheOwnersLastReleaseClearsWeakReferences) {
    ref<Counted> object = make<Counted>();
    weak<Counted> watch(object);
    EXPECT_TRUE(watch.lock());
    object.reset();
    EXPECT_EQ(Counted::destroyed.load(), 1);
    EXPECT_FALSE(watch.lock());
    EXPECT_TRUE(watch.expired());
}

TEST_F(SharedCountsTest, SetRefcntSetsTheWholeCount) {
    cgc_object *op = cgc_gc_new(&gc_type);
    std::thread([&] {
        cgc_heap_set_current(heap_);
        Py_INCREF(op);  // (in the shared count)
        cgc_heap_set_current(nullptr);
    }).join();
    EXPECT_EQ(Py_REFCNT(op), 2);
    Py_SET_REFCNT(op, 1);
    EXPECT_EQ(Py_REFCNT(op), 1);
    Py_DECREF(op);
    EXPECT_EQ(g_freed.load(), 1);
}

TEST(ConfinedCountsTest, TheWordIsThePlainCount) {
    ASSERT_EQ(cgc_type_ready(&gc_type), 0);
    cgc_heap *heap = cgc_heap_new();
    cgc_heap_set_current(heap);
    cgc_object *op = cgc_gc_new(&gc_type);
    Py_INCREF(op);
    EXPECT_EQ(op->ob_refcnt, 2);
    EXPECT_EQ(Py_REFCNT(op), 2);
    Py_SET_REFCNT(op, 1);
    EXPECT_EQ(op->ob_refcnt, 1);
    Py_DECREF(op);
    cgc_heap_set_current(nullptr);
    cgc_heap_delete(heap);
}

}  // namespace
}  // namespace shared_counts_test
