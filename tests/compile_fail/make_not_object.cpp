// make<T> needs a T derived from cyclegc::object (where the header and the
// count live).
// expect: cyclegc::make<T>: T must derive from cyclegc::object
#include <cyclegc/cyclegc.hpp>

struct NotAnObject {
    int value = 0;
};

int main() { auto n = cyclegc::make<NotAnObject>(); }
