// The gc module (CPython's `gc`): the statistics per generation. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- statistics ----------------------------------------------------------

// test_get_stats.
TEST_F(GcModuleTest, GetStatsCountsCollectionsPerGeneration) {
    cgc_collect(0);
    EXPECT_EQ(stats_of(0).collections, 1u);
    EXPECT_EQ(stats_of(1).collections, 0u);
    EXPECT_EQ(stats_of(2).collections, 0u);
    cgc_collect(2);
    EXPECT_EQ(stats_of(0).collections, 1u);
    EXPECT_EQ(stats_of(1).collections, 0u);
    EXPECT_EQ(stats_of(2).collections, 1u);
    cgc_collect(1);
    EXPECT_EQ(stats_of(1).collections, 1u);
    EXPECT_EQ(stats_of(2).collections, 1u);
}

TEST_F(GcModuleTest, GetStatsCountsCollectedUncollectableAndExamined) {
    std::vector<Obj *> live;
    for (int i = 0; i < 50; ++i) live.push_back(plain(100 + i));
    for (int i = 0; i < 3; ++i) self_cycle_garbage(&plain_type, 1 + i);
    pair_garbage(&legacy_type, 10, 11);
    cgc_collect(2);
    cgc_generation_stats s = stats_of(2);
    EXPECT_EQ(s.collections, 1u);
    EXPECT_EQ(s.collected, 3u);
    EXPECT_EQ(s.uncollectable, 2u);
    EXPECT_EQ(s.examined, 55u) << "every tracked object of generations 0..2 is a candidate";
    EXPECT_EQ(stats_of(0).examined, 0u);
    EXPECT_GE(s.total_ns, s.max_pause_ns);

    // Only generation 0 is examined by a young collection.
    Obj *young = plain(300);
    cgc_collect(0);
    EXPECT_EQ(stats_of(0).examined, 1u);
    EXPECT_EQ(stats_of(2).examined, 55u);
    drop(young);
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, GetStatsTimesMatchTheDurationsGivenToCallbacks) {
    std::vector<CallbackCall> calls;
    Recorder rec{1, &calls, nullptr};
    add_callback(record_callback, &rec);
    std::vector<Obj *> live;
    for (int i = 0; i < 2000; ++i) live.push_back(plain(i));
    for (int round = 0; round < 3; ++round) cgc_collect(2);
    cgc_collect(0);
    uint64_t total2 = 0, max2 = 0, total0 = 0;
    for (auto &c : calls) {
        if (c.phase != "stop") continue;
        if (c.info.generation == 2) {
            total2 += c.info.duration_ns;
            max2 = std::max(max2, c.info.duration_ns);
        } else {
            total0 += c.info.duration_ns;
        }
    }
    EXPECT_GT(max2, 0u);
    EXPECT_EQ(stats_of(2).total_ns, total2);
    EXPECT_EQ(stats_of(2).max_pause_ns, max2);
    EXPECT_EQ(stats_of(0).total_ns, total0);
    EXPECT_EQ(stats_of(0).max_pause_ns, total0);
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, GetStatsOfAnInvalidGenerationIsZero) {
    cgc_collect(2);
    cgc_generation_stats s;
    std::memset(&s, 0xAB, sizeof s);
    cgc_get_stats(3, &s);
    EXPECT_EQ(s.collections, 0u);
    EXPECT_EQ(s.collected, 0u);
    EXPECT_EQ(s.examined, 0u);
    EXPECT_EQ(s.total_ns, 0u);
    cgc_get_stats(2, nullptr);  // ignored
}

// test_resurrection_does_not_block_cleanup_of_other_objects (without
// instance dicts, so N instead of 2*N).
TEST_F(GcModuleTest, ResurrectionDoesNotBlockCleanupOfOtherObjects) {
    const int n = 100;
    std::vector<cgc_object *> zs;
    g_rec.on_finalize = [&](Obj *o) {
        cgc_incref(ob(o));
        zs.push_back(ob(o));
    };
    auto getstats = [] { return std::make_pair(stats_of(2).collected, stats_of(2).uncollectable); };

    auto [c0, nc0] = getstats();
    for (int i = 0; i < n; ++i) self_cycle_garbage(&plain_type, i);
    EXPECT_EQ(cgc_collect(2), n);
    auto [c1, nc1] = getstats();
    EXPECT_EQ(c1 - c0, uint64_t(n));
    EXPECT_EQ(nc1 - nc0, 0u);

    Obj *z1 = self_cycle_garbage(&final_type, 1000);  // resurrected, not collected
    EXPECT_EQ(cgc_collect(2), 0);
    auto [c2, nc2] = getstats();
    EXPECT_EQ(c2 - c1, 0u);
    EXPECT_EQ(nc2 - nc1, 0u);
    EXPECT_EQ(zs.size(), 1u);
    EXPECT_FALSE(freed(1000));
    EXPECT_EQ(z1->clears, 0) << "a resurrected object is not cleared";

    for (int i = 0; i < n; ++i) self_cycle_garbage(&plain_type, 2000 + i);
    Obj *z2 = self_cycle_garbage(&final_type, 1001);
    EXPECT_EQ(cgc_collect(2), n);
    auto [c3, nc3] = getstats();
    EXPECT_EQ(c3 - c2, uint64_t(n));
    EXPECT_EQ(nc3 - nc2, 0u);
    EXPECT_EQ(zs.size(), 2u);

    for (cgc_object *z : zs) cgc_decref(z);
    zs.clear();
    EXPECT_EQ(cgc_collect(2), 2);
    auto [c4, nc4] = getstats();
    EXPECT_EQ(c4 - c3, 2u);
    EXPECT_EQ(nc4 - nc3, 0u);
    EXPECT_TRUE(freed(1000) && freed(1001));
    EXPECT_EQ(event_count("finalize 1000"), 1) << "finalized once in its life";
    EXPECT_EQ(event_count("finalize 1001"), 1);
    (void)z2;
}

}  // namespace
