// cyclegc::tracer: one `trace` member serves as traverse and clear; cycles
// through every standard container the tracer understands are collected;
// nested and user types; derived types' trace; polymorphic cycles.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace cpp_tracer_test {
namespace {

using cyclegc::make;
using cyclegc::ref;
using cyclegc::tracer;

constexpr int kCanary = 0x7AC3D00D;

// The objects a tracer visits, in order.
std::vector<cgc_object *> visited_by(cyclegc::object &o, void (*trace)(cyclegc::object &, tracer &)) {
    std::vector<cgc_object *> seen;
    tracer t = tracer::visitor(
        [](cgc_object *op, void *arg) {
            static_cast<std::vector<cgc_object *> *>(arg)->push_back(op);
            return 0;
        },
        &seen);
    trace(o, t);
    EXPECT_EQ(t.result(), 0);
    return seen;
}

template <class T>
std::vector<cgc_object *> visited(T &o) {
    return visited_by(o, [](cyclegc::object &self, tracer &t) { static_cast<T &>(self).trace(t); });
}

cgc_object *c(const auto &r) { return r->as_cobject(); }

bool referents_contain(const ref<cgc_object> &from, cgc_object *target) {
    ref<cgc_object> list[] = {from};
    for (auto &r : cyclegc::get_referents(list))
        if (r.get() == target) return true;
    return false;
}

// ---- Cycles through each container ------------------------------------------

int g_box_destroyed = 0;

// A Box holds its references in one container, chosen by the policy.
template <class Policy>
struct Box : cyclegc::object {
    typename Policy::template container<Box> items{};
    int canary = kCanary;
    void trace(tracer &t) { t(items); }
    ~Box() {
        EXPECT_EQ(canary, kCanary);
        canary = 0;
        ++g_box_destroyed;
    }
};

struct VectorPolicy {
    template <class B> using container = std::vector<ref<B>>;
    static void link(auto &c, const auto &r) { c.push_back(r); }
};
struct ArrayPolicy {
    template <class B> using container = std::array<ref<B>, 3>;
    static void link(auto &c, const auto &r) { c[1] = r; }
};
struct DequePolicy {
    template <class B> using container = std::deque<ref<B>>;
    static void link(auto &c, const auto &r) { c.push_front(r); }
};
struct ListPolicy {
    template <class B> using container = std::list<ref<B>>;
    static void link(auto &c, const auto &r) { c.push_back(r); }
};
struct ForwardListPolicy {
    template <class B> using container = std::forward_list<ref<B>>;
    static void link(auto &c, const auto &r) { c.push_front(r); }
};
struct MapKeyPolicy {
    template <class B> using container = std::map<ref<B>, int>;
    static void link(auto &c, const auto &r) { c.emplace(r, 1); }
};
struct MapValuePolicy {
    template <class B> using container = std::map<int, ref<B>>;
    static void link(auto &c, const auto &r) { c.emplace(static_cast<int>(c.size()), r); }
};
struct MultimapPolicy {
    template <class B> using container = std::multimap<ref<B>, ref<B>>;
    static void link(auto &c, const auto &r) { c.emplace(r, r); }
};
struct UnorderedMapKeyPolicy {
    template <class B> using container = std::unordered_map<ref<B>, std::string>;
    static void link(auto &c, const auto &r) { c.emplace(r, "key"); }
};
struct UnorderedMapValuePolicy {
    template <class B> using container = std::unordered_map<std::string, ref<B>>;
    static void link(auto &c, const auto &r) { c.emplace(std::to_string(c.size()), r); }
};
struct UnorderedMultimapPolicy {
    template <class B> using container = std::unordered_multimap<int, ref<B>>;
    static void link(auto &c, const auto &r) { c.emplace(0, r); }
};
struct SetPolicy {
    template <class B> using container = std::set<ref<B>>;
    static void link(auto &c, const auto &r) { c.insert(r); }
};
struct MultisetPolicy {
    template <class B> using container = std::multiset<ref<B>>;
    static void link(auto &c, const auto &r) { c.insert(r); }
};
struct UnorderedSetPolicy {
    template <class B> using container = std::unordered_set<ref<B>>;
    static void link(auto &c, const auto &r) { c.insert(r); }
};
struct OptionalPolicy {
    template <class B> using container = std::optional<ref<B>>;
    static void link(auto &c, const auto &r) { c = r; }
};
struct VariantPolicy {
    template <class B> using container = std::variant<std::monostate, int, std::string, ref<B>>;
    static void link(auto &c, const auto &r) { c = r; }
};
struct PairPolicy {
    template <class B> using container = std::pair<int, ref<B>>;
    static void link(auto &c, const auto &r) { c.second = r; }
};
struct TuplePolicy {
    template <class B> using container = std::tuple<std::string, ref<B>, double>;
    static void link(auto &c, const auto &r) { std::get<1>(c) = r; }
};
template <class B>
struct Edge {  // a user type with its own trace
    std::string label;
    ref<B> to;
    void trace(tracer &t) { t(to); }
};
struct UserTypePolicy {
    template <class B> using container = Edge<B>;
    static void link(auto &c, const auto &r) { c.to = r; }
};
struct UniquePtrPolicy {
    template <class B> using container = std::unique_ptr<Edge<B>>;
    static void link(auto &c, const auto &r) { c = std::make_unique<Edge<std::remove_cvref_t<decltype(*r)>>>(Edge<std::remove_cvref_t<decltype(*r)>>{"e", r}); }
};
struct UniquePtrRefPolicy {
    template <class B> using container = std::unique_ptr<ref<B>>;
    static void link(auto &c, const auto &r) { c = std::make_unique<std::remove_cvref_t<decltype(r)>>(r); }
};
// Nested, recursively: a vector of maps of pairs, optional variants...
struct NestedPolicy {
    template <class B>
    using container = std::vector<std::map<std::string, std::pair<std::optional<std::variant<int, ref<B>>>,
                                                                  std::list<Edge<B>>>>>;
    static void link(auto &c, const auto &r) {
        c.emplace_back();
        auto &entry = c.back()["x"];
        entry.first = r;
        entry.second.push_back({"edge", r});
    }
};
struct DequeOfTuplesPolicy {
    template <class B> using container = std::deque<std::tuple<int, std::set<ref<B>>, std::unique_ptr<ref<B>>>>;
    static void link(auto &c, const auto &r) {
        c.emplace_back(1, std::set{r}, std::make_unique<std::remove_cvref_t<decltype(r)>>(r));
    }
};

template <class Policy>
class CppTracerContainer : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        g_box_destroyed = 0;
    }
};

