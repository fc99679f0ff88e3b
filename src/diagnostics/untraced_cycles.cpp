// Cycles held together only by references a tp_traverse skips. A skipped
// reference leaves its target with an external count the collector cannot
// explain, so a cycle of them looks held from outside and is never freed.
// The graph cannot show those references; the objects' own fields can: a
// word in an object's fields that points to a tracked object, beyond what
// its tp_traverse visits, is an *untraced* reference. The finding, and why
// it is made this way (no false positive from borrowed back pointers or
// from cycles held from outside), is in docs/diagnostics.md.
#include "untraced_cycles.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace cyclegc::internal::diag {
namespace {

// A pointer in an object's fields that its tp_traverse does not visit.
struct Untraced {
    uint32_t source;
    uint32_t target;
    uint32_t offset;  // the field's byte, from the start of the source's slot
    uint32_t count;   // fields of the source that hold the target unvisited
};

// The heap's page addresses, sorted: whether a word points into one of
// them is answered without reading the memory it points to.
class PageIndex {
  public:
    explicit PageIndex(const std::vector<Page *> &pages) {
        addresses_.reserve(pages.size());
        for (Page *page : pages) addresses_.push_back(reinterpret_cast<uintptr_t>(page));
        std::sort(addresses_.begin(), addresses_.end());
    }
    bool holds(uintptr_t page) const { return std::binary_search(addresses_.begin(), addresses_.end(), page); }

  private:
    std::vector<uintptr_t> addresses_;
};

uint32_t slot_index(const Page *page, const void *p) {
    return page->size_class == kLargeClass ? 0 : page->index_of(p);
}

// The node `word` points to: its object, or the start of its slot (a C++
// object's `this` when its class has a vtable pointer before the header).
uint32_t node_at(const HeapGraph &graph, const PageIndex &pages, uintptr_t word) {
    if (!pages.holds(word & ~(uintptr_t(kPageSize) - 1))) return kNoNode;
    const Page *page = page_of(reinterpret_cast<const void *>(word));
    const char *p = reinterpret_cast<const char *>(word);
    if (p < page->slots) return kNoNode;
    uint32_t index = slot_index(page, p);
    if (index >= page->bump || p >= page->slot(index) + page->slot_size) return kNoNode;
    cgc_object *object = page->object_at(index);
    if (p != page->slot(index) && p != reinterpret_cast<const char *>(object)) return kNoNode;
    return graph.node_of(object);
}

// The bytes of `op`'s fields from its slot's start: tp_basicsize and its
// items, within the slot (a C++ type's size counts from its `this`).
size_t field_bytes(const cgc_object *op, const Page *page) {
    const cgc_type *type = op->ob_type;
    size_t bytes = static_cast<size_t>(type->tp_basicsize);
    if (type->tp_itemsize) {
        cgc_ssize_t items = reinterpret_cast<const cgc_var_object *>(op)->ob_size;
        bytes += static_cast<size_t>(type->tp_itemsize) * static_cast<size_t>(items < 0 ? -items : items);
    }
    return std::min<size_t>(bytes, page->slot_size);
}

// Appends the untraced references of `node` to `out`: the pointers to
// tracked objects in its fields (its count and type excepted), less one per
// reference its tp_traverse visits to the same target.
void scan_fields(const HeapGraph &graph, const PageIndex &pages, uint32_t node, std::vector<Untraced> &out) {
    const cgc_object *op = graph.objects[node];
    const Page *page = page_of(op);
    const char *slot = page->slot(slot_index(page, op));
    const char *header = reinterpret_cast<const char *>(op);
    size_t first = out.size();
    for (size_t offset = 0, end = field_bytes(op, page); offset + sizeof(uintptr_t) <= end; offset += sizeof(uintptr_t)) {
        const char *field = slot + offset;
        if (field >= header && field < header + sizeof(cgc_object)) continue;
        uintptr_t word;
        std::memcpy(&word, field, sizeof word);
        uint32_t target = node_at(graph, pages, word);
        if (target == kNoNode) continue;
        auto same = std::find_if(out.begin() + first, out.end(), [&](const Untraced &u) { return u.target == target; });
        if (same != out.end()) ++same->count;
        else out.push_back({node, target, static_cast<uint32_t>(offset), 1});
    }
    for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1] && out.size() > first; ++e) {
        auto visited = std::find_if(out.begin() + first, out.end(),
                                    [&](const Untraced &u) { return u.target == graph.edges[e] && u.count > 0; });
        if (visited != out.end()) --visited->count;
    }
    out.erase(std::remove_if(out.begin() + first, out.end(), [](const Untraced &u) { return u.count == 0; }), out.end());
}

