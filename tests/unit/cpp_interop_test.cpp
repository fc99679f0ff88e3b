// Interop between the C++ API and the C API: C++ objects holding C objects
// and the reverse, mixed cycles, the type object of a C++ type as the C API
// and the gc functions see it, and the threading contract (one heap per
// thread).
#include <cyclegc/Python.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

namespace cpp_interop_test {
namespace {

using cyclegc::make;
using cyclegc::ref;
using cyclegc::tracer;

constexpr int kCanary = 0x1A7E40C5;

// ---- A C container type: up to two references, written against <cyclegc/cyclegc.h>

struct CPair {
    cgc_object ob_base;
    cgc_object *first;
    cgc_object *second;
    int canary;
};

int g_c_freed = 0;

int cpair_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    auto *p = reinterpret_cast<CPair *>(self);
    Py_VISIT(p->first);
    Py_VISIT(p->second);
    return 0;
}

int cpair_clear(cgc_object *self) {
    auto *p = reinterpret_cast<CPair *>(self);
    Py_CLEAR(p->first);
    Py_CLEAR(p->second);
    return 0;
}

void cpair_dealloc(cgc_object *self) {
    auto *p = reinterpret_cast<CPair *>(self);
    EXPECT_EQ(p->canary, kCanary);
    p->canary = 0;
    cgc_gc_untrack(self);
    cpair_clear(self);
    ++g_c_freed;
    cgc_gc_del(self);
}

cgc_type cpair_type = [] {
    cgc_type t{};
    t.tp_name = "CPair";
    t.tp_basicsize = sizeof(CPair);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_dealloc = cpair_dealloc;
    t.tp_traverse = cpair_traverse;
    t.tp_clear = cpair_clear;
    return t;
}();

// A new reference to a tracked CPair holding new references to `a` and `b`.
ref<cgc_object> new_cpair(cgc_object *a = nullptr, cgc_object *b = nullptr) {
    auto *p = reinterpret_cast<CPair *>(cgc_gc_new(&cpair_type));
    EXPECT_NE(p, nullptr);
    p->first = Py_XNewRef(a);
    p->second = Py_XNewRef(b);
    p->canary = kCanary;
    cgc_gc_track(p);
    return ref<cgc_object>::adopt(&p->ob_base);
}

CPair *as_cpair(const ref<cgc_object> &r) { return reinterpret_cast<CPair *>(r.get()); }

void set_first(const ref<cgc_object> &pair, cgc_object *value) {
    Py_XSETREF(as_cpair(pair)->first, Py_XNewRef(value));
}

// ---- A C++ type holding C objects ------------------------------------------

struct Mixed : cyclegc::object {
    static inline int destroyed = 0;
    ref<cgc_object> c;                 // a C object
    std::vector<ref<cgc_object>> many;  // more of them
    ref<Mixed> next;
    int canary = kCanary;
    void trace(tracer &t) { t(c, many, next); }
    ~Mixed() {
        EXPECT_EQ(canary, kCanary);
        canary = 0;
        ++destroyed;
    }
};

struct Leaf : cyclegc::object {
    static inline int destroyed = 0;
    ~Leaf() { ++destroyed; }
};

class CppInterop : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        g_c_freed = 0;
        Mixed::destroyed = Leaf::destroyed = 0;
    }
};

TEST_F(CppInterop, CppObjectHoldsACObject) {
    {
        auto m = make<Mixed>();
        m->c = new_cpair();
        EXPECT_EQ(m->c.use_count(), 1);
    }
    EXPECT_EQ(Mixed::destroyed, 1);
    EXPECT_EQ(g_c_freed, 1);  // released by ~Mixed through cgc_dealloc
}