using Policies = ::testing::Types<VectorPolicy, ArrayPolicy, DequePolicy, ListPolicy, ForwardListPolicy,
                                  MapKeyPolicy, MapValuePolicy, MultimapPolicy, UnorderedMapKeyPolicy,
                                  UnorderedMapValuePolicy, UnorderedMultimapPolicy, SetPolicy,
                                  MultisetPolicy, UnorderedSetPolicy, OptionalPolicy, VariantPolicy,
                                  PairPolicy, TuplePolicy, UserTypePolicy, UniquePtrPolicy,
                                  UniquePtrRefPolicy, NestedPolicy, DequeOfTuplesPolicy>;
TYPED_TEST_SUITE(CppTracerContainer, Policies);

TYPED_TEST(CppTracerContainer, TraverseVisitsTheReference) {
    using B = Box<TypeParam>;
    auto a = make<B>();
    auto b = make<B>();
    EXPECT_TRUE(visited(*a).empty());
    TypeParam::link(a->items, b);
    std::vector<cgc_object *> seen = visited(*a);
    ASSERT_FALSE(seen.empty());
    for (cgc_object *op : seen) EXPECT_EQ(op, c(b));
    EXPECT_TRUE(referents_contain(cyclegc::as_cobject(a), c(b)));
    EXPECT_FALSE(referents_contain(cyclegc::as_cobject(b), c(a)));
}

