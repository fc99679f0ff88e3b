// The graph writers: cgcgraph lines checked exactly, the .heapsnapshot's
// structure (counts of fields, nodes, edges, strings), the DOT of referrers.
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>

#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace cgc_test {
namespace {

class DiagnosticsWritersTest : public HeapFixture {
  protected:
    std::string path(const char *suffix) {
        return ::testing::TempDir() + "cyclegc_diag_" + std::to_string(getpid()) + suffix;
    }
    static std::string read(const std::string &file) {
        std::ifstream in(file);
        std::stringstream text;
        text << in.rdbuf();
        std::remove(file.c_str());
        return text.str();
    }
};

constexpr int kNodeBytes = (sizeof(Node) + 15) / 16 * 16;

// root (held) <-> a, a -> b; b also held by the test: two roots.
struct Triangle {
    Node *root = new_node(1), *a = new_node(2), *b = new_node(3);
    Triangle() {
        link_next(root, a), link_next(a, root), link_extra(a, obj(b));
        cgc_decref(obj(a));
    }
    ~Triangle() { cgc_decref(obj(root)), cgc_decref(obj(b)); }
};

TEST_F(DiagnosticsWritersTest, CgcgraphLinesAreTheGraph) {
    Triangle t;  // allocated in order: nodes 0, 1, 2
    std::string file = path(".cgcgraph");
    ASSERT_EQ(cgc_diag_write_cgcgraph(file.c_str()), 0);
    std::string n = std::to_string(kNodeBytes);
    std::string expected = "cgcgraph 1\nnodes 3 edges 3\n# written by cgc_diag_write_cgcgraph\n"
                           "test.Node " + n + " 1 1 1\n"
                           "test.Node " + n + " 0 2 0 2\n"
                           "test.Node " + n + " 1 0\n";
    EXPECT_EQ(read(file), expected);
}

// The integers of the JSON array after `"key":[`.
std::vector<long long> json_array(const std::string &text, const std::string &key) {
    std::vector<long long> values;
    size_t at = text.find("\"" + key + "\":[");
    if (at == std::string::npos) return values;
    std::istringstream in(text.substr(at + key.size() + 4, text.find(']', at) - at - key.size() - 4));
    std::string item;
    while (std::getline(in, item, ',')) values.push_back(std::stoll(item));
    return values;
}

TEST_F(DiagnosticsWritersTest, HeapsnapshotHasARootHoldingTheRoots) {
    Triangle t;
    std::string file = path(".heapsnapshot");
    ASSERT_EQ(cgc_diag_write_heapsnapshot(file.c_str()), 0);
    std::string text = read(file);
    EXPECT_CONTAINS(text, "\"node_count\":4,\"edge_count\":5");
    std::vector<long long> nodes = json_array(text, "nodes"), edges = json_array(text, "edges");
    ASSERT_EQ(nodes.size(), 4u * 7);
    ASSERT_EQ(edges.size(), 5u * 3);
    EXPECT_EQ(nodes[0], 9);  // synthetic
    EXPECT_EQ(nodes[4], 2);  // the root's edges: one per root
    for (int i = 1; i < 4; ++i) {
        EXPECT_EQ(nodes[i * 7], 3) << i;  // "object"
        EXPECT_EQ(nodes[i * 7 + 1], 1) << i;  // strings[1]
        EXPECT_EQ(nodes[i * 7 + 3], kNodeBytes) << i;
        EXPECT_EQ(nodes[i * 7 + 2] % 2, 1) << i;  // odd ids
    }
    EXPECT_EQ(nodes[1 * 7 + 4] + nodes[2 * 7 + 4] + nodes[3 * 7 + 4], 3);
    // The root's edges go to the nodes of root and b (node offsets 7 and 21).
    EXPECT_EQ(edges[2], 7);
    EXPECT_EQ(edges[5], 21);
    EXPECT_CONTAINS(text, "\"strings\":[\"(cyclegc roots)\",\n\"test.Node\"]");
}

TEST_F(DiagnosticsWritersTest, BackrefsDotDrawsReferrersToADepth) {
    Triangle t;
    std::string file = path(".dot");
    ASSERT_EQ(cgc_diag_write_backrefs_dot(obj(t.b), 1, file.c_str()), 0);
    std::string text = read(file);
    EXPECT_CONTAINS(text, "digraph backrefs {");
    EXPECT_CONTAINS(text, "n1 -> n2;");
    EXPECT_EQ(text.find("n0 -> n1;"), std::string::npos) << "depth 1 stops at b's referrers\n" << text;
    EXPECT_CONTAINS(text, "fillcolor=red");
    ASSERT_EQ(cgc_diag_write_backrefs_dot(obj(t.b), 2, file.c_str()), 0);
    EXPECT_CONTAINS(read(file), "n0 -> n1;");
}

TEST_F(DiagnosticsWritersTest, ErrorsNameTheFunctionAndTheFile) {
    EXPECT_EQ(cgc_diag_write_heapsnapshot("/nonexistent-dir/x.heapsnapshot"), -1);
    expect_one_error(CGC_ERR_VALUE, {"cgc_diag_write_heapsnapshot", "/nonexistent-dir/x.heapsnapshot"});
    EXPECT_EQ(cgc_diag_write_cgcgraph(nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_write_cgcgraph", "NULL"});
    Node *untracked = new_node(&node_type, 1, false);
    std::string file = path(".dot");
    EXPECT_EQ(cgc_diag_write_backrefs_dot(obj(untracked), 2, file.c_str()), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_write_backrefs_dot", "not a tracked object"});
    std::remove(file.c_str());
    cgc_decref(obj(untracked));
}

}  // namespace
}  // namespace cgc_test
