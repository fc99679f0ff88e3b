// Types that get the GC protocol wrong, for the hostile_*_test.cpp files:
// what real extension types do by mistake, each test with a defined outcome
// (a clear error naming the type, or correct behaviour) and never a
// use-after-free, double free or crash in the collector.
//
// HObj has three owned references and a canary that its deallocation kills:
// every handler checks the canary first, so the collector calling a handler
// on a freed object is caught even though ASan cannot see inside GC pages
// (they are the library's own memory, reused slot by slot). Each test plugs
// its mistake into the handlers through the `hostile` hooks.
//
// Tests that may crash or hang the process (known bugs) run their scenario in
// a child process (EXPECT_SURVIVES), so that the rest of the suite runs.
#pragma once

#include "test_types.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cgc_hostile {

constexpr uint64_t kAlive = 0xA11CEA11CEA11CEull;
constexpr uint64_t kFreed = 0xF4EEDF4EEDF4EEDull;

struct HObj {
    cgc_object ob_base;
    uint64_t canary;
    int id;
    cgc_object *slot[3];
    cgc_object *borrowed;  // a pointer the object does not own (for hostile traverses)
};

inline HObj *as_h(cgc_object *op) { return reinterpret_cast<HObj *>(op); }
inline cgc_object *ob(HObj *o) { return &o->ob_base; }

struct Hooks {
    // Replace the default behaviour when set.
    std::function<int(HObj *, cgc_visitproc, void *)> traverse;
    std::function<int(HObj *)> clear;
    std::function<void(HObj *)> finalize;
    std::function<void(HObj *)> dealloc;  // called first in tp_dealloc
    std::set<int> live;                    // ids of live objects
    std::vector<int> finalized;            // ids, in order
    std::vector<std::string> canary_errors;
};
inline Hooks hooks;

inline void reset_hooks() { hooks = Hooks{}; }

inline bool check_canary(HObj *o, const char *where) {
    if (o->canary == kAlive) return true;
    hooks.canary_errors.push_back(std::string(where) + " called on a freed or corrupt object (id " +
                                  std::to_string(o->id) + ")");
    return false;
}

inline int visit_slots(HObj *o, cgc_visitproc visit, void *arg) {
    for (cgc_object *r : o->slot)
        if (r)
            if (int e = visit(r, arg)) return e;
    return 0;
}

inline void drop_slots(HObj *o) {
    for (cgc_object *&r : o->slot) {
        cgc_object *old = r;
        r = nullptr;
        cgc_xdecref(old);
    }
}

// drop_slots() from outside, by the program breaking a cycle: the object may
// be freed by dropping its first reference (the rest of the cycle held it),
// so it is kept alive until its slots are done (found by poisoning freed
// slots under ASan: drop_slots() read the next slot of the freed object).
inline void break_cycle_at(HObj *o) {
    cgc_incref(&o->ob_base);
    drop_slots(o);
    cgc_decref(&o->ob_base);
}

inline int h_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    HObj *o = as_h(self);
    if (!check_canary(o, "tp_traverse")) return 0;
    if (hooks.traverse) return hooks.traverse(o, visit, arg);
    return visit_slots(o, visit, arg);
}

inline int h_clear(cgc_object *self) {
    HObj *o = as_h(self);
    if (!check_canary(o, "tp_clear")) return 0;
    if (hooks.clear) return hooks.clear(o);
    drop_slots(o);
    return 0;
}

inline void h_finalize(cgc_object *self) {
    HObj *o = as_h(self);
    if (!check_canary(o, "tp_finalize")) return;
    hooks.finalized.push_back(o->id);
    if (hooks.finalize) hooks.finalize(o);
}

