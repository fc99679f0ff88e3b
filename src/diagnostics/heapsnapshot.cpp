// The heap as a Chrome DevTools heap snapshot (.heapsnapshot: the JSON of
// V8's heap profiler), which DevTools' Memory panel and memlab read.
//
// Node 0 is a synthetic root; it holds every root of the graph (an object
// with references from outside the tracked objects) through an element
// edge. Every tracked object is an "object" node named by its type, with
// its slot's bytes as self size and an id made from its address (stable
// while it lives, so that snapshots taken one after another can be
// compared); its references are element edges in tp_traverse order.
#include "heap_graph.hpp"
#include "text_writer.hpp"

#include <cyclegc/diagnostics.h>

#include <new>
#include <string>
#include <unordered_map>

namespace cyclegc::internal::diag {
namespace {

constexpr int kNodeFields = 7;  // type, name, id, self_size, edge_count, trace_node_id, detachedness
constexpr int kObjectType = 3;  // in node_types[0]
constexpr int kSyntheticType = 9;
constexpr int kElementEdge = 1;  // in edge_types[0]

const char kMeta[] =
    R"({"snapshot":{"meta":{"node_fields":["type","name","id","self_size","edge_count","trace_node_id","detachedness"],)"
    R"("node_types":[["hidden","array","string","object","code","closure","regexp","number","native","synthetic",)"
    R"("concatenated string","sliced string","symbol","bigint","object shape"],"string","number","number","number",)"
    R"("number","number"],"edge_fields":["type","name_or_index","to_node"],"edge_types":[["context","element",)"
    R"("property","internal","hidden","shortcut","weak"],"string_or_number","node"],)"
    R"("trace_function_info_fields":["function_id","name","script_name","script_id","line","column"],)"
    R"("trace_node_fields":["id","function_info_index","count","size","children"],)"
    R"("sample_fields":["timestamp_us","last_assigned_id"],"location_fields":["object_index","script_id","line","column"]},)";

// Strings: index 0 is the root's name; then one per type name.
struct StringTable {
    std::vector<std::string> strings{"(cyclegc roots)"};
    std::unordered_map<const cgc_type *, uint32_t> of_type;
    const cgc_type *last_type = nullptr;  // (objects of a type tend to sit together)
    uint32_t last_string = 0;
    uint32_t type_string(const cgc_object *op) {
        if (op->ob_type == last_type) return last_string;
        auto [it, added] = of_type.emplace(op->ob_type, static_cast<uint32_t>(strings.size()));
        if (added) strings.emplace_back(type_name_of(op));
        last_type = op->ob_type;
        return last_string = it->second;
    }
};

// An object's id: even numbers are V8's for its own synthetic nodes; the
// root is 1, objects get odd ids from their address.
uint64_t id_of(const cgc_object *op) { return (reinterpret_cast<uintptr_t>(op) >> 3) * 2 + 3; }

void write_nodes(TextWriter &out, const HeapGraph &graph, const std::vector<uint32_t> &roots, StringTable &strings) {
    out << "\n\"nodes\":[" << kSyntheticType << ",0,1,0," << static_cast<uint64_t>(roots.size()) << ",0,0";
    for (size_t node = 0; node < graph.node_count(); ++node) {
        const cgc_object *op = graph.objects[node];
        out << ",\n" << kObjectType << ',' << strings.type_string(op) << ',' << id_of(op) << ',' << graph.sizes[node]
            << ',' << graph.edge_start[node + 1] - graph.edge_start[node] << ",0,0";
    }
    out << "],";
}

void write_edges(TextWriter &out, const HeapGraph &graph, const std::vector<uint32_t> &roots) {
    out << "\n\"edges\":[";
    const char *separator = "";
    uint64_t index = 0;
    for (uint32_t root : roots) {  // (the root node's edges, then each node's in order)
        out << separator << kElementEdge << ',' << index++ << ',' << (uint64_t(root) + 1) * kNodeFields;
        separator = ",\n";
    }
    for (size_t node = 0; node < graph.node_count(); ++node)
        for (uint64_t e = graph.edge_start[node], i = 0; e < graph.edge_start[node + 1]; ++e, ++i) {
            out << separator << kElementEdge << ',' << i << ',' << (uint64_t(graph.edges[e]) + 1) * kNodeFields;
            separator = ",\n";
        }
    out << "],";
}

void write_strings(TextWriter &out, const StringTable &strings) {
    out << "\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],\"locations\":[],\n\"strings\":[";
    for (size_t i = 0; i < strings.strings.size(); ++i) {
        if (i) out << ",\n";
        out.json_string(strings.strings[i]);
    }
    out << "]}\n";
}

}  // namespace

bool write_heapsnapshot(const HeapGraph &graph, std::FILE *file) {
    std::vector<uint32_t> roots = roots_of(graph);
    TextWriter out(file);
    out << kMeta << "\"node_count\":" << static_cast<uint64_t>(graph.node_count() + 1)
        << ",\"edge_count\":" << static_cast<uint64_t>(graph.edge_count() + roots.size())
        << ",\"trace_function_count\":0},";
    StringTable strings;
    write_nodes(out, graph, roots, strings);
    write_edges(out, graph, roots);
    write_strings(out, strings);
    return out.flush();
}

}  // namespace cyclegc::internal::diag
