/* PEP 442 finalizers (tp_finalize) in the collector, with CPython 3.12 as the
 * reference: every unreachable object is finalized before any tp_clear runs;
 * a finalizer runs once per object lifetime (resurrection does not re-arm
 * it); PyObject_GC_IsFinalized; resurrection keeps the object and all it
 * reaches intact, and does not keep unrelated garbage
 * (test_resurrection_does_not_block_cleanup_of_other_objects); finalizers
 * that allocate, create cycles, free other garbage or ask for a collection. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0xF1A1F1A1L
#define DEAD 0xDEADL

/* ---- an event log -------------------------------------------------------- */
typedef struct {
    char kind; /* 'F' finalize, 'C' clear, 'D' dealloc */
    long id;
} Event;

#define MAX_EVENTS 4096
static Event events[MAX_EVENTS];
static int n_events = 0;

static void log_event(char kind, long id) {
    if (n_events < MAX_EVENTS) events[n_events].kind = kind, events[n_events].id = id;
    n_events++;
}

static int count_events(char kind, long id) { /* id < 0: any */
    int n = 0;
    for (int i = 0; i < n_events && i < MAX_EVENTS; i++)
        if (events[i].kind == kind && (id < 0 || events[i].id == id)) n++;
    return n;
}

static int first_event(char kind) {
    for (int i = 0; i < n_events && i < MAX_EVENTS; i++)
        if (events[i].kind == kind) return i;
    return -1;
}

static int last_event(char kind) {
    int last = -1;
    for (int i = 0; i < n_events && i < MAX_EVENTS; i++)
        if (events[i].kind == kind) last = i;
    return last;
}

/* ---- FNode: a GC container with a finalizer ------------------------------ */
enum { PLAIN, RESURRECT, ALLOC_CYCLE, COLLECT, FREE_OTHER, ALLOC_CYCLE_REF };

typedef struct {
    PyObject_HEAD
    PyObject *a, *b;
    long canary;
    long id;
    int mode;
} FNode;

static long bad = 0; /* an object found not intact where it must be */
static PyObject *resurrected[16];
static int n_resurrected = 0;
static Py_ssize_t inner_collect[2] = {-1, -1};
static int collecting_inside = -1;
static long next_id = 1;

static PyTypeObject FNodeType, NodeType, FNoClearType;

static FNode *fnode_of(PyTypeObject *type, int mode, PyObject *a, PyObject *b);

static int FNode_traverse(PyObject *self, visitproc visit, void *arg) {
    FNode *n = (FNode *)self;
    Py_VISIT(n->a);
    Py_VISIT(n->b);
    return 0;
}

static int FNode_clear(PyObject *self) {
    FNode *n = (FNode *)self;
    log_event('C', n->id);
    Py_CLEAR(n->a);
    Py_CLEAR(n->b);
    return 0;
}

static void FNode_finalize(PyObject *self) {
    FNode *n = (FNode *)self;
    if (n->canary != CANARY) bad++;
    log_event('F', n->id);
    switch (n->mode) {
    case RESURRECT:
        if (n_resurrected < 16) resurrected[n_resurrected++] = Py_NewRef(self);
        break;
    case ALLOC_CYCLE: {
        /* New garbage: a 2-cycle of finalizable nodes. */
        FNode *x = fnode_of(&FNodeType, PLAIN, NULL, NULL);
        FNode *y = fnode_of(&FNodeType, PLAIN, Py_NewRef(x), NULL);
        x->a = (PyObject *)y;
        Py_DECREF(x);
        break;
    }
    case ALLOC_CYCLE_REF: {
        /* New garbage that refers to self: a self-cycle of a plain node. */
        FNode *x = fnode_of(&NodeType, PLAIN, NULL, Py_NewRef(self));
        x->a = Py_NewRef(x);
        Py_DECREF(x);
        break;
    }
    case COLLECT:
        collecting_inside = cgc_is_collecting();
        inner_collect[0] = PyGC_Collect();
        inner_collect[1] = cgc_collect(2);
        break;
    case FREE_OTHER:
        Py_CLEAR(n->a);
        break;
    default:
        break;
    }
}

