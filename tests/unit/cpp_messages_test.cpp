// Errors about C++ objects speak the C++ API (ref, trace(), finalize()), not
// the C one (Py_DECREF, tp_traverse); errors about C objects are unchanged.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cpp_messages_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

struct NamesTwice : cyclegc::object {
    ref<NamesTwice> next;
    void trace(cyclegc::tracer &t) { t(next, next); }
};

class CppMessages : public ::testing::Test {
  protected:
    void SetUp() override {
        cyclegc::collect();
        was_enabled_ = cyclegc::disable();
        cyclegc::set_error_hook([this](cgc_error_kind kind, std::string_view message) {
            if (kind == CGC_ERR_CORRUPTION) errors.emplace_back(message);
        });
    }
    void TearDown() override {
        cyclegc::set_error_hook({});
        if (was_enabled_) cyclegc::enable();
        cgc_error_clear();
    }
    std::vector<std::string> errors;
    bool was_enabled_ = true;
};

TEST_F(CppMessages, TraceNamingAReferenceTwiceIsReportedInCppTerms) {
    auto owner = make<NamesTwice>();
    owner->next = make<NamesTwice>();
    cyclegc::collect(0);
    ASSERT_FALSE(errors.empty());
    EXPECT_NE(errors[0].find("a trace() names a reference it does not own, or names one twice"), std::string::npos)
        << errors[0];
    EXPECT_EQ(errors[0].find("tp_traverse"), std::string::npos) << errors[0];
    EXPECT_EQ(errors[0].find("Py_INCREF"), std::string::npos) << errors[0];
}

// A C object's count driven below zero keeps the C API's words.
TEST_F(CppMessages, ErrorsAboutCObjectsKeepTheCWords) {
    cgc_type type{};
    type.tp_name = "CThing";
    type.tp_basicsize = sizeof(cgc_object);
    type.tp_flags = CGC_TPFLAGS_DEFAULT;
    ASSERT_EQ(cgc_type_ready(&type), 0);
    cgc_object thing{-1, &type};  // (a count already below zero: never freed)
    cgc_decref(&thing);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find("Py_DECREF: the reference count"), std::string::npos) << errors[0];
    EXPECT_NE(errors[0].find("CThing"), std::string::npos) << errors[0];
}

}  // namespace
}  // namespace cpp_messages_test
