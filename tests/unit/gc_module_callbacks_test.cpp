// The gc module (CPython's `gc`): the collection callbacks. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- callbacks -------------------------------------------------------------

class GcModuleCallbackTest : public GcModuleTest {
  protected:
    void SetUp() override {
        GcModuleTest::SetUp();
        cb1_ = Recorder{1, &calls_, nullptr};
        cb2_ = Recorder{2, &calls_, nullptr};
        add_callback(record_callback, &cb1_);
        add_callback(record_callback, &cb2_);
    }
    std::vector<CallbackCall> stops() const {
        std::vector<CallbackCall> out;
        for (auto &c : calls_)
            if (c.phase == "stop") out.push_back(c);
        return out;
    }
    std::vector<CallbackCall> calls_;
    Recorder cb1_, cb2_;
};

// test_collect.
TEST_F(GcModuleCallbackTest, EachCallbackRunsAtStartAndStop) {
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    ASSERT_EQ(calls_.size(), 4u);
    EXPECT_EQ(calls_[0].which, 1);
    EXPECT_EQ(calls_[0].phase, "start");
    EXPECT_EQ(calls_[1].which, 2);
    EXPECT_EQ(calls_[1].phase, "start");
    EXPECT_EQ(calls_[2].which, 1);
    EXPECT_EQ(calls_[2].phase, "stop");
    EXPECT_EQ(calls_[3].which, 2);
    EXPECT_EQ(calls_[3].phase, "stop");
    for (int i = 0; i < 2; ++i) {
        const cgc_collection_info &start = calls_[i].info;
        EXPECT_EQ(start.generation, 2);
        EXPECT_EQ(start.collected, 0);
        EXPECT_EQ(start.uncollectable, 0);
        EXPECT_EQ(start.candidates, 0);
        EXPECT_EQ(start.duration_ns, 0u);
    }
    for (int i = 2; i < 4; ++i) {
        const cgc_collection_info &stop = calls_[i].info;
        EXPECT_EQ(stop.generation, 2);
        EXPECT_EQ(stop.collected, 1);
        EXPECT_EQ(stop.uncollectable, 0);
        EXPECT_EQ(stop.candidates, 1);
        EXPECT_EQ(stop.duration_ns, stats_of(2).total_ns);
    }
}

// test_collect_generation.
TEST_F(GcModuleCallbackTest, CallbacksReceiveTheCollectedGeneration) {
    for (int generation = 0; generation < 3; ++generation) {
        calls_.clear();
        cgc_collect(generation);
        ASSERT_EQ(calls_.size(), 4u);
        for (auto &c : calls_) EXPECT_EQ(c.info.generation, generation);
    }
}

// test_collect_garbage: two Uncollectable pairs and a self-loop, then a
// stop callback that empties the garbage list.
TEST_F(GcModuleCallbackTest, CallbacksSeeCollectedAndUncollectableCounts) {
    pair_garbage(&legacy_type, 1, 2);
    pair_garbage(&legacy_type, 3, 4);
    self_cycle_garbage(&plain_type, 666);
    EXPECT_EQ(cgc_collect(2), 5);
    ASSERT_EQ(stops().size(), 2u);
    for (auto &c : stops()) {
        EXPECT_EQ(c.info.collected, 1);
        EXPECT_EQ(c.info.uncollectable, 4);
    }
    {
        List g = garbage();
        ASSERT_EQ(g.list.count, 4);
        for (cgc_object *op : g.items()) EXPECT_EQ(op->ob_type, &legacy_type);
    }

    // As in CPython, where the loop variable `e` keeps the last one alive.
    cgc_object *e = nullptr;
    {
        List g = garbage();
        e = g.items().back();
        cgc_incref(e);
    }
    // The stop callback takes the Uncollectables out of the garbage list and
    // breaks their cycles.
    cb2_.extra = [](const std::string &phase, const cgc_collection_info &) {
        if (phase != "stop") return;
        List g = garbage();
        cgc_garbage_clear();
        for (cgc_object *op : g.items()) set_ref(as_obj(op), 0, static_cast<cgc_object *>(nullptr));
    };
    calls_.clear();
    cgc_garbage_clear();
    EXPECT_EQ(cgc_collect(2), 2);
    ASSERT_EQ(stops().size(), 2u);
    for (auto &c : stops()) {
        EXPECT_EQ(c.info.collected, 0);
        EXPECT_EQ(c.info.uncollectable, 2);
    }
    EXPECT_EQ(cgc_garbage_count(), 0);
    int e_id = as_obj(e)->id;
    int partner_id = e_id % 2 ? e_id + 1 : e_id - 1;
    for (int id = 1; id <= 4; ++id) {
        if (id == e_id || id == partner_id) continue;
        EXPECT_TRUE(freed(id)) << id;
        EXPECT_EQ(event_count("del " + std::to_string(id)), 1) << "tp_del runs at refcount death";
    }
    set_ref(as_obj(e), 0, static_cast<cgc_object *>(nullptr));
    cgc_decref(e);
    EXPECT_TRUE(freed(e_id));
    EXPECT_TRUE(freed(partner_id));
    EXPECT_EQ(event_count("clear 1") + event_count("clear 2") + event_count("clear 3") + event_count("clear 4"), 0)
        << "the collector never clears an uncollectable object";
}