TEST_F(CppInterop, CObjectHoldsACppObject) {
    auto m = make<Mixed>();
    {
        ref<cgc_object> pair = new_cpair(m->as_cobject());
        EXPECT_EQ(m.use_count(), 2);
        EXPECT_EQ(as_cpair(pair)->first, m->as_cobject());
    }
    EXPECT_EQ(g_c_freed, 1);
    EXPECT_EQ(m.use_count(), 1);
    m = nullptr;
    EXPECT_EQ(Mixed::destroyed, 1);
}

TEST_F(CppInterop, MixedTwoCycleIsCollected) {
    {
        auto m = make<Mixed>();
        m->c = new_cpair(m->as_cobject());  // C++ -> C -> C++
    }
    EXPECT_EQ(Mixed::destroyed, 0);
    EXPECT_EQ(g_c_freed, 0);
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Mixed::destroyed, 1);
    EXPECT_EQ(g_c_freed, 1);
}

TEST_F(CppInterop, LongerMixedCycleIsCollected) {
    {
        // C++ a -> C p -> C++ b -> C q -> C++ a, plus a C++ leaf on the side.
        auto a = make<Mixed>();
        auto b = make<Mixed>();
        ref<cgc_object> leaf_c = cyclegc::as_cobject(make<Leaf>());
        a->c = new_cpair(b->as_cobject(), leaf_c.get());
        b->many.push_back(new_cpair(a->as_cobject()));
        b->many.push_back(new_cpair());
    }
    EXPECT_EQ(cyclegc::collect(), 5);  // a, b and three pairs (the leaf is untracked)
    EXPECT_EQ(Mixed::destroyed, 2);
    EXPECT_EQ(g_c_freed, 3);
    EXPECT_EQ(Leaf::destroyed, 1);
}

TEST_F(CppInterop, MixedCycleHeldFromCSurvives) {
    auto m = make<Mixed>();
    m->c = new_cpair(m->as_cobject());
    cgc_object *held = Py_NewRef(m->c.get());  // a C variable holds the pair
    m = nullptr;
    EXPECT_EQ(cyclegc::collect(), 0);
    EXPECT_EQ(Mixed::destroyed, 0);
    Py_DECREF(held);
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Mixed::destroyed, 1);
    EXPECT_EQ(g_c_freed, 1);
}

TEST_F(CppInterop, BreakingAMixedCycleFromCFreesByCounting) {
    ref<cgc_object> pair;
    {
        auto m = make<Mixed>();
        pair = new_cpair(m->as_cobject());
        m->c = pair;
    }
    EXPECT_EQ(Mixed::destroyed, 0);
    set_first(pair, nullptr);  // C code drops its reference: the C++ object dies
    EXPECT_EQ(Mixed::destroyed, 1);
    EXPECT_EQ(pair.use_count(), 1);
    pair = nullptr;
    EXPECT_EQ(g_c_freed, 1);
}

// The C API sees a C++ object as a PyObject of its C++ type's type object.
TEST_F(CppInterop, TypeObjectOfACppType) {
    auto m = make<Mixed>();
    PyObject *op = m->as_cobject();
    EXPECT_EQ(Py_TYPE(op), cyclegc::type_of<Mixed>());
    EXPECT_TRUE(Py_IS_TYPE(op, cyclegc::type_of<Mixed>()));
    EXPECT_EQ(Py_REFCNT(op), 1);
    EXPECT_TRUE(PyObject_IS_GC(op));
    EXPECT_TRUE(PyObject_GC_IsTracked(op));
    EXPECT_FALSE(PyObject_GC_IsFinalized(op));
    EXPECT_TRUE(PyType_IS_GC(cyclegc::type_of<Mixed>()));
    EXPECT_STREQ(Py_TYPE(op)->tp_name, "cpp_interop_test::(anonymous namespace)::Mixed");
    EXPECT_EQ(PyType_GetSlot(cyclegc::type_of<Mixed>(), Py_tp_traverse) != nullptr, true);
    EXPECT_EQ(PyType_GetSlot(cyclegc::type_of<Mixed>(), Py_tp_clear) != nullptr, true);
    EXPECT_EQ(PyType_GetSlot(cyclegc::type_of<Mixed>(), Py_tp_finalize), nullptr);
    // A leaf type is a GC type that is never tracked.
    auto leaf = make<Leaf>();
    EXPECT_TRUE(PyObject_IS_GC(leaf->as_cobject()));
    EXPECT_FALSE(PyObject_GC_IsTracked(leaf->as_cobject()));
    EXPECT_EQ(PyType_GetSlot(cyclegc::type_of<Leaf>(), Py_tp_clear), nullptr);
}

