// Weak references (CPython's `weakref.ref` and its C API): creation, the
// referent, callbacks at reference-counting death and PyObject_ClearWeakRefs,
// and their interplay with the collector (CPython's handle_weakrefs): weak
// references to garbage are cleared before any finalizer or tp_clear runs,
// callbacks run only for weak references that are themselves reachable, and
// a callback may resurrect objects (through its C context) or create garbage.
//
// Every test runs on a fresh heap with automatic collection disabled, and
// checks in TearDown that it left no tracked object behind and that no
// unexpected error was reported.
#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

// ---- Test object types ---------------------------------------------------

struct Obj {
    cgc_object ob_base;
    cgc_object *ref[3];
    int id;
    int clears;
    int finalizes;
};

struct Record {
    std::vector<std::string> events;  // "finalize 1", "clear 1", "dealloc 1", "wrcb 7", ...
    std::vector<int> freed;
    std::function<void(Obj *)> on_finalize;
    std::vector<cgc_object *> quarantine;  // "freed" AutoFinal objects whose memory is kept
};
Record g_rec;

Obj *as_obj(cgc_object *op) { return reinterpret_cast<Obj *>(op); }
cgc_object *ob(Obj *o) { return &o->ob_base; }
void note(const char *what, int id) { g_rec.events.push_back(std::string(what) + " " + std::to_string(id)); }

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
    note("clear", o->id);
    drop_refs(o);
    return 0;
}

void free_obj(cgc_object *self) {
    cgc_gc_untrack(self);
    Obj *o = as_obj(self);
    note("dealloc", o->id);
    g_rec.freed.push_back(o->id);
    drop_refs(o);
    cgc_gc_del(self);
}

void plain_dealloc(cgc_object *self) { free_obj(self); }

void obj_finalize(cgc_object *self) {
    Obj *o = as_obj(self);
    o->finalizes++;
    note("finalize", o->id);
    if (g_rec.on_finalize) g_rec.on_finalize(o);
}

// A C type with tp_finalize and its own tp_dealloc, as in CPython.
void final_dealloc(cgc_object *self) {
    if (cgc_call_finalizer_from_dealloc(self) < 0) return;  // resurrected
    free_obj(self);
}

// tp_free of AutoFinal: the object's memory is kept until the test ends, so
// that a weak reference left pointing to it cannot touch freed memory.
void quarantine_free(void *memory) {
    auto *op = static_cast<cgc_object *>(memory);
    note("dealloc", as_obj(op)->id);
    g_rec.freed.push_back(as_obj(op)->id);
    g_rec.quarantine.push_back(op);
}

void legacy_del(cgc_object *self) { note("del", as_obj(self)->id); }

void legacy_dealloc(cgc_object *self) {
    self->ob_refcnt = 1;
    legacy_del(self);
    if (--self->ob_refcnt != 0) return;
    free_obj(self);
}

cgc_type make_type(const char *name, cgc_destructor dealloc, cgc_destructor finalize) {
    cgc_type t{};
    t.tp_name = name;
    t.tp_basicsize = sizeof(Obj);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_dealloc = dealloc;
    t.tp_traverse = obj_traverse;
    t.tp_clear = obj_clear;
    t.tp_finalize = finalize;
    return t;
}

cgc_type plain_type = make_type("Plain", plain_dealloc, nullptr);
cgc_type final_type = make_type("Final", final_dealloc, obj_finalize);
// No tp_dealloc: cyclegc's default dealloc (untrack, finalize, clear, tp_free).
cgc_type auto_final_type = [] {
    cgc_type t = make_type("AutoFinal", nullptr, obj_finalize);
    t.tp_free = quarantine_free;
    return t;
}();
cgc_type legacy_type = [] {
    cgc_type t = make_type("Legacy", legacy_dealloc, nullptr);
    t.tp_del = legacy_del;
    return t;
}();

// CPython's ContainerNoGC: holds a reference the collector cannot see.
struct NoGc {
    cgc_object ob_base;
    cgc_object *value;
};

