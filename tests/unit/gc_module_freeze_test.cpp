// The gc module (CPython's `gc`): freeze and unfreeze. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- freeze --------------------------------------------------------------

// test_freeze.
TEST_F(GcModuleTest, FreezeMovesEveryTrackedObjectToThePermanentGeneration) {
    std::vector<Obj *> live;
    for (int i = 0; i < 10; ++i) live.push_back(plain(i));
    cgc_collect(0);  // some in generation 1,
    live.push_back(plain(10));  // one in generation 0
    EXPECT_GT(cgc_get_count(0) + cgc_get_count(1), 0);
    cgc_freeze();
    EXPECT_EQ(cgc_get_freeze_count(), 11);
    EXPECT_EQ(objects(-1).list.count, 0) << "get_objects excludes the permanent generation";
    for (int g = 0; g < 3; ++g) EXPECT_EQ(cgc_get_count(g), 0);
    for (Obj *o : live) EXPECT_EQ(cgc_gc_is_tracked(ob(o)), 1);

    cgc_unfreeze();
    EXPECT_EQ(cgc_get_freeze_count(), 0);
    List old = objects(2);
    EXPECT_EQ(old.list.count, 11) << "unfreeze moves them to the oldest generation";
    for (Obj *o : live) EXPECT_TRUE(old.contains(o));
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, FrozenGarbageIsNotCollectedUntilUnfrozen) {
    Obj *a = plain(1);
    set_ref(a, 0, a);
    cgc_freeze();
    drop(a);
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(a->clears, 0);
    cgc_unfreeze();
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(freed(1));
}

TEST_F(GcModuleTest, FreezeMakesALaterFullCollectionCheaper) {
    const int n = 1000;
    std::vector<Obj *> live;
    for (int i = 0; i < n; ++i) live.push_back(plain(i));
    cgc_collect(2);
    EXPECT_EQ(stats_of(2).examined, uint64_t(n));

    cgc_freeze();
    cgc_collect(2);
    EXPECT_EQ(stats_of(2).examined, uint64_t(n)) << "frozen objects are not examined";

    for (int i = 0; i < 5; ++i) live.push_back(plain(n + i));
    cgc_collect(2);
    EXPECT_EQ(stats_of(2).examined, uint64_t(n + 5));

    cgc_unfreeze();
    cgc_collect(2);
    EXPECT_EQ(stats_of(2).examined, uint64_t(n + 5 + n + 5));
    for (Obj *o : live) drop(o);
}

// test_traverse_frozen_objects: a new cycle referring to a frozen object.
TEST_F(GcModuleTest, CollectingACycleThatRefersToAFrozenObjectKeepsItsCount) {
    Obj *frozen = plain(1);
    cgc_freeze();
    ASSERT_EQ(ob(frozen)->ob_refcnt, 1);
    auto [a, b] = pair_garbage(&plain_type, 2, 3);
    set_ref(a, 1, frozen);
    EXPECT_EQ(ob(frozen)->ob_refcnt, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(freed(2) && freed(3));
    EXPECT_EQ(ob(frozen)->ob_refcnt, 1);
    cgc_unfreeze();
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(ob(frozen)->ob_refcnt, 1);
    EXPECT_FALSE(freed(1));
    drop(frozen);
    (void)b;
}

TEST_F(GcModuleTest, FreezeFromAFinalizerDuringACollectionIsRefused) {
    g_rec.on_finalize = [](Obj *) { cgc_freeze(); };
    Obj *live = plain(1);
    self_cycle_garbage(&final_type, 2);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(freed(2));
    EXPECT_EQ(cgc_get_freeze_count(), 0);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
    EXPECT_TRUE(objects(2).contains(live));
    drop(live);
}

}  // namespace
