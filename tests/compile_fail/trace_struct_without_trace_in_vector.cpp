// A struct that holds a ref but has no trace, in a traced container: the
// tracer cannot see into it. Give the struct a trace member.
// expect: a struct that holds refs needs one
#include <cyclegc/cyclegc.hpp>

#include <vector>

struct Node;
struct Edge {
    cyclegc::ref<Node> to;
    double weight = 0;
};
struct Node : cyclegc::object {
    std::vector<Edge> edges;
    void trace(cyclegc::tracer &t) { t(edges); }
};

int main() { cyclegc::make<Node>(); }
