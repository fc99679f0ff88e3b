// cyclegc::make<T>: construction in collector memory, tracking once the
// constructor has finished, constructor exceptions; the life of an object
// in a collected cycle: finalize() (PEP 442, once, may resurrect), then
// clear, then destructors; exceptions from finalize() and the unraisable
// hook.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cpp_make_test {
namespace {

using cyclegc::make;
using cyclegc::ref;
using cyclegc::tracer;

constexpr int kCanary = 0x600DF00D;

class CppMake : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        cgc_error_clear();
    }
    void TearDown() override {
        cyclegc::set_unraisable_hook({});
        CppFixture::TearDown();
        cgc_error_clear();
    }
};

// ---- make ---------------------------------------------------------------------

struct Args : cyclegc::object {
    std::string text;
    std::unique_ptr<int> owned;
    int number;
    Args(const std::string &t, std::unique_ptr<int> o, int n) : text(t), owned(std::move(o)), number(n) {}
};

TEST_F(CppMake, ForwardsArguments) {
    std::string text = "hello";
    auto a = make<Args>(text, std::make_unique<int>(7), 3);
    EXPECT_EQ(a->text, "hello");
    EXPECT_EQ(text, "hello");  // an lvalue is copied
    EXPECT_EQ(*a->owned, 7);   // a move-only rvalue is moved
    EXPECT_EQ(a->number, 3);
    EXPECT_EQ(a.use_count(), 1);
}

struct Tracked : cyclegc::object {
    static inline int tracked_in_constructor = -1;
    ref<Tracked> self;
    Tracked() { tracked_in_constructor = cgc_gc_is_tracked(as_cobject()); }
    void trace(tracer &t) { t(self); }
};

TEST_F(CppMake, TrackedOnceTheConstructorHasFinished) {
    auto a = make<Tracked>();
    EXPECT_EQ(Tracked::tracked_in_constructor, 0);
    EXPECT_TRUE(cyclegc::is_tracked(a));
    EXPECT_EQ(a->as_cobject()->ob_type, cyclegc::type_of<Tracked>());
    EXPECT_STREQ(cyclegc::type_of<Tracked>()->tp_name, "cpp_make_test::(anonymous namespace)::Tracked");
    EXPECT_TRUE(cyclegc::type_of<Tracked>()->tp_flags & CGC_TPFLAGS_HAVE_GC);
    EXPECT_TRUE(cyclegc::type_of<Tracked>()->tp_flags & CGC_TPFLAGS_READY);
    EXPECT_EQ(cyclegc::type_of<Tracked>(), cyclegc::type_of<const Tracked>());
}

// A self-cycle made inside the constructor.
struct SelfInConstructor : cyclegc::object {
    static inline int destroyed = 0;
    ref<SelfInConstructor> self;
    SelfInConstructor() { self = ref<SelfInConstructor>::borrow(this); }
    void trace(tracer &t) { t(self); }
    ~SelfInConstructor() { ++destroyed; }
};

