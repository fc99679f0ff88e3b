// Tracing a plain value is refused: it holds no reference.
// expect: cyclegc::tracer: this member cannot be traced
#include <cyclegc/cyclegc.hpp>

struct Node : cyclegc::object {
    int count = 0;
    void trace(cyclegc::tracer &t) { t(count); }
};

int main() { auto n = cyclegc::make<Node>(); }