TYPED_TEST(CppTracerContainer, TwoCycleIsCollected) {
    using B = Box<TypeParam>;
    {
        auto a = make<B>();
        auto b = make<B>();
        TypeParam::link(a->items, b);
        TypeParam::link(b->items, a);
        EXPECT_TRUE(cyclegc::is_tracked(a));
        EXPECT_EQ(cyclegc::collect(), 0);  // reachable from here
    }
    EXPECT_EQ(g_box_destroyed, 0);  // a cycle: counting alone cannot free it
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(g_box_destroyed, 2);
    EXPECT_EQ(cyclegc::collect(), 0);
}

TYPED_TEST(CppTracerContainer, SelfCycleIsCollected) {
    using B = Box<TypeParam>;
    {
        auto a = make<B>();
        TypeParam::link(a->items, a);
    }
    EXPECT_EQ(g_box_destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(g_box_destroyed, 1);
}

TYPED_TEST(CppTracerContainer, CycleHeldFromOutsideSurvives) {
    using B = Box<TypeParam>;
    auto keep = make<B>();
    {
        auto b = make<B>();
        TypeParam::link(keep->items, b);
        TypeParam::link(b->items, keep);
    }
    cgc_ssize_t count = keep.use_count();
    EXPECT_GE(count, 2);
    EXPECT_EQ(cyclegc::collect(), 0);
    EXPECT_EQ(g_box_destroyed, 0);
    EXPECT_EQ(keep.use_count(), count);  // intact: nothing was cleared
    keep = nullptr;
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(g_box_destroyed, 2);
}

TYPED_TEST(CppTracerContainer, ClearDropsEveryReference) {
    using B = Box<TypeParam>;
    auto a = make<B>();
    auto b = make<B>();
    TypeParam::link(a->items, b);
    EXPECT_EQ(b.use_count(), 1 + static_cast<cgc_ssize_t>(visited(*a).size()));
    tracer clearer = tracer::clearer();
    EXPECT_TRUE(clearer.clearing());
    a->trace(clearer);
    EXPECT_EQ(b.use_count(), 1);
    EXPECT_TRUE(visited(*a).empty());
}

// ---- The tracer itself --------------------------------------------------------

struct Leaf : cyclegc::object {
    static inline int destroyed = 0;
    int value = 0;
    ~Leaf() { ++destroyed; }
};

struct Everything : cyclegc::object {
    ref<Leaf> one;
    const ref<Leaf> constant;
    ref<Leaf> null;
    std::vector<ref<Leaf>> many;
    std::map<ref<Leaf>, ref<Leaf>> keys_and_values;
    std::pair<int, ref<Leaf>> pair;
    std::tuple<ref<Leaf>, std::string> tuple;
    std::variant<int, ref<Leaf>> variant_int = 3;  // holds no reference
    cyclegc::weak<Leaf> weak_leaf;
    ref<cgc_object> as_c;
    int plain = 0;                  // not traced
    Leaf *raw = nullptr;            // not traced
    explicit Everything(ref<Leaf> k) : constant(std::move(k)) {}
    void trace(tracer &t) { t(one, constant, null, many, keys_and_values, pair, tuple, variant_int, weak_leaf, as_c); }
};

TEST(CppTracer, VisitsEachReferenceOnceInOrder) {
    auto leaves = std::vector<ref<Leaf>>();
    for (int i = 0; i < 9; ++i) leaves.push_back(make<Leaf>());
    auto e = make<Everything>(leaves[1]);
    e->one = leaves[0];
    e->many = {leaves[2], leaves[3]};
    e->keys_and_values.emplace(leaves[4], leaves[5]);
    e->pair = {1, leaves[6]};
    std::get<0>(e->tuple) = leaves[7];
    e->as_c = cyclegc::as_cobject(leaves[8]);
    std::vector<cgc_object *> expected;
    for (auto &l : leaves) expected.push_back(c(l));
    EXPECT_EQ(visited(*e), expected);
}

TEST(CppTracer, VisitStopsAtTheFirstNonZeroResult) {
    auto e = make<Everything>(make<Leaf>());
    e->one = make<Leaf>();
    int calls = 0;
    tracer t = tracer::visitor(
        [](cgc_object *, void *arg) {
            ++*static_cast<int *>(arg);
            return 42;
        },
        &calls);
    e->trace(t);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(t.result(), 42);
}

TEST(CppTracer, ClearResetsMutableReferencesAndEmptiesContainers) {
    Leaf::destroyed = 0;
    auto kept = make<Leaf>();
    {
        auto e = make<Everything>(kept);
        e->one = make<Leaf>();
        e->many = {make<Leaf>(), make<Leaf>()};
        e->keys_and_values.emplace(make<Leaf>(), make<Leaf>());
        e->pair.second = make<Leaf>();
        std::get<0>(e->tuple) = make<Leaf>();
        e->variant_int = make<Leaf>();
        e->as_c = cyclegc::as_cobject(make<Leaf>());
        e->plain = 17;
        tracer t = tracer::clearer();
        e->trace(t);
        EXPECT_EQ(Leaf::destroyed, 9);
        EXPECT_FALSE(e->one);
        EXPECT_TRUE(e->many.empty());
        EXPECT_TRUE(e->keys_and_values.empty());
        EXPECT_FALSE(e->pair.second);
        EXPECT_FALSE(std::get<0>(e->tuple));
        EXPECT_FALSE(std::get<ref<Leaf>>(e->variant_int));
        EXPECT_FALSE(e->as_c);
        EXPECT_EQ(e->plain, 17);  // values are left alone
        EXPECT_EQ(std::get<1>(e->tuple), "");
        EXPECT_EQ(e->constant, kept);  // a const ref cannot be cleared, only visited
    }
    EXPECT_EQ(kept.use_count(), 1);
}

// A leaf type (no trace member) is never tracked; it can end no cycle.
TEST(CppTracer, TypesWithoutTraceAreNotTracked) {
    auto leaf = make<Leaf>();
    EXPECT_FALSE(cyclegc::is_tracked(leaf));
    EXPECT_TRUE(cgc_is_gc(leaf->as_cobject()));  // but a GC type: weak refs work
    auto e = make<Everything>(leaf);
    EXPECT_TRUE(cyclegc::is_tracked(e));
}

// What the tracer accepts, checked at compile time.
namespace traits {
using cyclegc::detail::traceable_v;
struct N : cyclegc::object {};
struct Custom {
    ref<N> r;
    void trace(tracer &t) { t(r); }
};
static_assert(traceable_v<ref<N>>);
static_assert(traceable_v<const ref<N>>);
static_assert(traceable_v<ref<cgc_object>>);
static_assert(traceable_v<cyclegc::weak<N>>);
static_assert(traceable_v<Custom>);
static_assert(traceable_v<std::vector<Custom>>);
static_assert(traceable_v<std::map<int, std::vector<ref<N>>>>);
static_assert(traceable_v<std::unordered_map<ref<N>, double>>);
static_assert(traceable_v<std::pair<const std::string, ref<N>>>);
static_assert(traceable_v<std::tuple<int, ref<N>, std::string>>);
static_assert(traceable_v<std::variant<std::monostate, ref<N>>>);
static_assert(traceable_v<std::optional<Custom>>);
static_assert(traceable_v<std::unique_ptr<Custom>>);
static_assert(traceable_v<std::array<std::optional<ref<N>>, 2>>);
static_assert(!traceable_v<int>);
static_assert(!traceable_v<N *>);
static_assert(!traceable_v<std::string>);
static_assert(!traceable_v<std::vector<int>>);
static_assert(!traceable_v<std::vector<N *>>);
static_assert(!traceable_v<std::map<int, int>>);
static_assert(!traceable_v<std::pair<int, int>>);       // holds no reference
static_assert(!traceable_v<std::pair<int, N *>>);       // a raw pointer inside
static_assert(!traceable_v<std::tuple<ref<N>, N *>>);  // idem, beside a ref
static_assert(!traceable_v<std::variant<ref<N>, std::vector<int>>>);
static_assert(!traceable_v<std::shared_ptr<N>>);
static_assert(!traceable_v<std::unique_ptr<int>>);
}  // namespace traits

// trace_traits is the extension point for wrapper types.
template <class T>
struct Slot {
    ref<T> held;
};

}  // namespace
}  // namespace cpp_tracer_test

