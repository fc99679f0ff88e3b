// Reading, generating and modelling `cgcgraph 1` heap graphs.
#include "graph.hpp"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace cgcbench {
namespace {

std::string read_all(const std::string &path) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file) throw std::runtime_error(path + ": cannot open");
    gzbuffer(file, 1 << 18);
    std::string data;
    char chunk[1 << 16];
    for (;;) {
        int got = gzread(file, chunk, sizeof chunk);
        if (got < 0) {
            int code = 0;
            std::string message = gzerror(file, &code);
            gzclose(file);
            throw std::runtime_error(path + ": " + message);
        }
        if (got == 0) break;
        data.append(chunk, static_cast<size_t>(got));
    }
    gzclose(file);
    return data;
}

// A cursor over the decompressed text, one line at a time.
class Lines {
  public:
    Lines(const std::string &path, const std::string &text) : path_(path), text_(text) {}

    // The next line that is neither empty nor a comment; comments go to
    // `comments`. False at the end of the text.
    bool next(std::vector<std::string> &comments) {
        while (pos_ < text_.size()) {
            size_t end = text_.find('\n', pos_);
            if (end == std::string::npos) end = text_.size();
            begin_ = pos_;
            end_ = end;
            pos_ = end + 1;
            ++number_;
            if (end_ > begin_ && text_[end_ - 1] == '\r') --end_;
            if (end_ == begin_) continue;
            if (text_[begin_] == '#') {
                comments.emplace_back(text_, begin_, end_ - begin_);
                continue;
            }
            cursor_ = begin_;
            return true;
        }
        return false;
    }
    std::string line() const { return std::string(text_, begin_, end_ - begin_); }
    bool at_end_of_line() {
        skip_spaces();
        return cursor_ >= end_;
    }
    // The next space-separated token of the current line.
    std::string_view token(const char *what) {
        skip_spaces();
        if (cursor_ >= end_) fail(std::string("missing ") + what);
        size_t start = cursor_;
        while (cursor_ < end_ && text_[cursor_] != ' ') ++cursor_;
        return std::string_view(text_).substr(start, cursor_ - start);
    }
    uint64_t number(const char *what) {
        std::string_view t = token(what);
        uint64_t value = 0;
        for (char c : t) {
            if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10)
                fail(std::string("bad ") + what + " '" + std::string(t) + "'");
            value = value * 10 + static_cast<uint64_t>(c - '0');
        }
        return value;
    }
    [[noreturn]] void fail(const std::string &message) const {
        throw std::runtime_error(path_ + ":" + std::to_string(number_) + ": " + message);
    }

  private:
    void skip_spaces() {
        while (cursor_ < end_ && text_[cursor_] == ' ') ++cursor_;
    }
    const std::string &path_;
    const std::string &text_;
    size_t pos_ = 0, begin_ = 0, end_ = 0, cursor_ = 0;
    uint64_t number_ = 0;
};

std::optional<uint64_t> stat_value(const std::string &comment, const std::string &key) {
    if (comment.rfind("# stats:", 0) != 0) return std::nullopt;
    std::string needle = " " + key + "=";
    size_t at = comment.find(needle);
    if (at == std::string::npos) return std::nullopt;
    return std::stoull(comment.substr(at + needle.size()));
}

std::string base_name(const std::string &path) {
    std::string name = path.substr(path.find_last_of('/') + 1);
    for (const char *suffix : {".cgcgraph.gz", ".cgcgraph", ".gz"}) {
        size_t n = std::strlen(suffix);
        if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) return name.substr(0, name.size() - n);
    }
    return name;
}

}  // namespace

