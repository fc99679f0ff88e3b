/* Collections requested from user code the collector runs (finalizers,
 * tp_clear, deallocations): refused (0) while a collection runs, nothing
 * crashes; a deallocation outside a collection can collect. Automatic
 * collection: with the default thresholds memory stays bounded while a loop
 * makes 1,000,000 self-cycles; disabled, nothing is collected; thresholds
 * set with the native cgc_set_threshold (0 disables, as in CPython). */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x4EE17L
#define DEAD 0xDEADL

enum {
    IN_FINALIZE = 1,
    IN_CLEAR = 2,
    IN_DEALLOC = 4,
    ALLOCATE_MANY = 8, /* the finalizer makes 2000 self-cycles */
};

typedef struct {
    PyObject_HEAD
    PyObject *ref;
    long canary;
    int flags;
} RNode;

static long allocs = 0, deallocs = 0, bad = 0;
static long requests = 0, refused = 0, not_collecting = 0;
static Py_ssize_t last_dealloc_collect = -1;

static RNode *rnode(int flags);

/* Every way to ask for a collection; all must return 0 during one. */
static void request_collections(void) {
    requests++;
    if (!cgc_is_collecting()) not_collecting++;
    Py_ssize_t results[4] = {PyGC_Collect(), cgc_collect(0), cgc_collect(1), cgc_collect(2)};
    int all_zero = 1;
    for (int i = 0; i < 4; i++)
        if (results[i] != 0) all_zero = 0;
    if (all_zero) refused++;
}

static int RNode_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((RNode *)self)->ref);
    return 0;
}

static int RNode_clear(PyObject *self) {
    RNode *r = (RNode *)self;
    if (r->flags & IN_CLEAR) request_collections();
    Py_CLEAR(r->ref);
    return 0;
}

static void RNode_finalize(PyObject *self) {
    RNode *r = (RNode *)self;
    if (r->canary != CANARY) bad++;
    if (r->flags & IN_FINALIZE) request_collections();
    if (r->flags & ALLOCATE_MANY) {
        for (int i = 0; i < 2000; i++) {
            RNode *x = rnode(0);
            x->ref = Py_NewRef(x);
            Py_DECREF(x);
        }
    }
}

static void RNode_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    PyObject_GC_UnTrack(self);
    RNode *r = (RNode *)self;
    if (r->canary != CANARY) bad++;
    r->canary = DEAD;
    Py_CLEAR(r->ref);
    if (r->flags & IN_DEALLOC) {
        if (cgc_is_collecting())
            request_collections();
        else
            last_dealloc_collect = PyGC_Collect(); /* a real collection */
    }
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject RNodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "reent.RNode",
    .tp_basicsize = sizeof(RNode),
    .tp_dealloc = RNode_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = RNode_traverse,
    .tp_clear = RNode_clear,
    .tp_finalize = RNode_finalize,
};

static RNode *rnode(int flags) {
    RNode *r = PyObject_GC_New(RNode, &RNodeType);
    REQUIRE(r != NULL);
    r->ref = NULL;
    r->canary = CANARY;
    r->flags = flags;
    PyObject_GC_Track(r);
    allocs++;
    return r;
}

/* A ring of n nodes, all with `flags`; returns a new reference. */
static RNode *ring(int n, int flags) {
    RNode *head = rnode(flags), *tail = head;
    for (int i = 1; i < n; i++) {
        RNode *x = rnode(flags);
        tail->ref = (PyObject *)x;
        tail = x;
    }
    tail->ref = Py_NewRef(head);
    return head;
}

static long live(void) { return allocs - deallocs; }

static void start(void) {
    gc_collect();
    requests = refused = not_collecting = 0;
}

/* ------------------------------------------------------------------------- */

