// The gc module (CPython's `gc`): introspection: the objects of a generation, referrers and referents, is_tracked. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- introspection --------------------------------------------------------

// test_get_objects.
TEST_F(GcModuleTest, GetObjectsListsTrackedObjectsAsNewReferences) {
    Obj *a = plain(1);
    set_ref(a, 0, a);
    auto *untracked = as_obj(cgc_gc_new(&plain_type));
    untracked->id = 2;
    {
        List all = objects(-1);
        EXPECT_EQ(all.list.count, 1);
        EXPECT_TRUE(all.contains(a));
        EXPECT_FALSE(all.contains(untracked));
        EXPECT_EQ(ob(a)->ob_refcnt, 3) << "the list holds a reference";
        cgc_object_list_release(&all.list);
        EXPECT_EQ(all.list.count, 0);
        EXPECT_EQ(all.list.items, nullptr);
        EXPECT_EQ(ob(a)->ob_refcnt, 2);
    }
    cgc_decref(ob(untracked));
    drop(a);
    EXPECT_EQ(cgc_collect(2), 1);
}

// test_get_objects_arguments.
TEST_F(GcModuleTest, GetObjectsRejectsAnInvalidGeneration) {
    Obj *a = plain(1);
    cgc_object_list out{reinterpret_cast<cgc_object **>(&out), 99};
    EXPECT_EQ(cgc_get_objects(3, &out), -1);
    EXPECT_EQ(out.count, 0);
    EXPECT_EQ(out.items, nullptr);
    EXPECT_EQ(cgc_get_objects(-2, &out), -1);
    EXPECT_EQ(cgc_get_objects(1000, &out), -1);
    EXPECT_EQ(take_errors(CGC_ERR_VALUE).size(), 3u);
    EXPECT_EQ(cgc_get_objects(-1, nullptr), -1);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
    EXPECT_EQ(objects(-1).list.count, objects(0).list.count + objects(1).list.count + objects(2).list.count);
    drop(a);
}

TEST_F(GcModuleTest, GetReferrersFindsTrackedObjectsThatVisitTheTargets) {
    Obj *t = plain(1);
    Obj *u = plain(2);
    Obj *a = plain(3);
    Obj *b = plain(4);
    Obj *c = plain(5);
    Obj *unrelated = plain(6);
    set_ref(a, 0, t);
    set_ref(b, 0, t);
    set_ref(b, 1, t);  // twice: still listed once
    set_ref(c, 2, u);
    auto *untracked = as_obj(cgc_gc_new(&plain_type));
    set_ref(untracked, 0, t);
    auto *nogc = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    nogc->value = ob(t);
    cgc_incref(ob(t));

    cgc_object *targets[] = {ob(t), ob(u)};
    {
        List l;
        ASSERT_EQ(cgc_get_referrers(targets, 1, &l.list), 0);
        EXPECT_EQ(l.set(), (std::set<cgc_object *>{ob(a), ob(b)}));
        EXPECT_EQ(l.list.count, 2);
    }
    {
        List l;
        ASSERT_EQ(cgc_get_referrers(targets, 2, &l.list), 0);
        EXPECT_EQ(l.set(), (std::set<cgc_object *>{ob(a), ob(b), ob(c)}));
        EXPECT_EQ(l.list.count, 3);
    }
    {
        List l;
        cgc_object *none[] = {ob(unrelated)};
        ASSERT_EQ(cgc_get_referrers(none, 1, &l.list), 0);
        EXPECT_EQ(l.list.count, 0);
    }
    {
        // CPython scans generations 0..2 only: frozen referrers are not found.
        cgc_freeze();
        List l;
        ASSERT_EQ(cgc_get_referrers(targets, 1, &l.list), 0);
        EXPECT_EQ(l.list.count, 0);
        cgc_unfreeze();
    }
    EXPECT_EQ(cgc_get_referrers(targets, 1, nullptr), -1);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
    {
        // No objects but a count: refused, not read.
        List l;
        EXPECT_EQ(cgc_get_referrers(nullptr, 1, &l.list), -1);
        EXPECT_EQ(cgc_get_referents(nullptr, 2, &l.list), -1);
        EXPECT_EQ(cgc_get_referrers(targets, -1, &l.list), -1);
        EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 3u);
        EXPECT_EQ(cgc_get_referrers(nullptr, 0, &l.list), 0);
        EXPECT_EQ(l.list.count, 0);
    }

    cgc_decref(ob(untracked));
    cgc_decref(&nogc->ob_base);
    for (Obj *o : {a, b, c, unrelated, t, u}) drop(o);
}

