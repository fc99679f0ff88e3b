/* The types and helpers of the gc module's C tests (test_gc_module_*.c):
 * Obj, a container with three references, in a plain, a finalizer and a
 * legacy (tp_del) type; captured log lines; errors counted by kind; and
 * begin()/end(), between which every test runs. */
#ifndef CYCLEGC_TESTS_C_GC_MODULE_OBJECTS_H
#define CYCLEGC_TESTS_C_GC_MODULE_OBJECTS_H

#include <cyclegc/Python.h>

#include "check.h"

/* ---- Obj: a container with three references ------------------------------ */

#define MAX_ID 4096

typedef struct {
    PyObject_HEAD
    PyObject *ref[3];
    int id;
} Obj;

/* Per-id counters of what the handlers did (ids < MAX_ID). */
static int deallocs[MAX_ID], finalizes[MAX_ID], clears[MAX_ID], dels[MAX_ID];
static void (*on_finalize)(Obj *self) = NULL;

static inline void reset_counters(void) {
    memset(deallocs, 0, sizeof deallocs);
    memset(finalizes, 0, sizeof finalizes);
    memset(clears, 0, sizeof clears);
    memset(dels, 0, sizeof dels);
    on_finalize = NULL;
}

static inline int Obj_traverse(PyObject *self, visitproc visit, void *arg) {
    Obj *o = (Obj *)self;
    for (int i = 0; i < 3; i++) Py_VISIT(o->ref[i]);
    return 0;
}

static inline void drop_refs(Obj *o) {
    for (int i = 0; i < 3; i++) Py_CLEAR(o->ref[i]);
}

static inline int Obj_clear(PyObject *self) {
    clears[((Obj *)self)->id]++;
    drop_refs((Obj *)self);
    return 0;
}

static inline void free_obj(PyObject *self) {
    PyObject_GC_UnTrack(self);
    deallocs[((Obj *)self)->id]++;
    drop_refs((Obj *)self);
    PyObject_GC_Del(self);
}

static inline void Plain_dealloc(PyObject *self) { free_obj(self); }

static inline void Final_finalize(PyObject *self) {
    finalizes[((Obj *)self)->id]++;
    if (on_finalize) on_finalize((Obj *)self);
}

static inline void Final_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return; /* resurrected */
    free_obj(self);
}

static inline void Legacy_del(PyObject *self) { dels[((Obj *)self)->id]++; }

/* As CPython's subtype_dealloc for a class with a legacy __del__. */
static inline void Legacy_dealloc(PyObject *self) {
    Py_SET_REFCNT(self, 1);
    Legacy_del(self);
    Py_SET_REFCNT(self, Py_REFCNT(self) - 1);
    if (Py_REFCNT(self) != 0) return;
    free_obj(self);
}

/* (Not every program uses every type.) */
#define GC_MODULE_MAYBE_UNUSED __attribute__((unused))

static GC_MODULE_MAYBE_UNUSED PyTypeObject PlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Plain",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Plain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
};

static GC_MODULE_MAYBE_UNUSED PyTypeObject FinalType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Final",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Final_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
    .tp_finalize = Final_finalize,
};

/* CPython's Uncollectable / X of test_garbage_at_shutdown: a tp_del slot. */
static GC_MODULE_MAYBE_UNUSED PyTypeObject LegacyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Legacy",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Legacy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
    .tp_del = Legacy_del,
};

static inline Obj *make(PyTypeObject *type, int id) {
    Obj *o = PyObject_GC_New(Obj, type);
    REQUIRE(o != NULL);
    for (int i = 0; i < 3; i++) o->ref[i] = NULL;
    o->id = id;
    PyObject_GC_Track(o);
    return o;
}

/* from->ref[slot] = to, a new strong reference. */
static inline void set_ref(Obj *from, int slot, void *to) {
    PyObject *old = from->ref[slot];
    from->ref[slot] = Py_XNewRef((PyObject *)to);
    Py_XDECREF(old);
}

/* An object in a self-loop and nothing else: garbage (borrowed pointer). */
static inline Obj *self_cycle_garbage(PyTypeObject *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    Py_DECREF(o);
    return o;
}

/* CPython's Uncollectable(): two tp_del objects that refer to each other. */
static inline void uncollectable_pair(int id_a, int id_b) {
    Obj *a = make(&LegacyType, id_a);
    Obj *b = make(&LegacyType, id_b);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    Py_DECREF(a);
    Py_DECREF(b);
}

static inline cgc_generation_stats stats(int generation) {
    cgc_generation_stats s;
    cgc_get_stats(generation, &s);
    return s;
}

static inline int list_contains(const cgc_object_list *list, const void *op) {
    for (Py_ssize_t i = 0; i < list->count; i++)
        if (list->items[i] == op) return 1;
    return 0;
}

static inline int in_objects(int generation, const void *op) {
    cgc_object_list list;
    REQUIRE(cgc_get_objects(generation, &list) == 0);
    int found = list_contains(&list, op);
    cgc_object_list_release(&list);
    return found;
}

static inline Py_ssize_t tracked_count(void) {
    cgc_object_list list;
    REQUIRE(cgc_get_objects(-1, &list) == 0);
    Py_ssize_t n = list.count;
    cgc_object_list_release(&list);
    return n + cgc_get_freeze_count();
}

/* ---- Captured log lines ---------------------------------------------------- */

#define MAX_LINES 64
static char lines[MAX_LINES][256];
static int n_lines = 0;

static inline void capture_line(const char *line, void *context) {
    (void)context;
    if (n_lines < MAX_LINES) snprintf(lines[n_lines++], sizeof lines[0], "%s", line);
}

static inline int find_line(const char *needle, int from) {
    for (int i = from; i < n_lines; i++)
        if (strstr(lines[i], needle)) return i;
    return -1;
}

/* ---- Errors: counted, not printed ------------------------------------------ */

static int errors_by_kind[CGC_ERR_UNRAISABLE + 1];
static inline void count_error(cgc_error_kind kind, const char *message, void *context) {
    (void)message;
    (void)context;
    errors_by_kind[kind]++;
}

/* Every test starts from a collected heap with no garbage and ends with no
 * tracked object of its own. */
static inline void begin(void) {
    gc_collect();
    reset_counters();
    n_lines = 0;
    memset(errors_by_kind, 0, sizeof errors_by_kind);
    REQUIRE_EQ_INT(cgc_garbage_count(), 0);
    REQUIRE_EQ_INT(tracked_count(), 0);
}

static inline void end(void) {
    on_finalize = NULL;
    cgc_set_debug(0);
    gc_collect();
    CHECK_EQ_INT(tracked_count(), 0);
    CHECK_EQ_INT(cgc_garbage_count(), 0);
    for (int k = 0; k <= CGC_ERR_UNRAISABLE; k++) CHECK_EQ_INT(errors_by_kind[k], 0);
}

/* What every program does first: errors counted, no automatic collection,
 * no debug output. */
static inline void start_program(void) {
    cgc_set_error_hook(count_error, NULL);
    PyGC_Disable();
    cgc_set_debug(0);
}

#endif
