/* Python 2.0's low-level memory API for GC objects (spec 004): "void
 * *PyObject_REALLOC(void *gc, int n) ... For objects participating in GC,
 * these macros deal with PyGC_Head pointers." 2.0 resized a container (as
 * its _PyTuple_Resize did) with PyObject_GC_Fini, then
 * PyObject_REALLOC(PyObject_AS_GC(op), size + PyGC_HEAD_SIZE), then
 * PyObject_FROM_GC and PyObject_GC_Init. A conformance check found that
 * cyclegc passed the header pointer to the C library's realloc, which
 * aborted ("realloc(): invalid old size") or corrupted the heap. */
#include <cyclegc/Python.h>

#include <stddef.h>

#include "check.h"

typedef struct {
    PyObject_VAR_HEAD
    PyObject *item[1];
} Vec;

static int deallocs = 0;

static int Vec_traverse(PyObject *self, visitproc visit, void *arg) {
    Vec *v = (Vec *)self;
    int i, err;
    for (i = 0; i < Py_SIZE(v); i++)
        if (v->item[i] && (err = visit(v->item[i], arg)) != 0) return err;
    return 0;
}
static int Vec_clear(PyObject *self) {
    Vec *v = (Vec *)self;
    for (Py_ssize_t i = 0; i < Py_SIZE(v); i++) Py_CLEAR(v->item[i]);
    return 0;
}
static void Vec_dealloc(PyObject *self) {
    deallocs++;
    PyObject_GC_Fini(self);
    Vec_clear(self);
    PyObject_Del(self);
}
static PyTypeObject VecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Vec",
    .tp_basicsize = offsetof(Vec, item) + PyGC_HEAD_SIZE,
    .tp_itemsize = sizeof(PyObject *),
    .tp_dealloc = Vec_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_GC,
    .tp_traverse = Vec_traverse,
    .tp_clear = Vec_clear,
};

/* A fixed-size GC type. */
typedef struct {
    PyObject_HEAD
    PyObject *ref;
} Cell;
static int Cell_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Cell *)self)->ref);
    return 0;
}
static PyTypeObject CellType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Cell",
    .tp_basicsize = sizeof(Cell) + PyGC_HEAD_SIZE,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_GC,
    .tp_traverse = Cell_traverse,
};

static size_t vec_bytes(int n) { return offsetof(Vec, item) + (size_t)n * sizeof(PyObject *); }

/* 2.0's resize idiom. */
static Vec *vec_resize(Vec *v, int n) {
    Py_ssize_t old = Py_SIZE(v);
    PyObject_GC_Fini(v);
    PyGC_Head *g = PyObject_AS_GC(v);
    g = PyObject_REALLOC(g, vec_bytes(n) + PyGC_HEAD_SIZE);
    if (g == NULL) return NULL;
    v = (Vec *)PyObject_FROM_GC(g);
    CHECK_EQ_INT(Py_SIZE(v), old); /* the caller sets ob_size, as 2.0 code did */
    for (Py_ssize_t i = old; i < n; i++) v->item[i] = NULL;
    Py_SET_SIZE(v, n);
    PyObject_GC_Init(v);
    return v;
}

static Vec *vec_new(int n) {
    Vec *v = PyObject_NEW_VAR(Vec, &VecType, n);
    REQUIRE(v != NULL);
    for (int i = 0; i < n; i++) v->item[i] = NULL;
    PyObject_GC_Init(v);
    return v;
}

static void test_grow_through_header(void) {
    gc_collect();
    int before = deallocs;
    Vec *k = vec_new(1); /* a marker item, to see the contents survive */
    Vec *v = vec_new(2);
    v->item[0] = Py_NewRef((PyObject *)k);
    for (int n = 3; n <= 2000; n = n * 2 + 1) {
        v = vec_resize(v, n);
        REQUIRE(v != NULL);
        CHECK_EQ_INT(Py_SIZE(v), n);
        CHECK(v->item[0] == (PyObject *)k);
        CHECK(v->item[n - 1] == NULL);
        CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)v), 1);
        CHECK(PyObject_FROM_GC(PyObject_AS_GC(v)) == (PyObject *)v);
    }
    v->item[Py_SIZE(v) - 1] = Py_NewRef((PyObject *)v); /* a self-cycle */
    Py_DECREF(v);
    Py_DECREF(k);
    CHECK_EQ_INT(deallocs, before);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, before + 2);
}

static void test_shrink_through_header(void) {
    int before = deallocs;
    Vec *v = vec_new(300);
    v->item[0] = Py_NewRef((PyObject *)v);
    v = vec_resize(v, 1);
    REQUIRE(v != NULL);
    CHECK_EQ_INT(Py_SIZE(v), 1);
    CHECK(v->item[0] == (PyObject *)v);
    Py_DECREF(v);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);
}

/* PyObject_Realloc of the object's own pointer: `size` counts the object. */
static void test_object_pointer(void) {
    Vec *v = PyObject_NEW_VAR(Vec, &VecType, 1);
    REQUIRE(v != NULL);
    v->item[0] = NULL;
    v = PyObject_Realloc(v, vec_bytes(500));
    REQUIRE(v != NULL);
    for (int i = 0; i < 500; i++) v->item[i] = NULL;
    Py_SET_SIZE(v, 500);
    CHECK_EQ_INT(PyObject_IS_GC((PyObject *)v), 1);
    PyObject_Del(v);
}

static void test_refused(void) {
    /* A tracked object must be untracked (PyObject_GC_Fini) first. */
    Vec *v = vec_new(2);
    cgc_error_clear();
    CHECK(PyObject_REALLOC(PyObject_AS_GC(v), vec_bytes(100) + PyGC_HEAD_SIZE) == NULL);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    CHECK_CONTAINS(cgc_error_message(), "is tracked");
    cgc_error_clear();
    CHECK_EQ_INT(PyObject_GC_IsTracked((PyObject *)v), 1);
    CHECK_EQ_INT(Py_SIZE(v), 2);
    Py_DECREF(v);

    /* A fixed-size object cannot grow past its tp_basicsize, may "shrink". */
    Cell *c = PyObject_New(Cell, &CellType);
    REQUIRE(c != NULL);
    PyGC_Head *g = PyObject_AS_GC(c);
    CHECK(PyObject_REALLOC(g, sizeof(Cell) + PyGC_HEAD_SIZE) == (void *)g);
    CHECK(PyObject_REALLOC(g, 4096) == NULL);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_VALUE);
    cgc_error_clear();
    PyObject_Del(c);
}

static void test_plain_memory(void) {
    char *p = PyObject_REALLOC(NULL, 8);
    REQUIRE(p != NULL);
    memcpy(p, "abcdefg", 8);
    p = PyObject_REALLOC(p, 1 << 20);
    REQUIRE(p != NULL);
    CHECK(strcmp(p, "abcdefg") == 0);
    p = PyObject_Realloc(p, 16);
    REQUIRE(p != NULL);
    CHECK(strcmp(p, "abcdefg") == 0);
    PyObject_FREE(p);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&VecType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&CellType), 0);
    RUN(test_grow_through_header);
    RUN(test_shrink_through_header);
    RUN(test_object_pointer);
    RUN(test_refused);
    RUN(test_plain_memory);
    return CHECK_DONE();
}
