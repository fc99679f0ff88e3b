/* The library's lifetime: it works before Py_Initialize (CPython needs it,
 * cyclegc does not); Py_FinalizeEx runs final collections: cycles left
 * behind are freed (their deallocs run), also the garbage a finalizer
 * makes during finalization; objects still held are not freed; it returns
 * 0. Py_FinalizeEx requested from a finalizer during a collection is
 * refused (-1; native behaviour, CPython does not define this case). */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x11FEL
#define DEAD 0xDEADL

enum { PLAIN = 0, MAKE_GARBAGE = 1, FINALIZE_INSIDE = 2 };

typedef struct {
    PyObject_HEAD
    PyObject *ref;
    long canary;
    int mode;
} Node;

static long allocs = 0, deallocs = 0, finalizes = 0, bad = 0;
static int inner_finalize_result = 99;

static Node *node(int mode);

static int Node_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Node *)self)->ref);
    return 0;
}

static int Node_clear(PyObject *self) {
    Py_CLEAR(((Node *)self)->ref);
    return 0;
}

static void Node_finalize(PyObject *self) {
    Node *n = (Node *)self;
    finalizes++;
    if (n->canary != CANARY) bad++;
    if (n->mode == MAKE_GARBAGE) {
        /* New garbage made during the final collection. */
        Node *x = node(PLAIN);
        x->ref = Py_NewRef(x);
        Py_DECREF(x);
    } else if (n->mode == FINALIZE_INSIDE) {
        inner_finalize_result = Py_FinalizeEx();
    }
}

static void Node_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    PyObject_GC_UnTrack(self);
    Node *n = (Node *)self;
    if (n->canary != CANARY) bad++;
    n->canary = DEAD;
    Py_CLEAR(n->ref);
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "life.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Node_traverse,
    .tp_clear = Node_clear,
    .tp_finalize = Node_finalize,
};

static Node *node(int mode) {
    Node *n = PyObject_GC_New(Node, &NodeType);
    REQUIRE(n != NULL);
    n->ref = NULL;
    n->canary = CANARY;
    n->mode = mode;
    PyObject_GC_Track(n);
    allocs++;
    return n;
}

static Node *ring(int n, int first_mode) {
    Node *head = node(first_mode), *tail = head;
    for (int i = 1; i < n; i++) {
        Node *x = node(PLAIN);
        tail->ref = (PyObject *)x;
        tail = x;
    }
    tail->ref = Py_NewRef(head);
    return head;
}

static long live(void) { return allocs - deallocs; }

static void test_works_before_initialize(void) {
    /* No Py_Initialize yet: types, objects, collections all work. */
    REQUIRE_EQ_INT(PyType_Ready(&NodeType), 0);
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    Py_DECREF(ring(5, PLAIN));
    Node *kept = ring(2, PLAIN);
    CHECK_EQ_INT(PyGC_Collect(), 5);
    CHECK_EQ_INT(deallocs, 5);
    CHECK_EQ_INT(kept->canary, CANARY);
    Py_DECREF(kept);
    CHECK_EQ_INT(PyGC_Collect(), 2);
    CHECK_EQ_INT(live(), 0);
}

static void test_finalize_collects_cycles(void) {
    Py_Initialize();
    CHECK_EQ_INT(Py_IsInitialized(), 1);
    /* Garbage left for the end; collection disabled, as a program might. */
    PyGC_Disable();
    for (int i = 1; i <= 20; i++) Py_DECREF(ring(i, PLAIN));
    Py_DECREF(ring(3, MAKE_GARBAGE)); /* makes a new self-cycle when finalized */
    Node *held = ring(4, PLAIN);      /* still in use at the end */
    long garbage = 20 * 21 / 2 + 3;
    CHECK_EQ_INT(live(), garbage + 4);
    long finalized_before = finalizes;

    CHECK_EQ_INT(Py_FinalizeEx(), 0);
    /* The garbage, and what its finalizers made, is gone... */
    CHECK_EQ_INT(live(), 4);
    CHECK_EQ_INT(finalizes - finalized_before, garbage + 1);
    /* ...but not what is still referenced. */
    Node *x = held;
    for (int i = 0; i < 4; i++, x = (Node *)x->ref) CHECK_EQ_INT(x->canary, CANARY);
    CHECK(x == held);
    CHECK_EQ_INT(bad, 0);

    /* Still usable afterwards (cyclegc keeps no interpreter state). */
    PyGC_Enable();
    Py_DECREF(held);
    CHECK_EQ_INT(PyGC_Collect(), 4);
    CHECK_EQ_INT(live(), 0);
    CHECK_EQ_INT(Py_FinalizeEx(), 0); /* nothing left: still 0 */
}

static void test_finalize_from_finalizer_refused(void) {
    PyErr_Clear();
    Py_DECREF(ring(2, FINALIZE_INSIDE));
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(inner_finalize_result, -1);
    CHECK(PyErr_Occurred() != NULL);
    CHECK_CONTAINS(cgc_error_message(), "Py_FinalizeEx");
    PyErr_Clear();
    CHECK_EQ_INT(live(), 0);
    /* Py_Finalize (no result) also collects. */
    Py_DECREF(ring(3, PLAIN));
    Py_Finalize();
    CHECK_EQ_INT(live(), 0);
}

int main(void) {
    RUN(test_works_before_initialize);
    RUN(test_finalize_collects_cycles);
    RUN(test_finalize_from_finalizer_refused);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
