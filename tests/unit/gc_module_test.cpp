// The gc module's surface (CPython's `gc`): collect / enable / thresholds /
// counts, statistics, collection callbacks, freeze, introspection, debug
// flags and the log sink, the garbage list and legacy (tp_del) finalizers,
// and the report at shutdown. Ports of Lib/test/test_gc.py are named after
// the CPython test they follow.
//
// Every test runs on a fresh heap (so settings, statistics, callbacks and the
// garbage list start from scratch), with automatic collection disabled as in
// test_gc.py, and checks in TearDown that it left no tracked object behind
// and that no unexpected error was reported.
#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---- Test object types ---------------------------------------------------

// A container with three owned references. Its handlers log events
// ("finalize 3", "clear 3", "del 3", "dealloc 3") and can run per-test hooks.
struct Obj {
    cgc_object ob_base;
    cgc_object *ref[3];
    int id;
    int clears;
    int finalizes;
    int dels;
};

struct Record {
    std::vector<std::string> events;
    std::vector<int> freed;  // ids, in deallocation order
    std::function<void(Obj *)> on_finalize;
    std::function<void(Obj *)> on_del;
};
Record g_rec;

Obj *as_obj(cgc_object *op) { return reinterpret_cast<Obj *>(op); }
cgc_object *ob(Obj *o) { return &o->ob_base; }

void note(const char *what, const Obj *o) { g_rec.events.push_back(std::string(what) + " " + std::to_string(o->id)); }

int obj_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    for (cgc_object *r : as_obj(self)->ref) {
        if (r) {
            if (int v = visit(r, arg)) return v;
        }
    }
    return 0;
}

void drop_refs(Obj *o) {
    for (auto &r : o->ref) {
        cgc_object *t = r;
        r = nullptr;
        cgc_xdecref(t);
    }
}

int obj_clear(cgc_object *self) {
    Obj *o = as_obj(self);
    o->clears++;
    note("clear", o);
    drop_refs(o);
    return 0;
}

void free_obj(cgc_object *self) {
    cgc_gc_untrack(self);
    Obj *o = as_obj(self);
    note("dealloc", o);
    g_rec.freed.push_back(o->id);
    drop_refs(o);
    cgc_gc_del(self);
}

void plain_dealloc(cgc_object *self) { free_obj(self); }

void final_finalize(cgc_object *self) {
    Obj *o = as_obj(self);
    o->finalizes++;
    note("finalize", o);
    if (g_rec.on_finalize) g_rec.on_finalize(o);
}

// As a C type with tp_finalize does in CPython: finalize (once), stop if
// the finalizer resurrected the object.
void final_dealloc(cgc_object *self) {
    if (cgc_call_finalizer_from_dealloc(self) < 0) return;
    free_obj(self);
}

void legacy_del(cgc_object *self) {
    Obj *o = as_obj(self);
    o->dels++;
    note("del", o);
    if (g_rec.on_del) g_rec.on_del(o);
}

// As CPython's subtype_dealloc does for a class with a legacy __del__: call
// tp_del with a temporary reference; stop if it resurrected the object.
void legacy_dealloc(cgc_object *self) {
    self->ob_refcnt = 1;
    legacy_del(self);
    if (--self->ob_refcnt != 0) return;
    free_obj(self);
}

cgc_type make_type(const char *name, cgc_destructor dealloc, cgc_destructor finalize, cgc_destructor del) {
    cgc_type t{};
    t.tp_name = name;
    t.tp_basicsize = sizeof(Obj);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_dealloc = dealloc;
    t.tp_traverse = obj_traverse;
    t.tp_clear = obj_clear;
    t.tp_finalize = finalize;
    t.tp_del = del;
    return t;
}

cgc_type plain_type = make_type("Plain", plain_dealloc, nullptr, nullptr);
cgc_type final_type = make_type("Final", final_dealloc, final_finalize, nullptr);
cgc_type legacy_type = make_type("Legacy", legacy_dealloc, nullptr, legacy_del);

