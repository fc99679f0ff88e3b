// Callbacks and hooks that add, remove or replace themselves and each other
// while they run (collection callbacks, the unraisable hook, the error hook,
// the log sink, weak reference callbacks): no callback runs after it was
// removed, and none is freed while it runs (each test reads its captures
// after removing itself: freed, ASan reports it).
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include "test_types.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace cpp_callbacks_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

class CppCallbacks : public cgc_test::CppFixture {
  protected:
    void SetUp() override {
        CppFixture::SetUp();
        cgc_error_clear();
    }
    void TearDown() override {
        cyclegc::set_unraisable_hook({});
        cyclegc::set_error_hook({});
        cyclegc::set_log_sink({});
        cyclegc::set_debug(0);
        CppFixture::TearDown();
        cgc_error_clear();
    }
};

using handle = std::optional<cyclegc::callback_handle>;

// ---- collection callbacks -------------------------------------------------------

TEST_F(CppCallbacks, CallbackRemovedByAnotherOfTheSamePhaseIsNotCalled) {
    handle second;
    int second_calls = 0;
    handle first = cyclegc::add_collection_callback([&](std::string_view phase, const cyclegc::collection_info &) {
        if (phase == "start") second.reset();
    });
    second = cyclegc::add_collection_callback(
        [&second_calls, text = std::string(64, 'b')](std::string_view, const cyclegc::collection_info &) {
            second_calls += static_cast<int>(text.size());
        });
    cyclegc::collect();
    EXPECT_EQ(second_calls, 0);
}

TEST_F(CppCallbacks, CallbackMayRemoveItselfAndKeepUsingItsCaptures) {
    handle self;
    std::vector<std::string> seen;
    self = cyclegc::add_collection_callback(
        [&self, &seen, text = std::string(64, 's')](std::string_view phase, const cyclegc::collection_info &) {
            self.reset();
            seen.push_back(std::string(phase) + ":" + text);
        });
    cyclegc::collect();
    cyclegc::collect();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0], "start:" + std::string(64, 's'));
}

TEST_F(CppCallbacks, CallbackMayReplaceItselfByMoveAssignment) {
    handle slot;
    std::vector<std::string> seen;
    slot = cyclegc::add_collection_callback(
        [&, text = std::string(40, 'o')](std::string_view phase, const cyclegc::collection_info &) {
            if (phase != "start") return;
            slot = cyclegc::add_collection_callback([&](std::string_view p, const cyclegc::collection_info &) {
                seen.push_back("new " + std::string(p));
            });
            seen.push_back("old " + text.substr(0, 3));
        });
    cyclegc::collect();
    cyclegc::collect();
    EXPECT_EQ(seen, (std::vector<std::string>{"old ooo", "new stop", "new start", "new stop"}));
}

// An earlier callback removed while a later one runs must not make the walk
// skip a callback that is still registered.
TEST_F(CppCallbacks, RemovingAnEarlierCallbackSkipsNoOther) {
    handle first = cyclegc::add_collection_callback([](std::string_view, const cyclegc::collection_info &) {});
    std::vector<std::string> seen;
    handle second = cyclegc::add_collection_callback([&](std::string_view phase, const cyclegc::collection_info &) {
        seen.push_back("second " + std::string(phase));
        first.reset();
    });
    handle third = cyclegc::add_collection_callback([&](std::string_view phase, const cyclegc::collection_info &) {
        seen.push_back("third " + std::string(phase));
    });
    cyclegc::collect();
    EXPECT_EQ(seen, (std::vector<std::string>{"second start", "third start", "second stop", "third stop"}));
}

void count_call(const char *, const cgc_collection_info *, void *context) { ++*static_cast<int *>(context); }

void remove_other(const char *, const cgc_collection_info *, void *context) {
    cgc_remove_collection_callback(count_call, context);
}

// The C API walks the live list too: a removed (callback, context) pair is
// neither called nor found again, and the list is usable afterwards.
TEST_F(CppCallbacks, CRemovedCallbackIsNotCalledAndTheListStaysConsistent) {
    int calls = 0;
    ASSERT_EQ(cgc_add_collection_callback(remove_other, &calls), 0);
    ASSERT_EQ(cgc_add_collection_callback(count_call, &calls), 0);
    cyclegc::collect();
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(cgc_remove_collection_callback(count_call, &calls), -1);
    EXPECT_EQ(cgc_remove_collection_callback(remove_other, &calls), 0);
    ASSERT_EQ(cgc_add_collection_callback(count_call, &calls), 0);
    cyclegc::collect();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(cgc_remove_collection_callback(count_call, &calls), 0);
}

TEST_F(CppCallbacks, CallbackAddedByACallbackRunsFromTheNextPhase) {
    std::vector<std::string> seen;
    handle added;
    handle adder = cyclegc::add_collection_callback([&](std::string_view, const cyclegc::collection_info &) {
        if (added) return;
        added = cyclegc::add_collection_callback([&](std::string_view p, const cyclegc::collection_info &) {
            seen.emplace_back(p);
        });
    });
    cyclegc::collect();
    EXPECT_EQ(seen, (std::vector<std::string>{"stop"}));
}

TEST_F(CppCallbacks, HandleRemovesItsCallbackFromTheHeapItWasAddedOn) {
    int calls = 0;
    handle h = cyclegc::add_collection_callback([&](std::string_view, const cyclegc::collection_info &) { ++calls; });
    cgc_heap *other = cgc_heap_new();
    ASSERT_NE(other, nullptr);
    cgc_heap *previous = cgc_heap_current();
    cgc_heap_set_current(other);
    h.reset();  // while another heap is current
    cgc_heap_set_current(previous);
    cgc_heap_delete(other);
    cyclegc::collect();
    EXPECT_EQ(calls, 0);
}

