// The gc module (CPython's `gc`): enable / disable / isenabled, the thresholds and the counts. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- enable / disable / isenabled -----------------------------------------------

TEST_F(GcModuleTest, EnableAndDisableReturnThePreviousState) {
    EXPECT_EQ(initially_enabled_, 1) << "a new heap collects automatically";
    EXPECT_EQ(cgc_is_enabled(), 0);
    EXPECT_EQ(cgc_disable(), 0);
    EXPECT_EQ(cgc_enable(), 0);
    EXPECT_EQ(cgc_is_enabled(), 1);
    EXPECT_EQ(cgc_enable(), 1);
    EXPECT_EQ(cgc_disable(), 1);
    EXPECT_EQ(cgc_is_enabled(), 0);
}

TEST_F(GcModuleTest, AutomaticCollectionRunsWhenGen0CountExceedsItsThreshold) {
    std::vector<CallbackCall> calls;
    Recorder rec{1, &calls, nullptr};
    add_callback(record_callback, &rec);
    cgc_set_threshold(0, 10);
    cgc_collect(2);
    calls.clear();
    ASSERT_EQ(cgc_get_count(0), 0);
    cgc_enable();

    self_cycle_garbage(&plain_type, 1);  // count 1
    std::vector<Obj *> live;
    for (int i = 0; i < 9; ++i) live.push_back(plain(100 + i));  // counts 2..10
    EXPECT_EQ(cgc_get_count(0), 10);
    EXPECT_TRUE(calls.empty()) << "a count equal to the threshold does not collect";
    EXPECT_FALSE(freed(1));

    live.push_back(plain(200));  // count 11 > 10: a collection of generation 0, before the allocation
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].phase, "start");
    EXPECT_EQ(calls[0].info.generation, 0);
    EXPECT_EQ(calls[1].phase, "stop");
    EXPECT_EQ(calls[1].info.collected, 1);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 1);
    EXPECT_EQ(stats_of(0).collections, 1u);

    cgc_disable();
    for (Obj *o : live) drop(o);
}

// test_indirect_calls_with_gc_disabled.
TEST_F(GcModuleTest, DisableStopsAutomaticCollection) {
    cgc_set_threshold(0, 10);
    self_cycle_garbage(&plain_type, 1);
    std::vector<Obj *> live;
    for (int i = 0; i < 1000; ++i) live.push_back(plain(100 + i));
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(stats_of(0).collections + stats_of(1).collections + stats_of(2).collections, 0u);
    EXPECT_GT(cgc_get_count(0), 1000 - 1);

    cgc_enable();
    live.push_back(plain(5000));  // the count is over the threshold: collects now
    EXPECT_TRUE(freed(1));
    EXPECT_GE(stats_of(0).collections + stats_of(1).collections + stats_of(2).collections, 1u);
    cgc_disable();
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, ThresholdZeroDisablesAutomaticCollection) {
    cgc_enable();
    cgc_set_threshold(0, 0);
    self_cycle_garbage(&plain_type, 1);
    std::vector<Obj *> live;
    for (int i = 0; i < 5000; ++i) live.push_back(plain(100 + i));
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(stats_of(0).collections + stats_of(1).collections + stats_of(2).collections, 0u);
    EXPECT_EQ(cgc_get_count(0), 5001);
    cgc_disable();
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, CollectIfEnabledIsPyGC_Collect) {
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_collect_if_enabled(), 0) << "PyGC_Collect does nothing while disabled";
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(stats_of(2).collections, 0u);
    cgc_enable();
    EXPECT_EQ(cgc_collect_if_enabled(), 1);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(stats_of(2).collections, 1u) << "PyGC_Collect is a full collection";
    cgc_disable();
}

// ---- thresholds and counts -----------------------------------------------------

TEST_F(GcModuleTest, ThresholdsDefaultToCPythons) {
    EXPECT_EQ(cgc_get_threshold(0), 700);
    EXPECT_EQ(cgc_get_threshold(1), 10);
    EXPECT_EQ(cgc_get_threshold(2), 10);
}

TEST_F(GcModuleTest, SetThresholdReadsBackAndRejectsInvalidArguments) {
    cgc_set_threshold(0, 1234);
    cgc_set_threshold(1, 5);
    cgc_set_threshold(2, 0);
    EXPECT_EQ(cgc_get_threshold(0), 1234);
    EXPECT_EQ(cgc_get_threshold(1), 5);
    EXPECT_EQ(cgc_get_threshold(2), 0);

    cgc_set_threshold(3, 1);
    cgc_set_threshold(-1, 1);
    cgc_set_threshold(1, -7);
    EXPECT_EQ(take_errors(CGC_ERR_VALUE).size(), 3u);
    EXPECT_EQ(cgc_get_threshold(1), 5) << "a rejected call changes nothing";
    EXPECT_EQ(cgc_get_threshold(3), -1);
    EXPECT_EQ(cgc_get_threshold(-1), -1);
}

TEST_F(GcModuleTest, Gen0CountIsAllocationsMinusFrees) {
    cgc_collect(2);
    EXPECT_EQ(cgc_get_count(0), 0);
    Obj *a = plain(1);
    Obj *b = plain(2);
    auto *untracked = as_obj(cgc_gc_new(&plain_type));  // counted whether tracked or not
    EXPECT_EQ(cgc_get_count(0), 3);
    drop(a);
    EXPECT_EQ(cgc_get_count(0), 2);
    cgc_decref(ob(untracked));
    drop(b);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(3), -1);
    EXPECT_EQ(cgc_get_count(-1), -1);
}

// test_collect_generations (with the older variant's steps for 1 and 2).
TEST_F(GcModuleTest, CollectGenerationsUpdatesTheCounts) {
    cgc_collect(2);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(cgc_get_count(2), 0);
    cgc_collect(0);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 1);
    EXPECT_EQ(cgc_get_count(2), 0);
    cgc_collect(0);
    EXPECT_EQ(cgc_get_count(1), 2);
    cgc_collect(1);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(cgc_get_count(2), 1);
    cgc_collect(2);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(cgc_get_count(2), 0);
}

}  // namespace