Graph read_graph(const std::string &path) {
    std::string text = read_all(path);
    Lines lines(path, text);
    Graph g;
    g.name = base_name(path);
    if (!lines.next(g.comments) || lines.line() != "cgcgraph 1") lines.fail("expected the header 'cgcgraph 1'");
    if (!lines.next(g.comments)) lines.fail("expected 'nodes N edges E'");
    if (lines.token("'nodes'") != "nodes") lines.fail("expected 'nodes N edges E'");
    uint64_t n = lines.number("node count");
    if (lines.token("'edges'") != "edges") lines.fail("expected 'nodes N edges E'");
    uint64_t e = lines.number("edge count");
    if (n >= UINT32_MAX || e >= UINT32_MAX) lines.fail("graphs of 2^32 nodes or edges are not supported");
    g.nodes = static_cast<uint32_t>(n);
    g.offsets.reserve(n + 1);
    g.offsets.push_back(0);
    g.targets.reserve(e);
    g.external.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        if (!lines.next(g.comments)) lines.fail("expected " + std::to_string(n) + " node lines, found " + std::to_string(i));
        lines.token("type");
        g.python_bytes += lines.number("size");
        uint64_t external = lines.number("external");
        if (external >= UINT32_MAX) lines.fail("external count too large");
        g.external.push_back(static_cast<uint32_t>(external));
        uint64_t k = lines.number("reference count k");
        if (g.targets.size() + k > e) lines.fail("more references than the header's " + std::to_string(e) + " edges");
        for (uint64_t j = 0; j < k; ++j) {
            uint64_t t = lines.number("reference");
            if (t >= n) lines.fail("reference " + std::to_string(t) + " out of range (nodes " + std::to_string(n) + ")");
            g.targets.push_back(static_cast<uint32_t>(t));
        }
        if (!lines.at_end_of_line()) lines.fail("more references than k = " + std::to_string(k));
        g.offsets.push_back(static_cast<uint32_t>(g.targets.size()));
    }
    if (g.targets.size() != e)
        lines.fail("the node lines have " + std::to_string(g.targets.size()) + " references, the header says " + std::to_string(e));
    if (lines.next(g.comments)) lines.fail("unexpected line after the last node: '" + lines.line() + "'");
    for (const std::string &c : g.comments) {
        if (auto v = stat_value(c, "roots")) g.stated_roots = v;
        if (auto v = stat_value(c, "garbage")) g.stated_garbage = v;
    }
    return g;
}

Graph make_random_graph(uint32_t n, uint64_t seed) {
    Graph g;
    g.name = "gen-random-" + std::to_string(n);
    g.nodes = n;
    Rng rng(seed);
    g.offsets.reserve(size_t(n) + 1);
    g.offsets.push_back(0);
    g.targets.reserve(size_t(n) * 4);
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t k = rng.below(9);
        for (uint32_t j = 0; j < k; ++j) g.targets.push_back(rng.below(n));
        g.offsets.push_back(static_cast<uint32_t>(g.targets.size()));
        g.python_bytes += 56 + 8 * k;  // sys.getsizeof of a list of k items
    }
    // Exactly n/10 distinct roots: the first n/10 of a seeded shuffle.
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    g.external.assign(n, 0);
    for (uint32_t i = 0; i < n / 10; ++i) {
        uint32_t j = i + rng.below(n - i);
        std::swap(order[i], order[j]);
        g.external[order[i]] = 1;
    }
    g.comments.push_back("# synthetic random graph: " + std::to_string(n) +
                         " nodes, out-degree uniform in 0..8, uniform targets, 10% roots, seed " + std::to_string(seed));
    return g;
}

Graph make_chain_graph(uint32_t n) {
    Graph g;
    g.name = "gen-chain-" + std::to_string(n);
    g.nodes = n;
    g.offsets.reserve(size_t(n) + 1);
    g.offsets.push_back(0);
    g.targets.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
        if (i + 1 < n) g.targets.push_back(i + 1);
        g.offsets.push_back(static_cast<uint32_t>(g.targets.size()));
        g.python_bytes += i + 1 < n ? 64 : 56;
    }
    g.external.assign(n, 0);
    if (n) g.external[0] = 1;
    g.comments.push_back("# synthetic chain: " + std::to_string(n) + " nodes, i -> i+1, node 0 is the only root");
    return g;
}

