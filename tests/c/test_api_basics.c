/* Every object macro and GC function of the compat header, one at a time:
 * reference counting macros, allocation, tracking, resizing, PyObject_IS_GC,
 * PyGC_Collect / Enable / Disable / IsEnabled, the version macros. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x5AFEC0DEL

/* ---- Box: a GC container with one reference ---------------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *item;
    long canary;
} Box;

static int box_deallocs = 0;
static PyObject *g_slot = NULL;          /* for the Py_CLEAR check */
static int g_slot_was_null_in_dealloc = -1;

static int Box_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Box *)self)->item);
    return 0;
}

static int Box_clear(PyObject *self) {
    Py_CLEAR(((Box *)self)->item);
    return 0;
}

static void Box_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    g_slot_was_null_in_dealloc = g_slot == NULL;
    ((Box *)self)->canary = 0;
    Box_clear(self);
    box_deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject BoxType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "api.Box",
    .tp_basicsize = sizeof(Box),
    .tp_dealloc = Box_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Box_traverse,
    .tp_clear = Box_clear,
};

static Box *new_box(PyObject *item) {
    Box *box = PyObject_GC_New(Box, &BoxType);
    REQUIRE(box != NULL);
    box->item = item; /* steals */
    box->canary = CANARY;
    PyObject_GC_Track(box);
    return box;
}

/* ---- Vec: a variable-size GC container ---------------------------------- */
typedef struct {
    PyObject_VAR_HEAD
    PyObject *items[1];
} Vec;

static int vec_deallocs = 0;

static int Vec_traverse(PyObject *self, visitproc visit, void *arg) {
    Vec *v = (Vec *)self;
    for (Py_ssize_t i = 0; i < Py_SIZE(v); i++) Py_VISIT(v->items[i]);
    return 0;
}

static int Vec_clear(PyObject *self) {
    Vec *v = (Vec *)self;
    for (Py_ssize_t i = 0; i < Py_SIZE(v); i++) Py_CLEAR(v->items[i]);
    return 0;
}

static void Vec_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Vec_clear(self);
    vec_deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject VecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "api.Vec",
    .tp_basicsize = offsetof(Vec, items),
    .tp_itemsize = sizeof(PyObject *),
    .tp_dealloc = Vec_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Vec_traverse,
    .tp_clear = Vec_clear,
};

/* ---- Plain: not a GC type ----------------------------------------------- */
typedef struct {
    PyObject_HEAD
    long value;
} Plain;

static int plain_deallocs = 0;

static void Plain_dealloc(PyObject *self) {
    plain_deallocs++;
    PyObject_Del(self);
}

static PyTypeObject PlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "api.Plain",
    .tp_basicsize = sizeof(Plain),
    .tp_dealloc = Plain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

/* ---- Fin: a GC type with tp_finalize but no tp_clear -------------------- */
typedef struct {
    PyObject_HEAD
    PyObject *other;
    long canary;
} Fin;

static int fin_finalized = 0, fin_deallocs = 0, fin_flag_inside_finalizer = -1;

static int Fin_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Fin *)self)->other);
    return 0;
}

static void Fin_finalize(PyObject *self) {
    fin_finalized++;
    fin_flag_inside_finalizer = PyObject_GC_IsFinalized(self);
}

static void Fin_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((Fin *)self)->other);
    fin_deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject FinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "api.Fin",
    .tp_basicsize = sizeof(Fin),
    .tp_dealloc = Fin_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Fin_traverse,
    .tp_finalize = Fin_finalize,
};

/* ---- Legacy: a GC type with tp_del (a pre-PEP 442 finalizer) ------------ */
static int legacy_tp_del_calls = 0;

static void Legacy_del(PyObject *self) {
    (void)self;
    legacy_tp_del_calls++;
}

static PyTypeObject LegacyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "api.Legacy",
    .tp_basicsize = sizeof(Box),
    .tp_dealloc = Box_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Box_traverse,
    .tp_clear = Box_clear,
    .tp_del = Legacy_del,
};

/* ------------------------------------------------------------------------- */

static void test_versions(void) {
    CHECK(Py_Version >= 0x03090000UL);
    CHECK(PY_VERSION_HEX >= 0x03090000);
    CHECK_EQ_INT(Py_Version, PY_VERSION_HEX);
    CHECK_EQ_INT((PY_VERSION_HEX >> 24) & 0xFF, PY_MAJOR_VERSION);
    CHECK_EQ_INT((PY_VERSION_HEX >> 16) & 0xFF, PY_MINOR_VERSION);
    CHECK_EQ_INT((PY_VERSION_HEX >> 8) & 0xFF, PY_MICRO_VERSION);
    CHECK_EQ_INT(PY_MAJOR_VERSION, 3);
}

