/* Names the older spec pages document that a conformance check found
 * missing from <cyclegc/Python.h> (code using them did not compile):
 * - _PyObject_GC_TRACK / _PyObject_GC_UNTRACK, "a macro version of
 *   PyObject_GC_Track / PyObject_GC_UnTrack" (2.x page, spec 002, and the
 *   3.7 page, spec 000), as the 2.x "noddy" tutorial's types used them;
 * - PyObject_GC_VarNew, the 2.x page's constructor rule ("allocated using
 *   PyObject_GC_New or PyObject_GC_VarNew"), and PyObject_VarNew, the 2.0
 *   API's summary ("use PyObject_{New, VarNew, Del}"): the documentation's
 *   spellings of PyObject_GC_NewVar and PyObject_NewVar.
 * Each must behave as the function it stands for. */
#include <cyclegc/Python.h>

#include <stddef.h>

#include "check.h"

typedef struct {
    PyObject_HEAD
    PyObject *first;
    PyObject *last;
} Noddy;

static int deallocs = 0;

/* The 2.x tutorial's traverse, without Py_VISIT. */
static int Noddy_traverse(Noddy *self, visitproc visit, void *arg) {
    int vret;
    if (self->first) {
        vret = visit(self->first, arg);
        if (vret != 0) return vret;
    }
    if (self->last) {
        vret = visit(self->last, arg);
        if (vret != 0) return vret;
    }
    return 0;
}

static int Noddy_clear(Noddy *self) {
    PyObject *tmp = self->first;
    self->first = NULL;
    Py_XDECREF(tmp);
    tmp = self->last;
    self->last = NULL;
    Py_XDECREF(tmp);
    return 0;
}

static void Noddy_dealloc(Noddy *self) {
    deallocs++;
    _PyObject_GC_UNTRACK(self);
    Noddy_clear(self);
    PyObject_GC_Del(self);
}

/* The 2.x tutorial's positional initializer. */
static PyTypeObject NoddyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    "noddy.Noddy",             /* tp_name */
    sizeof(Noddy),             /* tp_basicsize */
    0,                         /* tp_itemsize */
    (destructor)Noddy_dealloc, /* tp_dealloc */
    0,                         /* tp_print */
    0,                         /* tp_getattr */
    0,                         /* tp_setattr */
    0,                         /* tp_compare */
    0,                         /* tp_repr */
    0,                         /* tp_as_number */
    0,                         /* tp_as_sequence */
    0,                         /* tp_as_mapping */
    0,                         /* tp_hash */
    0,                         /* tp_call */
    0,                         /* tp_str */
    0,                         /* tp_getattro */
    0,                         /* tp_setattro */
    0,                         /* tp_as_buffer */
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC, /* tp_flags */
    "Noddy objects",           /* tp_doc */
    (traverseproc)Noddy_traverse, /* tp_traverse */
    (inquiry)Noddy_clear,      /* tp_clear */
};

static Noddy *noddy_new(void) {
    Noddy *self = PyObject_GC_New(Noddy, &NoddyType);
    REQUIRE(self != NULL);
    self->first = NULL;
    self->last = NULL;
    _PyObject_GC_TRACK(self); /* the 2.x constructors' last step */
    return self;
}

static void test_track_macros(void) {
    gc_collect();
    int before = deallocs;
    Noddy *a = noddy_new();
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)a), 1);
    _PyObject_GC_UNTRACK(a);
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)a), 0);
    _PyObject_GC_TRACK(a);
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)a), 1);

    /* A 2-cycle made with the macros is collected. */
    Noddy *b = noddy_new();
    a->first = (PyObject *)b;
    b->last = Py_NewRef((PyObject *)a);
    Py_DECREF(a);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, before + 2);

    /* An untracked self-cycle is not collected until tracked again. */
    Noddy *u = noddy_new();
    u->first = Py_NewRef((PyObject *)u);
    _PyObject_GC_UNTRACK(u);
    Py_DECREF(u);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, before + 2);
    _PyObject_GC_TRACK(u);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 3);
}

typedef struct {
    PyObject_VAR_HEAD
    PyObject *item[1];
} Vec;

static int Vec_traverse(Vec *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++) Py_VISIT(self->item[i]);
    return 0;
}
static int Vec_clear(Vec *self) {
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++) Py_CLEAR(self->item[i]);
    return 0;
}
static void Vec_dealloc(Vec *self) {
    deallocs++;
    PyObject_GC_UnTrack(self);
    Vec_clear(self);
    PyObject_GC_Del(self);
}
static PyTypeObject VecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "noddy.Vec",
    .tp_basicsize = offsetof(Vec, item),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)Vec_dealloc,
    .tp_traverse = (traverseproc)Vec_traverse,
    .tp_clear = (inquiry)Vec_clear,
};

typedef struct {
    PyObject_VAR_HEAD
    char bytes[1];
} Blob;
static PyTypeObject BlobType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "noddy.Blob",
    .tp_basicsize = offsetof(Blob, bytes),
    .tp_itemsize = 1,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static void test_varnew_spellings(void) {
    gc_collect();
    int before = deallocs;
    Vec *v = PyObject_GC_VarNew(Vec, &VecType, 3);
    REQUIRE(v != NULL);
    CHECK_EQ_INT(Py_SIZE(v), 3);
    CHECK_EQ_INT(PyObject_IS_GC((PyObject *)v), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)v), 0);
    for (int i = 0; i < 3; i++) v->item[i] = NULL;
    v->item[2] = Py_NewRef((PyObject *)v);
    _PyObject_GC_TRACK(v);
    Py_DECREF(v);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);

    Blob *b = PyObject_VarNew(Blob, &BlobType, 5);
    REQUIRE(b != NULL);
    CHECK_EQ_INT(Py_SIZE(b), 5);
    CHECK_EQ_INT(PyObject_IS_GC((PyObject *)b), 0);
    memcpy(b->bytes, "2.0!", 5);
    CHECK(strcmp(b->bytes, "2.0!") == 0);
    Py_DECREF(b);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&NoddyType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&VecType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&BlobType), 0);
    RUN(test_track_macros);
    RUN(test_varnew_spellings);
    return CHECK_DONE();
}
