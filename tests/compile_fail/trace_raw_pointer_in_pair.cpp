// A raw pointer beside a ref (in a pair, tuple or variant) is refused too:
// the pair would hide an untraced reference.
// expect: cyclegc::tracer: this member cannot be traced
#include <cyclegc/cyclegc.hpp>

#include <map>

struct Node : cyclegc::object {
    std::map<int, std::pair<cyclegc::ref<Node>, Node *>> edges;
    void trace(cyclegc::tracer &t) { t(edges); }
};

int main() { auto n = cyclegc::make<Node>(); }
