// An embedded struct whose `trace` is private cannot be traced through.
// expect: this member's type has a `trace` member the collector cannot call
#include <cyclegc/cyclegc.hpp>

struct Node;
class Edge {
    cyclegc::ref<Node> to;
    void trace(cyclegc::tracer &t) { t(to); }
};
struct Node : cyclegc::object {
    Edge edge;
    void trace(cyclegc::tracer &t) { t(edge); }
};

int main() { auto n = cyclegc::make<Node>(); }
