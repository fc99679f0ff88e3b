// Shared test types for the unit tests: a container type (Node) whose
// handlers count their calls and can run per-test hooks, a few variants of
// it, and a fixture that gives every test a fresh heap and captures errors.
#pragma once

#include "heap.hpp"

#include <cyclegc/cyclegc.h>
#include <cyclegc/cyclegc.hpp>
#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

// Checks that `haystack` (a std::string) contains `needle`.
#define EXPECT_CONTAINS(haystack, needle)                                                       \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                           \
        << "expected to find \"" << (needle) << "\" in \"" << (haystack) << "\""

namespace cgc_test {

namespace gci = cyclegc::internal;

// A container with two owned references and an id (for the event log).
struct Node {
    cgc_object ob_base;
    cgc_object *next;
    cgc_object *extra;
    int id;
};

struct Counters {
    int traversed = 0;    // tp_traverse calls
    int cleared = 0;      // tp_clear calls (node_dealloc does not call tp_clear)
    int finalized = 0;    // tp_finalize calls
    int deallocated = 0;  // node_dealloc calls that freed the object
    int dealloc_depth = 0;      // current nesting of node_dealloc
    int max_dealloc_depth = 0;  // deepest nesting seen
};

inline Counters counters;
// When true, handlers append "F<id>", "C<id>", "D<id>" to `events`.
inline bool log_events = false;
inline std::vector<std::string> events;
// Per-test hooks, called by the handlers (before they do their own work).
inline std::function<void(Node *)> on_traverse;
inline std::function<void(Node *)> on_finalize;
inline std::function<void(Node *)> on_clear;
inline std::function<void(Node *)> on_dealloc;

inline void reset_node_state() {
    counters = Counters{};
    log_events = false;
    events.clear();
    on_traverse = nullptr;
    on_finalize = nullptr;
    on_clear = nullptr;
    on_dealloc = nullptr;
}

inline Node *as_node(cgc_object *op) { return reinterpret_cast<Node *>(op); }
inline cgc_object *obj(Node *node) { return &node->ob_base; }
inline cgc_object *obj(cgc_type *type) { return reinterpret_cast<cgc_object *>(type); }

inline void log_event(char what, const Node *node) {
    if (log_events) events.push_back(what + std::to_string(node->id));
}

inline int node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    Node *node = as_node(self);
    ++counters.traversed;
    if (on_traverse) on_traverse(node);
    if (node->next)
        if (int result = visit(node->next, arg)) return result;
    if (node->extra)
        if (int result = visit(node->extra, arg)) return result;
    return 0;
}

// Drops both references, setting the fields to NULL first (Py_CLEAR).
inline void drop_refs(Node *node) {
    cgc_object *next = node->next;
    cgc_object *extra = node->extra;
    node->next = nullptr;
    node->extra = nullptr;
    cgc_xdecref(next);
    cgc_xdecref(extra);
}

inline int node_clear(cgc_object *self) {
    Node *node = as_node(self);
    ++counters.cleared;
    log_event('C', node);
    if (on_clear) on_clear(node);
    drop_refs(node);
    return 0;
}

// A variable-size container: ob_size owned references (the items).
struct VarNode {
    cgc_var_object ob_base;
    cgc_object *items[1];
};

inline int var_node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    auto *v = reinterpret_cast<VarNode *>(self);
    for (cgc_ssize_t i = 0; i < v->ob_base.ob_size; ++i)
        if (v->items[i])
            if (int result = visit(v->items[i], arg)) return result;
    return 0;
}

inline int var_node_clear(cgc_object *self) {
    auto *v = reinterpret_cast<VarNode *>(self);
    for (cgc_ssize_t i = 0; i < v->ob_base.ob_size; ++i) {
        cgc_object *old = v->items[i];
        v->items[i] = nullptr;
        cgc_xdecref(old);
    }
    return 0;
}

inline void node_finalize(cgc_object *self) {
    Node *node = as_node(self);
    ++counters.finalized;
    log_event('F', node);
    if (on_finalize) on_finalize(node);
}

