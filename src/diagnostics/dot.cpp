// Graphviz DOT of an object's neighbourhood: the objects that refer to it,
// and those that refer to them, up to a depth (objgraph.show_backrefs).
// Roots (held from outside the tracked objects) are drawn filled.
#include "writers.hpp"

#include "text_writer.hpp"

#include <cstdio>

namespace cyclegc::internal::diag {
namespace {

// Referrers by node, as CSR (the graph's edges reversed).
void reverse_edges(const HeapGraph &graph, std::vector<uint64_t> &start, std::vector<uint32_t> &from) {
    size_t n = graph.node_count();
    start.assign(n + 1, 0);
    for (uint32_t target : graph.edges) ++start[target + 1];
    for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
    from.resize(graph.edge_count());
    std::vector<uint64_t> fill(start.begin(), start.end() - 1);
    for (uint32_t node = 0; node < n; ++node)
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e) from[fill[graph.edges[e]]++] = node;
}

void write_node(TextWriter &out, const HeapGraph &graph, uint32_t node, bool is_target) {
    char label[64];
    cgc_object *op = graph.objects[node];
    std::snprintf(label, sizeof label, "\\n%p\\nrefcount %td, external %lld", static_cast<void *>(op), cgc_refcount(op),
                  static_cast<long long>(graph.external[node]));
    out << "  n" << node << " [label=";
    out.json_string(std::string(graph.type_name_at(node)) + label);
    if (is_target) out << ", style=filled, fillcolor=red";
    else if (graph.external[node] > 0) out << ", style=filled, fillcolor=yellow";
    out << "];\n";
}

}  // namespace

bool write_backrefs_dot(const HeapGraph &graph, uint32_t target, int max_depth, std::FILE *file) {
    constexpr uint64_t kTooMany = 10;  // referrers drawn per object (objgraph's too_many)
    std::vector<uint64_t> start;
    std::vector<uint32_t> from;
    reverse_edges(graph, start, from);
    std::vector<int> depth(graph.node_count(), -1);
    std::vector<uint32_t> queue{target};
    depth[target] = 0;
    TextWriter out(file);
    out << "digraph backrefs {\n  node [shape=box, fontname=\"monospace\"];\n";
    for (size_t head = 0; head < queue.size(); ++head) {
        uint32_t node = queue[head];
        write_node(out, graph, node, node == target);
        if (depth[node] == max_depth) continue;
        uint64_t shown = 0;
        for (uint64_t e = start[node]; e < start[node + 1] && shown < kTooMany; ++e, ++shown) {
            uint32_t referrer = from[e];
            out << "  n" << referrer << " -> n" << node << ";\n";
            if (depth[referrer] < 0) depth[referrer] = depth[node] + 1, queue.push_back(referrer);
        }
        if (start[node + 1] - start[node] > kTooMany)
            out << "  more" << node << " [label=\"" << start[node + 1] - start[node] - kTooMany
                << " more referrers\", shape=plaintext];\n  more" << node << " -> n" << node << ";\n";
    }
    out << "}\n";
    return out.flush();
}

}  // namespace cyclegc::internal::diag
