// The collector's memory is 16-byte aligned at most.
// expect: cyclegc::make<T>: T needs more than 16-byte alignment
#include <cyclegc/cyclegc.hpp>

struct alignas(64) Wide : cyclegc::object {
    char bytes[64];
};

int main() { auto n = cyclegc::make<Wide>(); }