static void test_from_finalizers(void) {
    start();
    Py_DECREF(ring(5, IN_FINALIZE));
    long before = live();
    CHECK_EQ_INT(gc_collect(), 5);
    CHECK_EQ_INT(live(), before - 5);
    CHECK_EQ_INT(requests, 5);
    CHECK_EQ_INT(refused, 5);
    CHECK_EQ_INT(not_collecting, 0);
    /* The collector works afterwards. */
    Py_DECREF(ring(3, 0));
    CHECK_EQ_INT(gc_collect(), 3);
}

static void test_from_clear(void) {
    start();
    Py_DECREF(ring(4, IN_CLEAR));
    long before = live();
    CHECK_EQ_INT(gc_collect(), 4);
    CHECK_EQ_INT(live(), before - 4);
    CHECK(requests >= 1); /* at least the first clear; the rest die by refcount */
    CHECK_EQ_INT(refused, requests);
    CHECK_EQ_INT(not_collecting, 0);
}

static void test_from_dealloc_during_collection(void) {
    start();
    Py_DECREF(ring(6, IN_DEALLOC));
    long before = live();
    CHECK_EQ_INT(gc_collect(), 6);
    CHECK_EQ_INT(live(), before - 6);
    CHECK_EQ_INT(requests, 6);
    CHECK_EQ_INT(refused, 6);
    CHECK_EQ_INT(not_collecting, 0);
    CHECK_EQ_INT(bad, 0);

    /* Everything at once. */
    start();
    Py_DECREF(ring(10, IN_FINALIZE | IN_CLEAR | IN_DEALLOC));
    CHECK_EQ_INT(gc_collect(), 10);
    CHECK(requests >= 20);
    CHECK_EQ_INT(refused, requests);
    CHECK_EQ_INT(bad, 0);
}

static void test_dealloc_collects_outside_collection(void) {
    start();
    /* Garbage waiting for a collection: 3 self-cycles. */
    for (int i = 0; i < 3; i++) Py_DECREF(ring(1, 0));
    /* An acyclic object whose dealloc collects: a real collection, run
     * from inside a deallocation. */
    RNode *x = rnode(IN_DEALLOC);
    long before = live();
    last_dealloc_collect = -1;
    Py_DECREF(x);
    CHECK_EQ_INT(last_dealloc_collect, 3);
    CHECK_EQ_INT(live(), before - 4);
    CHECK_EQ_INT(requests, 0);

    /* A 200-chain of such objects: each dealloc collects, nested (and
     * deferred by the trashcan) deallocations included. */
    start();
    for (int i = 0; i < 5; i++) Py_DECREF(ring(2, 0));
    RNode *head = rnode(IN_DEALLOC), *tail = head;
    for (int i = 1; i < 200; i++) {
        RNode *n = rnode(IN_DEALLOC);
        tail->ref = (PyObject *)n;
        tail = n;
    }
    before = live();
    Py_DECREF(head);
    CHECK_EQ_INT(live(), before - 200 - 10);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(gc_collect(), 0);
}

static void test_allocation_during_collection(void) {
    start();
    /* Finalizers that allocate 4000 objects (more than the threshold, 700)
     * during the collection: no nested automatic collection; they are
     * garbage for the next one. */
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    Py_DECREF(ring(2, ALLOCATE_MANY | IN_FINALIZE));
    long before = live();
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(live(), before - 2 + 4000);
    CHECK_EQ_INT(refused, requests);
    CHECK_EQ_INT(gc_collect(), 4000);
    CHECK_EQ_INT(live(), before - 2);
}

static void test_automatic_collection_bounded(void) {
    start();
    CHECK_EQ_INT(cgc_get_threshold(0), 700); /* CPython's defaults */
    CHECK_EQ_INT(cgc_get_threshold(1), 10);
    CHECK_EQ_INT(cgc_get_threshold(2), 10);
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    long base = live(), max_live = 0;
    for (long i = 0; i < 1000000; i++) {
        RNode *x = rnode(0);
        x->ref = Py_NewRef(x);
        Py_DECREF(x);
        if (live() - base > max_live) max_live = live() - base;
    }
    fprintf(stderr, "  1,000,000 self-cycles, GC enabled: at most %ld alive at once\n", max_live);
    CHECK(max_live < 10000);
    CHECK(max_live >= 700); /* not collected more often than the threshold says */
    gc_collect();
    CHECK_EQ_INT(live(), base);
    CHECK_EQ_INT(bad, 0);
}

