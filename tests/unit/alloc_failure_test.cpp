// Allocation failure inside a collection: every allocation the library makes
// for itself while collecting (GC pages, growth of the young arrays, of the
// candidates, unreachable and uncollectable arrays, of the mark stack, of the
// garbage list, of weak reference callback queues, of the callback list
// copy) is made to fail in turn. Defined outcome: the collection fails
// safely (returns, no crash, no exception escaping), nothing reachable is
// freed or cleared, and a later collection without failures frees all the
// garbage; errors reported, if any, are CGC_ERR_MEMORY.
//
// The fault injection hook (proposed with these tests, added in c2ab18b):
//
//     #define CGC_HAVE_DEBUG_FAIL_ALLOCATIONS 1
//     uint64_t cgc_debug_fail_allocations(uint64_t nth);
//
// (the nth internal allocation from now on, on the current heap, fails once;
// 0 disarms; returns how many internal allocations the heap has made). A
// build without it compiles these tests to one skipped test. Before c2ab18b,
// a failure to copy the collection callbacks or to grow a weak reference
// callback queue threw std::bad_alloc out of cgc_collect and left the heap
// "collecting" forever (found with a prototype of the hook).
#include "hostile_types.hpp"

#include <cyclegc/cyclegc.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

using namespace cgc_hostile;

namespace {

#if defined(CGC_HAVE_DEBUG_FAIL_ALLOCATIONS)

cgc_type plain_type = make_type("alloc.Plain");
cgc_type final_type = make_type("alloc.Final", /*finalizer=*/true);
cgc_type legacy_type = [] {
    cgc_type t = make_type("alloc.Legacy");
    t.tp_del = [](cgc_object *) {};
    return t;
}();

// A size class nothing else uses: allocating one needs a new page.
cgc_type big_type = [] {
    cgc_type t = make_type("alloc.Big");
    t.tp_basicsize = 4000;
    return t;
}();

int g_callbacks = 0;
void count_callback(cgc_object *, void *) { ++g_callbacks; }
void collection_callback(const char *, const cgc_collection_info *, void *) {}

// A heap with a bit of everything, young and old: reachable chains and
// cycles (checked afterwards), garbage cycles of every kind, weak references
// with callbacks to garbage, a legacy finalizer cycle, a resurrecting
// finalizer, a collection callback.
struct Scene {
    std::vector<HObj *> roots;          // reachable, held by the test
    std::vector<int> reachable_ids;     // everything the roots reach
    std::vector<cgc_object *> weakrefs; // held by the test, to garbage
    cgc_object *resurrected = nullptr;

    void build() {
        int id = 1;
        auto chain = [&](cgc_type *type, int length, bool cycle, bool keep) {
            HObj *first = make(type, id++);
            HObj *last = first;
            for (int i = 1; i < length; ++i) {
                HObj *n = make(type, id++);
                set(last, 0, n);
                cgc_decref(ob(n));
                last = n;
            }
            if (cycle) set(last, 0, first);
            if (keep) {
                roots.push_back(first);
                for (HObj *o = first;; o = as_h(o->slot[0])) {
                    reachable_ids.push_back(o->id);
                    if (!o->slot[0] || o->slot[0] == ob(first)) break;
                }
            } else {
                cgc_decref(ob(first));
            }
            return first;
        };
        for (int pass = 0; pass < 2; ++pass) {  // pass 0 ends old, pass 1 young
            chain(&plain_type, 300, false, true);   // deep: the mark stack grows
            chain(&plain_type, 50, true, true);
            // More garbage in pass 1 than pass 0: the unreachable array grows.
            for (int i = 0; i < 30 + 300 * pass; ++i) chain(&plain_type, 1 + i % 4, true, false);
            for (int i = 0; i < 10; ++i) chain(&final_type, 2, true, false);
            HObj *target = chain(&plain_type, 3, true, true);
            (void)target;
            // Weak references (with callbacks, reachable) to garbage.
            for (int i = 0; i < 5; ++i) {
                HObj *g = make(&plain_type, id++);
                set(g, 0, g);
                weakrefs.push_back(cgc_weakref_new(ob(g), count_callback, nullptr));
                cgc_decref(ob(g));
            }
            // Legacy cycles: uncollectable, to the garbage list.
            for (int i = 0; i < 1 + 40 * pass; ++i) {
                HObj *l = make(&legacy_type, id++);
                set(l, 0, l);
                cgc_decref(ob(l));
            }
            if (pass == 0) cgc_collect(2);  // these survivors are old
        }
        // A finalizer that resurrects its object.
        HObj *r = make(&final_type, 9999);
        set(r, 0, r);
        cgc_decref(ob(r));
        static int big_id = 100000;
        hooks.finalize = [this](HObj *o) {
            if (o->id == 9999 && !resurrected) {
                cgc_incref(ob(o));
                resurrected = ob(o);
            }
            if (o->id % 7 == 0) {
                // A new page, and a new entry in the weak reference table,
                // during the collection; garbage for the next one.
                cgc_object *raw = cgc_gc_new(&big_type);  // NULL if its page cannot be had
                if (!raw) return;
                HObj *big = as_h(raw);
                big->canary = kAlive;
                big->id = big_id++;
                hooks.live.insert(big->id);
                cgc_gc_track(raw);
                set(big, 0, big);
                cgc_object *w = cgc_weakref_new(ob(big), count_callback, nullptr);
                if (w) {
                    set(big, 1, as_h(w));
                    cgc_decref(w);
                }
                cgc_decref(ob(big));
            }
        };
        cgc_add_collection_callback(collection_callback, nullptr);
    }