// Untracks, counts, drops the references and calls tp_free.
inline void node_free(cgc_object *self) {
    cgc_gc_untrack(self);
    Node *node = as_node(self);
    ++counters.deallocated;
    log_event('D', node);
    if (on_dealloc) on_dealloc(node);
    if (++counters.dealloc_depth > counters.max_dealloc_depth)
        counters.max_dealloc_depth = counters.dealloc_depth;
    drop_refs(node);
    --counters.dealloc_depth;
    self->ob_type->tp_free(self);
}

// A static type's tp_dealloc written as CPython documents it: finalize
// (once) if the type has a finalizer, untrack, drop references, tp_free.
// It does not touch the type's reference count (static types have none).
inline void node_dealloc(cgc_object *self) {
    if (self->ob_type->tp_finalize && cgc_call_finalizer_from_dealloc(self) < 0) return;  // resurrected
    node_free(self);
}

// tp_dealloc for heap types: as node_dealloc, then drop the type.
inline void heap_node_dealloc(cgc_object *self) {
    cgc_type *type = self->ob_type;
    if (type->tp_finalize && cgc_call_finalizer_from_dealloc(self) < 0) return;
    node_free(self);
    cgc_decref(obj(type));
}

// tp_traverse for instances of heap types: visits the type too (CPython 3.9+).
inline int heap_node_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    if (int result = visit(obj(self->ob_type), arg)) return result;
    return node_traverse(self, visit, arg);
}

inline cgc_type make_node_type(const char *name, bool with_finalizer, bool with_clear,
                               unsigned long extra_flags = 0) {
    cgc_type type{};
    type.tp_name = name;
    type.tp_basicsize = sizeof(Node);
    type.tp_flags = CGC_TPFLAGS_HAVE_GC | extra_flags;
    type.tp_dealloc = node_dealloc;
    type.tp_traverse = node_traverse;
    type.tp_clear = with_clear ? node_clear : nullptr;
    type.tp_finalize = with_finalizer ? node_finalize : nullptr;
    return type;
}

inline cgc_type node_type = make_node_type("test.Node", false, true);
inline cgc_type final_node_type = make_node_type("test.FinalNode", true, true);
inline cgc_type noclear_node_type = make_node_type("test.NoClearNode", false, false);

// A new Node (reference count 1), tracked unless `track` is false.
inline Node *new_node(cgc_type *type = &node_type, int id = 0, bool track = true) {
    auto *node = as_node(cgc_gc_new(type));
    if (!node) return nullptr;
    node->id = id;
    if (track) cgc_gc_track(node);
    return node;
}
inline Node *new_node(int id) { return new_node(&node_type, id); }

// from->next = to, a new reference; the previous one is dropped.
inline void link_next(Node *from, Node *to) {
    cgc_object *old = from->next;
    from->next = to ? obj(to) : nullptr;
    if (to) cgc_incref(obj(to));
    cgc_xdecref(old);
}
inline void link_extra(Node *from, cgc_object *to) {
    cgc_object *old = from->extra;
    from->extra = to;
    cgc_xincref(to);
    cgc_xdecref(old);
}

// A garbage cycle of one: allocated, pointing to itself, and dropped.
inline Node *make_garbage_self_cycle(cgc_type *type = &node_type, int id = 0) {
    Node *node = new_node(type, id);
    link_next(node, node);
    cgc_decref(obj(node));
    return node;  // borrowed: valid until the next collection
}

// A garbage cycle of two (a <-> b): allocated, linked and dropped.
inline void make_garbage_pair(int id_a, int id_b, cgc_type *type = &node_type) {
    Node *a = new_node(type, id_a);
    Node *b = new_node(type, id_b);
    link_next(a, b);
    link_next(b, a);
    cgc_decref(obj(a));
    cgc_decref(obj(b));
}

// ---- Introspection through the internal headers --------------------------

inline gci::Heap &heap_state() { return gci::current_heap(); }

