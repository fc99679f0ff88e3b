// cyclegc::function: a callable whose captured references the collector
// sees. The observer pattern that leaks its cycle with std::function (the
// capture is invisible) is collected.
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace cpp_function_test {
namespace {

using cyclegc::make;
using cyclegc::ref;

class CppFunction : public ::testing::Test {
  protected:
    void SetUp() override {
        cyclegc::collect();
        was_enabled_ = cyclegc::disable();
    }
    void TearDown() override {
        cyclegc::collect();
        if (was_enabled_) cyclegc::enable();
    }
    bool was_enabled_ = true;
};

struct Subject : cyclegc::object {
    static inline int destroyed = 0;
    std::vector<cyclegc::function<void(int)>> observers;
    void trace(cyclegc::tracer &t) { t(observers); }
    void notify(int value) {
        for (auto &observer : observers) observer(value);
    }
    ~Subject() { ++destroyed; }
};

struct Observer : cyclegc::object {
    static inline int destroyed = 0;
    ref<Subject> subject;
    int last = 0;
    void trace(cyclegc::tracer &t) { t(subject); }
    ~Observer() { ++destroyed; }
};

TEST_F(CppFunction, ObserverCycleThroughCaptureIsCollected) {
    Subject::destroyed = Observer::destroyed = 0;
    {
        auto subject = make<Subject>();
        auto observer = make<Observer>();
        observer->subject = subject;
        subject->observers.emplace_back(cyclegc::capture(observer),
                                        [](ref<Observer> &o, int value) { o->last = value; });
        subject->notify(7);
        EXPECT_EQ(observer->last, 7);
    }
    EXPECT_EQ(Observer::destroyed, 0);  // a cycle: subject -> function -> observer -> subject
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Subject::destroyed, 1);
    EXPECT_EQ(Observer::destroyed, 1);
}

// A callable object with its own trace member is traced through it.
struct Forward {
    ref<Observer> to;
    void operator()(int value) const { to->last = value; }
    void trace(cyclegc::tracer &t) { t(to); }
};

TEST_F(CppFunction, CallableWithTraceMemberIsTraced) {
    Subject::destroyed = Observer::destroyed = 0;
    {
        auto subject = make<Subject>();
        auto observer = make<Observer>();
        observer->subject = subject;
        subject->observers.push_back(Forward{observer});
        subject->notify(3);
        EXPECT_EQ(observer->last, 3);
    }
    EXPECT_EQ(cyclegc::collect(), 2);
    EXPECT_EQ(Observer::destroyed, 1);
}

TEST_F(CppFunction, TraverseVisitsCapturesAndClearingEmptiesIt) {
    auto observer = make<Observer>();
    cyclegc::function<int(int)> f(cyclegc::capture(observer, std::string("s")),
                                  [](ref<Observer> &o, std::string &s, int x) { return x + o->last + int(s.size()); });
    EXPECT_EQ(observer.use_count(), 2);
    EXPECT_EQ(f(1), 2);
    int visited = 0;
    auto t = cyclegc::tracer::visitor(
        [](cgc_object *, void *arg) {
            ++*static_cast<int *>(arg);
            return 0;
        },
        &visited);
    f.trace(t);
    EXPECT_EQ(visited, 1);
    auto clearer = cyclegc::tracer::clearer();
    f.trace(clearer);
    EXPECT_FALSE(f);
    EXPECT_EQ(observer.use_count(), 1);
}

TEST_F(CppFunction, CopiesShareNothingAndEmptyCallThrows) {
    auto observer = make<Observer>();
    cyclegc::function<void()> f(cyclegc::capture(observer), [](ref<Observer> &o) { ++o->last; });
    cyclegc::function<void()> g = f;
    EXPECT_EQ(observer.use_count(), 3);
    f();
    g();
    EXPECT_EQ(observer->last, 2);
    f = nullptr;
    EXPECT_EQ(observer.use_count(), 2);
    EXPECT_THROW(f(), std::bad_function_call);
    cyclegc::function<int()> plain = [] { return 5; };  // nothing captured: like std::function
    EXPECT_EQ(plain(), 5);
}

}  // namespace
}  // namespace cpp_function_test
