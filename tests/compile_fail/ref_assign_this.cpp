// Assigning `this` to a ref from inside a member: borrow(this) takes the
// reference the ref needs.
// expect: cyclegc::ref: cannot assign a raw pointer (such as `this`)
// expect: ref<T>::borrow(pointer)
#include <cyclegc/cyclegc.hpp>

struct Node : cyclegc::object {
    cyclegc::ref<Node> self;
    void trace(cyclegc::tracer &t) { t(self); }
    void keep_myself() { self = this; }
};

int main() { cyclegc::make<Node>()->keep_myself(); }
