// The cyclegc replay: every node of the graph becomes a variable-size GC
// object whose items are its references, through the native C API only.
// (This file includes <cyclegc/cyclegc.h> and never CPython's Python.h.)
#include <cyclegc/cyclegc.h>

#include "replay.hpp"
#include "timer.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace cgcbench {
namespace {

uint64_t g_freed = 0;  // nodes whose tp_dealloc ran

cgc_object **items(cgc_object *self) {
    return reinterpret_cast<cgc_object **>(reinterpret_cast<char *>(self) + sizeof(cgc_var_object));
}
cgc_ssize_t size(cgc_object *self) { return reinterpret_cast<cgc_var_object *>(self)->ob_size; }

int node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    cgc_object **it = items(self);
    for (cgc_ssize_t i = 0, n = size(self); i < n; ++i) {
        if (it[i]) {
            if (int r = visit(it[i], arg)) return r;
        }
    }
    return 0;
}

int node_clear(cgc_object *self) {
    cgc_object **it = items(self);
    for (cgc_ssize_t i = 0, n = size(self); i < n; ++i) {
        if (cgc_object *old = it[i]) {
            it[i] = nullptr;
            cgc_decref(old);
        }
    }
    return 0;
}

// No trashcan here: cyclegc bounds the depth of nested deallocations for
// every type (a 10M chain is freed without deep recursion).
void node_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    node_clear(self);
    cgc_gc_del(self);
    ++g_freed;
}

cgc_type &node_type() {
    static cgc_type type = [] {
        cgc_type t{};
        t.tp_name = "cgcreplay.Node";
        t.tp_basicsize = sizeof(cgc_var_object);
        t.tp_itemsize = sizeof(cgc_object *);
        t.tp_flags = CGC_TPFLAGS_DEFAULT | CGC_TPFLAGS_HAVE_GC;
        t.tp_dealloc = node_dealloc;
        t.tp_traverse = node_traverse;
        t.tp_clear = node_clear;
        t.tp_free = cgc_gc_del;
        return t;
    }();
    static bool ready = cgc_type_ready(&type) == 0;
    (void)ready;
    return type;
}

// Runs `step` timed; records the nodes freed during it.
template <class F>
Step timed(F &&step) {
    uint64_t before = g_freed;
    Timer timer;
    int64_t collected = step();
    Step s;
    s.ns = timer.ns();
    s.freed = g_freed - before;
    s.collected = collected;
    return s;
}

uint64_t g_pause_budget = 0;

// A full collection, timed: at once, or (a pause budget) slice after slice
// until its cycle ends, with its longest slice (the pause statistics').
Step timed_collection() {
    cgc_reset_pause_stats();
    Step s = timed([] {
        if (g_pause_budget == 0) return int64_t(cgc_collect(2));
        while (cgc_collect_slice(g_pause_budget) == 0) {
        }
        return int64_t(-1);  // (a slice returns no count: the frees are checked)
    });
    if (g_pause_budget) {
        cgc_pause_stats pauses{};
        cgc_get_pause_stats(&pauses);
        s.longest_pause_ns = double(pauses.max_ns);
        s.pauses = pauses.count;
    }
    return s;
}

std::string check(const char *what, const Step &s, uint64_t expected) {
    if (s.freed == expected && (s.collected < 0 || uint64_t(s.collected) == expected)) return "";
    return std::string("cyclegc: ") + what + ": freed " + std::to_string(s.freed) + " (collection returned " +
           std::to_string(s.collected) + "), the graph says " + std::to_string(expected);
}

}  // namespace

void set_replay_pause_budget(uint64_t ns) { g_pause_budget = ns; }

