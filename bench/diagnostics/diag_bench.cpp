// The diagnostics on a large heap: census, a retainer chain, a .heapsnapshot
// written, dominators (the largest retained sizes), each timed once after
// the heap is built.
//
//   cyclegc-diag-bench [OBJECTS] [SNAPSHOT_PATH]
//
// OBJECTS (default 10,000,000) objects of two references each: groups of
// 100 whose first object a C array holds (a root), each group a ring with
// a reference to the next group's first object, and one chain through the
// last 1% (the retainer chain asked for is to its end, ~100k links long).
// The snapshot goes to SNAPSHOT_PATH (default /tmp/cyclegc-diag-bench.heapsnapshot,
// removed afterwards).
#include <cyclegc/diagnostics.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Node {
    cgc_object ob_base;
    cgc_object *next;
    cgc_object *extra;
};

int node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    auto *node = reinterpret_cast<Node *>(self);
    if (node->next)
        if (int r = visit(node->next, arg)) return r;
    if (node->extra)
        if (int r = visit(node->extra, arg)) return r;
    return 0;
}

int node_clear(cgc_object *self) {
    auto *node = reinterpret_cast<Node *>(self);
    cgc_object *next = node->next, *extra = node->extra;
    node->next = node->extra = nullptr;
    cgc_xdecref(next);
    cgc_xdecref(extra);
    return 0;
}

void node_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    node_clear(self);
    cgc_gc_del(self);
}

cgc_type node_type = [] {
    cgc_type type{};
    type.tp_name = "bench.Node";
    type.tp_basicsize = sizeof(Node);
    type.tp_flags = CGC_TPFLAGS_HAVE_GC;
    type.tp_dealloc = node_dealloc;
    type.tp_traverse = node_traverse;
    type.tp_clear = node_clear;
    return type;
}();

Node *make_node() {
    auto *node = reinterpret_cast<Node *>(cgc_gc_new(&node_type));
    cgc_gc_track(node);
    return node;
}

void link(cgc_object *&field, Node *target) {
    field = &target->ob_base;
    cgc_incref(field);
}

double cpu_now() {
    timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

// The CPU time f() takes (this process's: on a machine shared with other
// work, wall time measures the others too); the wall time goes to *wall.
double cpu_seconds_of(double *wall, auto f) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = cpu_now();
    f();
    double cpu = cpu_now() - cpu_start;
    *wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return cpu;
}

}  // namespace

int main(int argc, char **argv) {
    size_t objects = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
    std::string path = argc > 2 ? argv[2] : "/tmp/cyclegc-diag-bench.heapsnapshot";
    cgc_disable();
    constexpr size_t kGroup = 100;
    size_t chained = objects / 100, grouped = (objects - chained) / kGroup * kGroup;
    std::vector<Node *> roots;
    Node *previous_first = nullptr;
    double wall = 0;
    double build = cpu_seconds_of(&wall, [&] {
        for (size_t g = 0; g < grouped / kGroup; ++g) {
            Node *first = make_node(), *last = first;
            for (size_t i = 1; i < kGroup; ++i) {
                Node *node = make_node();
                link(last->next, node);
                cgc_decref(&node->ob_base);
                last = node;
            }
            link(last->next, first);  // the ring
            if (previous_first) link(previous_first->extra, first);
            previous_first = first;
            roots.push_back(first);
        }
        Node *head = make_node(), *tail = head;
        for (size_t i = 1; i < chained; ++i) {
            Node *node = make_node();
            link(tail->next, node);
            cgc_decref(&node->ob_base);
            tail = node;
        }
        roots.push_back(head);
    });
    Node *chain_end = roots.back();
    while (chain_end->next) chain_end = reinterpret_cast<Node *>(chain_end->next);
    std::printf("heap: %zu objects (%zu in rings of %zu, a chain of %zu), built in %.2f s\n", grouped + chained,
                grouped, kGroup, chained, build);
    std::printf("(CPU seconds of this process; wall seconds in brackets)\n");

    cgc_diag_type_list census;
    double census_s = cpu_seconds_of(&wall, [&] { cgc_diag_census(&census); });
    std::printf("census:          %.3f s [%.3f] (%td objects of %td types)\n", census_s, wall, census.total_objects,
                census.count);
    cgc_diag_census_release(&census);

    cgc_diag_chain chain;
    double chain_s = cpu_seconds_of(&wall, [&] { cgc_diag_retainer_chain(&chain_end->ob_base, &chain); });
    std::printf("retainer chain:  %.3f s [%.3f] (%td links)\n", chain_s, wall, chain.length);
    cgc_diag_chain_release(&chain);

    double snapshot_s = cpu_seconds_of(&wall, [&] { cgc_diag_write_heapsnapshot(path.c_str()); });
    std::printf(".heapsnapshot:   %.3f s [%.3f] (%.2f M objects/s)\n", snapshot_s, wall,
                (grouped + chained) / snapshot_s / 1e6);
    if (argc <= 2) std::remove(path.c_str());

    cgc_diag_retained top[3];
    double dominators_s = cpu_seconds_of(&wall, [&] { cgc_diag_largest_dominators(3, top); });
    std::printf("dominators:      %.3f s [%.3f] (largest retains %td bytes)\n", dominators_s, wall,
                top[0].retained_bytes);

    for (Node *root : roots) cgc_decref(&root->ob_base);
    cgc_collect(2);
    return 0;
}
