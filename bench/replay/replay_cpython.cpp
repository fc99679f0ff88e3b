// The CPython replay: the same graph, the same steps, as instances of a
// C extension type in an embedded CPython (the one CMake found, 3.11 on
// Debian 12). This file includes CPython's Python.h and never cyclegc's
// headers; cyclegc exports no Py* symbol, so both link into one binary.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "replay.hpp"
#include "timer.hpp"

#include <string>
#include <utility>
#include <vector>

namespace cgcbench {
namespace {

uint64_t g_freed = 0;

PyObject **items(PyObject *self) {
    return reinterpret_cast<PyObject **>(reinterpret_cast<char *>(self) + sizeof(PyVarObject));
}

int node_traverse(PyObject *self, visitproc visit, void *arg) {
    PyObject **it = items(self);
    for (Py_ssize_t i = 0, n = Py_SIZE(self); i < n; ++i) Py_VISIT(it[i]);
    return 0;
}

int node_clear(PyObject *self) {
    PyObject **it = items(self);
    for (Py_ssize_t i = 0, n = Py_SIZE(self); i < n; ++i) Py_CLEAR(it[i]);
    return 0;
}

// CPython needs the trashcan for deep structures (the 10M chain would
// overflow the C stack otherwise), as its own list and tuple types use.
void node_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_TRASHCAN_BEGIN(self, node_dealloc)
    node_clear(self);
    PyObject_GC_Del(self);
    ++g_freed;
    Py_TRASHCAN_END
}

PyTypeObject node_type_object = {PyVarObject_HEAD_INIT(nullptr, 0)};

bool initialise() {
    static bool ok = [] {
        PyConfig config;
        PyConfig_InitIsolatedConfig(&config);
        config.install_signal_handlers = 0;
        PyStatus status = Py_InitializeFromConfig(&config);
        PyConfig_Clear(&config);
        if (PyStatus_Exception(status)) return false;
        // The interpreter's own objects go to the permanent generation, so
        // that collections see only the replay's objects (as in cyclegc).
        if (PyRun_SimpleString("import gc; gc.freeze()") != 0) return false;
        PyTypeObject &t = node_type_object;
        t.tp_name = "cgcreplay.Node";
        t.tp_basicsize = sizeof(PyVarObject);
        t.tp_itemsize = sizeof(PyObject *);
        t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
        t.tp_dealloc = node_dealloc;
        t.tp_traverse = node_traverse;
        t.tp_clear = node_clear;
        t.tp_free = PyObject_GC_Del;
        if (PyType_Ready(&t) < 0) {
            PyErr_Print();
            return false;
        }
        return true;
    }();
    return ok;
}

// PyGC_Collect is a no-op while automatic collection is disabled.
int64_t full_collection() {
    PyGC_Enable();
    Py_ssize_t n = PyGC_Collect();
    PyGC_Disable();
    return n;
}

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

std::string check(const char *what, const Step &s, uint64_t expected) {
    if (s.freed == expected && (s.collected < 0 || uint64_t(s.collected) == expected)) return "";
    return std::string("cpython: ") + what + ": freed " + std::to_string(s.freed) + " (collection returned " +
           std::to_string(s.collected) + "), the graph says " + std::to_string(expected);
}

}  // namespace

bool cpython_available() { return initialise(); }

std::string cpython_version() {
    if (!initialise()) return "unavailable";
    std::string v = Py_GetVersion();
    return v.substr(0, v.find(' '));
}

