// cyclegc::ref<T>: size, counting, copy/move/compare/hash/swap, nullptr,
// casts, containers, destructors when the last reference goes, and freeing
// a 10-million-long chain with one release.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cpp_ref_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

constexpr int kCanary = 0x5AFEC0DE;

// Counts constructions and destructions; the canary catches use after free
// (the destructor poisons it) and double destruction.
struct Counted : cyclegc::object {
    static inline int live = 0;
    static inline int destroyed = 0;
    int value;
    int canary = kCanary;
    explicit Counted(int v = 0) : value(v) { ++live; }
    ~Counted() {
        EXPECT_EQ(canary, kCanary) << "destroyed twice or corrupted";
        canary = 0;
        --live;
        ++destroyed;
    }
};

// ref<T> of an incomplete type, as a member, before T is defined.
struct Later;
struct HoldsLater : cyclegc::object {
    ref<Later> later;
    void trace(cyclegc::tracer &t) { t(later); }
};
struct Later : cyclegc::object {
    static inline int destroyed = 0;
    ref<HoldsLater> back;
    void trace(cyclegc::tracer &t) { t(back); }
    ~Later() { ++destroyed; }
};

struct Node : cyclegc::object {
    static inline int destroyed = 0;
    ref<Node> next;  // a member of its own type: T incomplete here
    int canary = kCanary;
    void trace(cyclegc::tracer &t) { t(next); }
    ~Node() {
        EXPECT_EQ(canary, kCanary);
        canary = 0;
        ++destroyed;
    }
};

// Base/Derived without virtual functions: the object's type object is the
// one make<> was given, so ~Derived runs through a ref<Base>.
struct Base : cyclegc::object {
    static inline int base_destroyed = 0;
    int base_value = 1;
    ~Base() { ++base_destroyed; }
};
struct Derived : Base {
    static inline int derived_destroyed = 0;
    std::vector<int> payload = std::vector<int>(100, 7);  // leaks under ASan if ~Derived is skipped
    ~Derived() { ++derived_destroyed; }
};

// Polymorphic hierarchy for dynamic_pointer_cast.
struct Shape : cyclegc::object {
    virtual ~Shape() = default;
    virtual int sides() const = 0;
};
struct Square : Shape {
    int sides() const override { return 4; }
};
struct Triangle : Shape {
    int sides() const override { return 3; }
};

class CppRef : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        Counted::live = Counted::destroyed = 0;
        Node::destroyed = 0;
        Later::destroyed = 0;
        Base::base_destroyed = Derived::derived_destroyed = 0;
    }
};

static_assert(sizeof(ref<Counted>) == sizeof(void *));
static_assert(sizeof(ref<Node>) == sizeof(void *));
static_assert(sizeof(ref<Later>) == sizeof(void *));
static_assert(sizeof(ref<cgc_object>) == sizeof(void *));
static_assert(std::is_nothrow_move_constructible_v<ref<Node>>);
static_assert(std::is_nothrow_copy_constructible_v<ref<Node>>);
static_assert(std::is_nothrow_swappable_v<ref<Node>>);
// Upcasts are implicit, downcasts and unrelated conversions are not.
static_assert(std::is_convertible_v<ref<Derived>, ref<Base>>);
static_assert(std::is_convertible_v<ref<Derived>, ref<const Base>>);
static_assert(!std::is_convertible_v<ref<Base>, ref<Derived>>);
static_assert(!std::is_constructible_v<ref<Derived>, ref<Base>>);
static_assert(!std::is_convertible_v<ref<Node>, ref<Counted>>);
static_assert(!std::is_convertible_v<ref<const Base>, ref<Base>>);
// Not implicitly a bool or a raw pointer.
static_assert(!std::is_convertible_v<ref<Node>, bool>);
static_assert(!std::is_convertible_v<ref<Node>, Node *>);
static_assert(!std::is_convertible_v<Node *, ref<Node>>);

TEST_F(CppRef, SizeIsOnePointer) {
    EXPECT_EQ(sizeof(ref<Counted>), sizeof(void *));
    EXPECT_EQ(sizeof(ref<Later>), sizeof(void *));
    EXPECT_EQ(sizeof(std::vector<ref<Node>>::value_type), sizeof(void *));
}

TEST_F(CppRef, NullRef) {
    ref<Counted> a;
    ref<Counted> b = nullptr;
    EXPECT_FALSE(a);
    EXPECT_EQ(a.get(), nullptr);
    EXPECT_EQ(a.use_count(), 0);
    EXPECT_TRUE(a == nullptr);
    EXPECT_TRUE(nullptr == a);
    EXPECT_FALSE(a != nullptr);
    EXPECT_EQ(a, b);
    a.reset();  // harmless
    a = nullptr;
    EXPECT_EQ(Counted::live, 0);
}

