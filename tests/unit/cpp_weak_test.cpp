// cyclegc::weak<T>: lock(), expired(), and callbacks with CPython's
// semantics: called once when the referent dies by counting; in a
// collection, cleared before any finalizer and called only if the weak
// reference itself is reachable; exceptions go to the unraisable hook.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cpp_weak_test {
namespace {

using cyclegc::make;
using cyclegc::ref;
using cyclegc::tracer;
using cyclegc::weak;

constexpr int kCanary = 0x3EA4C0DE;

std::vector<std::string> g_log;

struct Target : cyclegc::object {
    static inline int destroyed = 0;
    static inline int finalized = 0;
    std::string name;
    ref<Target> next;
    weak<Target> watch;  // a weak reference the object holds
    int canary = kCanary;
    explicit Target(std::string n = "t") : name(std::move(n)) {}
    void trace(tracer &t) { t(next, watch); }
    void finalize() {
        ++finalized;
        g_log.push_back("finalize " + name);
    }
    ~Target() {
        EXPECT_EQ(canary, kCanary);
        canary = 0;
        ++destroyed;
        g_log.push_back("destroy " + name);
    }
};

struct Plain : cyclegc::object {  // no trace, no finalize: never tracked
    static inline int destroyed = 0;
    ~Plain() { ++destroyed; }
};

struct Base : cyclegc::object {
    int b = 1;
};
struct Derived : Base {
    int d = 2;
};

class CppWeak : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        Target::destroyed = Target::finalized = 0;
        Plain::destroyed = 0;
        g_log.clear();
    }
    void TearDown() override {
        cyclegc::set_unraisable_hook({});
        CppFixture::TearDown();
    }
};

TEST_F(CppWeak, EmptyWeak) {
    weak<Target> w;
    EXPECT_TRUE(w.expired());
    EXPECT_FALSE(w.lock());
    weak<Target> n = nullptr;
    EXPECT_TRUE(n.expired());
    weak<Target> from_null{ref<Target>()};
    EXPECT_TRUE(from_null.expired());
    EXPECT_FALSE(from_null.cobject());
    w.reset();
}

TEST_F(CppWeak, LockAndExpire) {
    auto t = make<Target>();
    weak<Target> w = t;
    EXPECT_FALSE(w.expired());
    EXPECT_EQ(t.use_count(), 1);  // a weak reference does not count
    {
        ref<Target> locked = w.lock();
        EXPECT_EQ(locked, t);
        EXPECT_EQ(t.use_count(), 2);
    }
    EXPECT_EQ(t.use_count(), 1);
    EXPECT_EQ(cgc_weakref_count(t->as_cobject()), 1);
    t = nullptr;
    EXPECT_EQ(Target::destroyed, 1);
    EXPECT_TRUE(w.expired());
    EXPECT_FALSE(w.lock());
}

TEST_F(CppWeak, CopiesShareAndOutliveTheReferent) {
    auto t = make<Target>();
    weak<Target> w1 = t;
    weak<Target> w2 = w1;
    weak<Target> w3;
    w3 = w2;
    EXPECT_EQ(w1.cobject(), w2.cobject());
    EXPECT_EQ(w3.lock(), t);
    t = nullptr;
    EXPECT_TRUE(w1.expired());
    EXPECT_TRUE(w2.expired());
    EXPECT_TRUE(w3.expired());
}

TEST_F(CppWeak, WeakToAnUntrackedLeafType) {
    auto p = make<Plain>();
    EXPECT_FALSE(cyclegc::is_tracked(p));
    weak<Plain> w = p;
    EXPECT_EQ(w.lock(), p);
    p = nullptr;
    EXPECT_EQ(Plain::destroyed, 1);
    EXPECT_TRUE(w.expired());
}

TEST_F(CppWeak, WeakOfBaseFromDerived) {
    auto d = make<Derived>();
    weak<Base> w = d;
    ref<Base> b = w.lock();
    EXPECT_EQ(b.get(), static_cast<Base *>(d.get()));
    EXPECT_EQ(b->b, 1);
    b = nullptr;
    d = nullptr;
    EXPECT_TRUE(w.expired());
}

TEST_F(CppWeak, CallbackOnceOnRefcountDeath) {
    int calls = 0;
    bool lock_was_null = false;
    bool expired_inside = false;
    auto t = make<Target>();
    weak<Target> w;
    w = weak<Target>(t, [&] {
        ++calls;
        lock_was_null = !w.lock();
        expired_inside = w.expired();
        EXPECT_EQ(Target::destroyed, 0);  // before the destructor
    });
    EXPECT_EQ(calls, 0);
    t = nullptr;
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(lock_was_null);
    EXPECT_TRUE(expired_inside);
    EXPECT_EQ(Target::destroyed, 1);
    w.reset();
    cyclegc::collect();
    EXPECT_EQ(calls, 1);
}

