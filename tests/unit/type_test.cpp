// Types: cgc_type_ready's defaults, inheritance and rejections; heap types
// made from specs (tracked, referenced by their instances, collectable);
// the dealloc a heap subtype of a static type gets; slots.
#include "test_types.hpp"

#include <cstring>

using namespace cgc_test;

namespace {

class TypeTest : public HeapFixture {};

cgc_type plain_type_named(const char *name, unsigned long flags = 0) {
    cgc_type t{};
    t.tp_name = name;
    t.tp_basicsize = sizeof(Node);
    t.tp_flags = flags;
    return t;
}

int g_custom_frees = 0;
void custom_free(void *memory) {
    ++g_custom_frees;
    cgc_object_del(memory);
}
void custom_gc_free(void *memory) {
    ++g_custom_frees;
    cgc_gc_del(memory);
}
void legacy_del(cgc_object *) {}

// ---- cgc_type_ready ------------------------------------------------------------

TEST_F(TypeTest, ReadyFillsDefaults) {
    cgc_type t = plain_type_named("test.Plain");
    ASSERT_EQ(cgc_type_ready(&t), 0);
    EXPECT_TRUE(t.tp_flags & CGC_TPFLAGS_READY);
    EXPECT_FALSE(t.tp_flags & CGC_TPFLAGS_READYING);
    EXPECT_FALSE(t.tp_flags & CGC_TPFLAGS_HAVE_GC);
    EXPECT_EQ(t.ob_base.ob_base.ob_type, &cgc_type_type);
    EXPECT_EQ(t.tp_base, &cgc_base_object_type);
    EXPECT_EQ(t.tp_alloc, cgc_type_generic_alloc);
    EXPECT_EQ(t.tp_new, cgc_type_generic_new);
    EXPECT_EQ(t.tp_dealloc, cgc_default_dealloc);
    EXPECT_EQ(t.tp_free, cgc_object_del);
    EXPECT_EQ(cgc_type_ready(&t), 0);  // again: nothing to do

    cgc_type gc = make_node_type("test.GcDefaults", false, true);
    gc.tp_dealloc = nullptr;
    ASSERT_EQ(cgc_type_ready(&gc), 0);
    EXPECT_EQ(gc.tp_free, cgc_gc_del);
    EXPECT_EQ(gc.tp_dealloc, cgc_default_dealloc);
    // Static types are not GC objects, even though `type` is a GC type.
    EXPECT_FALSE(cgc_is_gc(obj(&gc)));
    EXPECT_FALSE(cgc_gc_is_tracked(obj(&gc)));
}

TEST_F(TypeTest, GenericNewReadiesAndTracks) {
    cgc_type t = make_node_type("test.GenericNew", false, true);
    EXPECT_FALSE(t.tp_flags & CGC_TPFLAGS_READY);
    cgc_object *op = cgc_type_generic_new(&t, nullptr, nullptr);
    ASSERT_NE(op, nullptr);
    EXPECT_TRUE(t.tp_flags & CGC_TPFLAGS_READY);
    EXPECT_TRUE(cgc_gc_is_tracked(op));
    cgc_decref(op);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(TypeTest, SubtypeThatSaysNothingAboutGcInheritsIt) {
    cgc_type base = make_node_type("test.GcBase", false, true, CGC_TPFLAGS_BASETYPE);
    cgc_type sub{};
    sub.tp_name = "test.GcSub";
    sub.tp_base = &base;
    ASSERT_EQ(cgc_type_ready(&sub), 0);
    EXPECT_TRUE(sub.tp_flags & CGC_TPFLAGS_HAVE_GC);
    EXPECT_EQ(sub.tp_traverse, node_traverse);
    EXPECT_EQ(sub.tp_clear, node_clear);
    EXPECT_EQ(sub.tp_free, base.tp_free);
    EXPECT_EQ(sub.tp_free, cgc_gc_del);
    EXPECT_EQ(sub.tp_dealloc, node_dealloc);
    EXPECT_EQ(sub.tp_basicsize, base.tp_basicsize);

    // Its instances are GC objects whose cycles are collected.
    Node *node = new_node(&sub, 1);
    ASSERT_NE(node, nullptr);
    EXPECT_TRUE(cgc_is_gc(obj(node)));
    link_next(node, node);
    cgc_decref(obj(node));
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(TypeTest, SubtypeWithItsOwnTraverseDoesNotInheritGc) {
    cgc_type base = make_node_type("test.GcBase", false, true, CGC_TPFLAGS_BASETYPE);
    cgc_type sub{};
    sub.tp_name = "test.OwnTraverse";
    sub.tp_base = &base;
    sub.tp_traverse = heap_node_traverse;  // says something: no inheritance
    ASSERT_EQ(cgc_type_ready(&sub), 0);
    EXPECT_FALSE(sub.tp_flags & CGC_TPFLAGS_HAVE_GC);
    EXPECT_EQ(sub.tp_clear, nullptr);
    EXPECT_EQ(sub.tp_traverse, heap_node_traverse);
}

TEST_F(TypeTest, TpFreeFollowsTheGcFlag) {
    // A GC subtype of a non-GC base that uses the default free: PyObject_GC_Del.
    cgc_type plain_base = plain_type_named("test.PlainBase", CGC_TPFLAGS_BASETYPE);
    ASSERT_EQ(cgc_type_ready(&plain_base), 0);
    ASSERT_EQ(plain_base.tp_free, cgc_object_del);
    cgc_type gc_sub = make_node_type("test.GcOfPlain", false, true);
    gc_sub.tp_base = &plain_base;
    ASSERT_EQ(cgc_type_ready(&gc_sub), 0);
    EXPECT_EQ(gc_sub.tp_free, cgc_gc_del);

    // Same when the base frees with PyObject_Free.
    cgc_type free_base = plain_type_named("test.FreeBase", CGC_TPFLAGS_BASETYPE);
    free_base.tp_free = cgc_free;
    cgc_type gc_sub2 = make_node_type("test.GcOfFree", false, true);
    gc_sub2.tp_base = &free_base;
    ASSERT_EQ(cgc_type_ready(&gc_sub2), 0);
    EXPECT_EQ(gc_sub2.tp_free, cgc_gc_del);

    // Agreeing on GC: a custom tp_free is inherited, and used.
    cgc_type custom_base = plain_type_named("test.CustomFreeBase", CGC_TPFLAGS_BASETYPE);
    custom_base.tp_free = custom_free;
    cgc_type plain_sub = plain_type_named("test.PlainSub");
    plain_sub.tp_base = &custom_base;
    ASSERT_EQ(cgc_type_ready(&plain_sub), 0);
    EXPECT_EQ(plain_sub.tp_free, custom_free);
    g_custom_frees = 0;
    cgc_object *op = cgc_object_new(&plain_sub);
    ASSERT_NE(op, nullptr);
    cgc_decref(op);  // default dealloc -> tp_free
    EXPECT_EQ(g_custom_frees, 1);

    cgc_type custom_gc_base = make_node_type("test.CustomGcFreeBase", false, true, CGC_TPFLAGS_BASETYPE);
    custom_gc_base.tp_free = custom_gc_free;
    cgc_type gc_sub3{};
    gc_sub3.tp_name = "test.CustomGcFreeSub";
    gc_sub3.tp_base = &custom_gc_base;
    ASSERT_EQ(cgc_type_ready(&gc_sub3), 0);
    EXPECT_EQ(gc_sub3.tp_free, custom_gc_free);
    Node *node = new_node(&gc_sub3, 1);
    cgc_decref(obj(node));  // node_dealloc -> tp_free
    EXPECT_EQ(g_custom_frees, 2);

    // A GC subtype of a non-GC base with a custom (non-GC) free does not
    // inherit it: the object has a header the base's free knows nothing of.
    cgc_type gc_sub4 = make_node_type("test.GcOfCustom", false, true);
    gc_sub4.tp_base = &custom_base;
    ASSERT_EQ(cgc_type_ready(&gc_sub4), 0);
    EXPECT_NE(gc_sub4.tp_free, custom_free);
    EXPECT_EQ(gc_sub4.tp_free, cgc_gc_del);
}

TEST_F(TypeTest, FinalizeIsInheritedTpDelIsNot) {
    cgc_type base = make_node_type("test.FinalBase", true, true, CGC_TPFLAGS_BASETYPE);
    base.tp_del = legacy_del;
    cgc_type sub{};
    sub.tp_name = "test.FinalSub";
    sub.tp_base = &base;
    ASSERT_EQ(cgc_type_ready(&sub), 0);
    EXPECT_EQ(sub.tp_finalize, node_finalize);
    EXPECT_EQ(sub.tp_del, nullptr);

    // So a subtype instance in a cycle is finalized and collected normally.
    make_garbage_self_cycle(&sub, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(TypeTest, GcTypeWithoutTraverseIsRejected) {
    cgc_type t = plain_type_named("test.NoTraverse", CGC_TPFLAGS_HAVE_GC);
    EXPECT_EQ(cgc_type_ready(&t), -1);
    expect_one_error(CGC_ERR_TYPE, {"cgc_type_ready", "PyType_Ready", "test.NoTraverse",
                                    "no traverse function"});
    EXPECT_FALSE(t.tp_flags & CGC_TPFLAGS_READY);
    EXPECT_FALSE(t.tp_flags & CGC_TPFLAGS_READYING);
    // Allocating it fails the same way instead of crashing.
    EXPECT_EQ(cgc_gc_new(&t), nullptr);
    expect_one_error(CGC_ERR_TYPE, {"test.NoTraverse", "no traverse function"});
    EXPECT_EQ(cgc_get_count(0), 0);
}

TEST_F(TypeTest, BaseWithoutBasetypeFlagIsRejected) {
    cgc_type final_base = plain_type_named("test.FinalClass");
    cgc_type sub = plain_type_named("test.SubOfFinal");
    sub.tp_base = &final_base;
    EXPECT_EQ(cgc_type_ready(&sub), -1);
    expect_one_error(CGC_ERR_TYPE, {"test.SubOfFinal", "Py_TPFLAGS_BASETYPE"});
    EXPECT_FALSE(sub.tp_flags & CGC_TPFLAGS_READY);
    EXPECT_FALSE(sub.tp_flags & CGC_TPFLAGS_READYING);
}

TEST_F(TypeTest, InvalidSizesAreRejected) {
    cgc_type base = plain_type_named("test.BigBase", CGC_TPFLAGS_BASETYPE);
    cgc_type small = plain_type_named("test.Small");
    small.tp_basicsize = sizeof(cgc_object);
    small.tp_base = &base;
    EXPECT_EQ(cgc_type_ready(&small), -1);
    expect_one_error(CGC_ERR_TYPE, {"test.Small", "tp_basicsize"});

    cgc_type tiny = plain_type_named("test.Tiny");
    tiny.tp_basicsize = 4;
    tiny.tp_base = &base;  // inherits nothing (it has a size): still too small
    EXPECT_EQ(cgc_type_ready(&tiny), -1);
    expect_one_error(CGC_ERR_TYPE, {"test.Tiny", "tp_basicsize"});

    cgc_type negative = plain_type_named("test.NegativeItems");
    negative.tp_itemsize = -8;
    EXPECT_EQ(cgc_type_ready(&negative), -1);
    expect_one_error(CGC_ERR_TYPE, {"test.NegativeItems", "tp_itemsize"});

    EXPECT_EQ(cgc_type_ready(nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_type_ready", "NULL"});
}

// ---- Heap types -------------------------------------------------------------------

cgc_type_slot heap_node_slots[] = {
    {CGC_tp_traverse, reinterpret_cast<void *>(heap_node_traverse)},
    {CGC_tp_clear, reinterpret_cast<void *>(node_clear)},
    {CGC_tp_doc, const_cast<char *>("a heap node")},
    {0, nullptr},
};

cgc_type_spec heap_node_spec = {"test.HeapNode", sizeof(Node), 0,
                                CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_BASETYPE, heap_node_slots};

TEST_F(TypeTest, FromSpecMakesATrackedHeapType) {
    cgc_object *type_object = cgc_type_from_spec(&heap_node_spec, nullptr);
    ASSERT_NE(type_object, nullptr);
    auto *type = reinterpret_cast<cgc_type *>(type_object);
    EXPECT_TRUE(type->tp_flags & CGC_TPFLAGS_HEAPTYPE);
    EXPECT_TRUE(type->tp_flags & CGC_TPFLAGS_READY);
    EXPECT_TRUE(type->tp_flags & CGC_TPFLAGS_HAVE_GC);
    EXPECT_TRUE(type->tp_flags & CGC_TPFLAGS_BASETYPE);
    EXPECT_EQ(type_object->ob_type, &cgc_type_type);
    EXPECT_EQ(type_object->ob_refcnt, 1);
    EXPECT_TRUE(cgc_is_gc(type_object));
    EXPECT_TRUE(cgc_gc_is_tracked(type_object));
    EXPECT_STREQ(type->tp_name, "test.HeapNode");
    EXPECT_NE(type->tp_name, heap_node_spec.name);  // a copy
    EXPECT_STREQ(type->tp_doc, "a heap node");
    EXPECT_EQ(type->tp_basicsize, static_cast<cgc_ssize_t>(sizeof(Node)));
    EXPECT_EQ(type->tp_base, &cgc_base_object_type);
    EXPECT_EQ(type->tp_traverse, heap_node_traverse);
    EXPECT_EQ(type->tp_dealloc, cgc_default_dealloc);
    EXPECT_EQ(type->tp_free, cgc_gc_del);

    // Instances hold a reference to their type; the default dealloc drops it.
    cgc_object *first = cgc_gc_new(type);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(type_object->ob_refcnt, 2);
    cgc_object *second = type->tp_alloc(type, 0);  // generic alloc: tracked
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(cgc_gc_is_tracked(second));
    EXPECT_EQ(type_object->ob_refcnt, 3);
    cgc_decref(first);
    EXPECT_EQ(type_object->ob_refcnt, 2);
    cgc_decref(second);
    EXPECT_EQ(type_object->ob_refcnt, 1);

    EXPECT_EQ(tracked_total(), 1);  // the type itself
    cgc_decref(type_object);        // freed by reference counting
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(TypeTest, HeapTypeAndItsInstancesAreCollectedTogether) {
    cgc_object *type_object = cgc_type_from_spec(&heap_node_spec, nullptr);
    ASSERT_NE(type_object, nullptr);
    auto *type = reinterpret_cast<cgc_type *>(type_object);
    Node *x = new_node(type, 1);
    ASSERT_NE(x, nullptr);
    link_next(x, x);
    link_extra(x, type_object);  // instance -> type, besides ob_type
    EXPECT_EQ(type_object->ob_refcnt, 3);  // ours, x's ob_type, x.extra
    EXPECT_EQ(cgc_collect(2), 0);          // we hold both
    cgc_decref(type_object);
    cgc_decref(obj(x));
    // Only the cycle refers to them now: one collection frees both, whichever
    // is cleared first (the type's tp_clear keeps it alive until x is gone).
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(TypeTest, HeapSubtypeOfStaticBaseWithOwnDeallocDropsTheType) {
    cgc_type base = make_node_type("test.StaticBase", false, true, CGC_TPFLAGS_BASETYPE);
    ASSERT_EQ(cgc_type_ready(&base), 0);  // as CPython, bases must be ready
    cgc_type_slot no_slots[] = {{0, nullptr}};
    cgc_type_spec spec = {"test.HeapSub", 0, 0, CGC_TPFLAGS_BASETYPE, no_slots};
    cgc_object *type_object = cgc_type_from_spec(&spec, obj(&base));
    ASSERT_NE(type_object, nullptr);
    auto *type = reinterpret_cast<cgc_type *>(type_object);
    EXPECT_EQ(type->tp_base, &base);
    EXPECT_TRUE(type->tp_flags & CGC_TPFLAGS_HAVE_GC);  // inherited
    EXPECT_EQ(type->tp_basicsize, static_cast<cgc_ssize_t>(sizeof(Node)));
    EXPECT_NE(type->tp_dealloc, node_dealloc);  // a wrapper that also drops the type
    EXPECT_NE(type->tp_dealloc, cgc_default_dealloc);

    Node *node = new_node(type, 1);
    ASSERT_NE(node, nullptr);
    EXPECT_EQ(type_object->ob_refcnt, 2);
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 1);  // the base's dealloc ran...
    EXPECT_EQ(type_object->ob_refcnt, 1);  // ...and the type was dropped once

    // One more level: a heap subtype of the heap subtype.
    cgc_type_spec spec2 = {"test.HeapSubSub", 0, 0, 0, no_slots};
    cgc_object *sub_object = cgc_type_from_spec(&spec2, type_object);
    ASSERT_NE(sub_object, nullptr);
    EXPECT_EQ(type_object->ob_refcnt, 2);  // the subtype holds its base
    auto *sub = reinterpret_cast<cgc_type *>(sub_object);
    Node *node2 = new_node(sub, 2);
    ASSERT_NE(node2, nullptr);
    EXPECT_EQ(sub_object->ob_refcnt, 2);
    cgc_decref(obj(node2));
    EXPECT_EQ(counters.deallocated, 2);
    EXPECT_EQ(sub_object->ob_refcnt, 1);
    EXPECT_EQ(type_object->ob_refcnt, 2);

    cgc_decref(sub_object);  // frees the subtype, which drops its base
    EXPECT_EQ(type_object->ob_refcnt, 1);
    cgc_decref(type_object);
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(TypeTest, HeapTypeWithItsOwnDeallocUsesIt) {
    cgc_type_slot slots[] = {
        {CGC_tp_traverse, reinterpret_cast<void *>(heap_node_traverse)},
        {CGC_tp_dealloc, reinterpret_cast<void *>(heap_node_dealloc)},
        {0, nullptr},
    };
    cgc_type_spec spec = {"test.OwnDealloc", sizeof(Node), 0, CGC_TPFLAGS_HAVE_GC, slots};
    cgc_object *type_object = cgc_type_from_spec(&spec, nullptr);
    ASSERT_NE(type_object, nullptr);
    auto *type = reinterpret_cast<cgc_type *>(type_object);
    EXPECT_EQ(type->tp_dealloc, heap_node_dealloc);
    Node *node = new_node(type, 1);
    EXPECT_EQ(type_object->ob_refcnt, 2);
    cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(type_object->ob_refcnt, 1);
    cgc_decref(type_object);
}

TEST_F(TypeTest, HeapSubtypeOfHeapTypeHoldsItsBase) {
    cgc_object *base_object = cgc_type_from_spec(&heap_node_spec, nullptr);
    ASSERT_NE(base_object, nullptr);
    cgc_type_slot base_slot[] = {{CGC_tp_base, base_object}, {0, nullptr}};
    cgc_type_spec spec = {"test.HeapChild", 0, 0, 0, base_slot};
    cgc_object *child_object = cgc_type_from_spec(&spec, nullptr);  // base given as a slot
    ASSERT_NE(child_object, nullptr);
    auto *child = reinterpret_cast<cgc_type *>(child_object);
    EXPECT_EQ(child->tp_base, reinterpret_cast<cgc_type *>(base_object));
    EXPECT_EQ(base_object->ob_refcnt, 2);
    EXPECT_EQ(child->tp_traverse, heap_node_traverse);
    // The collector sees the reference (type traverse visits a heap base).
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(tracked_total(), 2);
    cgc_decref(child_object);
    EXPECT_EQ(base_object->ob_refcnt, 1);
    cgc_decref(base_object);
    EXPECT_EQ(tracked_total(), 0);
}

TEST_F(TypeTest, FromSpecErrorsLeaveNothingBehind) {
    cgc_type_slot bad_slots[] = {
        {CGC_tp_traverse, reinterpret_cast<void *>(node_traverse)},
        {1000, reinterpret_cast<void *>(node_clear)},
        {0, nullptr},
    };
    cgc_type_spec bad_slot_spec = {"test.BadSlot", sizeof(Node), 0, CGC_TPFLAGS_HAVE_GC, bad_slots};
    EXPECT_EQ(cgc_type_from_spec(&bad_slot_spec, nullptr), nullptr);
    expect_one_error(CGC_ERR_TYPE, {"cgc_type_from_spec", "PyType_FromSpec", "test.BadSlot", "slot id 1000"});
    EXPECT_EQ(tracked_total(), 0);

    // A GC type without traverse, on a heap base: the base's count is restored.
    cgc_object *base_object = cgc_type_from_spec(&heap_node_spec, nullptr);
    ASSERT_NE(base_object, nullptr);
    cgc_type_slot clear_only[] = {{CGC_tp_clear, reinterpret_cast<void *>(node_clear)}, {0, nullptr}};
    cgc_type_spec no_traverse = {"test.NoTraverseHeap", 0, 0, CGC_TPFLAGS_HAVE_GC, clear_only};
    EXPECT_EQ(cgc_type_from_spec(&no_traverse, base_object), nullptr);
    expect_one_error(CGC_ERR_TYPE, {"test.NoTraverseHeap", "no traverse function"});
    EXPECT_EQ(base_object->ob_refcnt, 1);
    EXPECT_EQ(tracked_total(), 1);

    // A base that is not a type.
    Node *not_a_type = new_node(1);
    EXPECT_EQ(cgc_type_from_spec(&heap_node_spec, obj(not_a_type)), nullptr);
    expect_one_error(CGC_ERR_TYPE, {"test.HeapNode", "not a type object"});
    cgc_decref(obj(not_a_type));

    // A base without Py_TPFLAGS_BASETYPE.
    cgc_type_slot none[] = {{0, nullptr}};
    cgc_type_spec leaf_spec = {"test.Leaf", sizeof(Node), 0, 0, none};
    cgc_object *leaf = cgc_type_from_spec(&leaf_spec, nullptr);
    ASSERT_NE(leaf, nullptr);
    cgc_type_spec under_leaf = {"test.UnderLeaf", 0, 0, 0, none};
    EXPECT_EQ(cgc_type_from_spec(&under_leaf, leaf), nullptr);
    expect_one_error(CGC_ERR_TYPE, {"test.UnderLeaf", "Py_TPFLAGS_BASETYPE"});
    EXPECT_EQ(leaf->ob_refcnt, 1);
    cgc_decref(leaf);

    EXPECT_EQ(cgc_type_from_spec(nullptr, nullptr), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_type_from_spec", "NULL"});
    cgc_decref(base_object);
    EXPECT_EQ(tracked_total(), 0);
}

// ---- Slots --------------------------------------------------------------------------

TEST_F(TypeTest, GetSlotReadsTheTypesSlots) {
    cgc_object *type_object = cgc_type_from_spec(&heap_node_spec, nullptr);
    ASSERT_NE(type_object, nullptr);
    auto *type = reinterpret_cast<cgc_type *>(type_object);
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_traverse), reinterpret_cast<void *>(heap_node_traverse));
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_clear), reinterpret_cast<void *>(node_clear));
    EXPECT_STREQ(static_cast<const char *>(cgc_type_get_slot(type, CGC_tp_doc)), "a heap node");
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_base), &cgc_base_object_type);
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_dealloc), reinterpret_cast<void *>(cgc_default_dealloc));
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_free), reinterpret_cast<void *>(cgc_gc_del));
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_alloc), reinterpret_cast<void *>(cgc_type_generic_alloc));
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_finalize), nullptr);
    EXPECT_EQ(cgc_type_get_slot(type, CGC_tp_del), nullptr);
    EXPECT_TRUE(take_errors().empty());

    // Static types too.
    cgc_type t = make_node_type("test.SlotStatic", true, true);
    ASSERT_EQ(cgc_type_ready(&t), 0);
    EXPECT_EQ(cgc_type_get_slot(&t, CGC_tp_finalize), reinterpret_cast<void *>(node_finalize));
    EXPECT_EQ(cgc_type_get_slot(&t, CGC_tp_dealloc), reinterpret_cast<void *>(node_dealloc));

    EXPECT_EQ(cgc_type_get_slot(type, 999), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"cgc_type_get_slot", "PyType_GetSlot", "999", "test.HeapNode"});
    EXPECT_EQ(cgc_type_get_slot(type, 0), nullptr);
    expect_one_error(CGC_ERR_VALUE, {"invalid slot id 0"});
    EXPECT_EQ(cgc_type_get_slot(nullptr, CGC_tp_clear), nullptr);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_type_get_slot", "NULL"});
    cgc_decref(type_object);
}

}  // namespace