void nogc_dealloc(cgc_object *self) {
    auto *n = reinterpret_cast<NoGc *>(self);
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

Obj *make(cgc_type *type, int id) {
    auto *o = as_obj(cgc_gc_new(type));
    if (!o) throw std::runtime_error("cgc_gc_new failed");
    o->id = id;
    cgc_gc_track(o);
    return o;
}
Obj *plain(int id) { return make(&plain_type, id); }

void set_ref(Obj *from, int slot, cgc_object *to) {
    cgc_xincref(to);
    cgc_object *old = from->ref[slot];
    from->ref[slot] = to;
    cgc_xdecref(old);
}
void set_ref(Obj *from, int slot, Obj *to) { set_ref(from, slot, to ? ob(to) : nullptr); }
void drop(Obj *o) { cgc_decref(ob(o)); }

Obj *self_cycle(cgc_type *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    return o;
}

bool freed(int id) { return std::count(g_rec.freed.begin(), g_rec.freed.end(), id) > 0; }
int event_count(const std::string &e) {
    return static_cast<int>(std::count(g_rec.events.begin(), g_rec.events.end(), e));
}
int event_index(const std::string &e) {
    auto it = std::find(g_rec.events.begin(), g_rec.events.end(), e);
    return it == g_rec.events.end() ? -1 : static_cast<int>(it - g_rec.events.begin());
}

// ---- Weak reference callbacks -----------------------------------------------

// Each weak reference under test gets a Probe as its callback's context.
struct Probe {
    int id = 0;
    int calls = 0;
    cgc_object *weakref_seen = nullptr;  // the argument of the last call
    int dead_when_called = -1;           // cgc_weakref_get returned NULL inside
    std::function<void(cgc_object *)> hook;
};

void probe_callback(cgc_object *weakref, void *context) {
    auto *p = static_cast<Probe *>(context);
    p->calls++;
    p->weakref_seen = weakref;
    cgc_object *referent = cgc_weakref_get(weakref);
    p->dead_when_called = referent == nullptr;
    cgc_xdecref(referent);
    note("wrcb", p->id);
    if (p->hook) p->hook(weakref);
}

cgc_object *weakref(Obj *o, Probe *probe) { return cgc_weakref_new(ob(o), probe ? probe_callback : nullptr, probe); }

bool is_dead(cgc_object *wr) {
    cgc_object *referent = nullptr;
    int r = cgc_weakref_get_ref(wr, &referent);
    cgc_xdecref(referent);
    return r == 0;
}

// ---- Fixture --------------------------------------------------------------

struct ReportedError {
    cgc_error_kind kind;
    std::string message;
};

class WeakrefTest : public ::testing::Test {
  protected:
    void SetUp() override {
        g_rec.events.clear();
        g_rec.freed.clear();
        g_rec.on_finalize = nullptr;
        heap_ = cgc_heap_new();
        ASSERT_NE(heap_, nullptr);
        cgc_heap_set_current(heap_);
        cgc_set_error_hook(&WeakrefTest::on_error, this);
        cgc_disable();
    }

    void TearDown() override {
        g_rec.on_finalize = nullptr;
        cgc_set_debug(0);
        for (int round = 0; round < 3; ++round) {
            cgc_object_list g{};
            cgc_get_garbage(&g);
            for (cgc_ssize_t i = 0; i < g.count; ++i)
                if (g.items[i]->ob_type == &legacy_type) drop_refs(as_obj(g.items[i]));
            cgc_garbage_clear();
            cgc_object_list_release(&g);
            cgc_collect(2);
        }
        cgc_object_list all{};
        cgc_get_objects(-1, &all);
        EXPECT_EQ(all.count, 0) << "the test left tracked objects behind";
        cgc_object_list_release(&all);
        for (auto &e : errors_) ADD_FAILURE() << "unexpected error " << e.kind << ": " << e.message;
        errors_.clear();
        for (cgc_object *op : g_rec.quarantine) cgc_gc_del(op);
        cgc_heap_set_current(nullptr);
        cgc_heap_delete(heap_);
        g_rec = Record{};
    }

    static void on_error(cgc_error_kind kind, const char *message, void *context) {
        static_cast<WeakrefTest *>(context)->errors_.push_back({kind, message});
    }

    std::vector<std::string> take_errors(cgc_error_kind kind) {
        std::vector<std::string> taken;
        std::vector<ReportedError> rest;
        for (auto &e : errors_) (e.kind == kind ? (void)taken.push_back(e.message) : rest.push_back(e));
        errors_ = rest;
        return taken;
    }

    cgc_heap *heap_ = nullptr;
    std::vector<ReportedError> errors_;
};

// ---- Creation and the referent --------------------------------------------------

TEST_F(WeakrefTest, GetReturnsANewReferenceToTheReferentWhileItLives) {
    Obj *a = plain(1);
    cgc_object *wr = weakref(a, nullptr);
    ASSERT_NE(wr, nullptr);
    EXPECT_EQ(cgc_weakref_check(wr), 1);
    EXPECT_EQ(cgc_weakref_check(ob(a)), 0);
    EXPECT_EQ(cgc_weakref_check(nullptr), 0);
    EXPECT_EQ(ob(a)->ob_refcnt, 1) << "a weak reference owns no reference";
    EXPECT_EQ(cgc_gc_is_tracked(wr), 1) << "weak references are tracked GC objects";
    cgc_object *got = cgc_weakref_get(wr);
    EXPECT_EQ(got, ob(a));
    EXPECT_EQ(ob(a)->ob_refcnt, 2);
    cgc_decref(got);
    drop(a);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(cgc_weakref_get(wr), nullptr);
    cgc_decref(wr);
}

// PyWeakref_GetRef: 1 and a new reference, 0 and NULL, or -1 with an error.
TEST_F(WeakrefTest, GetRefReturnsOneZeroOrMinusOne) {
    Obj *a = plain(1);
    cgc_object *wr = weakref(a, nullptr);
    cgc_object *out = nullptr;
    EXPECT_EQ(cgc_weakref_get_ref(wr, &out), 1);
    EXPECT_EQ(out, ob(a));
    cgc_decref(out);
    drop(a);
    out = ob(a);  // garbage in, NULL out
    EXPECT_EQ(cgc_weakref_get_ref(wr, &out), 0);
    EXPECT_EQ(out, nullptr);

    Obj *not_a_weakref = plain(2);
    out = wr;
    EXPECT_EQ(cgc_weakref_get_ref(ob(not_a_weakref), &out), -1);
    EXPECT_EQ(out, nullptr);
    EXPECT_EQ(cgc_weakref_get_ref(nullptr, &out), -1);
    EXPECT_EQ(take_errors(CGC_ERR_TYPE).size(), 2u);
    drop(not_a_weakref);
    cgc_decref(wr);
}

TEST_F(WeakrefTest, OnlyGcObjectsCanBeWeaklyReferenced) {
    auto *nogc = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    EXPECT_EQ(cgc_weakref_new(&nogc->ob_base, nullptr, nullptr), nullptr);
    EXPECT_EQ(take_errors(CGC_ERR_TYPE).size(), 1u);
    EXPECT_EQ(cgc_weakref_new(nullptr, nullptr, nullptr), nullptr);
    EXPECT_EQ(take_errors(CGC_ERR_MISUSE).size(), 1u);
    cgc_decref(&nogc->ob_base);
    // A weak reference to a weak reference (a GC object) is fine.
    Obj *a = plain(1);
    cgc_object *wr = weakref(a, nullptr);
    cgc_object *wrwr = cgc_weakref_new(wr, nullptr, nullptr);
    ASSERT_NE(wrwr, nullptr);
    cgc_decref(wr);
    EXPECT_TRUE(is_dead(wrwr));
    cgc_decref(wrwr);
    drop(a);
}

// As weakref.ref(o) is weakref.ref(o) in CPython.
TEST_F(WeakrefTest, CallbacklessWeakrefsAreSharedAndCounted) {
    Obj *a = plain(1);
    Probe p1, p2;
    cgc_object *w1 = weakref(a, nullptr);
    cgc_object *w2 = weakref(a, nullptr);
    EXPECT_EQ(w1, w2);
    EXPECT_EQ(w1->ob_refcnt, 2);
    cgc_object *c1 = weakref(a, &p1);
    cgc_object *c2 = weakref(a, &p2);
    EXPECT_NE(c1, w1);
    EXPECT_NE(c1, c2);
    EXPECT_EQ(cgc_weakref_count(ob(a)), 3) << "getweakrefcount counts weak reference objects";
    cgc_decref(c2);
    EXPECT_EQ(cgc_weakref_count(ob(a)), 2);
    EXPECT_EQ(p2.calls, 0) << "a weak reference that dies first never calls back";
    cgc_decref(w1);
    cgc_decref(w2);
    EXPECT_EQ(cgc_weakref_count(ob(a)), 1);
    drop(a);
    EXPECT_EQ(p1.calls, 1);
    EXPECT_EQ(p2.calls, 0);
    EXPECT_EQ(cgc_weakref_count(nullptr), 0);
    cgc_decref(c1);
}

// ---- Reference-counting death and PyObject_ClearWeakRefs ------------------------

TEST_F(WeakrefTest, ReferenceCountingDeathClearsAndCallsBackAtOnce) {
    Obj *a = plain(1);
    Probe older{6}, probe{7};
    // Made in this order so that a library that calls back while detaching
    // one weak reference at a time would be caught.
    cgc_object *w_older = weakref(a, &older);
    cgc_object *basic = weakref(a, nullptr);
    cgc_object *wr = weakref(a, &probe);
    int count_inside = -1;
    int basic_dead_inside = -1;
    int older_dead_inside = -1;
    probe.hook = [&](cgc_object *) {
        count_inside = static_cast<int>(cgc_weakref_count(ob(a)));
        basic_dead_inside = is_dead(basic);
        older_dead_inside = is_dead(w_older);
    };
    drop(a);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_EQ(older.calls, 1);
    EXPECT_EQ(older_dead_inside, 1);
    EXPECT_EQ(probe.weakref_seen, wr) << "the callback gets the weak reference";
    EXPECT_EQ(probe.dead_when_called, 1) << "already cleared when called";
    EXPECT_EQ(basic_dead_inside, 1) << "every weak reference is cleared before any callback";
    EXPECT_EQ(count_inside, 0);
    EXPECT_LT(event_index("wrcb 7"), event_index("dealloc 1")) << "callbacks run before the object is destroyed";
    EXPECT_TRUE(is_dead(wr));
    cgc_decref(wr);
    cgc_decref(basic);
    cgc_decref(w_older);
}

// PyObject_ClearWeakRefs visits the list in order: the newest callback first.
TEST_F(WeakrefTest, CallbacksRunNewestFirst) {
    Obj *a = plain(1);
    Probe p[3] = {{1}, {2}, {3}};
    cgc_object *w[3];
    for (int i = 0; i < 3; ++i) w[i] = weakref(a, &p[i]);
    drop(a);
    std::vector<std::string> order(g_rec.events.begin(), g_rec.events.begin() + 3);
    EXPECT_EQ(order, (std::vector<std::string>{"wrcb 3", "wrcb 2", "wrcb 1"}));
    for (auto &probe : p) EXPECT_EQ(probe.calls, 1);
    for (cgc_object *x : w) cgc_decref(x);
}

TEST_F(WeakrefTest, ClearWeakRefsCallsBackAndLeavesTheObjectAlive) {
    Obj *a = plain(1);
    Probe probe{1};
    cgc_object *wr = weakref(a, &probe);
    cgc_object *basic = weakref(a, nullptr);
    cgc_clear_weakrefs(ob(a));
    EXPECT_EQ(probe.calls, 1);
    EXPECT_TRUE(is_dead(wr));
    EXPECT_TRUE(is_dead(basic));
    EXPECT_EQ(cgc_weakref_count(ob(a)), 0);
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(ob(a)->ob_refcnt, 1);
    cgc_clear_weakrefs(ob(a));  // nothing left to clear
    cgc_clear_weakrefs(nullptr);
    EXPECT_EQ(probe.calls, 1);
    drop(a);
    EXPECT_EQ(probe.calls, 1) << "not called again at death";
    cgc_decref(wr);
    cgc_decref(basic);
}

TEST_F(WeakrefTest, CallbackMayReleaseItsWeakref) {
    Obj *a = plain(1);
    Probe probe{1};
    cgc_object *holder = weakref(a, &probe);
    probe.hook = [&](cgc_object *wr) {
        EXPECT_EQ(wr, holder);
        cgc_object *w = holder;
        holder = nullptr;
        cgc_decref(w);  // the last reference but the one held for the call
    };
    drop(a);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_EQ(holder, nullptr);
}

TEST_F(WeakrefTest, CallbackExceptionAtDeathIsUnraisable) {
    Obj *a = plain(1);
    Probe thrower{1}, other{2};
    thrower.hook = [](cgc_object *) { throw std::runtime_error("callback failed"); };
    cgc_object *w_other = weakref(a, &other);
    cgc_object *w_thrower = weakref(a, &thrower);  // newest: called first
    drop(a);
    EXPECT_EQ(thrower.calls, 1);
    EXPECT_EQ(other.calls, 1) << "the other callbacks still run";
    EXPECT_TRUE(freed(1));
    auto unraisable = take_errors(CGC_ERR_UNRAISABLE);
    ASSERT_EQ(unraisable.size(), 1u);
    EXPECT_NE(unraisable[0].find("callback failed"), std::string::npos) << unraisable[0];
    cgc_decref(w_other);
    cgc_decref(w_thrower);
}

// test_finalization's test_simple_resurrect: a finalizer run at reference-
// counting death resurrects the object; its weak references stay alive
// (CPython's subtype_dealloc clears them only after the finalizer, and not
// at all when the object was resurrected).
TEST_F(WeakrefTest, ResurrectionAtReferenceCountingDeathKeepsWeakrefsAlive) {
    cgc_object *lazarus = nullptr;
    g_rec.on_finalize = [&](Obj *o) {
        cgc_incref(ob(o));
        lazarus = ob(o);
    };
    Obj *a = make(&final_type, 1);
    Probe probe{1};
    cgc_object *wr = weakref(a, &probe);
    cgc_object *basic = weakref(a, nullptr);
    drop(a);
    ASSERT_EQ(lazarus, ob(a)) << "the finalizer ran and resurrected the object";
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(probe.calls, 0) << "the object did not die";
    EXPECT_FALSE(is_dead(basic));
    EXPECT_FALSE(is_dead(wr));
    g_rec.on_finalize = nullptr;
    cgc_decref(lazarus);  // dies for good: the finalizer does not run again
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(event_count("finalize 1"), 1);
    EXPECT_TRUE(is_dead(basic));
    EXPECT_TRUE(is_dead(wr));
    EXPECT_EQ(probe.calls, 1) << "called once, when the object really dies";
    cgc_decref(wr);
    cgc_decref(basic);
}

// A weak reference made by the finalizer that runs at reference-counting
// death (cyclegc's default dealloc) must not outlive its referent: CPython's
// subtype_dealloc clears weak references after the finalizer.
TEST_F(WeakrefTest, WeakrefCreatedByAFinalizerAtDeathIsClearedWithTheObject) {
    Probe probe{1};
    cgc_object *made = nullptr;
    g_rec.on_finalize = [&](Obj *o) { made = weakref(o, &probe); };
    Obj *a = make(&auto_final_type, 1);
    drop(a);
    ASSERT_NE(made, nullptr);
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(probe.calls, 1) << "the weak reference must be cleared (and call back) when the object dies";
    // (Its referent's memory is quarantined, so checking it is safe even if
    // the library left it dangling.)
    EXPECT_EQ(cgc_weakref_count(ob(a)), 0) << "weak reference still attached to a freed object";
    cgc_decref(made);
}

// ---- Weak references during a collection ---------------------------------------

TEST_F(WeakrefTest, ReachableWeakrefToGarbageIsClearedAndCallsBackOnce) {
    Obj *a = self_cycle(&plain_type, 1);
    Probe probe{1};
    cgc_object *wr = weakref(a, &probe);
    cgc_object *basic = weakref(a, nullptr);
    drop(a);
    EXPECT_EQ(probe.calls, 0);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_EQ(probe.weakref_seen, wr);
    EXPECT_EQ(probe.dead_when_called, 1);
    EXPECT_TRUE(is_dead(wr));
    EXPECT_TRUE(is_dead(basic));
    EXPECT_TRUE(freed(1));
    cgc_decref(wr);
    cgc_decref(basic);
}

// test_bug1055820b: the callbacks see the weak references already dead.
TEST_F(WeakrefTest, Bug1055820b) {
    std::vector<cgc_object *> results;
    cgc_object *wrs[2];
    Probe probes[2] = {{0}, {1}};
    Obj *cs[2];
    for (int i = 0; i < 2; ++i) {
        cs[i] = self_cycle(&plain_type, i);
        probes[i].hook = [&](cgc_object *) {
            results.clear();
            for (cgc_object *w : wrs) results.push_back(cgc_weakref_get(w));
        };
        wrs[i] = weakref(cs[i], &probes[i]);
    }
    cgc_collect(2);
    EXPECT_EQ(probes[0].calls + probes[1].calls, 0);
    for (Obj *c : cs) drop(c);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(probes[0].calls, 1);
    EXPECT_EQ(probes[1].calls, 1);
    ASSERT_EQ(results.size(), 2u);
    for (cgc_object *r : results) EXPECT_EQ(r, nullptr) << "a callback materialized a garbage object";
    for (cgc_object *r : results) cgc_xdecref(r);
    for (cgc_object *w : wrs) cgc_decref(w);
}

// test_trash_weakref_clear (bpo-38006): Z <- Y <- A (self-loop) -> WZ, where
// Y does not take part in GC and WZ (callback) is also kept by a second
// cycle. All of it is garbage; the callback must never run.
TEST_F(WeakrefTest, TrashWeakrefIsClearedBeforeItsHiddenReferentDies) {
    Probe callback{1};
    Obj *a = self_cycle(&plain_type, 1);
    auto *y = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    Obj *z = plain(2);
    y->value = ob(z);  // steals our reference to z
    set_ref(a, 1, &y->ob_base);
    cgc_decref(&y->ob_base);
    cgc_object *wz = weakref(z, &callback);
    set_ref(a, 2, wz);
    Obj *wr_cycle = self_cycle(&plain_type, 3);
    set_ref(wr_cycle, 1, wz);
    cgc_decref(wz);
    cgc_collect(2);
    EXPECT_EQ(callback.calls, 0);
    drop(a);
    drop(wr_cycle);
    EXPECT_EQ(cgc_collect(2), 3) << "A, WZ and the second cycle (Y and Z are not candidates)";
    EXPECT_TRUE(freed(1) && freed(2) && freed(3));
    EXPECT_EQ(callback.calls, 0) << "a weak reference that is garbage itself must never call back";
}

TEST_F(WeakrefTest, GarbageWeakrefToGarbageNeverCallsBack) {
    Probe probe{1};
    Obj *a = self_cycle(&plain_type, 1);
    cgc_object *wr = weakref(a, &probe);
    set_ref(a, 1, wr);  // the weak reference is only reachable from the garbage
    cgc_decref(wr);
    drop(a);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(probe.calls, 0);
    EXPECT_TRUE(freed(1));
}

// A weak reference that is garbage itself is cleared before any finalizer
// runs (CPython's handle_weakrefs clears trash weakrefs first): here a
// finalizer lets the referent die, which must not call the weak reference
// back.
TEST_F(WeakrefTest, TrashWeakrefIsClearedBeforeFinalizersRun) {
    Probe probe{1};
    Obj *f = self_cycle(&final_type, 1);
    auto *y = reinterpret_cast<NoGc *>(cgc_object_new(&nogc_type));
    Obj *r = plain(2);
    y->value = ob(r);  // steals
    set_ref(f, 1, &y->ob_base);
    cgc_decref(&y->ob_base);
    cgc_object *w = weakref(r, &probe);
    set_ref(f, 2, w);
    cgc_decref(w);
    g_rec.on_finalize = [](Obj *self) { set_ref(self, 1, static_cast<cgc_object *>(nullptr)); };
    drop(f);
    EXPECT_EQ(cgc_collect(2), 2) << "f and its weak reference";
    EXPECT_TRUE(freed(1) && freed(2));
    EXPECT_EQ(probe.calls, 0) << "a weak reference that is garbage itself must never call back";
}

// handle_weakrefs runs before finalize_garbage and delete_garbage: every
// callback runs while every garbage object is intact, and a finalizer sees
// weak references to garbage already dead (CPython <= 3.13).
TEST_F(WeakrefTest, WeakrefsToGarbageAreClearedBeforeAnyFinalizerOrClear) {
    Obj *f = make(&final_type, 1);
    Obj *p = plain(2);
    set_ref(f, 0, p);
    set_ref(p, 0, f);
    Probe pf{10}, pp{20};
    cgc_object *wf = weakref(f, &pf);
    cgc_object *wp = weakref(p, &pp);
    cgc_object *basic_p = weakref(p, nullptr);
    std::vector<int> intact_in_callbacks;
    auto check_intact = [&](cgc_object *) {
        intact_in_callbacks.push_back(f->clears == 0 && p->clears == 0 && f->finalizes == 0 && f->ref[0] == ob(p) &&
                                      p->ref[0] == ob(f));
    };
    pf.hook = check_intact;
    pp.hook = check_intact;
    int basic_dead_in_finalizer = -1;
    g_rec.on_finalize = [&](Obj *) { basic_dead_in_finalizer = is_dead(basic_p); };
    drop(f);
    drop(p);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(pf.calls, 1);
    EXPECT_EQ(pp.calls, 1);
    EXPECT_EQ(intact_in_callbacks, (std::vector<int>{1, 1}));
    EXPECT_EQ(basic_dead_in_finalizer, 1);
    int last_callback = std::max(event_index("wrcb 10"), event_index("wrcb 20"));
    EXPECT_LT(last_callback, event_index("finalize 1"));
    EXPECT_LT(event_index("finalize 1"), std::min(event_index("clear 1") < 0 ? 1 << 30 : event_index("clear 1"),
                                                   event_index("clear 2") < 0 ? 1 << 30 : event_index("clear 2")));
    EXPECT_TRUE(freed(1) && freed(2));
    for (cgc_object *w : {wf, wp, basic_p}) cgc_decref(w);
}

// test_bug1055820c: c0 (old) is kept alive only by the young self-cycle c1;
// c2 is a young self-cycle with a callback-less weak reference; the callback
// of c0's weak reference reads c2's. Collecting generation 0 clears c1, c0
// dies by reference counting, its callback runs: c2 must look dead.
TEST_F(WeakrefTest, Bug1055820c) {
    Obj *c0 = self_cycle(&plain_type, 0);
    cgc_collect(2);  // c0 is old now
    Obj *c1 = self_cycle(&plain_type, 1);
    set_ref(c1, 1, c0);
    set_ref(c0, 0, static_cast<cgc_object *>(nullptr));  // now only c1 keeps c0 alive
    Obj *c2 = self_cycle(&plain_type, 2);
    cgc_object *c2wr = weakref(c2, nullptr);
    std::vector<cgc_object *> ouch;
    Probe probe{0};
    probe.hook = [&](cgc_object *) { ouch.push_back(cgc_weakref_get(c2wr)); };
    cgc_object *c0wr = weakref(c0, &probe);
    drop(c0);
    drop(c1);
    drop(c2);
    EXPECT_EQ(cgc_collect(0), 2);
    ASSERT_EQ(ouch.size(), 1u) << "the callback was not invoked";
    EXPECT_EQ(ouch[0], nullptr) << "the callback resurrected c2";
    cgc_xdecref(ouch[0]);
    EXPECT_TRUE(freed(0) && freed(1) && freed(2));
    cgc_decref(c0wr);
    cgc_decref(c2wr);
}

// test_bug1055820d: the same with a finalizer on d0 instead of a callback.
TEST_F(WeakrefTest, Bug1055820d) {
    Obj *d0 = self_cycle(&final_type, 0);
    cgc_collect(2);
    Obj *c1 = self_cycle(&plain_type, 1);
    set_ref(c1, 1, d0);
    set_ref(d0, 0, static_cast<cgc_object *>(nullptr));
    Obj *c2 = self_cycle(&plain_type, 2);
    cgc_object *c2wr = weakref(c2, nullptr);
    std::vector<cgc_object *> ouch;
    g_rec.on_finalize = [&](Obj *) { ouch.push_back(cgc_weakref_get(c2wr)); };
    drop(d0);
    drop(c1);
    drop(c2);
    EXPECT_EQ(cgc_collect(0), 2);
    ASSERT_EQ(ouch.size(), 1u) << "the finalizer was not invoked";
    EXPECT_EQ(ouch[0], nullptr);
    cgc_xdecref(ouch[0]);
    EXPECT_TRUE(freed(0) && freed(1) && freed(2));
    cgc_decref(c2wr);
}

// A callback that resurrects garbage through its C context (something a
// Python callback cannot do): the resurrected object and everything it
// reaches survive intact; the rest is collected; the return value and the
// statistics count only what was freed.
TEST_F(WeakrefTest, CallbackThatResurrectsThroughItsContextKeepsTheObjectIntact) {
    Obj *x = self_cycle(&plain_type, 1);
    Obj *x_child = plain(2);
    set_ref(x, 1, x_child);
    set_ref(x_child, 0, x);
    Obj *z = self_cycle(&plain_type, 3);
    Probe probe{1};
    cgc_object *kept = nullptr;
    probe.hook = [&](cgc_object *) {
        cgc_incref(ob(x));  // x is garbage: only this borrowed pointer leads to it
        kept = ob(x);
    };
    cgc_object *wz = weakref(z, &probe);
    drop(x);
    drop(x_child);
    drop(z);
    EXPECT_EQ(cgc_collect(2), 1) << "only z was freed";
    EXPECT_EQ(probe.calls, 1);
    ASSERT_EQ(kept, ob(x));
    EXPECT_TRUE(freed(3));
    EXPECT_FALSE(freed(1));
    EXPECT_FALSE(freed(2));
    EXPECT_EQ(x->clears + x_child->clears, 0) << "a resurrected object is not cleared";
    EXPECT_EQ(x->ref[0], ob(x));
    EXPECT_EQ(x->ref[1], ob(x_child));
    EXPECT_EQ(x_child->ref[0], ob(x));
    cgc_generation_stats s{};
    cgc_get_stats(2, &s);
    EXPECT_EQ(s.collected, 1u);
    cgc_decref(kept);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_TRUE(freed(1) && freed(2));
    cgc_decref(wz);
}

// A callback that creates new garbage: it is not part of the running
// collection (it was not a candidate), and the next collection frees it.
TEST_F(WeakrefTest, CallbackThatCreatesGarbageLeavesItForTheNextCollection) {
    Obj *z = self_cycle(&plain_type, 1);
    Probe probe{1};
    probe.hook = [](cgc_object *) {
        Obj *n = self_cycle(&plain_type, 100);
        Obj *m = plain(101);
        set_ref(n, 1, m);
        drop(m);
        drop(n);
    };
    cgc_object *wz = weakref(z, &probe);
    drop(z);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_TRUE(freed(1));
    EXPECT_FALSE(freed(100));
    EXPECT_FALSE(freed(101));
    EXPECT_EQ(cgc_collect(2), 2) << "n and m";
    EXPECT_TRUE(freed(100) && freed(101));
    cgc_decref(wz);
}

TEST_F(WeakrefTest, CallbackRequestingACollectionGetsZero) {
    Obj *z = self_cycle(&plain_type, 1);
    Probe probe{1};
    std::vector<cgc_ssize_t> nested;
    probe.hook = [&](cgc_object *) {
        nested.push_back(cgc_collect(2));
        nested.push_back(cgc_collect(0));
    };
    cgc_object *wz = weakref(z, &probe);
    drop(z);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(nested, (std::vector<cgc_ssize_t>{0, 0}));
    EXPECT_TRUE(freed(1));
    cgc_decref(wz);
}

TEST_F(WeakrefTest, CallbackExceptionDuringACollectionIsUnraisable) {
    Obj *z = self_cycle(&plain_type, 1);
    Obj *y = self_cycle(&plain_type, 2);
    Probe thrower{1}, other{2};
    thrower.hook = [](cgc_object *) { throw std::runtime_error("callback failed in gc"); };
    cgc_object *wz = weakref(z, &thrower);
    cgc_object *wy = weakref(y, &other);
    drop(z);
    drop(y);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(thrower.calls, 1);
    EXPECT_EQ(other.calls, 1);
    EXPECT_TRUE(freed(1) && freed(2));
    auto unraisable = take_errors(CGC_ERR_UNRAISABLE);
    ASSERT_EQ(unraisable.size(), 1u);
    EXPECT_NE(unraisable[0].find("callback failed in gc"), std::string::npos);
    EXPECT_EQ(cgc_is_collecting(), 0);
    cgc_decref(wz);
    cgc_decref(wy);
}

// CPython's handle_weakrefs counts a weak reference freed right after its
// callback (it was reachable, so not counted otherwise) as collected.
TEST_F(WeakrefTest, WeakrefFreedByItsOwnCallbackCountsAsCollected) {
    Obj *z = self_cycle(&plain_type, 1);
    Probe probe{1};
    cgc_object *holder = weakref(z, &probe);
    probe.hook = [&](cgc_object *) {
        cgc_object *w = holder;
        holder = nullptr;
        cgc_decref(w);
    };
    drop(z);
    EXPECT_EQ(cgc_collect(2), 2) << "z, and the weak reference its callback freed";
    EXPECT_EQ(probe.calls, 1);
    cgc_generation_stats s{};
    cgc_get_stats(2, &s);
    EXPECT_EQ(s.collected, 2u);
}

// gh-91636: a weak reference made by a finalizer to other garbage is
// cleared (without calling back) before any tp_clear, as CPython 3.14's
// clear_weakrefs does.
TEST_F(WeakrefTest, WeakrefMadeByAFinalizerDuringACollectionIsClearedBeforeClear) {
    Obj *f = make(&final_type, 1);
    Obj *b = plain(2);
    set_ref(f, 0, b);
    set_ref(b, 0, f);
    Probe probe{2};
    cgc_object *made = nullptr;
    g_rec.on_finalize = [&](Obj *) { made = weakref(b, &probe); };
    drop(f);
    drop(b);
    EXPECT_EQ(cgc_collect(2), 2);
    ASSERT_NE(made, nullptr);
    EXPECT_TRUE(is_dead(made));
    EXPECT_EQ(probe.calls, 0) << "its callback must not see a half-cleared object";
    EXPECT_TRUE(freed(1) && freed(2));
    cgc_decref(made);
}

// CPython <= 3.13 (the semantics cyclegc follows): every weak reference to
// garbage is cleared before the finalizers run, so those of an object that
// its finalizer resurrects are dead afterwards, callbacks having run.
TEST_F(WeakrefTest, WeakrefsToAnObjectResurrectedByTheCollectorAreDead) {
    cgc_object *lazarus = nullptr;
    g_rec.on_finalize = [&](Obj *o) {
        cgc_incref(ob(o));
        lazarus = ob(o);
    };
    Obj *a = self_cycle(&final_type, 1);
    Probe probe{1};
    cgc_object *wr = weakref(a, &probe);
    cgc_object *basic = weakref(a, nullptr);
    drop(a);
    EXPECT_EQ(cgc_collect(2), 0);
    ASSERT_EQ(lazarus, ob(a));
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(probe.calls, 1);
    EXPECT_TRUE(is_dead(wr));
    EXPECT_TRUE(is_dead(basic));
    EXPECT_EQ(cgc_weakref_count(lazarus), 0);
    g_rec.on_finalize = nullptr;
    cgc_decref(lazarus);
    EXPECT_EQ(cgc_collect(2), 1);
    cgc_decref(wr);
    cgc_decref(basic);
}

// test_finalization's legacy self-cycle: uncollectable, in the garbage list,
// its weak reference still alive.
TEST_F(WeakrefTest, WeakrefsToUncollectableObjectsStayAlive) {
    Obj *l = self_cycle(&legacy_type, 1);
    Probe probe{1};
    cgc_object *wr = weakref(l, &probe);
    drop(l);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(cgc_garbage_count(), 1);
    EXPECT_EQ(probe.calls, 0);
    EXPECT_FALSE(is_dead(wr));
    cgc_object *got = cgc_weakref_get(wr);
    EXPECT_EQ(got, ob(l));
    cgc_xdecref(got);
    // Break the cycle and empty the garbage list: it dies, the callback runs.
    set_ref(l, 0, static_cast<cgc_object *>(nullptr));
    cgc_garbage_clear();
    EXPECT_TRUE(freed(1));
    EXPECT_EQ(probe.calls, 1);
    cgc_decref(wr);
}

// DEBUG_SAVEALL keeps the objects, but the weak references to them are
// cleared (and their callbacks run) as for any garbage, as in CPython.
TEST_F(WeakrefTest, SaveAllStillClearsWeakrefsToTheSavedObjects) {
    cgc_set_debug(CGC_DEBUG_SAVEALL);
    Obj *a = self_cycle(&plain_type, 1);
    Probe probe{1};
    cgc_object *wr = weakref(a, &probe);
    drop(a);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_FALSE(freed(1));
    EXPECT_EQ(cgc_garbage_count(), 1);
    EXPECT_EQ(probe.calls, 1);
    EXPECT_TRUE(is_dead(wr));
    cgc_set_debug(0);
    cgc_decref(wr);
}

}  // namespace