// The generation of a tracked object (3: permanent), or -1 (untracked).
inline int generation_of(const void *op) {
    const gci::GcMeta &meta = gci::meta_of(op);
    if (!(meta.flags & gci::kTracked)) return -1;
    return meta.generation == gci::kPermanent ? CGC_NUM_GENERATIONS : meta.generation;
}

inline cgc_ssize_t tracked_in(int generation) {
    gci::Heap &heap = heap_state();
    if (generation < 2) return static_cast<cgc_ssize_t>(heap.young_count(generation));
    cgc_ssize_t count = 0;
    for_each_tracked(heap.space, [&](cgc_object *, gci::GcMeta &meta) {
        if (meta.generation == generation) ++count;
    });
    return count;
}
inline cgc_ssize_t tracked_total() {
    cgc_ssize_t total = 0;
    for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) total += tracked_in(g);
    return total + tracked_in(gci::kPermanent);
}

inline cgc_generation_stats stats_of(int generation) {
    cgc_generation_stats stats{};
    cgc_get_stats(generation, &stats);
    return stats;
}

// ---- Errors ---------------------------------------------------------------

struct ReportedError {
    cgc_error_kind kind;
    std::string message;
};

inline std::string describe(const std::vector<ReportedError> &errors) {
    std::string text;
    for (const auto &error : errors)
        text += "  [kind " + std::to_string(error.kind) + "] " + error.message + "\n";
    return text;
}

// ---- Fixture --------------------------------------------------------------

// Every test runs on a fresh heap of its own (automatic collection off, so
// that only the test's explicit collections run), with errors captured.
// Afterwards: no error may be left unchecked, and a full collection must
// leave no tracked object behind (objects a test leaks fail it).
class HeapFixture : public ::testing::Test {
  protected:
    void SetUp() override {
        reset_node_state();
        heap_ = cgc_heap_new();
        ASSERT_NE(heap_, nullptr);
        cgc_heap_set_current(heap_);
        cgc_set_error_hook(&HeapFixture::capture, this);
        cgc_disable();
    }

    void TearDown() override {
        on_traverse = nullptr;
        on_finalize = nullptr;
        on_clear = nullptr;
        on_dealloc = nullptr;
        cgc_collect(CGC_NUM_GENERATIONS - 1);
        cgc_ssize_t left = tracked_total();
        EXPECT_EQ(left, 0) << "the test left tracked objects behind";
        EXPECT_TRUE(errors_.empty()) << "unexpected errors:\n" << describe(errors_);
        cgc_heap_set_current(nullptr);
        if (left == 0) cgc_heap_delete(heap_);  // else it would be refused (and leaked)
        reset_node_state();
    }

    static void capture(cgc_error_kind kind, const char *message, void *context) {
        static_cast<HeapFixture *>(context)->errors_.push_back({kind, message});
    }

    // The errors reported since the last call (and forget them).
    std::vector<ReportedError> take_errors() {
        std::vector<ReportedError> taken;
        taken.swap(errors_);
        return taken;
    }

    // Takes the errors and checks there is exactly one, of `kind`, whose
    // message contains every one of `parts`.
    void expect_one_error(cgc_error_kind kind, std::initializer_list<const char *> parts) {
        std::vector<ReportedError> errors = take_errors();
        ASSERT_EQ(errors.size(), 1u) << describe(errors);
        EXPECT_EQ(errors[0].kind, kind) << errors[0].message;
        for (const char *part : parts) EXPECT_CONTAINS(errors[0].message, part);
    }

    cgc_heap *heap_ = nullptr;
    std::vector<ReportedError> errors_;
};

// For the tests of the C++ API, on the default heap: a full collection
// before and after each test, and automatic collection off in between (as
// it was restored afterwards).
class CppFixture : public ::testing::Test {
  protected:
    void SetUp() override {
        cyclegc::collect();
        was_enabled_ = cyclegc::disable();
    }
    void TearDown() override {
        cyclegc::collect();
        if (was_enabled_) cyclegc::enable();
    }
    bool was_enabled_ = true;
};

}  // namespace cgc_test