TEST_F(CppMake, CycleMadeInTheConstructorIsCollected) {
    { auto a = make<SelfInConstructor>(); EXPECT_EQ(a.use_count(), 2); }
    EXPECT_EQ(SelfInConstructor::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(SelfInConstructor::destroyed, 1);
}

// Releasing the last reference inside the constructor is reported, and the
// half-built object is not freed.
struct DropsItself : cyclegc::object {
    DropsItself() { ref<DropsItself>::adopt(this).reset(); }
};

TEST_F(CppMake, LastReferenceReleasedInsideTheConstructorIsReported) {
    struct Captured {
        int count = 0;
        std::string message;
    } captured;
    cgc_error_hook previous = cgc_set_error_hook(
        [](cgc_error_kind kind, const char *message, void *context) {
            auto *c = static_cast<Captured *>(context);
            if (kind == CGC_ERR_MISUSE) {
                ++c->count;
                c->message = message;
            }
        },
        &captured);
    auto a = make<DropsItself>();
    cgc_set_error_hook(previous, nullptr);
    EXPECT_EQ(captured.count, 1);
    EXPECT_NE(captured.message.find("inside its own constructor"), std::string::npos);
    EXPECT_EQ(a.use_count(), 1);
    cgc_error_clear();
}

// trace() with a side effect: it releases the only reference to another
// traced object while the collector analyses the graph (a tp_traverse that
// changes the graph). Freeing it then would leave the collector a dangling
// pointer: refused and reported, the object kept.
struct Victim : cyclegc::object {
    static inline int destroyed = 0;
    ref<Victim> next;
    void trace(tracer &t) { t(next); }
    ~Victim() { ++destroyed; }
};
struct DropsInTrace : cyclegc::object {
    static inline bool armed = false;
    ref<DropsInTrace> self;
    ref<Victim> victim;
    void trace(tracer &t) {
        if (armed && !t.clearing()) {
            armed = false;
            victim = nullptr;
        }
        t(self, victim);
    }
};

TEST_F(CppMake, ReleasingTheLastReferenceInsideTraceIsRefused) {
    std::vector<std::string> errors;
    cgc_error_hook previous = cgc_set_error_hook(
        [](cgc_error_kind kind, const char *message, void *context) {
            if (kind == CGC_ERR_MISUSE) static_cast<std::vector<std::string> *>(context)->push_back(message);
        },
        &errors);
    for (int generation : {0, 2}) {
        SCOPED_TRACE("generation " + std::to_string(generation));
        Victim::destroyed = 0;
        Victim *victim = nullptr;
        {
            auto dropper = make<DropsInTrace>();
            dropper->self = dropper;
            dropper->victim = make<Victim>();  // the newest young object
            victim = dropper->victim.get();
        }
        DropsInTrace::armed = true;
        EXPECT_EQ(cyclegc::collect(generation), 1) << "the garbage cycle is collected";
        EXPECT_FALSE(DropsInTrace::armed);
        EXPECT_EQ(Victim::destroyed, 0) << "not freed from inside trace()";
        ASSERT_EQ(errors.size(), 1u);
        EXPECT_NE(errors[0].find("cyclegc::ref: the last reference"), std::string::npos) << errors[0];
        EXPECT_NE(errors[0].find("inside trace()"), std::string::npos) << errors[0];
        EXPECT_EQ(errors[0].find("tp_traverse"), std::string::npos) << errors[0];
        EXPECT_NE(errors[0].find("Victim"), std::string::npos) << errors[0];
        errors.clear();
        EXPECT_EQ(victim->use_count(), 1);
        EXPECT_TRUE(cgc_gc_is_tracked(victim->as_cobject()));
        { auto owned = ref<Victim>::adopt(victim); }  // the refused reference, dropped now
        EXPECT_EQ(Victim::destroyed, 1);
    }
    cgc_set_error_hook(previous, nullptr);
    cgc_error_clear();
}

struct Member {
    static inline int live = 0;
    Member() { ++live; }
    Member(const Member &) { ++live; }
    ~Member() { --live; }
};
struct Other : cyclegc::object {
    static inline int live = 0;
    Other() { ++live; }
    ~Other() { --live; }
};

struct Throws : cyclegc::object {
    Member first;
    ref<Other> other = make<Other>();
    std::vector<int> buffer = std::vector<int>(1000, 1);  // ASan: leaks if not destroyed
    Member last;
    explicit Throws(bool fail) {
        if (fail) throw std::runtime_error("constructor failed");
    }
    void trace(tracer &t) { t(other); }
};

TEST_F(CppMake, ConstructorExceptionLeaksNothing) {
    Member::live = Other::live = 0;
    cgc_ssize_t count_before = cyclegc::get_count(0);
    cgc_ssize_t tracked_before = static_cast<cgc_ssize_t>(cyclegc::get_objects().size());
    for (int i = 0; i < 100; ++i) EXPECT_THROW(make<Throws>(true), std::runtime_error);
    EXPECT_EQ(Member::live, 0);
    EXPECT_EQ(Other::live, 0);
    // Every collector allocation was given back, and nothing was tracked.
    EXPECT_EQ(cyclegc::get_count(0), count_before);
    EXPECT_EQ(static_cast<cgc_ssize_t>(cyclegc::get_objects().size()), tracked_before);
    auto ok = make<Throws>(false);
    EXPECT_EQ(Member::live, 2);
    EXPECT_EQ(Other::live, 1);
    EXPECT_EQ(cyclegc::get_count(0), count_before + 2);
    ok = nullptr;
    EXPECT_EQ(cyclegc::get_count(0), count_before);
    EXPECT_EQ(Other::live, 0);
}

struct ThrowsInMemberInit : cyclegc::object {
    Member member;
    ref<Other> other = make<Other>();
    int never = (throw std::logic_error("member initializer failed"), 0);
    void trace(tracer &t) { t(other); }
};

TEST_F(CppMake, MemberInitializerExceptionLeaksNothing) {
    Member::live = Other::live = 0;
    cgc_ssize_t count_before = cyclegc::get_count(0);
    EXPECT_THROW(make<ThrowsInMemberInit>(), std::logic_error);
    EXPECT_EQ(Member::live, 0);
    EXPECT_EQ(Other::live, 0);
    EXPECT_EQ(cyclegc::get_count(0), count_before);
}

// A constructor that hands out a weak reference to `this` and then throws:
// the weak reference must not outlive the freed memory.
struct RegistersThenThrows : cyclegc::object {
    static inline cyclegc::weak<RegistersThenThrows> *registry = nullptr;
    static inline int callbacks = 0;
    RegistersThenThrows() {
        *registry = cyclegc::weak<RegistersThenThrows>(ref<RegistersThenThrows>::borrow(this), [] { ++callbacks; });
        throw std::runtime_error("after registering");
    }
};

TEST_F(CppMake, ConstructorExceptionAfterMakingAWeakToItself) {
    cyclegc::weak<RegistersThenThrows> w;
    RegistersThenThrows::registry = &w;
    RegistersThenThrows::callbacks = 0;
    cgc_ssize_t count_before = cyclegc::get_count(0);
    EXPECT_THROW(make<RegistersThenThrows>(), std::runtime_error);
    ASSERT_TRUE(w.cobject());
    EXPECT_TRUE(w.expired());
    EXPECT_FALSE(w.lock());
    EXPECT_EQ(RegistersThenThrows::callbacks, 1);
    w.reset();
    EXPECT_EQ(cyclegc::get_count(0), count_before);
}

// An automatic collection may run inside make, before the object exists.
struct Cyclic : cyclegc::object {
    static inline int destroyed = 0;
    ref<Cyclic> next;
    void trace(tracer &t) { t(next); }
    ~Cyclic() { ++destroyed; }
};

TEST_F(CppMake, AutomaticCollectionFromMake) {
    Cyclic::destroyed = 0;
    cgc_ssize_t threshold = cyclegc::get_threshold(0);
    {
        auto a = make<Cyclic>();
        a->next = a;
    }
    cyclegc::set_threshold(5);
    cyclegc::enable();
    std::vector<ref<Cyclic>> keep;
    for (int i = 0; i < 20 && Cyclic::destroyed == 0; ++i) keep.push_back(make<Cyclic>());
    cyclegc::disable();
    cyclegc::set_threshold(threshold);
    EXPECT_EQ(Cyclic::destroyed, 1);
    for (auto &k : keep) EXPECT_EQ(k.use_count(), 1);
}

struct alignas(16) Aligned : cyclegc::object {
    alignas(16) unsigned char bytes[16] = {};
    ref<Aligned> next;
    void trace(tracer &t) { t(next); }
};

TEST_F(CppMake, OverAlignedUpToSixteen) {
    std::vector<ref<Aligned>> all;
    for (int i = 0; i < 50; ++i) {
        all.push_back(make<Aligned>());
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(all.back()->bytes) % 16, 0u);
    }
    all.front()->next = all.back();
    all.back()->next = all.front();
}

