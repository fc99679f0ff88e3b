/* PyObject_GC_IsFinalized seen from a finalizer that
 * PyObject_CallFinalizerFromDealloc runs (a reference-counting death): 0, as
 * in CPython, whose PyObject_CallFinalizer sets the FINALIZED bit only after
 * tp_finalize returns; 1 afterwards (a resurrected object), and the finalizer
 * never runs twice. (A collection, like CPython's finalize_garbage, sets the
 * bit before calling the finalizer: 1 there.) */
#include <cyclegc/Python.h>

#include "check.h"

typedef struct {
    PyObject_HEAD
    PyObject *ref;
} FObj;

static int finalizes = 0, deallocs = 0, seen_finalized = -1;
static PyObject *stash;
static int resurrect;
static int over_decref; /* the finalizer drops a reference it does not own */

static int F_traverse(FObj *self, visitproc visit, void *arg) {
    Py_VISIT(self->ref);
    return 0;
}
static int F_clear(FObj *self) {
    Py_CLEAR(self->ref);
    return 0;
}
static void F_finalize(PyObject *self) {
    finalizes++;
    seen_finalized = PyObject_GC_IsFinalized(self);
    if (resurrect) stash = Py_NewRef(self);
    if (over_decref) Py_DECREF(self);
}
static void F_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return; /* resurrected */
    deallocs++;
    PyObject_GC_UnTrack(self);
    F_clear((FObj *)self);
    Py_TYPE(self)->tp_free(self);
}
static PyTypeObject FType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "F",
    .tp_basicsize = sizeof(FObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_FINALIZE,
    .tp_dealloc = F_dealloc,
    .tp_traverse = (traverseproc)F_traverse,
    .tp_clear = (inquiry)F_clear,
    .tp_finalize = F_finalize,
};
/* The same type without tp_dealloc: cgc_default_dealloc's finalizer call. */
static PyTypeObject DType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "D",
    .tp_basicsize = sizeof(FObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)F_traverse,
    .tp_clear = (inquiry)F_clear,
    .tp_finalize = F_finalize,
};

static void test_from_dealloc(PyTypeObject *type) {
    finalizes = deallocs = 0;
    FObj *a = (FObj *)type->tp_alloc(type, 0);
    REQUIRE(a != NULL);
    Py_DECREF(a);
    CHECK_EQ_INT(finalizes, 1);
    CHECK_EQ_INT(seen_finalized, 0);

    resurrect = 1;
    FObj *r = (FObj *)type->tp_alloc(type, 0);
    REQUIRE(r != NULL);
    Py_DECREF(r);
    resurrect = 0;
    REQUIRE(stash == (PyObject *)r);
    CHECK_EQ_INT(finalizes, 2);
    CHECK_EQ_INT(seen_finalized, 0);
    CHECK_EQ_INT(PyObject_GC_IsFinalized((PyObject *)r), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)r), 1);
    Py_CLEAR(stash); /* dies for good, without a second finalization */
    CHECK_EQ_INT(finalizes, 2);
}

static void test_static_dealloc(void) { test_from_dealloc(&FType); }
static void test_default_dealloc(void) { test_from_dealloc(&DType); }

static void test_from_collection(void) {
    finalizes = 0;
    FObj *c = (FObj *)FType.tp_alloc(&FType, 0);
    REQUIRE(c != NULL);
    c->ref = Py_NewRef((PyObject *)c);
    Py_DECREF(c);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(finalizes, 1);
    CHECK_EQ_INT(seen_finalized, 1);
}

/* A Py_DECREF too many inside a finalizer run from the deallocation must not
 * deallocate (and finalize) the object again from inside its finalizer: it is
 * reported, and the object is freed once, when the finalizer returns. */
static void test_over_decref_in_finalizer(void) {
    finalizes = deallocs = 0;
    cgc_error_clear();
    over_decref = 1;
    FObj *a = (FObj *)FType.tp_alloc(&FType, 0);
    REQUIRE(a != NULL);
    Py_DECREF(a);
    over_decref = 0;
    CHECK_EQ_INT(finalizes, 1);
    CHECK_EQ_INT(deallocs, 1);
    CHECK(cgc_error_occurred());
    cgc_error_clear();
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&FType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&DType), 0);
    RUN(test_static_dealloc);
    RUN(test_default_dealloc);
    RUN(test_from_collection);
    RUN(test_over_decref_in_finalizer);
    return CHECK_DONE();
}
