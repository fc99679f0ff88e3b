/* Misuse of the API is reported, not a crash: each case below must produce
 * an error message that names the function, the type, and what is wrong,
 * and the faulty operation is refused (the heap stays consistent: the
 * collector still counts exactly afterwards).
 *
 * Messages are captured with the native error hook, cgc_set_error_hook
 * (cyclegc.h, included by Python.h). */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x3150EL
#define DEAD 0xDEADL

/* ---- the error hook ---------------------------------------------------- */
static char captured[8192];
static int n_captured = 0;
static cgc_error_kind last_kind = CGC_ERR_NONE;

static void capture(cgc_error_kind kind, const char *message, void *context) {
    (void)context;
    size_t used = strlen(captured);
    snprintf(captured + used, sizeof captured - used, "%s\n", message);
    n_captured++;
    last_kind = kind;
}

static void reset_capture(void) {
    captured[0] = '\0';
    n_captured = 0;
    last_kind = CGC_ERR_NONE;
    PyErr_Clear();
}

/* ---- types ------------------------------------------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *ref, *ref2;
    long canary;
} Node;

static long deallocs = 0, bad = 0;
static PyObject *track_in_traverse = NULL; /* tracked by Node_traverse, once */

static int Node_traverse(PyObject *self, visitproc visit, void *arg) {
    if (track_in_traverse != NULL) {
        PyObject *op = track_in_traverse;
        track_in_traverse = NULL;
        PyObject_GC_Track(op); /* misuse: refused */
    }
    Py_VISIT(((Node *)self)->ref);
    Py_VISIT(((Node *)self)->ref2);
    return 0;
}

static int Node_clear(PyObject *self) {
    Py_CLEAR(((Node *)self)->ref);
    Py_CLEAR(((Node *)self)->ref2);
    return 0;
}

static void Node_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Node *n = (Node *)self;
    if (n->canary != CANARY) bad++;
    n->canary = DEAD;
    Node_clear(self);
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "misuse.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Node_traverse,
    .tp_clear = Node_clear,
};

typedef struct {
    PyObject_VAR_HEAD
    PyObject *items[1];
} Vec;

static int Vec_traverse(PyObject *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++) Py_VISIT(((Vec *)self)->items[i]);
    return 0;
}

static PyTypeObject VecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "misuse.Vec",
    .tp_basicsize = offsetof(Vec, items),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Vec_traverse,
};

typedef struct {
    PyObject_HEAD
    long value;
} Plain;

static PyTypeObject PlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "misuse.Plain",
    .tp_basicsize = sizeof(Plain),
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static Node *node(void) {
    Node *n = PyObject_GC_New(Node, &NodeType);
    REQUIRE(n != NULL);
    n->ref = n->ref2 = NULL;
    n->canary = CANARY;
    PyObject_GC_Track(n);
    return n;
}

/* The heap is consistent: a new self-cycle is found, exactly. */
static void check_heap_still_counts(void) {
    Node *n = node();
    n->ref = Py_NewRef(n);
    Py_DECREF(n);
    long before = deallocs;
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);
}

/* ------------------------------------------------------------------------- */

static void test_track_twice(void) {
    reset_capture();
    Node *n = node();
    CHECK_EQ_INT(n_captured, 0);
    PyObject_GC_Track(n); /* already tracked */
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Track");
    CHECK_CONTAINS(captured, "misuse.Node");
    CHECK_CONTAINS(captured, "already tracked");
    CHECK_EQ_INT(last_kind, CGC_ERR_MISUSE);
    CHECK(PyErr_Occurred() != NULL);
    CHECK_EQ_INT(PyObject_GC_IsTracked(n), 1);
    /* Tracked once only: as a garbage self-cycle it is found once. */
    n->ref = Py_NewRef(n);
    Py_DECREF(n);
    long before = deallocs;
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);
    check_heap_still_counts();
}