TEST_F(CppInterop, PyGCCollectCollectsCppCycles) {
    {
        auto m = make<Mixed>();
        m->next = m;
    }
    EXPECT_EQ(PyGC_Collect(), 0);  // disabled: PyGC_Collect does nothing
    EXPECT_EQ(Mixed::destroyed, 0);
    PyGC_Enable();
    EXPECT_EQ(PyGC_Collect(), 1);
    PyGC_Disable();
    EXPECT_EQ(Mixed::destroyed, 1);
}

TEST_F(CppInterop, CppObjectThroughPyDecref) {
    auto m = make<Mixed>();
    PyObject *op = m.release()->as_cobject();  // now a plain owned PyObject*
    EXPECT_EQ(Mixed::destroyed, 0);
    Py_DECREF(op);
    EXPECT_EQ(Mixed::destroyed, 1);
}

// ---- The gc functions see C++ objects ------------------------------------------

bool contains(const std::vector<ref<cgc_object>> &list, const cgc_object *op) {
    return std::any_of(list.begin(), list.end(), [&](auto &r) { return r.get() == op; });
}

TEST_F(CppInterop, GetObjectsReferrersReferents) {
    auto a = make<Mixed>();
    auto b = make<Mixed>();
    a->next = b;
    a->c = new_cpair(b->as_cobject());
    auto all = cyclegc::get_objects();
    EXPECT_TRUE(contains(all, a->as_cobject()));
    EXPECT_TRUE(contains(all, b->as_cobject()));
    EXPECT_TRUE(contains(all, a->c.get()));
    EXPECT_TRUE(contains(cyclegc::get_objects(0), a->as_cobject()));
    ref<cgc_object> bs[] = {cyclegc::as_cobject(b)};
    auto referrers = cyclegc::get_referrers(bs);
    EXPECT_EQ(referrers.size(), 2u);
    EXPECT_TRUE(contains(referrers, a->as_cobject()));
    EXPECT_TRUE(contains(referrers, a->c.get()));
    ref<cgc_object> as[] = {cyclegc::as_cobject(a)};
    auto referents = cyclegc::get_referents(as);
    EXPECT_EQ(referents.size(), 2u);
    EXPECT_TRUE(contains(referents, b->as_cobject()));
    EXPECT_TRUE(contains(referents, a->c.get()));
    all.clear();
    referrers.clear();
    referents.clear();
    as[0] = bs[0] = nullptr;
    a = nullptr;
    b = nullptr;
    EXPECT_EQ(Mixed::destroyed, 2);
}

TEST_F(CppInterop, CollectionCallbacksAndStats) {
    std::vector<std::string> phases;
    cgc_ssize_t collected_at_stop = -1;
    uint64_t collections_before = cyclegc::get_stats(2).collections;
    {
        auto handle = cyclegc::add_collection_callback([&](std::string_view phase, const cyclegc::collection_info &info) {
            phases.emplace_back(phase);
            if (phase == "stop") collected_at_stop = info.collected;
        });
        {
            auto m = make<Mixed>();
            m->c = new_cpair(m->as_cobject());
        }
        EXPECT_EQ(cyclegc::collect(), 2);
    }
    cyclegc::collect();  // the handle is gone: no more calls
    EXPECT_EQ(phases, (std::vector<std::string>{"start", "stop"}));
    EXPECT_EQ(collected_at_stop, 2);
    auto stats = cyclegc::get_stats(2);
    EXPECT_EQ(stats.collections, collections_before + 2);
    EXPECT_GE(stats.collected, 2u);
}

