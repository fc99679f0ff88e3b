// Hostile tp_clear: what real types get wrong, and what cyclegc then does.
//
// | mistake                                  | defined outcome                                        |
// |------------------------------------------|--------------------------------------------------------|
// | does nothing                             | the cycle survives (as without tp_clear), older gen;   |
// |                                          |   CGC_ERR_MISUSE, not counted as collected             |
// | frees other garbage (drops what it owns) | freed at once, skipped by the collector, no UAF        |
// | frees itself                             | freed when the collector drops its temporary reference |
// | frees itself directly (PyObject_GC_Del)  | refused with CGC_ERR_MISUSE (the collector holds it)   |
// | resurrects itself or other garbage       | they survive, cleared, in the older generation;        |
// |                                          |   CGC_ERR_MISUSE, not counted as collected             |
// | puts the reference it dropped back       | the same: reported once, naming the type and count     |
// | throws (C++)                             | CGC_ERR_UNRAISABLE naming the type; collection goes on |
// | untracks other garbage                   | that object leaves the collection, is not cleared      |
// | allocates and tracks new objects         | they are young, not part of this collection            |
// | drops a reference once too often         | see hostile_dealloc_test.cpp (count underflow)         |
#include "hostile_types.hpp"

#include <stdexcept>

using namespace cgc_hostile;