// At refcount death the callback and finalize() both run once, before the
// destructor (their relative order is the C layer's: CPython finalizes first).
TEST_F(CppWeak, OnRefcountDeathCallbackAndFinalizeBeforeDestructor) {
    auto t = make<Target>("t");
    weak<Target> w(t, [] { g_log.push_back("callback"); });
    t = nullptr;
    ASSERT_EQ(g_log.size(), 3u);
    EXPECT_EQ(std::count(g_log.begin(), g_log.end(), "callback"), 1);
    EXPECT_EQ(std::count(g_log.begin(), g_log.end(), "finalize t"), 1);
    EXPECT_EQ(g_log.back(), "destroy t");
}

TEST_F(CppWeak, EachWeakWithACallbackIsCalled) {
    int a = 0, b = 0;
    auto t = make<Target>();
    weak<Target> w1(t, [&] { ++a; });
    weak<Target> w2(t, [&] { ++b; });
    weak<Target> w3 = t;  // no callback
    EXPECT_EQ(cgc_weakref_count(t->as_cobject()), 3);
    t = nullptr;
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 1);
    EXPECT_TRUE(w3.expired());
}

TEST_F(CppWeak, NoCallbackOnceTheWeakIsGone) {
    int calls = 0;
    auto t = make<Target>();
    {
        weak<Target> w(t, [&] { ++calls; });
    }
    t = nullptr;
    EXPECT_EQ(calls, 0);
    auto u = make<Target>();
    weak<Target> w(u, [&] { ++calls; });
    w.reset();
    u = nullptr;
    EXPECT_EQ(calls, 0);
}

TEST_F(CppWeak, CallbackStateIsDestroyedWithTheWeak) {
    auto canary = std::make_shared<int>(1);
    auto t = make<Target>();
    {
        weak<Target> w(t, [canary] {});
        EXPECT_EQ(canary.use_count(), 2);
    }
    EXPECT_EQ(canary.use_count(), 1);
    {
        weak<Target> w(t, [canary] {});
        t = nullptr;  // called, then kept until the weak goes
    }
    EXPECT_EQ(canary.use_count(), 1);
}

// A weak held from outside the garbage is reachable: its callback runs,
// after the weak references are cleared and before any finalizer.
TEST_F(CppWeak, CollectionCallsCallbackOfReachableWeakBeforeFinalizers) {
    int calls = 0;
    bool lock_was_null = false;
    weak<Target> w;
    weak<Target> other;
    {
        auto a = make<Target>("a");
        auto b = make<Target>("b");
        a->next = b;
        b->next = a;
        other = b;
        w = weak<Target>(a, [&] {
            ++calls;
            lock_was_null = !w.lock();
            EXPECT_TRUE(other.expired());  // every weak to the garbage is cleared first
            g_log.push_back("callback");
        });
    }
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(lock_was_null);
    ASSERT_EQ(g_log.size(), 5u);
    EXPECT_EQ(g_log[0], "callback");
    EXPECT_TRUE(g_log[1].starts_with("finalize"));
    EXPECT_TRUE(g_log[2].starts_with("finalize"));
    EXPECT_EQ(Target::destroyed, 2);
    EXPECT_TRUE(w.expired());
}

// A weak that is itself garbage (held by the cycle) must not call back.
TEST_F(CppWeak, CollectionSkipsCallbackOfGarbageWeak) {
    int calls = 0;
    {
        auto a = make<Target>("a");
        auto b = make<Target>("b");
        a->next = b;
        b->next = a;
        a->watch = weak<Target>(b, [&] { ++calls; });
        b->watch = weak<Target>(b, [&] { ++calls; });
    }
    EXPECT_EQ(cyclegc::collect(), 4);  // two objects, two weak reference objects
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(Target::destroyed, 2);
}

// Both at once: one weak in the garbage, one outside.
TEST_F(CppWeak, CollectionCallsOnlyTheReachableOne) {
    int inside = 0, outside = 0;
    weak<Target> w;
    {
        auto a = make<Target>("a");
        a->next = a;
        a->watch = weak<Target>(a, [&] { ++inside; });
        w = weak<Target>(a, [&] { ++outside; });
    }
    cyclegc::collect();
    EXPECT_EQ(inside, 0);
    EXPECT_EQ(outside, 1);
    EXPECT_EQ(Target::destroyed, 1);
}

// A garbage weak to an object that survives: no callback ever.
TEST_F(CppWeak, GarbageWeakToASurvivor) {
    int calls = 0;
    auto survivor = make<Target>("survivor");
    {
        auto a = make<Target>("a");
        a->next = a;
        a->watch = weak<Target>(survivor, [&] { ++calls; });
    }
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(cgc_weakref_count(survivor->as_cobject()), 0);
    survivor = nullptr;
    EXPECT_EQ(calls, 0);
}

// Weak references are cleared before finalizers run: a finalizer cannot
// reach a garbage object through a weak reference.
struct Peeker : cyclegc::object {
    static inline int saw_live = 0;
    static inline int finalized = 0;
    ref<Peeker> next;
    weak<Peeker> peek;
    void trace(tracer &t) { t(next, peek); }
    void finalize() {
        ++finalized;
        if (peek.lock()) ++saw_live;
    }
};