std::vector<Untraced> untraced_references(const HeapGraph &graph) {
    PageIndex pages(*graph.pages);
    std::vector<Untraced> untraced;
    for (uint32_t node = 0; node < graph.node_count(); ++node) scan_fields(graph, pages, node, untraced);
    return untraced;
}

// Drops the references of every field (type and byte) that points to an
// object more often than its external count allows: such a field holds
// borrowed pointers (a child's pointer to its parent), not references.
void drop_borrowed_fields(const HeapGraph &graph, std::vector<Untraced> &untraced) {
    std::unordered_map<uint32_t, int64_t> unexplained;
    for (const Untraced &u : untraced) unexplained.emplace(u.target, graph.external[u.target]).first->second -= u.count;
    auto field_of = [&](const Untraced &u) { return std::pair{graph.objects[u.source]->ob_type, u.offset}; };
    std::vector<std::pair<cgc_type *, uint32_t>> borrowed;
    for (const Untraced &u : untraced)
        if (unexplained[u.target] < 0) borrowed.push_back(field_of(u));
    std::sort(borrowed.begin(), borrowed.end());
    untraced.erase(std::remove_if(untraced.begin(), untraced.end(),
                                  [&](const Untraced &u) { return std::binary_search(borrowed.begin(), borrowed.end(), field_of(u)); }),
                   untraced.end());
}

// Marks with `mark` every node reachable from `starts` over the graph's
// edges and, with `untraced` non-null, over those references too (sorted
// by source, as untraced_references leaves them).
void mark_reached(const HeapGraph &graph, std::vector<uint32_t> queue, const std::vector<Untraced> *untraced,
                  std::vector<char> &marks, char mark) {
    for (uint32_t node : queue) marks[node] |= mark;
    auto visit = [&](uint32_t target) {
        if (marks[target] & mark) return;
        marks[target] |= mark;
        queue.push_back(target);
    };
    for (size_t head = 0; head < queue.size(); ++head) {
        uint32_t node = queue[head];
        for (uint64_t e = graph.edge_start[node]; e < graph.edge_start[node + 1]; ++e) visit(graph.edges[e]);
        if (!untraced) continue;
        auto by_source = [](const Untraced &u, uint32_t source) { return u.source < source; };
        for (auto u = std::lower_bound(untraced->begin(), untraced->end(), node, by_source);
             u != untraced->end() && u->source == node; ++u)
            visit(u->target);
    }
}