TEST_F(CppInterop, FreezeKeepsCppCyclesOutOfCollections) {
    {
        auto m = make<Mixed>();
        m->next = m;
    }
    cyclegc::freeze();
    EXPECT_GE(cyclegc::get_freeze_count(), 1);
    EXPECT_EQ(cyclegc::collect(), 0);
    EXPECT_EQ(Mixed::destroyed, 0);
    cyclegc::unfreeze();
    EXPECT_EQ(cyclegc::get_freeze_count(), 0);
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(Mixed::destroyed, 1);
}

TEST_F(CppInterop, DebugSaveAllPutsCppObjectsInGarbage) {
    cgc_object *op = nullptr;
    {
        auto m = make<Mixed>();
        m->next = m;
        op = m->as_cobject();
    }
    int flags = cyclegc::get_debug();
    cyclegc::set_debug(CGC_DEBUG_SAVEALL);
    cyclegc::collect();
    cyclegc::set_debug(flags);
    auto garbage = cyclegc::garbage();
    EXPECT_TRUE(contains(garbage, op));
    EXPECT_EQ(Mixed::destroyed, 0);
    garbage.clear();
    cyclegc::clear_garbage();
    EXPECT_EQ(Mixed::destroyed, 0);  // still a cycle
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(Mixed::destroyed, 1);
}

TEST_F(CppInterop, GcFunctionsMisc) {
    cgc_error_hook previous = cgc_set_error_hook([](cgc_error_kind, const char *, void *) {}, nullptr);
    EXPECT_THROW(cyclegc::collect(7), std::invalid_argument);
    cgc_set_error_hook(previous, nullptr);
    cgc_error_clear();
    EXPECT_FALSE(cyclegc::is_enabled());
    EXPECT_FALSE(cyclegc::enable());  // returns the previous state
    EXPECT_TRUE(cyclegc::is_enabled());
    EXPECT_TRUE(cyclegc::disable());
    cgc_ssize_t t0 = cyclegc::get_threshold(0), t1 = cyclegc::get_threshold(1), t2 = cyclegc::get_threshold(2);
    cyclegc::set_threshold(100, 5, 6);
    EXPECT_EQ(cyclegc::get_threshold(0), 100);
    EXPECT_EQ(cyclegc::get_threshold(1), 5);
    EXPECT_EQ(cyclegc::get_threshold(2), 6);
    cyclegc::set_threshold(t0, t1, t2);
    cgc_ssize_t count = cyclegc::get_count(0);
    {
        auto m = make<Mixed>();
        EXPECT_EQ(cyclegc::get_count(0), count + 1);
    }
    EXPECT_EQ(cyclegc::get_count(0), count);
}

// ---- Threads: one heap per thread -------------------------------------------------

TEST_F(CppInterop, EachThreadItsOwnHeap) {
    int destroyed_in_thread = -1;
    cgc_ssize_t collected_in_thread = -1;
    std::thread worker([&] {
        cgc_heap *heap = cgc_heap_new();
        cgc_heap_set_current(heap);
        cyclegc::disable();
        int before = Mixed::destroyed;
        {
            auto m = make<Mixed>();
            m->c = new_cpair(m->as_cobject());
        }
        collected_in_thread = cyclegc::collect();
        destroyed_in_thread = Mixed::destroyed - before;
        cgc_heap_set_current(nullptr);
        cgc_heap_delete(heap);
    });
    worker.join();
    EXPECT_EQ(collected_in_thread, 2);
    EXPECT_EQ(destroyed_in_thread, 1);
    EXPECT_EQ(g_c_freed, 1);
}

}  // namespace
}  // namespace cpp_interop_test