/* The CPython pattern for a static type with tp_finalize. */
static void FNode_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return; /* resurrected */
    FNode *n = (FNode *)self;
    PyObject_GC_UnTrack(self);
    if (n->canary != CANARY) bad++;
    n->canary = DEAD;
    log_event('D', n->id);
    Py_CLEAR(n->a);
    Py_CLEAR(n->b);
    PyObject_GC_Del(self);
}

static PyTypeObject FNodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fin.FNode",
    .tp_basicsize = sizeof(FNode),
    .tp_dealloc = FNode_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = FNode_traverse,
    .tp_clear = FNode_clear,
    .tp_finalize = FNode_finalize,
};

/* Finalizable, but without tp_clear: its cycles are never freed. */
static PyTypeObject FNoClearType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fin.FNoClear",
    .tp_basicsize = sizeof(FNode),
    .tp_dealloc = FNode_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = FNode_traverse,
    .tp_finalize = FNode_finalize,
};

/* No finalizer (same layout). */
static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "fin.Node",
    .tp_basicsize = sizeof(FNode),
    .tp_dealloc = FNode_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = FNode_traverse,
    .tp_clear = FNode_clear,
};

static FNode *fnode_of(PyTypeObject *type, int mode, PyObject *a, PyObject *b) {
    FNode *n = PyObject_GC_New(FNode, type);
    REQUIRE(n != NULL);
    n->a = a;
    n->b = b;
    n->canary = CANARY;
    n->id = next_id++;
    n->mode = mode;
    PyObject_GC_Track(n);
    return n;
}

static FNode *fnode(int mode) { return fnode_of(&FNodeType, mode, NULL, NULL); }

/* A ring linked through `a` of n nodes of `type`; the first has `mode`. */
static FNode *ring(PyTypeObject *type, int n, int first_mode) {
    FNode *head = fnode_of(type, first_mode, NULL, NULL), *tail = head;
    for (int i = 1; i < n; i++) {
        FNode *x = fnode_of(type, PLAIN, NULL, NULL);
        tail->a = (PyObject *)x;
        tail = x;
    }
    tail->a = Py_NewRef(head);
    return head;
}

static void drop_resurrected(void) {
    for (int i = 0; i < n_resurrected; i++) Py_CLEAR(resurrected[i]);
    n_resurrected = 0;
}

static void start(void) {
    drop_resurrected();
    gc_collect();
    n_events = 0;
}

/* ------------------------------------------------------------------------- */

