// Diagnostics never change the heap they look at: counts, generations,
// finalized flags, weak references and the collector's counters are the
// same after every one of them.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

#include <cstdio>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace cgc_test {
namespace {

class DiagnosticsUnchangedTest : public HeapFixture {};

using ObjectState = std::tuple<cgc_ssize_t, int, int, cgc_ssize_t, uint64_t>;

ObjectState state_of(cgc_object *op) {
    return {op->ob_refcnt, generation_of(op), cgc_gc_is_finalized(op), cgc_weakref_count(op), gci::meta_of(op).word};
}

TEST_F(DiagnosticsUnchangedTest, EveryDiagnosticLeavesTheHeapAsItWas) {
    // Objects in every generation, finalized or not, with weak references,
    // held from outside, in cycles, and garbage.
    std::vector<Node *> nodes;
    for (int i = 0; i < 6; ++i) nodes.push_back(new_node(i % 2 ? &final_node_type : &node_type, i));
    link_next(nodes[0], nodes[1]), link_next(nodes[1], nodes[0]), link_extra(nodes[1], obj(nodes[2]));
    cgc_collect(0);
    for (int i = 6; i < 9; ++i) nodes.push_back(new_node(i));
    cgc_collect(1);
    nodes.push_back(new_node(&final_node_type, 9));
    cgc_object *weak = cgc_weakref_new(obj(nodes[3]), nullptr, nullptr);
    make_garbage_self_cycle(&final_node_type, 10);
    std::vector<cgc_object *> all;
    for (Node *n : nodes) all.push_back(obj(n));
    auto snapshot = [&] {
        std::vector<ObjectState> states;
        for (cgc_object *op : all) states.push_back(state_of(op));
        for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) states.push_back({cgc_get_count(g), g, 0, tracked_in(g), 0});
        return states;
    };
    auto before = snapshot();
    int finalized_before = counters.finalized, traversed_before = counters.traversed;
    std::string file = ::testing::TempDir() + "cyclegc_unchanged_" + std::to_string(getpid());

    cgc_diag_type_list list;
    cgc_diag_census(&list), cgc_diag_census_release(&list);
    cgc_diag_growth(&list), cgc_diag_census_release(&list);
    cgc_diag_chain chain;
    cgc_diag_retainer_chain(obj(nodes[2]), &chain), cgc_diag_chain_release(&chain);
    cgc_diag_retainer_chain_to_type("test.FinalNode", &chain), cgc_diag_chain_release(&chain);
    cgc_diag_external_refs(obj(nodes[0]));
    cgc_diag_retained_size(obj(nodes[0]));
    cgc_diag_retained_size_of_type("test.Node");
    cgc_diag_retained top[3];
    cgc_diag_largest_dominators(3, top);
    cgc_diag_text_release(cgc_diag_leak_report());
    cgc_diag_check_traverse(nullptr);
    cgc_diag_write_heapsnapshot(file.c_str());
    cgc_diag_write_cgcgraph(file.c_str());
    cgc_diag_write_backrefs_dot(obj(nodes[2]), 3, file.c_str());
    std::remove(file.c_str());

    EXPECT_EQ(snapshot(), before);
    EXPECT_EQ(counters.finalized, finalized_before);
    EXPECT_GT(counters.traversed, traversed_before);  // (they did look)
    EXPECT_TRUE(take_errors().empty());
    cgc_decref(weak);
    for (Node *n : nodes) cgc_decref(obj(n));
}

}  // namespace
}  // namespace cgc_test
