// `ref<T>(new T)`: the object would not be in collector memory and has no
// reference to take over. Use make<T>().
// expect: cyclegc::ref: no conversion from a raw pointer
// expect: cyclegc::make<T>(args...)
#include <cyclegc/cyclegc.hpp>

struct Node : cyclegc::object {};

int main() { cyclegc::ref<Node> n(new Node); }