static void test_finalize_before_clear(void) {
    start();
    /* A 10-ring, a self-cycle and a 2-cycle holding a 3-chain, in one
     * collection: all 16 finalizers before the first tp_clear. */
    FNode *r = ring(&FNodeType, 10, PLAIN);
    FNode *s = ring(&FNodeType, 1, PLAIN);
    FNode *t = ring(&FNodeType, 2, PLAIN);
    t->b = (PyObject *)fnode_of(&FNodeType, PLAIN, (PyObject *)fnode_of(&FNodeType, PLAIN, (PyObject *)fnode(PLAIN), NULL), NULL);
    Py_DECREF(r);
    Py_DECREF(s);
    Py_DECREF(t);
    CHECK_EQ_INT(n_events, 0);
    CHECK_EQ_INT(gc_collect(), 16);
    CHECK_EQ_INT(count_events('F', -1), 16);
    CHECK_EQ_INT(count_events('D', -1), 16);
    CHECK(count_events('C', -1) >= 1);
    CHECK(first_event('C') > last_event('F'));
    CHECK(first_event('D') > last_event('F'));
    for (int i = 0; i < n_events; i++) {
        if (events[i].kind == 'F') CHECK_EQ_INT(count_events('F', events[i].id), 1);
        if (events[i].kind == 'D') CHECK_EQ_INT(count_events('D', events[i].id), 1);
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_finalize_on_refcount_death(void) {
    start();
    FNode *x = fnode(PLAIN);
    long id = x->id;
    CHECK_EQ_INT(PyObject_GC_IsFinalized(x), 0);
    Py_DECREF(x);
    CHECK_EQ_INT(count_events('F', id), 1);
    CHECK_EQ_INT(count_events('D', id), 1);
    CHECK(first_event('F') < first_event('D'));
}

static void test_once_without_tp_clear(void) {
    start();
    FNode *x = fnode_of(&FNoClearType, PLAIN, NULL, NULL);
    FNode *y = fnode_of(&FNoClearType, PLAIN, Py_NewRef(x), NULL);
    x->a = (PyObject *)y;
    Py_DECREF(x);
    cgc_error_clear();
    CHECK_EQ_INT(gc_collect(), 0); /* not freed: not counted (CPython counts them), reported */
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    CHECK_CONTAINS(cgc_error_message(), "fin.FNoClear");
    cgc_error_clear();
    CHECK_EQ_INT(count_events('F', x->id), 1);
    CHECK_EQ_INT(count_events('F', y->id), 1);
    REQUIRE_EQ_INT(count_events('D', -1), 0);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(x), 1);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(y), 1);
    for (int i = 0; i < 3; i++) gc_collect();
    CHECK_EQ_INT(count_events('F', -1), 2); /* never again */
    REQUIRE_EQ_INT(count_events('D', -1), 0);
    CHECK_EQ_INT(x->canary, CANARY);
    CHECK_EQ_INT(y->canary, CANARY);
    /* Broken by hand: the deallocs do not finalize again either. */
    Py_CLEAR(x->a);
    CHECK_EQ_INT(count_events('D', -1), 2);
    CHECK_EQ_INT(count_events('F', -1), 2);
}

static void test_resurrection(void) {
    start();
    /* A 6-ring whose first node resurrects itself; it also holds a 3-chain
     * of nodes without finalizers. */
    FNode *r = ring(&FNodeType, 6, RESURRECT);
    FNode *c3 = fnode_of(&NodeType, PLAIN, NULL, NULL);
    FNode *c2 = fnode_of(&NodeType, PLAIN, (PyObject *)c3, NULL);
    r->b = (PyObject *)fnode_of(&NodeType, PLAIN, (PyObject *)c2, NULL);
    FNode *members[6];
    FNode *x = r;
    for (int i = 0; i < 6; i++, x = (FNode *)x->a) members[i] = x;
    Py_DECREF(r);

    CHECK_EQ_INT(gc_collect(), 0); /* everything resurrected: nothing collected */
    CHECK_EQ_INT(count_events('F', -1), 6); /* all finalized, once */
    REQUIRE_EQ_INT(count_events('D', -1), 0);
    CHECK_EQ_INT(count_events('C', -1), 0); /* nothing was cleared */
    REQUIRE_EQ_INT(n_resurrected, 1);
    CHECK(resurrected[0] == (PyObject *)r);
    for (int i = 0; i < 6; i++) {
        CHECK_EQ_INT(members[i]->canary, CANARY);
        CHECK(members[i]->a == (PyObject *)members[(i + 1) % 6]);
        CHECK_EQ_INT(PyObject_GC_IsFinalized(members[i]), 1);
        CHECK_EQ_INT(PyObject_GC_IsTracked(members[i]), 1);
    }
    CHECK(r->b != NULL && ((FNode *)r->b)->canary == CANARY);
    CHECK(((FNode *)r->b)->a == (PyObject *)c2 && c2->a == (PyObject *)c3);
    CHECK_EQ_INT(c3->canary, CANARY);
    CHECK_EQ_INT(Py_REFCNT(r), 2); /* the global and the ring */
    CHECK_EQ_INT(bad, 0);

    /* Still alive after more collections, not finalized again. */
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(count_events('F', -1), 6);
    REQUIRE_EQ_INT(count_events('D', -1), 0);

    /* Dropped again: freed, without running any finalizer again. */
    drop_resurrected();
    CHECK_EQ_INT(gc_collect(), 6 + 3);
    CHECK_EQ_INT(count_events('D', -1), 9);
    CHECK_EQ_INT(count_events('F', -1), 6);
    CHECK_EQ_INT(bad, 0);
}

