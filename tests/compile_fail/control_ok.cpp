// Control: the legal counterparts of the other snippets compile with the
// same command (so a failure there is the misuse, not the command).
#include <cyclegc/cyclegc.hpp>

#include <map>
#include <string>
#include <vector>

struct Node : cyclegc::object {
    int count = 0;          // a plain value, left out of trace
    Node *raw = nullptr;    // a raw pointer, left out of trace
    std::vector<int> numbers;
  public:
    cyclegc::ref<Node> next;
    std::vector<cyclegc::ref<Node>> children;
    std::map<int, cyclegc::ref<Node>> by_id;
    void trace(cyclegc::tracer &t) { t(next, children, by_id); }
};

int main() {
    auto n = cyclegc::make<Node>();
    n->next = n;
    return cyclegc::collect() < 0;
}
