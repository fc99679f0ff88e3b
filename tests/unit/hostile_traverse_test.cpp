// Hostile tp_traverse: what real types get wrong, and what cyclegc then does.
//
// | mistake                                   | defined outcome                                      |
// |-------------------------------------------|------------------------------------------------------|
// | misses a reference                        | the cycle is not collected (kept, never freed)       |
// | misses a reference from garbage           | what it hides is freed one collection later          |
// | visits a reference twice                  | CGC_ERR_CORRUPTION naming both types; nothing freed  |
// |   (any collection, either object first)   |   (young, middle and full alike)                     |
// | visits a reference only in the count pass | the report says no referrer could be found           |
// | visits a borrowed reference               | the same, when the count gives it away               |
// | visits a borrowed reference from garbage  | the live object is cleared, not freed, not counted;  |
// |                                           |   CGC_ERR_MISUSE after the clearing                  |
// | returns an error (stops early)            | return value ignored; unvisited = missed             |
// | visits NULL, non-GC or untracked objects  | ignored                                              |
// | visits a pointer that is no object        | ignored, with or without the arena (never read)      |
// | tracks or untracks objects                | refused with CGC_ERR_MISUSE naming the type          |
// | drops the last reference to a tracked one | refused (not freed) with CGC_ERR_MISUSE              |
// | allocates and frees objects               | must not break the collection (walks the pages)      |
// | frees a page's last object during a walk   | the page stays until the walk ends: none is skipped   |
// | the same in the counting walk              | the next walks read no other page's record           |
// | tracks objects during gc.get_referrers     | no freed memory read                                 |
// | frees a tracked object (PyObject_GC_Del)   | refused with CGC_ERR_MISUSE naming the type          |
#include "hostile_types.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace cgc_hostile;

namespace {

class HostileTraverse : public HostileTest {};

cgc_type misser_type = make_type("hostile.MissesARef");
cgc_type twice_type = make_type("hostile.VisitsTwice");
cgc_type victim_type = make_type("hostile.Victim");
cgc_type borrower_type = make_type("hostile.VisitsBorrowed");
cgc_type plain_type = make_type("hostile.Plain");
cgc_type leaf_type = [] {
    cgc_type t{};
    t.tp_name = "hostile.NonGcLeaf";
    t.tp_basicsize = sizeof(cgc_object);
    return t;
}();

TEST_F(HostileTraverse, MissingReferenceKeepsTheCycleAliveAndNeverFreesIt) {
    hooks.traverse = [](HObj *o, cgc_visitproc, void *) {
        return o->ob_base.ob_type == &misser_type ? 0 : 0;  // visits nothing at all
    };
    auto [a, b] = garbage_pair(&misser_type, 1, &misser_type, 2);
    EXPECT_EQ(cgc_collect(2), 0) << "the cycle looks referenced from outside";
    EXPECT_TRUE(alive(1) && alive(2));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_TRUE(alive(1) && alive(2));
    // The program breaks the cycle itself: reference counting frees both.
    break_cycle_at(a);
    EXPECT_FALSE(alive(1) || alive(2));
    (void)b;
}

TEST_F(HostileTraverse, ReferenceHiddenByGarbageIsFreedOneCollectionLater) {
    // X is a garbage self-cycle whose traverse hides its reference to Y;
    // Y <-> Z is garbage too, but Y looks referenced from outside (by X).
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->id == 1) return o->slot[0] ? visit(o->slot[0], arg) : 0;  // slot 1 is hidden
        return visit_slots(o, visit, arg);
    };
    HObj *x = make(&misser_type, 1);
    set(x, 0, x);
    auto [y, z] = garbage_pair(&plain_type, 2, &plain_type, 3);
    set(x, 1, y);
    cgc_decref(ob(x));
    EXPECT_EQ(cgc_collect(2), 1) << "only X is found; clearing it drops the hidden reference";
    EXPECT_FALSE(alive(1));
    EXPECT_TRUE(alive(2) && alive(3));
    EXPECT_EQ(cgc_collect(2), 2) << "Y <-> Z is found by the next collection";
    EXPECT_FALSE(alive(2) || alive(3));
    (void)z;
}

