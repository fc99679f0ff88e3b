// cyclegc example: the observer pattern, which leaks with std::shared_ptr.
//
// A subject keeps its observers alive (it must call them); an observer
// keeps its subject alive (it unsubscribes from it, reads its state). With
// shared_ptr that is a cycle: when the program drops both, neither is
// freed. Here the leak is shown by counting live objects, then the same
// design with cyclegc::ref is freed by one collection. A weak reference
// with a callback reports the subject's death. Returns non-zero if the
// expected frees do not happen.
#include <cyclegc/cyclegc.hpp>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

int g_live = 0;

bool expect(bool ok, const char *what) {
    std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what);
    return ok;
}

// ---- With std::shared_ptr ----------------------------------------------------

namespace shared {

struct Observer;

struct Subject {
    std::vector<std::shared_ptr<Observer>> observers;
    int value = 0;
    Subject() { ++g_live; }
    ~Subject() { --g_live; }
    void set(int v);
};

struct Observer {
    std::string name;
    std::shared_ptr<Subject> subject;  // to read state and unsubscribe
    explicit Observer(std::string n) : name(std::move(n)) { ++g_live; }
    ~Observer() { --g_live; }
    void notify() { std::printf("  %s sees %d\n", name.c_str(), subject->value); }
};

void Subject::set(int v) {
    value = v;
    for (auto &o : observers) o->notify();
}

bool run() {
    std::printf("--- std::shared_ptr ---\n");
    std::weak_ptr<Subject> probe;  // does not keep the subject alive
    {
        auto subject = std::make_shared<Subject>();
        probe = subject;
        for (const char *name : {"logger", "chart"}) {
            auto o = std::make_shared<Observer>(name);
            o->subject = subject;
            subject->observers.push_back(o);
        }
        subject->set(42);
    }
    std::printf("all handles dropped; live objects: %d\n", g_live);
    bool ok = expect(g_live == 3 && !probe.expired(),
                     "shared_ptr leaks the subject and both observers (a cycle)");
    // The only cure with shared_ptr: find the cycle and break it by hand.
    if (auto subject = probe.lock()) subject->observers.clear();
    std::printf("cycle broken by hand; live objects: %d\n", g_live);
    ok &= expect(g_live == 0, "freed once the cycle was broken by hand");
    return ok;
}

}  // namespace shared

// ---- With cyclegc --------------------------------------------------------------

namespace collected {

struct Observer;

struct Subject : cyclegc::object {
    std::vector<cyclegc::ref<Observer>> observers;
    int value = 0;
    Subject() { ++g_live; }
    ~Subject() { --g_live; }
    void trace(cyclegc::tracer &t) { t(observers); }
    void set(int v);
};

struct Observer : cyclegc::object {
    std::string name;
    cyclegc::ref<Subject> subject;
    explicit Observer(std::string n) : name(std::move(n)) { ++g_live; }
    ~Observer() {
        --g_live;
        std::printf("  freed observer %s\n", name.c_str());
    }
    void trace(cyclegc::tracer &t) { t(subject); }
    void notify() { std::printf("  %s sees %d\n", name.c_str(), subject->value); }
};

void Subject::set(int v) {
    value = v;
    for (auto &o : observers) o->notify();
}

bool run() {
    std::printf("--- cyclegc::ref ---\n");
    bool ok = true;
    bool subject_died = false;
    cyclegc::weak<Subject> watch;
    {
        auto subject = cyclegc::make<Subject>();
        for (const char *name : {"logger", "chart"}) {
            auto o = cyclegc::make<Observer>(name);
            o->subject = subject;
            subject->observers.push_back(o);
        }
        // Called when the subject dies (by counting or in a collection).
        watch = cyclegc::weak<Subject>(subject, [&] {
            subject_died = true;
            std::printf("  weak callback: the subject is gone\n");
        });
        subject->set(42);
    }
    std::printf("all handles dropped; live objects: %d\n", g_live);
    ok &= expect(g_live == 3, "the cycle is still alive before a collection");
    ok &= expect(!watch.expired(), "the weak reference still sees the subject");
    auto found = cyclegc::collect();
    std::printf("collect() found %td unreachable objects\n", static_cast<std::ptrdiff_t>(found));
    ok &= expect(found == 3, "3 unreachable objects found");
    ok &= expect(g_live == 0, "subject and observers freed");
    ok &= expect(subject_died && watch.expired(), "the weak callback ran and the weak reference expired");
    return ok;
}

}  // namespace collected

}  // namespace

int main() {
    cyclegc::disable();  // collect only when asked, to show each step
    bool ok = shared::run();
    ok &= collected::run();
    return ok ? 0 : 1;
}
