// A const trace could visit but never clear: cycles through the type would
// never be broken. The one trace member must be non-const.
// expect: cyclegc: T::trace must not be const
#include <cyclegc/cyclegc.hpp>

struct Node : cyclegc::object {
    cyclegc::ref<Node> next;
    void trace(cyclegc::tracer &t) const { t(next); }
};

int main() { auto n = cyclegc::make<Node>(); }