// ---- Finalization, clearing and destruction in a collected cycle -------------

std::vector<std::string> g_log;

struct Phased : cyclegc::object {
    static inline int destroyed = 0;
    static inline int finalized = 0;
    std::string name;
    ref<Phased> next;
    int canary = kCanary;
    explicit Phased(std::string n) : name(std::move(n)) {}
    void trace(tracer &t) { t(next); }
    void finalize() {
        ++finalized;
        // Before any clear: every reference in the cycle is intact.
        EXPECT_TRUE(next);
        if (next) {
            EXPECT_TRUE(next->next);
        }
        EXPECT_EQ(canary, kCanary);
        g_log.push_back("finalize " + name);
    }
    ~Phased() {
        EXPECT_EQ(canary, kCanary);
        // In a collected cycle a destructor sees its references cleared;
        // when the last reference goes outside a collection, it sees them.
        if (cgc_is_collecting()) {
            EXPECT_FALSE(next) << name << " sees an uncleared reference";
            g_log.push_back("destroy " + name + " (cleared)");
        } else {
            g_log.push_back("destroy " + name + (next ? " (intact)" : " (null)"));
        }
        canary = 0;
        ++destroyed;
    }
};

TEST_F(CppMake, FinalizeThenClearThenDestroy) {
    g_log.clear();
    Phased::destroyed = Phased::finalized = 0;
    {
        auto a = make<Phased>("a");
        auto b = make<Phased>("b");
        auto c = make<Phased>("c");
        a->next = b;
        b->next = c;
        c->next = a;
    }
    EXPECT_EQ(Phased::finalized, 0);
    EXPECT_EQ(cyclegc::collect(), 3);
    EXPECT_EQ(Phased::finalized, 3);
    EXPECT_EQ(Phased::destroyed, 3);
    ASSERT_EQ(g_log.size(), 6u);
    // All finalizers run before any destructor.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(g_log[i].rfind("finalize ", 0), 0u) << g_log[i];
    for (int i = 3; i < 6; ++i) EXPECT_TRUE(g_log[i].starts_with("destroy ") && g_log[i].ends_with("(cleared)")) << g_log[i];
}