// ---- hooks ------------------------------------------------------------------------

TEST_F(CppCallbacks, UnraisableHookMayRestoreTheDefaultAndUseItsCaptures) {
    std::vector<std::string> got;
    cyclegc::set_unraisable_hook([&got, prefix = std::string(48, 'u')](std::string_view message, cgc_object *) {
        cyclegc::set_unraisable_hook({});
        got.push_back(prefix.substr(0, 2) + std::string(message));
    });
    cgc_report_unraisable("first", nullptr);
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_NONE);  // the hook took it
    cyclegc::set_error_hook([](cgc_error_kind, std::string_view) {});  // (quiet default)
    cgc_report_unraisable("second", nullptr);
    EXPECT_EQ(got, (std::vector<std::string>{"uufirst"}));
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_UNRAISABLE);  // the default: the error hook
}

TEST_F(CppCallbacks, UnraisableHookMayInstallAnotherWhileItRuns) {
    std::vector<std::string> got;
    cyclegc::set_unraisable_hook([&got, name = std::string(32, '1')](std::string_view message, cgc_object *) {
        cyclegc::set_unraisable_hook([&got](std::string_view m, cgc_object *) { got.push_back("2:" + std::string(m)); });
        got.push_back(name.substr(0, 1) + ":" + std::string(message));
    });
    cgc_report_unraisable("a", nullptr);
    cgc_report_unraisable("b", nullptr);
    EXPECT_EQ(got, (std::vector<std::string>{"1:a", "2:b"}));
}

TEST_F(CppCallbacks, ErrorHookMayRestoreTheDefaultAndUseItsCaptures) {
    std::vector<std::string> got;
    cyclegc::set_error_hook([&got, tag = std::string(40, 'e')](cgc_error_kind kind, std::string_view message) {
        cyclegc::set_error_hook([](cgc_error_kind, std::string_view) {});  // replaces this one
        got.push_back(tag.substr(0, 1) + std::to_string(kind) + std::string(message));
    });
    cgc_error_set(CGC_ERR_VALUE, "bad");
    cgc_error_set(CGC_ERR_VALUE, "unseen");
    EXPECT_EQ(got, (std::vector<std::string>{"e4bad"}));
}

struct Node : cyclegc::object {
    ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

TEST_F(CppCallbacks, LogSinkMayRestoreTheDefaultAndUseItsCaptures) {
    std::vector<std::string> got;
    cyclegc::set_log_sink([&got, tag = std::string(40, 'l')](std::string_view line) {
        cyclegc::set_log_sink([](std::string_view) {});
        got.push_back(tag.substr(0, 1) + std::string(line.substr(0, 3)));
    });
    cyclegc::set_debug(CGC_DEBUG_STATS);
    cyclegc::collect();
    cyclegc::set_debug(0);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], "lgc:");
}

// ---- weak reference callbacks --------------------------------------------------------

struct Target : cyclegc::object {};

// The referent is dying: every weak reference queued for it calls back,
// even one whose last `weak` an earlier callback dropped (as CPython), and
// its callable stays alive until it has returned.
TEST_F(CppCallbacks, WeakCallbackMayDropItselfAndAnotherQueuedWeak) {
    std::vector<std::string> seen;
    auto t = make<Target>();
    std::optional<cyclegc::weak<Target>> first, second;
    first.emplace(t, [&, text = std::string(32, 'f')] {
        first.reset();
        second.reset();
        seen.push_back(text.substr(0, 1));
    });
    second.emplace(t, [&, text = std::string(32, 's')] { seen.push_back(text.substr(0, 1)); });
    t = nullptr;
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<std::string>{"f", "s"}));
}

// A weak dropped before its referent dies never calls back, even when the
// dropping happens in another weak's callback for a different referent.
TEST_F(CppCallbacks, WeakDroppedByAnotherCallbackBeforeItsReferentDiesNeverCalls) {
    int late_calls = 0;
    auto a = make<Target>();
    auto b = make<Target>();
    std::optional<cyclegc::weak<Target>> late;
    late.emplace(b, [&late_calls] { ++late_calls; });
    cyclegc::weak<Target> early(a, [&] { late.reset(); });
    a = nullptr;
    b = nullptr;
    EXPECT_EQ(late_calls, 0);
}

// ---- comparisons documented for ref ----------------------------------------------

struct Base : cyclegc::object {
    virtual ~Base() = default;
};
struct Derived : Base {};

TEST_F(CppCallbacks, EveryDocumentedRefComparisonCompiles) {
    ref<Derived> d = make<Derived>();
    ref<Base> b = d;
    ref<Base> null;
    EXPECT_TRUE(d == b);
    EXPECT_FALSE(d != b);
    EXPECT_TRUE((d <=> b) == 0);
    EXPECT_TRUE(null == nullptr);
    EXPECT_TRUE(nullptr == null);
    EXPECT_TRUE(d != nullptr);
    EXPECT_TRUE((null <=> nullptr) == 0);
    EXPECT_TRUE((d <=> nullptr) > 0);
    EXPECT_TRUE((nullptr <=> d) < 0);
    EXPECT_TRUE(nullptr < d);
    EXPECT_TRUE(d > nullptr);
    EXPECT_TRUE(null <= nullptr);
    EXPECT_TRUE(b >= null);
}

}  // namespace
}  // namespace cpp_callbacks_test