TEST_F(CppWeak, ClearedBeforeFinalizers) {
    Peeker::saw_live = Peeker::finalized = 0;
    {
        auto a = make<Peeker>();
        auto b = make<Peeker>();
        a->next = b;
        b->next = a;
        a->peek = b;
        b->peek = a;
    }
    cyclegc::collect();
    EXPECT_EQ(Peeker::finalized, 2);
    EXPECT_EQ(Peeker::saw_live, 0);
}

TEST_F(CppWeak, CallbackExceptionGoesToTheUnraisableHook) {
    std::vector<std::string> messages;
    std::vector<cgc_object *> objects;
    cyclegc::set_unraisable_hook([&](std::string_view message, cgc_object *object) {
        messages.emplace_back(message);
        objects.push_back(object);
    });
    auto t = make<Target>();
    weak<Target> w(t, [] { throw std::runtime_error("callback failed"); });
    weak<Target> after(t, [] { g_log.push_back("second callback"); });
    EXPECT_NO_THROW(t = nullptr);
    EXPECT_EQ(Target::destroyed, 1);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0], "weak reference callback: std::runtime_error: callback failed");
    EXPECT_EQ(objects[0], w.cobject().get());
    // The other callbacks still ran (after finalize(), as CPython clears
    // weak references after the finalizer at reference-counting death).
    EXPECT_NE(std::find(g_log.begin(), g_log.end(), "second callback"), g_log.end());
}

TEST_F(CppWeak, CallbackExceptionDuringACollection) {
    std::vector<std::string> messages;
    cyclegc::set_unraisable_hook([&](std::string_view message, cgc_object *) { messages.emplace_back(message); });
    weak<Target> w;
    {
        auto a = make<Target>("a");
        a->next = a;
        w = weak<Target>(a, [] { throw 7; });
    }
    cgc_ssize_t collected = -1;
    EXPECT_NO_THROW(collected = cyclegc::collect());
    EXPECT_EQ(collected, 1);  // the collection completed
    EXPECT_EQ(Target::destroyed, 1);
    EXPECT_EQ(Target::finalized, 1);
    ASSERT_EQ(messages.size(), 1u);
    EXPECT_EQ(messages[0], "weak reference callback: unknown exception");
}

// A callback may free other objects, even drop its own weak reference.
TEST_F(CppWeak, CallbackMayDropItsOwnWeak) {
    int calls = 0;
    auto t = make<Target>();
    auto holder = std::make_unique<weak<Target>>();
    *holder = weak<Target>(t, [&] {
        ++calls;
        holder.reset();  // destroys the weak (and this callback's state) later
    });
    t = nullptr;
    EXPECT_EQ(calls, 1);
    EXPECT_FALSE(holder);
}

// A weak made inside finalize() on refcount death does not outlive its
// referent as a dangling pointer: it is cleared when the object dies.
struct MakesWeakInFinalize : cyclegc::object {
    static inline weak<MakesWeakInFinalize> *out = nullptr;
    static inline int callbacks = 0;
    void trace(tracer &) {}
    void finalize() {
        *out = weak<MakesWeakInFinalize>(ref<MakesWeakInFinalize>::borrow(this), [] { ++callbacks; });
    }
};

TEST_F(CppWeak, WeakMadeInFinalizeIsClearedWithTheObject) {
    weak<MakesWeakInFinalize> w;
    MakesWeakInFinalize::out = &w;
    MakesWeakInFinalize::callbacks = 0;
    make<MakesWeakInFinalize>();  // dies at once, by counting
    ASSERT_TRUE(w.cobject());
    EXPECT_TRUE(w.expired());
    EXPECT_FALSE(w.lock());
    EXPECT_EQ(MakesWeakInFinalize::callbacks, 1);
    w.reset();
}

TEST_F(CppWeak, WeakMadeInFinalizeDuringACollection) {
    weak<MakesWeakInFinalize> w;
    MakesWeakInFinalize::out = &w;
    MakesWeakInFinalize::callbacks = 0;
    struct Holder : cyclegc::object {
        ref<Holder> self;
        ref<MakesWeakInFinalize> m = make<MakesWeakInFinalize>();
        void trace(tracer &t) { t(self, m); }
    };
    {
        auto h = make<Holder>();
        h->self = h;
    }
    EXPECT_EQ(cyclegc::collect(), 2);
    ASSERT_TRUE(w.cobject());
    EXPECT_TRUE(w.expired());
    EXPECT_EQ(MakesWeakInFinalize::callbacks, 0);  // made meanwhile: cleared silently, as CPython
}

// Weak to a C++ object through the C API, and a C++ weak to a C object.
TEST_F(CppWeak, CWeakReferenceToACppObject) {
    auto t = make<Target>();
    cgc_object *w = cgc_weakref_new(t->as_cobject(), nullptr, nullptr);
    ASSERT_TRUE(w);
    cgc_object *got = cgc_weakref_get(w);
    EXPECT_EQ(got, t->as_cobject());
    cgc_decref(got);
    t = nullptr;
    EXPECT_EQ(cgc_weakref_get(w), nullptr);
    cgc_decref(w);
}

}  // namespace
}  // namespace cpp_weak_test