TEST_F(HostileTraverse, VisitingAReferenceTwiceIsReportedAndFreesNothing) {
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->ob_base.ob_type == &twice_type && o->slot[0])
            if (int e = visit(o->slot[0], arg)) return e;  // once too often
        return visit_slots(o, visit, arg);
    };
    auto [a, v] = garbage_pair(&twice_type, 1, &victim_type, 2);
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(alive(1) && alive(2)) << "an object with a broken count is kept, never freed";
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Victim", "hostile.VisitsTwice", "kept alive"});
    // The young collection finds it too.
    HObj *young = make(&victim_type, 3);
    HObj *twice = make(&twice_type, 4);
    set(twice, 0, young);
    set(young, 0, twice);
    cgc_decref(ob(young));
    cgc_decref(ob(twice));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_TRUE(alive(3) && alive(4));
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Victim", "hostile.VisitsTwice", "kept alive"});
    // Fixed, everything is collected.
    hooks.traverse = nullptr;
    EXPECT_EQ(cgc_collect(2), 4);
    EXPECT_TRUE(hooks.live.empty());
    (void)a;
    (void)v;
}

TEST_F(HostileTraverse, VisitingABorrowedReferenceIsReportedAndKeepsTheObjectAlive) {
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->borrowed)
            if (int e = visit(o->borrowed, arg)) return e;
        return visit_slots(o, visit, arg);
    };
    auto [g, h] = garbage_pair(&victim_type, 1, &plain_type, 2);
    HObj *r = make(&borrower_type, 3);  // reachable: the test holds it
    r->borrowed = ob(g);               // without Py_INCREF
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(alive(1) && alive(2)) << "G's count says 1, two references were visited: G is kept";
    // The message names the object whose count is broken and one referrer
    // (the first found, not necessarily the culprit).
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Victim", "does not own", "kept alive"});
    r->borrowed = nullptr;
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_FALSE(alive(1) || alive(2));
    cgc_decref(ob(r));
    (void)h;
}

TEST_F(HostileTraverse, BorrowedReferenceFromGarbageMakesALiveObjectLookUnreachable) {
    // Undetectable before the clearing (the counts agree), in CPython as
    // well: garbage that visits a borrowed reference to a live object
    // explains away the object's only reference. The object is cleared but
    // never freed: it is still alive afterwards, which is reported.
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->borrowed)
            if (int e = visit(o->borrowed, arg)) return e;
        return visit_slots(o, visit, arg);
    };
    HObj *live = make(&victim_type, 1);  // the test's reference is its only one
    HObj *child = make(&plain_type, 2);
    set(live, 0, child);
    cgc_decref(ob(child));
    HObj *g = make(&borrower_type, 3);
    set(g, 0, g);
    g->borrowed = ob(live);
    cgc_decref(ob(g));
    EXPECT_EQ(cgc_collect(2), 2) << "G and the live object's child were freed; the live object not";
    ASSERT_TRUE(alive(1)) << "the live object is never freed";
    EXPECT_EQ(live->canary, kAlive);
    EXPECT_EQ(live->slot[0], nullptr) << "but it was cleared";
    EXPECT_FALSE(alive(2));
    EXPECT_FALSE(alive(3));
    expect_one_error(CGC_ERR_MISUSE, {"1 unreachable objects", "hostile.Victim", "still alive"});
    cgc_decref(ob(live));
}

TEST_F(HostileTraverse, ErrorReturnedByTraverseIsIgnoredAndUnvisitedReferencesAreMissed) {
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->slot[0])
            if (int e = visit(o->slot[0], arg)) return e;
        return -1;  // an error, before visiting slots 1 and 2
    };
    // Collected: the cycle goes through slot 0.
    auto [a, b] = garbage_pair(&plain_type, 1, &plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_FALSE(alive(1) || alive(2));
    // Not collected: the cycle goes through slot 1, which is never visited.
    HObj *c = make(&plain_type, 3);
    set(c, 1, c);
    cgc_decref(ob(c));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_TRUE(alive(3));
    EXPECT_TRUE(take_errors().empty());
    break_cycle_at(c);
    EXPECT_FALSE(alive(3));
    (void)a;
    (void)b;
}