ReplayResult replay_cpython(const Graph &g, const Model &m, const Aging &aging) {
    ReplayResult r;
    if (!initialise()) {
        r.error = "cpython: the embedded interpreter could not be initialised";
        return r;
    }
    r.ran = true;
    PyTypeObject *type = &node_type_object;
    int was_enabled = PyGC_Disable();
    std::vector<PyObject *> nodes(g.nodes, nullptr);
    std::vector<std::pair<PyObject *, uint32_t>> roots;
    roots.reserve(m.roots);

    release_free_memory();
    // An aged heap's fillers: pymalloc blocks of the size PyObject_GC_NewVar
    // asks for, the object and the GC header in front of it (PyGC_Head, two
    // words; not in 3.11's public headers).
    Fillers fillers(PyObject_Malloc, PyObject_Free);
    if (!fillers.make(g, aging, 2 * sizeof(void *) + sizeof(PyVarObject))) {
        r.error = "cpython: allocation of the aged heap's fillers failed";
        if (was_enabled) PyGC_Enable();
        return r;
    }
    double rss0 = rss_bytes();
    uint64_t freed0 = g_freed;
    Timer build_timer;
    bool failed = false;
    for (uint32_t i = 0; i < g.nodes; ++i) {
        Py_ssize_t k = g.degree(i);
        PyVarObject *op = PyObject_GC_NewVar(PyVarObject, type, k);
        if (!op) {
            failed = true;
            break;
        }
        PyObject **it = items(reinterpret_cast<PyObject *>(op));
        for (Py_ssize_t j = 0; j < k; ++j) it[j] = nullptr;  // CPython does not zero the items
        PyObject_GC_Track(op);
        nodes[i] = reinterpret_cast<PyObject *>(op);
    }
    for (uint32_t i = 0; i < g.nodes && !failed; ++i) {
        PyObject **it = items(nodes[i]);
        for (uint32_t j = g.offsets[i], slot = 0; j < g.offsets[i + 1]; ++j, ++slot) {
            PyObject *target = nodes[g.targets[j]];
            Py_INCREF(target);
            it[slot] = target;
        }
    }
    double build_ns = build_timer.ns();
    r.rss_bytes = aging.on() ? -1 : (rss_bytes() - rss0) / g.nodes;
    Timer finish_timer;
    for (uint32_t i = 0; i < g.nodes && !failed; ++i) {
        uint32_t external = g.external[i];
        if (external > 0) {
            Py_SET_REFCNT(nodes[i], Py_REFCNT(nodes[i]) + external - 1);  // (as in replay_cyclegc.cpp)
            roots.emplace_back(nodes[i], external);
        } else {
            Py_DECREF(nodes[i]);
        }
    }
    r.build.ns = build_ns + finish_timer.ns();
    r.build.freed = g_freed - freed0;
    if (failed) {
        PyErr_Print();
        r.error = "cpython: allocation failed";
        if (was_enabled) PyGC_Enable();
        return r;
    }
    auto ok = [&](std::string message) {
        if (r.error.empty()) r.error = std::move(message);
        return r.error.empty();
    };
    if (ok(check("build (acyclic garbage)", r.build, m.acyclic_garbage))) {
        r.collect_garbage = timed(full_collection);
        ok(check("full collection of the graph's garbage", r.collect_garbage, m.cyclic_garbage()));
    }
    if (r.error.empty()) {
        r.collect_live = timed(full_collection);
        ok(check("full collection with every root held", r.collect_live, 0));
    }
    if (r.error.empty()) {
        r.churn = timed([&] {
            for (const ChurnOp &op : m.churn) {
                PyObject *target = nodes[op.target];
                PyObject **slot = items(nodes[op.node]) + op.slot;
                Py_INCREF(target);
                PyObject *old = *slot;
                *slot = target;
                Py_DECREF(old);
            }
            return int64_t(-1);
        });
        ok(check("churn (refcount frees)", r.churn, m.churn_freed_by_refcount));
    }
    if (r.error.empty()) {
        r.churn_collect = timed(full_collection);
        ok(check("full collection after the churn", r.churn_collect, m.churn_freed_by_collect));
    }
    if (r.error.empty()) {
        r.drop = timed([&] {
            for (auto &[op, external] : roots) {
                Py_SET_REFCNT(op, Py_REFCNT(op) - (external - 1));
                Py_DECREF(op);
            }
            return int64_t(-1);
        });
        ok(check("dropping every root (refcount frees)", r.drop, m.drop_freed_by_refcount));
        r.drop_collect = timed(full_collection);
        ok(check("final full collection", r.drop_collect, m.drop_freed_by_collect));
    }
    if (r.error.empty() && g_freed - freed0 != g.nodes)
        r.error = "cpython: freed " + std::to_string(g_freed - freed0) + " nodes in all, the graph has " +
                  std::to_string(g.nodes);
    if (was_enabled) PyGC_Enable();
    return r;
}

}  // namespace cgcbench
