// Objects: allocation (sizes, zero fill, variable-size objects, resize),
// tracking, misuse (refused and reported, naming the function, the type and
// the fault), the default tp_dealloc, and deallocation with a bounded stack
// (the trashcan) and refcount underflow.
#include "arena.hpp"
#include "test_types.hpp"

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace cgc_test;

namespace {

void var_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    auto *v = reinterpret_cast<VarNode *>(self);
    for (cgc_ssize_t i = 0; i < v->ob_base.ob_size; ++i) cgc_xdecref(v->items[i]);
    ++counters.deallocated;
    cgc_gc_del(self);
}

cgc_type var_type = [] {
    cgc_type t{};
    t.tp_name = "test.Var";
    t.tp_basicsize = offsetof(VarNode, items);
    t.tp_itemsize = sizeof(cgc_object *);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_dealloc = var_dealloc;
    t.tp_traverse = var_node_traverse;
    return t;
}();

// A non-GC object (default tp_dealloc).
struct Plain {
    cgc_object ob_base;
    long payload[3];
};

cgc_type plain_type = [] {
    cgc_type t{};
    t.tp_name = "test.Plain";
    t.tp_basicsize = sizeof(Plain);
    return t;
}();

cgc_type plain_var_type = [] {
    cgc_type t{};
    t.tp_name = "test.PlainVar";
    t.tp_basicsize = sizeof(cgc_var_object);
    t.tp_itemsize = 4;
    return t;
}();

// A non-GC container: a singly linked chain of these is freed by the trashcan too.
struct Link {
    cgc_object ob_base;
    cgc_object *next;
};

int g_links_freed = 0;

cgc_type link_type = [] {
    cgc_type t{};
    t.tp_name = "test.Link";
    t.tp_basicsize = sizeof(Link);
    t.tp_dealloc = [](cgc_object *self) {
        cgc_object *next = reinterpret_cast<Link *>(self)->next;
        ++g_links_freed;
        cgc_xdecref(next);
        cgc_object_del(self);
    };
    return t;
}();

// A tp_dealloc with the classic bug: one Py_DECREF(self) too many.
int g_bad_deallocs = 0;
cgc_type bad_dealloc_type = [] {
    cgc_type t{};
    t.tp_name = "test.BadDealloc";
    t.tp_basicsize = sizeof(Node);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = node_traverse;
    t.tp_dealloc = [](cgc_object *self) {
        ++g_bad_deallocs;
        cgc_gc_untrack(self);
        cgc_decref(self);  // the bug: the count is already 0
        cgc_gc_del(self);
    };
    return t;
}();

// No tp_dealloc: the default one (untrack, finalize once, tp_clear, tp_free).
cgc_type default_dealloc_type = [] {
    cgc_type t{};
    t.tp_name = "test.DefaultDealloc";
    t.tp_basicsize = sizeof(Node);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = node_traverse;
    t.tp_clear = node_clear;
    t.tp_finalize = node_finalize;
    return t;
}();

class ObjectTest : public HeapFixture {
  protected:
    void SetUp() override {
        HeapFixture::SetUp();
        g_links_freed = 0;
        g_bad_deallocs = 0;
    }
};

bool all_zero(const void *memory, size_t size) {
    auto *bytes = static_cast<const unsigned char *>(memory);
    for (size_t i = 0; i < size; ++i)
        if (bytes[i] != 0) return false;
    return true;
}

// Leaves a freed block of `size` bytes full of 0xAB for the next malloc of
// that size to reuse, so that a missing zero fill shows.
void dirty_the_allocator(size_t size) {
    void *block = std::malloc(size);
    std::memset(block, 0xAB, size);
    std::free(block);
}

// ---- Allocation -------------------------------------------------------------

TEST_F(ObjectTest, GcObjectHasHeaderInFrontAndRoomForTheType) {
    Node *node = new_node(&node_type, 1, /*track=*/false);
    ASSERT_NE(node, nullptr);
    // The object sits in a page slot big enough for the type, 16-byte aligned.
    EXPECT_GE(gci::PageSpace::capacity(node), sizeof(Node));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(node) % 16, 0u);
    EXPECT_EQ(obj(node)->ob_refcnt, 1);
    EXPECT_EQ(obj(node)->ob_type, &node_type);
    EXPECT_TRUE(cgc_is_gc(obj(node)));
    EXPECT_FALSE(cgc_gc_is_tracked(obj(node)));
    EXPECT_FALSE(cgc_gc_is_finalized(obj(node)));
    cgc_decref(obj(node));
}

