// The traverse checker: an object visited more often than its count allows,
// and a tp_clear after which tp_traverse still visits a reference.
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

}  // namespace
}  // namespace cgc_test
