/* The C loops of the micro-benchmarks, written once against CPython's C API
 * names. Included by loops_cyclegc.c (after <cyclegc/Python.h>) and by
 * loops_cpython.c (after CPython's own <Python.h>), with LOOP_PREFIX naming
 * the functions: the same source, compiled against both.
 *
 * Objects cross to the C++ side as void*: that side includes neither
 * Python.h. */

#define LOOP_CAT2(a, b) a##_##b
#define LOOP_CAT(a, b) LOOP_CAT2(a, b)
#define LOOP(name) LOOP_CAT(LOOP_PREFIX, name)

/* Keeps the compiler from merging or dropping reference count updates. */
#define LOOP_BARRIER(p) __asm__ __volatile__("" : : "r"(p) : "memory")

typedef struct {
    PyObject_HEAD
    PyObject *a;
    PyObject *b;
} BenchNode;

static int BenchNode_traverse(PyObject *op, visitproc visit, void *arg) {
    BenchNode *self = (BenchNode *)op;
    Py_VISIT(self->a);
    Py_VISIT(self->b);
    return 0;
}

static int BenchNode_clear(PyObject *op) {
    BenchNode *self = (BenchNode *)op;
    Py_CLEAR(self->a);
    Py_CLEAR(self->b);
    return 0;
}

/* No trashcan: the structures here are at most log2(n) deep. */
static void BenchNode_dealloc(PyObject *op) {
    PyObject_GC_UnTrack(op);
    BenchNode_clear(op);
    PyObject_GC_Del(op);
}

static PyTypeObject BenchNodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "bench.Node",
    .tp_basicsize = sizeof(BenchNode),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = BenchNode_dealloc,
    .tp_traverse = BenchNode_traverse,
    .tp_clear = BenchNode_clear,
};

/* CPython's PyObject_GC_New does not zero the fields. */
static BenchNode *new_node(void) {
    BenchNode *node = PyObject_GC_New(BenchNode, &BenchNodeType);
    if (!node) abort();
    node->a = NULL;
    node->b = NULL;
    return node;
}

static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int LOOP(ready)(void) { return PyType_Ready(&BenchNodeType); }

/* Allocate, track and release n objects that hold no references. */
void LOOP(acyclic)(long n) {
    for (long i = 0; i < n; ++i) {
        BenchNode *node = new_node();
        PyObject_GC_Track(node);
        Py_DECREF(node);
    }
}

/* Make n short-lived 2-cycles (a <-> b) and drop them: only the collector
 * frees them, in the automatic collections the allocations trigger. */
void LOOP(cycles)(long n) {
    for (long i = 0; i < n; ++i) {
        BenchNode *a = new_node();
        BenchNode *b = new_node();
        Py_INCREF(b);
        a->a = (PyObject *)b;
        Py_INCREF(a);
        b->a = (PyObject *)a;
        PyObject_GC_Track(a);
        PyObject_GC_Track(b);
        Py_DECREF(a);
        Py_DECREF(b);
    }
}

/* n garbage 2-cycles whose members also refer to random objects of `old`:
 * what a young collection finds when young objects point into the old heap. */
void LOOP(cycles_into)(void **old, long old_count, long n, uint64_t *seed) {
    for (long i = 0; i < n; ++i) {
        BenchNode *a = new_node();
        BenchNode *b = new_node();
        Py_INCREF(b);
        a->a = (PyObject *)b;
        Py_INCREF(a);
        b->a = (PyObject *)a;
        a->b = (PyObject *)old[next_random(seed) % (uint64_t)old_count];
        b->b = (PyObject *)old[next_random(seed) % (uint64_t)old_count];
        Py_INCREF(a->b);
        Py_INCREF(b->b);
        PyObject_GC_Track(a);
        PyObject_GC_Track(b);
        Py_DECREF(a);
        Py_DECREF(b);
    }
}

/* A binary tree of n tracked objects (node i holds 2i+1 and 2i+2), the
 * array of them (borrowed), node 0 holding the only outside reference. */
void **LOOP(build_tree)(long n) {
    void **nodes = (void **)malloc(sizeof(void *) * (size_t)(n > 0 ? n : 1));
    if (!nodes) abort();
    for (long i = 0; i < n; ++i) {
        BenchNode *node = new_node();
        PyObject_GC_Track(node);
        nodes[i] = node;
    }
    for (long i = 0; i < n; ++i) {
        BenchNode *node = (BenchNode *)nodes[i];
        if (2 * i + 1 < n) node->a = Py_NewRef((PyObject *)nodes[2 * i + 1]);
        if (2 * i + 2 < n) node->b = Py_NewRef((PyObject *)nodes[2 * i + 2]);
    }
    for (long i = 1; i < n; ++i) Py_DECREF((PyObject *)nodes[i]);
    return nodes;
}

void LOOP(release_tree)(void **nodes, long n) {
    if (n > 0) Py_DECREF((PyObject *)nodes[0]);
    free(nodes);
}

void *LOOP(new_object)(void) {
    BenchNode *node = new_node();
    PyObject_GC_Track(node);
    return node;
}

void LOOP(release_object)(void *op) { Py_DECREF((PyObject *)op); }

void LOOP(incref_decref)(void *op, long n) {
    PyObject *o = (PyObject *)op;
    for (long i = 0; i < n; ++i) {
        Py_INCREF(o);
        LOOP_BARRIER(o);
        Py_DECREF(o);
        LOOP_BARRIER(o);
    }
}
