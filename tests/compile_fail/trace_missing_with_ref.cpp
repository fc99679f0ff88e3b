// A struct that holds a ref but has no trace would never be tracked: its
// cycles would leak silently. Detected for aggregates (public members, no
// constructors).
// expect: T holds a ref
// expect: add `void trace(cyclegc::tracer &t)
#include <cyclegc/cyclegc.hpp>

#include <string>
#include <vector>

struct Node : cyclegc::object {
    std::string name;
    std::vector<cyclegc::ref<Node>> children;
};

int main() { auto n = cyclegc::make<Node>(); }