TEST_F(ObjectTest, NonGcObjectHasNoHeader) {
    cgc_object *op = cgc_object_new(&plain_type);
    ASSERT_NE(op, nullptr);
    EXPECT_GE(malloc_usable_size(op), sizeof(Plain));
    EXPECT_EQ(op->ob_refcnt, 1);
    EXPECT_EQ(op->ob_type, &plain_type);
    EXPECT_FALSE(cgc_is_gc(op));
    EXPECT_FALSE(cgc_gc_is_tracked(op));
    EXPECT_EQ(cgc_get_count(0), 0);  // only GC objects count
    cgc_decref(op);
}

TEST_F(ObjectTest, VariableSizeObjectsHaveRoomForTheirItems) {
    auto *v = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, 100));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->ob_base.ob_size, 100);
    EXPECT_GE(gci::PageSpace::capacity(v), offsetof(VarNode, items) + 100 * sizeof(cgc_object *));
    cgc_decref(&v->ob_base.ob_base);

    cgc_object *p = cgc_object_new_var(&plain_var_type, 10);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<cgc_var_object *>(p)->ob_size, 10);
    EXPECT_GE(malloc_usable_size(p), sizeof(cgc_var_object) + 40);
    cgc_decref(p);

    auto *empty = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, 0));
    ASSERT_NE(empty, nullptr);
    EXPECT_EQ(empty->ob_base.ob_size, 0);
    cgc_decref(&empty->ob_base.ob_base);
}

TEST_F(ObjectTest, GenericAllocTracksAndAddsASpareItem) {
    auto *v = reinterpret_cast<VarNode *>(cgc_type_generic_alloc(&var_type, 3));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->ob_base.ob_size, 3);
    EXPECT_TRUE(cgc_gc_is_tracked(&v->ob_base.ob_base));
    size_t wanted = offsetof(VarNode, items) + 4 * sizeof(cgc_object *);
    EXPECT_GE(gci::PageSpace::capacity(v), wanted);
    EXPECT_TRUE(all_zero(v->items, 4 * sizeof(cgc_object *)));
    cgc_decref(&v->ob_base.ob_base);
}

TEST_F(ObjectTest, NewObjectsAreZeroFilled) {
    dirty_the_allocator(sizeof(Node) + sizeof(cgc_gc_head));
    auto *node = as_node(cgc_gc_new(&node_type));
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(gci::meta_of(node).flags, gci::kAllocated);
    EXPECT_EQ(gci::meta_of(node).word, 0u);
    EXPECT_TRUE(all_zero(reinterpret_cast<char *>(node) + sizeof(cgc_object),
                         sizeof(Node) - sizeof(cgc_object)));
    cgc_decref(obj(node));

    const cgc_ssize_t n = 50;
    size_t var_size = offsetof(VarNode, items) + n * sizeof(cgc_object *);
    dirty_the_allocator(var_size + sizeof(cgc_gc_head));
    auto *v = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, n));
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(all_zero(v->items, n * sizeof(cgc_object *)));
    cgc_decref(&v->ob_base.ob_base);

    dirty_the_allocator(sizeof(Plain));
    auto *plain = reinterpret_cast<Plain *>(cgc_object_new(&plain_type));
    ASSERT_NE(plain, nullptr);
    EXPECT_TRUE(all_zero(plain->payload, sizeof plain->payload));
    cgc_decref(&plain->ob_base);
}