TEST_F(CppMake, FinalizeRunsOnRefcountDeathToo) {
    g_log.clear();
    Phased::destroyed = Phased::finalized = 0;
    {
        auto a = make<Phased>("a");
        a->next = make<Phased>("b");
        a->next->next = make<Phased>("c");
        a->next->next->next = a->next;  // b <-> c, reachable only through a
        EXPECT_FALSE(cyclegc::is_finalized(a));
    }
    // a dies by counting (finalized first); b and c are a cycle.
    EXPECT_EQ(Phased::finalized, 1);
    EXPECT_EQ(Phased::destroyed, 1);
    EXPECT_EQ(g_log, (std::vector<std::string>{"finalize a", "destroy a (intact)"}));
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Phased::finalized, 3);
    EXPECT_EQ(Phased::destroyed, 3);
}

// A collected cycle without finalize(): every member is cleared before the
// destructors run, but a `const ref` cannot be cleared; the member it
// points to lives until the holder's destructor has run (docs/cpp.md).
struct ConstChain : cyclegc::object {
    static inline int destroyed = 0;
    static inline int saw_uncleared = 0;
    static inline int saw_dead_neighbour = 0;
    const ref<ConstChain> previous;  // (never cleared)
    ref<ConstChain> closing;
    bool alive = true;
    explicit ConstChain(ref<ConstChain> p) : previous(std::move(p)) {}
    void trace(tracer &t) { t(previous, closing); }
    ~ConstChain() {
        if (closing) ++saw_uncleared;
        if (previous && !previous->alive) ++saw_dead_neighbour;
        alive = false;
        ++destroyed;
    }
};

// Length 2: the first member is still referenced when its turn comes (the
// second's const ref), and is destroyed after the second. Length 1,000:
// over several of the collector's clearing windows, a member cleared early
// drops the last reference to one not reached yet (its death cascades).
TEST_F(CppMake, ConstRefNeighboursOutliveTheirHoldersInACollectedCycle) {
    for (int length : {2, 1000}) {
        ConstChain::destroyed = ConstChain::saw_uncleared = ConstChain::saw_dead_neighbour = 0;
        {
            auto first = make<ConstChain>(nullptr);
            ref<ConstChain> last = first;
            for (int i = 1; i < length; ++i) last = make<ConstChain>(last);
            first->closing = last;  // the cycle
        }
        EXPECT_EQ(ConstChain::destroyed, 0);
        EXPECT_EQ(cyclegc::collect(), length);
        EXPECT_EQ(ConstChain::destroyed, length);
        EXPECT_EQ(ConstChain::saw_uncleared, 0);
        EXPECT_EQ(ConstChain::saw_dead_neighbour, 0);
        EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE) << cgc_error_message();
    }
}