// A container that does not take part in GC (CPython's ContainerNoGC).
struct NoGc {
    cgc_object ob_base;
    cgc_object *value;
    int id;
};

void nogc_dealloc(cgc_object *self) {
    auto *n = reinterpret_cast<NoGc *>(self);
    g_rec.events.push_back("dealloc nogc " + std::to_string(n->id));
    cgc_object *value = n->value;
    n->value = nullptr;
    cgc_xdecref(value);
    cgc_object_del(self);
}

cgc_type nogc_type = [] {
    cgc_type t{};
    t.tp_name = "NoGc";
    t.tp_basicsize = sizeof(NoGc);
    t.tp_dealloc = nogc_dealloc;
    return t;
}();

bool is_test_obj(cgc_object *op) {
    return op->ob_type == &plain_type || op->ob_type == &final_type || op->ob_type == &legacy_type;
}

Obj *make(cgc_type *type, int id) {
    auto *o = as_obj(cgc_gc_new(type));
    if (!o) throw std::runtime_error("cgc_gc_new failed");
    o->id = id;
    cgc_gc_track(o);
    return o;
}
Obj *plain(int id) { return make(&plain_type, id); }

// from->ref[slot] = to (a new strong reference); the old one is dropped.
void set_ref(Obj *from, int slot, cgc_object *to) {
    cgc_xincref(to);
    cgc_object *old = from->ref[slot];
    from->ref[slot] = to;
    cgc_xdecref(old);
}
void set_ref(Obj *from, int slot, Obj *to) { set_ref(from, slot, to ? ob(to) : nullptr); }

void drop(Obj *o) { cgc_decref(ob(o)); }

// An object in a self-loop that nothing else refers to: garbage. Returns a
// borrowed pointer (for identity checks only, unless it is kept alive).
Obj *self_cycle_garbage(cgc_type *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    drop(o);
    return o;
}

// Two objects that refer to each other, nothing else to them.
std::pair<Obj *, Obj *> pair_garbage(cgc_type *type, int id_a, int id_b) {
    Obj *a = make(type, id_a);
    Obj *b = make(type, id_b);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    drop(a);
    drop(b);
    return {a, b};
}

int freed_count(int id) { return static_cast<int>(std::count(g_rec.freed.begin(), g_rec.freed.end(), id)); }
bool freed(int id) { return freed_count(id) > 0; }
int event_count(const std::string &event) {
    return static_cast<int>(std::count(g_rec.events.begin(), g_rec.events.end(), event));
}

std::string addr(const void *p) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%p", p);
    return buffer;
}

// ---- Lists ------------------------------------------------------------------

struct List {
    cgc_object_list list{};
    ~List() { cgc_object_list_release(&list); }
    bool contains(const void *op) const {
        for (cgc_ssize_t i = 0; i < list.count; ++i)
            if (list.items[i] == op) return true;
        return false;
    }
    std::vector<cgc_object *> items() const { return {list.items, list.items + list.count}; }
    std::set<cgc_object *> set() const { return {list.items, list.items + list.count}; }
};

List objects(int generation) {
    List l;
    EXPECT_EQ(cgc_get_objects(generation, &l.list), 0);
    return l;
}
List garbage() {
    List l;
    EXPECT_EQ(cgc_get_garbage(&l.list), 0);
    return l;
}
cgc_ssize_t tracked_count() { return objects(-1).list.count + cgc_get_freeze_count(); }

cgc_generation_stats stats(int generation) {
    cgc_generation_stats s{};
    cgc_get_stats(generation, &s);
    return s;
}

// ---- Collection callbacks and the log sink -------------------------------------

struct CallbackCall {
    int which;
    std::string phase;
    cgc_collection_info info;
};

