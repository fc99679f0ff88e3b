/* Deep structures on the default 8 MB stack: freeing a 10,000,000-node
 * acyclic chain with one Py_DECREF (a recursive tp_dealloc would need
 * ~10M stack frames: cyclegc's trashcan bounds the depth); collecting a
 * 10,000,000-node ring; a 1,000,000-deep chain hanging off a cycle.
 * Every case prints its time. */
#include <cyclegc/Python.h>

#include <time.h>

#include "check.h"

/* Sizes are divided by DEEP_SCALE (default 1). At full size this file takes
 * ~4 s and 650 MB in the RelWithDebInfo build, ~20 s and 1.6 GB under
 * AddressSanitizer; -DDEEP_SCALE=10 is for small machines. */
#ifndef DEEP_SCALE
#define DEEP_SCALE 1
#endif
#define SCALE DEEP_SCALE

#define CANARY 0xDEE9L
#define DEAD 0xDEADL

typedef struct {
    PyObject_HEAD
    PyObject *next, *side;
    long canary;
} Link;

static long deallocs = 0, bad = 0;

static int Link_traverse(PyObject *self, visitproc visit, void *arg) {
    Link *l = (Link *)self;
    Py_VISIT(l->next);
    Py_VISIT(l->side);
    return 0;
}

static int Link_clear(PyObject *self) {
    Link *l = (Link *)self;
    Py_CLEAR(l->next);
    Py_CLEAR(l->side);
    return 0;
}

/* The textbook (recursive) dealloc: Py_CLEAR of `next` deallocates the
 * next link from inside this one. */
static void Link_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Link *l = (Link *)self;
    if (l->canary != CANARY) bad++;
    l->canary = DEAD;
    Py_CLEAR(l->next);
    Py_CLEAR(l->side);
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject LinkType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "deep.Link",
    .tp_basicsize = sizeof(Link),
    .tp_dealloc = Link_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Link_traverse,
    .tp_clear = Link_clear,
};

static Link *link_to(PyObject *next) {
    Link *l = PyObject_GC_New(Link, &LinkType);
    REQUIRE(l != NULL);
    l->next = next; /* steals */
    l->side = NULL;
    l->canary = CANARY;
    PyObject_GC_Track(l);
    return l;
}

/* A chain of n links ending in `end` (stolen); returns its head. */
static Link *chain(long n, PyObject *end) {
    PyObject *head = end;
    for (long i = 0; i < n; i++) head = (PyObject *)link_to(head);
    return (Link *)head;
}

static double now(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------------- */

static void test_free_long_chain(void) {
    const long n = 10000000 / SCALE;
    gc_collect();
    deallocs = 0;
    PyGC_Disable(); /* building only: automatic collections are not tested here */
    double t0 = now();
    Link *head = chain(n, NULL);
    double t1 = now();
    CHECK_EQ_INT(deallocs, 0);
    Py_DECREF(head); /* one decref frees the whole chain */
    double t2 = now();
    CHECK_EQ_INT(deallocs, n);
    CHECK_EQ_INT(bad, 0);
    PyGC_Enable();
    fprintf(stderr, "  %ld-link chain: built in %.2fs, freed by one Py_DECREF in %.2fs\n", n,
            t1 - t0, t2 - t1);
}

static void test_collect_long_ring(void) {
    const long n = 10000000 / SCALE;
    gc_collect();
    deallocs = 0;
    PyGC_Disable();
    double t0 = now();
    Link *last = link_to(NULL);
    Link *head = chain(n - 1, (PyObject *)last);
    last->next = Py_NewRef(head);
    double t1 = now();
    Py_DECREF(head);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), n);
    double t2 = now();
    CHECK_EQ_INT(deallocs, n);
    CHECK_EQ_INT(bad, 0);
    PyGC_Enable();
    fprintf(stderr, "  %ld-link ring: built in %.2fs, collected in %.2fs\n", n, t1 - t0, t2 - t1);
}

static void test_chain_off_cycle(void) {
    const long n = 1000000;
    gc_collect();
    deallocs = 0;
    /* Automatic collection stays on while building: the chain spreads over
     * the generations. */
    double t0 = now();
    Link *a = link_to(NULL);
    Link *b = link_to(Py_NewRef(a));
    a->next = (PyObject *)b;
    a->side = (PyObject *)chain(n, NULL);
    /* And a held chain, hanging off the garbage too, must survive. */
    Link *kept_end = link_to(NULL);
    b->side = (PyObject *)chain(n / 10, Py_NewRef(kept_end));
    double t1 = now();
    Py_DECREF(a);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 2 + n + n / 10);
    double t2 = now();
    CHECK_EQ_INT(deallocs, 2 + n + n / 10);
    REQUIRE_EQ_INT(Py_REFCNT(kept_end), 1);
    CHECK_EQ_INT(kept_end->canary, CANARY);
    Py_DECREF(kept_end);
    CHECK_EQ_INT(bad, 0);
    fprintf(stderr, "  cycle + %ld-deep chain: built in %.2fs, collected in %.2fs\n", n, t1 - t0,
            t2 - t1);
}

static void test_long_held_ring_survives(void) {
    /* A held 1M ring survives a full collection and is intact. */
    const long n = 1000000;
    gc_collect();
    deallocs = 0;
    Link *last = link_to(NULL);
    Link *head = chain(n - 1, (PyObject *)last);
    last->next = Py_NewRef(head);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, 0);
    long count = 0;
    Link *x = head;
    do {
        if (x->canary != CANARY) bad++;
        x = (Link *)x->next;
        count++;
    } while (x != head && count <= n);
    CHECK_EQ_INT(count, n);
    CHECK_EQ_INT(bad, 0);
    Py_DECREF(head);
    CHECK_EQ_INT(gc_collect(), n);
    CHECK_EQ_INT(deallocs, n);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&LinkType), 0);
    if (SCALE != 1) fprintf(stderr, "  (sizes divided by DEEP_SCALE = %d)\n", SCALE);
    RUN(test_free_long_chain);
    RUN(test_collect_long_ring);
    RUN(test_chain_off_cycle);
    RUN(test_long_held_ring_survives);
    return CHECK_DONE();
}