// A member of a collected cycle that an outside object's destructor stores
// a reference to, while the cycle is cleared, survives (cleared), is
// reported, and dies by its count later.
struct Keeper;
struct KeptMember : cyclegc::object {
    static inline int destroyed = 0;
    ref<Keeper> keeper;  // an untracked leaf, dying as this is cleared
    ref<KeptMember> partner;
    void trace(tracer &t) { t(keeper, partner); }
    ~KeptMember() { ++destroyed; }
};
struct Keeper : cyclegc::object {
    static inline ref<KeptMember> kept;
    KeptMember *target = nullptr;
    ~Keeper() { kept = ref<KeptMember>::borrow(target); }
};

TEST_F(CppMake, AMemberKeptByAnOutsideDestructorWhileClearingSurvives) {
    KeptMember::destroyed = 0;
    KeptMember *b_address;
    {
        auto a = make<KeptMember>();
        auto b = make<KeptMember>();
        a->partner = b;
        b->partner = a;
        a->keeper = make<Keeper>();
        a->keeper->target = b.get();
        b_address = b.get();
    }
    cgc_error_clear();
    EXPECT_EQ(cyclegc::collect(), 1);  // a; b survives
    EXPECT_EQ(KeptMember::destroyed, 1);
    ASSERT_EQ(Keeper::kept.get(), b_address);
    EXPECT_FALSE(Keeper::kept->partner) << "the survivor was cleared";
    EXPECT_EQ(Keeper::kept.use_count(), 1);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_MISUSE);
    EXPECT_NE(std::string(cgc_error_message()).find("still alive"), std::string::npos) << cgc_error_message();
    cgc_error_clear();
    Keeper::kept = nullptr;
    EXPECT_EQ(KeptMember::destroyed, 2);
}

// PEP 442: finalize() may resurrect `this`; it is finalized once per
// lifetime, and later freed without a second finalize.
struct Phoenix : cyclegc::object {
    static inline ref<Phoenix> saved;
    static inline int finalized = 0;
    static inline int destroyed = 0;
    static inline bool resurrect = true;
    ref<Phoenix> next;
    int canary = kCanary;
    void trace(tracer &t) { t(next); }
    void finalize() {
        ++finalized;
        if (resurrect) saved = ref<Phoenix>::borrow(this);
    }
    ~Phoenix() {
        EXPECT_EQ(canary, kCanary);
        canary = 0;
        ++destroyed;
    }
};

class CppMakePhoenix : public CppMake {
  protected:
    void SetUp() override {
        CppMake::SetUp();
        Phoenix::finalized = Phoenix::destroyed = 0;
        Phoenix::resurrect = true;
    }
    void TearDown() override {
        Phoenix::saved = nullptr;
        CppMake::TearDown();
    }
};

TEST_F(CppMakePhoenix, ResurrectedFromACollection) {
    {
        auto p = make<Phoenix>();
        p->next = p;
    }
    EXPECT_EQ(cyclegc::collect(), 0);  // resurrected: nothing collected
    EXPECT_EQ(Phoenix::finalized, 1);
    EXPECT_EQ(Phoenix::destroyed, 0);
    ASSERT_TRUE(Phoenix::saved);
    EXPECT_EQ(Phoenix::saved->canary, kCanary);
    EXPECT_EQ(Phoenix::saved->next, Phoenix::saved);  // not cleared
    EXPECT_TRUE(cyclegc::is_finalized(Phoenix::saved));
    EXPECT_TRUE(cyclegc::is_tracked(Phoenix::saved));
    // Garbage again: collected, and finalize() does not run a second time.
    Phoenix::saved = nullptr;
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(Phoenix::finalized, 1);
    EXPECT_EQ(Phoenix::destroyed, 1);
}

TEST_F(CppMakePhoenix, ResurrectionKeepsTheWholeCycle) {
    {
        auto a = make<Phoenix>();
        auto b = make<Phoenix>();
        a->next = b;
        b->next = a;
    }
    // Each finalizer saves itself (the second replaces the first): the one
    // saved resurrects, and with it everything it reaches.
    EXPECT_EQ(cyclegc::collect(), 0);
    EXPECT_EQ(Phoenix::finalized, 2);
    EXPECT_EQ(Phoenix::destroyed, 0);
    ASSERT_TRUE(Phoenix::saved);
    ASSERT_TRUE(Phoenix::saved->next);
    EXPECT_EQ(Phoenix::saved->next->next, Phoenix::saved);  // neither was cleared
    Phoenix::saved = nullptr;
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Phoenix::finalized, 2);
    EXPECT_EQ(Phoenix::destroyed, 2);
}