TEST_F(GcModuleCallbackTest, CollectionRequestedFromACallbackReturnsZero) {
    std::vector<cgc_ssize_t> nested;
    std::vector<int> collecting;
    cb1_.extra = [&](const std::string &, const cgc_collection_info &) {
        collecting.push_back(cgc_is_collecting());
        nested.push_back(cgc_collect(0));
        nested.push_back(cgc_collect(2));
        cgc_enable();
        nested.push_back(cgc_collect_if_enabled());
        cgc_disable();
    };
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(nested, std::vector<cgc_ssize_t>(6, 0));
    EXPECT_EQ(collecting, (std::vector<int>{1, 1}));
    EXPECT_EQ(calls_.size(), 4u) << "no nested collection ran";
    EXPECT_EQ(stats_of(0).collections + stats_of(1).collections + stats_of(2).collections, 1u);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(cgc_is_collecting(), 0);
}

TEST_F(GcModuleCallbackTest, CallbackExceptionIsReportedAsUnraisableAndTheCollectionCompletes) {
    cb1_.extra = [](const std::string &phase, const cgc_collection_info &) {
        if (phase == "start") throw std::runtime_error("boom at start");
        throw 42;  // not a std::exception
    };
    self_cycle_garbage(&plain_type, 1);
    uint64_t before = cgc_error_count(CGC_ERR_UNRAISABLE);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(calls_.size(), 4u) << "the other callback still runs";
    EXPECT_EQ(cgc_error_count(CGC_ERR_UNRAISABLE) - before, 2u);
    auto unraisable = take_errors(CGC_ERR_UNRAISABLE);
    ASSERT_EQ(unraisable.size(), 2u);
    EXPECT_NE(unraisable[0].find("boom at start"), std::string::npos) << unraisable[0];
    EXPECT_EQ(cgc_is_collecting(), 0);
    EXPECT_EQ(stats_of(2).collections, 1u);

    cb1_.extra = nullptr;
    self_cycle_garbage(&plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 1) << "the collector still works";
    EXPECT_TRUE(freed(2));
}

TEST_F(GcModuleCallbackTest, RemoveCollectionCallback) {
    EXPECT_EQ(cgc_remove_collection_callback(record_callback, &cb1_), 0);
    EXPECT_EQ(cgc_remove_collection_callback(record_callback, &cb1_), -1) << "already removed";
    Recorder other{3, &calls_, nullptr};
    EXPECT_EQ(cgc_remove_collection_callback(record_callback, &other), -1) << "never added";
    cgc_collect(0);
    ASSERT_EQ(calls_.size(), 2u);
    EXPECT_EQ(calls_[0].which, 2);
    EXPECT_EQ(calls_[1].which, 2);

    EXPECT_EQ(cgc_add_collection_callback(nullptr, nullptr), -1);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
}

TEST_F(GcModuleCallbackTest, CallbackMayRemoveItselfWhileRunning) {
    cb1_.extra = [this](const std::string &, const cgc_collection_info &) {
        EXPECT_EQ(cgc_remove_collection_callback(record_callback, &cb1_), 0);
    };
    cgc_collect(2);
    ASSERT_EQ(calls_.size(), 3u);  // cb1 start, cb2 start, cb2 stop
    EXPECT_EQ(calls_[0].which, 1);
    EXPECT_EQ(calls_[1].which, 2);
    EXPECT_EQ(calls_[2].which, 2);
    EXPECT_EQ(calls_[2].phase, "stop");
}

// CPython's final collection at shutdown runs no gc.callbacks
// (_PyGC_CollectNoFail / reason SHUTDOWN).
TEST_F(GcModuleCallbackTest, ShutdownCollectionRunsNoCallbacks) {
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_finalize(), 0);
    EXPECT_TRUE(freed(1));
    EXPECT_TRUE(calls_.empty()) << "callbacks ran " << calls_.size() << " times during cgc_finalize";
}

}  // namespace