static void test_resurrection_by_dealloc(void) {
    start();
    /* Not in a cycle: the finalizer runs from the dealloc and resurrects. */
    FNode *x = fnode(RESURRECT);
    long id = x->id;
    Py_DECREF(x);
    CHECK_EQ_INT(count_events('F', id), 1);
    REQUIRE_EQ_INT(count_events('D', id), 0);
    REQUIRE_EQ_INT(n_resurrected, 1);
    CHECK(resurrected[0] == (PyObject *)x);
    CHECK_EQ_INT(Py_REFCNT(x), 1);
    CHECK_EQ_INT(x->canary, CANARY);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(x), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(x), 1);
    drop_resurrected();
    CHECK_EQ_INT(count_events('F', id), 1);
    CHECK_EQ_INT(count_events('D', id), 1);
}

/* CPython's test_gc.py test_resurrection_does_not_block_cleanup_of_other_objects,
 * with A = a self-cycle without finalizer, Z = a self-cycle whose
 * finalizer resurrects it. */
static void test_resurrection_does_not_block_cleanup_of_other_objects(void) {
    start();
    const int N = 100;
    cgc_generation_stats before, after; /* native: gc.get_stats()[-1] */
    PyGC_Disable();

    cgc_get_stats(2, &before);
    for (int i = 0; i < N; i++) Py_DECREF(ring(&NodeType, 1, PLAIN));
    CHECK_EQ_INT(gc_collect(), N);
    cgc_get_stats(2, &after);
    CHECK_EQ_INT(after.collected - before.collected, N);
    CHECK_EQ_INT(after.uncollectable - before.uncollectable, 0);

    /* Z alone is not collected: merely resurrected. */
    n_events = 0;
    before = after;
    Py_DECREF(ring(&FNodeType, 1, RESURRECT));
    CHECK_EQ_INT(gc_collect(), 0);
    cgc_get_stats(2, &after);
    CHECK_EQ_INT(after.collected - before.collected, 0);
    CHECK_EQ_INT(after.uncollectable - before.uncollectable, 0);
    CHECK_EQ_INT(n_resurrected, 1);

    /* Z does not prevent anything else from being collected. */
    before = after;
    for (int i = 0; i < N; i++) Py_DECREF(ring(&NodeType, 1, PLAIN));
    Py_DECREF(ring(&FNodeType, 1, RESURRECT));
    CHECK_EQ_INT(gc_collect(), N);
    cgc_get_stats(2, &after);
    CHECK_EQ_INT(after.collected - before.collected, N);
    CHECK_EQ_INT(after.uncollectable - before.uncollectable, 0);
    CHECK_EQ_INT(n_resurrected, 2);
    CHECK_EQ_INT(count_events('D', -1), N);

    /* The two Zs, released, are collected without finalizing again. */
    int finalized = count_events('F', -1);
    before = after;
    drop_resurrected();
    CHECK_EQ_INT(gc_collect(), 2);
    cgc_get_stats(2, &after);
    CHECK_EQ_INT(after.collected - before.collected, 2);
    CHECK_EQ_INT(count_events('F', -1), finalized);
    CHECK_EQ_INT(count_events('D', -1), N + 2);
    PyGC_Enable();
}

static void test_finalizer_creates_cycles(void) {
    start();
    FNode *x = ring(&FNodeType, 1, ALLOC_CYCLE);
    long id = x->id;
    Py_DECREF(x);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(count_events('D', id), 1);
    CHECK_EQ_INT(count_events('D', -1), 1); /* the new 2-cycle is alive */
    CHECK_EQ_INT(count_events('F', -1), 1);
    /* The next collection finds the new cycle and finalizes it. */
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(count_events('F', -1), 3);
    CHECK_EQ_INT(count_events('D', -1), 3);
    CHECK_EQ_INT(gc_collect(), 0);

    /* Many at once, in a chain of garbage. */
    start();
    FNode *r = ring(&FNodeType, 50, ALLOC_CYCLE);
    for (FNode *y = (FNode *)r->a; y != r; y = (FNode *)y->a) y->mode = ALLOC_CYCLE;
    Py_DECREF(r);
    CHECK_EQ_INT(gc_collect(), 50);
    CHECK_EQ_INT(count_events('D', -1), 50);
    CHECK_EQ_INT(gc_collect(), 100);
    CHECK_EQ_INT(count_events('D', -1), 150);
    CHECK_EQ_INT(count_events('F', -1), 150);
    CHECK_EQ_INT(bad, 0);
}

