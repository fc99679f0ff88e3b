// Census and growth by type, against counts and sizes the test computes.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

#include <map>
#include <string>

namespace cgc_test {
namespace {

class DiagnosticsCensusTest : public HeapFixture {};

// An object's bytes in the heap: its size rounded up to the 16-byte granule.
constexpr cgc_ssize_t kNodeBytes = (sizeof(Node) + 15) / 16 * 16;

std::map<std::string, cgc_diag_type_stats> by_name(const cgc_diag_type_list &census) {
    std::map<std::string, cgc_diag_type_stats> lines;
    for (cgc_ssize_t i = 0; i < census.count; ++i) lines[census.types[i].type_name] = census.types[i];
    return lines;
}

TEST_F(DiagnosticsCensusTest, CountsAndBytesByTypeMostCommonFirst) {
    std::vector<Node *> held;
    for (int i = 0; i < 3; ++i) held.push_back(new_node(&node_type, i));
    for (int i = 0; i < 5; ++i) held.push_back(new_node(&final_node_type, i));
    held.push_back(new_node(&node_type, 9, false));  // untracked: not counted
    cgc_diag_type_list census;
    ASSERT_EQ(cgc_diag_census(&census), 0);
    ASSERT_EQ(census.count, 2);
    EXPECT_STREQ(census.types[0].type_name, "test.FinalNode");
    EXPECT_EQ(census.types[0].count, 5);
    EXPECT_EQ(census.types[0].bytes, 5 * kNodeBytes);
    EXPECT_EQ(census.types[0].type, &final_node_type);
    EXPECT_STREQ(census.types[1].type_name, "test.Node");
    EXPECT_EQ(census.types[1].count, 3);
    EXPECT_EQ(census.total_objects, 8);
    EXPECT_EQ(census.total_bytes, 8 * kNodeBytes);
    cgc_diag_census_release(&census);
    EXPECT_EQ(census.types, nullptr);
    for (Node *node : held) cgc_decref(obj(node));
}

TEST_F(DiagnosticsCensusTest, GrowthSinceThePreviousCall) {
    std::vector<Node *> held;
    for (int i = 0; i < 4; ++i) held.push_back(new_node(&node_type, i));
    held.push_back(new_node(&final_node_type, 4));
    cgc_diag_type_list growth;
    ASSERT_EQ(cgc_diag_growth(&growth), 0);  // first call: from an empty heap
    auto lines = by_name(growth);
    EXPECT_EQ(lines["test.Node"].count_change, 4);
    EXPECT_EQ(lines["test.Node"].bytes_change, 4 * kNodeBytes);
    EXPECT_EQ(lines["test.FinalNode"].count_change, 1);
    cgc_diag_census_release(&growth);

    ASSERT_EQ(cgc_diag_growth(&growth), 0);  // nothing changed
    EXPECT_EQ(growth.count, 0);
    EXPECT_EQ(growth.total_objects, 5);
    cgc_diag_census_release(&growth);

    held.push_back(new_node(&node_type, 5));
    held.push_back(new_node(&node_type, 6));
    cgc_decref(obj(held[4]));  // the only FinalNode
    held.erase(held.begin() + 4);
    ASSERT_EQ(cgc_diag_growth(&growth), 0);
    ASSERT_EQ(growth.count, 2);
    EXPECT_STREQ(growth.types[0].type_name, "test.Node");  // largest increase first
    EXPECT_EQ(growth.types[0].count, 6);
    EXPECT_EQ(growth.types[0].count_change, 2);
    EXPECT_STREQ(growth.types[1].type_name, "test.FinalNode");
    EXPECT_EQ(growth.types[1].count, 0);
    EXPECT_EQ(growth.types[1].count_change, -1);
    EXPECT_EQ(growth.types[1].bytes_change, -kNodeBytes);
    cgc_diag_census_release(&growth);
    for (Node *node : held) cgc_decref(obj(node));
}

TEST_F(DiagnosticsCensusTest, GrowthBaselinesArePerHeap) {
    Node *here = new_node(1);
    cgc_diag_type_list growth;
    ASSERT_EQ(cgc_diag_growth(&growth), 0);
    cgc_diag_census_release(&growth);
    cgc_heap *other = cgc_heap_new();
    cgc_heap_set_current(other);
    cgc_set_error_hook(&HeapFixture::capture, this);
    ASSERT_EQ(cgc_diag_growth(&growth), 0);  // the other heap is empty: no change
    EXPECT_EQ(growth.count, 0);
    cgc_diag_census_release(&growth);
    cgc_heap_set_current(heap_);
    cgc_heap_delete(other);
    cgc_decref(obj(here));
}

TEST_F(DiagnosticsCensusTest, ShowWritesOneLinePerTypeToTheLogSink) {
    std::vector<std::string> lines;
    cgc_set_log_sink([](const char *line, void *context) { static_cast<std::vector<std::string> *>(context)->push_back(line); },
                     &lines);
    Node *a = new_node(1), *b = new_node(&final_node_type, 2), *c = new_node(3);
    cgc_diag_show_most_common_types(1);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_CONTAINS(lines[0], "test.Node");
    EXPECT_CONTAINS(lines[0], " 2 ");
    lines.clear();
    cgc_diag_show_growth(0);
    EXPECT_EQ(lines.size(), 2u);
    EXPECT_CONTAINS(lines[0], "+2");
    for (Node *node : {a, b, c}) cgc_decref(obj(node));
    cgc_set_log_sink(nullptr, nullptr);
}

TEST_F(DiagnosticsCensusTest, NullOutputIsMisuse) {
    EXPECT_EQ(cgc_diag_census(nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_census", "NULL"});
    EXPECT_EQ(cgc_diag_growth(nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_growth", "NULL"});
}

}  // namespace
}  // namespace cgc_test
