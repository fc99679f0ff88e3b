/* The original Python 2.0 GC API (spec 004): Py_TPFLAGS_GC, PyGC_HEAD_SIZE
 * counted in tp_basicsize, objects made with PyObject_New and freed with
 * PyObject_Del, PyObject_GC_Init / PyObject_GC_Fini to (un)track, and
 * PyObject_AS_GC / PyObject_FROM_GC (the header sits in front of the
 * object). Such objects must take part in collections like any other. */
#include <cyclegc/Python.h>

#include <stdint.h>

#include "check.h"

#define CANARY 0x2000L
#define DEAD 0xDEADL

typedef struct {
    PyObject_HEAD
    PyObject *ref;
    long canary;
} Old;

static long deallocs = 0, bad = 0;

static int Old_traverse(PyObject *self, visitproc visit, void *arg) {
    Old *o = (Old *)self;
    if (o->ref) {
        int r = visit(o->ref, arg); /* the 2.0 style, without Py_VISIT */
        if (r) return r;
    }
    return 0;
}

static int Old_clear(PyObject *self) {
    Old *o = (Old *)self;
    PyObject *tmp = o->ref;
    o->ref = NULL;
    Py_XDECREF(tmp);
    return 0;
}

static void Old_dealloc(PyObject *self) {
    PyObject_GC_Fini(self); /* before the pointers become invalid */
    Old *o = (Old *)self;
    if (o->canary != CANARY) bad++;
    o->canary = DEAD;
    Py_XDECREF(o->ref);
    deallocs++;
    PyObject_Del(self);
}

static PyTypeObject OldType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "py20.Old",
    .tp_basicsize = sizeof(Old) + PyGC_HEAD_SIZE, /* "include PyGC_HEAD_SIZE" */
    .tp_dealloc = Old_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_GC,
    .tp_traverse = Old_traverse,
    .tp_clear = Old_clear,
};

static Old *old_new(PyObject *ref) {
    Old *o = PyObject_New(Old, &OldType);
    REQUIRE(o != NULL);
    o->ref = ref;
    o->canary = CANARY;
    PyObject_GC_Init(o); /* "usually just before returning the object" */
    return o;
}

static void test_names(void) {
    CHECK_EQ_INT(Py_TPFLAGS_GC, Py_TPFLAGS_HAVE_GC);
    CHECK_EQ_INT(PyGC_HEAD_SIZE, sizeof(PyGC_Head));
    /* cyclegc's header is 8 bytes, kept beside the object (docs/design.md). */
    CHECK(PyGC_HEAD_SIZE >= (Py_ssize_t)sizeof(void *));
    CHECK(PyType_IS_GC(&OldType));
}

static void test_as_gc_from_gc(void) {
    Old *o = old_new(NULL);
    PyGC_Head *g = PyObject_AS_GC(o);
    CHECK(g != NULL);
    CHECK(PyObject_FROM_GC(g) == (PyObject *)o);
    CHECK(PyObject_FROM_GC(PyObject_AS_GC(o)) == (PyObject *)o);
    CHECK_EQ_INT((uintptr_t)g % sizeof(void *), 0);
    CHECK_EQ_INT(PyObject_IS_GC(o), 1);
    /* The header is the collector's: a tracked object's is not all zero. */
    static const PyGC_Head zero;
    CHECK(memcmp(g, &zero, sizeof zero) != 0);
    Py_DECREF(o);
}

/* Python 2.0 code freed GC objects through their header pointer. */
static void test_free_through_header(void) {
    long before = deallocs;
    Old *o = PyObject_New(Old, &OldType);
    REQUIRE(o != NULL);
    PyObject_DEL(PyObject_AS_GC(o));
    Old *p = PyObject_New(Old, &OldType);
    REQUIRE(p != NULL);
    PyObject_FREE(PyObject_AS_GC(p));
    CHECK_EQ_INT(deallocs, before); /* freed, not deallocated */
}

static void test_init_fini(void) {
    long before = deallocs;
    Old *o = PyObject_New(Old, &OldType);
    REQUIRE(o != NULL);
    o->ref = NULL;
    o->canary = CANARY;
    CHECK_EQ_INT(PyObject_GC_IsTracked(o), 0);
    PyObject_GC_Init(o);
    CHECK_EQ_INT(PyObject_GC_IsTracked(o), 1);
    PyObject_GC_Fini(o);
    CHECK_EQ_INT(PyObject_GC_IsTracked(o), 0);
    PyObject_GC_Init(o); /* "can be called again" */
    CHECK_EQ_INT(PyObject_GC_IsTracked(o), 1);
    /* An untracked (Fini) self-cycle is not collected... */
    o->ref = Py_NewRef(o);
    PyObject_GC_Fini(o);
    Py_DECREF(o);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(deallocs, before);
    CHECK_EQ_INT(o->canary, CANARY);
    /* ...and is once tracked again. */
    PyObject_GC_Init(o);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 1);
}

static void test_del_without_dealloc(void) {
    /* PyObject_Del frees a GC object made by PyObject_New (header and all:
     * AddressSanitizer checks the right block is freed). */
    Old *o = PyObject_New(Old, &OldType);
    REQUIRE(o != NULL);
    long before = deallocs;
    PyObject_Del(o);
    CHECK_EQ_INT(deallocs, before);
    o = PyObject_NEW(Old, &OldType);
    REQUIRE(o != NULL);
    PyObject_DEL(o);
}

static void test_cycles_collected(void) {
    gc_collect();
    long before = deallocs;
    /* A self-cycle, a 2-cycle, a 100-ring. */
    Old *s = old_new(NULL);
    s->ref = Py_NewRef(s);
    Py_DECREF(s);
    Old *a = old_new(NULL);
    Old *b = old_new(Py_NewRef(a));
    a->ref = (PyObject *)b;
    Py_DECREF(a);
    Old *head = old_new(NULL), *tail = head;
    for (int i = 1; i < 100; i++) {
        Old *x = old_new(NULL);
        tail->ref = (PyObject *)x;
        tail = x;
    }
    tail->ref = (PyObject *)head; /* the ring takes our reference */
    CHECK_EQ_INT(deallocs, before);
    CHECK_EQ_INT(gc_collect(), 103);
    CHECK_EQ_INT(deallocs, before + 103);

    /* A held one survives, intact. */
    Old *kept = old_new(NULL);
    kept->ref = Py_NewRef(kept);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(kept->canary, CANARY);
    CHECK(kept->ref == (PyObject *)kept);
    Py_DECREF(kept);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, before + 104);
    CHECK_EQ_INT(bad, 0);
}

static void test_raw_memory_macros(void) {
    char *p = PyObject_MALLOC(16);
    REQUIRE(p != NULL);
    memcpy(p, "python 2.0 api", 15);
    p = PyObject_REALLOC(p, 4096);
    REQUIRE(p != NULL);
    CHECK(strcmp(p, "python 2.0 api") == 0);
    PyObject_FREE(p);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&OldType), 0);
    RUN(test_names);
    RUN(test_as_gc_from_gc);
    RUN(test_free_through_header);
    RUN(test_init_fini);
    RUN(test_del_without_dealloc);
    RUN(test_cycles_collected);
    RUN(test_raw_memory_macros);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