static void test_type_size_refcnt(void) {
    Box *box = new_box(NULL);
    CHECK(Py_TYPE(box) == &BoxType);
    CHECK(Py_IS_TYPE(box, &BoxType));
    CHECK(!Py_IS_TYPE(box, &VecType));
    CHECK_EQ_INT(Py_REFCNT(box), 1);

    Vec *vec = PyObject_GC_NewVar(Vec, &VecType, 3);
    REQUIRE(vec != NULL);
    CHECK_EQ_INT(Py_SIZE(vec), 3);
    CHECK(Py_TYPE(vec) == &VecType);
    for (int i = 0; i < 3; i++) vec->items[i] = NULL;
    Py_SET_SIZE(vec, 2);
    CHECK_EQ_INT(Py_SIZE(vec), 2);
    Py_SET_SIZE(vec, 3);
    PyObject_GC_Track(vec);

    int before = vec_deallocs;
    Py_DECREF(vec);
    CHECK_EQ_INT(vec_deallocs, before + 1);
    before = box_deallocs;
    Py_DECREF(box);
    CHECK_EQ_INT(box_deallocs, before + 1);
}

static void test_incref_decref(void) {
    int before = box_deallocs;
    Box *box = new_box(NULL);
    Py_INCREF(box);
    CHECK_EQ_INT(Py_REFCNT(box), 2);
    Py_XINCREF(box);
    CHECK_EQ_INT(Py_REFCNT(box), 3);
    Py_XINCREF(NULL); /* no-op */
    Py_XDECREF(NULL); /* no-op */
    Py_XDECREF(box);
    CHECK_EQ_INT(Py_REFCNT(box), 2);
    Py_DECREF(box);
    CHECK_EQ_INT(Py_REFCNT(box), 1);
    CHECK_EQ_INT(box_deallocs, before); /* still alive */
    CHECK_EQ_INT(box->canary, CANARY);

    PyObject *same = Py_NewRef(box);
    CHECK(same == (PyObject *)box);
    CHECK_EQ_INT(Py_REFCNT(box), 2);
    Py_DECREF(same);
    CHECK(Py_XNewRef(NULL) == NULL);
    PyObject *x = Py_XNewRef((PyObject *)box);
    CHECK(x == (PyObject *)box);
    CHECK_EQ_INT(Py_REFCNT(box), 2);
    Py_DECREF(x);

    /* Py_SETREF / Py_XSETREF drop the old value after the assignment. */
    Box *holder = new_box(NULL);
    Box *a = new_box(NULL), *b = new_box(NULL);
    holder->item = (PyObject *)a;
    Py_SETREF(holder->item, (PyObject *)b);
    CHECK(holder->item == (PyObject *)b);
    CHECK_EQ_INT(box_deallocs, before + 1); /* a died */
    Py_XSETREF(holder->item, NULL);
    CHECK_EQ_INT(box_deallocs, before + 2); /* b died */
    Py_DECREF(holder);
    CHECK_EQ_INT(box_deallocs, before + 3);

    Py_DECREF(box); /* last reference */
    CHECK_EQ_INT(box_deallocs, before + 4);
}

static void test_py_clear(void) {
    int before = box_deallocs;
    g_slot = (PyObject *)new_box(NULL);
    g_slot_was_null_in_dealloc = -1;
    Py_CLEAR(g_slot);
    CHECK(g_slot == NULL);
    CHECK_EQ_INT(box_deallocs, before + 1);
    /* The variable was NULL already when the destructor ran. */
    CHECK_EQ_INT(g_slot_was_null_in_dealloc, 1);

    /* Py_CLEAR of NULL does nothing; of a shared object only decrefs. */
    PyObject *none = NULL;
    Py_CLEAR(none);
    CHECK(none == NULL);
    Box *box = new_box(NULL);
    PyObject *ref = Py_NewRef(box);
    Py_CLEAR(ref);
    CHECK(ref == NULL);
    CHECK_EQ_INT(Py_REFCNT(box), 1);
    CHECK_EQ_INT(box_deallocs, before + 1);
    Py_DECREF(box);
    CHECK_EQ_INT(box_deallocs, before + 2);
}