static void test_disabled_no_automatic_collection(void) {
    start();
    CHECK_EQ_INT(PyGC_Disable(), 1);
    long base = live();
    for (long i = 0; i < 100000; i++) {
        RNode *x = rnode(0);
        x->ref = Py_NewRef(x);
        Py_DECREF(x);
    }
    CHECK_EQ_INT(live() - base, 100000); /* nothing collected */
    CHECK_EQ_INT(PyGC_Collect(), 0);     /* disabled */
    CHECK_EQ_INT(live() - base, 100000);
    CHECK_EQ_INT(PyGC_Enable(), 0);
    CHECK_EQ_INT(PyGC_Collect(), 100000);
    CHECK_EQ_INT(live(), base);
}

static long max_live_with_threshold(Py_ssize_t threshold, long n) {
    cgc_set_threshold(0, threshold);
    long base = live(), max_live = 0;
    for (long i = 0; i < n; i++) {
        RNode *x = rnode(0);
        x->ref = Py_NewRef(x);
        Py_DECREF(x);
        if (live() - base > max_live) max_live = live() - base;
    }
    cgc_set_threshold(0, 700);
    gc_collect();
    return max_live;
}

static void test_thresholds(void) {
    start();
    /* Generation 0 is collected when its count exceeds the threshold. */
    long m = max_live_with_threshold(100, 10000);
    CHECK(m >= 100 && m <= 101);
    m = max_live_with_threshold(1, 1000);
    CHECK(m >= 1 && m <= 2);
    /* Threshold 0 disables automatic collection (CPython). */
    m = max_live_with_threshold(0, 5000);
    CHECK_EQ_INT(m, 5000);
    CHECK_EQ_INT(cgc_get_threshold(0), 700);

    /* Other generations' thresholds are kept. */
    cgc_set_threshold(1, 5);
    cgc_set_threshold(2, 20);
    CHECK_EQ_INT(cgc_get_threshold(1), 5);
    CHECK_EQ_INT(cgc_get_threshold(2), 20);
    m = max_live_with_threshold(50, 20000);
    CHECK(m >= 50 && m <= 51);
    cgc_set_threshold(1, 10);
    cgc_set_threshold(2, 10);
    CHECK_EQ_INT(live(), 0);
}

static void test_safepoint_mode(void) {
    /* Native: CPython 3.12 runs automatic collections at its eval breaker,
     * not inside the allocation; cyclegc does so at cgc_safepoint(). */
    start();
    cgc_set_auto_mode(CGC_AUTO_AT_SAFEPOINT);
    cgc_set_threshold(0, 100);
    long base = live();
    for (int i = 0; i < 500; i++) {
        RNode *x = rnode(0);
        x->ref = Py_NewRef(x);
        Py_DECREF(x);
    }
    CHECK_EQ_INT(live() - base, 500); /* only marked as due */
    CHECK_EQ_INT(cgc_safepoint(), 500);
    CHECK_EQ_INT(live(), base);
    CHECK_EQ_INT(cgc_safepoint(), 0); /* nothing due any more */
    cgc_set_auto_mode(CGC_AUTO_AT_ALLOCATION);
    cgc_set_threshold(0, 700);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&RNodeType), 0);
    RUN(test_from_finalizers);
    RUN(test_from_clear);
    RUN(test_from_dealloc_during_collection);
    RUN(test_dealloc_collects_outside_collection);
    RUN(test_allocation_during_collection);
    RUN(test_automatic_collection_bounded);
    RUN(test_disabled_no_automatic_collection);
    RUN(test_thresholds);
    RUN(test_safepoint_mode);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
