// Control: private `trace` and `finalize` members are fine once the type
// befriends cyclegc::access (here and in an embedded struct).
#include <cyclegc/cyclegc.hpp>

class Node;
class Edge {
    friend class cyclegc::access;
    cyclegc::ref<Node> to;
    void trace(cyclegc::tracer &t) { t(to); }

  public:
    void point_to(cyclegc::ref<Node> n) { to = std::move(n); }
};
class Node : public cyclegc::object {
    friend class cyclegc::access;
    Edge edge;
    void trace(cyclegc::tracer &t) { t(edge); }
    void finalize() {}

  public:
    void link(cyclegc::ref<Node> n) { edge.point_to(std::move(n)); }
};

int main() {
    auto n = cyclegc::make<Node>();
    n->link(n);
    return cyclegc::is_tracked(n) ? 0 : 1;
}