static void test_track_non_gc_object(void) {
    reset_capture();
    Plain *p = PyObject_New(Plain, &PlainType);
    REQUIRE(p != NULL);
    p->value = 1234;
    PyObject_GC_Track(p);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Track");
    CHECK_CONTAINS(captured, "misuse.Plain");
    CHECK_CONTAINS(captured, "not a GC object");
    CHECK_EQ_INT(last_kind, CGC_ERR_MISUSE);
    CHECK_EQ_INT(PyObject_GC_IsTracked(p), 0);
    CHECK_EQ_INT(p->value, 1234); /* nothing written in front of or into it */

    reset_capture();
    PyObject_GC_UnTrack(p);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_UnTrack");
    CHECK_CONTAINS(captured, "misuse.Plain");
    CHECK_CONTAINS(captured, "not a GC object");
    Py_DECREF(p);
    check_heap_still_counts();
}

static void test_gc_new_of_non_gc_type(void) {
    reset_capture();
    Plain *p = PyObject_GC_New(Plain, &PlainType);
    CHECK(p == NULL);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_New");
    CHECK_CONTAINS(captured, "misuse.Plain");
    CHECK_CONTAINS(captured, "Py_TPFLAGS_HAVE_GC");
    CHECK(PyErr_Occurred() != NULL);

    reset_capture();
    CHECK(PyObject_GC_NewVar(Plain, &PlainType, 3) == NULL);
    CHECK_CONTAINS(captured, "PyObject_GC_NewVar");
    CHECK_CONTAINS(captured, "misuse.Plain");
    CHECK_CONTAINS(captured, "Py_TPFLAGS_HAVE_GC");
}

static void test_negative_size(void) {
    reset_capture();
    Vec *v = PyObject_GC_NewVar(Vec, &VecType, -5);
    CHECK(v == NULL);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_NewVar");
    CHECK_CONTAINS(captured, "misuse.Vec");
    CHECK_CONTAINS(captured, "negative size");
    CHECK_CONTAINS(captured, "-5");
    CHECK_EQ_INT(last_kind, CGC_ERR_VALUE);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_VALUE);
    CHECK_CONTAINS(cgc_error_message(), "negative size");
    check_heap_still_counts();
}

static void test_resize_tracked(void) {
    reset_capture();
    Vec *v = PyObject_GC_NewVar(Vec, &VecType, 2);
    REQUIRE(v != NULL);
    v->items[0] = v->items[1] = NULL;
    PyObject_GC_Track(v);
    Vec *r = PyObject_GC_Resize(Vec, v, 100);
    CHECK(r == NULL);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Resize");
    CHECK_CONTAINS(captured, "misuse.Vec");
    CHECK_CONTAINS(captured, "tracked");
    CHECK_EQ_INT(last_kind, CGC_ERR_MISUSE);
    CHECK_EQ_INT(Py_SIZE(v), 2); /* unchanged, still valid, still tracked */
    CHECK_EQ_INT(PyObject_GC_IsTracked(v), 1);
    Py_DECREF(v); /* the default dealloc frees it */
    check_heap_still_counts();
}

static void test_missing_incref(void) {
    reset_capture();
    uint64_t corruption_before = cgc_error_count(CGC_ERR_CORRUPTION);
    /* a -> b (owned); b -> a twice, each missing its Py_INCREF. We hold a:
     * its count is 1, but the collector finds 2 references to it among
     * the candidates. A collector that trusted the count would free a
     * (and b) under our feet. */
    Node *a = node();
    Node *b = node();
    a->ref = (PyObject *)b;
    b->ref = (PyObject *)a;  /* missing Py_INCREF */
    b->ref2 = (PyObject *)a; /* missing Py_INCREF */
    long before = deallocs;
    Py_ssize_t found = gc_collect();
    CHECK_EQ_INT(found, 0);
    REQUIRE_EQ_INT(deallocs, before); /* nothing freed */
    CHECK_EQ_INT(a->canary, CANARY);
    CHECK_EQ_INT(b->canary, CANARY);
    CHECK(a->ref == (PyObject *)b && b->ref == (PyObject *)a && b->ref2 == (PyObject *)a);
    CHECK_EQ_INT(Py_REFCNT(a), 1);
    CHECK_EQ_INT(Py_REFCNT(b), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(a), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(b), 1);
    CHECK(n_captured >= 1);
    CHECK_CONTAINS(captured, "collector"); /* the function: a collection */
    CHECK_CONTAINS(captured, "misuse.Node");
    CHECK_CONTAINS(captured, "reference count");
    CHECK_CONTAINS(captured, "Py_INCREF is missing");
    CHECK_CONTAINS(captured, "kept alive");
    CHECK_EQ_INT(last_kind, CGC_ERR_CORRUPTION);
    CHECK(cgc_error_count(CGC_ERR_CORRUPTION) > corruption_before);

    /* Repair the counts: from then on, an ordinary garbage cycle. */
    Py_INCREF(a);
    Py_INCREF(a);
    Py_DECREF(a); /* ours */
    reset_capture();
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, before + 2);
    CHECK_EQ_INT(n_captured, 0);
    check_heap_still_counts();
}