TEST_F(CppRef, LastReferenceRunsDestructor) {
    {
        ref<Counted> a = make<Counted>(5);
        EXPECT_EQ(a.use_count(), 1);
        EXPECT_EQ(a->use_count(), 1);
        EXPECT_EQ(a->value, 5);
        EXPECT_EQ((*a).value, 5);
        EXPECT_EQ(Counted::live, 1);
        {
            ref<Counted> b = a;
            EXPECT_EQ(a.use_count(), 2);
            EXPECT_EQ(b.get(), a.get());
        }
        EXPECT_EQ(a.use_count(), 1);
        EXPECT_EQ(Counted::destroyed, 0);
    }
    EXPECT_EQ(Counted::destroyed, 1);
    EXPECT_EQ(Counted::live, 0);
}

TEST_F(CppRef, MoveTransfersWithoutCounting) {
    ref<Counted> a = make<Counted>();
    Counted *raw = a.get();
    ref<Counted> b = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move): moved-from is null
    EXPECT_EQ(b.get(), raw);
    EXPECT_EQ(b.use_count(), 1);
    ref<Counted> c;
    c = std::move(b);
    EXPECT_FALSE(b);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(c.use_count(), 1);
    EXPECT_EQ(Counted::destroyed, 0);
    c = nullptr;
    EXPECT_EQ(Counted::destroyed, 1);
}

TEST_F(CppRef, AssignmentReleasesTheOldObject) {
    ref<Counted> a = make<Counted>(1);
    ref<Counted> b = make<Counted>(2);
    a = b;  // the first object loses its only reference
    EXPECT_EQ(Counted::destroyed, 1);
    EXPECT_EQ(a->value, 2);
    EXPECT_EQ(b.use_count(), 2);
    ref<Counted> &alias = a;
    a = alias;  // self-assignment keeps the object
    EXPECT_EQ(a.use_count(), 2);
    a = std::move(alias);  // self-move keeps it alive too
    EXPECT_EQ(Counted::destroyed, 1);
    a = make<Counted>(3);
    EXPECT_EQ(b.use_count(), 1);
    EXPECT_EQ(a->value, 3);
    a = nullptr;
    b = nullptr;
    EXPECT_EQ(Counted::destroyed, 3);
}

TEST_F(CppRef, ResetReleaseAdoptBorrow) {
    ref<Counted> a = make<Counted>();
    Counted *raw = a.release();
    EXPECT_FALSE(a);
    EXPECT_EQ(raw->use_count(), 1);  // still owned, by `raw`
    EXPECT_EQ(Counted::destroyed, 0);
    ref<Counted> b = ref<Counted>::borrow(raw);  // a new reference
    EXPECT_EQ(b.use_count(), 2);
    ref<Counted> c = ref<Counted>::adopt(raw);  // takes over the released one
    EXPECT_EQ(c.use_count(), 2);
    b.reset();
    EXPECT_EQ(c.use_count(), 1);
    EXPECT_EQ(Counted::destroyed, 0);
    c.reset();
    EXPECT_EQ(Counted::destroyed, 1);
}

TEST_F(CppRef, Swap) {
    ref<Counted> a = make<Counted>(1);
    ref<Counted> b = make<Counted>(2);
    a.swap(b);
    EXPECT_EQ(a->value, 2);
    EXPECT_EQ(b->value, 1);
    swap(a, b);  // found by ADL
    EXPECT_EQ(a->value, 1);
    std::swap(a, b);
    EXPECT_EQ(a->value, 2);
    ref<Counted> empty;
    swap(a, empty);
    EXPECT_FALSE(a);
    EXPECT_EQ(empty->value, 2);
    EXPECT_EQ(empty.use_count(), 1);
    EXPECT_EQ(Counted::destroyed, 0);
}

TEST_F(CppRef, Comparisons) {
    ref<Counted> a = make<Counted>();
    ref<Counted> b = make<Counted>();
    ref<Counted> a2 = a;
    EXPECT_TRUE(a == a2);
    EXPECT_FALSE(a != a2);
    EXPECT_TRUE(a != b);
    EXPECT_EQ(a < b, a.get() < b.get());
    EXPECT_EQ(a > b, a.get() > b.get());
    EXPECT_EQ(a <=> b, std::compare_three_way{}(a.get(), b.get()));
    EXPECT_TRUE(a <= a2);
    EXPECT_TRUE(a >= a2);
    EXPECT_TRUE(a != nullptr);
    EXPECT_TRUE(nullptr != a);
    // Across a hierarchy.
    ref<Derived> d = make<Derived>();
    ref<Base> bd = d;
    EXPECT_TRUE(bd == d);
    EXPECT_TRUE(d == bd);
    EXPECT_FALSE(bd < d);
}

