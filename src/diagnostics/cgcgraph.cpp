// The heap's graph in the project's own `cgcgraph 1` text format
// (docs/graph-format.md), which cyclegc-replay and cyclegc-inspect read:
// written uncompressed (gzip it for a .cgcgraph.gz; the readers take both).
#include "writers.hpp"

#include "text_writer.hpp"

#include <cctype>
#include <string>

namespace cyclegc::internal::diag {
namespace {

// A type name as a token: whitespace becomes '_'.
std::string token(const char *name) {
    std::string text = *name ? name : "?";
    for (char &c : text)
        if (std::isspace(static_cast<unsigned char>(c))) c = '_';
    return text;
}

}  // namespace

bool write_cgcgraph(const HeapGraph &graph, std::FILE *file) {
    TextWriter out(file);
    out << "cgcgraph 1\nnodes " << static_cast<uint64_t>(graph.node_count()) << " edges "
        << static_cast<uint64_t>(graph.edge_count()) << "\n# written by cgc_diag_write_cgcgraph\n";
    std::string last_name;
    const cgc_type *last_type = nullptr;
    for (size_t node = 0; node < graph.node_count(); ++node) {
        const cgc_object *op = graph.objects[node];
        if (op->ob_type != last_type) last_type = op->ob_type, last_name = token(type_name_of(op));
        // (A count below the references seen, a traverse bug, is written as 0: the format has none.)
        int64_t external = graph.external[node] < 0 ? 0 : graph.external[node];
        out << last_name << ' ' << graph.sizes[node] << ' ' << external << ' '
            << graph.edge_start[node + 1] - graph.edge_start[node];
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e) out << ' ' << graph.edges[e];
        out << '\n';
    }
    return out.flush();
}

}  // namespace cyclegc::internal::diag
