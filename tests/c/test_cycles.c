/* Cycle detection: cycles of 1, 2 and 1000 objects, a chain hanging off a
 * cycle, externally held cycles (survive intact, freed once released),
 * references from untracked containers (count as external), cycles where
 * only some types have tp_clear, and a cycle where none has (not freed, as
 * in CPython). Exact collect() results follow CPython 3.12, whose count
 * includes unreachable objects that could not be freed. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x0DDBA11L
#define DEAD 0xDEADL

/* ---- Node: a GC container with two references ------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *a, *b;
    long canary;
    long id;
} Node;

static long deallocs = 0;        /* Node and NoClear deallocations */
static long bad_deallocs = 0;    /* deallocations of an object not intact (twice, ...) */

static int Node_traverse(PyObject *self, visitproc visit, void *arg) {
    Node *n = (Node *)self;
    Py_VISIT(n->a);
    Py_VISIT(n->b);
    return 0;
}

static int Node_clear(PyObject *self) {
    Node *n = (Node *)self;
    Py_CLEAR(n->a);
    Py_CLEAR(n->b);
    return 0;
}

static void Node_dealloc(PyObject *self) {
    Node *n = (Node *)self;
    PyObject_GC_UnTrack(self);
    if (n->canary != CANARY) bad_deallocs++;
    n->canary = DEAD;
    Py_CLEAR(n->a);
    Py_CLEAR(n->b);
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cycles.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Node_traverse,
    .tp_clear = Node_clear,
};

/* Same layout, tp_clear = NULL (an "immutable" container). */
static PyTypeObject NoClearType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cycles.NoClear",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Node_traverse,
    .tp_clear = NULL,
};

static long next_id = 0;

/* A new tracked node; `a` and `b` are stolen references (or NULL). */
static Node *node_of(PyTypeObject *type, PyObject *a, PyObject *b) {
    Node *n = PyObject_GC_New(Node, type);
    REQUIRE(n != NULL);
    n->a = a;
    n->b = b;
    n->canary = CANARY;
    n->id = next_id++;
    PyObject_GC_Track(n);
    return n;
}
static Node *node(PyObject *a, PyObject *b) { return node_of(&NodeType, a, b); }

/* A ring of n nodes linked through `a`; returns a new reference to the first. */
static Node *ring(PyTypeObject *type, int n) {
    Node *head = node_of(type, NULL, NULL), *tail = head;
    for (int i = 1; i < n; i++) {
        Node *x = node_of(type, NULL, NULL);
        tail->a = (PyObject *)x;
        tail = x;
    }
    tail->a = Py_NewRef(head);
    return head;
}

/* Walks a ring through `a`: the number of intact nodes before returning to
 * the start, or -1 if a node is not intact. */
static long ring_length(Node *start) {
    long n = 0;
    Node *x = start;
    do {
        if (x == NULL || x->canary != CANARY) return -1;
        n++;
        x = (Node *)x->a;
    } while (x != start && n < 10000000);
    return n;
}

static void start(void) {
    gc_collect();
    deallocs = 0;
}

/* ------------------------------------------------------------------------- */

static void test_self_cycle(void) {
    start();
    Node *x = node(NULL, NULL);
    x->a = Py_NewRef(x);
    CHECK_EQ_INT(Py_REFCNT(x), 2);
    Py_DECREF(x);
    CHECK_EQ_INT(deallocs, 0); /* refcounting alone cannot free it */
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, 1);
    CHECK_EQ_INT(gc_collect(), 0);
}

static void test_two_cycle(void) {
    start();
    Node *x = node(NULL, NULL);
    Node *y = node(Py_NewRef(x), NULL);
    x->a = (PyObject *)y;
    Py_DECREF(x);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, 2);
}

static void test_big_ring(void) {
    start();
    /* Automatic collection stays on: building the ring crosses the
     * generation-0 threshold, so its members end up in several generations. */
    Node *head = ring(&NodeType, 1000);
    CHECK_EQ_INT(ring_length(head), 1000);
    CHECK_EQ_INT(deallocs, 0);
    Py_DECREF(head);
    CHECK_EQ_INT(gc_collect(), 1000);
    CHECK_EQ_INT(deallocs, 1000);
    CHECK_EQ_INT(gc_collect(), 0);
}