TEST_F(CppMakePhoenix, ResurrectedFromRefcountDeath) {
    make<Phoenix>();  // the temporary is the only reference
    EXPECT_EQ(Phoenix::finalized, 1);
    EXPECT_EQ(Phoenix::destroyed, 0);
    ASSERT_TRUE(Phoenix::saved);
    EXPECT_EQ(Phoenix::saved.use_count(), 1);
    EXPECT_TRUE(cyclegc::is_finalized(Phoenix::saved));
    EXPECT_TRUE(cyclegc::is_tracked(Phoenix::saved));  // still visible to the collector
    Phoenix::saved = nullptr;
    EXPECT_EQ(Phoenix::finalized, 1);
    EXPECT_EQ(Phoenix::destroyed, 1);
}

TEST_F(CppMakePhoenix, ResurrectedIntoACycleThenCollected) {
    make<Phoenix>();
    ASSERT_TRUE(Phoenix::saved);
    Phoenix::saved->next = Phoenix::saved;
    Phoenix::saved = nullptr;
    EXPECT_EQ(Phoenix::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(Phoenix::finalized, 1);
    EXPECT_EQ(Phoenix::destroyed, 1);
}

// ---- Exceptions from finalize() ----------------------------------------------

struct Unraisable {
    std::vector<std::string> messages;
    std::vector<cgc_object *> objects;
};

void capture_unraisable(Unraisable &into) {
    cyclegc::set_unraisable_hook([&into](std::string_view message, cgc_object *object) {
        into.messages.emplace_back(message);
        into.objects.push_back(object);
    });
}

struct BadFinalizer : cyclegc::object {
    static inline int finalized = 0;
    static inline int destroyed = 0;
    ref<BadFinalizer> next;
    bool throw_std = true;
    void trace(tracer &t) { t(next); }
    void finalize() {
        ++finalized;
        if (throw_std) throw std::runtime_error("finalizer failed");
        throw 42;
    }
    ~BadFinalizer() { ++destroyed; }
};

TEST_F(CppMake, FinalizerExceptionsGoToTheUnraisableHook) {
    BadFinalizer::finalized = BadFinalizer::destroyed = 0;
    Unraisable got;
    capture_unraisable(got);
    cgc_object *a_c = nullptr;
    {
        auto a = make<BadFinalizer>();
        auto b = make<BadFinalizer>();
        b->throw_std = false;
        a->next = b;
        b->next = a;
        a_c = a->as_cobject();
    }
    cgc_ssize_t collected = -1;
    EXPECT_NO_THROW(collected = cyclegc::collect());
    EXPECT_EQ(collected, 2);  // the collection completed
    EXPECT_EQ(BadFinalizer::finalized, 2);
    EXPECT_EQ(BadFinalizer::destroyed, 2);
    ASSERT_EQ(got.messages.size(), 2u);
    std::sort(got.messages.begin(), got.messages.end());
    EXPECT_EQ(got.messages[0], "finalize(): std::runtime_error: finalizer failed");
    EXPECT_EQ(got.messages[1], "finalize(): unknown exception");
    EXPECT_TRUE(std::find(got.objects.begin(), got.objects.end(), a_c) != got.objects.end());
}

TEST_F(CppMake, FinalizerExceptionOnRefcountDeath) {
    BadFinalizer::finalized = BadFinalizer::destroyed = 0;
    Unraisable got;
    capture_unraisable(got);
    EXPECT_NO_THROW(make<BadFinalizer>());
    EXPECT_EQ(BadFinalizer::finalized, 1);
    EXPECT_EQ(BadFinalizer::destroyed, 1);
    ASSERT_EQ(got.messages.size(), 1u);
    EXPECT_EQ(got.messages[0], "finalize(): std::runtime_error: finalizer failed");
}

TEST_F(CppMake, DefaultUnraisableHookPrintsTypeAndMessage) {
    BadFinalizer::finalized = BadFinalizer::destroyed = 0;
    cyclegc::set_unraisable_hook({});
    ::testing::internal::CaptureStderr();
    {
        auto a = make<BadFinalizer>();
        a->next = a;
    }
    cyclegc::collect();
    std::string output = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(BadFinalizer::destroyed, 1);
    EXPECT_NE(output.find("std::runtime_error"), std::string::npos) << output;
    EXPECT_NE(output.find("finalizer failed"), std::string::npos) << output;
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_UNRAISABLE);
}