// The over-count is found whatever the collection and whichever object
// came first (a full collection missed it when the victim came after its
// owner, which marked it reachable before the walk reached it).
TEST_F(HostileTraverse, VisitingAReferenceTwiceIsReportedInEveryKindOfCollection) {
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->ob_base.ob_type == &twice_type && o->slot[0])
            if (int e = visit(o->slot[0], arg)) return e;  // once too often
        return visit_slots(o, visit, arg);
    };
    int id = 0;
    for (int generation = 0; generation < CGC_NUM_GENERATIONS; ++generation) {
        for (bool owner_first : {true, false}) {
            SCOPED_TRACE(std::string("generation ") + std::to_string(generation) +
                         (owner_first ? ", owner first" : ", victim first"));
            HObj *owner = owner_first ? make(&twice_type, ++id) : nullptr;
            HObj *victim = make(&victim_type, ++id);
            if (!owner) owner = make(&twice_type, ++id);
            set(owner, 0, victim);
            cgc_decref(ob(victim));  // the owner holds it; the test holds the owner
            EXPECT_EQ(cgc_collect(generation), 0);
            expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Victim", "hostile.VisitsTwice", "kept alive"});
            EXPECT_TRUE(alive(victim->id));
            EXPECT_EQ(victim->canary, kAlive);
            cgc_decref(ob(owner));  // frees both
            EXPECT_TRUE(hooks.live.empty());
        }
    }
}

// A referrer the report cannot name (the traversal that over-counted does
// not visit the object again) is described as such.
TEST_F(HostileTraverse, OverCountWhoseReferrerCannotBeFoundSaysSo) {
    static int traversals = 0;
    traversals = 0;
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->ob_base.ob_type == &borrower_type && traversals++ == 0 && o->borrowed) {
            if (int e = visit(o->borrowed, arg)) return e;
            if (int e = visit(o->borrowed, arg)) return e;
        }
        return visit_slots(o, visit, arg);
    };
    HObj *victim = make(&victim_type, 1);  // held by the test only
    HObj *borrower = make(&borrower_type, 2);
    borrower->borrowed = ob(victim);
    EXPECT_EQ(cgc_collect(2), 0);
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, CGC_ERR_CORRUPTION);
    EXPECT_CONTAINS(errors[0].message, "hostile.Victim");
    EXPECT_CONTAINS(errors[0].message, "no tracked object visits it now");
    EXPECT_EQ(errors[0].message.find("(nil)"), std::string::npos) << errors[0].message;
    EXPECT_EQ(errors[0].message.find("'?'"), std::string::npos) << errors[0].message;
    hooks.traverse = nullptr;
    cgc_decref(ob(borrower));
    cgc_decref(ob(victim));
    EXPECT_TRUE(hooks.live.empty());
}

// Pointers that are no object at all, not even readable memory (0x1) or a
// malloc block full of garbage: ignored, never read. Without the arena
// (`unit.no_arena`) the collector read their type and crashed.
TEST_F(HostileTraverse, VisitingAPointerThatIsNoObjectIsIgnored) {
    static void *g_block = nullptr;
    auto scenario = [this] {
        g_block = std::malloc(64);
        std::memset(g_block, 0xFF, 64);  // a "type" pointer that points nowhere
        hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
            if (int e = visit(reinterpret_cast<cgc_object *>(uintptr_t(1)), arg)) return e;
            if (int e = visit(static_cast<cgc_object *>(g_block), arg)) return e;
            return visit_slots(o, visit, arg);
        };
        garbage_pair(&plain_type, 1, &plain_type, 2);
        EXPECT_EQ(cgc_collect(0), 2);
        garbage_pair(&plain_type, 3, &plain_type, 4);
        EXPECT_EQ(cgc_collect(2), 2);
        EXPECT_TRUE(hooks.live.empty());
        EXPECT_TRUE(take_errors().empty());
        hooks.traverse = nullptr;
        std::free(g_block);
    };
    EXPECT_SURVIVES(scenario());
}