struct Recorder {
    int which = 0;
    std::vector<CallbackCall> *calls = nullptr;
    std::function<void(const std::string &, const cgc_collection_info &)> extra;
};

void record_callback(const char *phase, const cgc_collection_info *info, void *context) {
    auto *r = static_cast<Recorder *>(context);
    r->calls->push_back({r->which, phase, *info});
    if (r->extra) r->extra(phase, *info);
}

void capture_line(const char *line, void *context) { static_cast<std::vector<std::string> *>(context)->push_back(line); }

// ---- Fixture --------------------------------------------------------------

struct ReportedError {
    cgc_error_kind kind;
    std::string message;
};

class GcModuleTest : public ::testing::Test {
  protected:
    void SetUp() override {
        g_rec = Record{};
        heap_ = cgc_heap_new();
        ASSERT_NE(heap_, nullptr);
        cgc_heap_set_current(heap_);
        cgc_set_error_hook(&GcModuleTest::on_error, this);
        initially_enabled_ = cgc_disable();
    }

    void TearDown() override {
        for (auto &[callback, context] : callbacks_) cgc_remove_collection_callback(callback, context);
        cgc_set_debug(0);
        cgc_set_log_sink(nullptr, nullptr);
        if (cgc_get_freeze_count() > 0) cgc_unfreeze();
        g_rec.on_finalize = nullptr;
        g_rec.on_del = nullptr;
        for (int round = 0; round < 3; ++round) {
            release_garbage();
            cgc_collect(2);
        }
        EXPECT_EQ(tracked_count(), 0) << "the test left tracked objects behind";
        for (auto &e : errors_) ADD_FAILURE() << "unexpected error " << e.kind << ": " << e.message;
        errors_.clear();
        cgc_heap_set_current(nullptr);
        cgc_heap_delete(heap_);
        g_rec = Record{};
    }

    // Breaks the cycles of test objects in the garbage list and empties it.
    static void release_garbage() {
        List g = garbage();
        for (cgc_object *op : g.items())
            if (is_test_obj(op)) drop_refs(as_obj(op));
        cgc_garbage_clear();
    }

    static void on_error(cgc_error_kind kind, const char *message, void *context) {
        static_cast<GcModuleTest *>(context)->errors_.push_back({kind, message});
    }

    void add_callback(cgc_collection_callback callback, void *context) {
        ASSERT_EQ(cgc_add_collection_callback(callback, context), 0);
        callbacks_.emplace_back(callback, context);
    }

    // Returns the errors of `kind` reported so far and forgets them.
    std::vector<std::string> take_errors(cgc_error_kind kind) {
        std::vector<std::string> taken;
        std::vector<ReportedError> rest;
        for (auto &e : errors_) {
            if (e.kind == kind)
                taken.push_back(e.message);
            else
                rest.push_back(e);
        }
        errors_ = rest;
        return taken;
    }

    cgc_heap *heap_ = nullptr;
    int initially_enabled_ = -1;
    std::vector<ReportedError> errors_;
    std::vector<std::pair<cgc_collection_callback, void *>> callbacks_;
};

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
    EXPECT_EQ(stats(0).collections, 1u);

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
    EXPECT_EQ(stats(0).collections + stats(1).collections + stats(2).collections, 0u);
    EXPECT_GT(cgc_get_count(0), 1000 - 1);

    cgc_enable();
    live.push_back(plain(5000));  // the count is over the threshold: collects now
    EXPECT_TRUE(freed(1));
    EXPECT_GE(stats(0).collections + stats(1).collections + stats(2).collections, 1u);
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
    EXPECT_EQ(stats(0).collections + stats(1).collections + stats(2).collections, 0u);
    EXPECT_EQ(cgc_get_count(0), 5001);
    cgc_disable();
    for (Obj *o : live) drop(o);
}