TEST_F(ObjectTest, ResizeWhileUntrackedKeepsTheItems) {
    auto *v = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, 4));
    ASSERT_NE(v, nullptr);
    Node *items[4];
    for (int i = 0; i < 4; ++i) {
        items[i] = new_node(i);
        v->items[i] = obj(items[i]);  // transfers the reference
    }
    cgc_var_object *resized = cgc_gc_resize(&v->ob_base, 1000);
    ASSERT_NE(resized, nullptr);
    v = reinterpret_cast<VarNode *>(resized);
    EXPECT_EQ(v->ob_base.ob_size, 1000);
    EXPECT_GE(gci::PageSpace::capacity(v), offsetof(VarNode, items) + 1000 * sizeof(cgc_object *));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(v->items[i], obj(items[i]));
    for (int i = 4; i < 1000; ++i) v->items[i] = nullptr;  // resize does not zero
    EXPECT_FALSE(cgc_gc_is_tracked(&v->ob_base.ob_base));

    cgc_decref(v->items[3]);  // shrink: drop the items that go away first
    cgc_decref(v->items[2]);
    resized = cgc_gc_resize(&v->ob_base, 2);
    ASSERT_NE(resized, nullptr);
    v = reinterpret_cast<VarNode *>(resized);
    EXPECT_EQ(v->ob_base.ob_size, 2);
    EXPECT_EQ(v->items[1], obj(items[1]));

    cgc_gc_track(v);
    EXPECT_EQ(cgc_collect(2), 0);
    cgc_decref(&v->ob_base.ob_base);
    EXPECT_EQ(counters.deallocated, 5);  // 4 nodes and v
    EXPECT_TRUE(take_errors().empty());
}

// ---- Misuse: refused, reported ---------------------------------------------

TEST_F(ObjectTest, ResizingTrackedObjectIsRefused) {
    auto *v = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, 2));
    ASSERT_NE(v, nullptr);
    cgc_gc_track(v);
    EXPECT_EQ(cgc_gc_resize(&v->ob_base, 10), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_resize", "PyObject_GC_Resize", "test.Var", "tracked"});
    EXPECT_EQ(v->ob_base.ob_size, 2);
    EXPECT_TRUE(cgc_gc_is_tracked(&v->ob_base.ob_base));
    EXPECT_EQ(generation_of(v), 0);
    cgc_decref(&v->ob_base.ob_base);
}

TEST_F(ObjectTest, TrackingTwiceIsRefused) {
    Node *node = new_node(1);
    cgc_gc_track(node);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_track", "PyObject_GC_Track", "test.Node", "already tracked"});
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_MISUSE);
    EXPECT_CONTAINS(cgc_error_message(), "already tracked");
    EXPECT_EQ(tracked_in(0), 1);  // in the list once
    cgc_collect(0);
    EXPECT_EQ(stats_of(0).examined, 1u);
    EXPECT_EQ(generation_of(node), 1);
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(ObjectTest, TrackingNonGcObjectIsRefused) {
    cgc_object *op = cgc_object_new(&plain_type);
    ASSERT_NE(op, nullptr);
    cgc_gc_track(op);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_track", "test.Plain", "not a GC object"});
    EXPECT_FALSE(cgc_gc_is_tracked(op));
    EXPECT_EQ(tracked_total(), 0);
    cgc_gc_untrack(op);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_untrack", "test.Plain", "not a GC object"});
    cgc_decref(op);
}

TEST_F(ObjectTest, GcAllocationOfNonGcTypeIsRefused) {
    EXPECT_EQ(cgc_gc_new(&plain_type), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_new", "PyObject_GC_New", "test.Plain", "Py_TPFLAGS_HAVE_GC"});
    EXPECT_EQ(cgc_gc_new_var(&plain_var_type, 3), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_new_var", "test.PlainVar", "Py_TPFLAGS_HAVE_GC"});
    EXPECT_EQ(cgc_get_count(0), 0);
}

TEST_F(ObjectTest, NegativeSizesAreRefused) {
    EXPECT_EQ(cgc_gc_new_var(&var_type, -1), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"cgc_gc_new_var", "test.Var", "negative size -1"});
    EXPECT_EQ(cgc_object_new_var(&plain_var_type, -5), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"cgc_object_new_var", "test.PlainVar", "negative size -5"});
    EXPECT_EQ(cgc_type_generic_alloc(&var_type, -2), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"test.Var", "negative size -2"});
    EXPECT_EQ(cgc_get_count(0), 0);  // nothing was allocated

    auto *v = reinterpret_cast<VarNode *>(cgc_gc_new_var(&var_type, 2));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(cgc_gc_resize(&v->ob_base, -3), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"cgc_gc_resize", "test.Var", "negative size -3"});
    EXPECT_EQ(v->ob_base.ob_size, 2);
    cgc_decref(&v->ob_base.ob_base);
}

