// The README's example: two objects that refer to each other outlive their
// last outside reference; one collection frees them. Exits non-zero if it
// does not find exactly those two.
#include <cyclegc/cyclegc.hpp>

#include <cstdio>
#include <string>

struct Node : cyclegc::object {
    std::string name;
    cyclegc::ref<Node> next;
    explicit Node(std::string n) : name(std::move(n)) {}
    ~Node() { std::printf("freed %s\n", name.c_str()); }
    void trace(cyclegc::tracer &t) { t(next); }  // the references this object owns
};

int main() {
    auto a = cyclegc::make<Node>("a");
    a->next = cyclegc::make<Node>("b");
    a->next->next = a;  // a -> b -> a: a cycle
    a = nullptr;        // no outside reference left; the cycle keeps both alive
    auto found = cyclegc::collect();
    std::printf("collected %td objects\n", static_cast<std::ptrdiff_t>(found));
    return found == 2 ? 0 : 1;
}
