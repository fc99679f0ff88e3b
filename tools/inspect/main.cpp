// cyclegc-inspect: what a heap snapshot holds, and why.
//
//   cyclegc-inspect SNAPSHOT [--top N] [--type NAME | --id ID] [--progress | --no-progress]
//
// Reads a .heapsnapshot (cgc_diag_write_heapsnapshot's, or Chrome's) and
// prints the census (objects by type name: count, bytes), the objects of
// largest retained size (dominators), and the shortest retainer chain from
// the snapshot's root to the nearest object named NAME, or to the object
// with id ID. A progress bar goes to stderr while a large file is read
// (when stderr is a terminal, or with --progress).
#include "../../src/diagnostics/dominators.hpp"
#include "snapshot_reader.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

using cyclegc_inspect::Snapshot;

struct Options {
    std::string path;
    size_t top = 15;
    std::string type;
    uint64_t id = 0;
    bool by_id = false;
    bool progress = isatty(2) != 0;
};

void usage() {
    std::fputs("usage: cyclegc-inspect SNAPSHOT [--top N] [--type NAME | --id ID] [--progress | --no-progress]\n",
               stderr);
    std::exit(2);
}

Options parse(int argc, char **argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        bool has_value = i + 1 < argc;
        if (arg == "--top" && has_value) options.top = std::strtoull(argv[++i], nullptr, 10);
        else if (arg == "--type" && has_value) options.type = argv[++i];
        else if (arg == "--id" && has_value) options.id = std::strtoull(argv[++i], nullptr, 10), options.by_id = true;
        else if (arg == "--progress") options.progress = true;
        else if (arg == "--no-progress") options.progress = false;
        else if (arg.rfind("--", 0) == 0 || !options.path.empty()) usage();
        else options.path = arg;
    }
    if (options.path.empty()) usage();
    return options;
}

void draw_progress(const char *what, double fraction) {
    int filled = static_cast<int>(fraction * 40);
    std::fprintf(stderr, "\r%-14s [%.*s%*s] %3d%%", what, filled, "########################################", 40 - filled,
                 "", static_cast<int>(fraction * 100));
    if (fraction >= 1.0 && std::strcmp(what, "parsed") == 0) std::fputc('\n', stderr);
}

// What the census groups a node under: its name for objects, else its node type.
std::string group_of(const Snapshot &s, uint32_t node) {
    const std::string &type = s.node_types[s.type[node]];
    if (type == "object" || type == "native" || type == "closure") return s.name_of(node);
    return "(" + type + ")";
}

void print_census(const Snapshot &s, size_t top) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> groups;
    uint64_t bytes = 0;
    for (uint32_t node = 0; node < s.node_count(); ++node) {
        auto &group = groups[group_of(s, node)];
        ++group.first, group.second += s.self_size[node], bytes += s.self_size[node];
    }
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> sorted(groups.begin(), groups.end());
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto &a, const auto &b) { return a.second.first > b.second.first; });
    std::printf("census: %zu nodes, %llu bytes, %zu edges\n", s.node_count(), static_cast<unsigned long long>(bytes),
                s.edges.size());
    for (size_t i = 0; i < sorted.size() && i < top; ++i)
        std::printf("  %12llu %14llu bytes  %s\n", static_cast<unsigned long long>(sorted[i].second.first),
                    static_cast<unsigned long long>(sorted[i].second.second), sorted[i].first.c_str());
}

void print_dominators(const Snapshot &s, const cyclegc::internal::diag::Dominators &d, size_t top) {
    std::vector<uint32_t> nodes;
    for (uint32_t node : d.order)
        if (node != 0 && s.node_types[s.type[node]] != "synthetic") nodes.push_back(node);
    size_t count = std::min(top, nodes.size());
    std::partial_sort(nodes.begin(), nodes.begin() + count, nodes.end(),
                      [&](uint32_t a, uint32_t b) { return d.retained[a] > d.retained[b]; });
    std::printf("largest dominators (retained bytes: freed if the object died):\n");
    for (size_t i = 0; i < count; ++i)
        std::printf("  %14llu bytes  %s @%llu\n", static_cast<unsigned long long>(d.retained[nodes[i]]),
                    s.name_of(nodes[i]).c_str(), static_cast<unsigned long long>(s.id[nodes[i]]));
}

// Breadth-first from node 0 (the snapshot's root) to the first node `wanted` accepts.
template <typename Wanted>
std::vector<uint32_t> chain_to(const Snapshot &s, Wanted wanted) {
    std::vector<uint32_t> parent(s.node_count(), UINT32_MAX), queue{0};
    parent[0] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
        uint32_t node = queue[head];
        if (wanted(node)) {
            std::vector<uint32_t> chain{node};
            while (chain.back() != 0) chain.push_back(parent[chain.back()]);
            return {chain.rbegin(), chain.rend()};
        }
        for (uint64_t e = s.edge_start[node]; e < s.edge_start[node + 1]; ++e)
            if (parent[s.edges[e]] == UINT32_MAX) parent[s.edges[e]] = node, queue.push_back(s.edges[e]);
    }
    return {};
}

void print_chain(const Snapshot &s, const cyclegc::internal::diag::Dominators &d, const Options &options) {
    std::vector<uint32_t> chain = options.by_id ? chain_to(s, [&](uint32_t n) { return s.id[n] == options.id; })
                                                : chain_to(s, [&](uint32_t n) { return n != 0 && s.name_of(n) == options.type; });
    // (Appended, not `"@" + std::string`: GCC 12 at -O3 warns about that
    // operator+, inlined, with a false -Wrestrict.)
    std::string what = options.by_id ? std::string("@").append(std::to_string(options.id)) : options.type;
    if (chain.empty()) {
        std::printf("retainer chain of %s: not reached from the root\n", what.c_str());
        return;
    }
    std::printf("retainer chain of %s:\n", what.c_str());
    for (size_t i = 0; i < chain.size(); ++i)
        std::printf("  %s%s @%llu (%u bytes, retains %llu)\n", i ? "-> " : "", s.name_of(chain[i]).c_str(),
                    static_cast<unsigned long long>(s.id[chain[i]]), s.self_size[chain[i]],
                    static_cast<unsigned long long>(d.retained[chain[i]]));
}

}  // namespace

int main(int argc, char **argv) {
    Options options = parse(argc, argv);
    try {
        auto progress = [&](const char *what, double fraction) {
            if (options.progress) draw_progress(what, fraction);
        };
        Snapshot s = cyclegc_inspect::read_heapsnapshot(options.path, progress);
        if (s.node_count() == 0) throw std::runtime_error(options.path + ": no nodes");
        print_census(s, options.top);
        using namespace cyclegc::internal::diag;
        Dominators d = compute_dominators(CsrGraph{s.edge_start, s.edges, s.self_size}, {0});
        print_dominators(s, d, options.top);
        if (options.by_id || !options.type.empty()) print_chain(s, d, options);
    } catch (const std::exception &error) {
        std::fprintf(stderr, "cyclegc-inspect: %s\n", error.what());
        return 1;
    }
    return 0;
}
