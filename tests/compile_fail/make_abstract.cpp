// An abstract type cannot be made.
// expect: cyclegc::make<T>: T is abstract
#include <cyclegc/cyclegc.hpp>

struct Shape : cyclegc::object {
    virtual ~Shape() = default;
    virtual int sides() const = 0;
};

int main() { auto n = cyclegc::make<Shape>(); }
