// The gc module (CPython's `gc`): the debug flags and the log sink. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

#include <regex>

using namespace gc_module_test;

namespace {

// ---- debug flags and the log sink -------------------------------------------

TEST_F(GcModuleTest, DebugFlagsHaveCPythonsValuesAndRoundTrip) {
    EXPECT_EQ(CGC_DEBUG_STATS, 1);
    EXPECT_EQ(CGC_DEBUG_COLLECTABLE, 2);
    EXPECT_EQ(CGC_DEBUG_UNCOLLECTABLE, 4);
    EXPECT_EQ(CGC_DEBUG_SAVEALL, 32);
    EXPECT_EQ(CGC_DEBUG_LEAK, 2 | 4 | 32);
    EXPECT_EQ(cgc_get_debug(), 0);
    cgc_set_debug(CGC_DEBUG_STATS | CGC_DEBUG_SAVEALL);
    EXPECT_EQ(cgc_get_debug(), 33);
    cgc_set_debug(0);
    EXPECT_EQ(cgc_get_debug(), 0);
}

TEST_F(GcModuleTest, NoDebugOutputWithoutFlags) {
    std::vector<std::string> lines;
    cgc_set_log_sink(capture_line, &lines);
    self_cycle_garbage(&plain_type, 1);
    self_cycle_garbage(&legacy_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(lines.empty()) << lines.front();
}

TEST_F(GcModuleTest, DebugStatsWritesCPythonsLines) {
    std::vector<std::string> lines;
    cgc_set_log_sink(capture_line, &lines);
    std::vector<Obj *> live{plain(1), plain(2), plain(3)};
    cgc_collect(2);
    live.push_back(plain(4));
    cgc_collect(0);
    live.push_back(plain(5));
    self_cycle_garbage(&plain_type, 6);
    self_cycle_garbage(&legacy_type, 7);

    Recorder rec{1, nullptr, nullptr};
    std::vector<CallbackCall> calls;
    rec.calls = &calls;
    rec.extra = [&](const std::string &phase, const cgc_collection_info &) { lines.push_back("callback " + phase); };
    add_callback(record_callback, &rec);
    cgc_set_debug(CGC_DEBUG_STATS);
    EXPECT_EQ(cgc_collect(2), 2);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines[0], "callback start");
    EXPECT_EQ(lines[1], "gc: collecting generation 2...");
    EXPECT_EQ(lines[2], "gc: objects in each generation: 3 1 3");
    EXPECT_EQ(lines[3], "gc: objects in permanent generation: 0");
    EXPECT_TRUE(std::regex_match(lines[4], std::regex(R"(gc: done, 2 unreachable, 1 uncollectable, \d+\.\d{4}s elapsed; pauses: \d+, p50 [\d.]+us, p99 [\d.]+us, p99\.9 [\d.]+us, max [\d.]+us)")))
        << lines[4];
    EXPECT_EQ(lines[5], "callback stop");

    lines.clear();
    cgc_freeze();
    cgc_collect(0);
    ASSERT_EQ(lines.size(), 6u);
    EXPECT_EQ(lines[1], "gc: collecting generation 0...");
    EXPECT_EQ(lines[2], "gc: objects in each generation: 0 0 0");
    EXPECT_EQ(lines[3], "gc: objects in permanent generation: 6");
    cgc_unfreeze();
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, DebugCollectableListsEachCollectableObject) {
    std::vector<std::string> lines;
    cgc_set_log_sink(capture_line, &lines);
    Obj *live = plain(1);
    Obj *x = self_cycle_garbage(&plain_type, 2);
    Obj *f = self_cycle_garbage(&final_type, 3);
    Obj *legacy = self_cycle_garbage(&legacy_type, 4);
    std::set<std::string> expected{"gc: collectable <Plain " + addr(x) + ">", "gc: collectable <Final " + addr(f) + ">"};
    cgc_set_debug(CGC_DEBUG_COLLECTABLE);
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()), expected);
    EXPECT_EQ(lines.size(), 2u) << "uncollectable objects are not listed without DEBUG_UNCOLLECTABLE";
    (void)legacy;
    drop(live);
}

TEST_F(GcModuleTest, DebugUncollectableListsEverythingReachableFromLegacyFinalizers) {
    std::vector<std::string> lines;
    cgc_set_log_sink(capture_line, &lines);
    Obj *legacy = make(&legacy_type, 1);
    Obj *p = plain(2);
    set_ref(legacy, 0, p);
    set_ref(p, 0, legacy);
    drop(legacy);
    drop(p);
    self_cycle_garbage(&plain_type, 3);
    cgc_set_debug(CGC_DEBUG_UNCOLLECTABLE);
    EXPECT_EQ(cgc_collect(2), 3);
    std::set<std::string> expected{"gc: uncollectable <Legacy " + addr(legacy) + ">",
                                   "gc: uncollectable <Plain " + addr(p) + ">"};
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()), expected);
    EXPECT_EQ(lines.size(), 2u);
}