TEST_F(ObjectTest, HugeSizesAreRefused) {
    EXPECT_EQ(cgc_gc_new_var(&var_type, PTRDIFF_MAX / 4), nullptr);
    expect_one_error(CGC_ERR_MEMORY, {"cgc_gc_new_var", "test.Var", "too large"});
    EXPECT_EQ(cgc_gc_new_var(&var_type, PTRDIFF_MAX / 8 - 1), nullptr);
    expect_one_error(CGC_ERR_MEMORY, {"test.Var", "too large"});
}

TEST_F(ObjectTest, NullArguments) {
    cgc_gc_track(nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_track", "NULL"});
    cgc_gc_untrack(nullptr);  // a no-op, as in CPython
    cgc_gc_del(nullptr);
    cgc_object_del(nullptr);
    EXPECT_TRUE(take_errors().empty());
    EXPECT_EQ(cgc_gc_new(nullptr), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_new", "NULL"});
    EXPECT_EQ(cgc_object_new(nullptr), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_object_new", "NULL"});
    EXPECT_EQ(cgc_gc_resize(nullptr, 1), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_resize", "NULL"});
    EXPECT_FALSE(cgc_is_gc(nullptr));
    EXPECT_FALSE(cgc_gc_is_tracked(nullptr));
    EXPECT_FALSE(cgc_gc_is_finalized(nullptr));
}

TEST_F(ObjectTest, UntrackThenTrackAgainGoesToTheYoungGeneration) {
    Node *node = new_node(1);
    cgc_collect(1);
    EXPECT_EQ(generation_of(node), 2);
    cgc_gc_untrack(node);
    EXPECT_EQ(generation_of(node), -1);
    EXPECT_EQ(tracked_total(), 0);
    cgc_gc_track(node);
    EXPECT_EQ(generation_of(node), 0);
    cgc_decref(obj(node));
}

// A second free of a GC object (PyObject_GC_Del twice, cgc_gc_raw_free
// twice, a large object's too) is refused and reported: freeing the slot
// again would put it on its page's free list twice (for a large object, its
// page in the arena's twice), and two later allocations would share it.
TEST_F(ObjectTest, SecondFreeIsRefusedAndNoSlotIsHandedOutTwice) {
    size_t live = gci::current_heap().space.live_objects();
    cgc_object *op = cgc_gc_new(&node_type);
    ASSERT_NE(op, nullptr);
    cgc_gc_del(op);
    cgc_gc_del(op);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_del", "PyObject_GC_Del", "test.Node", "freed already"});
    EXPECT_EQ(gci::current_heap().space.live_objects(), live);
    cgc_object *a = cgc_gc_new(&node_type);
    cgc_object *b = cgc_gc_new(&node_type);
    EXPECT_NE(a, b);
    EXPECT_EQ(gci::current_heap().space.live_objects(), live + 2);
    cgc_gc_del(a);
    cgc_gc_del(b);

    cgc_raw_slot slot = cgc_gc_raw_alloc_slot(48, 16);
    ASSERT_NE(slot.memory, nullptr);
    cgc_gc_raw_free(slot.memory);
    cgc_gc_raw_free(slot.memory);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_raw_free", "freed already"});
    void *c = cgc_gc_raw_alloc(48, 16), *d = cgc_gc_raw_alloc(48, 16);
    EXPECT_NE(c, d);
    cgc_gc_raw_free(c);
    cgc_gc_raw_free(d);

    cgc_object *large = cgc_gc_new_var(&var_type, 20000);  // a page of its own
    ASSERT_NE(large, nullptr);
    // (With or without the arena: freed regions stay reserved, reading zero.)
    cgc_gc_del(large);
    cgc_gc_del(large);
    // (Its page went back to the system: the message cannot name the type.)
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_del", "freed already"});
    cgc_object *e = cgc_gc_new_var(&var_type, 20000);
    cgc_object *f = cgc_gc_new_var(&var_type, 20000);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e, f);
    cgc_gc_del(e);
    cgc_gc_del(f);
    EXPECT_EQ(gci::current_heap().space.live_objects(), live);
}

// A freed object cannot be tracked (the collector would traverse freed
// memory) or resized (which would free it again).
TEST_F(ObjectTest, TrackingOrResizingAFreedObjectIsRefused) {
    Node *keeper = new_node();  // generation 0's array has room: the fast path is tried
    cgc_object *op = cgc_gc_new(&node_type);
    ASSERT_NE(op, nullptr);
    cgc_gc_del(op);
    cgc_gc_track(op);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_track", "PyObject_GC_Track", "test.Node", "was freed"});
    EXPECT_EQ(tracked_total(), 1);
    EXPECT_EQ(cgc_collect(2), 0);
    cgc_decref(obj(keeper));
    EXPECT_EQ(tracked_total(), 0);

    auto *v = reinterpret_cast<cgc_var_object *>(cgc_gc_new_var(&var_type, 2));
    ASSERT_NE(v, nullptr);
    size_t live = gci::current_heap().space.live_objects();
    cgc_gc_del(v);
    EXPECT_EQ(cgc_gc_resize(v, 1000), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_resize", "PyObject_GC_Resize", "test.Var", "was freed"});
    EXPECT_EQ(gci::current_heap().space.live_objects(), live - 1);
}

// A variable-size type must start with PyObject_VAR_HEAD (allocating one
// writes ob_size, past a smaller tp_basicsize), and only such a type's
// objects can be resized.
TEST_F(ObjectTest, VarTypesNeedAVarHeadAndOnlyTheirObjectsAreResized) {
    cgc_type no_var_head{};
    no_var_head.tp_name = "test.NoVarHead";
    no_var_head.tp_basicsize = sizeof(cgc_object);
    no_var_head.tp_itemsize = sizeof(cgc_object *);
    no_var_head.tp_flags = CGC_TPFLAGS_HAVE_GC;
    no_var_head.tp_traverse = node_traverse;
    EXPECT_EQ(cgc_type_ready(&no_var_head), -1);
    expect_one_error(CGC_ERR_TYPE, {"test.NoVarHead", "PyObject_VAR_HEAD"});

    Node *fixed = new_node(&node_type, 7, /*track=*/false);
    EXPECT_EQ(cgc_gc_resize(reinterpret_cast<cgc_var_object *>(fixed), 0), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_gc_resize", "test.Node", "fixed-size"});
    EXPECT_EQ(fixed->id, 7);  // (ob_size would be where its fields are)
    cgc_decref(obj(fixed));
}

// Freed while references to it remained (PyObject_GC_Del too early): when
// the last of them goes, its tp_dealloc must not run on freed memory.
TEST_F(ObjectTest, TheLastReferenceToAFreedObjectIsReportedNotDeallocatedAgain) {
    Node *node = new_node(1);
    cgc_incref(obj(node));  // a container's reference, say
    cgc_gc_untrack(node);
    cgc_gc_del(node);  // the bug
    cgc_decref(obj(node));
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 0);
    expect_one_error(CGC_ERR_MISUSE, {"Py_DECREF", "test.Node", "after it was freed"});
}

// The other helpers refuse a freed object too.
TEST_F(ObjectTest, FinalizingOrReallocatingAFreedObjectIsRefused) {
    cgc_object *op = cgc_gc_new(&default_dealloc_type);  // it has a tp_finalize
    ASSERT_NE(op, nullptr);
    cgc_gc_del(op);
    op->ob_refcnt = 0;  // (its header stays readable)
    EXPECT_EQ(cgc_call_finalizer_from_dealloc(op), -1);
    expect_one_error(CGC_ERR_MISUSE, {"PyObject_CallFinalizerFromDealloc", "test.DefaultDealloc", "freed already"});
    EXPECT_EQ(counters.finalized, 0);
    EXPECT_EQ(cgc_object_realloc(op, 64), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"PyObject_REALLOC", "test.DefaultDealloc", "was freed"});
}

// A weak reference object freed directly (PyObject_GC_Del, not its
// tp_dealloc) leaves its referent's list: the referent's death must not
// call back through freed memory.
int g_weak_callbacks = 0;
TEST_F(ObjectTest, FreeingAnAttachedWeakReferenceDetachesIt) {
    g_weak_callbacks = 0;
    Node *referent = new_node(1);
    cgc_object *weak = cgc_weakref_new(obj(referent), [](cgc_object *, void *) { ++g_weak_callbacks; }, nullptr);
    ASSERT_NE(weak, nullptr);
    EXPECT_EQ(cgc_weakref_count(obj(referent)), 1);
    cgc_gc_del(weak);
    EXPECT_EQ(cgc_weakref_count(obj(referent)), 0);
    cgc_decref(obj(referent));
    EXPECT_EQ(g_weak_callbacks, 0);
    EXPECT_EQ(counters.deallocated, 1);
}

// Weak references are listed by their referent's heap, whichever heap is
// current when they are made: dying in its own heap, the referent kills
// a weak reference made while another heap was current.
TEST_F(ObjectTest, AWeakReferenceMadeUnderAnotherHeapDiesWithItsReferent) {
    cgc_heap *mine = cgc_heap_current();
    Node *referent = new_node(1);
    cgc_heap *other = cgc_heap_new();
    cgc_heap_set_current(other);
    cgc_object *weak = cgc_weakref_new(obj(referent), nullptr, nullptr);
    cgc_heap_set_current(mine);
    ASSERT_NE(weak, nullptr);
    EXPECT_EQ(cgc_weakref_count(obj(referent)), 1);
    cgc_decref(obj(referent));
    EXPECT_EQ(counters.deallocated, 1);
    cgc_object *got = nullptr;
    EXPECT_EQ(cgc_weakref_get_ref(weak, &got), 0);
    EXPECT_EQ(got, nullptr);
    cgc_decref(weak);
    cgc_heap_delete(other);
}

// A type without GC whose finalizer, run from its tp_dealloc, drops its own
// object once too often: the nested deallocation is refused (it had run
// the finalizer again and again, then freed the object under the callers).
int g_plain_finalizes = 0;
int g_plain_frees = 0;
cgc_type plain_final_type = [] {
    cgc_type t{};
    t.tp_name = "test.PlainFinal";
    t.tp_basicsize = sizeof(Plain);
    t.tp_finalize = [](cgc_object *self) {
        if (++g_plain_finalizes < 10) cgc_decref(self);  // the bug: not its reference
    };
    t.tp_dealloc = [](cgc_object *self) {
        if (cgc_call_finalizer_from_dealloc(self) < 0) return;
        ++g_plain_frees;
        cgc_object_del(self);
    };
    return t;
}();

TEST_F(ObjectTest, AFinalizerDroppingItsOwnNonGcObjectIsReportedAndFreesItOnce) {
    g_plain_finalizes = g_plain_frees = 0;
    cgc_object *op = cgc_object_new(&plain_final_type);
    ASSERT_NE(op, nullptr);
    cgc_decref(op);
    EXPECT_EQ(g_plain_finalizes, 1);
    EXPECT_EQ(g_plain_frees, 1);
    expect_one_error(CGC_ERR_CORRUPTION, {"PyObject_CallFinalizerFromDealloc", "test.PlainFinal", "a Py_DECREF too many"});
}

TEST_F(ObjectTest, ObjectDelFreesGcAndNonGcObjects) {
    cgc_object *gc = cgc_gc_new(&node_type);
    cgc_object *plain = cgc_object_new(&plain_type);
    ASSERT_NE(gc, nullptr);
    ASSERT_NE(plain, nullptr);
    EXPECT_EQ(cgc_get_count(0), 1);
    cgc_object_del(gc);  // knows about the header (ASan checks the pointer)
    cgc_object_del(plain);
    EXPECT_EQ(cgc_get_count(0), 0);
}

TEST_F(ObjectTest, RawMemory) {
    void *a = cgc_malloc(0);
    EXPECT_NE(a, nullptr);
    auto *b = static_cast<unsigned char *>(cgc_calloc(16, 4));
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(all_zero(b, 64));
    b = static_cast<unsigned char *>(cgc_realloc(b, 128));
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(all_zero(b, 64));
    cgc_free(a);
    cgc_free(b);
    cgc_free(nullptr);
}

// The raw memory of objects that embed their header (the C++ API's path),
// with the slot handle carried from allocation to binding: bound at an
// offset, tracked or not, and freed (untracked first) by cgc_gc_raw_free.
TEST_F(ObjectTest, RawSlotsAreBoundTrackedAndFreed) {
    size_t live = gci::current_heap().space.live_objects();
    cgc_raw_slot slot = cgc_gc_raw_alloc_slot(48, 16);
    ASSERT_NE(slot.memory, nullptr);
    ASSERT_NE(slot.gc_meta, nullptr);
    EXPECT_EQ(gci::current_heap().space.live_objects(), live + 1);
    auto *op = reinterpret_cast<cgc_object *>(static_cast<char *>(slot.memory) + 16);
    op->ob_refcnt = 1;
    op->ob_type = &node_type;
    cgc_gc_raw_bind_slot(slot, op, 1);
    EXPECT_TRUE(cgc_gc_is_tracked(op));
    EXPECT_EQ(gci::meta_of(op).object_offset, 16);
    EXPECT_EQ(&gci::meta_of(op), slot.gc_meta);
    cgc_gc_raw_free(slot.memory);  // still tracked: untracked, then freed
    EXPECT_EQ(gci::current_heap().space.live_objects(), live);
    EXPECT_EQ(cgc_get_count(0), 0);

    // Unbound and untracked (a constructor threw): freed as it is.
    slot = cgc_gc_raw_alloc_slot(24, 8);
    ASSERT_NE(slot.memory, nullptr);
    cgc_gc_raw_free(slot.memory);
    EXPECT_EQ(gci::current_heap().space.live_objects(), live);

    // More than 16-byte alignment is refused, with no memory and no handle.
    slot = cgc_gc_raw_alloc_slot(64, 32);
    EXPECT_EQ(slot.memory, nullptr);
    EXPECT_EQ(slot.gc_meta, nullptr);
    expect_one_error(CGC_ERR_VALUE, {"cgc_gc_raw_alloc", "alignment 32"});
}

// An old object (generation 2) is in no list: untracking it clears its flag
// only, and it is neither seen by nor kept by later collections.
TEST_F(ObjectTest, UntrackingAnOldObjectLeavesTheOtherOldObjectsAlone) {
    cgc_object *a = obj(new_node());
    cgc_object *b = obj(new_node());
    cgc_collect(2);  // both old now
    EXPECT_EQ(gci::meta_of(a).generation, 2);
    cgc_gc_untrack(a);
    EXPECT_FALSE(cgc_gc_is_tracked(a));
    EXPECT_TRUE(cgc_gc_is_tracked(b));
    cgc_object_list list{};
    ASSERT_EQ(cgc_get_objects(2, &list), 0);
    bool saw_a = false, saw_b = false;
    for (cgc_ssize_t i = 0; i < list.count; ++i) {
        saw_a |= list.items[i] == a;
        saw_b |= list.items[i] == b;
    }
    cgc_object_list_release(&list);
    EXPECT_FALSE(saw_a);
    EXPECT_TRUE(saw_b);
    cgc_gc_track(a);  // back, in generation 0
    EXPECT_EQ(gci::meta_of(a).generation, 0);
    cgc_decref(a);
    cgc_decref(b);
    EXPECT_EQ(counters.deallocated, 2);
}

// ---- The default tp_dealloc ----------------------------------------------------

TEST_F(ObjectTest, DefaultDeallocFinalizesOnceClearsAndFrees) {
    Node *referent = new_node(2);
    auto *node = as_node(cgc_gc_new(&default_dealloc_type));
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(default_dealloc_type.tp_dealloc, cgc_default_dealloc);
    node->id = 1;
    cgc_gc_track(node);
    link_extra(node, obj(referent));
    cgc_decref(obj(referent));
    cgc_decref(obj(node));
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.cleared, 1);      // the default dealloc calls tp_clear
    EXPECT_EQ(counters.deallocated, 1);  // so the referent was freed
    EXPECT_EQ(tracked_total(), 0);
    EXPECT_EQ(cgc_get_count(0), 0);
}

TEST_F(ObjectTest, DefaultDeallocStopsWhenTheFinalizerResurrects) {
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        saved = obj(node);
        cgc_incref(saved);
    };
    auto *node = as_node(cgc_gc_new(&default_dealloc_type));
    ASSERT_NE(node, nullptr);
    cgc_gc_track(node);
    cgc_decref(obj(node));
    ASSERT_EQ(saved, obj(node));
    EXPECT_EQ(saved->ob_refcnt, 1);
    EXPECT_EQ(counters.cleared, 0);
    EXPECT_TRUE(cgc_gc_is_tracked(saved));  // stays visible to the collector
    EXPECT_TRUE(cgc_gc_is_finalized(saved));
    cgc_decref(saved);  // this time it dies, without a second finalization
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.cleared, 1);
    EXPECT_EQ(tracked_total(), 0);
}