TEST_F(CppRef, HashIsThePointersHash) {
    ref<Counted> a = make<Counted>();
    EXPECT_EQ(std::hash<ref<Counted>>{}(a), std::hash<Counted *>{}(a.get()));
    EXPECT_EQ(std::hash<ref<Counted>>{}(ref<Counted>()), std::hash<Counted *>{}(nullptr));
}

TEST_F(CppRef, KeyInStdMapAndSet) {
    std::vector<ref<Counted>> objects;
    for (int i = 0; i < 20; ++i) objects.push_back(make<Counted>(i));
    {
        std::map<ref<Counted>, int> by_ref;
        std::set<ref<Counted>> set;
        for (auto &r : objects) {
            by_ref[r] = r->value;
            set.insert(r);
            set.insert(r);  // a duplicate
        }
        EXPECT_EQ(by_ref.size(), 20u);
        EXPECT_EQ(set.size(), 20u);
        for (auto &r : objects) {
            EXPECT_EQ(by_ref.at(r), r->value);
            EXPECT_EQ(r.use_count(), 3);  // vector, map, set
        }
        // Ordered by address.
        const Counted *previous = nullptr;
        for (auto &[key, value] : by_ref) {
            EXPECT_LT(previous, key.get());
            previous = key.get();
        }
        EXPECT_EQ(by_ref.count(ref<Counted>()), 0u);
    }
    EXPECT_EQ(objects[0].use_count(), 1);
    objects.clear();
    EXPECT_EQ(Counted::destroyed, 20);
}

TEST_F(CppRef, KeyInUnorderedContainers) {
    std::vector<ref<Counted>> objects;
    for (int i = 0; i < 50; ++i) objects.push_back(make<Counted>(i));
    {
        std::unordered_set<ref<Counted>> set;
        std::unordered_map<ref<Counted>, int> map;
        for (auto &r : objects) {
            set.insert(r);
            set.insert(ref<Counted>(r));
            map.emplace(r, r->value * 2);
        }
        EXPECT_EQ(set.size(), 50u);
        EXPECT_EQ(map.size(), 50u);
        for (auto &r : objects) {
            EXPECT_TRUE(set.contains(r));
            EXPECT_EQ(map.at(r), r->value * 2);
        }
        ref<Counted> stranger = make<Counted>();
        EXPECT_FALSE(set.contains(stranger));
    }
    EXPECT_EQ(Counted::destroyed, 1);  // the stranger
    objects.clear();
    EXPECT_EQ(Counted::destroyed, 51);
}

TEST_F(CppRef, ImplicitUpcastShares) {
    ref<Derived> d = make<Derived>();
    ref<Base> b = d;  // copy upcast
    EXPECT_EQ(b.get(), static_cast<Base *>(d.get()));
    EXPECT_EQ(d.use_count(), 2);
    ref<Base> moved = std::move(d);  // move upcast
    EXPECT_FALSE(d);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(moved.use_count(), 2);
    ref<const Base> constant = moved;
    EXPECT_EQ(constant->base_value, 1);
    EXPECT_EQ(constant.use_count(), 3);
}

TEST_F(CppRef, DerivedDestructorRunsThroughBaseRefWithoutVirtual) {
    static_assert(!std::has_virtual_destructor_v<Base>);
    {
        ref<Base> b = make<Derived>();
        EXPECT_EQ(b->as_cobject()->ob_type, cyclegc::type_of<Derived>());
        EXPECT_NE(cyclegc::type_of<Derived>(), cyclegc::type_of<Base>());
    }
    EXPECT_EQ(Derived::derived_destroyed, 1);
    EXPECT_EQ(Base::base_destroyed, 1);
}

TEST_F(CppRef, StaticPointerCast) {
    ref<Base> b = make<Derived>();
    ref<Derived> d = cyclegc::static_pointer_cast<Derived>(b);
    EXPECT_EQ(static_cast<Base *>(d.get()), b.get());
    EXPECT_EQ(b.use_count(), 2);
    EXPECT_EQ(d->payload.size(), 100u);
    ref<Base> null_base;
    EXPECT_FALSE(cyclegc::static_pointer_cast<Derived>(null_base));
    b = nullptr;
    EXPECT_EQ(Derived::derived_destroyed, 0);
    d = nullptr;
    EXPECT_EQ(Derived::derived_destroyed, 1);
}