static void test_chain_off_cycle(void) {
    start();
    /* A 3-cycle whose first member also holds a 10-node acyclic chain, whose
     * last node holds a 2-cycle. */
    Node *tail_cycle = ring(&NodeType, 2);
    PyObject *chain = (PyObject *)tail_cycle;
    for (int i = 0; i < 10; i++) chain = (PyObject *)node(chain, NULL);
    Node *head = ring(&NodeType, 3);
    head->b = chain;
    Py_DECREF(head);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 3 + 10 + 2);
    CHECK_EQ_INT(deallocs, 15);
    CHECK_EQ_INT(bad_deallocs, 0);
}

static void test_held_cycle_survives(void) {
    start();
    Node *head = ring(&NodeType, 10);
    /* Hold a middle member only. */
    Node *middle = (Node *)((Node *)head->a)->a;
    Py_INCREF(middle);
    Py_DECREF(head);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(ring_length(middle), 10);
    /* Several collections, all generations: still there. */
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(ring_length(middle), 10);
    CHECK_EQ_INT(Py_REFCNT(middle), 2);
    Py_DECREF(middle);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 10);
    CHECK_EQ_INT(deallocs, 10);
}

static void test_reachable_from_garbage(void) {
    start();
    /* A garbage 4-cycle whose members all point to `kept` (held) and to a
     * held 3-ring: the garbage goes, what we hold stays, with its count
     * back to our references only. */
    Node *kept = node(NULL, NULL);
    Node *kept_ring = ring(&NodeType, 3);
    Node *garbage = ring(&NodeType, 4);
    Node *x = garbage;
    for (int i = 0; i < 4; i++, x = (Node *)x->a) x->b = Py_NewRef(i % 2 ? (PyObject *)kept : (PyObject *)kept_ring);
    CHECK_EQ_INT(Py_REFCNT(kept), 3);
    Py_DECREF(garbage);
    CHECK_EQ_INT(gc_collect(), 4);
    CHECK_EQ_INT(deallocs, 4);
    REQUIRE_EQ_INT(Py_REFCNT(kept), 1);
    CHECK_EQ_INT(kept->canary, CANARY);
    CHECK_EQ_INT(ring_length(kept_ring), 3);
    CHECK_EQ_INT(Py_REFCNT(kept_ring), 2); /* ours and the ring's */
    Py_DECREF(kept);
    CHECK_EQ_INT(deallocs, 5);
    Py_DECREF(kept_ring);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(deallocs, 8);
}

static void test_partly_held_garbage(void) {
    start();
    /* A 2-cycle holding a chain of 3; we hold the end of the chain. */
    Node *end = node(NULL, NULL);
    Node *mid = node(Py_NewRef(end), NULL);
    Node *first = node((PyObject *)mid, NULL);
    Node *cyc = ring(&NodeType, 2);
    cyc->b = (PyObject *)first;
    Py_DECREF(cyc);
    CHECK_EQ_INT(gc_collect(), 2 + 2);
    CHECK_EQ_INT(deallocs, 4);
    REQUIRE_EQ_INT(Py_REFCNT(end), 1);
    CHECK_EQ_INT(end->canary, CANARY);
    Py_DECREF(end);
    CHECK_EQ_INT(deallocs, 5);
}

static void test_untracked_container_keeps_cycle(void) {
    start();
    Node *cyc = ring(&NodeType, 3);
    /* An untracked container holds a member: the collector cannot see that
     * reference, so it counts as external. */
    Node *holder = PyObject_GC_New(Node, &NodeType);
    REQUIRE(holder != NULL);
    holder->a = (PyObject *)cyc; /* steals our reference */
    holder->b = NULL;
    holder->canary = CANARY;
    CHECK_EQ_INT(PyObject_GC_IsTracked(holder), 0);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(ring_length(cyc), 3);
    /* Releasing the holder makes the cycle garbage. */
    Py_DECREF(holder);
    CHECK_EQ_INT(deallocs, 1);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(deallocs, 4);

    /* An untracked member inside a garbage cycle hides the cycle (CPython
     * leaks such a cycle too): a -> u -> b -> a with u untracked. */
    start();
    Node *a = node(NULL, NULL);
    Node *u = PyObject_GC_New(Node, &NodeType);
    REQUIRE(u != NULL);
    u->canary = CANARY;
    u->b = NULL;
    Node *b = node(Py_NewRef(a), NULL);
    u->a = (PyObject *)b;
    a->a = (PyObject *)u;
    Py_DECREF(a);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(ring_length(a), 3);
    /* Tracking u makes the cycle visible. */
    PyObject_GC_Track(u);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(deallocs, 3);
}