TEST_F(CppMake, AThrowingHookIsContained) {
    BadFinalizer::finalized = BadFinalizer::destroyed = 0;
    int calls = 0;
    cyclegc::set_unraisable_hook([&](std::string_view, cgc_object *) {
        ++calls;
        throw std::logic_error("the hook itself fails");
    });
    {
        auto a = make<BadFinalizer>();
        a->next = a;
    }
    EXPECT_NO_THROW(cyclegc::collect());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(BadFinalizer::destroyed, 1);
}

// An exception from trace() while a collection analyses the graph does
// not escape into it (it had left the collector marked as collecting, so no
// later collection ever ran): it is reported as unraisable, and that
// collection frees nothing, since a traversal cut short could hide a live
// object; the next one works.
struct ThrowsInTrace : cyclegc::object {
    static inline bool armed = false;
    static inline int destroyed = 0;
    ref<ThrowsInTrace> next;
    void trace(tracer &t) {
        if (armed && !t.clearing()) throw std::runtime_error("trace failed");
        t(next);
    }
    ~ThrowsInTrace() { ++destroyed; }
};

TEST_F(CppMake, AnExceptionFromTraceIsReportedAndThatCollectionFreesNothing) {
    ThrowsInTrace::destroyed = 0;
    std::vector<std::string> reported;
    cyclegc::set_unraisable_hook([&](std::string_view message, cgc_object *) { reported.emplace_back(message); });
    {
        auto a = make<ThrowsInTrace>();
        a->next = a;
    }
    ThrowsInTrace::armed = true;
    cgc_ssize_t found = -1;
    EXPECT_NO_THROW(found = cyclegc::collect());
    ThrowsInTrace::armed = false;
    EXPECT_EQ(found, 0);
    EXPECT_EQ(ThrowsInTrace::destroyed, 0);
    ASSERT_FALSE(reported.empty());
    EXPECT_NE(reported[0].find("trace failed"), std::string::npos) << reported[0];
    EXPECT_EQ(cyclegc::collect(), 1);  // the collector still works
    EXPECT_EQ(ThrowsInTrace::destroyed, 1);
}

// A destructor that takes a ref to `this` for a moment (passes it to a
// function) does not deallocate its object again; one that keeps it is
// reported, and the memory is kept rather than handed out again.
struct TempRefInDestructor : cyclegc::object {
    static inline int destroyed = 0;
    static inline bool keep = false;
    static inline ref<TempRefInDestructor> kept;
    ref<TempRefInDestructor> next;
    void trace(tracer &t) { t(next); }
    static void observe(const ref<TempRefInDestructor> &) {}
    ~TempRefInDestructor() {
        ++destroyed;
        observe(ref<TempRefInDestructor>::borrow(this));
        if (keep) kept = ref<TempRefInDestructor>::borrow(this);
    }
};

TEST_F(CppMake, ARefToThisInsideTheDestructorDoesNotDestroyItAgain) {
    TempRefInDestructor::destroyed = 0;
    { auto a = make<TempRefInDestructor>(); }
    EXPECT_EQ(TempRefInDestructor::destroyed, 1);
    {
        auto a = make<TempRefInDestructor>();
        a->next = a;
    }
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(TempRefInDestructor::destroyed, 2);
    auto b = make<TempRefInDestructor>();
    auto c = make<TempRefInDestructor>();
    EXPECT_NE(b.get(), c.get()) << "a slot freed twice was handed out twice";
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE) << cgc_error_message();

    TempRefInDestructor::keep = true;
    b = nullptr;
    TempRefInDestructor::keep = false;
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_MISUSE);
    EXPECT_NE(std::string(cgc_error_message()).find("kept"), std::string::npos) << cgc_error_message();
    auto d = make<TempRefInDestructor>();
    EXPECT_NE(d.get(), TempRefInDestructor::kept.get()) << "the memory of the kept object was reused";
    cgc_error_clear();
}

}  // namespace
}  // namespace cpp_make_test
