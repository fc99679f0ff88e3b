/* Heap types (PyType_FromSpec / PyType_FromSpecWithBases), as the
 * "Isolating extension modules" howto (spec 003) describes them: instances
 * own a reference to their type; tp_traverse visits Py_TYPE(self) (3.9+,
 * guarded by Py_Version); a custom tp_dealloc untracks, clears, calls
 * tp_free and then decrefs the type; the default tp_dealloc does the same;
 * PyType_GetSlot; PyType_GenericAlloc; heap type objects are themselves GC
 * objects that live as long as their instances.
 *
 * A heap type's death is observed through its base: a heap subtype owns a
 * reference to its heap base type, so Py_REFCNT(base) drops when it dies. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x4EA9L
#define DEAD 0xDEADL

typedef struct {
    PyObject_HEAD
    PyObject *ref, *ref2;
    long canary;
} HObj;

static int deallocs = 0, finalizes = 0, clears = 0, bad = 0;
static int allocs_by_slot = 0, frees_by_slot = 0;

static int HObj_traverse(PyObject *self, visitproc visit, void *arg) {
    if (Py_Version >= 0x03090000) Py_VISIT(Py_TYPE(self));
    Py_VISIT(((HObj *)self)->ref);
    Py_VISIT(((HObj *)self)->ref2);
    return 0;
}

/* The pre-3.9 style: does not visit the type. */
static int HObj_traverse_no_type(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((HObj *)self)->ref);
    Py_VISIT(((HObj *)self)->ref2);
    return 0;
}

static int HObj_clear(PyObject *self) {
    clears++;
    Py_CLEAR(((HObj *)self)->ref);
    Py_CLEAR(((HObj *)self)->ref2);
    return 0;
}

static void HObj_finalize(PyObject *self) {
    finalizes++;
    if (((HObj *)self)->canary != CANARY) bad++;
}

/* The howto's tp_dealloc (with the finalizer call a type with tp_finalize
 * makes first). */
static void HObj_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return;
    PyObject_GC_UnTrack(self);
    HObj *h = (HObj *)self;
    if (h->canary != CANARY) bad++;
    h->canary = DEAD;
    deallocs++;
    Py_CLEAR(h->ref);
    Py_CLEAR(h->ref2);
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *HObj_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    HObj *self = (HObj *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->canary = CANARY;
    return (PyObject *)self;
}

static PyObject *counting_alloc(PyTypeObject *type, Py_ssize_t nitems) {
    allocs_by_slot++;
    return PyType_GenericAlloc(type, nitems);
}

static void counting_free(void *op) {
    frees_by_slot++;
    PyObject_GC_Del(op);
}

/* Counts the default dealloc's deaths through tp_free. */
static int default_frees = 0;
static void default_free(void *op) {
    default_frees++;
    if (((HObj *)op)->canary != CANARY) bad++;
    PyObject_GC_Del(op);
}

static PyObject *make_type(const char *name, PyType_Slot *slots, PyObject *base) {
    PyType_Spec spec = {name, (int)sizeof(HObj), 0,
                        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE, slots};
    PyObject *type = base ? PyType_FromSpecWithBases(&spec, base) : PyType_FromSpec(&spec);
    REQUIRE(type != NULL);
    return type;
}

/* The full type: traverse, clear, dealloc, finalize, new. */
static PyObject *make_full_type(const char *name, PyObject *base) {
    PyType_Slot slots[] = {
        {Py_tp_traverse, FN(HObj_traverse)},
        {Py_tp_clear, FN(HObj_clear)},
        {Py_tp_dealloc, FN(HObj_dealloc)},
        {Py_tp_finalize, FN(HObj_finalize)},
        {Py_tp_new, FN(HObj_new)},
        {Py_tp_doc, (void *)"a test type"},
        {0, NULL},
    };
    return make_type(name, slots, base);
}

static HObj *instance(PyObject *type) {
    PyTypeObject *t = (PyTypeObject *)type;
    HObj *h = (HObj *)t->tp_new(t, NULL, NULL);
    REQUIRE(h != NULL);
    h->canary = CANARY;
    return h;
}

static void start(void) {
    gc_collect();
    deallocs = finalizes = clears = 0;
}

/* ------------------------------------------------------------------------- */