template <class T>
struct cyclegc::trace_traits<cpp_tracer_test::Slot<T>> {
    static constexpr bool traceable = true;
    static void trace(tracer &t, cpp_tracer_test::Slot<T> &slot) { t(slot.held); }
};

namespace cpp_tracer_test {
namespace {

struct UsesSlots : cyclegc::object {
    static inline int destroyed = 0;
    std::vector<Slot<UsesSlots>> slots;
    void trace(tracer &t) { t(slots); }
    ~UsesSlots() { ++destroyed; }
};

class CppTracer2 : public cgc_test::CppFixture {};

TEST_F(CppTracer2, TraceTraitsSpecializationForAWrapper) {
    static_assert(cyclegc::detail::traceable_v<Slot<UsesSlots>>);
    UsesSlots::destroyed = 0;
    {
        auto a = make<UsesSlots>();
        a->slots.push_back({a});
        a->slots.push_back({nullptr});
        EXPECT_EQ(visited(*a), std::vector<cgc_object *>{c(a)});
    }
    EXPECT_EQ(UsesSlots::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(UsesSlots::destroyed, 1);
}

// ---- Derived types ------------------------------------------------------------

std::vector<std::string> g_events;

struct Animal : cyclegc::object {
    ref<cyclegc::object> friend_;  // base-class refs
    ref<Animal> partner;
    void trace(tracer &t) { t(partner); }
    ~Animal() { g_events.push_back("~Animal"); }
};

struct Dog : Animal {
    std::vector<ref<Animal>> pack;
    std::vector<int> bones = std::vector<int>(50, 1);  // leaks under ASan if ~Dog is skipped
    void trace(tracer &t) {
        Animal::trace(t);  // the base's references first
        t(pack);
    }
    ~Dog() { g_events.push_back("~Dog"); }
};

struct Puppy : Dog {  // no trace of its own: Dog's applies
    ~Puppy() { g_events.push_back("~Puppy"); }
};

TEST_F(CppTracer2, DerivedTraceAddsToTheBase) {
    auto dog = make<Dog>();
    auto a = make<Animal>();
    auto b = make<Animal>();
    dog->partner = a;
    dog->pack = {b, a};
    EXPECT_EQ(visited(*dog), (std::vector<cgc_object *>{c(a), c(b), c(a)}));
}

TEST_F(CppTracer2, CycleThroughTheBasePartIsCollected) {
    g_events.clear();
    {
        auto dog = make<Dog>();
        dog->partner = dog;
    }
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(g_events, (std::vector<std::string>{"~Dog", "~Animal"}));
}

TEST_F(CppTracer2, CycleThroughTheDerivedPartIsCollected) {
    g_events.clear();
    {
        auto dog = make<Dog>();
        dog->pack.push_back(dog);
    }
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(g_events, (std::vector<std::string>{"~Dog", "~Animal"}));
}

// The collector uses the type given to make<>: through a ref<Animal>,
// Dog::trace (not Animal::trace) and ~Dog run, with no virtual function.
TEST_F(CppTracer2, PolymorphicCycleThroughBaseRefs) {
    static_assert(!std::is_polymorphic_v<Dog>);
    g_events.clear();
    {
        ref<Animal> as_animal = make<Dog>();
        ref<Animal> other = make<Animal>();
        // The cycle goes through Dog::pack only, which Animal::trace cannot see.
        static_pointer_cast<Dog>(as_animal)->pack.push_back(other);
        other->partner = as_animal;
        EXPECT_EQ(as_animal->as_cobject()->ob_type, cyclegc::type_of<Dog>());
    }
    EXPECT_TRUE(g_events.empty());
    EXPECT_EQ(cyclegc::collect(), 2);
    std::sort(g_events.begin(), g_events.end());
    EXPECT_EQ(g_events, (std::vector<std::string>{"~Animal", "~Animal", "~Dog"}));
}

TEST_F(CppTracer2, InheritedTraceOfAGrandchild) {
    g_events.clear();
    {
        ref<Animal> p = make<Puppy>();
        static_pointer_cast<Dog>(p)->pack.push_back(p);
    }
    EXPECT_EQ(cyclegc::collect(), 1);
    EXPECT_EQ(g_events, (std::vector<std::string>{"~Puppy", "~Dog", "~Animal"}));
}

// Polymorphic (virtual) hierarchies, and the object base not first in the
// layout (a vtable pointer, or another base, before it).
struct Mixin {
    int mixin_canary = kCanary;
    virtual ~Mixin() = default;
};
struct VNode : Mixin, cyclegc::object {
    static inline int destroyed = 0;
    ref<VNode> next;
    virtual void trace(tracer &t) { t(next); }
    ~VNode() override { ++destroyed; }
};
struct VNodeWithList : VNode {
    static inline int destroyed = 0;
    std::list<ref<VNode>> more;
    void trace(tracer &t) override {
        VNode::trace(t);
        t(more);
    }
    ~VNodeWithList() override { ++destroyed; }
};

TEST_F(CppTracer2, VirtualHierarchyWithObjectNotFirst) {
    VNode::destroyed = VNodeWithList::destroyed = 0;
    {
        ref<VNode> a = make<VNodeWithList>();
        ref<VNode> b = make<VNode>();
        EXPECT_NE(static_cast<void *>(a.get()), static_cast<void *>(static_cast<cyclegc::object *>(a.get())));
        a->next = b;
        b->next = make<VNode>();
        cyclegc::dynamic_pointer_cast<VNodeWithList>(a)->more.push_back(a);
        EXPECT_EQ(cyclegc::dynamic_pointer_cast<VNodeWithList>(b), nullptr);
    }
    EXPECT_EQ(VNode::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 3);
    EXPECT_EQ(VNode::destroyed, 3);
    EXPECT_EQ(VNodeWithList::destroyed, 1);
}

// A weak member is an edge to the weak reference object, not to the
// referent: it keeps nothing alive.
struct WeakHolder : cyclegc::object {
    static inline int destroyed = 0;
    cyclegc::weak<WeakHolder> other;
    void trace(tracer &t) { t(other); }
    ~WeakHolder() { ++destroyed; }
};

TEST_F(CppTracer2, WeakMembersKeepNothingAlive) {
    WeakHolder::destroyed = 0;
    auto a = make<WeakHolder>();
    {
        auto b = make<WeakHolder>();
        a->other = cyclegc::weak<WeakHolder>(b);
        b->other = cyclegc::weak<WeakHolder>(a);
    }
    EXPECT_EQ(WeakHolder::destroyed, 1);  // b went at once: only a weak ref to it remained
    EXPECT_TRUE(a->other.expired());
    a = nullptr;
    EXPECT_EQ(WeakHolder::destroyed, 2);
}

// A long ring of C++ objects is collected without recursion.
struct RingNode : cyclegc::object {
    static inline int destroyed = 0;
    ref<RingNode> next;
    void trace(tracer &t) { t(next); }
    ~RingNode() { ++destroyed; }
};

TEST_F(CppTracer2, MillionRingIsCollected) {
    constexpr int kLength = 1'000'000;
    RingNode::destroyed = 0;
    {
        auto first = make<RingNode>();
        RingNode *last = first.get();
        for (int i = 1; i < kLength; ++i) {
            last->next = make<RingNode>();
            last = last->next.get();
        }
        last->next = first;
    }
    EXPECT_EQ(RingNode::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), kLength);
    EXPECT_EQ(RingNode::destroyed, kLength);
}

// trace and finalize may be private once the type befriends cyclegc::access:
// the type is tracked, finalized, and its cycles collected.
class PrivateMembers : public cyclegc::object {
    friend class cyclegc::access;
    void trace(tracer &t) { t(next_); }
    void finalize() { ++finalized; }
    ref<PrivateMembers> next_;

  public:
    static inline int finalized = 0;
    void link(ref<PrivateMembers> next) { next_ = std::move(next); }
};

TEST_F(CppTracer2, PrivateTraceBefriendingAccessIsCollected) {
    PrivateMembers::finalized = 0;
    auto a = make<PrivateMembers>();
    auto b = make<PrivateMembers>();
    a->link(b);
    b->link(a);
    EXPECT_TRUE(cyclegc::is_tracked(a));
    a = b = nullptr;
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(PrivateMembers::finalized, 2);
}

}  // namespace
}  // namespace cpp_tracer_test
