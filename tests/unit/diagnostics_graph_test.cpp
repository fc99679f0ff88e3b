// The heap's graph and who holds an object: retainer chains and external
// counts on graphs built by hand, on random graphs against a search the test
// makes itself, a chain a million long, and a heap left exactly as it was.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace cgc_test {
namespace {

class DiagnosticsGraphTest : public HeapFixture {};

std::vector<cgc_object *> chain_objects(const cgc_diag_chain &chain) {
    std::vector<cgc_object *> objects;
    for (cgc_ssize_t i = 0; i < chain.length; ++i) objects.push_back(chain.links[i].object);
    return objects;
}

// root1 -> a -> b -> target and root2 -> c -> d -> target; the test holds
// only the roots (and drops its own references to the rest).
struct TwoPaths {
    Node *root1, *a, *b, *root2, *c, *d, *target;
    TwoPaths() {
        root1 = new_node(1), a = new_node(2), b = new_node(3), target = new_node(4);
        root2 = new_node(5), c = new_node(6), d = new_node(7);
        link_next(root1, a), link_next(a, b), link_next(b, target);
        link_next(root2, c), link_next(c, d), link_next(d, target);
        for (Node *held : {a, b, c, d, target}) cgc_decref(obj(held));
    }
    ~TwoPaths() {
        cgc_decref(obj(root1));
        cgc_decref(obj(root2));
    }
};

TEST_F(DiagnosticsGraphTest, ShortestChainStartsAtTheNearestRoot) {
    TwoPaths g;
    link_next(g.d, g.b);  // d -> b now: the second path is root2, c, d, b, target (longer still)
    cgc_diag_chain chain;
    ASSERT_EQ(cgc_diag_retainer_chain(obj(g.target), &chain), 1);
    std::vector<cgc_object *> expected{obj(g.root1), obj(g.a), obj(g.b), obj(g.target)};
    EXPECT_EQ(chain_objects(chain), expected);
    // External counts: the test's reference to root1; nothing else is held from outside.
    EXPECT_EQ(chain.links[0].external, 1);
    EXPECT_EQ(chain.links[2].refcount, 2);  // a -> b and d -> b
    for (int i = 1; i < 4; ++i) EXPECT_EQ(chain.links[i].external, 0) << i;
    EXPECT_STREQ(chain.links[3].type_name, "test.Node");
    cgc_diag_chain_release(&chain);
    EXPECT_EQ(chain.links, nullptr);
}

TEST_F(DiagnosticsGraphTest, AnObjectHeldFromOutsideIsItsOwnChain) {
    TwoPaths g;
    cgc_incref(obj(g.c));  // a C variable holds c: c is a root, its chain starts there
    cgc_diag_chain chain;
    ASSERT_EQ(cgc_diag_retainer_chain(obj(g.c), &chain), 1);
    ASSERT_EQ(chain.length, 1);
    EXPECT_EQ(chain.links[0].object, obj(g.c));
    EXPECT_EQ(chain.links[0].refcount, 2);
    EXPECT_EQ(chain.links[0].external, 1);
    cgc_diag_chain_release(&chain);
    EXPECT_EQ(cgc_diag_external_refs(obj(g.c)), 1);
    EXPECT_EQ(cgc_diag_external_refs(obj(g.d)), 0);
    cgc_decref(obj(g.c));
}

TEST_F(DiagnosticsGraphTest, AnUntracedHolderMakesItsTargetARoot) {
    // An untracked container's reference cannot be seen: b counts it as external.
    TwoPaths g;
    Node *hidden = new_node(&node_type, 9, false);
    link_next(hidden, g.b);
    EXPECT_EQ(cgc_diag_external_refs(obj(g.b)), 1);
    cgc_diag_chain chain;
    ASSERT_EQ(cgc_diag_retainer_chain(obj(g.target), &chain), 1);
    std::vector<cgc_object *> expected{obj(g.b), obj(g.target)};
    EXPECT_EQ(chain_objects(chain), expected);
    cgc_diag_chain_release(&chain);
    cgc_decref(obj(hidden));
}

TEST_F(DiagnosticsGraphTest, GarbageHasNoChain) {
    Node *cycle = make_garbage_self_cycle();
    cgc_diag_chain chain;
    EXPECT_EQ(cgc_diag_retainer_chain(obj(cycle), &chain), 0);
    EXPECT_EQ(chain.length, 0);
    EXPECT_EQ(cgc_diag_external_refs(obj(cycle)), 0);
}

TEST_F(DiagnosticsGraphTest, ChainToTheNearestObjectOfAType) {
    static cgc_type leaf_type = make_node_type("test.Leaf", false, true);
    TwoPaths g;
    Node *far_leaf = new_node(&leaf_type, 10), *near_leaf = new_node(&leaf_type, 11);
    link_extra(g.target, obj(far_leaf));
    link_extra(g.c, obj(near_leaf));
    cgc_decref(obj(far_leaf));
    cgc_decref(obj(near_leaf));
    cgc_diag_chain chain;
    ASSERT_EQ(cgc_diag_retainer_chain_to_type("test.Leaf", &chain), 1);
    std::vector<cgc_object *> expected{obj(g.root2), obj(g.c), obj(near_leaf)};
    EXPECT_EQ(chain_objects(chain), expected);
    cgc_diag_chain_release(&chain);
    EXPECT_EQ(cgc_diag_retainer_chain_to_type("test.NoSuchType", &chain), 0);
}

TEST_F(DiagnosticsGraphTest, MisuseIsReportedNamingTheFunction) {
    Node *untracked = new_node(&node_type, 1, false);
    cgc_diag_chain chain;
    EXPECT_EQ(cgc_diag_retainer_chain(obj(untracked), &chain), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_retainer_chain", "test.Node", "not a tracked object"});
    EXPECT_EQ(cgc_diag_retainer_chain(nullptr, &chain), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_retainer_chain", "not a tracked object"});
    EXPECT_EQ(cgc_diag_retainer_chain(obj(untracked), nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_retainer_chain", "NULL"});
    EXPECT_EQ(cgc_diag_external_refs(obj(untracked)), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_external_refs", "test.Node"});
    cgc_decref(obj(untracked));
}

// Distances from the objects the test holds, over next and extra, by a
// search of the test's own (absent: no held object reaches it).
std::map<Node *, int> distances_from(const std::vector<Node *> &held) {
    std::map<Node *, int> distance;
    std::vector<Node *> queue;
    for (Node *node : held) distance.emplace(node, 0), queue.push_back(node);
    for (size_t head = 0; head < queue.size(); ++head)
        for (cgc_object *field : {queue[head]->next, queue[head]->extra})
            if (field && distance.emplace(as_node(field), distance[queue[head]] + 1).second) queue.push_back(as_node(field));
    return distance;
}

TEST_F(DiagnosticsGraphTest, ChainsOnRandomGraphsAreShortestAndFollowReferences) {
    std::mt19937 random(25);
    for (int round = 0; round < 20; ++round) {
        std::vector<Node *> nodes;
        for (int i = 0; i < 300; ++i) nodes.push_back(new_node(i));
        auto any = [&] { return nodes[random() % nodes.size()]; };
        for (Node *node : nodes) {
            if (random() % 4) link_next(node, any());
            if (random() % 3 == 0) link_extra(node, obj(any()));
        }
        std::vector<Node *> held(nodes.begin(), nodes.begin() + 1 + round % 5);  // keep a few, drop the rest
        for (Node *node : nodes)
            if (std::find(held.begin(), held.end(), node) == held.end()) cgc_decref(obj(node));
        std::map<Node *, int> distance = distances_from(held);
        for (auto [target, length] : distance) {  // (the others may be freed already)
            cgc_diag_chain chain;
            ASSERT_EQ(cgc_diag_retainer_chain(obj(target), &chain), 1);
            ASSERT_EQ(chain.length, length + 1);
            EXPECT_NE(std::find(held.begin(), held.end(), as_node(chain.links[0].object)), held.end());
            EXPECT_GT(chain.links[0].external, 0);
            for (cgc_ssize_t i = 0; i + 1 < chain.length; ++i) {
                Node *link = as_node(chain.links[i].object);
                EXPECT_TRUE(link->next == chain.links[i + 1].object || link->extra == chain.links[i + 1].object);
            }
            EXPECT_EQ(chain.links[chain.length - 1].object, obj(target));
            cgc_diag_chain_release(&chain);
        }
        for (Node *node : held) cgc_decref(obj(node));
        cgc_collect(2);
    }
}

TEST_F(DiagnosticsGraphTest, AChainAMillionLongNeedsNoRecursion) {
    constexpr int kLength = 1'000'000;
    Node *head = new_node(0);
    Node *tail = head;
    for (int i = 1; i < kLength; ++i) {
        Node *next = new_node(i);
        link_next(tail, next);
        cgc_decref(obj(next));
        tail = next;
    }
    cgc_diag_chain chain;
    ASSERT_EQ(cgc_diag_retainer_chain(obj(tail), &chain), 1);
    ASSERT_EQ(chain.length, kLength);
    EXPECT_EQ(chain.links[0].object, obj(head));
    EXPECT_EQ(chain.links[kLength - 1].object, obj(tail));
    cgc_diag_chain_release(&chain);
    cgc_decref(obj(head));
}

}  // namespace
}  // namespace cgc_test