static void test_from_spec_and_slots(void) {
    start();
    PyObject *type = make_full_type("heap.Full", NULL);
    PyTypeObject *t = (PyTypeObject *)type;
    CHECK(PyType_Check(type));
    CHECK(Py_TYPE(type) == &PyType_Type);
    CHECK(strcmp(t->tp_name, "heap.Full") == 0);
    CHECK(PyType_HasFeature(t, Py_TPFLAGS_HEAPTYPE));
    CHECK(PyType_HasFeature(t, Py_TPFLAGS_READY));
    CHECK(PyType_IS_GC(t));
    CHECK_EQ_INT(t->tp_basicsize, sizeof(HObj));
    CHECK(PyType_GetSlot(t, Py_tp_traverse) == FN(HObj_traverse));
    CHECK(PyType_GetSlot(t, Py_tp_clear) == FN(HObj_clear));
    CHECK(PyType_GetSlot(t, Py_tp_dealloc) == FN(HObj_dealloc));
    CHECK(PyType_GetSlot(t, Py_tp_finalize) == FN(HObj_finalize));
    CHECK(PyType_GetSlot(t, Py_tp_new) == FN(HObj_new));
    /* Defaults filled in for a GC heap type (the howto: keep them). */
    CHECK(PyType_GetSlot(t, Py_tp_alloc) == FN(PyType_GenericAlloc));
    CHECK(PyType_GetSlot(t, Py_tp_free) == FN(PyObject_GC_Del));
    CHECK(PyType_GetSlot(t, Py_tp_base) == (void *)&PyBaseObject_Type);
    CHECK(PyType_GetSlot(t, Py_tp_doc) != NULL &&
          strcmp((const char *)PyType_GetSlot(t, Py_tp_doc), "a test type") == 0);
    CHECK(PyType_GetSlot(t, Py_tp_iter) == NULL);
    /* Heap type objects are tracked GC objects. */
    CHECK_EQ_INT(PyObject_IS_GC(type), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(type), 1);
    CHECK_EQ_INT(Py_REFCNT(type), 1);
    Py_DECREF(type);
}

static void test_instances_own_their_type(void) {
    start();
    PyObject *type = make_full_type("heap.Owned", NULL);
    Py_ssize_t base_count = Py_REFCNT(type);
    HObj *objs[5];
    for (int i = 0; i < 5; i++) {
        objs[i] = instance(type);
        CHECK_EQ_INT(Py_REFCNT(type), base_count + i + 1);
        CHECK(Py_TYPE(objs[i]) == (PyTypeObject *)type);
        CHECK_EQ_INT(PyObject_GC_IsTracked(objs[i]), 1); /* tp_alloc tracks */
    }
    for (int i = 0; i < 5; i++) {
        Py_DECREF(objs[i]);
        CHECK_EQ_INT(Py_REFCNT(type), base_count + 4 - i);
    }
    CHECK_EQ_INT(deallocs, 5);
    CHECK_EQ_INT(finalizes, 5); /* from the dealloc, once each */
    CHECK_EQ_INT(bad, 0);
    Py_DECREF(type);
}

static void test_instance_cycles(void) {
    start();
    PyObject *type = make_full_type("heap.Cyclic", NULL);
    Py_ssize_t base_count = Py_REFCNT(type);
    /* A 2-cycle and a self-cycle. */
    HObj *a = instance(type), *b = instance(type), *c = instance(type);
    a->ref = (PyObject *)b;
    b->ref = Py_NewRef(a);
    c->ref = Py_NewRef(c);
    Py_DECREF(a);
    Py_DECREF(c);
    CHECK_EQ_INT(Py_REFCNT(type), base_count + 3);
    /* The type is held by us: only the instances are garbage. */
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(deallocs, 3);
    CHECK_EQ_INT(finalizes, 3);
    CHECK_EQ_INT(Py_REFCNT(type), base_count);
    CHECK_EQ_INT(bad, 0);
    /* A held cycle survives a collection, intact; the type too. */
    HObj *x = instance(type), *y = instance(type);
    x->ref = (PyObject *)y;
    y->ref = Py_NewRef(x);
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(x->canary, CANARY);
    CHECK_EQ_INT(y->canary, CANARY);
    CHECK_EQ_INT(Py_REFCNT(type), base_count + 2);
    Py_DECREF(x);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(Py_REFCNT(type), base_count);
    Py_DECREF(type);
}

