// Leak reports at heap shutdown and the leak-check scope (C and C++).
#include "test_types.hpp"

#include <cyclegc/diagnostics.h>
#include <cyclegc/diagnostics.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace cgc_test {
namespace {

class DiagnosticsLeakTest : public HeapFixture {
  protected:
    void capture_log() {
        cgc_set_log_sink([](const char *line, void *context) { static_cast<std::vector<std::string> *>(context)->push_back(line); },
                         &log_);
    }
    std::string log_text() const {
        std::string text;
        for (const std::string &line : log_) text += line + "\n";
        return text;
    }
    void TearDown() override {
        cgc_set_log_sink(nullptr, nullptr);
        HeapFixture::TearDown();
    }
    std::vector<std::string> log_;
};

inline cgc_type widget_type = make_node_type("test.Widget", false, true);
constexpr cgc_ssize_t kNodeBytes = (sizeof(Node) + 15) / 16 * 16;

// holder -> w1, holder -> w2 (two widgets); only holder is held (by the test).
struct Listeners {
    Node *holder = new_node(1);
    Node *w1 = new_node(&widget_type, 2);
    Node *w2 = new_node(&widget_type, 3);
    Listeners() {
        link_next(holder, w1);
        link_extra(holder, obj(w2));
        cgc_decref(obj(w1));
        cgc_decref(obj(w2));
    }
    ~Listeners() { cgc_decref(obj(holder)); }
};

TEST_F(DiagnosticsLeakTest, ShutdownReportGroupsByTypeWithAChainEach) {
    capture_log();
    Listeners listeners;
    make_garbage_pair(7, 8);  // freed by the final collections: not a leak
    EXPECT_EQ(cgc_diag_set_leak_report(1), 0);
    ASSERT_EQ(cgc_finalize(), 0);
    std::string text = log_text();
    EXPECT_CONTAINS(text, "cyclegc leak report: 3 objects (" + std::to_string(3 * kNodeBytes) +
                              " bytes) still alive after the final collections, of 2 types:");
    EXPECT_CONTAINS(text, "  2 x test.Widget (" + std::to_string(2 * kNodeBytes) + " bytes)");
    EXPECT_CONTAINS(text, "  1 x test.Node (");
    char holder[64], widget[64];
    std::snprintf(holder, sizeof holder, "held by <test.Node %p> refcount 1, external 1", static_cast<void *>(listeners.holder));
    std::snprintf(widget, sizeof widget, "-> <test.Widget %p> refcount 1, external 0", static_cast<void *>(listeners.w1));
    EXPECT_CONTAINS(text, holder);
    EXPECT_CONTAINS(text, widget);
    EXPECT_EQ(log_.size(), 6u) << text;  // title, then per group: a line and its chain
    cgc_diag_set_leak_report(0);
}

TEST_F(DiagnosticsLeakTest, NoReportUnlessAsked) {
    capture_log();
    Listeners listeners;
    unsetenv("CYCLEGC_LEAK_REPORT");
    ASSERT_EQ(cgc_finalize(), 0);
    EXPECT_TRUE(log_.empty()) << log_text();
    setenv("CYCLEGC_LEAK_REPORT", "1", 1);
    ASSERT_EQ(cgc_finalize(), 0);
    unsetenv("CYCLEGC_LEAK_REPORT");
    EXPECT_CONTAINS(log_text(), "3 objects");
}

TEST_F(DiagnosticsLeakTest, UnreachableLeftoversSayNoRootReachesThem) {
    capture_log();
    Node *kept = make_garbage_self_cycle(&noclear_node_type, 1);  // no tp_clear: survives collections
    cgc_diag_set_leak_report(1);
    cgc_finalize();
    // (Each final collection reports the cycle that survived its clearing.)
    for (const ReportedError &error : take_errors())
        EXPECT_CONTAINS(error.message, "still alive after their cycle was cleared");
    EXPECT_CONTAINS(log_text(), "1 x test.NoClearNode");
    EXPECT_CONTAINS(log_text(), "no root reaches it");
    cgc_diag_set_leak_report(0);
    link_next(kept, nullptr);  // (frees it)
}

TEST_F(DiagnosticsLeakTest, ScopeCountsObjectsMadeInsideThatOutliveIt) {
    Node *before = new_node(1);  // alive before the scope: never a leak
    cgc_diag_leak_scope *scope = cgc_diag_leak_scope_begin();
    ASSERT_NE(scope, nullptr);
    Node *temporary = new_node(2);
    cgc_decref(obj(temporary));
    make_garbage_pair(3, 4);  // collected when the scope ends
    Node *leaked = new_node(&widget_type, 5);
    link_next(before, leaked);
    cgc_decref(obj(leaked));
    char *report = nullptr;
    EXPECT_EQ(cgc_diag_leak_scope_end(scope, &report), 1);
    ASSERT_NE(report, nullptr);
    EXPECT_CONTAINS(report, "1 objects (" + std::to_string(kNodeBytes) + " bytes) made inside the leak-check scope outlive it");
    EXPECT_CONTAINS(report, "1 x test.Widget");
    EXPECT_CONTAINS(report, "held by <test.Node");
    cgc_diag_text_release(report);
    cgc_decref(obj(before));
}

TEST_F(DiagnosticsLeakTest, ScopeWithoutLeaksGivesNoReport) {
    cgc_diag_leak_scope *scope = cgc_diag_leak_scope_begin();
    make_garbage_pair(1, 2);
    char *report = reinterpret_cast<char *>(1);
    EXPECT_EQ(cgc_diag_leak_scope_end(scope, &report), 0);
    EXPECT_EQ(report, nullptr);
    EXPECT_EQ(cgc_diag_leak_scope_end(nullptr, nullptr), -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_diag_leak_scope_end", "NULL"});
}

struct Widget : cyclegc::object {
    cyclegc::ref<Widget> peer;
    void trace(cyclegc::tracer &t) { t(peer); }
};

TEST_F(DiagnosticsLeakTest, CxxLeakCheckCallsItsHandlerWithTheReport) {
    cyclegc::ref<Widget> kept;
    std::string report;
    {
        cyclegc::diag::leak_check scope([&](const std::string &text) { report = text; });
        kept = cyclegc::make<Widget>();
        auto garbage = cyclegc::make<Widget>();
        garbage->peer = garbage;
    }
    EXPECT_CONTAINS(report, "1 objects");
    EXPECT_CONTAINS(report, "Widget");
    report.clear();
    {
        cyclegc::diag::leak_check scope([&](const std::string &text) { report = text; });
        { auto temporary = cyclegc::make<Widget>(); }
        EXPECT_EQ(scope.finish(), 0);
    }
    EXPECT_EQ(report, "");
    auto chain = cyclegc::diag::retainer_chain(kept);
    ASSERT_EQ(chain.size(), 1u);
    EXPECT_EQ(chain[0].external, 1);
}

}  // namespace
}  // namespace cgc_test