TEST_F(HostileTraverse, VisitingNullNonGcAndUntrackedObjectsIsIgnored) {
    cgc_object *leaf = cgc_object_new(&leaf_type);
    HObj *untracked = make(&plain_type, 9, /*track=*/false);
    hooks.traverse = [leaf, untracked](HObj *o, cgc_visitproc visit, void *arg) {
        if (int e = visit(nullptr, arg)) return e;  // Py_VISIT would skip it; a raw visit does not
        if (int e = visit(leaf, arg)) return e;
        if (int e = visit(ob(untracked), arg)) return e;
        return visit_slots(o, visit, arg);
    };
    auto [a, b] = garbage_pair(&plain_type, 1, &plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_FALSE(alive(1) || alive(2));
    EXPECT_EQ(leaf->ob_refcnt, 1);
    EXPECT_EQ(ob(untracked)->ob_refcnt, 1);
    EXPECT_TRUE(take_errors().empty());
    hooks.traverse = nullptr;
    cgc_decref(leaf);
    cgc_decref(ob(untracked));
    (void)a;
    (void)b;
}

TEST_F(HostileTraverse, TrackingOrUntrackingFromTraverseIsRefusedNamingTheType) {
    HObj *other = make(&plain_type, 5, /*track=*/false);
    hooks.traverse = [other](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->id == 1) {
            cgc_gc_track(ob(other));    // refused
            cgc_gc_untrack(ob(o));      // refused
        }
        return visit_slots(o, visit, arg);
    };
    auto [a, b] = garbage_pair(&plain_type, 1, &plain_type, 2);
    cgc_collect(2);
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_FALSE(errors.empty());
    for (const auto &error : errors) {
        EXPECT_EQ(error.kind, CGC_ERR_MISUSE) << error.message;
        EXPECT_CONTAINS(error.message, "hostile.Plain");
        EXPECT_CONTAINS(error.message, "tp_traverse");
    }
    EXPECT_FALSE(alive(1) || alive(2)) << "the collection itself is unaffected";
    EXPECT_FALSE(cgc_gc_is_tracked(ob(other)));
    hooks.traverse = nullptr;
    cgc_decref(ob(other));
    (void)a;
    (void)b;
}

// Collects `generation` with a garbage pair one member of which has a
// finalizer. The finalizer makes a new tracked object (id `fresh_id`: the
// newest young object), and `in_check` runs once, from tp_traverse, in the
// resurrection check that follows (an analysis with generation 0 not
// empty). Returns the object the finalizer made.
HObj *collect_with_resurrection_check(int generation, int fresh_id, const std::function<void(HObj *)> &in_check) {
    static cgc_type final_type = make_type("hostile.Finalizable", /*finalizer=*/true);
    HObj *fresh = nullptr;
    bool ran = false;
    hooks.finalize = [&](HObj *) {
        if (!fresh) fresh = make(&plain_type, fresh_id);
    };
    hooks.traverse = [&](HObj *o, cgc_visitproc visit, void *arg) {
        if (fresh && !ran) {
            ran = true;
            in_check(fresh);
        }
        return visit_slots(o, visit, arg);
    };
    garbage_pair(&final_type, 1, &plain_type, 2);
    cgc_collect(generation);
    hooks.traverse = nullptr;
    hooks.finalize = nullptr;
    hooks.finalized.clear();
    EXPECT_TRUE(ran) << "tp_traverse ran in the resurrection check";
    EXPECT_FALSE(alive(1) || alive(2)) << "the collection itself is unaffected";
    return fresh;
}