static void test_type_outlives_dropped_reference(void) {
    start();
    PyObject *base = make_full_type("heap.Base", NULL);
    CHECK_EQ_INT(Py_REFCNT(base), 1);
    PyObject *derived = make_full_type("heap.Derived", base);
    CHECK_EQ_INT(Py_REFCNT(base), 2); /* the subtype owns its base */
    CHECK(((PyTypeObject *)derived)->tp_base == (PyTypeObject *)base);
    CHECK(PyType_GetSlot((PyTypeObject *)derived, Py_tp_base) == (void *)base);

    HObj *obj = instance(derived);
    Py_DECREF(derived); /* only the instance holds the type now */
    CHECK_EQ_INT(Py_REFCNT(base), 2);
    PyTypeObject *t = Py_TYPE(obj);
    CHECK_EQ_INT(Py_REFCNT(t), 1);
    CHECK(strcmp(t->tp_name, "heap.Derived") == 0);
    CHECK_EQ_INT(PyObject_GC_IsTracked(t), 1);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(Py_REFCNT(base), 2);
    CHECK(strcmp(Py_TYPE(obj)->tp_name, "heap.Derived") == 0);
    CHECK_EQ_INT(obj->canary, CANARY);
    /* More instances of the dropped type can still be made. */
    HObj *more = instance((PyObject *)t);
    CHECK_EQ_INT(Py_REFCNT(t), 2);
    Py_DECREF(more);

    Py_DECREF(obj); /* the last instance: the type dies with it */
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(Py_REFCNT(base), 1);
    Py_DECREF(base);
}

static void test_cycle_through_the_type(void) {
    start();
    PyObject *base = make_full_type("heap.Base2", NULL);
    PyObject *derived = make_full_type("heap.Derived2", base);
    CHECK_EQ_INT(Py_REFCNT(base), 2);
    /* a <-> b, instances of `derived`; a also holds the type in a field.
     * Once we drop the type and a, the instances and the type are garbage
     * together (the instances' traverse visits the type). */
    HObj *a = instance(derived), *b = instance(derived);
    a->ref = (PyObject *)b;
    b->ref = Py_NewRef(a);
    a->ref2 = Py_NewRef(derived);
    Py_DECREF(derived);
    CHECK_EQ_INT(Py_REFCNT(Py_TYPE(a)), 3);
    CHECK_EQ_INT(gc_collect(), 0); /* we hold a */
    CHECK_EQ_INT(deallocs, 0);
    CHECK_EQ_INT(a->canary, CANARY);
    CHECK_EQ_INT(b->canary, CANARY);
    CHECK(strcmp(Py_TYPE(b)->tp_name, "heap.Derived2") == 0);
    CHECK_EQ_INT(Py_REFCNT(base), 2);
    Py_DECREF(a);
    Py_ssize_t found = gc_collect();
    CHECK(found >= 2); /* the 2 instances, and the type (CPython counts more) */
    CHECK_EQ_INT(deallocs, 2);
    CHECK_EQ_INT(finalizes, 2);
    CHECK_EQ_INT(Py_REFCNT(base), 1); /* the subtype is gone */
    CHECK_EQ_INT(bad, 0);

    HObj *obj;
    /* The simplest form: a self-cycle instance whose type we dropped. */
    derived = make_full_type("heap.Derived3", base);
    obj = instance(derived);
    obj->ref = Py_NewRef(obj);
    Py_DECREF(derived);
    Py_DECREF(obj);
    CHECK_EQ_INT(Py_REFCNT(base), 2);
    found = gc_collect();
    CHECK(found >= 1);
    CHECK_EQ_INT(deallocs, 3);
    CHECK_EQ_INT(Py_REFCNT(base), 1);

    /* Pre-3.9 style traverse (does not visit the type): the type is then
     * freed by reference counting once the instances are gone. */
    PyType_Slot slots[] = {
        {Py_tp_traverse, FN(HObj_traverse_no_type)},
        {Py_tp_clear, FN(HObj_clear)},
        {Py_tp_dealloc, FN(HObj_dealloc)},
        {Py_tp_new, FN(HObj_new)},
        {0, NULL},
    };
    derived = make_type("heap.Old", slots, base);
    obj = instance(derived);
    obj->ref = Py_NewRef(obj);
    Py_DECREF(derived);
    Py_DECREF(obj);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs, 4);
    CHECK_EQ_INT(Py_REFCNT(base), 1);
    Py_DECREF(base);
}

