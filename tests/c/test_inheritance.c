/* PyType_Ready and static type inheritance (CPython 3.12 rules):
 *  - a subtype that says nothing about GC, of a GC base, inherits
 *    Py_TPFLAGS_HAVE_GC with tp_traverse and tp_clear (inherit_special);
 *  - a subtype that sets the flag itself inherits no traverse: without one
 *    it is rejected, as is any GC type without tp_traverse (the message,
 *    read with the native cgc_error_message(), names the type and says
 *    "traverse");
 *  - a subtype with extra fields delegates to its base's traverse/clear;
 *  - tp_finalize, tp_dealloc and tp_free are inherited; a subtype that adds
 *    GC to a non-GC base gets PyObject_GC_Del as tp_free. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x1A4E217L
#define DEAD 0xDEADL

typedef struct {
    PyObject_HEAD
    PyObject *ref;
    long canary;
} BaseObj;

typedef struct {
    BaseObj base;
    long extra[3];
} SubObj; /* adds data only */

typedef struct {
    BaseObj base;
    PyObject *other; /* adds a reference */
    long canary2;
} RefSubObj;

static int deallocs = 0, finalizes = 0, base_clears = 0, sub_clears = 0, bad = 0;

static int Base_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((BaseObj *)self)->ref);
    return 0;
}

static int Base_clear(PyObject *self) {
    base_clears++;
    Py_CLEAR(((BaseObj *)self)->ref);
    return 0;
}

static void Base_finalize(PyObject *self) {
    finalizes++;
    if (((BaseObj *)self)->canary != CANARY) bad++;
}

static void Base_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    PyObject_GC_UnTrack(self);
    BaseObj *b = (BaseObj *)self;
    if (b->canary != CANARY) bad++;
    b->canary = DEAD;
    Py_CLEAR(b->ref);
    deallocs++;
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject BaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.Base",
    .tp_basicsize = sizeof(BaseObj),
    .tp_dealloc = Base_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_traverse = Base_traverse,
    .tp_clear = Base_clear,
    .tp_finalize = Base_finalize,
};

/* Says nothing about GC: inherits it. */
static PyTypeObject SubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.Sub",
    .tp_basicsize = sizeof(SubObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_base = &BaseType,
};

/* Two levels down. */
static PyTypeObject SubSubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.SubSub",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_base = &SubType,
};

/* Adds a reference: its own traverse and clear, delegating to the base's. */
static int RefSub_traverse(PyObject *self, visitproc visit, void *arg) {
    int r = BaseType.tp_traverse(self, visit, arg);
    if (r) return r;
    Py_VISIT(((RefSubObj *)self)->other);
    return 0;
}

static int RefSub_clear(PyObject *self) {
    sub_clears++;
    Py_CLEAR(((RefSubObj *)self)->other);
    return BaseType.tp_clear(self);
}

static void RefSub_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    PyObject_GC_UnTrack(self);
    RefSubObj *r = (RefSubObj *)self;
    if (r->canary2 != CANARY) bad++;
    r->canary2 = DEAD;
    Py_CLEAR(r->other);
    BaseType.tp_dealloc(self); /* finalizer already ran: not again */
}

static PyTypeObject RefSubType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.RefSub",
    .tp_basicsize = sizeof(RefSubObj),
    .tp_dealloc = RefSub_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = RefSub_traverse,
    .tp_clear = RefSub_clear,
    .tp_base = &BaseType,
};

/* GC without traverse: rejected. */
static PyTypeObject NoTraverseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.NoTraverse",
    .tp_basicsize = sizeof(BaseObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_clear = Base_clear,
};

/* Sets the flag itself, so inherits no traverse: rejected too. */
static PyTypeObject SubNoTraverseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.SubNoTraverse",
    .tp_basicsize = sizeof(SubObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_base = &BaseType,
};

/* A non-GC base, and a subtype that adds GC. */
typedef struct {
    PyObject_HEAD
    long value;
} PlainObj;

typedef struct {
    PlainObj base;
    PyObject *ref;
    long canary;
} GcOnPlainObj;

static PyTypeObject PlainBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.PlainBase",
    .tp_basicsize = sizeof(PlainObj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
};

