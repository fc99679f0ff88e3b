// A `trace` that is private (the default in a class) cannot be called by the
// collector: the type would never be tracked and its cycles would leak
// without a word. Public, or `friend class cyclegc::access;`.
// expect: T has a `trace` member the collector cannot call
// expect: friend class cyclegc::access;
#include <cyclegc/cyclegc.hpp>

class Node : public cyclegc::object {
  public:
    cyclegc::ref<Node> next;

  private:
    void trace(cyclegc::tracer &t) { t(next); }
};

int main() { auto n = cyclegc::make<Node>(); }