static void test_tracked_with_zero_refcount(void) {
    /* A tracked object whose count is 0 (a Py_DECREF too many, or a
     * tp_dealloc that forgot to untrack): reported, kept alive. */
    reset_capture();
    Node *n = node();
    n->ref = Py_NewRef(n);
    Py_DECREF(n); /* garbage self-cycle, count 1 */
    Py_SET_REFCNT(n, 0);
    long before = deallocs;
    Py_ssize_t found = gc_collect();
    REQUIRE_EQ_INT(deallocs, before);
    CHECK_EQ_INT(found, 0);
    CHECK_EQ_INT(n->canary, CANARY);
    CHECK(n_captured >= 1);
    CHECK_CONTAINS(captured, "collector");
    CHECK_CONTAINS(captured, "misuse.Node");
    CHECK_CONTAINS(captured, "reference count 0");
    CHECK_EQ_INT(last_kind, CGC_ERR_CORRUPTION);
    /* Repaired, it is collected normally. */
    Py_SET_REFCNT(n, 1);
    reset_capture();
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);
    CHECK_EQ_INT(n_captured, 0);
}

static void test_track_from_traverse(void) {
    /* tp_traverse must not change the graph: tracking from it is refused. */
    reset_capture();
    Node *held = node();
    Node *victim = PyObject_GC_New(Node, &NodeType);
    REQUIRE(victim != NULL);
    victim->ref = victim->ref2 = NULL;
    victim->canary = CANARY;
    track_in_traverse = (PyObject *)victim;
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK(track_in_traverse == NULL); /* the traverse did try */
    CHECK_EQ_INT(PyObject_GC_IsTracked(victim), 0);
    CHECK(n_captured >= 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Track");
    CHECK_CONTAINS(captured, "misuse.Node");
    CHECK_CONTAINS(captured, "tp_traverse");
    Py_DECREF(victim);
    Py_DECREF(held);
    check_heap_still_counts();
}

/* A tp_dealloc that frees twice (PyObject_GC_Del, then tp_free, say): the
 * second free is refused. Done, it would put the slot on its page's free
 * list twice, and the next two allocations would get the same memory. */
static void test_second_free(void) {
    reset_capture();
    Node *n = PyObject_GC_New(Node, &NodeType);
    REQUIRE(n != NULL);
    PyObject_GC_Del(n);
    CHECK_EQ_INT(n_captured, 0);
    PyObject_GC_Del(n); /* freed already */
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Del");
    CHECK_CONTAINS(captured, "misuse.Node");
    CHECK_CONTAINS(captured, "freed already");
    CHECK_EQ_INT(last_kind, CGC_ERR_MISUSE);
    Node *a = node(), *b = node();
    CHECK(a != b);
    a->canary = b->canary = CANARY;
    Py_DECREF(a);
    Py_DECREF(b);
    /* Tracking or resizing a freed object is refused too. */
    reset_capture();
    Vec *v = PyObject_GC_NewVar(Vec, &VecType, 2);
    REQUIRE(v != NULL);
    PyObject_GC_Del(v);
    PyObject_GC_Track(v);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Track");
    CHECK_CONTAINS(captured, "misuse.Vec");
    CHECK_CONTAINS(captured, "was freed");
    CHECK(PyObject_GC_Resize(Vec, v, 1000) == NULL);
    CHECK_EQ_INT(n_captured, 2);
    CHECK_CONTAINS(captured, "PyObject_GC_Resize");
    /* A large object (a page of its own, given back when freed) too, with or
     * without the arena (CYCLEGC_NO_ARENA: it crashed). */
    reset_capture();
    Vec *large = PyObject_GC_NewVar(Vec, &VecType, 20000);
    REQUIRE(large != NULL);
    PyObject_GC_Del(large);
    PyObject_GC_Del(large);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_Del");
    CHECK_CONTAINS(captured, "freed already");
    check_heap_still_counts();
}

/* An object cyclegc never allocated (on the stack, from malloc) cannot be
 * tracked: its memory has no collector metadata, which must not be read. */
static void test_track_foreign_object(void) {
    Node on_stack;
    memset(&on_stack, 0, sizeof on_stack);
    Py_SET_REFCNT((PyObject *)&on_stack, 1);
    Py_SET_TYPE((PyObject *)&on_stack, &NodeType);
    Node *from_malloc = (Node *)calloc(1, sizeof(Node));
    REQUIRE(from_malloc != NULL);
    Py_SET_REFCNT((PyObject *)from_malloc, 1);
    Py_SET_TYPE((PyObject *)from_malloc, &NodeType);
    Node *foreign[] = {&on_stack, from_malloc};
    for (int i = 0; i < 2; ++i) {
        reset_capture();
        PyObject_GC_Track(foreign[i]);
        CHECK_EQ_INT(n_captured, 1);
        CHECK_CONTAINS(captured, "PyObject_GC_Track");
        CHECK_CONTAINS(captured, "misuse.Node");
        CHECK_CONTAINS(captured, "not an object of this heap");
        CHECK(strstr(captured, "freed") == NULL);
        CHECK_EQ_INT(last_kind, CGC_ERR_MISUSE);
    }
    free(from_malloc);
    check_heap_still_counts();
}

/* GC objects are capped at 4 GiB (a slot's size is 32 bits): a larger one is
 * refused as such, not as "out of memory" (malloc may serve that size). */
static void test_size_cap(void) {
    reset_capture();
    Py_ssize_t items = (Py_ssize_t)(((size_t)5 << 30) / sizeof(PyObject *));
    Vec *v = PyObject_GC_NewVar(Vec, &VecType, items);
    CHECK(v == NULL);
    CHECK_EQ_INT(n_captured, 1);
    CHECK_CONTAINS(captured, "PyObject_GC_NewVar");
    CHECK_CONTAINS(captured, "misuse.Vec");
    CHECK_CONTAINS(captured, "larger than the 4 GiB a GC object may have");
    CHECK_EQ_INT(last_kind, CGC_ERR_MEMORY);
    check_heap_still_counts();
}

static void test_default_hook_restored(void) {
    /* NULL restores the default hook (stderr); ours is returned. */
    cgc_error_hook previous = cgc_set_error_hook(NULL, NULL);
    CHECK(previous == capture);
    cgc_error_hook def = cgc_set_error_hook(capture, NULL);
    CHECK(def != NULL && def != capture);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&NodeType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&VecType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&PlainType), 0);
    cgc_set_error_hook(capture, NULL);
    RUN(test_track_twice);
    RUN(test_track_non_gc_object);
    RUN(test_gc_new_of_non_gc_type);
    RUN(test_negative_size);
    RUN(test_resize_tracked);
    RUN(test_missing_incref);
    RUN(test_tracked_with_zero_refcount);
    RUN(test_track_from_traverse);
    RUN(test_second_free);
    RUN(test_track_foreign_object);
    RUN(test_size_cap);
    RUN(test_default_hook_restored);
    cgc_set_error_hook(NULL, NULL);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