// test_saveall.
TEST_F(GcModuleTest, DebugSaveAllKeepsEveryUnreachableObjectInTheGarbageList) {
    EXPECT_EQ(cgc_garbage_count(), 0);
    cgc_set_debug(CGC_DEBUG_SAVEALL);
    Obj *x = self_cycle_garbage(&plain_type, 1);
    auto [y, z] = pair_garbage(&plain_type, 2, 3);
    Obj *live = plain(4);
    EXPECT_EQ(cgc_collect(2), 3) << "saved objects count as collected, as in CPython";
    EXPECT_TRUE(g_rec.freed.empty());
    EXPECT_EQ(x->clears + y->clears + z->clears, 0) << "saved, not cleared";
    EXPECT_EQ(x->ref[0], ob(x));
    EXPECT_EQ(y->ref[0], ob(z));
    {
        List g = garbage();
        EXPECT_EQ(g.set(), (std::set<cgc_object *>{ob(x), ob(y), ob(z)}));
        EXPECT_EQ(g.list.count, 3);
    }
    EXPECT_EQ(cgc_garbage_count(), 3);
    EXPECT_EQ(ob(x)->ob_refcnt, 2) << "the self-reference and the garbage list's";
    EXPECT_EQ(cgc_collect(2), 0) << "the garbage list keeps them reachable";

    cgc_set_debug(0);
    cgc_garbage_clear();
    EXPECT_EQ(cgc_garbage_count(), 0);
    EXPECT_TRUE(g_rec.freed.empty()) << "still cycles";
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_EQ(std::set<int>(g_rec.freed.begin(), g_rec.freed.end()), (std::set<int>{1, 2, 3}));
    drop(live);
}

TEST_F(GcModuleTest, DebugSaveAllKeepsEveryUncollectableObjectToo) {
    cgc_set_debug(CGC_DEBUG_SAVEALL);
    Obj *legacy = make(&legacy_type, 1);
    Obj *p = plain(2);
    set_ref(legacy, 0, legacy);
    set_ref(legacy, 1, p);
    drop(legacy);
    drop(p);
    EXPECT_EQ(cgc_collect(2), 2);
    List g = garbage();
    EXPECT_EQ(g.set(), (std::set<cgc_object *>{ob(legacy), ob(p)}));
    EXPECT_EQ(g.list.count, 2);
}

TEST_F(GcModuleTest, DebugLeakListsAndSavesEverything) {
    std::vector<std::string> lines;
    cgc_set_log_sink(capture_line, &lines);
    cgc_set_debug(CGC_DEBUG_LEAK);
    Obj *x = self_cycle_garbage(&plain_type, 1);
    Obj *legacy = self_cycle_garbage(&legacy_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    std::set<std::string> expected{"gc: collectable <Plain " + addr(x) + ">",
                                   "gc: uncollectable <Legacy " + addr(legacy) + ">"};
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()), expected);
    EXPECT_EQ(lines.size(), 2u);
    List g = garbage();
    EXPECT_EQ(g.set(), (std::set<cgc_object *>{ob(x), ob(legacy)}));
    EXPECT_TRUE(g_rec.freed.empty());
}

TEST_F(GcModuleTest, SetLogSinkReturnsThePreviousSink) {
    std::vector<std::string> a, b;
    cgc_log_sink default_sink = cgc_set_log_sink(capture_line, &a);
    EXPECT_NE(default_sink, nullptr) << "the default (stderr) sink is a function too";
    EXPECT_EQ(cgc_set_log_sink(capture_line, &b), capture_line);
    cgc_set_debug(CGC_DEBUG_STATS);
    cgc_collect(0);
    EXPECT_TRUE(a.empty());
    EXPECT_EQ(b.size(), 4u) << "the new context is used";
    EXPECT_EQ(cgc_set_log_sink(nullptr, nullptr), capture_line);
    EXPECT_EQ(cgc_set_log_sink(nullptr, nullptr), default_sink) << "NULL restores the default";
}

TEST_F(GcModuleTest, DebugOutputGoesToStderrByDefault) {
    cgc_set_debug(CGC_DEBUG_STATS | CGC_DEBUG_COLLECTABLE);
    Obj *x = self_cycle_garbage(&plain_type, 1);
    std::string expected_line = "gc: collectable <Plain " + addr(x) + ">\n";
    testing::internal::CaptureStderr();
    cgc_collect(2);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("gc: collecting generation 2...\n"), std::string::npos) << err;
    EXPECT_NE(err.find(expected_line), std::string::npos) << err;
    EXPECT_NE(err.find("gc: done, 1 unreachable, 0 uncollectable, "), std::string::npos) << err;
}

}  // namespace
