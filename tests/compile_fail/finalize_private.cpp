// A private `finalize` would never run. Public, or befriend cyclegc::access.
// expect: T has a `finalize` member the collector cannot call
#include <cyclegc/cyclegc.hpp>

class Node : public cyclegc::object {
    void finalize() {}
};

int main() { auto n = cyclegc::make<Node>(); }
