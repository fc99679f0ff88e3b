// cyclegc example: a tree whose nodes point to their parent.
//
// Every child holds a strong reference to its parent and every parent to
// its children: each edge is a cycle. With cyclegc the back-pointer can
// simply be a ref; dropping the root frees nothing by counting, and one
// collection frees the whole tree: finalize() runs first on every node
// (neighbours intact), then references are cleared, then the destructors
// run (seeing their references cleared). A subtree that is still in use
// survives the collection. Returns non-zero if the expected frees do not
// happen.
#include <cyclegc/cyclegc.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

int g_live = 0;
int g_finalized = 0;

struct Node : cyclegc::object {
    std::string name;
    cyclegc::ref<Node> parent;  // a back-pointer: a strong reference is fine
    std::vector<cyclegc::ref<Node>> children;

    explicit Node(std::string n) : name(std::move(n)) { ++g_live; }
    ~Node() {
        --g_live;
        std::printf("  ~Node %-8s parent %s, %zu children\n", name.c_str(), parent ? "set" : "cleared",
                    children.size());
    }
    void trace(cyclegc::tracer &t) { t(parent, children); }
    // Runs before anything is cleared: the tree is still whole here.
    void finalize() {
        ++g_finalized;
        std::printf("  finalize %-8s (parent %s)\n", name.c_str(), parent ? parent->name.c_str() : "-");
    }

    cyclegc::ref<Node> add(std::string child_name) {
        auto child = cyclegc::make<Node>(std::move(child_name));
        child->parent = cyclegc::ref<Node>::borrow(this);
        children.push_back(child);
        return child;
    }
    std::string path() const { return parent ? parent->path() + "/" + name : name; }
};

void print(const Node &node, int depth = 0) {
    std::printf("  %*s%s\n", depth * 2, "", node.name.c_str());
    for (auto &child : node.children) print(*child, depth + 1);
}

bool expect(bool ok, const char *what) {
    std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what);
    return ok;
}

}  // namespace

int main() {
    cyclegc::disable();  // collect only when asked, to show each step
    bool ok = true;

    auto root = cyclegc::make<Node>("root");
    auto usr = root->add("usr");
    usr->add("bin");
    auto lib = usr->add("lib");
    lib->add("libc");
    root->add("etc")->add("hosts");
    cyclegc::ref<Node> kept = lib->children[0];  // a node the program keeps using
    usr = lib = nullptr;
    std::printf("tree (%d nodes):\n", g_live);
    print(*root);
    std::printf("kept: %s\n", kept->path().c_str());

    std::printf("dropping the root\n");
    root = nullptr;
    ok &= expect(g_live == 7, "nothing freed by counting: every edge is a cycle");

    std::printf("collecting while `kept` is still held\n");
    auto found = cyclegc::collect();
    std::printf("collect() found %td unreachable objects\n", static_cast<std::ptrdiff_t>(found));
    ok &= expect(found == 0, "the whole tree is reachable through kept's parent chain");
    ok &= expect(g_live == 7 && kept->path() == "root/usr/lib/libc", "kept still sees its ancestors");

    std::printf("dropping the last outside reference and collecting\n");
    kept = nullptr;
    found = cyclegc::collect();
    std::printf("collect() found %td unreachable objects\n", static_cast<std::ptrdiff_t>(found));
    ok &= expect(found == 7, "7 unreachable nodes found");
    ok &= expect(g_finalized == 7, "every node finalized once, before any was cleared");
    ok &= expect(g_live == 0, "every node freed");
    return ok ? 0 : 1;
}