static void test_track_untrack(void) {
    Box *box = PyObject_GC_New(Box, &BoxType);
    REQUIRE(box != NULL);
    box->item = NULL;
    box->canary = CANARY;
    CHECK_EQ_INT(PyObject_GC_IsTracked(box), 0); /* GC_New does not track */
    PyObject_GC_Track(box);
    CHECK_EQ_INT(PyObject_GC_IsTracked(box), 1);
    PyObject_GC_UnTrack(box);
    CHECK_EQ_INT(PyObject_GC_IsTracked(box), 0);
    PyObject_GC_UnTrack(box); /* idempotent: no error, no crash */
    CHECK_EQ_INT(PyObject_GC_IsTracked(box), 0);
    CHECK(PyErr_Occurred() == NULL);
    PyObject_GC_Track(box); /* can be tracked again */
    CHECK_EQ_INT(PyObject_GC_IsTracked(box), 1);
    CHECK(PyErr_Occurred() == NULL);

    /* An untracked self-cycle is invisible to the collector. */
    box->item = Py_NewRef(box);
    PyObject_GC_UnTrack(box);
    int before = box_deallocs;
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(box_deallocs, before);
    CHECK_EQ_INT(box->canary, CANARY);
    /* Tracked again, it is found. */
    PyObject_GC_Track(box);
    Py_DECREF(box);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(box_deallocs, before + 1);

    /* IsTracked of a non-GC object is 0. */
    Plain *plain = PyObject_New(Plain, &PlainType);
    REQUIRE(plain != NULL);
    CHECK_EQ_INT(PyObject_GC_IsTracked(plain), 0);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(plain), 0);
    Py_DECREF(plain);
}

static void test_gc_del(void) {
    /* PyObject_GC_Del frees an object that was never tracked, without its
     * tp_dealloc (ASan checks the memory is released correctly). */
    int before = box_deallocs;
    Box *box = PyObject_GC_New(Box, &BoxType);
    REQUIRE(box != NULL);
    PyObject_GC_Del(box);
    CHECK_EQ_INT(box_deallocs, before);

    int vecs = vec_deallocs;
    Vec *vec = PyObject_GC_NewVar(Vec, &VecType, 100);
    REQUIRE(vec != NULL);
    PyObject_GC_Del(vec);
    CHECK_EQ_INT(vec_deallocs, vecs);
}

static void test_resize(void) {
    Box *a = new_box(NULL), *b = new_box(NULL);
    Vec *vec = PyObject_GC_NewVar(Vec, &VecType, 2);
    REQUIRE(vec != NULL);
    vec->items[0] = (PyObject *)a;
    vec->items[1] = (PyObject *)b;

    /* Untracked: grows, keeps its items, sets ob_size. */
    Vec *grown = PyObject_GC_Resize(Vec, vec, 50);
    REQUIRE(grown != NULL);
    vec = grown;
    CHECK_EQ_INT(Py_SIZE(vec), 50);
    CHECK(vec->items[0] == (PyObject *)a);
    CHECK(vec->items[1] == (PyObject *)b);
    for (int i = 2; i < 50; i++) vec->items[i] = NULL;
    vec->items[49] = Py_NewRef(a);
    CHECK(PyErr_Occurred() == NULL);

    /* Shrinks too. */
    Py_CLEAR(vec->items[49]);
    Vec *shrunk = PyObject_GC_Resize(Vec, vec, 3);
    REQUIRE(shrunk != NULL);
    vec = shrunk;
    CHECK_EQ_INT(Py_SIZE(vec), 3);
    CHECK(vec->items[1] == (PyObject *)b);
    CHECK_EQ_INT(Py_REFCNT(a), 1);

    /* A negative size: NULL and an error, the object is unchanged. */
    CHECK(PyObject_GC_Resize(Vec, vec, -1) == NULL);
    CHECK(PyErr_Occurred() != NULL);
    PyErr_Clear();
    CHECK(PyErr_Occurred() == NULL);
    CHECK_EQ_INT(Py_SIZE(vec), 3);

    /* Tracked: refused with NULL and an error, the object is unchanged. */
    PyObject_GC_Track(vec);
    CHECK(PyObject_GC_Resize(Vec, vec, 10) == NULL);
    CHECK(PyErr_Occurred() != NULL);
    PyErr_Clear();
    CHECK_EQ_INT(Py_SIZE(vec), 3);
    CHECK_EQ_INT(PyObject_GC_IsTracked(vec), 1);
    CHECK(vec->items[0] == (PyObject *)a);

    /* After untracking, resizing works again. */
    PyObject_GC_UnTrack(vec);
    Vec *again = PyObject_GC_Resize(Vec, vec, 4);
    REQUIRE(again != NULL);
    vec = again;
    vec->items[3] = NULL;
    PyObject_GC_Track(vec);

    int boxes = box_deallocs, vecs = vec_deallocs;
    Py_DECREF(vec);
    CHECK_EQ_INT(vec_deallocs, vecs + 1);
    CHECK_EQ_INT(box_deallocs, boxes + 2);
}

