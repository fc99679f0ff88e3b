// The C++ API's hot loops for callgrind (bench/instructions/count.sh), as
// bench/micro/cpp_bench.cpp runs them, without Google Benchmark around them:
//   cpp_driver make N [shared]   N cyclegc::make<Node> + release
//   cpp_driver copy N [shared]   N copies of a ref, each dropped
// `shared`: on a shared heap, from its one attached thread (the owner).
#include <cyclegc/cyclegc.hpp>

#include <cstdlib>
#include <cstring>

namespace {

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

// Keeps the compiler from dropping what the loops make (as DoNotOptimize).
void keep(const void *p) { asm volatile("" : : "r"(p) : "memory"); }

// (Out of main, which compilers optimise for size.)
[[gnu::noinline]] void make_loop(long n) {
    for (long i = 0; i < n; ++i) keep(cyclegc::make<Node>().get());
}

[[gnu::noinline]] void copy_loop(long n) {
    cyclegc::ref<Node> r = cyclegc::make<Node>();
    for (long i = 0; i < n; ++i) {
        cyclegc::ref<Node> copy = r;
        keep(&copy);
    }
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    long n = std::atol(argv[2]);
    bool shared = argc > 3 && std::strcmp(argv[3], "shared") == 0;
    cgc_heap_set_current(shared ? cgc_heap_new_shared() : cgc_heap_new());
    if (std::strcmp(argv[1], "make") == 0) {
        make_loop(n);
    } else if (std::strcmp(argv[1], "copy") == 0) {
        copy_loop(n);
    } else {
        return 2;
    }
    return 0;
}