// ---- Deallocation: the trashcan, underflow ----------------------------------

TEST_F(ObjectTest, NoAutomaticCollectionInsideDeallocation) {
    cgc_set_threshold(0, 5);
    cgc_enable();
    Node *victim = new_node(1);
    on_dealloc = [](Node *node) {
        if (node->id == 1)
            for (int i = 0; i < 20; ++i) make_garbage_self_cycle(&node_type, 100 + i);
    };
    cgc_decref(obj(victim));  // allocates past the threshold while deallocating
    on_dealloc = nullptr;
    EXPECT_EQ(counters.deallocated, 1);
    for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) EXPECT_EQ(stats_of(g).collections, 0u);
    // The collection is due: the next allocation (outside) runs it.
    Node *next = new_node(2);
    EXPECT_EQ(stats_of(0).collections, 1u);
    EXPECT_EQ(counters.deallocated, 21);
    cgc_decref(obj(next));
}

TEST_F(ObjectTest, TrashcanFreesTenMillionNodeChainWithOneDecref) {
    const int n = 10'000'000;
    Node *head = nullptr;
    for (int i = 0; i < n; ++i) {
        Node *node = new_node();
        ASSERT_NE(node, nullptr);
        node->next = head ? obj(head) : nullptr;  // transfers the reference
        head = node;
    }
    EXPECT_EQ(counters.deallocated, 0);
    cgc_decref(obj(head));  // would overflow the stack without the trashcan
    EXPECT_EQ(counters.deallocated, n);
    EXPECT_LE(counters.max_dealloc_depth, 2 * gci::kMaxDeallocDepth);
    EXPECT_EQ(tracked_total(), 0);
    EXPECT_EQ(heap_state().trashcan.deferred, nullptr);
    EXPECT_EQ(heap_state().trashcan.depth, 0);
}