// `count` refusals, each a misuse naming hostile.Plain, tp_traverse and `also`.
void expect_refused_in_traverse(const std::vector<cgc_test::ReportedError> &errors, size_t count,
                                const char *also = "") {
    ASSERT_EQ(errors.size(), count) << cgc_test::describe(errors);
    for (const auto &error : errors) {
        EXPECT_EQ(error.kind, CGC_ERR_MISUSE) << error.message;
        EXPECT_CONTAINS(error.message, "hostile.Plain");
        EXPECT_CONTAINS(error.message, "tp_traverse");
        EXPECT_CONTAINS(error.message, also);
    }
}

// The same in every kind of analysis: a young collection, a full one, and the
// resurrection check after a finalizer ran, when generation 0 holds what the
// finalizer made (its newest object is what the untracking fast path takes).
TEST_F(HostileTraverse, TrackingOrUntrackingTheNewestObjectFromTraverseIsRefusedInEveryAnalysis) {
    for (int generation : {0, 1, 2}) {
        SCOPED_TRACE("generation " + std::to_string(generation));
        HObj *outsider = make(&plain_type, 10, /*track=*/false);
        HObj *fresh = collect_with_resurrection_check(generation, 11, [&](HObj *newest) {
            cgc_gc_untrack(ob(newest));
            cgc_gc_track(ob(outsider));
        });
        ASSERT_NE(fresh, nullptr);
        ASSERT_NO_FATAL_FAILURE(expect_refused_in_traverse(take_errors(), 2));
        EXPECT_TRUE(cgc_gc_is_tracked(ob(fresh))) << "the newest young object stays tracked";
        EXPECT_FALSE(cgc_gc_is_tracked(ob(outsider)));
        cgc_decref(ob(fresh));
        EXPECT_FALSE(alive(11));
        // The young array still works: tracked objects are found and freed.
        garbage_pair(&plain_type, 3, &plain_type, 4);
        EXPECT_EQ(cgc_collect(0), 2);
        cgc_decref(ob(outsider));
    }
}

// Dropping the last reference to a tracked object inside tp_traverse would
// free memory the collector is about to read: refused, the object kept (the
// same for a young candidate, an old object and an object made by a
// finalizer); an untracked object is freed as usual.
TEST_F(HostileTraverse, DroppingTheLastReferenceToATrackedObjectFromTraverseIsRefused) {
    for (int generation : {0, 2}) {
        SCOPED_TRACE("generation " + std::to_string(generation));
        HObj *held = make(&plain_type, 20);  // reachable: a candidate of every collection here
        HObj *scratch = make(&plain_type, 21, /*track=*/false);
        HObj *fresh = collect_with_resurrection_check(generation, 22, [&](HObj *newest) {
            cgc_decref(ob(held));     // refused: tracked
            cgc_decref(ob(newest));   // refused: tracked, the newest young object
            cgc_decref(ob(scratch));  // freed: untracked
        });
        ASSERT_NE(fresh, nullptr);
        ASSERT_NO_FATAL_FAILURE(expect_refused_in_traverse(take_errors(), 2, "not freed"));
        EXPECT_TRUE(alive(20) && alive(22)) << "tracked objects are not freed from tp_traverse";
        EXPECT_FALSE(alive(21)) << "an untracked object is";
        EXPECT_EQ(held->canary, kAlive);
        EXPECT_EQ(ob(held)->ob_refcnt, 1);
        // The refused reference is the test's to drop now.
        cgc_decref(ob(held));
        cgc_decref(ob(fresh));
        EXPECT_FALSE(alive(20) || alive(22));
    }
}