TEST_F(GcModuleTest, CollectIfEnabledIsPyGC_Collect) {
    self_cycle_garbage(&plain_type, 1);
    EXPECT_EQ(cgc_collect_if_enabled(), 0) << "PyGC_Collect does nothing while disabled";
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(stats(2).collections, 0u);
    cgc_enable();
    EXPECT_EQ(cgc_collect_if_enabled(), 1);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(stats(2).collections, 1u) << "PyGC_Collect is a full collection";
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

// ---- statistics ----------------------------------------------------------

// test_get_stats.
TEST_F(GcModuleTest, GetStatsCountsCollectionsPerGeneration) {
    cgc_collect(0);
    EXPECT_EQ(stats(0).collections, 1u);
    EXPECT_EQ(stats(1).collections, 0u);
    EXPECT_EQ(stats(2).collections, 0u);
    cgc_collect(2);
    EXPECT_EQ(stats(0).collections, 1u);
    EXPECT_EQ(stats(1).collections, 0u);
    EXPECT_EQ(stats(2).collections, 1u);
    cgc_collect(1);
    EXPECT_EQ(stats(1).collections, 1u);
    EXPECT_EQ(stats(2).collections, 1u);
}

TEST_F(GcModuleTest, GetStatsCountsCollectedUncollectableAndExamined) {
    std::vector<Obj *> live;
    for (int i = 0; i < 50; ++i) live.push_back(plain(100 + i));
    for (int i = 0; i < 3; ++i) self_cycle_garbage(&plain_type, 1 + i);
    pair_garbage(&legacy_type, 10, 11);
    cgc_collect(2);
    cgc_generation_stats s = stats(2);
    EXPECT_EQ(s.collections, 1u);
    EXPECT_EQ(s.collected, 3u);
    EXPECT_EQ(s.uncollectable, 2u);
    EXPECT_EQ(s.examined, 55u) << "every tracked object of generations 0..2 is a candidate";
    EXPECT_EQ(stats(0).examined, 0u);
    EXPECT_GE(s.total_ns, s.max_pause_ns);

    // Only generation 0 is examined by a young collection.
    Obj *young = plain(300);
    cgc_collect(0);
    EXPECT_EQ(stats(0).examined, 1u);
    EXPECT_EQ(stats(2).examined, 55u);
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
    EXPECT_EQ(stats(2).total_ns, total2);
    EXPECT_EQ(stats(2).max_pause_ns, max2);
    EXPECT_EQ(stats(0).total_ns, total0);
    EXPECT_EQ(stats(0).max_pause_ns, total0);
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
    auto getstats = [] { return std::make_pair(stats(2).collected, stats(2).uncollectable); };

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
        EXPECT_EQ(stop.duration_ns, stats(2).total_ns);
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
    EXPECT_EQ(stats(0).collections + stats(1).collections + stats(2).collections, 1u);
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
    EXPECT_EQ(stats(2).collections, 1u);

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
    EXPECT_EQ(stats(2).examined, uint64_t(n));

    cgc_freeze();
    cgc_collect(2);
    EXPECT_EQ(stats(2).examined, uint64_t(n)) << "frozen objects are not examined";

    for (int i = 0; i < 5; ++i) live.push_back(plain(n + i));
    cgc_collect(2);
    EXPECT_EQ(stats(2).examined, uint64_t(n + 5));

    cgc_unfreeze();
    cgc_collect(2);
    EXPECT_EQ(stats(2).examined, uint64_t(n + 5 + n + 5));
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
    EXPECT_TRUE(std::regex_match(lines[4], std::regex(R"(gc: done, 2 unreachable, 1 uncollectable, \d+\.\d{4}s elapsed)")))
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
    EXPECT_EQ(stats(2).uncollectable, 1u);
    EXPECT_EQ(stats(2).collected, 1u);

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
    EXPECT_EQ(stats(2).uncollectable, 0u);
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
    EXPECT_EQ(stats(0).collections + stats(2).collections, 1u);
}

}  // namespace
