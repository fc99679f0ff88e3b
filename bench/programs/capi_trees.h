/* The C programs' tree node and runtime, written once to CPython's
 * documented C API and compiled twice: against <cyclegc/Python.h>
 * (variant "c-cyclegc") and, with PROGRAM_CPYTHON defined, against the
 * embedded CPython's own <Python.h> ("c-cpython"). Automatic collection is
 * on with its default thresholds in both.
 *
 * A program defines TREE_PAYLOAD (extra plain fields of the node, possibly
 * empty) before including this file. */
#ifndef CYCLEGC_BENCH_PROGRAMS_CAPI_TREES_H
#define CYCLEGC_BENCH_PROGRAMS_CAPI_TREES_H

#ifdef PROGRAM_CPYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define PROGRAM_VARIANT "c-cpython"
#else
#include <cyclegc/Python.h>
#define PROGRAM_VARIANT "c-cyclegc"
#endif

#include "result.h"

#include <stddef.h>

typedef struct Node {
    PyObject_HEAD
    struct Node *left;
    struct Node *right;
    TREE_PAYLOAD
} Node;

static int Node_traverse(PyObject *op, visitproc visit, void *arg) {
    Node *self = (Node *)op;
    Py_VISIT(self->left);
    Py_VISIT(self->right);
    return 0;
}

static int Node_clear(PyObject *op) {
    Node *self = (Node *)op;
    Py_CLEAR(self->left);
    Py_CLEAR(self->right);
    return 0;
}

/* No trashcan: the trees are at most a few dozen levels deep. */
static void Node_dealloc(PyObject *op) {
    PyObject_GC_UnTrack(op);
    Node_clear(op);
    PyObject_GC_Del(op);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "programs.Node",
    .tp_basicsize = sizeof(Node),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = Node_dealloc,
    .tp_traverse = Node_traverse,
    .tp_clear = Node_clear,
};

/* A tracked node that owns the two (new) references it is given. */
static Node *new_node(Node *left, Node *right) {
    Node *node = PyObject_GC_New(Node, &NodeType);
    if (!node) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    memset((char *)node + offsetof(Node, left), 0, sizeof(Node) - offsetof(Node, left));
    node->left = left;
    node->right = right;
    PyObject_GC_Track(node);
    return node;
}

/* A perfect tree built bottom-up (children first). */
static Node *bottom_up(int depth) {
    if (depth == 0) return new_node(NULL, NULL);
    Node *left = bottom_up(depth - 1);
    Node *right = bottom_up(depth - 1);
    return new_node(left, right);
}

/* Its node count. */
static long check(const Node *node) {
    return 1 + (node->left ? check(node->left) : 0) + (node->right ? check(node->right) : 0);
}

#ifdef PROGRAM_CPYTHON
/* Collection pauses, timed by a gc.callbacks entry (3.11's info has no
 * duration). */
static const char pause_timer[] =
    "import gc, time\n"
    "_pauses = {'start': 0, 'longest': 0, 'total': 0}\n"
    "def _time_pause(phase, info, p=_pauses, now=time.perf_counter_ns):\n"
    "    if phase == 'start':\n"
    "        p['start'] = now()\n"
    "        return\n"
    "    pause = now() - p['start']\n"
    "    p['total'] += pause\n"
    "    if pause > p['longest']:\n"
    "        p['longest'] = pause\n"
    "gc.callbacks.append(_time_pause)\n";

static int runtime_start(void) {
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status) || PyRun_SimpleString(pause_timer) != 0) return -1;
    return PyType_Ready(&NodeType);
}

static double main_number(const char *dict, const char *key) {
    PyObject *d = PyDict_GetItemString(PyModule_GetDict(PyImport_AddModule("__main__")), dict);
    PyObject *value = d ? PyDict_GetItemString(d, key) : NULL;
    return value ? PyFloat_AsDouble(value) : -1;
}

/* gc.get_stats() and the pause timer. */
static void runtime_report(program_result *r) {
    PyObject *stats = PyRun_String("__import__('gc').get_stats()", Py_eval_input,
                                   PyModule_GetDict(PyImport_AddModule("__main__")), NULL);
    if (!stats) {
        PyErr_Print();
        return;
    }
    r->generations = 3;
    for (int g = 0; g < 3; ++g)
        r->collections[g] = PyLong_AsUnsignedLongLong(PyDict_GetItemString(PyList_GetItem(stats, g), "collections"));
    Py_DECREF(stats);
    r->max_pause_ns = main_number("_pauses", "longest");
    r->gc_ns = main_number("_pauses", "total");
}
#else
static int runtime_start(void) { return PyType_Ready(&NodeType); }

static void runtime_report(program_result *r) {
    r->generations = 3;
    r->max_pause_ns = 0;
    r->gc_ns = 0;
    for (int g = 0; g < 3; ++g) {
        cgc_generation_stats stats;
        cgc_get_stats(g, &stats);
        r->collections[g] = stats.collections;
        if ((double)stats.max_pause_ns > r->max_pause_ns) r->max_pause_ns = (double)stats.max_pause_ns;
        r->gc_ns += (double)stats.total_ns;
    }
}
#endif

/* The C++ programs' command line: PROGRAM VARIANT [SIZES...] or
 * PROGRAM --variants. Returns -1 to go on, else the exit status. */
static int runtime_arguments(int argc, char **argv) {
    program_start();
    if (argc < 2 || strcmp(argv[1], "--variants") == 0) {
        printf("%s\n", PROGRAM_VARIANT);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], PROGRAM_VARIANT) != 0) {
        fprintf(stderr, "%s: no variant \"%s\" (--variants lists them)\n", argv[0], argv[1]);
        return 2;
    }
    if (runtime_start() < 0) {
        fprintf(stderr, "%s: the runtime did not start\n", argv[0]);
        return 1;
    }
    return -1;
}

#endif
