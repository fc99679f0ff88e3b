// The gc module (CPython's `gc`): collect, and user code that misbehaves inside a collection. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- collect ------------------------------------------------------------

// test_list / test_legacy_finalizer's return value.
TEST_F(GcModuleTest, CollectReturnsCollectedPlusUncollectable) {
    Obj *a = plain(1);
    set_ref(a, 0, a);
    EXPECT_EQ(cgc_collect(2), 0) << "still referenced";
    drop(a);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(freed(1));

    pair_garbage(&plain_type, 2, 3);
    self_cycle_garbage(&legacy_type, 4);
    EXPECT_EQ(cgc_collect(2), 3);  // 2 collected + 1 uncollectable
    EXPECT_TRUE(freed(2) && freed(3));
    EXPECT_FALSE(freed(4));
}

TEST_F(GcModuleTest, CollectRejectsAnInvalidGeneration) {
    std::vector<CallbackCall> calls;
    Recorder rec{1, &calls, nullptr};
    add_callback(record_callback, &rec);
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_collect(3), -1);
    EXPECT_EQ(cgc_collect(-1), -1);
    EXPECT_EQ(take_errors(CGC_ERR_VALUE).size(), 2u);
    EXPECT_TRUE(calls.empty());
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(cgc_collect(2), 1);
}

TEST_F(GcModuleTest, YoungCollectionsLeaveOlderGenerationsAlone) {
    Obj *a = plain(1);
    set_ref(a, 0, a);
    cgc_collect(0);  // a survives into generation 1
    drop(a);
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(cgc_collect(1), 1);
    EXPECT_TRUE(freed(1));
}

// The 3.9 variant of test_get_objects: an object walks 0 -> 1 -> 2.
TEST_F(GcModuleTest, GetObjectsFollowsAnObjectThroughTheGenerations) {
    Obj *a = plain(1);
    EXPECT_TRUE(objects(0).contains(a));
    EXPECT_FALSE(objects(1).contains(a));
    cgc_collect(0);
    EXPECT_FALSE(objects(0).contains(a));
    EXPECT_TRUE(objects(1).contains(a));
    EXPECT_FALSE(objects(2).contains(a));
    cgc_collect(1);
    EXPECT_FALSE(objects(1).contains(a));
    EXPECT_TRUE(objects(2).contains(a));
    cgc_collect(2);
    EXPECT_TRUE(objects(2).contains(a));
    EXPECT_TRUE(objects(-1).contains(a));
    drop(a);
}

// ---- user code that misbehaves inside a collection --------------------------

TEST_F(GcModuleTest, FinalizerExceptionIsReportedAsUnraisable) {
    g_rec.on_finalize = [](Obj *) { throw std::runtime_error("finalizer failed"); };
    self_cycle_garbage(&final_type, 1);
    self_cycle_garbage(&plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(freed(1) && freed(2));
    auto unraisable = take_errors(CGC_ERR_UNRAISABLE);
    ASSERT_EQ(unraisable.size(), 1u);
    EXPECT_NE(unraisable[0].find("finalizer failed"), std::string::npos) << unraisable[0];
    EXPECT_NE(unraisable[0].find("Final"), std::string::npos) << unraisable[0];
}

TEST_F(GcModuleTest, CollectFromAFinalizerReturnsZero) {
    std::vector<cgc_ssize_t> nested;
    g_rec.on_finalize = [&](Obj *) {
        nested.push_back(cgc_collect(2));
        nested.push_back(cgc_collect(0));
    };
    self_cycle_garbage(&final_type, 1);
    self_cycle_garbage(&plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(nested, (std::vector<cgc_ssize_t>{0, 0}));
    EXPECT_EQ(stats_of(0).collections + stats_of(2).collections, 1u);
}

}  // namespace
