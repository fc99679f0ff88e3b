// Retained sizes against a brute force the test computes from its own
// adjacency lists: an object's retained size is the bytes reachable from
// the roots minus those reachable once the object is taken out.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

namespace cgc_test {
namespace {

class DiagnosticsDominatorsTest : public HeapFixture {};

constexpr cgc_ssize_t kNodeBytes = (sizeof(Node) + 15) / 16 * 16;

// A graph the test built, with its own copy of the edges.
struct TestGraph {
    std::vector<Node *> nodes;
    std::vector<std::vector<int>> out;
    std::set<int> roots;

    // Nodes reachable from the roots without passing through `removed`.
    cgc_ssize_t reachable_without(const std::vector<bool> &removed) const {
        std::vector<bool> seen(nodes.size());
        std::vector<int> stack;
        for (int r : roots)
            if (!removed[r]) seen[r] = true, stack.push_back(r);
        cgc_ssize_t count = 0;
        while (!stack.empty()) {
            int n = stack.back();
            stack.pop_back();
            ++count;
            for (int t : out[n])
                if (!seen[t] && !removed[t]) seen[t] = true, stack.push_back(t);
        }
        return count * kNodeBytes;
    }
    // Whether node i is reachable (alive: the others may have been freed).
    bool reachable(int i) const {
        std::vector<bool> removed(nodes.size());
        removed[i] = true;
        std::vector<bool> none(nodes.size());
        return reachable_without(removed) != reachable_without(none) || roots.count(i);
    }
    cgc_ssize_t brute_force_retained(int node) const {
        std::vector<bool> removed(nodes.size());
        cgc_ssize_t all = reachable_without(removed);
        removed[node] = true;
        return all - reachable_without(removed);
    }
};

// n nodes with two random references each (or none), the first `roots` held.
TestGraph random_graph(int n, int roots, unsigned seed, cgc_type *odd_type = &node_type) {
    std::mt19937 rng(seed);
    TestGraph g;
    g.out.resize(n);
    for (int i = 0; i < n; ++i) g.nodes.push_back(new_node(i % 2 ? odd_type : &node_type, i));
    for (int i = 0; i < n; ++i) {
        int a = static_cast<int>(rng() % (n + 4)), b = static_cast<int>(rng() % (n + 4));  // >= n: no reference
        if (a < n) link_next(g.nodes[i], g.nodes[a]), g.out[i].push_back(a);
        if (b < n) link_extra(g.nodes[i], obj(g.nodes[b])), g.out[i].push_back(b);
    }
    for (int i = 0; i < n; ++i)
        if (i < roots)
            g.roots.insert(i);
        else
            cgc_decref(obj(g.nodes[i]));  // (garbage ones stay: automatic collection is off)
    return g;
}

void release(TestGraph &g) {
    for (int r : g.roots) cgc_decref(obj(g.nodes[r]));
}

TEST_F(DiagnosticsDominatorsTest, RetainedSizesMatchTheBruteForce) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
        TestGraph g = random_graph(150, 6, seed);
        for (int i = 0; i < 150; ++i) {
            if (!g.reachable(i)) continue;  // (perhaps freed)
            ASSERT_EQ(cgc_diag_retained_size(obj(g.nodes[i])), g.brute_force_retained(i)) << "seed " << seed << " node " << i;
        }
        release(g);
    }
}

TEST_F(DiagnosticsDominatorsTest, LargestDominatorsComeFirst) {
    TestGraph g = random_graph(120, 3, 7);
    std::vector<cgc_ssize_t> expected;
    for (int i = 0; i < 120; ++i) expected.push_back(g.brute_force_retained(i));
    std::sort(expected.rbegin(), expected.rend());
    cgc_diag_retained top[5];
    ASSERT_EQ(cgc_diag_largest_dominators(5, top), 5);
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(top[i].retained_bytes, expected[i]) << i;
        EXPECT_EQ(top[i].self_bytes, kNodeBytes);
        EXPECT_STREQ(top[i].type_name, "test.Node");
    }
    release(g);
}

TEST_F(DiagnosticsDominatorsTest, RetainedSizeOfAType) {
    static cgc_type odd_type = make_node_type("test.Odd", false, true);
    TestGraph g = random_graph(100, 5, 11, &odd_type);
    std::vector<bool> odd(100);
    for (int i = 1; i < 100; i += 2) odd[i] = true;
    std::vector<bool> none(100);
    cgc_ssize_t expected = g.reachable_without(none) - g.reachable_without(odd);
    EXPECT_EQ(cgc_diag_retained_size_of_type("test.Odd"), expected);
    EXPECT_EQ(cgc_diag_retained_size_of_type("test.Absent"), 0);
    release(g);
}

TEST_F(DiagnosticsDominatorsTest, AChainDominatesItsTail) {
    constexpr int kLength = 1'000'000;
    Node *head = new_node(0), *tail = head, *middle = nullptr;
    for (int i = 1; i < kLength; ++i) {
        Node *next = new_node(i);
        link_next(tail, next);
        cgc_decref(obj(next));
        tail = next;
        if (i == kLength / 2) middle = next;
    }
    EXPECT_EQ(cgc_diag_retained_size(obj(middle)), (kLength - kLength / 2) * kNodeBytes);
    cgc_diag_retained top[1];
    ASSERT_EQ(cgc_diag_largest_dominators(1, top), 1);
    EXPECT_EQ(top[0].object, obj(head));
    EXPECT_EQ(top[0].retained_bytes, kLength * kNodeBytes);
    cgc_decref(obj(head));
}

TEST_F(DiagnosticsDominatorsTest, GarbageRetainsNothing) {
    Node *cycle = make_garbage_self_cycle();
    EXPECT_EQ(cgc_diag_retained_size(obj(cycle)), 0);
    Node *untracked = new_node(&node_type, 1, false);
    EXPECT_EQ(cgc_diag_retained_size(obj(untracked)), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_retained_size", "test.Node"});
    cgc_decref(obj(untracked));
}

}  // namespace
}  // namespace cgc_test