static void test_new_garbage_refers_to_old(void) {
    start();
    /* The finalizer of a garbage 3-ring makes a new self-cycle that refers
     * to it. The new object is not part of the running collection, so its
     * reference counts as external: the ring survives this collection (as
     * in CPython), intact and not cleared. */
    FNode *r = ring(&FNodeType, 3, ALLOC_CYCLE_REF);
    FNode *second = (FNode *)r->a;
    Py_DECREF(r);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(count_events('F', -1), 3);
    REQUIRE_EQ_INT(count_events('D', -1), 0);
    CHECK_EQ_INT(count_events('C', -1), 0);
    CHECK_EQ_INT(r->canary, CANARY);
    CHECK(r->a == (PyObject *)second && second->canary == CANARY);
    /* Next time, everything is garbage; no finalizer runs again. */
    CHECK_EQ_INT(gc_collect(), 3 + 1);
    CHECK_EQ_INT(count_events('D', -1), 4);
    CHECK_EQ_INT(count_events('F', -1), 3);
    CHECK_EQ_INT(bad, 0);
}

static void test_finalizer_collects(void) {
    start();
    FNode *x = ring(&FNodeType, 3, COLLECT);
    Py_DECREF(x);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(collecting_inside, 1);
    CHECK_EQ_INT(inner_collect[0], 0); /* already collecting */
    CHECK_EQ_INT(inner_collect[1], 0);
    CHECK_EQ_INT(count_events('D', -1), 3);
    CHECK_EQ_INT(count_events('F', -1), 3);
    /* Collections work again afterwards. */
    Py_DECREF(ring(&FNodeType, 2, PLAIN));
    CHECK_EQ_INT(gc_collect(), 2);
}

static void test_finalizer_frees_other_garbage(void) {
    start();
    /* a <-> b; a's finalizer drops its reference to b, which dies by
     * reference counting in the middle of the finalization step. Each
     * finalizer still runs exactly once. */
    for (int order = 0; order < 2; order++) {
        n_events = 0;
        FNode *a, *b;
        if (order == 0) {
            a = fnode(FREE_OTHER);
            b = fnode_of(&FNodeType, PLAIN, Py_NewRef(a), NULL);
            a->a = (PyObject *)b;
        } else {
            b = fnode(PLAIN);
            a = fnode_of(&FNodeType, FREE_OTHER, (PyObject *)b, NULL);
            b->a = (PyObject *)a;
            a = (FNode *)Py_NewRef(a);
        }
        Py_DECREF(a);
        /* As in CPython, objects freed during finalization are not
         * counted: nothing is left to collect. */
        CHECK_EQ_INT(gc_collect(), 0);
        CHECK_EQ_INT(count_events('F', -1), 2);
        CHECK_EQ_INT(count_events('D', -1), 2);
        CHECK_EQ_INT(count_events('C', -1), 0);
        CHECK_EQ_INT(bad, 0);
    }
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&FNodeType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&FNoClearType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&NodeType), 0);
    RUN(test_finalize_before_clear);
    RUN(test_finalize_on_refcount_death);
    RUN(test_once_without_tp_clear);
    RUN(test_resurrection);
    RUN(test_resurrection_by_dealloc);
    RUN(test_resurrection_does_not_block_cleanup_of_other_objects);
    RUN(test_finalizer_creates_cycles);
    RUN(test_new_garbage_refers_to_old);
    RUN(test_finalizer_collects);
    RUN(test_finalizer_frees_other_garbage);
    drop_resurrected();
    gc_collect();
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