// A traverse with a side effect: it allocates (a cache, a temporary) and
// frees. The full collection walks the page list while calling traverse; a
// new page, or a page freed, must not invalidate that walk. Defined outcome:
// the collection is correct (or the allocation is refused); never a crash.
TEST_F(HostileTraverse, AllocatingAndFreeingFromTraverseDoesNotBreakTheCollection) {
    EXPECT_SURVIVES({
        hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
            // Enough objects to need new pages, freed at once (pages given back).
            std::vector<cgc_object *> scratch;
            for (int i = 0; i < 3000; ++i) scratch.push_back(cgc_gc_new(&plain_type));
            for (cgc_object *s : scratch) cgc_gc_del(s);
            return visit_slots(o, visit, arg);
        };
        std::vector<HObj *> held;
        for (int i = 0; i < 50; ++i) held.push_back(make(&plain_type, 100 + i));
        for (int i = 0; i < 20; ++i) garbage_pair(&plain_type, 2 * i + 1, &plain_type, 2 * i + 2);
        cgc_ssize_t found = cgc_collect(2);
        hooks.traverse = nullptr;
        EXPECT_EQ(found, 40);
        for (int i = 0; i < 40; ++i) EXPECT_FALSE(alive(i + 1)) << i + 1;
        for (HObj *h : held) EXPECT_EQ(h->canary, kAlive);
        EXPECT_TRUE(hooks.canary_errors.empty());
        for (HObj *h : held) cgc_decref(ob(h));
    });
}

// A variable-size container (VarNode): large instances get a page each.
cgc_object **big_items(cgc_object *op) { return reinterpret_cast<cgc_test::VarNode *>(op)->items; }
cgc_type big_type = [] {
    cgc_type t{};
    t.tp_name = "hostile.BigVar";
    t.tp_basicsize = offsetof(cgc_test::VarNode, items);
    t.tp_itemsize = sizeof(cgc_object *);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = cgc_test::var_node_traverse;
    t.tp_clear = cgc_test::var_node_clear;
    return t;
}();

cgc_object *scratch_object = nullptr;
int traverse_calls = 0;

// The same with large objects, a page each: during the marking walk the
// traverse frees an untracked large object, then makes another. Freed at
// once, the emptied page would take the last page (an externally held
// container) into its place in the page list, behind the walk, which would
// never mark it: it was cleared as garbage and its child freed. Pages that
// empty during a walk are freed when it ends.
TEST_F(HostileTraverse, FreeingAPageDuringTheMarkingWalkHidesNoObjectFromIt) {
    traverse_calls = 0;
    scratch_object = cgc_gc_new_var(&big_type, 3000);  // the first page: untracked
    ASSERT_NE(scratch_object, nullptr);
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (++traverse_calls == 2) {  // the marking walk (the counting walk came first)
            cgc_decref(scratch_object);
            scratch_object = cgc_gc_new_var(&big_type, 3000);
        }
        return visit_slots(o, visit, arg);
    };
    HObj *walker = make(&plain_type, 1);              // the second page
    cgc_object *held = cgc_gc_new_var(&big_type, 1200);  // the last page: ours
    ASSERT_NE(held, nullptr);
    HObj *child = make(&plain_type, 2, /*track=*/false);
    big_items(held)[0] = ob(child);
    cgc_gc_track(held);
    EXPECT_EQ(cgc_collect(2), 0);
    hooks.traverse = nullptr;
    EXPECT_EQ(traverse_calls, 2);
    EXPECT_EQ(big_items(held)[0], ob(child));
    EXPECT_TRUE(alive(2));
    EXPECT_TRUE(hooks.canary_errors.empty());
    cgc_decref(held);
    EXPECT_FALSE(alive(2));
    cgc_decref(ob(walker));
    cgc_decref(scratch_object);
}

// A traverse frees a tracked object (PyObject_GC_Del): refused, as the
// collection has it among its candidates.
HObj *g_victim = nullptr;
TEST_F(HostileTraverse, FreeingATrackedObjectFromTraverseIsRefused) {
    HObj *victim = make(&plain_type, 2);
    HObj *walker = make(&plain_type, 1);
    g_victim = victim;
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (o->id == 1 && g_victim) {
            HObj *v = g_victim;
            g_victim = nullptr;
            cgc_gc_del(ob(v));
        }
        return visit_slots(o, visit, arg);
    };
    EXPECT_EQ(cgc_collect(0), 0);
    hooks.traverse = nullptr;
    expect_one_error(CGC_ERR_MISUSE, {"PyObject_GC_Del", "hostile.Plain", "inside tp_traverse"});
    EXPECT_TRUE(alive(2));
    EXPECT_TRUE(cgc_gc_is_tracked(ob(victim)));
    cgc_decref(ob(victim));
    cgc_decref(ob(walker));
    EXPECT_FALSE(alive(1) || alive(2));
}

