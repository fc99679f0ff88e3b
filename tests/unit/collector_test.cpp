#include <cyclegc/cyclegc.h>
#include <gtest/gtest.h>

namespace {

struct Node {
    cgc_object ob_base;
    cgc_object *next;
};

int node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    auto *node = reinterpret_cast<Node *>(self);
    if (node->next) return visit(node->next, arg);
    return 0;
}

int node_clear(cgc_object *self) {
    auto *node = reinterpret_cast<Node *>(self);
    cgc_object *next = node->next;
    node->next = nullptr;
    cgc_xdecref(next);
    return 0;
}

int g_freed = 0;

void node_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    node_clear(self);
    ++g_freed;
    cgc_gc_del(self);
}

cgc_type node_type = [] {
    cgc_type t{};
    t.tp_name = "Node";
    t.tp_basicsize = sizeof(Node);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_dealloc = node_dealloc;
    t.tp_traverse = node_traverse;
    t.tp_clear = node_clear;
    return t;
}();

Node *new_node() {
    auto *node = reinterpret_cast<Node *>(cgc_gc_new(&node_type));
    cgc_gc_track(node);
    return node;
}

class CollectorTest : public ::testing::Test {
  protected:
    void SetUp() override {
        cgc_collect(2);
        cgc_disable();
        g_freed = 0;
    }
    void TearDown() override { cgc_enable(); }
};

TEST_F(CollectorTest, SelfCycleIsCollected) {
    Node *a = new_node();
    a->next = &a->ob_base;
    cgc_incref(&a->ob_base);
    cgc_decref(&a->ob_base);
    EXPECT_EQ(g_freed, 0);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(g_freed, 1);
}

TEST_F(CollectorTest, LongRingIsCollectedWithoutRecursion) {
    const int n = 1'000'000;
    Node *first = new_node();
    Node *last = first;
    for (int i = 1; i < n; ++i) {
        Node *node = new_node();
        last->next = &node->ob_base;
        last = node;
    }
    cgc_incref(&first->ob_base);
    last->next = &first->ob_base;
    EXPECT_EQ(cgc_collect(2), 0);  // we still hold `first`
    EXPECT_EQ(g_freed, 0);
    cgc_decref(&first->ob_base);
    EXPECT_EQ(cgc_collect(2), n);
    EXPECT_EQ(g_freed, n);
}

}  // namespace
