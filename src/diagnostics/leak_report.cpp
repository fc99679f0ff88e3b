// The leak report at heap shutdown and on demand: what is still alive,
// grouped by type, each group with the shortest chain that holds one of
// its objects.
#include "leak_report.hpp"

#include "guard.hpp"

#include <cyclegc/diagnostics.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

namespace cyclegc::internal::diag {
namespace {

struct LeakGroup {
    cgc_type *type;
    size_t count = 0;
    uint64_t bytes = 0;
    uint32_t example = kNoNode;  // the first object of the group a root reaches (or any)
    bool reached = false;
};

std::string format(const char *pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *pattern, ...) {
    char buffer[512];
    va_list args;
    va_start(args, pattern);
    std::vsnprintf(buffer, sizeof buffer, pattern, args);
    va_end(args);
    return buffer;
}

std::string describe_object(const HeapGraph &graph, uint32_t node) {
    cgc_object *op = graph.objects[node];
    return format("<%s %p> refcount %td, external %lld", type_name_of(op), static_cast<void *>(op), cgc_refcount(op),
                  static_cast<long long>(graph.external[node]));
}

// The groups of leaked nodes by type, in order of first appearance; each
// group's example is the first of its objects in breadth-first order.
std::vector<LeakGroup> group_leaks(const HeapGraph &graph, const std::vector<char> &leaked,
                                   const std::vector<uint32_t> &order) {
    std::vector<LeakGroup> groups;
    std::unordered_map<cgc_type *, size_t> index;
    auto group_of = [&](uint32_t node) -> LeakGroup & {
        cgc_type *type = graph.objects[node]->ob_type;
        auto [it, added] = index.emplace(type, groups.size());
        if (added) groups.push_back(LeakGroup{type});
        return groups[it->second];
    };
    for (uint32_t node : order)
        if (leaked[node]) {
            LeakGroup &group = group_of(node);
            if (!group.reached) group.example = node, group.reached = true;
        }
    for (uint32_t node = 0; node < graph.node_count(); ++node)
        if (leaked[node]) {
            LeakGroup &group = group_of(node);
            ++group.count;
            group.bytes += graph.sizes[node];
            if (group.example == kNoNode) group.example = node;
        }
    std::stable_sort(groups.begin(), groups.end(), [](const LeakGroup &a, const LeakGroup &b) { return a.count > b.count; });
    return groups;
}

void describe_group(const HeapGraph &graph, const LeakGroup &group, const NodeMap &parent,
                    std::vector<std::string> &lines) {
    lines.push_back(format("  %zu x %s (%llu bytes), e.g. <%s %p>", group.count, type_name(group.type),
                           static_cast<unsigned long long>(group.bytes), type_name(group.type),
                           static_cast<void *>(graph.objects[group.example])));
    if (!group.reached) {
        lines.push_back("    no root reaches it: uncollectable (gc.garbage, a legacy finalizer) or its cycle's "
                        "types have no tp_clear");
        return;
    }
    std::vector<uint32_t> chain = chain_to(parent, group.example);
    for (size_t i = 0; i < chain.size(); ++i)
        lines.push_back((i ? "     -> " : "    held by ") + describe_object(graph, chain[i]));
}

bool leak_report_wanted(Heap &heap) {
    if (heap.diagnostics.state && heap.diagnostics.state->report_leaks) return true;
    const char *env = std::getenv("CYCLEGC_LEAK_REPORT");
    return env && *env && std::strcmp(env, "0") != 0;
}

}  // namespace

std::vector<std::string> describe_leaks(Heap &heap, const std::function<bool(cgc_object *)> &is_leak,
                                        const char *what, size_t *leak_count) {
    std::vector<std::string> lines;
    HeapGraph graph;
    if (!build_graph(heap, graph, "cyclegc leak report")) return lines;
    std::vector<char> leaked(graph.node_count());
    size_t count = 0;
    uint64_t bytes = 0;
    for (size_t node = 0; node < graph.node_count(); ++node)
        if ((leaked[node] = is_leak(graph.objects[node]))) ++count, bytes += graph.sizes[node];
    if (leak_count) *leak_count = count;
    if (count == 0) return lines;
    NodeMap parent;
    std::vector<uint32_t> order = reached_from_roots(graph, parent);
    std::vector<LeakGroup> groups = group_leaks(graph, leaked, order);
    lines.push_back(format("cyclegc leak report: %zu objects (%llu bytes) %s, of %zu types:", count,
                           static_cast<unsigned long long>(bytes), what, groups.size()));
    for (const LeakGroup &group : groups) describe_group(graph, group, parent, lines);
    return lines;
}

char *join_lines(const std::vector<std::string> &lines) {
    std::string text;
    for (const std::string &line : lines) text += line + "\n";
    char *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (copy) std::memcpy(copy, text.c_str(), text.size() + 1);
    return copy;
}

void report_leaks_at_shutdown(Heap &heap) {
    if (!leak_report_wanted(heap)) return;
    try {
        auto all = [](cgc_object *) { return true; };
        for (const std::string &line : describe_leaks(heap, all, "still alive after the final collections", nullptr))
            log_line(heap, "%s", line.c_str());
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "cyclegc leak report: out of memory");
    }
}

}  // namespace cyclegc::internal::diag

using namespace cyclegc::internal;
using namespace cyclegc::internal::diag;

namespace {

void finalize_at_exit() {
    Heap &heap = current_heap();
    if (heap.collecting()) return;
    try {
        state_of(heap).report_leaks = true;
    } catch (const std::bad_alloc &) {
        return;
    }
    cgc_finalize();
}

}  // namespace

extern "C" {

int cgc_diag_set_leak_report(int on) { return set_switch(&State::report_leaks, on, "cgc_diag_set_leak_report"); }

int cgc_diag_report_leaks_at_exit(void) {
    if (std::atexit(finalize_at_exit) != 0) {
        report(CGC_ERR_MEMORY, "cgc_diag_report_leaks_at_exit: atexit refused the handler");
        return -1;
    }
    return 0;
}

char *cgc_diag_leak_report(void) {
    try {
        auto all = [](cgc_object *) { return true; };
        size_t count = 0;
        std::vector<std::string> lines = describe_leaks(current_heap(), all, "alive", &count);
        if (count == 0) lines.push_back("cyclegc leak report: no tracked object is alive");
        char *text = join_lines(lines);
        if (!text) report(CGC_ERR_MEMORY, "cgc_diag_leak_report: out of memory");
        return text;
    } catch (const std::bad_alloc &) {
        report(CGC_ERR_MEMORY, "cgc_diag_leak_report: out of memory");
        return nullptr;
    }
}

void cgc_diag_text_release(char *text) { std::free(text); }

}  // extern "C"