TEST_F(GcModuleTest, GetReferentsListsWhatTraverseVisitsInOrder) {
    Obj *x = plain(1);
    Obj *y = plain(2);
    Obj *z = plain(3);
    Obj *a = plain(4);
    Obj *b = plain(5);
    set_ref(a, 0, x);
    set_ref(a, 1, y);
    set_ref(a, 2, x);
    set_ref(b, 1, z);
    auto *nogc = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    nogc->value = ob(z);
    cgc_incref(ob(z));
    set_ref(b, 2, &nogc->ob_base);  // non-GC referents are listed too
    auto *untracked = as_obj(cgc_gc_new(&plain_type));
    set_ref(untracked, 0, y);

    {
        List l;
        cgc_object *args[] = {ob(a)};
        ASSERT_EQ(cgc_get_referents(args, 1, &l.list), 0);
        EXPECT_EQ(l.items(), (std::vector<cgc_object *>{ob(x), ob(y), ob(x)}));
        EXPECT_EQ(ob(x)->ob_refcnt, 1 + 2 + 2) << "new references";
    }
    EXPECT_EQ(ob(x)->ob_refcnt, 3);
    {
        List l;
        cgc_object *args[] = {ob(a), &nogc->ob_base, ob(b), nullptr, ob(untracked)};
        ASSERT_EQ(cgc_get_referents(args, 5, &l.list), 0);
        EXPECT_EQ(l.items(), (std::vector<cgc_object *>{ob(x), ob(y), ob(x), ob(z), &nogc->ob_base, ob(y)}))
            << "a non-GC object has no referents; an untracked GC object does";
    }
    {
        List l;
        cgc_object *args[] = {ob(x)};
        ASSERT_EQ(cgc_get_referents(args, 1, &l.list), 0);
        EXPECT_EQ(l.list.count, 0);
    }
    cgc_decref(ob(untracked));
    for (Obj *o : {a, b, x, y, z}) drop(o);
    cgc_decref(&nogc->ob_base);
}

// test_is_tracked / test_is_finalized.
TEST_F(GcModuleTest, IsTrackedAndIsFinalized) {
    auto *nogc = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    auto *untracked = as_obj(cgc_gc_new(&plain_type));
    Obj *tracked = plain(1);
    EXPECT_EQ(cgc_gc_is_tracked(&nogc->ob_base), 0);
    EXPECT_EQ(cgc_gc_is_tracked(ob(untracked)), 0);
    EXPECT_EQ(cgc_gc_is_tracked(ob(tracked)), 1);
    EXPECT_EQ(cgc_gc_is_tracked(nullptr), 0);
    cgc_gc_untrack(ob(tracked));
    EXPECT_EQ(cgc_gc_is_tracked(ob(tracked)), 0);
    cgc_gc_track(ob(tracked));

    cgc_object *lazarus = nullptr;
    g_rec.on_finalize = [&](Obj *o) {
        EXPECT_EQ(cgc_gc_is_finalized(ob(o)), 1) << "set before tp_finalize runs";
        cgc_incref(ob(o));
        lazarus = ob(o);
    };
    Obj *f = self_cycle_garbage(&final_type, 2);
    EXPECT_EQ(cgc_gc_is_finalized(ob(f)), 0);
    EXPECT_EQ(cgc_collect(2), 0);
    ASSERT_EQ(lazarus, ob(f));
    EXPECT_EQ(cgc_gc_is_finalized(lazarus), 1);
    EXPECT_EQ(cgc_gc_is_finalized(&nogc->ob_base), 0);
    EXPECT_EQ(cgc_gc_is_finalized(ob(tracked)), 0);
    EXPECT_EQ(cgc_gc_is_finalized(nullptr), 0);

    g_rec.on_finalize = nullptr;
    cgc_decref(lazarus);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(event_count("finalize 2"), 1);
    cgc_decref(&nogc->ob_base);
    cgc_decref(ob(untracked));
    drop(tracked);
}

// test_get_objects_during_gc (gh-125859).
TEST_F(GcModuleTest, GetObjectsAndReferrersDuringGcDoNotSeeTheGarbage) {
    int in_get_objects = -1;
    cgc_ssize_t referrers = -1;
    cgc_ssize_t seen = -1;
    Obj *live = plain(1);
    g_rec.on_finalize = [&](Obj *self) {
        List all = objects(-1);
        in_get_objects = all.contains(self);
        seen = all.list.count;
        List l;
        cgc_object *targets[] = {ob(self)};
        EXPECT_EQ(cgc_get_referrers(targets, 1, &l.list), 0);
        referrers = l.list.count;
    };
    self_cycle_garbage(&final_type, 2);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(in_get_objects, 0);
    EXPECT_EQ(referrers, 0);
    EXPECT_EQ(seen, 1) << "the live object only";
    drop(live);
}

struct VisitState {
    std::vector<cgc_object *> seen;
    std::vector<int> enabled;
    size_t stop_after = SIZE_MAX;
};

int visit_recorder(cgc_object *op, void *arg) {
    auto *state = static_cast<VisitState *>(arg);
    state->seen.push_back(op);
    state->enabled.push_back(cgc_is_enabled());
    return state->seen.size() < state->stop_after;
}

TEST_F(GcModuleTest, VisitObjectsSeesEveryTrackedObjectIncludingFrozenOnes) {
    Obj *frozen = plain(1);
    cgc_freeze();
    Obj *a = plain(2);
    Obj *b = plain(3);
    cgc_collect(0);
    Obj *c = plain(4);
    cgc_enable();
    VisitState all;
    cgc_visit_objects(visit_recorder, &all);
    EXPECT_EQ(std::set<cgc_object *>(all.seen.begin(), all.seen.end()),
              (std::set<cgc_object *>{ob(frozen), ob(a), ob(b), ob(c)}));
    EXPECT_EQ(all.seen.size(), 4u);
    EXPECT_EQ(all.enabled, std::vector<int>(4, 0)) << "automatic collection is off during the visit";
    EXPECT_EQ(cgc_is_enabled(), 1) << "and restored afterwards";

    VisitState one;
    one.stop_after = 1;
    cgc_visit_objects(visit_recorder, &one);
    EXPECT_EQ(one.seen.size(), 1u) << "a visitor returning 0 stops the walk";
    cgc_visit_objects(nullptr, nullptr);
    cgc_disable();
    cgc_unfreeze();
    for (Obj *o : {frozen, a, b, c}) drop(o);
}

}  // namespace