static void test_default_dealloc(void) {
    start();
    /* No Py_tp_dealloc: the default one untracks, finalizes, frees with
     * tp_free and drops the type. */
    PyType_Slot slots[] = {
        {Py_tp_traverse, FN(HObj_traverse)},
        {Py_tp_clear, FN(HObj_clear)},
        {Py_tp_finalize, FN(HObj_finalize)},
        {Py_tp_free, FN(default_free)},
        {0, NULL},
    };
    PyObject *type = make_type("heap.DefaultDealloc", slots, NULL);
    PyTypeObject *t = (PyTypeObject *)type;
    CHECK(t->tp_dealloc != NULL);
    CHECK(t->tp_new != NULL); /* inherited from object */
    Py_ssize_t count = Py_REFCNT(type);

    HObj *a = (HObj *)t->tp_new(t, NULL, NULL);
    REQUIRE(a != NULL);
    a->canary = CANARY;
    CHECK_EQ_INT(Py_REFCNT(type), count + 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(a), 1);
    Py_DECREF(a);
    CHECK_EQ_INT(default_frees, 1);
    CHECK_EQ_INT(finalizes, 1);
    CHECK_EQ_INT(Py_REFCNT(type), count);

    /* Cycles of such instances are collected. */
    HObj *x = (HObj *)t->tp_new(t, NULL, NULL), *y = (HObj *)t->tp_new(t, NULL, NULL);
    REQUIRE(x && y);
    x->canary = y->canary = CANARY;
    x->ref = (PyObject *)y;
    y->ref = Py_NewRef(x);
    Py_DECREF(x);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(default_frees, 3);
    CHECK_EQ_INT(finalizes, 3);
    CHECK_EQ_INT(Py_REFCNT(type), count);

    /* Beyond CPython (documented in cyclegc.h): the default dealloc also
     * calls tp_clear, so an acyclic instance releases what it holds. */
    HObj *outer = (HObj *)t->tp_new(t, NULL, NULL);
    HObj *inner = (HObj *)t->tp_new(t, NULL, NULL);
    REQUIRE(outer && inner);
    outer->canary = inner->canary = CANARY;
    outer->ref = (PyObject *)inner;
    Py_DECREF(outer);
    CHECK_EQ_INT(default_frees, 5);
    CHECK_EQ_INT(Py_REFCNT(type), count);
    CHECK_EQ_INT(bad, 0);
    Py_DECREF(type);
}

static void test_alloc_and_free_slots(void) {
    start();
    PyType_Slot slots[] = {
        {Py_tp_traverse, FN(HObj_traverse)},
        {Py_tp_clear, FN(HObj_clear)},
        {Py_tp_dealloc, FN(HObj_dealloc)},
        {Py_tp_new, FN(HObj_new)},
        {Py_tp_alloc, FN(counting_alloc)},
        {Py_tp_free, FN(counting_free)},
        {0, NULL},
    };
    PyObject *type = make_type("heap.AllocFree", slots, NULL);
    CHECK(PyType_GetSlot((PyTypeObject *)type, Py_tp_alloc) == FN(counting_alloc));
    CHECK(PyType_GetSlot((PyTypeObject *)type, Py_tp_free) == FN(counting_free));
    HObj *a = instance(type), *b = instance(type);
    CHECK_EQ_INT(allocs_by_slot, 2);
    a->ref = (PyObject *)b;
    b->ref = Py_NewRef(a);
    Py_DECREF(a);
    CHECK_EQ_INT(frees_by_slot, 0);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(frees_by_slot, 2);
    CHECK_EQ_INT(deallocs, 2);
    Py_DECREF(type);
}

/* ---- PyType_GenericAlloc --------------------------------------------------- */
typedef struct {
    PyObject_VAR_HEAD
    long fields[4];
    PyObject *items[1];
} VarObj;

static int VarObj_traverse(PyObject *self, visitproc visit, void *arg) {
    VarObj *v = (VarObj *)self;
    for (Py_ssize_t i = 0; i < Py_SIZE(v); i++) Py_VISIT(v->items[i]);
    return 0;
}

static PyTypeObject VarObjType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "heap.VarObj",
    .tp_basicsize = offsetof(VarObj, items),
    .tp_itemsize = sizeof(PyObject *),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = VarObj_traverse,
};

static int all_zero(const void *p, size_t n) {
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i]) return 0;
    return 1;
}