namespace {

class HostileClear : public HostileTest {};

cgc_type plain_type = make_type("hostile.Plain");
cgc_type lazy_type = make_type("hostile.ClearDoesNothing");
cgc_type thrower_type = make_type("hostile.ClearThrows");

cgc_object *g_global = nullptr;  // where resurrecting clears store objects

// tp_clear frees its own object directly (PyObject_GC_Del) while the
// collector holds it: refused, as the collector drops its hold afterwards
// (on freed memory, or on the next object given the slot).
TEST_F(HostileClear, ClearThatFreesItsOwnObjectDirectlyIsRefused) {
    hooks.clear = [](HObj *o) {
        cgc_gc_del(ob(o));
        return 0;
    };
    HObj *a = make(&plain_type, 1);
    set(a, 0, a);
    cgc_decref(ob(a));
    EXPECT_EQ(cgc_collect(2), 0) << "it survived: not collected";
    hooks.clear = nullptr;
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_CONTAINS(errors[0].message, "PyObject_GC_Del");
    EXPECT_CONTAINS(errors[0].message, "holds a reference");
    EXPECT_CONTAINS(errors[1].message, "still alive after their cycle was cleared");
    EXPECT_CONTAINS(errors[1].message, "hostile.Plain");
    EXPECT_TRUE(alive(1)) << "survived its clear";
    break_cycle_at(a);
    EXPECT_FALSE(alive(1));
}

// A ring of 1,000 whose tp_clear puts back the reference it drops: nothing
// is freed, so nothing is reported as collected, and the mistake is
// reported once per collection, naming the type.
TEST_F(HostileClear, ClearThatPutsAReferenceBackIsReportedAndNotCountedAsCollected) {
    static cgc_type puts_back_type = make_type("hostile.ClearPutsBack");
    constexpr int kRing = 1000;
    std::vector<HObj *> ring;
    for (int i = 0; i < kRing; ++i) ring.push_back(make(&puts_back_type, i + 1));
    for (int i = 0; i < kRing; ++i) set(ring[i], 0, ring[(i + 1) % kRing]);
    for (HObj *o : ring) cgc_decref(ob(o));
    hooks.clear = [](HObj *o) {
        cgc_object *kept = o->slot[0];
        cgc_xincref(kept);
        drop_slots(o);
        o->slot[0] = kept;  // back again
        return 0;
    };
    for (int generation : {0, 2}) {
        EXPECT_EQ(cgc_collect(generation), 0) << "nothing was freed";
        EXPECT_EQ(hooks.live.size(), size_t(kRing));
        expect_one_error(CGC_ERR_MISUSE, {"1000", "hostile.ClearPutsBack", "tp_clear", "not collected"});
    }
    cgc_generation_stats stats{};
    cgc_get_stats(2, &stats);
    EXPECT_EQ(stats.collected, 0u);
    hooks.clear = nullptr;
    EXPECT_EQ(cgc_collect(2), kRing);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileClear, ClearThatDoesNothingKeepsTheCycleInTheOlderGeneration) {
    hooks.clear = [](HObj *o) { return o->ob_base.ob_type == &lazy_type ? 0 : (drop_slots(o), 0); };
    HObj *a = make(&lazy_type, 1);
    HObj *b = make(&lazy_type, 2);
    set(a, 0, b);
    set(b, 0, a);
    cgc_decref(ob(a));
    cgc_decref(ob(b));
    EXPECT_EQ(cgc_collect(0), 0) << "not freed, so not collected (CPython counts them)";
    expect_one_error(CGC_ERR_MISUSE, {"2 unreachable objects", "hostile.ClearDoesNothing", "tp_clear"});
    EXPECT_TRUE(alive(1) && alive(2));
    EXPECT_EQ(cgc_test::generation_of(a), 1) << "survived its clear: moved to the older generation";
    EXPECT_EQ(cgc_collect(2), 0);
    expect_one_error(CGC_ERR_MISUSE, {"2 unreachable objects", "hostile.ClearDoesNothing"});
    EXPECT_TRUE(alive(1) && alive(2));
    EXPECT_EQ(cgc_test::generation_of(a), 2);
    // A cycle with one working tp_clear is collected.
    HObj *c = make(&lazy_type, 3);
    HObj *d = make(&plain_type, 4);
    set(c, 0, d);
    set(d, 0, c);
    cgc_decref(ob(c));
    cgc_decref(ob(d));
    EXPECT_EQ(cgc_collect(2), 2) << "c and d (a and b survive again)";
    EXPECT_FALSE(alive(3) || alive(4));
    expect_one_error(CGC_ERR_MISUSE, {"2 unreachable objects", "hostile.ClearDoesNothing"});
    break_cycle_at(a);  // the program breaks the first cycle itself
    EXPECT_FALSE(alive(1) || alive(2));
}

TEST_F(HostileClear, ClearThatFreesOtherGarbageAndItselfLeavesNothingDangling) {
    // A ring of 5 where every object also holds all the others: the first
    // tp_clear frees everything; the collector must skip the freed entries.
    std::vector<HObj *> ring;
    for (int i = 0; i < 5; ++i) ring.push_back(make(&plain_type, i + 1));
    for (int i = 0; i < 5; ++i) {
        set(ring[i], 0, ring[(i + 1) % 5]);
        set(ring[i], 1, ring[(i + 2) % 5]);
        set(ring[i], 2, ring[i]);  // and itself
    }
    int clears = 0;
    hooks.clear = [&clears](HObj *o) {
        ++clears;
        drop_slots(o);
        return 0;
    };
    for (HObj *o : ring) cgc_decref(ob(o));
    EXPECT_EQ(cgc_collect(2), 5);
    EXPECT_TRUE(hooks.live.empty());
    EXPECT_LE(clears, 5);
    EXPECT_GE(clears, 1);
    EXPECT_TRUE(take_errors().empty());
}

TEST_F(HostileClear, ClearThatResurrectsOtherGarbageLeavesItAliveAndCleared) {
    // A -> B -> C -> A; A's clear stores B in a global: B survives, and C
    // too (B reaches it), all cleared: a resurrection the collector cannot
    // undo (CPython neither), but never a use-after-free.
    HObj *a = make(&plain_type, 1);
    HObj *b = make(&plain_type, 2);
    HObj *c = make(&plain_type, 3);
    set(a, 0, b);
    set(b, 0, c);
    set(c, 0, a);
    cgc_object *weak_b = cgc_weakref_new(ob(b), nullptr, nullptr);
    hooks.clear = [b](HObj *o) {
        if (o->id == 1 && !g_global) {
            cgc_incref(ob(b));
            g_global = ob(b);
        }
        drop_slots(o);
        return 0;
    };
    for (HObj *o : {a, b, c}) cgc_decref(ob(o));
    EXPECT_EQ(cgc_collect(2), 2) << "a and c were freed; b survived";
    expect_one_error(CGC_ERR_MISUSE, {"1 unreachable objects", "hostile.Plain", "tp_clear put a reference back"});
    ASSERT_EQ(g_global, ob(b));
    EXPECT_TRUE(alive(2));
    EXPECT_EQ(b->canary, kAlive);
    EXPECT_EQ(cgc_weakref_get(weak_b), nullptr) << "its weak references died with the garbage";
    EXPECT_TRUE(cgc_gc_is_tracked(ob(b)));
    EXPECT_EQ(cgc_test::generation_of(b), 2);
    hooks.clear = nullptr;
    cgc_object *kept = g_global;
    g_global = nullptr;
    cgc_decref(kept);
    cgc_decref(weak_b);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileClear, ClearThatResurrectsItselfSurvivesItsClear) {
    HObj *a = make(&plain_type, 1);
    set(a, 0, a);
    hooks.clear = [](HObj *o) {
        if (!g_global) {
            cgc_incref(ob(o));
            g_global = ob(o);
        }
        drop_slots(o);
        return 0;
    };
    cgc_decref(ob(a));
    EXPECT_EQ(cgc_collect(2), 0);
    expect_one_error(CGC_ERR_MISUSE, {"1 unreachable objects", "hostile.Plain"});
    EXPECT_TRUE(alive(1));
    EXPECT_EQ(ob(a)->ob_refcnt, 1);
    EXPECT_EQ(cgc_test::generation_of(a), 2);
    hooks.clear = nullptr;
    cgc_object *kept = g_global;
    g_global = nullptr;
    cgc_decref(kept);
    EXPECT_FALSE(alive(1));
}

TEST_F(HostileClear, ClearThatThrowsIsUnraisableAndTheCollectionGoesOn) {
    hooks.clear = [](HObj *o) -> int {
        if (o->ob_base.ob_type == &thrower_type) throw std::runtime_error("clear failed");
        drop_slots(o);
        return 0;
    };
    HObj *t = make(&thrower_type, 1);
    set(t, 0, t);
    cgc_decref(ob(t));
    HObj *p = make(&plain_type, 2);
    set(p, 0, p);
    cgc_decref(ob(p));
    EXPECT_EQ(cgc_collect(2), 1) << "p only";
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].kind, CGC_ERR_UNRAISABLE);
    EXPECT_CONTAINS(errors[0].message, "hostile.ClearThrows");
    EXPECT_CONTAINS(errors[0].message, "clear failed");
    EXPECT_CONTAINS(errors[1].message, "hostile.ClearThrows");  // and it survived
    EXPECT_TRUE(alive(1)) << "its clear failed: it survives, in the older generation";
    EXPECT_FALSE(alive(2));
    hooks.clear = nullptr;
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_FALSE(alive(1));
}