void write_graph(const Graph &g, const std::string &path, const std::vector<std::string> &comments) {
    gzFile file = gzopen(path.c_str(), "wb6");
    if (!file) throw std::runtime_error(path + ": cannot create");
    std::string out = "cgcgraph 1\nnodes " + std::to_string(g.nodes) + " edges " + std::to_string(g.edges()) + "\n";
    for (const std::string &c : comments) out += c + "\n";
    auto flush = [&](bool force) {
        if (out.size() < (1 << 20) && !force) return;
        if (!out.empty() && gzwrite(file, out.data(), static_cast<unsigned>(out.size())) == 0) {
            gzclose(file);
            throw std::runtime_error(path + ": write failed");
        }
        out.clear();
    };
    for (uint32_t i = 0; i < g.nodes; ++i) {
        out += "list ";
        out += std::to_string(56 + 8 * g.degree(i));
        out += ' ';
        out += std::to_string(g.external[i]);
        out += ' ';
        out += std::to_string(g.degree(i));
        for (uint32_t j = g.offsets[i]; j < g.offsets[i + 1]; ++j) {
            out += ' ';
            out += std::to_string(g.targets[j]);
        }
        out += '\n';
        flush(false);
    }
    flush(true);
    if (gzclose(file) != Z_OK) throw std::runtime_error(path + ": close failed");
}

// ---- The model ------------------------------------------------------------

namespace {

// Reference counts and liveness of a replayed heap, simulated. The live
// nodes and the edges out of them are also kept as index sets (swap-remove),
// so that the churn picks uniformly among them however few remain.
struct Simulation {
    const Graph &g;
    std::vector<uint32_t> targets;  // mutable copy: the churn rewrites it
    std::vector<uint64_t> rc;
    std::vector<uint8_t> alive;
    uint64_t alive_edges = 0;
    std::vector<uint32_t> stack;
    bool keep_sets = false;
    std::vector<uint32_t> node_set, node_pos, edge_set, edge_pos;

    explicit Simulation(const Graph &graph) : g(graph), targets(graph.targets), rc(graph.nodes), alive(graph.nodes, 1) {
        for (uint32_t i = 0; i < g.nodes; ++i) rc[i] = g.external[i];
        for (uint32_t t : targets) rc[t]++;
        alive_edges = targets.size();
    }

    // From now on, maintain the sets of live nodes and of their edges.
    void start_sets() {
        keep_sets = true;
        node_pos.assign(g.nodes, UINT32_MAX);
        edge_pos.assign(targets.size(), UINT32_MAX);
        for (uint32_t i = 0; i < g.nodes; ++i) {
            if (!alive[i]) continue;
            node_pos[i] = static_cast<uint32_t>(node_set.size());
            node_set.push_back(i);
            for (uint32_t j = g.offsets[i]; j < g.offsets[i + 1]; ++j) {
                edge_pos[j] = static_cast<uint32_t>(edge_set.size());
                edge_set.push_back(j);
            }
        }
    }
    static void remove(std::vector<uint32_t> &set, std::vector<uint32_t> &pos, uint32_t item) {
        uint32_t at = pos[item], last = set.back();
        set[at] = last;
        pos[last] = at;
        set.pop_back();
        pos[item] = UINT32_MAX;
    }

