// Lengauer-Tarjan on depth-first numbers. Every array below is indexed by
// a node's preorder number (0: the virtual root), not by its node.
#include "dominators.hpp"

#include <utility>

namespace cyclegc::internal::diag {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct Numbering {
    std::vector<uint32_t> number;  // node -> preorder number (kNone: unreached)
    std::vector<uint32_t> vertex;  // preorder number -> node (vertex[0]: the virtual root)
    std::vector<uint32_t> parent;  // preorder number -> its DFS parent's number
};

// Iterative depth-first search from the virtual root (node `root` = n).
Numbering number_nodes(const CsrGraph &graph, const std::vector<uint32_t> &roots) {
    size_t n = graph.node_count();
    Numbering dfs;
    dfs.number.assign(n + 1, kNone);
    // A frame: the node and the next of its edges to follow.
    struct Frame {
        uint32_t node;
        uint64_t next;
    };
    std::vector<Frame> stack;
    auto visit = [&](uint32_t node, uint32_t parent_number) {
        dfs.number[node] = static_cast<uint32_t>(dfs.vertex.size());
        dfs.vertex.push_back(node);
        dfs.parent.push_back(parent_number);
        stack.push_back({node, 0});
    };
    visit(static_cast<uint32_t>(n), kNone);
    while (!stack.empty()) {
        Frame &frame = stack.back();
        uint32_t node = frame.node;
        bool is_root = node == n;
        uint64_t end = is_root ? roots.size() : graph.edge_start[node + 1] - graph.edge_start[node];
        if (frame.next == end) {
            stack.pop_back();
            continue;
        }
        uint64_t i = frame.next++;
        uint32_t target = is_root ? roots[i] : graph.edges[graph.edge_start[node] + i];
        if (dfs.number[target] == kNone) visit(target, dfs.number[node]);
    }
    return dfs;
}

// Predecessors by preorder number, as CSR (only edges between reached nodes).
void predecessors(const CsrGraph &graph, const std::vector<uint32_t> &roots, const Numbering &dfs,
                  std::vector<uint32_t> &start, std::vector<uint32_t> &from) {
    size_t count = dfs.vertex.size();
    start.assign(count + 1, 0);
    auto each_edge = [&](auto f) {
        for (uint32_t root : roots) f(0u, dfs.number[root]);
        for (uint32_t v = 1; v < count; ++v) {
            uint32_t node = dfs.vertex[v];
            for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e)
                f(v, dfs.number[graph.edges[e]]);
        }
    };
    each_edge([&](uint32_t, uint32_t to) { ++start[to + 1]; });
    for (size_t i = 0; i < count; ++i) start[i + 1] += start[i];
    from.resize(start[count]);
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    each_edge([&](uint32_t v, uint32_t to) { from[fill[to]++] = v; });
}

class LengauerTarjan {
  public:
    explicit LengauerTarjan(size_t count) : semi(count), idom(count, 0), ancestor(count, kNone), label(count) {
        for (uint32_t v = 0; v < count; ++v) semi[v] = label[v] = v;
    }
    // The node of least semidominator on v's path in the forest (compressed).
    uint32_t eval(uint32_t v) {
        if (ancestor[v] == kNone) return v;
        compress(v);
        return label[v];
    }
    void link(uint32_t parent, uint32_t v) { ancestor[v] = parent; }

    std::vector<uint32_t> semi, idom, ancestor, label;

  private:
    void compress(uint32_t v) {
        path_.clear();
        for (uint32_t u = v; ancestor[ancestor[u]] != kNone; u = ancestor[u]) path_.push_back(u);
        for (size_t i = path_.size(); i-- > 0;) {  // from the top of the path down
            uint32_t u = path_[i], a = ancestor[u];
            if (semi[label[a]] < semi[label[u]]) label[u] = label[a];
            ancestor[u] = ancestor[a];
        }
    }
    std::vector<uint32_t> path_;
};

std::vector<uint32_t> immediate_dominators(const Numbering &dfs, const std::vector<uint32_t> &pred_start,
                                           const std::vector<uint32_t> &pred) {
    size_t count = dfs.vertex.size();
    LengauerTarjan lt(count);
    std::vector<uint32_t> bucket_head(count, kNone), bucket_next(count, kNone);
    for (size_t i = count; i-- > 1;) {
        auto w = static_cast<uint32_t>(i);
        for (uint32_t e = pred_start[w]; e < pred_start[w + 1]; ++e) {
            uint32_t u = lt.eval(pred[e]);
            if (lt.semi[u] < lt.semi[w]) lt.semi[w] = lt.semi[u];
        }
        bucket_next[w] = bucket_head[lt.semi[w]];
        bucket_head[lt.semi[w]] = w;
        uint32_t p = dfs.parent[w];
        lt.link(p, w);
        for (uint32_t v = bucket_head[p]; v != kNone; v = bucket_next[v]) {
            uint32_t u = lt.eval(v);
            lt.idom[v] = lt.semi[u] < lt.semi[v] ? u : p;
        }
        bucket_head[p] = kNone;
    }
    for (size_t w = 1; w < count; ++w)
        if (lt.idom[w] != lt.semi[w]) lt.idom[w] = lt.idom[lt.idom[w]];
    return std::move(lt.idom);
}

}  // namespace

Dominators compute_dominators(const CsrGraph &graph, const std::vector<uint32_t> &roots) {
    size_t n = graph.node_count();
    Numbering dfs = number_nodes(graph, roots);
    std::vector<uint32_t> pred_start, pred;
    predecessors(graph, roots, dfs, pred_start, pred);
    std::vector<uint32_t> idom = immediate_dominators(dfs, pred_start, pred);
    Dominators result;
    result.virtual_root = static_cast<uint32_t>(n);
    result.idom.assign(n, Dominators::kUnreached);
    result.retained.assign(n, 0);
    std::vector<uint64_t> retained(dfs.vertex.size(), 0);
    for (size_t v = dfs.vertex.size(); v-- > 1;) {  // children before their dominators
        uint32_t node = dfs.vertex[v];
        retained[v] += graph.sizes[node];
        retained[idom[v]] += retained[v];
        result.idom[node] = dfs.vertex[idom[v]];
        result.retained[node] = retained[v];
    }
    result.order.assign(dfs.vertex.begin() + 1, dfs.vertex.end());
    return result;
}

}  // namespace cyclegc::internal::diag