    void check_reachable() {
        for (int id : reachable_ids) EXPECT_TRUE(alive(id)) << "reachable object " << id << " was freed";
        for (HObj *r : roots) {
            EXPECT_EQ(r->canary, kAlive);
            int length = 0;
            for (HObj *o = r; o; o = o->slot[0] && o->slot[0] != ob(r) ? as_h(o->slot[0]) : nullptr) {
                EXPECT_EQ(o->canary, kAlive);
                ++length;
            }
            EXPECT_GT(length, 0);
        }
    }

    void tear_down() {
        hooks.finalize = nullptr;
        cgc_remove_collection_callback(collection_callback, nullptr);
        for (HObj *r : roots) cgc_decref(ob(r));
        for (cgc_object *w : weakrefs) cgc_decref(w);
        if (resurrected) cgc_decref(resurrected);
        // Break the legacy cycles held by the garbage list, then collect.
        cgc_object_list garbage{};
        cgc_get_garbage(&garbage);
        for (cgc_ssize_t i = 0; i < garbage.count; ++i) drop_slots(as_h(garbage.items[i]));
        cgc_object_list_release(&garbage);
        cgc_garbage_clear();
        cgc_collect(2);
    }
};

class AllocFailure : public HostileTest {
  protected:
    // Builds the scene on a fresh heap, fails the nth allocation of a
    // collection of `generation`; returns false once n is beyond the
    // collection's allocations.
    bool run(int generation, uint64_t n);
    int run_in_child(int generation, uint64_t n);
    void fail_each(int generation);
};

bool AllocFailure::run(int generation, uint64_t n) {
    Scene scene;
    scene.build();
    take_errors();
    uint64_t before = cgc_debug_fail_allocations(n);
    bool escaped = false;
    try {
        cgc_ssize_t found = cgc_collect(generation);
        EXPECT_GE(found, 0);
    } catch (...) {
        escaped = true;
    }
    uint64_t made = cgc_debug_fail_allocations(0) - before;
    EXPECT_FALSE(escaped) << "failing allocation " << n << " threw out of cgc_collect";
    EXPECT_FALSE(cgc_is_collecting()) << "failing allocation " << n;
    for (const auto &e : take_errors()) EXPECT_EQ(e.kind, CGC_ERR_MEMORY) << "allocation " << n << ": " << e.message;
    scene.check_reachable();
    EXPECT_TRUE(hooks.canary_errors.empty()) << "allocation " << n << ": " << hooks.canary_errors.front();
    // Without failures, everything garbage goes.
    cgc_collect(2);
    scene.check_reachable();
    scene.tear_down();
    EXPECT_TRUE(hooks.live.empty()) << "allocation " << n << ": " << hooks.live.size() << " objects leaked";
    take_errors();
    return made >= n;
}

// Runs run(generation, n) in a child process. Returns 0 (allocation n
// failed, all checks passed), 4 (the collection made fewer than n
// allocations: done), 3 (checks failed), 128 + signal (crashed or hung).
int AllocFailure::run_in_child(int generation, uint64_t n) {
    std::fflush(nullptr);
    const ::testing::TestResult *result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    int parts_before = result->total_part_count();
    pid_t pid = ::fork();
    if (pid == 0) {
        ::alarm(20);
        bool fired = run(generation, n);
        bool failed = false;  // in this child (its gtest printed the messages)
        for (int i = parts_before; i < result->total_part_count(); ++i)
            failed |= result->GetTestPartResult(i).failed();
        std::fflush(nullptr);
        ::_exit(failed ? 3 : fired ? 0 : 4);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void AllocFailure::fail_each(int generation) {
    uint64_t n = 1;
    for (; n < 500; ++n) {
        int status = run_in_child(generation, n);
        if (status == 4) break;
        EXPECT_EQ(status, 0) << "collection of generation " << generation << ", allocation " << n << " failed: "
                             << (status == 3 ? "checks failed (see above)"
                                             : "crashed or hung, signal " + std::to_string(status - 128));
    }
    EXPECT_GT(n, 1u) << "no allocation happened in the collection";
    std::printf("[          ] generation %d: %llu allocations failed in turn\n", generation,
                static_cast<unsigned long long>(n - 1));
}

TEST_F(AllocFailure, EachAllocationOfAFullCollectionFailsSafely) { fail_each(2); }

TEST_F(AllocFailure, EachAllocationOfAYoungCollectionFailsSafely) {
    fail_each(0);
    fail_each(1);
}

TEST_F(AllocFailure, PageAllocationFailureIsAnOrdinaryAllocationError) {
    // Outside a collection (untracked objects: pages are the only internal
    // allocations): the allocation returns NULL with CGC_ERR_MEMORY.
    std::vector<cgc_object *> objects;
    cgc_object *op = nullptr;
    for (int i = 0; i < 100000; ++i) {
        cgc_debug_fail_allocations(1);
        op = cgc_gc_new(&plain_type);
        if (!op) break;
        objects.push_back(op);
    }
    cgc_debug_fail_allocations(0);
    EXPECT_EQ(op, nullptr) << "no page allocation failed";
    expect_one_error(CGC_ERR_MEMORY, {"alloc.Plain"});
    for (cgc_object *o : objects) cgc_gc_del(o);
}

#else

TEST(AllocFailure, NeedsTheProposedFaultInjectionHook) {
    GTEST_SKIP() << "cgc_debug_fail_allocations() is not in this build of the library: the "
                    "allocation-failure tests are compiled out";
}

#endif

}  // namespace
