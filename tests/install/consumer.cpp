// A C++ program that uses cyclegc the way a user would: only
// <cyclegc/cyclegc.hpp>, a type with a `trace`, a reference cycle, a
// collection. Built by projects that set no language standard: the C++20
// the header needs comes from cyclegc's targets (cyclegc::cxx) or, with
// pkg-config, from the user's -std=c++20. Exit status 0 when everything checks.
#include <cyclegc/cyclegc.hpp>

#include <cstdio>
#include <cstring>

namespace {

int g_destroyed = 0;

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    ~Node() { ++g_destroyed; }
    void trace(cyclegc::tracer &t) { t(next); }
};

}  // namespace

int main() {
    int failures = 0;
    auto check = [&](bool ok, const char *what) {
        if (!ok) {
            std::fprintf(stderr, "consumer (C++): check failed: %s\n", what);
            ++failures;
        }
    };
    {
        auto a = cyclegc::make<Node>();
        auto b = cyclegc::make<Node>();
        a->next = b;  // a <-> b
        b->next = a;
    }
    check(g_destroyed == 0, "reference counting alone does not free a cycle");
    cyclegc::collect();
    check(g_destroyed == 2, "a collection frees the cycle");
    // The library linked is the one whose headers were compiled against.
    check(std::strcmp(cgc_version(), CGC_VERSION) == 0, "cgc_version() == CGC_VERSION");
    if (failures) return 1;
    std::printf("consumer (C++): ok (cyclegc %s, C++ %ld)\n", cgc_version(), static_cast<long>(__cplusplus));
    return 0;
}