TEST_F(CppRef, DynamicPointerCast) {
    ref<Shape> shape = make<Square>();
    ref<Square> square = cyclegc::dynamic_pointer_cast<Square>(shape);
    ASSERT_TRUE(square);
    EXPECT_EQ(square->sides(), 4);
    EXPECT_EQ(shape.use_count(), 2);
    ref<Triangle> triangle = cyclegc::dynamic_pointer_cast<Triangle>(shape);
    EXPECT_FALSE(triangle);
    EXPECT_EQ(shape.use_count(), 2);  // a failed cast takes no reference
    ref<Shape> none;
    EXPECT_FALSE(cyclegc::dynamic_pointer_cast<Square>(none));
}

TEST_F(CppRef, AsCObjectSharesTheCount) {
    ref<Counted> a = make<Counted>();
    ref<cgc_object> c = cyclegc::as_cobject(a);
    EXPECT_EQ(c.get(), a->as_cobject());
    EXPECT_EQ(a.use_count(), 2);
    EXPECT_EQ(c->ob_type, cyclegc::type_of<Counted>());
    EXPECT_EQ(cyclegc::object::from_cobject(c.get()), static_cast<cyclegc::object *>(a.get()));
    a = nullptr;
    EXPECT_EQ(Counted::destroyed, 0);  // the C reference keeps it
    c = nullptr;
    EXPECT_EQ(Counted::destroyed, 1);
    EXPECT_FALSE(cyclegc::as_cobject(ref<Counted>()));
}

TEST_F(CppRef, IncompleteMemberTypeWorksOnceDefined) {
    {
        auto holder = make<HoldsLater>();
        holder->later = make<Later>();
        holder->later->back = holder;  // a cycle
    }
    EXPECT_EQ(Later::destroyed, 0);
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Later::destroyed, 1);
}

// "The pointer is null before the object may die": a dying object that
// looks back at the reference that held it never finds itself there (null
// after reset, the new value after an assignment).
struct Watcher;
struct Owner : cyclegc::object {
    ref<Watcher> watched;
    void trace(cyclegc::tracer &t) { t(watched); }
};
struct Watcher : cyclegc::object {
    static inline int saw_null = 0;
    static inline int saw_self = 0;
    static inline int saw_other = 0;
    Owner *owner = nullptr;  // raw and untraced: not an owning edge
    ~Watcher() {
        Watcher *seen = owner->watched.get();
        if (seen == nullptr)
            ++saw_null;
        else if (seen == this)
            ++saw_self;
        else
            ++saw_other;
    }
};

TEST_F(CppRef, DyingObjectNeverSeesItselfInTheReleasingRef) {
    Watcher::saw_null = Watcher::saw_self = Watcher::saw_other = 0;
    auto owner = make<Owner>();
    auto watch = [&] {
        owner->watched = make<Watcher>();
        owner->watched->owner = owner.get();
    };
    watch();
    owner->watched.reset();
    EXPECT_EQ(Watcher::saw_null, 1);
    watch();
    owner->watched = nullptr;
    EXPECT_EQ(Watcher::saw_null, 2);
    watch();
    watch();  // assignment over the old one, which dies seeing the new one
    EXPECT_EQ(Watcher::saw_other, 1);
    ref<Watcher> copy = make<Watcher>();
    copy->owner = owner.get();
    owner->watched = copy;  // copy assignment over
    EXPECT_EQ(Watcher::saw_other, 2);
    copy = nullptr;
    owner->watched = nullptr;
    EXPECT_EQ(Watcher::saw_null, 3);
    EXPECT_EQ(Watcher::saw_self, 0);
}

TEST_F(CppRef, ContainerOfRefsReleasesEach) {
    {
        std::vector<ref<Counted>> v;
        for (int i = 0; i < 1000; ++i) v.push_back(make<Counted>(i));
        std::vector<ref<Counted>> copy = v;
        EXPECT_EQ(v[10].use_count(), 2);
        v.clear();
        EXPECT_EQ(Counted::destroyed, 0);
    }
    EXPECT_EQ(Counted::destroyed, 1000);
    EXPECT_EQ(Counted::live, 0);
}

// Freeing a long chain by one release must not recurse once per node: the
// collector's trashcan defers nested deallocations.
TEST_F(CppRef, TenMillionChainFreedByOneRelease) {
    constexpr int kLength = 10'000'000;
    ref<Node> head = make<Node>();
    Node *tail = head.get();
    for (int i = 1; i < kLength; ++i) {
        tail->next = make<Node>();
        tail = tail->next.get();
    }
    EXPECT_EQ(Node::destroyed, 0);
    head = nullptr;
    EXPECT_EQ(Node::destroyed, kLength);
}

}  // namespace
}  // namespace cpp_ref_test
