// std::shared_ptr is not a collector reference.
// expect: cyclegc::tracer: this member cannot be traced
#include <cyclegc/cyclegc.hpp>

#include <memory>

struct Node : cyclegc::object {
    std::shared_ptr<Node> next;
    void trace(cyclegc::tracer &t) { t(next); }
};

int main() { auto n = cyclegc::make<Node>(); }