static void test_only_some_have_tp_clear(void) {
    /* Whichever member the collector clears first, breaking the cycle at
     * the one that has tp_clear frees all of them. */
    for (int order = 0; order < 2; order++) {
        start();
        Node *x, *y;
        if (order == 0) {
            x = node_of(&NoClearType, NULL, NULL); /* tracked first */
            y = node(Py_NewRef(x), NULL);
        } else {
            y = node(NULL, NULL);
            x = node_of(&NoClearType, Py_NewRef(y), NULL);
            y->a = Py_NewRef(x);
            Py_DECREF(y);
        }
        if (order == 0) x->a = (PyObject *)y;
        Py_DECREF(x);
        CHECK_EQ_INT(gc_collect(), 2);
        CHECK_EQ_INT(deallocs, 2);
    }

    /* A ring of 21 where only every third node has tp_clear. */
    start();
    Node *head = node(NULL, NULL), *tail = head;
    for (int i = 1; i < 21; i++) {
        Node *x = node_of(i % 3 ? &NoClearType : &NodeType, NULL, NULL);
        tail->a = (PyObject *)x;
        tail = x;
    }
    tail->a = Py_NewRef(head);
    Py_DECREF(head);
    CHECK_EQ_INT(gc_collect(), 21);
    CHECK_EQ_INT(deallocs, 21);
    CHECK_EQ_INT(gc_collect(), 0);
}

static void test_no_tp_clear_not_freed(void) {
    start();
    Node *x = node_of(&NoClearType, NULL, NULL);
    Node *y = node_of(&NoClearType, Py_NewRef(x), NULL);
    x->a = (PyObject *)y;
    Py_DECREF(x);
    /* Nothing can break the cycle: they stay alive and intact, are not
     * counted as collected (CPython counts them: collect() returns 2), and
     * this is reported. */
    cgc_error_clear();
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    CHECK_CONTAINS(cgc_error_message(), "cycles.NoClear");
    CHECK_CONTAINS(cgc_error_message(), "still alive after their cycle was cleared");
    cgc_error_clear();
    REQUIRE_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(x->canary, CANARY);
    CHECK_EQ_INT(y->canary, CANARY);
    CHECK(x->a == (PyObject *)y && y->a == (PyObject *)x);
    CHECK_EQ_INT(Py_REFCNT(x), 1);
    CHECK_EQ_INT(Py_REFCNT(y), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(x), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(y), 1);
    CHECK_EQ_INT(gc_collect(), 0); /* found again (and reported) every time */
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    cgc_error_clear();
    REQUIRE_EQ_INT(deallocs, 0);
    /* Break it by hand. */
    Py_CLEAR(x->a); /* frees y, which frees x */
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(gc_collect(), 0);
}

static void test_old_generation_reference(void) {
    /* An object in the oldest generation refers to a young cycle: a
     * generation-0 collection (native cgc_collect) must keep the cycle. */
    start();
    Node *old = ring(&NodeType, 2); /* a cycle we hold for now */
    gc_collect(); /* moves it to the oldest generation */
    Py_DECREF(old); /* now old garbage */
    Node *young = ring(&NodeType, 3);
    old->b = (PyObject *)young; /* steals our reference */
    CHECK_EQ_INT(cgc_collect(0), 0);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(ring_length(young), 3);
    CHECK_EQ_INT(cgc_collect(1), 0);
    CHECK_EQ_INT(ring_length(young), 3);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 5);
    CHECK_EQ_INT(deallocs, 5);
}

static void test_many_small_cycles(void) {
    start();
    PyGC_Disable();
    for (int i = 0; i < 5000; i++) {
        Node *r = ring(&NodeType, 1 + i % 4);
        Py_DECREF(r);
    }
    long expected = 0;
    for (int i = 0; i < 5000; i++) expected += 1 + i % 4;
    CHECK_EQ_INT(deallocs, 0);
    PyGC_Enable();
    CHECK_EQ_INT(PyGC_Collect(), expected);
    CHECK_EQ_INT(deallocs, expected);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&NodeType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&NoClearType), 0);
    RUN(test_self_cycle);
    RUN(test_two_cycle);
    RUN(test_big_ring);
    RUN(test_chain_off_cycle);
    RUN(test_held_cycle_survives);
    RUN(test_reachable_from_garbage);
    RUN(test_partly_held_garbage);
    RUN(test_untracked_container_keeps_cycle);
    RUN(test_only_some_have_tp_clear);
    RUN(test_no_tp_clear_not_freed);
    RUN(test_old_generation_reference);
    RUN(test_many_small_cycles);
    CHECK_EQ_INT(bad_deallocs, 0);
    return CHECK_DONE();
}