static void test_is_gc(void) {
    Box *box = new_box(NULL);
    CHECK_EQ_INT(PyObject_IS_GC(box), 1);
    Plain *plain = PyObject_New(Plain, &PlainType);
    REQUIRE(plain != NULL);
    CHECK_EQ_INT(PyObject_IS_GC(plain), 0);
    /* Static type objects are not GC objects (PyType_Type's tp_is_gc). */
    CHECK(Py_TYPE(&BoxType) == &PyType_Type);
    CHECK_EQ_INT(PyObject_IS_GC(&BoxType), 0);
    CHECK_EQ_INT(PyObject_IS_GC(&PlainType), 0);
    CHECK_EQ_INT(PyObject_IS_GC(&PyType_Type), 0);
    CHECK_EQ_INT(PyObject_IS_GC(&PyBaseObject_Type), 0);
    CHECK_EQ_INT(PyObject_GC_IsTracked(&BoxType), 0);

    /* A heap type object is. */
    PyType_Slot slots[] = {{0, NULL}};
    PyType_Spec spec = {"api.Heap", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, slots};
    PyObject *heap_type = PyType_FromSpec(&spec);
    REQUIRE(heap_type != NULL);
    CHECK_EQ_INT(PyObject_IS_GC(heap_type), 1);
    CHECK_EQ_INT(PyObject_GC_IsTracked(heap_type), 1);
    Py_DECREF(heap_type);

    int plains = plain_deallocs;
    Py_DECREF(plain);
    CHECK_EQ_INT(plain_deallocs, plains + 1);
    Py_DECREF(box);
}

static void test_is_finalized(void) {
    /* A 2-cycle of objects with tp_finalize and without tp_clear: the
     * collector finalizes them but cannot free them (as CPython). */
    Fin *a = PyObject_GC_New(Fin, &FinType);
    Fin *b = PyObject_GC_New(Fin, &FinType);
    REQUIRE(a && b);
    a->canary = b->canary = CANARY;
    a->other = (PyObject *)b;
    b->other = Py_NewRef(a);
    PyObject_GC_Track(a);
    PyObject_GC_Track(b);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(a), 0);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(b), 0);
    Py_DECREF(a);

    CHECK_EQ_INT(gc_collect(), 0); /* not freed: not counted (CPython counts them), reported */
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    cgc_error_clear();
    CHECK_EQ_INT(fin_finalized, 2);
    CHECK_EQ_INT(fin_flag_inside_finalizer, 1);
    CHECK_EQ_INT(fin_deallocs, 0);
    REQUIRE_EQ_INT(fin_deallocs, 0);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(a), 1);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(b), 1);
    CHECK_EQ_INT(a->canary, CANARY);
    CHECK_EQ_INT(b->canary, CANARY);
    CHECK(a->other == (PyObject *)b && b->other == (PyObject *)a);
    CHECK_EQ_INT(PyObject_GC_IsTracked(a), 1);

    /* A second collection does not finalize them again. */
    gc_collect();
    CHECK_EQ_INT(fin_finalized, 2);
    CHECK_EQ_INT(fin_deallocs, 0);

    /* Break the cycle by hand. */
    Py_CLEAR(a->other); /* frees b, which frees a */
    CHECK_EQ_INT(fin_deallocs, 2);
    CHECK_EQ_INT(fin_finalized, 2);
}

static void test_collect_and_enable(void) {
    gc_collect();
    CHECK_EQ_INT(PyGC_IsEnabled(), 1); /* enabled by default */
    CHECK_EQ_INT(PyGC_Disable(), 1);   /* previous state */
    CHECK_EQ_INT(PyGC_Disable(), 0);
    CHECK_EQ_INT(PyGC_IsEnabled(), 0);

    int before = box_deallocs;
    /* Three self-cycles and a 2-cycle: 5 garbage objects. */
    for (int i = 0; i < 3; i++) {
        Box *box = new_box(NULL);
        box->item = Py_NewRef(box);
        Py_DECREF(box);
    }
    Box *x = new_box(NULL);
    x->item = (PyObject *)new_box(Py_NewRef(x));
    Py_DECREF(x);
    /* And a reachable cycle that must survive. */
    Box *kept = new_box(NULL);
    kept->item = (PyObject *)new_box(Py_NewRef(kept));

    CHECK_EQ_INT(PyGC_Collect(), 0); /* disabled: does nothing */
    CHECK_EQ_INT(box_deallocs, before);

    CHECK_EQ_INT(PyGC_Enable(), 0);
    CHECK_EQ_INT(PyGC_Enable(), 1);
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    CHECK_EQ_INT(PyGC_Collect(), 5);
    CHECK_EQ_INT(box_deallocs, before + 5);
    CHECK_EQ_INT(kept->canary, CANARY);
    CHECK_EQ_INT(((Box *)kept->item)->canary, CANARY);
    CHECK(((Box *)kept->item)->item == (PyObject *)kept);
    CHECK_EQ_INT(PyGC_Collect(), 0); /* nothing left */

    Py_DECREF(kept);
    CHECK_EQ_INT(PyGC_Collect(), 2);
    CHECK_EQ_INT(box_deallocs, before + 7);
}