static void test_generic_alloc(void) {
    start();
    REQUIRE_EQ_INT(PyType_Ready(&VarObjType), 0);
    /* Dirty the heap first so that zero-filling is not luck. */
    for (int round = 0; round < 3; round++) {
        void *junk[64];
        for (int i = 0; i < 64; i++) {
            junk[i] = PyObject_Malloc(offsetof(VarObj, items) + 8 * sizeof(PyObject *) + 16);
            REQUIRE(junk[i] != NULL);
            memset(junk[i], 0xAB, offsetof(VarObj, items) + 8 * sizeof(PyObject *) + 16);
        }
        for (int i = 0; i < 64; i++) PyObject_Free(junk[i]);

        VarObj *v = (VarObj *)PyType_GenericAlloc(&VarObjType, 8);
        REQUIRE(v != NULL);
        CHECK_EQ_INT(Py_REFCNT(v), 1);
        CHECK(Py_TYPE(v) == &VarObjType);
        CHECK_EQ_INT(Py_SIZE(v), 8);
        CHECK_EQ_INT(PyObject_GC_IsTracked(v), 1); /* already tracked */
        CHECK(all_zero(v->fields, sizeof v->fields));
        CHECK(all_zero(v->items, 8 * sizeof(PyObject *)));
        Py_DECREF(v); /* default dealloc */
    }

    /* On a heap type: also counts the type reference. */
    PyObject *type = make_full_type("heap.Generic", NULL);
    HObj *h = (HObj *)PyType_GenericAlloc((PyTypeObject *)type, 0);
    REQUIRE(h != NULL);
    CHECK(h->ref == NULL && h->ref2 == NULL && h->canary == 0);
    CHECK_EQ_INT(PyObject_GC_IsTracked(h), 1);
    CHECK_EQ_INT(Py_REFCNT(type), 2);
    h->canary = CANARY;
    Py_DECREF(h);
    CHECK_EQ_INT(Py_REFCNT(type), 1);

    /* PyType_GenericNew goes through tp_alloc. */
    HObj *g = (HObj *)PyType_GenericNew((PyTypeObject *)type, NULL, NULL);
    REQUIRE(g != NULL);
    CHECK_EQ_INT(PyObject_GC_IsTracked(g), 1);
    CHECK_EQ_INT(Py_REFCNT(type), 2);
    g->canary = CANARY;
    Py_DECREF(g);
    CHECK_EQ_INT(Py_REFCNT(type), 1);
    Py_DECREF(type);
}

/* ---- a heap subtype of a static GC type ------------------------------------ */
static int static_deallocs = 0;

static void Static_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    HObj *h = (HObj *)self;
    if (h->canary != CANARY) bad++;
    h->canary = DEAD;
    Py_CLEAR(h->ref);
    Py_CLEAR(h->ref2);
    static_deallocs++;
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject StaticBase = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "heap.StaticBase",
    .tp_basicsize = sizeof(HObj),
    .tp_dealloc = Static_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE,
    .tp_traverse = HObj_traverse_no_type,
    .tp_clear = HObj_clear,
    .tp_new = HObj_new,
};

static void test_heap_subtype_of_static_type(void) {
    start();
    REQUIRE_EQ_INT(PyType_Ready(&StaticBase), 0);
    /* Py_tp_base, no Py_tp_dealloc: the base's dealloc runs, then the
     * instance's reference to its heap type is dropped. The spec does not
     * say Py_TPFLAGS_HAVE_GC: it inherits the flag with tp_traverse and
     * tp_clear (with the flag and no traverse, PyType_Ready refuses it, as
     * CPython does). */
    PyType_Slot slots[] = {
        {Py_tp_base, &StaticBase},
        {0, NULL},
    };
    PyType_Spec spec = {"heap.FromStatic", 0, 0, Py_TPFLAGS_DEFAULT, slots};
    PyObject *type = PyType_FromSpec(&spec);
    REQUIRE(type != NULL);
    PyTypeObject *t = (PyTypeObject *)type;
    CHECK(t->tp_base == &StaticBase);
    CHECK_EQ_INT(t->tp_basicsize, sizeof(HObj)); /* inherited */
    CHECK(PyType_IS_GC(t));
    CHECK(t->tp_traverse == HObj_traverse_no_type);
    CHECK(t->tp_clear == HObj_clear);
    CHECK(t->tp_new == HObj_new);
    Py_ssize_t static_count = Py_REFCNT(&StaticBase);

    HObj *a = instance(type), *b = instance(type);
    CHECK_EQ_INT(Py_REFCNT(type), 3);
    Py_DECREF(b);
    CHECK_EQ_INT(static_deallocs, 1);
    CHECK_EQ_INT(Py_REFCNT(type), 2);
    a->ref = Py_NewRef(a);
    Py_DECREF(a);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(static_deallocs, 2);
    CHECK_EQ_INT(Py_REFCNT(type), 1);
    CHECK_EQ_INT(Py_REFCNT(&StaticBase), static_count); /* a static base is not counted */
    CHECK_EQ_INT(bad, 0);
    Py_DECREF(type);
}

int main(void) {
    RUN(test_from_spec_and_slots);
    RUN(test_instances_own_their_type);
    RUN(test_instance_cycles);
    RUN(test_type_outlives_dropped_reference);
    RUN(test_cycle_through_the_type);
    RUN(test_default_dealloc);
    RUN(test_alloc_and_free_slots);
    RUN(test_generic_alloc);
    RUN(test_heap_subtype_of_static_type);
    CHECK_EQ_INT(bad, 0);
    return CHECK_DONE();
}