static int GcOnPlain_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((GcOnPlainObj *)self)->ref);
    return 0;
}

static int GcOnPlain_clear(PyObject *self) {
    Py_CLEAR(((GcOnPlainObj *)self)->ref);
    return 0;
}

static void GcOnPlain_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    GcOnPlainObj *g = (GcOnPlainObj *)self;
    if (g->canary != CANARY) bad++;
    g->canary = DEAD;
    Py_CLEAR(g->ref);
    deallocs++;
    Py_TYPE(self)->tp_free(self); /* must be PyObject_GC_Del */
}

static PyTypeObject GcOnPlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "inh.GcOnPlain",
    .tp_basicsize = sizeof(GcOnPlainObj),
    .tp_dealloc = GcOnPlain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = GcOnPlain_traverse,
    .tp_clear = GcOnPlain_clear,
    .tp_base = &PlainBaseType,
};

static BaseObj *make(PyTypeObject *type) {
    BaseObj *b = PyObject_GC_New(BaseObj, type);
    REQUIRE(b != NULL);
    memset((char *)b + sizeof(PyObject), 0, (size_t)type->tp_basicsize - sizeof(PyObject));
    b->canary = CANARY;
    PyObject_GC_Track(b);
    return b;
}

static void start(void) {
    gc_collect();
    deallocs = finalizes = base_clears = sub_clears = 0;
}

/* ------------------------------------------------------------------------- */

static void test_inherit_gc_protocol(void) {
    start();
    REQUIRE_EQ_INT(PyType_Ready(&SubType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&SubSubType), 0);
    CHECK(BaseType.tp_flags & Py_TPFLAGS_READY); /* readied with its subtype */
    for (int level = 0; level < 2; level++) {
        PyTypeObject *t = level == 0 ? &SubType : &SubSubType;
        CHECK(PyType_IS_GC(t));
        CHECK(t->tp_traverse == Base_traverse);
        CHECK(t->tp_clear == Base_clear);
        CHECK(t->tp_finalize == Base_finalize);
        CHECK(t->tp_dealloc == Base_dealloc);
        CHECK(t->tp_free == BaseType.tp_free);
        CHECK(t->tp_free == PyObject_GC_Del);
    }
    CHECK_EQ_INT(SubType.tp_basicsize, sizeof(SubObj));
    CHECK_EQ_INT(SubSubType.tp_basicsize, sizeof(SubObj)); /* inherited */
    CHECK_EQ_INT(PyType_Ready(&SubType), 0); /* idempotent */

    /* Instances work as GC objects: tracked, cycles collected with the
     * inherited traverse and clear, the inherited finalizer run once. */
    SubObj *a = (SubObj *)PyObject_GC_New(SubObj, &SubType);
    REQUIRE(a != NULL);
    a->base.ref = NULL;
    a->base.canary = CANARY;
    a->extra[0] = a->extra[1] = a->extra[2] = 7;
    PyObject_GC_Track(a);
    CHECK_EQ_INT(PyObject_IS_GC(a), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(a), 1);
    SubObj *b = (SubObj *)make(&SubSubType);
    a->base.ref = (PyObject *)b;
    b->base.ref = Py_NewRef(a);
    BaseObj *c = make(&BaseType);
    c->ref = Py_NewRef(c);
    Py_DECREF(c);
    Py_DECREF(a);
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(deallocs, 3);
    CHECK_EQ_INT(finalizes, 3);
    CHECK(base_clears >= 1);
    CHECK_EQ_INT(bad, 0);

    /* A held instance survives, intact. */
    start();
    SubObj *kept = (SubObj *)make(&SubSubType);
    kept->extra[2] = 42;
    kept->base.ref = Py_NewRef(kept);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(kept->extra[2], 42);
    CHECK_EQ_INT(kept->base.canary, CANARY);
    Py_DECREF(kept);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, 1);
}

