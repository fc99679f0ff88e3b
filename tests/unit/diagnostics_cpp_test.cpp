// The C++ spelling of the diagnostics (<cyclegc/diagnostics.hpp>).
#include "test_types.hpp"

#include <cyclegc/diagnostics.hpp>

#include <stdexcept>

namespace cgc_test {
namespace {

class DiagnosticsCppTest : public HeapFixture {};

struct Leaf : cyclegc::object {
    void trace(cyclegc::tracer &) {}
};
struct Holder : cyclegc::object {
    std::vector<cyclegc::ref<Leaf>> leaves;
    void trace(cyclegc::tracer &t) { t(leaves); }
};

TEST_F(DiagnosticsCppTest, CensusGrowthAndChains) {
    auto holder = cyclegc::make<Holder>();
    for (int i = 0; i < 3; ++i) holder->leaves.push_back(cyclegc::make<Leaf>());
    auto census = cyclegc::diag::census();
    ASSERT_EQ(census.size(), 2u);
    EXPECT_EQ(census[0].type, cyclegc::type_of<Leaf>());
    EXPECT_EQ(census[0].count, 3);
    auto growth = cyclegc::diag::growth();
    ASSERT_EQ(growth.size(), 2u);
    EXPECT_EQ(growth[0].count_change, 3);
    EXPECT_TRUE(cyclegc::diag::growth().empty());

    auto chain = cyclegc::diag::retainer_chain(holder->leaves[2]);
    ASSERT_EQ(chain.size(), 2u);
    EXPECT_EQ(chain[0].object, holder->as_cobject());
    EXPECT_EQ(chain[0].external, 1);
    EXPECT_EQ(chain[1].type_name, cyclegc::type_of<Leaf>()->tp_name);
    EXPECT_EQ(cyclegc::diag::retainer_chain_to_type(cyclegc::type_of<Leaf>()->tp_name).size(), 2u);
    EXPECT_EQ(cyclegc::diag::external_refs(holder), 1);
    EXPECT_EQ(cyclegc::diag::external_refs(holder->leaves[0]), 0);
    EXPECT_NE(cyclegc::diag::leak_report().find("4 objects"), std::string::npos);
}

TEST_F(DiagnosticsCppTest, MisuseThrowsWithTheLibrarysMessage) {
    Node *untracked = new_node(&node_type, 1, false);
    EXPECT_THROW(cyclegc::diag::retainer_chain(obj(untracked)), std::runtime_error);
    EXPECT_THROW(cyclegc::diag::external_refs(obj(untracked)), std::runtime_error);
    EXPECT_EQ(take_errors().size(), 2u);
    cgc_decref(obj(untracked));
}

}  // namespace
}  // namespace cgc_test