ReplayResult replay_cyclegc(const Graph &g, const Model &m, const Aging &aging, bool fresh_memory) {
    ReplayResult r;
    r.ran = true;
    cgc_type *type = &node_type();
    int was_enabled = cgc_disable();  // only the replay's explicit collections run
    std::vector<cgc_object *> nodes(g.nodes, nullptr);
    std::vector<std::pair<cgc_object *, uint32_t>> roots;  // (node, external count)
    roots.reserve(m.roots);

    release_free_memory();
    // The first run of a graph starts from memory given back, so that pages
    // an earlier graph emptied do not hide from its RSS figure (the largest
    // over the runs). Later runs reuse the pages cyclegc kept, as CPython's
    // later runs reuse pymalloc's arenas (its later builds of a 40k-node
    // graph took 83-92 page faults against 565 for the first; cyclegc's 424
    // when its kept pages were given back before each run).
    if (fresh_memory) cgc_release_free_memory();
    // An aged heap's fillers: untracked slots (freed after the nodes).
    Fillers fillers([](size_t size) { return cgc_gc_raw_alloc(size, alignof(cgc_var_object)); }, cgc_gc_raw_free);
    if (!fillers.make(g, aging, sizeof(cgc_var_object))) {
        r.error = std::string("cyclegc: allocation of the aged heap's fillers failed: ") + cgc_error_message();
        cgc_error_clear();
        if (was_enabled) cgc_enable();
        return r;
    }
    double rss0 = rss_bytes(), malloc0 = malloc_in_use();
    uint64_t freed0 = g_freed;
    Timer build_timer;
    bool failed = false;
    for (uint32_t i = 0; i < g.nodes; ++i) {
        cgc_ssize_t k = g.degree(i);
        cgc_object *op = cgc_gc_new_var(type, k);
        if (!op) {
            failed = true;
            break;
        }
        cgc_object **it = items(op);
        for (cgc_ssize_t j = 0; j < k; ++j) it[j] = nullptr;
        cgc_gc_track(op);
        nodes[i] = op;
    }
    for (uint32_t i = 0; i < g.nodes && !failed; ++i) {
        cgc_object **it = items(nodes[i]);
        for (uint32_t j = g.offsets[i], slot = 0; j < g.offsets[i + 1]; ++j, ++slot) {
            cgc_object *target = nodes[g.targets[j]];
            cgc_incref(target);
            it[slot] = target;
        }
    }
    double build_ns = build_timer.ns();
    // Memory with every node built (before any is freed). (Not measured in
    // an aged heap, whose nodes fill holes.)
    r.rss_bytes = aging.on() ? -1 : (rss_bytes() - rss0) / g.nodes;
    // (Below zero when the build freed more malloc memory than it took,
    // e.g. a scratch array given back: none of it is the graph's.)
    r.malloc_bytes = std::max(0.0, (malloc_in_use() - malloc0) / g.nodes);
    Timer finish_timer;
    // Each node's first reference: a root's is its first external
    // reference; every other node's is dropped (acyclic garbage dies here).
    for (uint32_t i = 0; i < g.nodes && !failed; ++i) {
        uint32_t external = g.external[i];
        if (external > 0) {
            nodes[i]->ob_refcnt += external - 1;  // (the rest at once: a count may be in the billions)
            roots.emplace_back(nodes[i], external);
        } else {
            cgc_decref(nodes[i]);
        }
    }
    r.build.ns = build_ns + finish_timer.ns();
    r.build.freed = g_freed - freed0;
    if (failed) {
        r.error = std::string("cyclegc: allocation failed: ") + cgc_error_message();
        cgc_error_clear();
        // Objects made so far are leaked: the process is going to report and stop.
        if (was_enabled) cgc_enable();
        return r;
    }
    // Records a failed check; true if the check passed.
    auto ok = [&](std::string message) {
        if (r.error.empty()) r.error = std::move(message);
        return r.error.empty();
    };
    if (ok(check("build (acyclic garbage)", r.build, m.acyclic_garbage))) {
        r.collect_garbage = timed_collection();
        ok(check("full collection of the graph's garbage", r.collect_garbage, m.cyclic_garbage()));
    }
    if (r.error.empty()) {
        r.collect_live = timed_collection();
        ok(check("full collection with every root held", r.collect_live, 0));
    }
    if (r.error.empty()) {
        r.churn = timed([&] {
            for (const ChurnOp &op : m.churn) {
                cgc_object *target = nodes[op.target];
                cgc_object **slot = items(nodes[op.node]) + op.slot;
                cgc_incref(target);
                cgc_object *old = *slot;
                *slot = target;
                cgc_decref(old);
            }
            return int64_t(-1);
        });
        ok(check("churn (refcount frees)", r.churn, m.churn_freed_by_refcount));
    }
    if (r.error.empty()) {
        r.churn_collect = timed_collection();
        ok(check("full collection after the churn", r.churn_collect, m.churn_freed_by_collect));
    }
    if (r.error.empty()) {
        r.drop = timed([&] {
            for (auto &[op, external] : roots) {
                op->ob_refcnt -= external - 1;
                cgc_decref(op);
            }
            return int64_t(-1);
        });
        ok(check("dropping every root (refcount frees)", r.drop, m.drop_freed_by_refcount));
        r.drop_collect = timed_collection();
        ok(check("final full collection", r.drop_collect, m.drop_freed_by_collect));
    }
    if (r.error.empty() && g_freed - freed0 != g.nodes)
        r.error = "cyclegc: freed " + std::to_string(g_freed - freed0) + " nodes in all, the graph has " +
                  std::to_string(g.nodes);
    if (was_enabled) cgc_enable();
    return r;
}

}  // namespace cgcbench
