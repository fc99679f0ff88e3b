// The traverse checker. On demand, over the heap's graph: an object that
// more tracked objects visit than its count allows (its type, or a
// referrer's traverse, is wrong), and cycles that only references a
// tp_traverse skips hold together (untraced_cycles.cpp). Switched on,
// during collections: a tp_clear after which tp_traverse still visits a
// reference (the cycle it was asked to break may survive it); after full
// collections: those cycles again.
#include "traverse_check.hpp"

#include "guard.hpp"
#include "heap_graph.hpp"
#include "leak_report.hpp"
#include "state.hpp"
#include "untraced_cycles.hpp"

#include <cyclegc/diagnostics.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <unordered_set>

namespace cyclegc::internal::diag {
namespace {

struct VisitCount {
    int count = 0;
    cgc_object *first = nullptr;
};

int count_visit(cgc_object *child, void *arg) {
    auto *visits = static_cast<VisitCount *>(arg);
    if (child && visits->count++ == 0) visits->first = child;
    return 0;
}

bool check_wanted(Heap &heap) { return heap.diagnostics.state && heap.diagnostics.state->check_traverse; }

// A referrer of node `target` in the graph.
uint32_t a_referrer(const HeapGraph &graph, uint32_t target) {
    for (uint32_t node = 0; node < graph.node_count(); ++node)
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e)
            if (graph.edges[e] == target) return node;
    return kNoNode;
}

std::string describe_overcount(const HeapGraph &graph, uint32_t node) {
    cgc_object *op = graph.objects[node];
    uint32_t referrer = a_referrer(graph, node);
    char line[512];
    std::snprintf(line, sizeof line,
                  "traverse check: type %s: <%s %p> has refcount %td but tracked objects visit it %lld times "
                  "(one is <%s %p>): a tp_traverse visits a reference it does not own, or an incref is missing",
                  type_name_of(op), type_name_of(op), static_cast<void *>(op), cgc_refcount(op),
                  static_cast<long long>(cgc_refcount(op) - graph.external[node]),
                  referrer == kNoNode ? "?" : graph.type_name_at(referrer),
                  referrer == kNoNode ? nullptr : static_cast<void *>(graph.objects[referrer]));
    return line;
}

}  // namespace

void check_after_full_collection(Heap &heap) {
    if (!check_wanted(heap)) return;
    try {
        HeapGraph graph;
        if (!build_graph(heap, graph, "traverse check")) return;
        for (const std::string &line : find_untraced_cycles(graph, heap.diagnostics.state->untraced_reported))
            report(CGC_ERR_TYPE, "%s", line.c_str());
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "traverse check: out of memory");
    }
}

void check_after_clear(Heap &heap, cgc_object *op) {
    if (!check_wanted(heap)) return;
    cgc_traverseproc traverse = op->ob_type->tp_traverse;
    if (!traverse) return;
    VisitCount visits;
    traverse(op, count_visit, &visits);
    if (visits.count == 0) return;
    report(CGC_ERR_TYPE,
           "traverse check: type %s: after tp_clear, tp_traverse of <%s %p> still visits %d reference(s) (the first "
           "to <%s %p>): tp_clear must drop what tp_traverse visits, or the cycle may survive",
           type_name_of(op), type_name_of(op), static_cast<void *>(op), visits.count, type_name_of(visits.first),
           static_cast<void *>(visits.first));
}

}  // namespace cyclegc::internal::diag

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

extern "C" {

int cgc_diag_set_traverse_check(int on) {
    return set_switch(&State::check_traverse, on, "cgc_diag_set_traverse_check");
}

cgc_ssize_t cgc_diag_check_traverse(char **report_out) {
    const char *function = "cgc_diag_check_traverse";
    if (report_out) *report_out = nullptr;
    return guarded(function, [&]() -> cgc_ssize_t {
        HeapGraph graph;
        if (!build_graph(current_heap(), graph, function)) return -1;
        std::vector<std::string> lines;
        std::unordered_set<const cgc_type *> named;
        for (uint32_t node = 0; node < graph.node_count(); ++node) {
            if (graph.external[node] >= 0 || !named.insert(graph.objects[node]->ob_type).second) continue;
            lines.push_back(describe_overcount(graph, node));
        }
        std::unordered_set<const cgc_type *> untraced_named;
        for (std::string &line : find_untraced_cycles(graph, untraced_named)) lines.push_back(std::move(line));
        for (const std::string &line : lines) report(CGC_ERR_TYPE, "%s", line.c_str());
        if (report_out && !lines.empty()) *report_out = join_lines(lines);
        return static_cast<cgc_ssize_t>(lines.size());
    });
}

}  // extern "C"