    void kill(uint32_t node) {
        alive[node] = 0;
        alive_edges -= g.degree(node);
        if (!keep_sets) return;
        remove(node_set, node_pos, node);
        for (uint32_t j = g.offsets[node]; j < g.offsets[node + 1]; ++j) remove(edge_set, edge_pos, j);
    }
    // Drops one reference to `node`; frees what reference counting frees.
    // Returns the number of nodes freed.
    uint64_t decref(uint32_t node) {
        if (--rc[node] != 0) return 0;
        uint64_t freed = 0;
        stack.push_back(node);
        while (!stack.empty()) {
            uint32_t x = stack.back();
            stack.pop_back();
            kill(x);
            ++freed;
            for (uint32_t j = g.offsets[x]; j < g.offsets[x + 1]; ++j)
                if (--rc[targets[j]] == 0) stack.push_back(targets[j]);
        }
        return freed;
    }
    // Nodes a root reaches over the current edges of live nodes.
    std::vector<uint8_t> reachable() {
        std::vector<uint8_t> mark(g.nodes, 0);
        for (uint32_t i = 0; i < g.nodes; ++i) {
            if (!alive[i] || g.external[i] == 0 || mark[i]) continue;
            mark[i] = 1;
            stack.push_back(i);
            while (!stack.empty()) {
                uint32_t x = stack.back();
                stack.pop_back();
                for (uint32_t j = g.offsets[x]; j < g.offsets[x + 1]; ++j) {
                    uint32_t t = targets[j];
                    if (!mark[t]) {
                        mark[t] = 1;
                        stack.push_back(t);
                    }
                }
            }
        }
        return mark;
    }
    // A full collection: frees every live node no root reaches; the freed
    // nodes drop their references to the survivors. Returns the count.
    uint64_t collect() {
        std::vector<uint8_t> mark = reachable();
        std::vector<uint32_t> garbage;
        for (uint32_t i = 0; i < g.nodes; ++i)
            if (alive[i] && !mark[i]) garbage.push_back(i);
        for (uint32_t i : garbage) kill(i);
        for (uint32_t i : garbage)
            for (uint32_t j = g.offsets[i]; j < g.offsets[i + 1]; ++j)
                if (mark[targets[j]]) rc[targets[j]]--;
        return garbage.size();
    }
};

}  // namespace

Model build_model(const Graph &g, double churn_fraction, uint64_t seed) {
    Model m;
    for (uint32_t i = 0; i < g.nodes; ++i) {
        if (g.external[i] > 0) m.roots++;
        m.root_refs += g.external[i];
    }
    Simulation sim(g);
    // Build: the replay drops its temporary references; nodes that nothing
    // refers to (and what hangs only off them) are freed at once.
    for (uint32_t i = 0; i < g.nodes; ++i) {
        if (sim.alive[i] && sim.rc[i] == 0) {
            sim.rc[i] = 1;
            m.acyclic_garbage += sim.decref(i);
        }
    }
    uint64_t cyclic = sim.collect();
    m.garbage = m.acyclic_garbage + cyclic;
    m.live = g.nodes - m.garbage;
    m.live_edges = sim.alive_edges;

    // Churn: rewrite a share of the live edges, uniformly at random among
    // the edges of the nodes still live, to uniformly random live targets.
    Rng rng(seed);
    uint64_t ops = static_cast<uint64_t>(std::llround(churn_fraction * static_cast<double>(m.live_edges)));
    m.churn.reserve(ops);
    sim.start_sets();
    for (uint64_t n = 0; n < ops && !sim.edge_set.empty(); ++n) {
        uint32_t edge = sim.edge_set[rng.below(static_cast<uint32_t>(sim.edge_set.size()))];
        // The node whose range [offsets[node], offsets[node+1]) holds the
        // edge: the last offset <= edge (empty nodes share that offset).
        uint32_t node = static_cast<uint32_t>(std::upper_bound(g.offsets.begin(), g.offsets.end(), edge) - g.offsets.begin() - 1);
        uint32_t target = sim.node_set[rng.below(static_cast<uint32_t>(sim.node_set.size()))];
        m.churn.push_back({node, edge - g.offsets[node], target});
        sim.rc[target]++;
        uint32_t old = sim.targets[edge];
        sim.targets[edge] = target;
        m.churn_freed_by_refcount += sim.decref(old);
    }
    m.churn_freed_by_collect = sim.collect();
    m.churned_targets = sim.targets;  // (edges of dead nodes too: no root reaches them)

    // Drop every root reference.
    for (uint32_t i = 0; i < g.nodes; ++i) {
        if (!sim.alive[i] || g.external[i] == 0) continue;
        sim.rc[i] -= g.external[i] - 1;
        m.drop_freed_by_refcount += sim.decref(i);
    }
    uint64_t remaining = 0;
    for (uint32_t i = 0; i < g.nodes; ++i) remaining += sim.alive[i];
    m.drop_freed_by_collect = remaining;
    return m;
}

}  // namespace cgcbench
