// Reads a Chrome DevTools heap snapshot (.heapsnapshot: V8's JSON, as
// cgc_diag_write_heapsnapshot and Chrome write it) into arrays: the node
// fields the inspector needs, the edges as CSR, the strings. Only the
// snapshot's own meta is trusted for the field order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cyclegc_inspect {

struct Snapshot {
    std::vector<uint32_t> type;       // index into node_types
    std::vector<uint32_t> name;       // index into strings
    std::vector<uint64_t> id;
    std::vector<uint32_t> self_size;
    std::vector<uint64_t> edge_start;  // node count + 1
    std::vector<uint32_t> edges;       // target nodes (weak edges left out)
    std::vector<std::string> node_types;
    std::vector<std::string> strings;
    size_t node_count() const { return id.size(); }
    const std::string &name_of(uint32_t node) const { return strings[name[node]]; }
};

// progress(done, total) is called as the file is read and parsed. Throws
// std::runtime_error naming the file and what is wrong.
Snapshot read_heapsnapshot(const std::string &path, const std::function<void(const char *, double)> &progress);

}  // namespace cyclegc_inspect