// Keeps the references that lie on cycles of these references (or on
// paths between cycles): drops, one node at a time from a queue, the nodes
// that no reference enters or none leaves. No recursion, linear time.
std::vector<Untraced> on_cycles(const std::vector<Untraced> &edges) {
    std::vector<uint32_t> nodes;
    for (const Untraced &u : edges) nodes.push_back(u.source), nodes.push_back(u.target);
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    auto local = [&](uint32_t node) { return size_t(std::lower_bound(nodes.begin(), nodes.end(), node) - nodes.begin()); };
    std::vector<uint32_t> in(nodes.size()), out(nodes.size());
    std::vector<std::vector<size_t>> entering(nodes.size()), leaving(nodes.size());
    for (size_t e = 0; e < edges.size(); ++e) {
        size_t source = local(edges[e].source), target = local(edges[e].target);
        ++out[source], ++in[target];
        leaving[source].push_back(target), entering[target].push_back(source);
    }
    std::vector<char> dropped(nodes.size());
    std::vector<size_t> queue;
    auto drop_if_dead = [&](size_t n) {
        if (dropped[n] || (in[n] && out[n])) return;
        dropped[n] = 1;
        queue.push_back(n);
    };
    for (size_t n = 0; n < nodes.size(); ++n) drop_if_dead(n);
    for (size_t head = 0; head < queue.size(); ++head) {
        size_t n = queue[head];
        for (size_t target : leaving[n]) --in[target], drop_if_dead(target);
        for (size_t source : entering[n]) --out[source], drop_if_dead(source);
    }
    std::vector<Untraced> kept;
    for (const Untraced &u : edges)
        if (!dropped[local(u.source)] && !dropped[local(u.target)]) kept.push_back(u);
    return kept;
}

std::string describe(const HeapGraph &graph, const Untraced &example, size_t members, size_t held) {
    cgc_object *source = graph.objects[example.source], *target = graph.objects[example.target];
    char line[640];
    std::snprintf(line, sizeof line,
                  "traverse check: type %s: %zu of its objects sit in cycles held together only by references its "
                  "tp_traverse does not visit (e.g. <%s %p> refers to <%s %p> from byte %u of its object, "
                  "unvisited), and nothing else holds them (%zu objects in all): no collection can free them; "
                  "tp_traverse must visit every reference the object owns",
                  type_name_of(source), members, type_name_of(source), static_cast<void *>(source),
                  type_name_of(target), static_cast<void *>(target), example.offset, held);
    return line;
}

}  // namespace

std::vector<std::string> find_untraced_cycles(const HeapGraph &graph, std::unordered_set<const cgc_type *> &skip) {
    std::vector<Untraced> untraced = untraced_references(graph);
    drop_borrowed_fields(graph, untraced);
    if (untraced.empty()) return {};
    // Held from outside once the untraced references are counted as
    // references: the roots that remain.
    std::unordered_map<uint32_t, int64_t> unexplained;
    for (const Untraced &u : untraced) unexplained.emplace(u.target, graph.external[u.target]).first->second -= u.count;
    std::vector<uint32_t> true_roots;
    for (uint32_t root : roots_of(graph)) {
        auto it = unexplained.find(root);
        if (it == unexplained.end() || it->second > 0) true_roots.push_back(root);
    }
    constexpr char kAlive = 1, kHeld = 2;  // alive to the collector; held by a true root
    std::vector<char> marks(graph.node_count());
    mark_reached(graph, roots_of(graph), nullptr, marks, kAlive);
    mark_reached(graph, std::move(true_roots), &untraced, marks, kHeld);
    auto leaked = [&](uint32_t node) { return marks[node] == kAlive; };
    std::vector<Untraced> between;
    for (const Untraced &u : untraced)
        if (leaked(u.source) && leaked(u.target)) between.push_back(u);
    std::vector<Untraced> cycles = on_cycles(between);
    if (cycles.empty()) return {};

    size_t held = 0;
    for (uint32_t node = 0; node < graph.node_count(); ++node) held += leaked(node);
    std::vector<std::string> lines;
    std::unordered_map<const cgc_type *, std::pair<size_t, const Untraced *>> by_type;  // members, example
    std::vector<const cgc_type *> order;
    for (const Untraced &u : cycles) {
        const cgc_type *type = graph.objects[u.source]->ob_type;
        auto [it, added] = by_type.emplace(type, std::pair{size_t(0), &u});
        if (added) order.push_back(type);
        if (&u == &cycles.front() || u.source != (&u - 1)->source) ++it->second.first;
    }
    for (const cgc_type *type : order)
        if (skip.insert(type).second) lines.push_back(describe(graph, *by_type[type].second, by_type[type].first, held));
    return lines;
}

}  // namespace cyclegc::internal::diag
