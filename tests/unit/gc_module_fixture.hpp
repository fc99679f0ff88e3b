// The fixture and test object types of the gc module's tests
// (gc_module_*_test.cpp).
//
// Every test runs on a fresh heap (so settings, statistics, callbacks and the
// garbage list start from scratch), with automatic collection disabled as in
// test_gc.py, and checks in TearDown that it left no tracked object behind
// and that no unexpected error was reported.
#pragma once

#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gc_module_test {

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
inline Record g_rec;

inline Obj *as_obj(cgc_object *op) { return reinterpret_cast<Obj *>(op); }
inline cgc_object *ob(Obj *o) { return &o->ob_base; }

inline void note(const char *what, const Obj *o) { g_rec.events.push_back(std::string(what) + " " + std::to_string(o->id)); }

inline int obj_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    for (cgc_object *r : as_obj(self)->ref) {
        if (r) {
            if (int v = visit(r, arg)) return v;
        }
    }
    return 0;
}

inline void drop_refs(Obj *o) {
    for (auto &r : o->ref) {
        cgc_object *t = r;
        r = nullptr;
        cgc_xdecref(t);
    }
}

inline int obj_clear(cgc_object *self) {
    Obj *o = as_obj(self);
    o->clears++;
    note("clear", o);
    drop_refs(o);
    return 0;
}

inline void free_obj(cgc_object *self) {
    cgc_gc_untrack(self);
    Obj *o = as_obj(self);
    note("dealloc", o);
    g_rec.freed.push_back(o->id);
    drop_refs(o);
    cgc_gc_del(self);
}

inline void plain_dealloc(cgc_object *self) { free_obj(self); }

inline void final_finalize(cgc_object *self) {
    Obj *o = as_obj(self);
    o->finalizes++;
    note("finalize", o);
    if (g_rec.on_finalize) g_rec.on_finalize(o);
}

// As a C type with tp_finalize does in CPython: finalize (once), stop if
// the finalizer resurrected the object.
inline void final_dealloc(cgc_object *self) {
    if (cgc_call_finalizer_from_dealloc(self) < 0) return;
    free_obj(self);
}

inline void legacy_del(cgc_object *self) {
    Obj *o = as_obj(self);
    o->dels++;
    note("del", o);
    if (g_rec.on_del) g_rec.on_del(o);
}

// As CPython's subtype_dealloc does for a class with a legacy __del__: call
// tp_del with a temporary reference; stop if it resurrected the object.
inline void legacy_dealloc(cgc_object *self) {
    self->ob_refcnt = 1;
    legacy_del(self);
    if (--self->ob_refcnt != 0) return;
    free_obj(self);
}

inline cgc_type make_type(const char *name, cgc_destructor dealloc, cgc_destructor finalize, cgc_destructor del) {
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

inline cgc_type plain_type = make_type("Plain", plain_dealloc, nullptr, nullptr);
inline cgc_type final_type = make_type("Final", final_dealloc, final_finalize, nullptr);
inline cgc_type legacy_type = make_type("Legacy", legacy_dealloc, nullptr, legacy_del);

// A container that does not take part in GC (CPython's ContainerNoGC).
struct NoGc {
    cgc_object ob_base;
    cgc_object *value;
    int id;
};

inline void nogc_dealloc(cgc_object *self) {
    auto *n = reinterpret_cast<NoGc *>(self);
    g_rec.events.push_back("dealloc nogc " + std::to_string(n->id));
    cgc_object *value = n->value;
    n->value = nullptr;
    cgc_xdecref(value);
    cgc_object_del(self);
}

inline cgc_type nogc_type = [] {
    cgc_type t{};
    t.tp_name = "NoGc";
    t.tp_basicsize = sizeof(NoGc);
    t.tp_dealloc = nogc_dealloc;
    return t;
}();

inline bool is_test_obj(cgc_object *op) {
    return op->ob_type == &plain_type || op->ob_type == &final_type || op->ob_type == &legacy_type;
}

inline Obj *make(cgc_type *type, int id) {
    auto *o = as_obj(cgc_gc_new(type));
    if (!o) throw std::runtime_error("cgc_gc_new failed");
    o->id = id;
    cgc_gc_track(o);
    return o;
}
inline Obj *plain(int id) { return make(&plain_type, id); }

// from->ref[slot] = to (a new strong reference); the old one is dropped.
inline void set_ref(Obj *from, int slot, cgc_object *to) {
    cgc_xincref(to);
    cgc_object *old = from->ref[slot];
    from->ref[slot] = to;
    cgc_xdecref(old);
}
inline void set_ref(Obj *from, int slot, Obj *to) { set_ref(from, slot, to ? ob(to) : nullptr); }

inline void drop(Obj *o) { cgc_decref(ob(o)); }

// An object in a self-loop that nothing else refers to: garbage. Returns a
// borrowed pointer (for identity checks only, unless it is kept alive).
inline Obj *self_cycle_garbage(cgc_type *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    drop(o);
    return o;
}

// Two objects that refer to each other, nothing else to them.
inline std::pair<Obj *, Obj *> pair_garbage(cgc_type *type, int id_a, int id_b) {
    Obj *a = make(type, id_a);
    Obj *b = make(type, id_b);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    drop(a);
    drop(b);
    return {a, b};
}

inline int freed_count(int id) { return static_cast<int>(std::count(g_rec.freed.begin(), g_rec.freed.end(), id)); }
inline bool freed(int id) { return freed_count(id) > 0; }
inline int event_count(const std::string &event) {
    return static_cast<int>(std::count(g_rec.events.begin(), g_rec.events.end(), event));
}

inline std::string addr(const void *p) {
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

inline List objects(int generation) {
    List l;
    EXPECT_EQ(cgc_get_objects(generation, &l.list), 0);
    return l;
}
inline List garbage() {
    List l;
    EXPECT_EQ(cgc_get_garbage(&l.list), 0);
    return l;
}
inline cgc_ssize_t tracked_count() { return objects(-1).list.count + cgc_get_freeze_count(); }

using cgc_test::stats_of;

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

inline void record_callback(const char *phase, const cgc_collection_info *info, void *context) {
    auto *r = static_cast<Recorder *>(context);
    r->calls->push_back({r->which, phase, *info});
    if (r->extra) r->extra(phase, *info);
}

inline void capture_line(const char *line, void *context) { static_cast<std::vector<std::string> *>(context)->push_back(line); }

// ---- Fixture --------------------------------------------------------------

using cgc_test::ReportedError;

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

}  // namespace gc_module_test