TEST_F(ObjectTest, TrashcanFreesLongChainOfNonGcObjects) {
    const int n = 1'000'000;
    cgc_object *head = nullptr;
    for (int i = 0; i < n; ++i) {
        cgc_object *link = cgc_object_new(&link_type);
        ASSERT_NE(link, nullptr);
        reinterpret_cast<Link *>(link)->next = head;
        head = link;
    }
    cgc_decref(head);
    EXPECT_EQ(g_links_freed, n);
    EXPECT_EQ(heap_state().trashcan.deferred, nullptr);
}

TEST_F(ObjectTest, RefcountUnderflowIsReportedNotFreedTwice) {
    auto *node = as_node(cgc_gc_new(&bad_dealloc_type));
    ASSERT_NE(node, nullptr);
    cgc_gc_track(node);
    cgc_decref(obj(node));  // its tp_dealloc decrefs it again (to -1)
    EXPECT_EQ(g_bad_deallocs, 1);
    expect_one_error(CGC_ERR_CORRUPTION, {"test.BadDealloc", "below zero"});
    EXPECT_EQ(cgc_error_count(CGC_ERR_CORRUPTION), 1u);
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(ObjectTest, DecrefBelowZeroOfLiveObjectIsReportedAndDoesNotDealloc) {
    Node *node = new_node(1);
    obj(node)->ob_refcnt = 0;  // as if a Py_DECREF too many had happened
    cgc_decref(obj(node));     // -1
    EXPECT_EQ(counters.deallocated, 0);
    expect_one_error(CGC_ERR_CORRUPTION, {"test.Node", "below zero (-1)"});
    obj(node)->ob_refcnt = 1;
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 1);
}

}  // namespace