// CPython's documented tp_dealloc for a static type: finalize (once), stop
// if resurrected, untrack, drop the references, free.
inline void h_dealloc(cgc_object *self) {
    HObj *o = as_h(self);
    if (!check_canary(o, "tp_dealloc")) return;
    if (hooks.dealloc) hooks.dealloc(o);
    if (self->ob_type->tp_finalize && cgc_call_finalizer_from_dealloc(self) < 0) return;
    cgc_gc_untrack(self);
    drop_slots(o);
    hooks.live.erase(o->id);
    o->canary = kFreed;
    cgc_gc_del(self);
}

inline cgc_type make_type(const char *name, bool finalizer = false, bool clear = true) {
    cgc_type t{};
    t.tp_name = name;
    t.tp_basicsize = sizeof(HObj);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = h_traverse;
    t.tp_clear = clear ? h_clear : nullptr;
    t.tp_finalize = finalizer ? h_finalize : nullptr;
    t.tp_dealloc = h_dealloc;
    return t;
}

// A new tracked object (count 1, owned by the caller).
inline HObj *make(cgc_type *type, int id, bool track = true) {
    HObj *o = as_h(cgc_gc_new(type));
    o->canary = kAlive;
    o->id = id;
    hooks.live.insert(id);
    if (track) cgc_gc_track(ob(o));
    return o;
}

// o->slot[i] = target (a new reference; the old one is dropped).
inline void set(HObj *o, int i, HObj *target) {
    cgc_object *old = o->slot[i];
    o->slot[i] = target ? ob(target) : nullptr;
    if (target) cgc_incref(ob(target));
    cgc_xdecref(old);
}

inline bool alive(int id) { return hooks.live.count(id) != 0; }

// A <-> B, returned with the caller's references dropped (borrowed pointers).
inline std::pair<HObj *, HObj *> garbage_pair(cgc_type *ta, int ida, cgc_type *tb, int idb) {
    HObj *a = make(ta, ida);
    HObj *b = make(tb, idb);
    set(a, 0, b);
    set(b, 0, a);
    cgc_decref(ob(a));
    cgc_decref(ob(b));
    return {a, b};
}

// In the child of EXPECT_SURVIVES: print the failures recorded so far (the
// child never reaches gtest's own reporting) where the parent shows them.
inline bool report_child_failures() {
    const ::testing::TestResult *result = ::testing::UnitTest::GetInstance()->current_test_info()->result();
    bool failed = false;
    for (int i = 0; i < result->total_part_count(); ++i) {
        const ::testing::TestPartResult &part = result->GetTestPartResult(i);
        if (!part.failed()) continue;
        failed = true;
        std::fprintf(stderr, "%s:%d: %s\n", part.file_name() ? part.file_name() : "?", part.line_number(),
                     part.message());
    }
    return failed;
}

// The scenario runs in a child process; the test passes if the child exits
// normally within 10 seconds (a crash or hang of a known bug fails the test
// without stopping the suite).
#define EXPECT_SURVIVES(...)                                                                    \
    EXPECT_EXIT(                                                                                \
        {                                                                                       \
            ::alarm(10);                                                                        \
            __VA_ARGS__;                                                                        \
            bool child_failed = ::cgc_hostile::report_child_failures();                         \
            std::fflush(nullptr);                                                               \
            ::_exit(child_failed ? 3 : 0);                                                      \
        },                                                                                      \
        ::testing::ExitedWithCode(0), "")

// Fixture: a fresh heap (HeapFixture: automatic collection off, errors
// captured, nothing left tracked afterwards) and fresh hooks.
class HostileTest : public cgc_test::HeapFixture {
  protected:
    void SetUp() override {
        reset_hooks();
        HeapFixture::SetUp();
        ::testing::FLAGS_gtest_death_test_style = "fast";
    }
    void TearDown() override {
        hooks.traverse = nullptr;
        hooks.clear = nullptr;
        hooks.finalize = nullptr;
        hooks.dealloc = nullptr;
        EXPECT_TRUE(hooks.canary_errors.empty()) << hooks.canary_errors.front();
        HeapFixture::TearDown();
        reset_hooks();
    }
};

}  // namespace cgc_hostile
