// Tracing a raw pointer is refused: it owns no reference the collector
// could count or clear. Hold a cyclegc::ref<T> instead.
// expect: cyclegc::tracer: this member cannot be traced
#include <cyclegc/cyclegc.hpp>

struct Node : cyclegc::object {
    Node *next = nullptr;
    void trace(cyclegc::tracer &t) { t(next); }
};

int main() { auto n = cyclegc::make<Node>(); }
