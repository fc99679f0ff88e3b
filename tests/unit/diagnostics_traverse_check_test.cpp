// The traverse checker: an object visited more often than its count allows,
// a tp_clear after which tp_traverse still visits a reference, and cycles
// that only references a tp_traverse skips hold together.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

namespace cgc_test {
namespace {

class DiagnosticsTraverseCheckTest : public HeapFixture {};

TEST_F(DiagnosticsTraverseCheckTest, AnOvervisitedObjectNamesItsTypeAndAReferrer) {
    static cgc_type borrower_type = make_node_type("test.Borrower", false, true);
    Node *holder = new_node(&borrower_type, 1);
    Node *held = new_node(2);
    link_next(holder, held);
    cgc_decref(obj(held));
    holder->extra = obj(held);  // a borrowed reference that traverse visits: 2 visits, count 1
    char *report = nullptr;
    EXPECT_EQ(cgc_diag_check_traverse(&report), 1);
    ASSERT_NE(report, nullptr);
    EXPECT_CONTAINS(report, "type test.Node");
    EXPECT_CONTAINS(report, "has refcount 1 but tracked objects visit it 2 times");
    EXPECT_CONTAINS(report, "<test.Borrower");
    cgc_diag_text_release(report);
    expect_one_error(CGC_ERR_TYPE, {"traverse check", "test.Node", "test.Borrower"});
    holder->extra = nullptr;
    EXPECT_EQ(cgc_diag_check_traverse(nullptr), 0);
    cgc_decref(obj(holder));
}

// tp_clear that drops `next` only: `extra` is still visited afterwards.
int half_clear(cgc_object *self) {
    cgc_object *next = as_node(self)->next;
    as_node(self)->next = nullptr;
    cgc_xdecref(next);
    return 0;
}

TEST_F(DiagnosticsTraverseCheckTest, ATraverseAfterClearIsReportedWhenSwitchedOn) {
    static cgc_type half_type = [] {
        cgc_type type = make_node_type("test.HalfClear", false, true);
        type.tp_clear = half_clear;
        return type;
    }();
    Node *kept = new_node(9);
    auto make_cycle = [&] {
        Node *x = new_node(&half_type, 1), *y = new_node(&half_type, 2);
        link_next(x, y), link_next(y, x);
        link_extra(x, obj(kept));
        cgc_decref(obj(x)), cgc_decref(obj(y));
    };
    make_cycle();
    cgc_collect(2);  // the check is off: no report
    EXPECT_TRUE(take_errors().empty());
    EXPECT_EQ(cgc_diag_set_traverse_check(1), 0);
    make_cycle();
    EXPECT_EQ(cgc_collect(2), 2);
    expect_one_error(CGC_ERR_TYPE, {"traverse check: type test.HalfClear", "after tp_clear", "test.Node"});
    EXPECT_EQ(cgc_diag_set_traverse_check(0), 1);
    cgc_decref(obj(kept));
}

// A traverse that forgets `next` (it visits `extra` only).
int skip_next_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    if (cgc_object *extra = as_node(self)->extra)
        if (int result = visit(extra, arg)) return result;
    return 0;
}

cgc_type skips_next_type = [] {
    cgc_type type = make_node_type("test.SkipsNext", false, true);
    type.tp_traverse = skip_next_traverse;
    return type;
}();

// A ring of `size` objects of `type` linked through `next`; the caller holds
// the first.
Node *make_ring(cgc_type *type, int size) {
    Node *first = new_node(type, 0), *last = first;
    for (int i = 1; i < size; ++i) {
        Node *node = new_node(type, i);
        link_next(last, node);
        cgc_decref(obj(node));
        last = node;
    }
    link_next(last, first);
    return first;
}

// Frees a ring of SkipsNext objects that no collection can free: breaks it.
void break_ring(Node *member) {
    cgc_object *next = member->next;
    member->next = nullptr;
    cgc_decref(next);
}

TEST_F(DiagnosticsTraverseCheckTest, ACycleHeldOnlyByUntracedReferencesNamesTheType) {
    Node *ring = make_ring(&skips_next_type, 3);
    cgc_decref(obj(ring));  // now only the ring's untraced `next` fields hold it
    EXPECT_EQ(cgc_collect(2), 0);
    char *report = nullptr;
    EXPECT_EQ(cgc_diag_check_traverse(&report), 1);
    ASSERT_NE(report, nullptr);
    EXPECT_CONTAINS(report, "traverse check: type test.SkipsNext: 3 of its objects sit in cycles held together only "
                            "by references its tp_traverse does not visit");
    EXPECT_CONTAINS(report, "from byte " + std::to_string(offsetof(Node, next)) + " of its object");
    EXPECT_CONTAINS(report, "nothing else holds them (3 objects in all)");
    EXPECT_CONTAINS(report, "tp_traverse must visit every reference the object owns");
    cgc_diag_text_release(report);
    expect_one_error(CGC_ERR_TYPE, {"traverse check: type test.SkipsNext", "does not visit"});
    break_ring(ring);
    EXPECT_EQ(cgc_diag_check_traverse(nullptr), 0);
}

TEST_F(DiagnosticsTraverseCheckTest, WhatTheRingHoldsIsCountedButOnlyTheRingsTypeIsNamed) {
    Node *ring = make_ring(&skips_next_type, 2);
    Node *held = new_node(7);
    link_extra(ring, obj(held));  // traced: alive only because the ring is
    cgc_decref(obj(held));
    cgc_decref(obj(ring));
    char *report = nullptr;
    EXPECT_EQ(cgc_diag_check_traverse(&report), 1);
    ASSERT_NE(report, nullptr);
    EXPECT_CONTAINS(report, "type test.SkipsNext: 2 of its objects");
    EXPECT_CONTAINS(report, "(3 objects in all)");
    EXPECT_EQ(std::string(report).find("type test.Node"), std::string::npos) << report;
    cgc_diag_text_release(report);
    expect_one_error(CGC_ERR_TYPE, {"test.SkipsNext"});
    break_ring(ring);
}

TEST_F(DiagnosticsTraverseCheckTest, ACycleHeldFromOutsideIsNotReported) {
    Node *correct = make_ring(&node_type, 3);  // a correct type, held by a local
    Node *skipping = make_ring(&skips_next_type, 3);  // held by a local too: not (yet) a leak
    EXPECT_EQ(cgc_diag_check_traverse(nullptr), 0);
    EXPECT_TRUE(take_errors().empty());
    cgc_decref(obj(correct));
    cgc_object *next = skipping->next;
    skipping->next = nullptr;
    cgc_decref(next);
    cgc_decref(obj(skipping));
}

TEST_F(DiagnosticsTraverseCheckTest, ABorrowedPointerBackToAParentIsNotAReference) {
    // parent --extra (owned, traced)--> child --next (borrowed, untraced)--> parent:
    // the parent's count (1, a local) equals the untraced pointers to it.
    Node *parent = new_node(&skips_next_type, 1);
    Node *child = new_node(&skips_next_type, 2);
    link_extra(parent, obj(child));
    cgc_decref(obj(child));
    child->next = obj(parent);
    EXPECT_EQ(cgc_diag_check_traverse(nullptr), 0);
    // And in a deeper tree, a borrowed field is told from its targets' counts.
    Node *grandchild = new_node(&skips_next_type, 3);
    link_extra(child, obj(grandchild));
    cgc_decref(obj(grandchild));
    grandchild->next = obj(child);
    EXPECT_EQ(cgc_diag_check_traverse(nullptr), 0);
    EXPECT_TRUE(take_errors().empty());
    grandchild->next = nullptr;
    child->next = nullptr;
    cgc_decref(obj(parent));
}

TEST_F(DiagnosticsTraverseCheckTest, FullCollectionsReportSuchCyclesOnceWhenSwitchedOn) {
    Node *first = make_ring(&skips_next_type, 2);
    cgc_decref(obj(first));
    cgc_collect(2);  // the check is off: no report
    EXPECT_TRUE(take_errors().empty());
    EXPECT_EQ(cgc_diag_set_traverse_check(1), 0);
    cgc_collect(0);  // young collections do not look
    EXPECT_TRUE(take_errors().empty());
    cgc_collect(2);
    expect_one_error(CGC_ERR_TYPE, {"traverse check: type test.SkipsNext: 2 of its objects", "no collection can free"});
    Node *second = make_ring(&skips_next_type, 4);
    cgc_decref(obj(second));
    cgc_collect(2);  // the type was named already
    EXPECT_TRUE(take_errors().empty());
    EXPECT_EQ(cgc_diag_set_traverse_check(0), 1);
    break_ring(first);
    break_ring(second);
}

}  // namespace
}  // namespace cgc_test