// A full collection's first walk records which slots of the pages it
// gathers are tracked, and its two later walks read that record. Here the
// counting walk frees the first page's only object (untracked): the page is
// freed when that walk ends, and the last page (one tracked container among
// untracked objects) takes its index. Read with the first page's record (no
// tracked slot), the container would be passed over by the marking walk,
// and its child, referenced by it alone, cleared as unreachable.
TEST_F(HostileTraverse, ThePageTakingAFreedPagesPlaceIsNotReadWithItsRecord) {
    traverse_calls = 0;
    scratch_object = cgc_gc_new_var(&big_type, 3000);  // page 0: large, untracked
    ASSERT_NE(scratch_object, nullptr);
    HObj *child = make(&plain_type, 1);  // page 1
    HObj *leaf = make(&plain_type, 2, /*track=*/false);
    set(child, 0, leaf);
    cgc_decref(ob(leaf));
    cgc_object *held = cgc_gc_new_var(&big_type, 2);  // page 2: a size class of its own
    cgc_object *untracked = cgc_gc_new_var(&big_type, 2);
    ASSERT_NE(held, nullptr);
    ASSERT_NE(untracked, nullptr);
    big_items(held)[0] = ob(child);  // (our reference, handed over)
    cgc_gc_track(held);
    // A first collection finds the pages mixed (tracked and untracked slots,
    // or none tracked): the next one gathers, and records, every page.
    EXPECT_EQ(cgc_collect(2), 0);
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (++traverse_calls == 1) {  // the counting walk
            cgc_decref(scratch_object);
            scratch_object = nullptr;
        }
        return visit_slots(o, visit, arg);
    };
    EXPECT_EQ(cgc_collect(2), 0);
    hooks.traverse = nullptr;
    EXPECT_EQ(scratch_object, nullptr);
    EXPECT_EQ(child->slot[0], ob(leaf));  // not cleared
    EXPECT_TRUE(alive(1));
    EXPECT_TRUE(alive(2));
    EXPECT_TRUE(hooks.canary_errors.empty());
    cgc_decref(held);
    EXPECT_FALSE(alive(1));
    EXPECT_FALSE(alive(2));
    cgc_decref(untracked);
}

// gc.get_referrers runs every tracked object's traverse outside a
// collection, where tracking is allowed: a traverse that tracks thousands
// of new objects grows generation 0's array (moving it) under the search.
TEST_F(HostileTraverse, TrackingFromTraverseDuringGetReferrersReadsNoFreedMemory) {
    static std::vector<HObj *> made;
    made.clear();
    hooks.traverse = [](HObj *o, cgc_visitproc visit, void *arg) {
        if (made.empty())
            for (int i = 0; i < 4096; ++i) made.push_back(make(&plain_type, 1000 + i));
        return visit_slots(o, visit, arg);
    };
    cgc_disable();
    HObj *target = make(&plain_type, 1);
    HObj *a = make(&plain_type, 2);
    HObj *b = make(&plain_type, 3);
    set(a, 0, target);
    set(b, 0, target);
    cgc_object_list out;
    cgc_object *objects[] = {ob(target)};
    ASSERT_EQ(cgc_get_referrers(objects, 1, &out), 0);
    hooks.traverse = nullptr;
    std::set<cgc_object *> found(out.items, out.items + out.count);
    EXPECT_EQ(found, (std::set<cgc_object *>{ob(a), ob(b)}));
    cgc_object_list_release(&out);
    for (HObj *h : made) cgc_decref(ob(h));
    for (HObj *h : {a, b, target}) cgc_decref(ob(h));
    cgc_enable();
}

}  // namespace
