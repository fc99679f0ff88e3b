// The gc module (CPython's `gc`): the garbage list, legacy (tp_del) finalizers and the report at shutdown. Ports of Lib/test/test_gc.py
// are named after the CPython test they follow.
#include "gc_module_fixture.hpp"

using namespace gc_module_test;

namespace {

// ---- the garbage list and legacy finalizers ---------------------------------

// test_legacy_finalizer.
TEST_F(GcModuleTest, LegacyFinalizerInACycleIsUncollectableAndListed) {
    Obj *a = self_cycle_garbage(&legacy_type, 1);
    self_cycle_garbage(&plain_type, 2);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(freed(2));
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(a->dels, 0) << "the collector never calls tp_del";
    EXPECT_EQ(a->clears, 0);
    {
        List g = garbage();
        EXPECT_EQ(g.items(), std::vector<cgc_object *>{ob(a)});
    }
    EXPECT_EQ(stats_of(2).uncollectable, 1u);
    EXPECT_EQ(stats_of(2).collected, 1u);

    // As the CPython test does: break the cycle, remove it from gc.garbage.
    set_ref(a, 0, static_cast<cgc_object *>(nullptr));
    EXPECT_FALSE(freed(1)) << "the garbage list holds it";
    cgc_garbage_clear();
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(event_count("del 1"), 1) << "tp_del runs once, at refcount death";
}

TEST_F(GcModuleTest, EverythingReachableFromALegacyFinalizerIsUncollectableButNotListed) {
    // L (tp_del, self-loop) -> A <-> B, A -> F (tp_finalize)
    Obj *l = make(&legacy_type, 1);
    Obj *a = plain(2);
    Obj *b = plain(3);
    Obj *f = make(&final_type, 4);
    set_ref(l, 0, l);
    set_ref(l, 1, a);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    set_ref(a, 1, f);
    for (Obj *o : {l, a, b, f}) drop(o);
    std::vector<CallbackCall> calls;
    Recorder rec{1, &calls, nullptr};
    add_callback(record_callback, &rec);

    EXPECT_EQ(cgc_collect(2), 4);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[1].info.collected, 0);
    EXPECT_EQ(calls[1].info.uncollectable, 4);
    EXPECT_TRUE(g_rec.freed.empty());
    EXPECT_EQ(f->finalizes, 0) << "objects reachable from a legacy finalizer are not finalized";
    EXPECT_EQ(a->clears + b->clears + f->clears + l->clears, 0);
    List g = garbage();
    EXPECT_EQ(g.items(), std::vector<cgc_object *>{ob(l)}) << "only the tp_del objects are listed";
}

TEST_F(GcModuleTest, LegacyFinalizerOnlyReachableFromCollectableGarbageIsFreed) {
    // A <-> B -> L (tp_del, in no cycle): L is freed by reference counting
    // when B is cleared, so it is neither listed nor counted.
    auto [a, b] = pair_garbage(&plain_type, 1, 2);
    Obj *l = make(&legacy_type, 3);
    set_ref(b, 1, l);
    drop(l);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(freed(1) && freed(2) && freed(3));
    EXPECT_EQ(event_count("del 3"), 1);
    EXPECT_EQ(cgc_garbage_count(), 0);
    EXPECT_EQ(stats_of(2).uncollectable, 0u);
    (void)a;
}

TEST_F(GcModuleTest, GarbageListHoldsNewReferences) {
    Obj *a = self_cycle_garbage(&legacy_type, 1);
    cgc_collect(2);
    EXPECT_EQ(cgc_garbage_count(), 1);
    EXPECT_EQ(ob(a)->ob_refcnt, 2);
    {
        List g = garbage();
        EXPECT_EQ(ob(a)->ob_refcnt, 3);
    }
    EXPECT_EQ(ob(a)->ob_refcnt, 2);
    EXPECT_EQ(cgc_get_garbage(nullptr), -1);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
    // Dropped from the list, it is garbage again: found again next time.
    cgc_garbage_clear();
    EXPECT_EQ(ob(a)->ob_refcnt, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(cgc_garbage_count(), 1);
}

// ---- shutdown -------------------------------------------------------------

// test_garbage_at_shutdown: X('first') in a self-loop refers to X('second');
// both have tp_del.
class GcModuleShutdownTest : public GcModuleTest {
  protected:
    void make_garbage() {
        first_ = make(&legacy_type, 1);
        second_ = make(&legacy_type, 2);
        set_ref(first_, 0, first_);
        set_ref(first_, 1, second_);
        drop(first_);
        drop(second_);
        cgc_set_log_sink(capture_line, &lines_);
    }
    bool mentions(const void *p, size_t from = 0) const {
        for (size_t i = from; i < lines_.size(); ++i)
            if (lines_[i].find(addr(p)) != std::string::npos) return true;
        return false;
    }
    // Index of the first line containing `text`, or -1.
    int find(const std::string &text) const {
        for (size_t i = 0; i < lines_.size(); ++i)
            if (lines_[i].find(text) != std::string::npos) return static_cast<int>(i);
        return -1;
    }
    Obj *first_ = nullptr;
    Obj *second_ = nullptr;
    std::vector<std::string> lines_;
};

TEST_F(GcModuleShutdownTest, GarbageLeftAtShutdownIsAnnounced) {
    make_garbage();
    EXPECT_EQ(cgc_finalize(), 0);
    EXPECT_EQ(cgc_garbage_count(), 2);
    EXPECT_GE(find("ResourceWarning: gc: 2 uncollectable objects at shutdown; use"), 0)
        << (lines_.empty() ? "(nothing logged)" : lines_.front());
    EXPECT_FALSE(mentions(first_)) << "objects are not listed without DEBUG_UNCOLLECTABLE";
    EXPECT_FALSE(mentions(second_));
}

TEST_F(GcModuleShutdownTest, DebugUncollectableAlsoListsTheGarbageAtShutdown) {
    make_garbage();
    cgc_set_debug(CGC_DEBUG_UNCOLLECTABLE);
    EXPECT_EQ(cgc_finalize(), 0);
    // CPython: the warning, without the hint, then the list of objects.
    int warning = find("gc: 2 uncollectable objects at shutdown");
    EXPECT_GE(warning, 0) << "CPython still announces the count under DEBUG_UNCOLLECTABLE";
    EXPECT_EQ(find("use cgc_set_debug"), -1);
    size_t after = warning < 0 ? 0 : static_cast<size_t>(warning);
    EXPECT_TRUE(mentions(first_, after));
    EXPECT_TRUE(mentions(second_, after));
}

TEST_F(GcModuleShutdownTest, DebugSaveAllSaysNothingAtShutdown) {
    make_garbage();
    cgc_set_debug(CGC_DEBUG_SAVEALL);
    EXPECT_EQ(cgc_finalize(), 0);
    EXPECT_EQ(find("uncollectable objects at shutdown"), -1);
}

TEST_F(GcModuleShutdownTest, NothingIsSaidWhenTheGarbageListIsEmpty) {
    cgc_set_log_sink(capture_line, &lines_);
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_finalize(), 0);
    EXPECT_TRUE(freed(1));
    EXPECT_TRUE(lines_.empty());
}

}  // namespace
