/* CPython's "Defining Extension Types: Tutorial", the GC-supporting Custom
 * type (custom4.c), as written there: .tp_doc = PyDoc_STR("..."), tp_new via
 * type->tp_alloc, tp_traverse with Py_VISIT, tp_clear with Py_CLEAR,
 * tp_dealloc = PyObject_GC_UnTrack + clear + Py_TYPE(self)->tp_free; and the
 * tutorial's first version, tp_new = PyType_GenericNew. A conformance check
 * found that PyDoc_STR was missing (the tutorial's type did not compile). */
#include <cyclegc/Python.h>

#include "check.h"

typedef struct {
    PyObject_HEAD
    PyObject *first; /* first name */
    PyObject *last;  /* last name */
    int number;
} CustomObject;

static int deallocs = 0;

static int Custom_traverse(CustomObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->first);
    Py_VISIT(self->last);
    return 0;
}

static int Custom_clear(CustomObject *self) {
    Py_CLEAR(self->first);
    Py_CLEAR(self->last);
    return 0;
}

static void Custom_dealloc(CustomObject *self) {
    deallocs++;
    PyObject_GC_UnTrack(self);
    Custom_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Custom_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    CustomObject *self;
    (void)args;
    (void)kwds;
    self = (CustomObject *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->first = NULL;
        self->last = NULL;
        self->number = 0;
    }
    return (PyObject *)self;
}

PyDoc_STRVAR(custom2_doc, "Custom2 objects");

static PyTypeObject CustomType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "custom4.Custom",
    .tp_doc = PyDoc_STR("Custom objects"),
    .tp_basicsize = sizeof(CustomObject),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = Custom_new,
    .tp_dealloc = (destructor)Custom_dealloc,
    .tp_traverse = (traverseproc)Custom_traverse,
    .tp_clear = (inquiry)Custom_clear,
};

static PyTypeObject Custom2Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "custom.Custom2",
    .tp_doc = custom2_doc,
    .tp_basicsize = sizeof(CustomObject),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)Custom_dealloc,
    .tp_traverse = (traverseproc)Custom_traverse,
    .tp_clear = (inquiry)Custom_clear,
};

static CustomObject *make(PyTypeObject *type) {
    CustomObject *o = (CustomObject *)type->tp_new(type, NULL, NULL);
    REQUIRE(o != NULL);
    return o;
}

static void test_doc_strings(void) {
    CHECK(strcmp(CustomType.tp_doc, "Custom objects") == 0);
    CHECK(strcmp(Custom2Type.tp_doc, "Custom2 objects") == 0);
    CHECK_EQ_INT(sizeof custom2_doc, sizeof "Custom2 objects");
}

static void test_ready_defaults(void) {
    CHECK_EQ_INT(PyType_IS_GC(&CustomType), 1);
    CHECK(CustomType.tp_alloc == PyType_GenericAlloc);
    CHECK(CustomType.tp_free == PyObject_GC_Del);
    CHECK(Custom2Type.tp_free == PyObject_GC_Del);
}

static void test_cycles(void) {
    PyTypeObject *types[] = {&CustomType, &Custom2Type};
    for (int t = 0; t < 2; t++) {
        gc_collect();
        int before = deallocs;
        CustomObject *a = make(types[t]);
        CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)a), 1); /* tp_alloc tracks */
        CHECK(a->first == NULL && a->last == NULL);
        CustomObject *b = make(types[t]);
        a->first = Py_NewRef((PyObject *)b);
        b->last = Py_NewRef((PyObject *)a);
        Py_DECREF(a);
        Py_DECREF(b);
        CustomObject *c = make(types[t]);
        c->first = Py_NewRef((PyObject *)c);
        Py_DECREF(c);
        CHECK_EQ_INT(deallocs, before);
        CHECK_EQ_INT(gc_collect(), 3);
        CHECK_EQ_INT(deallocs, before + 3);
        /* Acyclic: freed by reference counting, at once. */
        CustomObject *p = make(types[t]), *q = make(types[t]);
        p->first = (PyObject *)q;
        Py_DECREF(p);
        CHECK_EQ_INT(deallocs, before + 5);
    }
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&CustomType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&Custom2Type), 0);
    RUN(test_doc_strings);
    RUN(test_ready_defaults);
    RUN(test_cycles);
    return CHECK_DONE();
}
