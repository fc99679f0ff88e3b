// A container of plain values is not traceable either.
// expect: cyclegc::tracer: this member cannot be traced
#include <cyclegc/cyclegc.hpp>

#include <vector>

struct Node : cyclegc::object {
    std::vector<int> numbers;
    void trace(cyclegc::tracer &t) { t(numbers); }
};

int main() { auto n = cyclegc::make<Node>(); }
