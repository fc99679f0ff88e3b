// cyclegc::heap and heap::scope: objects made while a heap is current live
// and are collected there; a scope restores the previous heap; each thread
// may use a heap of its own; destroying a heap collects what it holds.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace cpp_heap_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

struct Node : cyclegc::object {
    static inline std::atomic<int> destroyed{0};
    ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
    ~Node() { ++destroyed; }
};

void make_cycle() {
    auto a = make<Node>();
    auto b = make<Node>();
    a->next = b;
    b->next = a;
}

class CppHeap : public ::testing::Test {
  protected:
    void SetUp() override {
        cyclegc::collect();
        Node::destroyed = 0;
    }
};

TEST_F(CppHeap, ScopeMakesTheHeapCurrentAndRestoresThePrevious) {
    cgc_heap *before = cgc_heap_current();
    cyclegc::heap outer, inner;
    {
        auto using_outer = outer.use();
        EXPECT_EQ(cgc_heap_current(), outer.get());
        {
            auto using_inner = inner.use();
            EXPECT_EQ(cgc_heap_current(), inner.get());
        }
        EXPECT_EQ(cgc_heap_current(), outer.get());
    }
    EXPECT_EQ(cgc_heap_current(), before);
}

TEST_F(CppHeap, CyclesMadeInAHeapAreCollectedThereOnly) {
    cyclegc::heap own;
    {
        auto in_own = own.use();
        make_cycle();
        EXPECT_EQ(cyclegc::get_objects().size(), 2u);
    }
    EXPECT_EQ(cyclegc::collect(), 0);  // the default heap does not see them
    EXPECT_EQ(Node::destroyed, 0);
    auto in_own = own.use();
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Node::destroyed, 2);
}

TEST_F(CppHeap, DestroyingAHeapCollectsItsCycles) {
    {
        cyclegc::heap own;
        auto in_own = own.use();
        make_cycle();
    }
    EXPECT_EQ(Node::destroyed, 2);
}

TEST_F(CppHeap, HooksInstalledOnAHeapApplyThereAndDieWithIt) {
    int own_errors = 0;
    {
        cyclegc::heap own;
        auto in_own = own.use();
        cyclegc::set_error_hook([&own_errors](cgc_error_kind, std::string_view) { ++own_errors; });
        cgc_error_set(CGC_ERR_VALUE, "on the heap");
    }  // (its hook's callable is freed: LeakSanitizer checks)
    EXPECT_EQ(own_errors, 1);
    int default_errors = 0;
    cyclegc::set_error_hook([&default_errors](cgc_error_kind, std::string_view) { ++default_errors; });
    cgc_error_set(CGC_ERR_VALUE, "on the default heap");
    cyclegc::set_error_hook({});
    cgc_error_clear();
    EXPECT_EQ(default_errors, 1);
    EXPECT_EQ(own_errors, 1);
}

TEST_F(CppHeap, EachThreadCollectsItsOwnHeap) {
    constexpr int kThreads = 2, kCycles = 1000;
    std::vector<std::thread> threads;
    std::atomic<int> collected{0};
    for (int i = 0; i < kThreads; ++i)
        threads.emplace_back([&] {
            cyclegc::heap own;
            auto in_own = own.use();
            cyclegc::disable();  // (of this heap: one collection finds them all)
            for (int c = 0; c < kCycles; ++c) make_cycle();
            collected += static_cast<int>(cyclegc::collect());
        });
    for (auto &thread : threads) thread.join();
    EXPECT_EQ(collected, kThreads * kCycles * 2);
    EXPECT_EQ(Node::destroyed, kThreads * kCycles * 2);
}

TEST_F(CppHeap, MovedHeapIsDestroyedOnce) {
    cyclegc::heap first;
    cgc_heap *handle = first.get();
    cyclegc::heap second = std::move(first);
    EXPECT_EQ(first.get(), nullptr);
    EXPECT_EQ(second.get(), handle);
    auto in_second = second.use();
    make_cycle();
    EXPECT_EQ(cyclegc::collect(), 2);
}

}  // namespace
}  // namespace cpp_heap_test