TEST_F(HostileClear, ClearThatUntracksOtherGarbageTakesItOutOfTheCollection) {
    // A <-> B; A's clear untracks B (and drops nothing): B is not cleared;
    // both survive, B untracked (a leak until the program breaks it).
    HObj *a = make(&plain_type, 1);
    HObj *b = make(&plain_type, 2);
    set(a, 0, b);
    set(b, 0, a);
    int cleared_b = 0;
    hooks.clear = [&cleared_b](HObj *o) {
        if (o->id == 1) cgc_gc_untrack(o->slot[0]);
        if (o->id == 2) ++cleared_b;
        return 0;
    };
    cgc_decref(ob(a));
    cgc_decref(ob(b));
    // A survives (reported, not counted); B left the collection untracked,
    // which the collector cannot tell from freed: counted.
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(alive(1) && alive(2));
    expect_one_error(CGC_ERR_MISUSE, {"1 unreachable objects", "hostile.Plain", "still alive"});
    hooks.clear = nullptr;
    EXPECT_FALSE(cgc_gc_is_tracked(ob(b)));
    // Cleared only if the collector reached it before A untracked it.
    EXPECT_LE(cleared_b, 1);
    EXPECT_EQ(cgc_test::generation_of(a), 2);
    break_cycle_at(a);
    EXPECT_FALSE(alive(1) || alive(2));
}

TEST_F(HostileClear, ClearThatAllocatesAndTracksNewObjectsLeavesThemYoung) {
    HObj *a = make(&plain_type, 1);
    set(a, 0, a);
    std::vector<HObj *> made;
    hooks.clear = [&made](HObj *o) {
        drop_slots(o);
        for (int i = 0; i < 100; ++i) {
            HObj *n = make(&plain_type, 100 + i);
            set(n, 0, n);  // new garbage
            cgc_decref(ob(n));
            made.push_back(n);
        }
        return 0;
    };
    cgc_decref(ob(a));
    EXPECT_EQ(cgc_collect(2), 1);
    hooks.clear = nullptr;
    EXPECT_FALSE(alive(1));
    ASSERT_EQ(made.size(), 100u);
    for (HObj *n : made) EXPECT_EQ(cgc_test::generation_of(n), 0);
    EXPECT_EQ(cgc_collect(0), 100);
    EXPECT_TRUE(hooks.live.empty());
}

}  // namespace
