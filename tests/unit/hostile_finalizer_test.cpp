// Hostile finalizers (tp_finalize, PEP 442): what they do, and what cyclegc
// then does.
//
// | the finalizer ...                         | defined outcome                                          |
// |-------------------------------------------|----------------------------------------------------------|
// | throws, in a collection                   | CGC_ERR_UNRAISABLE naming the type; object still freed   |
// | throws, at reference-counting death       | the same                   |
// | allocates (past the threshold)            | no collection inside the collection; later as usual      |
// | creates new garbage cycles                | freed by the next collection, not this one               |
// | resurrects another garbage object         | it and all it reaches survive, intact; finalized once    |
// | calls cgc_collect during a collection     | 0, nothing happens                                       |
// | calls cgc_collect at reference counting   | a full collection runs, correct                          |
// | untracks itself                           | it leaves the collection; what it reaches survives       |
// | untracks another garbage object           | the same for that object                                 |
// | tracks an untracked object                | young, not part of this collection                       |
// | calls cgc_freeze                          | refused with CGC_ERR_MISUSE                              |
// | drops its own object once too often      | CGC_ERR_CORRUPTION naming the type    |
#include "hostile_types.hpp"

#include <stdexcept>

using namespace cgc_hostile;

namespace {

class HostileFinalizer : public HostileTest {
  protected:
    // Scenarios run in a child process (EXPECT_SURVIVES).
    void exception_at_death();
    void over_decref_in_finalizer();
};

cgc_type final_type = make_type("hostile.Final", /*finalizer=*/true);
cgc_type raiser_type = make_type("hostile.FinalizerRaises", true);
cgc_type plain_type = make_type("hostile.Plain");

cgc_object *g_global = nullptr;

HObj *self_cycle(cgc_type *type, int id) {
    HObj *o = make(type, id);
    set(o, 0, o);
    cgc_decref(ob(o));
    return o;
}

TEST_F(HostileFinalizer, ExceptionInACollectionIsUnraisableAndTheObjectIsStillFreed) {
    hooks.finalize = [](HObj *o) {
        if (o->ob_base.ob_type == &raiser_type) throw std::runtime_error("finalizer failed");
    };
    self_cycle(&raiser_type, 1);
    self_cycle(&final_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    expect_one_error(CGC_ERR_UNRAISABLE, {"hostile.FinalizerRaises", "tp_finalize", "finalizer failed"});
    EXPECT_FALSE(alive(1) || alive(2));
}

// Found by this test: cgc_call_finalizer_from_dealloc did
// not catch, so the exception unwound through cgc_dealloc and left its
// nesting depth raised: the object leaked (count 1), and from then on every
// deallocation nested 49 deep was deferred to an outermost level that never
// came: a 1000-long chain freed 49 objects. Runs in a child process, in case.
void HostileFinalizer::exception_at_death() {
        hooks.finalize = [](HObj *o) {
            if (o->ob_base.ob_type == &raiser_type) throw std::runtime_error("finalizer failed");
        };
        HObj *a = make(&raiser_type, 1);
        bool escaped = false;
        try {
            cgc_decref(ob(a));
        } catch (const std::exception &) {
            escaped = true;
        }
        EXPECT_FALSE(escaped) << "the exception escaped cgc_decref (Py_DECREF)";
        EXPECT_FALSE(alive(1)) << "the object was not freed";
        std::vector<cgc_test::ReportedError> errors = take_errors();
        EXPECT_EQ(errors.size(), 1u) << cgc_test::describe(errors);
        if (!errors.empty()) {
            EXPECT_EQ(errors[0].kind, CGC_ERR_UNRAISABLE);
            EXPECT_CONTAINS(errors[0].message, "hostile.FinalizerRaises");
        }
        // The heap still frees deep structures.
        HObj *head = nullptr;
        for (int i = 0; i < 1000; ++i) {
            HObj *n = make(&plain_type, 100 + i, /*track=*/false);
            n->slot[0] = head ? ob(head) : nullptr;  // takes over the reference
            head = n;
        }
        cgc_decref(ob(head));
        EXPECT_TRUE(hooks.live.empty()) << hooks.live.size() << " objects of a 1000-long chain were not freed";
}

TEST_F(HostileFinalizer, ExceptionAtReferenceCountingDeathIsUnraisableAndLeavesTheHeapSane) {
    EXPECT_SURVIVES(exception_at_death());
}

TEST_F(HostileFinalizer, AllocatingPastTheThresholdDoesNotCollectInsideTheCollection) {
    int collections = 0;
    auto count = [](const char *phase, const cgc_collection_info *, void *n) {
        if (phase[1] == 't' && phase[2] == 'a') ++*static_cast<int *>(n);  // "start"
    };
    cgc_add_collection_callback(count, &collections);
    cgc_enable();
    cgc_set_threshold(0, 10);
    std::vector<HObj *> made;
    hooks.finalize = [&made](HObj *) {
        for (int i = 0; i < 100; ++i) made.push_back(make(&plain_type, 1000 + static_cast<int>(made.size())));
    };
    self_cycle(&final_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(collections, 1) << "no collection started inside the collection";
    hooks.finalize = nullptr;
    for (HObj *m : made) EXPECT_EQ(m->canary, kAlive);
    HObj *trigger = make(&plain_type, 5000);  // the next allocation past the threshold collects
    EXPECT_EQ(collections, 2);
    cgc_disable();
    cgc_remove_collection_callback(count, &collections);
    for (HObj *m : made) cgc_decref(ob(m));
    cgc_decref(ob(trigger));
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileFinalizer, NewCyclesMadeByAFinalizerWaitForTheNextCollection) {
    hooks.finalize = [](HObj *o) {
        if (o->id != 1) return;
        for (int i = 0; i < 10; ++i) self_cycle(&final_type, 10 + i);
    };
    self_cycle(&final_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(alive(10 + i));
    EXPECT_EQ(cgc_collect(2), 10);
    EXPECT_TRUE(hooks.live.empty());
    EXPECT_EQ(hooks.finalized.size(), 11u);
}

TEST_F(HostileFinalizer, ResurrectingAnotherGarbageObjectKeepsAllItReachesIntact) {
    // A -> B -> C -> A, all with finalizers; A's stores C in a global: all
    // three survive (C reaches the others), none cleared, each finalized once.
    HObj *a = make(&final_type, 1);
    HObj *b = make(&final_type, 2);
    HObj *c = make(&final_type, 3);
    set(a, 0, b);
    set(b, 0, c);
    set(c, 0, a);
    hooks.finalize = [c](HObj *o) {
        if (o->id == 1) {
            cgc_incref(ob(c));
            g_global = ob(c);
        }
    };
    for (HObj *o : {a, b, c}) cgc_decref(ob(o));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(alive(1) && alive(2) && alive(3));
    EXPECT_EQ(a->slot[0], ob(b));
    EXPECT_EQ(b->slot[0], ob(c));
    EXPECT_EQ(c->slot[0], ob(a));
    EXPECT_EQ(hooks.finalized.size(), 3u);
    hooks.finalize = nullptr;
    cgc_object *kept = g_global;
    g_global = nullptr;
    cgc_decref(kept);
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_TRUE(hooks.live.empty());
    EXPECT_EQ(hooks.finalized.size(), 3u) << "never finalized twice";
}

TEST_F(HostileFinalizer, CallingCollectDuringACollectionReturnsZero) {
    std::vector<cgc_ssize_t> results;
    hooks.finalize = [&results](HObj *) {
        for (int g = 0; g < 3; ++g) results.push_back(cgc_collect(g));
    };
    self_cycle(&final_type, 1);
    self_cycle(&final_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(results, std::vector<cgc_ssize_t>(6, 0));
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileFinalizer, CallingCollectAtReferenceCountingDeathRunsACorrectCollection) {
    // The finalizer runs inside a deallocation (count 0, resurrected to 1
    // while it runs) and asks for a full collection: garbage elsewhere is
    // freed, the dying object and what it holds are not touched.
    cgc_ssize_t found = -1;
    hooks.finalize = [&found](HObj *o) {
        if (o->id == 1) found = cgc_collect(2);
    };
    self_cycle(&plain_type, 10);
    self_cycle(&plain_type, 11);
    HObj *dying = make(&final_type, 1);
    HObj *child = make(&plain_type, 2);
    set(dying, 0, child);
    cgc_decref(ob(child));
    cgc_decref(ob(dying));
    EXPECT_EQ(found, 2);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileFinalizer, UntrackingItselfTakesItOutOfTheCollection) {
    // A <-> B; A's finalizer untracks A: A is no longer a candidate, so B
    // (referenced from A) survives; A lives on untracked (CPython: the same).
    HObj *a = make(&final_type, 1);
    HObj *b = make(&plain_type, 2);
    set(a, 0, b);
    set(b, 0, a);
    hooks.finalize = [](HObj *o) { cgc_gc_untrack(ob(o)); };
    cgc_decref(ob(a));
    cgc_decref(ob(b));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(alive(1) && alive(2));
    EXPECT_FALSE(cgc_gc_is_tracked(ob(a)));
    EXPECT_EQ(cgc_test::generation_of(b), 2);
    EXPECT_EQ(b->slot[0], ob(a)) << "nothing was cleared";
    // Tracked again, the cycle is garbage; the finalizer does not run again.
    hooks.finalize = nullptr;
    cgc_gc_track(ob(a));
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(hooks.live.empty());
    EXPECT_EQ(hooks.finalized.size(), 1u);
}

TEST_F(HostileFinalizer, UntrackingAnotherGarbageObjectTakesItOutOfTheCollection) {
    HObj *a = make(&final_type, 1);
    HObj *b = make(&plain_type, 2);
    HObj *c = make(&plain_type, 3);
    set(a, 0, b);
    set(b, 0, c);
    set(c, 0, a);
    hooks.finalize = [b](HObj *) { cgc_gc_untrack(ob(b)); };
    for (HObj *o : {a, b, c}) cgc_decref(ob(o));
    EXPECT_EQ(cgc_collect(2), 0) << "B's reference to C is now external: C, then A, survive";
    EXPECT_TRUE(alive(1) && alive(2) && alive(3));
    hooks.finalize = nullptr;
    cgc_gc_track(ob(b));
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileFinalizer, TrackingAnUntrackedObjectMakesItYoung) {
    HObj *loose = make(&plain_type, 5, /*track=*/false);
    set(loose, 0, loose);  // an untracked self-cycle
    cgc_decref(ob(loose));
    hooks.finalize = [loose](HObj *) { cgc_gc_track(ob(loose)); };
    self_cycle(&final_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(alive(5));
    EXPECT_EQ(cgc_test::generation_of(loose), 0);
    hooks.finalize = nullptr;
    EXPECT_EQ(cgc_collect(0), 1);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileFinalizer, FreezingDuringACollectionIsRefused) {
    hooks.finalize = [](HObj *) {
        cgc_freeze();
        cgc_unfreeze();
    };
    self_cycle(&final_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 2u) << cgc_test::describe(errors);
    EXPECT_EQ(errors[0].kind, CGC_ERR_MISUSE);
    EXPECT_CONTAINS(errors[0].message, "during a collection");
    EXPECT_EQ(cgc_get_freeze_count(), 0);
    EXPECT_TRUE(hooks.live.empty());
}

// Found by this test: the collector holds a temporary
// reference while the finalizer runs. A finalizer that dropped its object's
// last reference and one more freed the object under the collector, whose
// Py_DECREF then wrote into the freed slot: the page's free-list link (then
// kept in the slot's first word, ob_refcnt) was decremented, and a later
// allocation from that page crashed. Expected: the underflow is reported
// (CGC_ERR_CORRUPTION naming the type), the heap stays intact.
void HostileFinalizer::over_decref_in_finalizer() {
        hooks.finalize = [](HObj *o) {
            if (o->id != 1) return;
            cgc_decref(ob(o));  // its self-reference: not its to drop
            cgc_decref(ob(o));  // and the collector's temporary reference
        };
        self_cycle(&final_type, 1);
        cgc_collect(2);
        std::vector<cgc_test::ReportedError> errors = take_errors();
        ASSERT_FALSE(errors.empty());
        EXPECT_EQ(errors.back().kind, CGC_ERR_CORRUPTION);
        EXPECT_CONTAINS(errors.back().message, "hostile.Final");
        hooks.finalize = nullptr;
        // The heap is intact: allocate through the same page, then free.
        std::vector<HObj *> many;
        for (int i = 0; i < 1000; ++i) many.push_back(make(&final_type, 100 + i));
        for (HObj *o : many) cgc_decref(ob(o));
        EXPECT_TRUE(hooks.canary_errors.empty());
}

TEST_F(HostileFinalizer, DroppingItsOwnObjectOnceTooOftenIsReportedNotCorrupting) {
    EXPECT_SURVIVES(over_decref_in_finalizer());
}

}  // namespace