static void test_subtype_with_extra_references(void) {
    start();
    REQUIRE_EQ_INT(PyType_Ready(&RefSubType), 0);
    CHECK(RefSubType.tp_traverse == RefSub_traverse);
    CHECK(RefSubType.tp_finalize == Base_finalize); /* inherited */
    CHECK(RefSubType.tp_free == PyObject_GC_Del);

    /* A cycle only through the subtype's own field: x.other -> y, y.ref -> x. */
    RefSubObj *x = (RefSubObj *)make(&RefSubType);
    x->canary2 = CANARY;
    BaseObj *y = make(&BaseType);
    x->other = (PyObject *)y;
    y->ref = Py_NewRef(x);
    Py_DECREF(x);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(finalizes, 2);
    CHECK_EQ_INT(bad, 0);

    /* Both fields in cycles at once, one of them held from outside. */
    start();
    RefSubObj *p = (RefSubObj *)make(&RefSubType);
    p->canary2 = CANARY;
    RefSubObj *q = (RefSubObj *)make(&RefSubType);
    q->canary2 = CANARY;
    p->base.ref = (PyObject *)q;
    p->other = Py_NewRef(q);
    q->other = Py_NewRef(p);
    q->base.ref = Py_NewRef(q);
    CHECK_EQ_INT(gc_collect(), 0); /* we hold p */
    CHECK_EQ_INT(q->canary2, CANARY);
    CHECK_EQ_INT(Py_REFCNT(q), 3);
    Py_DECREF(p);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(finalizes, 2);
    CHECK(sub_clears >= 1);
    CHECK_EQ_INT(bad, 0);
}

static void test_gc_without_traverse_rejected(void) {
    PyErr_Clear();
    CHECK_EQ_INT(PyType_Ready(&NoTraverseType), -1);
    CHECK(PyErr_Occurred() != NULL);
    /* cgc_error_message() is the native API (cyclegc.h, included by
     * Python.h): the message of the recorded error. */
    const char *message = cgc_error_message();
    CHECK_CONTAINS(message, "inh.NoTraverse");
    CHECK_CONTAINS(message, "traverse");
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_TYPE);
    CHECK(!(NoTraverseType.tp_flags & Py_TPFLAGS_READY));
    PyErr_Clear();
    CHECK(PyErr_Occurred() == NULL);

    /* Still refused on a second try; allocation refuses it too. */
    CHECK_EQ_INT(PyType_Ready(&NoTraverseType), -1);
    PyErr_Clear();
    CHECK(PyObject_GC_New(BaseObj, &NoTraverseType) == NULL);
    CHECK(PyErr_Occurred() != NULL);
    PyErr_Clear();

    /* A subtype that sets the flag itself does not inherit traverse. */
    CHECK_EQ_INT(PyType_Ready(&SubNoTraverseType), -1);
    CHECK_CONTAINS(cgc_error_message(), "inh.SubNoTraverse");
    CHECK_CONTAINS(cgc_error_message(), "traverse");
    PyErr_Clear();
}

static void test_gc_subtype_of_plain_base(void) {
    start();
    REQUIRE_EQ_INT(PyType_Ready(&GcOnPlainType), 0);
    CHECK(!PyType_IS_GC(&PlainBaseType));
    CHECK(PyType_IS_GC(&GcOnPlainType));
    CHECK(PlainBaseType.tp_free != PyObject_GC_Del);
    CHECK(GcOnPlainType.tp_free == PyObject_GC_Del); /* "a bit of magic" */

    GcOnPlainObj *a = PyObject_GC_New(GcOnPlainObj, &GcOnPlainType);
    GcOnPlainObj *b = PyObject_GC_New(GcOnPlainObj, &GcOnPlainType);
    REQUIRE(a && b);
    a->canary = b->canary = CANARY;
    a->base.value = b->base.value = 0;
    a->ref = (PyObject *)b;
    b->ref = Py_NewRef(a);
    PyObject_GC_Track(a);
    PyObject_GC_Track(b);
    Py_DECREF(a);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(bad, 0);

    /* The plain base's objects are not GC objects. */
    PlainObj *p = PyObject_New(PlainObj, &PlainBaseType);
    REQUIRE(p != NULL);
    CHECK_EQ_INT(PyObject_IS_GC(p), 0);
    Py_DECREF(p); /* default dealloc, non-GC free */
}

int main(void) {
    RUN(test_inherit_gc_protocol);
    RUN(test_subtype_with_extra_references);
    RUN(test_gc_without_traverse_rejected);
    RUN(test_gc_subtype_of_plain_base);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