static void test_collect_counts_uncollectable(void) {
    /* PyGC_Collect returns collected + uncollectable. As in CPython, a
     * cycle holding an object with a legacy finalizer (tp_del) cannot be
     * collected: it and all it reaches are uncollectable, kept alive, and
     * the tp_del objects go to the garbage list (gc.garbage, native
     * cgc_garbage_*). tp_del itself is never called by the collector. */
    gc_collect();
    int before = box_deallocs;
    cgc_ssize_t garbage_before = cgc_garbage_count();
    Box *legacy = PyObject_GC_New(Box, &LegacyType);
    REQUIRE(legacy != NULL);
    legacy->canary = CANARY;
    Box *other = new_box(Py_NewRef(legacy));
    legacy->item = (PyObject *)new_box((PyObject *)other); /* legacy -> x -> other -> legacy */
    PyObject_GC_Track(legacy);
    Py_DECREF(legacy);
    for (int i = 0; i < 4; i++) { /* 4 collectable self-cycles */
        Box *b = new_box(NULL);
        b->item = Py_NewRef(b);
        Py_DECREF(b);
    }
    CHECK_EQ_INT(PyGC_Collect(), 4 + 3);
    CHECK_EQ_INT(box_deallocs, before + 4);
    CHECK_EQ_INT(legacy_tp_del_calls, 0);
    CHECK_EQ_INT(cgc_garbage_count(), garbage_before + 1);
    CHECK_EQ_INT(legacy->canary, CANARY);
    CHECK_EQ_INT(other->canary, CANARY);
    CHECK_EQ_INT(((Box *)legacy->item)->canary, CANARY);
    CHECK(other->item == (PyObject *)legacy);
    /* The garbage list holds them: not found again. */
    CHECK_EQ_INT(PyGC_Collect(), 0);
    /* Cleanup: empty the list, break the cycle by hand. */
    cgc_garbage_clear();
    CHECK_EQ_INT(cgc_garbage_count(), 0);
    Py_CLEAR(other->item); /* frees legacy, which frees x, which frees other */
    CHECK_EQ_INT(box_deallocs, before + 4 + 3);
}

/* cyclegc's own raw-slot API (what the C++ API's make uses), from C: an
 * object built in place, bound and tracked, then collected as a garbage
 * self-cycle like any other. */
static void test_raw_slot(void) {
    cgc_raw_slot slot = cgc_gc_raw_alloc_slot(sizeof(Box), 16);
    REQUIRE(slot.memory != NULL && slot.gc_meta != NULL);
    Box *box = (Box *)slot.memory;
    box->ob_base.ob_refcnt = 1;
    box->ob_base.ob_type = &BoxType;
    box->canary = CANARY;
    box->item = NULL;
    cgc_gc_raw_bind_slot(slot, (PyObject *)box, 1);
    CHECK(PyObject_GC_IsTracked((PyObject *)box));
    box->item = Py_NewRef((PyObject *)box);
    int before = box_deallocs;
    Py_DECREF(box);
    CHECK_EQ_INT(box_deallocs, before);
    CHECK(PyGC_Collect() >= 1);
    CHECK_EQ_INT(box_deallocs, before + 1);
}

int main(void) {
    REQUIRE_EQ_INT(PyType_Ready(&BoxType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&VecType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&PlainType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&FinType), 0);
    REQUIRE_EQ_INT(PyType_Ready(&LegacyType), 0);
    RUN(test_versions);
    RUN(test_type_size_refcnt);
    RUN(test_incref_decref);
    RUN(test_py_clear);
    RUN(test_track_untrack);
    RUN(test_gc_del);
    RUN(test_resize);
    RUN(test_is_gc);
    RUN(test_is_finalized);
    RUN(test_collect_and_enable);
    RUN(test_collect_counts_uncollectable);
    RUN(test_raw_slot);
    return CHECK_DONE();
}
