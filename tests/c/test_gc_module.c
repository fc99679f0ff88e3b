/* The gc module's surface from C, through <cyclegc/Python.h> (and the
 * native cgc_* names where CPython has no C name): ports of CPython's
 * Lib/test/test_gc.py that map onto C types (test_saveall,
 * test_legacy_finalizer, test_get_stats, test_collect_generations,
 * test_freeze, test_get_objects, test_get_objects_during_gc,
 * test_traverse_frozen_objects, test_resurrection_*, GCCallbackTests,
 * test_garbage_at_shutdown), the debug output, PyGC_*,
 * PyObject_GC_IsTracked / IsFinalized and PyUnstable_GC_VisitObjects. */
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

static void reset_counters(void) {
    memset(deallocs, 0, sizeof deallocs);
    memset(finalizes, 0, sizeof finalizes);
    memset(clears, 0, sizeof clears);
    memset(dels, 0, sizeof dels);
    on_finalize = NULL;
}

static int Obj_traverse(PyObject *self, visitproc visit, void *arg) {
    Obj *o = (Obj *)self;
    for (int i = 0; i < 3; i++) Py_VISIT(o->ref[i]);
    return 0;
}

static void drop_refs(Obj *o) {
    for (int i = 0; i < 3; i++) Py_CLEAR(o->ref[i]);
}

static int Obj_clear(PyObject *self) {
    clears[((Obj *)self)->id]++;
    drop_refs((Obj *)self);
    return 0;
}

static void free_obj(PyObject *self) {
    PyObject_GC_UnTrack(self);
    deallocs[((Obj *)self)->id]++;
    drop_refs((Obj *)self);
    PyObject_GC_Del(self);
}

static void Plain_dealloc(PyObject *self) { free_obj(self); }

static void Final_finalize(PyObject *self) {
    finalizes[((Obj *)self)->id]++;
    if (on_finalize) on_finalize((Obj *)self);
}

static void Final_dealloc(PyObject *self) {
    if (PyObject_CallFinalizerFromDealloc(self) < 0) return; /* resurrected */
    free_obj(self);
}

static void Legacy_del(PyObject *self) { dels[((Obj *)self)->id]++; }

/* As CPython's subtype_dealloc for a class with a legacy __del__. */
static void Legacy_dealloc(PyObject *self) {
    Py_SET_REFCNT(self, 1);
    Legacy_del(self);
    Py_SET_REFCNT(self, Py_REFCNT(self) - 1);
    if (Py_REFCNT(self) != 0) return;
    free_obj(self);
}

static PyTypeObject PlainType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Plain",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Plain_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
};

static PyTypeObject FinalType = {
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
static PyTypeObject LegacyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Legacy",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Legacy_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
    .tp_del = Legacy_del,
};

static Obj *make(PyTypeObject *type, int id) {
    Obj *o = PyObject_GC_New(Obj, type);
    REQUIRE(o != NULL);
    for (int i = 0; i < 3; i++) o->ref[i] = NULL;
    o->id = id;
    PyObject_GC_Track(o);
    return o;
}

/* from->ref[slot] = to, a new strong reference. */
static void set_ref(Obj *from, int slot, void *to) {
    PyObject *old = from->ref[slot];
    from->ref[slot] = Py_XNewRef((PyObject *)to);
    Py_XDECREF(old);
}

/* An object in a self-loop and nothing else: garbage (borrowed pointer). */
static Obj *self_cycle_garbage(PyTypeObject *type, int id) {
    Obj *o = make(type, id);
    set_ref(o, 0, o);
    Py_DECREF(o);
    return o;
}

/* CPython's Uncollectable(): two tp_del objects that refer to each other. */
static void uncollectable_pair(int id_a, int id_b) {
    Obj *a = make(&LegacyType, id_a);
    Obj *b = make(&LegacyType, id_b);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    Py_DECREF(a);
    Py_DECREF(b);
}

static cgc_generation_stats stats(int generation) {
    cgc_generation_stats s;
    cgc_get_stats(generation, &s);
    return s;
}

static int list_contains(const cgc_object_list *list, const void *op) {
    for (Py_ssize_t i = 0; i < list->count; i++)
        if (list->items[i] == op) return 1;
    return 0;
}

static int in_objects(int generation, const void *op) {
    cgc_object_list list;
    REQUIRE(cgc_get_objects(generation, &list) == 0);
    int found = list_contains(&list, op);
    cgc_object_list_release(&list);
    return found;
}

static Py_ssize_t tracked_count(void) {
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

static void capture_line(const char *line, void *context) {
    (void)context;
    if (n_lines < MAX_LINES) snprintf(lines[n_lines++], sizeof lines[0], "%s", line);
}

static int find_line(const char *needle, int from) {
    for (int i = from; i < n_lines; i++)
        if (strstr(lines[i], needle)) return i;
    return -1;
}

/* ---- Errors: counted, not printed ------------------------------------------ */

static int errors_by_kind[CGC_ERR_UNRAISABLE + 1];
static void count_error(cgc_error_kind kind, const char *message, void *context) {
    (void)message;
    (void)context;
    errors_by_kind[kind]++;
}

/* Every test starts from a collected heap with no garbage and ends with no
 * tracked object of its own. */
static void begin(void) {
    gc_collect();
    reset_counters();
    n_lines = 0;
    memset(errors_by_kind, 0, sizeof errors_by_kind);
    REQUIRE_EQ_INT(cgc_garbage_count(), 0);
    REQUIRE_EQ_INT(tracked_count(), 0);
}

static void end(void) {
    on_finalize = NULL;
    cgc_set_debug(0);
    gc_collect();
    CHECK_EQ_INT(tracked_count(), 0);
    CHECK_EQ_INT(cgc_garbage_count(), 0);
    for (int k = 0; k <= CGC_ERR_UNRAISABLE; k++) CHECK_EQ_INT(errors_by_kind[k], 0);
}

/* ---- enable, disable, collect, thresholds, counts --------------------------- */

static void test_enable_disable(void) {
    begin();
    CHECK_EQ_INT(PyGC_IsEnabled(), 0); /* main() disabled it, as test_gc.py does */
    CHECK_EQ_INT(PyGC_Enable(), 0);
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    CHECK_EQ_INT(PyGC_Enable(), 1);
    CHECK_EQ_INT(PyGC_Disable(), 1);
    CHECK_EQ_INT(PyGC_Disable(), 0);
    /* PyGC_Collect does nothing while automatic collection is disabled. */
    self_cycle_garbage(&PlainType, 1);
    CHECK_EQ_INT(PyGC_Collect(), 0);
    CHECK_EQ_INT(deallocs[1], 0);
    PyGC_Enable();
    CHECK_EQ_INT(PyGC_Collect(), 1);
    CHECK_EQ_INT(deallocs[1], 1);
    PyGC_Disable();
    end();
}

/* test_list: a container in a self-loop. */
static void test_list(void) {
    begin();
    Obj *l = make(&PlainType, 1);
    set_ref(l, 0, l);
    gc_collect();
    Py_DECREF(l);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(clears[1], 1);
    CHECK_EQ_INT(cgc_collect(3), -1); /* "invalid generation" */
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_VALUE);
    PyErr_Clear();
    errors_by_kind[CGC_ERR_VALUE] = 0;
    end();
}

static void test_thresholds(void) {
    begin();
    CHECK_EQ_INT(cgc_get_threshold(0), 700);
    CHECK_EQ_INT(cgc_get_threshold(1), 10);
    CHECK_EQ_INT(cgc_get_threshold(2), 10);
    cgc_set_threshold(0, 5);
    CHECK_EQ_INT(cgc_get_threshold(0), 5);
    uint64_t young_collections = stats(0).collections;
    /* test_indirect_calls_with_gc_disabled: disabled, nothing collects. */
    Obj *keep[100];
    self_cycle_garbage(&PlainType, 1);
    for (int i = 0; i < 20; i++) keep[i] = make(&PlainType, 100 + i);
    CHECK_EQ_INT(deallocs[1], 0);
    CHECK_EQ_INT(stats(0).collections - young_collections, 0);
    /* Enabled, the next allocation over the threshold collects generation 0. */
    PyGC_Enable();
    Obj *trigger = make(&PlainType, 200);
    PyGC_Disable();
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(stats(0).collections - young_collections, 1);
    for (int i = 0; i < 20; i++) Py_DECREF(keep[i]);
    /* A threshold of 0 disables automatic collection. */
    cgc_set_threshold(0, 0);
    PyGC_Enable();
    self_cycle_garbage(&PlainType, 2);
    for (int i = 0; i < 100; i++) keep[i] = make(&PlainType, 300 + i);
    PyGC_Disable();
    CHECK_EQ_INT(deallocs[2], 0);
    CHECK_EQ_INT(stats(0).collections - young_collections, 1);
    CHECK(cgc_get_count(0) > 100);
    cgc_set_threshold(0, 700);
    for (int i = 0; i < 100; i++) Py_DECREF(keep[i]);
    Py_DECREF(trigger);
    end();
}

/* test_collect_generations. */
static void test_collect_generations(void) {
    begin();
    cgc_collect(0);
    CHECK_EQ_INT(cgc_get_count(1), 1);
    CHECK_EQ_INT(cgc_get_count(2), 0);
    cgc_collect(1);
    CHECK_EQ_INT(cgc_get_count(1), 0);
    CHECK_EQ_INT(cgc_get_count(2), 1);
    cgc_collect(2);
    CHECK_EQ_INT(cgc_get_count(0), 0);
    CHECK_EQ_INT(cgc_get_count(1), 0);
    CHECK_EQ_INT(cgc_get_count(2), 0);
    /* The young count grows with allocations (test_get_count). */
    Obj *o = make(&PlainType, 1);
    CHECK_EQ_INT(cgc_get_count(0), 1);
    Py_DECREF(o);
    CHECK_EQ_INT(cgc_get_count(0), 0);
    end();
}

/* test_get_stats: with GC disabled, collect(0) bumps only generation 0's
 * collections and collect(2) only generation 2's. */
static void test_get_stats(void) {
    begin();
    cgc_generation_stats old[3], now[3];
    for (int g = 0; g < 3; g++) old[g] = stats(g);
    cgc_collect(0);
    for (int g = 0; g < 3; g++) now[g] = stats(g);
    CHECK_EQ_INT(now[0].collections, old[0].collections + 1);
    CHECK_EQ_INT(now[1].collections, old[1].collections);
    CHECK_EQ_INT(now[2].collections, old[2].collections);
    cgc_collect(2);
    for (int g = 0; g < 3; g++) old[g] = now[g], now[g] = stats(g);
    CHECK_EQ_INT(now[0].collections, old[0].collections);
    CHECK_EQ_INT(now[1].collections, old[1].collections);
    CHECK_EQ_INT(now[2].collections, old[2].collections + 1);
    /* collected / uncollectable / examined. */
    Obj *live = make(&PlainType, 1);
    self_cycle_garbage(&PlainType, 2);
    uncollectable_pair(3, 4);
    cgc_collect(2);
    old[2] = now[2];
    now[2] = stats(2);
    CHECK_EQ_INT(now[2].collected - old[2].collected, 1);
    CHECK_EQ_INT(now[2].uncollectable - old[2].uncollectable, 2);
    CHECK_EQ_INT(now[2].examined - old[2].examined, 4);
    CHECK(now[2].total_ns >= now[2].max_pause_ns);
    /* Clean up the uncollectable pair. */
    cgc_object_list g;
    REQUIRE(cgc_get_garbage(&g) == 0);
    for (Py_ssize_t i = 0; i < g.count; i++) drop_refs((Obj *)g.items[i]);
    cgc_garbage_clear();
    cgc_object_list_release(&g);
    CHECK_EQ_INT(deallocs[3] + deallocs[4], 2);
    Py_DECREF(live);
    end();
}

/* test_resurrection_does_not_block_cleanup_of_other_objects. */
static PyObject *zs[4];
static int n_zs = 0;
static void store_z(Obj *self) { zs[n_zs++] = Py_NewRef((PyObject *)self); }

static void test_resurrection_does_not_block_cleanup_of_other_objects(void) {
    begin();
    enum { N = 100 };
    on_finalize = store_z;
    n_zs = 0;
    cgc_generation_stats s0 = stats(2), s1, s2, s3, s4;
    for (int i = 0; i < N; i++) self_cycle_garbage(&PlainType, i);
    CHECK_EQ_INT(gc_collect(), N);
    s1 = stats(2);
    CHECK_EQ_INT(s1.collected - s0.collected, N);
    CHECK_EQ_INT(s1.uncollectable - s0.uncollectable, 0);

    self_cycle_garbage(&FinalType, 1000); /* Z(): merely resurrected */
    CHECK_EQ_INT(gc_collect(), 0);
    s2 = stats(2);
    CHECK_EQ_INT(s2.collected - s1.collected, 0);
    CHECK_EQ_INT(s2.uncollectable - s1.uncollectable, 0);

    for (int i = 0; i < N; i++) self_cycle_garbage(&PlainType, 2000 + i);
    self_cycle_garbage(&FinalType, 1001);
    CHECK_EQ_INT(gc_collect(), N);
    s3 = stats(2);
    CHECK_EQ_INT(s3.collected - s2.collected, N);
    CHECK_EQ_INT(s3.uncollectable - s2.uncollectable, 0);
    CHECK_EQ_INT(n_zs, 2);

    for (int i = 0; i < n_zs; i++) Py_DECREF(zs[i]);
    n_zs = 0;
    CHECK_EQ_INT(gc_collect(), 2);
    s4 = stats(2);
    CHECK_EQ_INT(s4.collected - s3.collected, 2);
    CHECK_EQ_INT(s4.uncollectable - s3.uncollectable, 0);
    CHECK_EQ_INT(finalizes[1000], 1);
    CHECK_EQ_INT(finalizes[1001], 1);
    CHECK_EQ_INT(deallocs[1000] + deallocs[1001], 2);
    end();
}

/* test_resurrection_only_happens_once_per_object. */
static PyObject *lazarus = NULL;
static void resurrect(Obj *self) { lazarus = Py_NewRef((PyObject *)self); }

static void test_resurrection_only_happens_once_per_object(void) {
    begin();
    on_finalize = resurrect;
    Obj *laz = self_cycle_garbage(&FinalType, 1);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(laz), 0);
    gc_collect();
    CHECK_EQ_INT(finalizes[1], 1);
    CHECK(lazarus == (PyObject *)laz);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(lazarus), 1); /* test_is_finalized */
    CHECK_EQ_INT(clears[1], 0);
    Py_CLEAR(lazarus);
    gc_collect();
    CHECK_EQ_INT(finalizes[1], 1);
    CHECK_EQ_INT(deallocs[1], 1);
    end();
}

/* ---- the garbage list, DEBUG_SAVEALL, legacy finalizers -------------------- */

/* test_saveall. */
static void test_saveall(void) {
    begin();
    CHECK_EQ_INT(cgc_garbage_count(), 0);
    cgc_set_debug(cgc_get_debug() | CGC_DEBUG_SAVEALL);
    Obj *l = self_cycle_garbage(&PlainType, 1);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(deallocs[1], 0);
    CHECK_EQ_INT(clears[1], 0);
    cgc_object_list g;
    REQUIRE(cgc_get_garbage(&g) == 0);
    CHECK_EQ_INT(g.count, 1);
    CHECK(g.count == 1 && g.items[0] == (PyObject *)l);
    CHECK(l->ref[0] == (PyObject *)l);
    cgc_object_list_release(&g);
    cgc_set_debug(0);
    drop_refs(l); /* del obj[:] */
    cgc_garbage_clear(); /* gc.garbage.remove(obj) */
    CHECK_EQ_INT(deallocs[1], 1);
    end();
}

/* test_legacy_finalizer: a tp_del object in a self-loop, and a plain one. */
static void test_legacy_finalizer(void) {
    begin();
    Obj *a = self_cycle_garbage(&LegacyType, 1);
    self_cycle_garbage(&PlainType, 2);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(deallocs[2], 1);
    CHECK_EQ_INT(deallocs[1], 0);
    CHECK_EQ_INT(dels[1], 0);
    CHECK_EQ_INT(clears[1], 0);
    cgc_object_list g;
    REQUIRE(cgc_get_garbage(&g) == 0);
    CHECK(g.count == 1 && g.items[0] == (PyObject *)a);
    cgc_object_list_release(&g);
    Py_CLEAR(a->ref[0]); /* del obj.a */
    CHECK_EQ_INT(deallocs[1], 0);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(dels[1], 1);
    end();
}

/* Everything reachable from a tp_del object is uncollectable too, but only
 * the tp_del objects go to the garbage list; nothing there is finalized. */
static void test_legacy_finalizer_reachable(void) {
    begin();
    Obj *l = make(&LegacyType, 1);
    Obj *a = make(&PlainType, 2);
    Obj *f = make(&FinalType, 3);
    set_ref(l, 0, l);
    set_ref(l, 1, a);
    set_ref(a, 0, f);
    set_ref(f, 0, a);
    Py_DECREF(l);
    Py_DECREF(a);
    Py_DECREF(f);
    CHECK_EQ_INT(gc_collect(), 3);
    CHECK_EQ_INT(stats(2).uncollectable >= 3, 1);
    CHECK_EQ_INT(finalizes[3], 0);
    CHECK_EQ_INT(clears[1] + clears[2] + clears[3], 0);
    cgc_object_list g;
    REQUIRE(cgc_get_garbage(&g) == 0);
    CHECK(g.count == 1 && g.items[0] == (PyObject *)l);
    cgc_object_list_release(&g);
    drop_refs(l);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(finalizes[3], 1);
    end();
}

/* ---- collection callbacks (GCCallbackTests) ------------------------------------ */

typedef struct {
    int which;
    char phase[8];
    cgc_collection_info info;
} Visit;

static Visit visits[32];
static int n_visits = 0;
static int cleanup = 0;

static void cb(const char *phase, const cgc_collection_info *info, void *context) {
    int which = *(const int *)context;
    if (n_visits < 32) {
        visits[n_visits].which = which;
        snprintf(visits[n_visits].phase, sizeof visits[0].phase, "%s", phase);
        visits[n_visits].info = *info;
        n_visits++;
    }
    if (which == 2 && cleanup && strcmp(phase, "stop") == 0) {
        /* Clean the Uncollectables out of the garbage list. */
        cgc_object_list g;
        REQUIRE(cgc_get_garbage(&g) == 0);
        cgc_garbage_clear();
        for (Py_ssize_t i = 0; i < g.count; i++) Py_CLEAR(((Obj *)g.items[i])->ref[0]); /* e.partner = None */
        cgc_object_list_release(&g);
    }
}

static int one = 1, two = 2;

static void callbacks_setup(void) {
    begin();
    n_visits = 0;
    cleanup = 0;
    REQUIRE(cgc_add_collection_callback(cb, &one) == 0);
    REQUIRE(cgc_add_collection_callback(cb, &two) == 0);
}

static void callbacks_teardown(void) {
    CHECK_EQ_INT(cgc_remove_collection_callback(cb, &one), 0);
    CHECK_EQ_INT(cgc_remove_collection_callback(cb, &two), 0);
    CHECK_EQ_INT(cgc_remove_collection_callback(cb, &two), -1);
    end();
}

/* test_collect. */
static void test_callbacks_collect(void) {
    callbacks_setup();
    self_cycle_garbage(&PlainType, 1);
    gc_collect();
    REQUIRE_EQ_INT(n_visits, 4);
    int n1 = 0, n2 = 0, starts = 0, stops = 0;
    for (int i = 0; i < n_visits; i++) {
        n1 += visits[i].which == 1;
        n2 += visits[i].which == 2;
        starts += strcmp(visits[i].phase, "start") == 0;
        stops += strcmp(visits[i].phase, "stop") == 0;
    }
    CHECK_EQ_INT(n1, 2);
    CHECK_EQ_INT(n2, 2);
    CHECK_EQ_INT(starts, 2);
    CHECK_EQ_INT(stops, 2);
    CHECK(strcmp(visits[0].phase, "start") == 0 && strcmp(visits[1].phase, "start") == 0);
    CHECK_EQ_INT(visits[0].which, 1);
    CHECK_EQ_INT(visits[1].which, 2);
    CHECK_EQ_INT(visits[0].info.collected, 0);
    CHECK_EQ_INT(visits[0].info.uncollectable, 0);
    CHECK_EQ_INT(visits[2].info.collected, 1);
    CHECK_EQ_INT(visits[3].info.collected, 1);
    CHECK_EQ_INT(visits[3].info.uncollectable, 0);
    CHECK_EQ_INT(visits[3].info.candidates, 1);
    callbacks_teardown();
}

/* test_collect_generation. */
static void test_callbacks_collect_generation(void) {
    callbacks_setup();
    cgc_collect(2);
    REQUIRE_EQ_INT(n_visits, 4);
    for (int i = 0; i < n_visits; i++) CHECK_EQ_INT(visits[i].info.generation, 2);
    n_visits = 0;
    cgc_collect(0);
    REQUIRE_EQ_INT(n_visits, 4);
    for (int i = 0; i < n_visits; i++) CHECK_EQ_INT(visits[i].info.generation, 0);
    callbacks_teardown();
}

/* test_collect_garbage. */
static void test_callbacks_collect_garbage(void) {
    callbacks_setup();
    uncollectable_pair(1, 2);
    uncollectable_pair(3, 4);
    self_cycle_garbage(&PlainType, 666);
    gc_collect();
    int stops = 0;
    for (int i = 0; i < n_visits; i++) {
        if (strcmp(visits[i].phase, "stop") != 0) continue;
        stops++;
        CHECK_EQ_INT(visits[i].info.collected, 1);
        CHECK_EQ_INT(visits[i].info.uncollectable, 4);
    }
    CHECK_EQ_INT(stops, 2);
    cgc_object_list g;
    REQUIRE(cgc_get_garbage(&g) == 0);
    CHECK_EQ_INT(g.count, 4);
    for (Py_ssize_t i = 0; i < g.count; i++) CHECK(Py_IS_TYPE(g.items[i], &LegacyType));
    /* The Python test's loop variable `e` keeps the last one alive. */
    PyObject *e = g.count > 0 ? Py_NewRef(g.items[g.count - 1]) : NULL;
    cgc_object_list_release(&g);

    cleanup = 1;
    n_visits = 0;
    cgc_garbage_clear();
    gc_collect();
    stops = 0;
    for (int i = 0; i < n_visits; i++) {
        if (strcmp(visits[i].phase, "stop") != 0) continue;
        stops++;
        CHECK_EQ_INT(visits[i].info.collected, 0);
        CHECK_EQ_INT(visits[i].info.uncollectable, 2);
    }
    CHECK_EQ_INT(stops, 2);
    CHECK_EQ_INT(cgc_garbage_count(), 0);
    CHECK_EQ_INT(deallocs[1] + deallocs[2] + deallocs[3] + deallocs[4], 2);
    cleanup = 0;
    if (e) {
        Py_CLEAR(((Obj *)e)->ref[0]);
        Py_DECREF(e);
    }
    CHECK_EQ_INT(deallocs[1] + deallocs[2] + deallocs[3] + deallocs[4], 4);
    CHECK_EQ_INT(dels[1] + dels[2] + dels[3] + dels[4], 4);
    CHECK_EQ_INT(deallocs[666], 1);
    callbacks_teardown();
}

/* A collection requested from a callback is refused: it returns 0. */
static Py_ssize_t nested_results[4];
static int n_nested = 0;
static void collecting_cb(const char *phase, const cgc_collection_info *info, void *context) {
    (void)phase;
    (void)info;
    (void)context;
    nested_results[n_nested++] = cgc_collect(2);
    nested_results[n_nested++] = gc_collect();
}

static void test_callback_that_collects(void) {
    begin();
    n_nested = 0;
    REQUIRE(cgc_add_collection_callback(collecting_cb, NULL) == 0);
    self_cycle_garbage(&PlainType, 1);
    uint64_t before = stats(2).collections;
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(n_nested, 4);
    for (int i = 0; i < n_nested; i++) CHECK_EQ_INT(nested_results[i], 0);
    CHECK_EQ_INT(stats(2).collections - before, 1);
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(cgc_is_collecting(), 0);
    CHECK_EQ_INT(cgc_remove_collection_callback(collecting_cb, NULL), 0);
    end();
}

/* ---- freeze ---------------------------------------------------------------- */

/* test_freeze. */
static void test_freeze(void) {
    begin();
    Obj *a = make(&PlainType, 1);
    Obj *b = make(&PlainType, 2);
    cgc_freeze();
    CHECK_EQ_INT(cgc_get_freeze_count(), 2);
    CHECK_EQ_INT(in_objects(-1, a), 0);
    CHECK_EQ_INT(PyObject_GC_IsTracked(a), 1);
    cgc_unfreeze();
    CHECK_EQ_INT(cgc_get_freeze_count(), 0);
    CHECK_EQ_INT(in_objects(2, a), 1);
    CHECK_EQ_INT(in_objects(2, b), 1);

    /* Frozen objects are not examined: a full collection gets cheaper. */
    enum { N = 500 };
    Obj *live[N];
    for (int i = 0; i < N; i++) live[i] = make(&PlainType, 100 + i);
    uint64_t e0 = stats(2).examined;
    cgc_collect(2);
    uint64_t e1 = stats(2).examined;
    CHECK_EQ_INT(e1 - e0, N + 2);
    cgc_freeze();
    self_cycle_garbage(&PlainType, 3);
    CHECK_EQ_INT(cgc_collect(2), 1);
    CHECK_EQ_INT(stats(2).examined - e1, 1);
    CHECK_EQ_INT(deallocs[3], 1);

    /* Frozen garbage stays until unfrozen. */
    Py_DECREF(a);
    set_ref(b, 0, b);
    Py_DECREF(b);
    CHECK_EQ_INT(deallocs[1], 1); /* reference counting still works */
    CHECK_EQ_INT(cgc_collect(2), 0);
    CHECK_EQ_INT(deallocs[2], 0);
    cgc_unfreeze();
    CHECK_EQ_INT(cgc_collect(2), 1);
    CHECK_EQ_INT(deallocs[2], 1);
    for (int i = 0; i < N; i++) Py_DECREF(live[i]);
    end();
}

/* test_traverse_frozen_objects: a new cycle referring to a frozen object. */
static void test_traverse_frozen_objects(void) {
    begin();
    Obj *frozen = make(&PlainType, 1);
    cgc_freeze();
    Obj *a = make(&PlainType, 2);
    Obj *b = make(&PlainType, 3);
    set_ref(a, 0, b);
    set_ref(b, 0, a);
    set_ref(a, 1, frozen);
    Py_DECREF(a);
    Py_DECREF(b);
    CHECK_EQ_INT(Py_REFCNT(frozen), 2);
    CHECK_EQ_INT(gc_collect(), 2);
    CHECK_EQ_INT(Py_REFCNT(frozen), 1);
    cgc_unfreeze();
    CHECK_EQ_INT(gc_collect(), 0);
    CHECK_EQ_INT(Py_REFCNT(frozen), 1);
    CHECK_EQ_INT(deallocs[1], 0);
    Py_DECREF(frozen);
    end();
}

/* ---- introspection ------------------------------------------------------------ */

/* test_get_objects and the 3.9 test_get_objects (generations). */
static void test_get_objects(void) {
    begin();
    Obj *l = make(&PlainType, 1);
    set_ref(l, 0, l);
    CHECK_EQ_INT(in_objects(-1, l), 1);
    CHECK_EQ_INT(in_objects(0, l), 1);
    cgc_collect(0);
    CHECK_EQ_INT(in_objects(0, l), 0);
    CHECK_EQ_INT(in_objects(1, l), 1);
    cgc_collect(1);
    CHECK_EQ_INT(in_objects(1, l), 0);
    CHECK_EQ_INT(in_objects(2, l), 1);
    cgc_collect(2);
    CHECK_EQ_INT(in_objects(2, l), 1);
    cgc_object_list list;
    CHECK_EQ_INT(cgc_get_objects(1000, &list), -1);
    CHECK_EQ_INT(cgc_get_objects(-1000, &list), -1);
    CHECK_EQ_INT(list.count, 0);
    CHECK_EQ_INT(errors_by_kind[CGC_ERR_VALUE], 2);
    errors_by_kind[CGC_ERR_VALUE] = 0;
    PyErr_Clear();
    Py_DECREF(l);
    CHECK_EQ_INT(gc_collect(), 1);
    end();
}

/* test_get_objects_during_gc (gh-125859). */
static int in_get_objects = -1;
static Py_ssize_t n_referrers = -1;
static void look_around(Obj *self) {
    in_get_objects = in_objects(-1, self);
    cgc_object_list list;
    PyObject *targets[1] = {(PyObject *)self};
    REQUIRE(cgc_get_referrers(targets, 1, &list) == 0);
    n_referrers = list.count;
    cgc_object_list_release(&list);
}

static void test_get_objects_during_gc(void) {
    begin();
    on_finalize = look_around;
    self_cycle_garbage(&FinalType, 1);
    CHECK_EQ_INT(gc_collect(), 1);
    CHECK_EQ_INT(finalizes[1], 1);
    CHECK_EQ_INT(in_get_objects, 0);
    CHECK_EQ_INT(n_referrers, 0);
    end();
}

/* test_get_referents / get_referrers. */
static void test_referents_and_referrers(void) {
    begin();
    Obj *x = make(&PlainType, 1), *y = make(&PlainType, 2);
    Obj *a = make(&PlainType, 3), *b = make(&PlainType, 4);
    set_ref(a, 0, x);
    set_ref(a, 1, y);
    set_ref(b, 2, x);
    PyObject *args[2] = {(PyObject *)a, (PyObject *)b};
    cgc_object_list list;
    REQUIRE(cgc_get_referents(args, 2, &list) == 0);
    REQUIRE_EQ_INT(list.count, 3);
    CHECK(list.items[0] == (PyObject *)x);
    CHECK(list.items[1] == (PyObject *)y);
    CHECK(list.items[2] == (PyObject *)x);
    cgc_object_list_release(&list);
    PyObject *targets[1] = {(PyObject *)x};
    REQUIRE(cgc_get_referrers(targets, 1, &list) == 0);
    CHECK_EQ_INT(list.count, 2);
    CHECK(list_contains(&list, a) && list_contains(&list, b));
    cgc_object_list_release(&list);
    REQUIRE(cgc_get_referrers(targets, 0, &list) == 0);
    CHECK_EQ_INT(list.count, 0);
    cgc_object_list_release(&list);
    Py_DECREF(a);
    Py_DECREF(b);
    Py_DECREF(x);
    Py_DECREF(y);
    end();
}

/* test_is_tracked, with an object that was never tracked. */
static void test_is_tracked(void) {
    begin();
    Obj *u = PyObject_GC_New(Obj, &PlainType);
    REQUIRE(u != NULL);
    memset(u->ref, 0, sizeof u->ref);
    u->id = 1;
    CHECK_EQ_INT(PyObject_GC_IsTracked(u), 0);
    PyObject_GC_Track(u);
    CHECK_EQ_INT(PyObject_GC_IsTracked(u), 1);
    CHECK_EQ_INT(PyObject_GC_IsFinalized(u), 0);
    PyObject_GC_UnTrack(u);
    CHECK_EQ_INT(PyObject_GC_IsTracked(u), 0);
    Py_DECREF(u);
    end();
}

/* PyUnstable_GC_VisitObjects: every tracked object, frozen ones included,
 * with automatic collection off; stops when the visitor returns 0. */
static int n_visited = 0, enabled_inside = -1, stop_at = 0;
static int visitor(PyObject *op, void *arg) {
    (void)op;
    (void)arg;
    n_visited++;
    enabled_inside = PyGC_IsEnabled();
    return n_visited != stop_at;
}

static void test_visit_objects(void) {
    begin();
    Obj *a = make(&PlainType, 1);
    cgc_freeze();
    Obj *b = make(&PlainType, 2);
    Obj *c = make(&PlainType, 3);
    PyGC_Enable();
    n_visited = 0;
    stop_at = 0;
    PyUnstable_GC_VisitObjects(visitor, NULL);
    CHECK_EQ_INT(n_visited, 3);
    CHECK_EQ_INT(enabled_inside, 0);
    CHECK_EQ_INT(PyGC_IsEnabled(), 1);
    n_visited = 0;
    stop_at = 2;
    PyUnstable_GC_VisitObjects(visitor, NULL);
    CHECK_EQ_INT(n_visited, 2);
    PyGC_Disable();
    cgc_unfreeze();
    Py_DECREF(a);
    Py_DECREF(b);
    Py_DECREF(c);
    end();
}

/* ---- debug output ------------------------------------------------------------ */

static int is_done_line(const char *line, int unreachable, int uncollectable) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "gc: done, %d unreachable, %d uncollectable, ", unreachable, uncollectable);
    size_t n = strlen(prefix);
    if (strncmp(line, prefix, n) != 0) return 0;
    const char *p = line + n;
    while (*p >= '0' && *p <= '9') p++;
    if (*p++ != '.') return 0;
    for (int i = 0; i < 4; i++, p++)
        if (*p < '0' || *p > '9') return 0;
    return strcmp(p, "s elapsed") == 0;
}

static void test_debug_output(void) {
    begin();
    cgc_log_sink previous = cgc_set_log_sink(capture_line, NULL);
    CHECK(previous != NULL);
    Obj *live = make(&PlainType, 1);
    gc_collect(); /* live is in generation 2 */

    /* No flags: no output. */
    cgc_set_debug(0);
    n_lines = 0;
    self_cycle_garbage(&PlainType, 4);
    CHECK_EQ_INT(cgc_collect(0), 1);
    CHECK_EQ_INT(n_lines, 0);

    Obj *x = self_cycle_garbage(&PlainType, 2);
    Obj *l = self_cycle_garbage(&LegacyType, 3);
    Obj *young = make(&PlainType, 5);
    char collectable[128], uncollectable[128];
    snprintf(collectable, sizeof collectable, "gc: collectable <Plain %p>", (void *)x);
    snprintf(uncollectable, sizeof uncollectable, "gc: uncollectable <Legacy %p>", (void *)l);
    cgc_set_debug(CGC_DEBUG_STATS | CGC_DEBUG_COLLECTABLE | CGC_DEBUG_UNCOLLECTABLE);
    CHECK_EQ_INT(cgc_get_debug(), 7);
    n_lines = 0;
    CHECK_EQ_INT(cgc_collect(2), 2);
    for (int i = 0; i < n_lines; i++) fprintf(stderr, "  captured: %s\n", lines[i]);
    REQUIRE_EQ_INT(n_lines, 6);
    CHECK(strcmp(lines[0], "gc: collecting generation 2...") == 0);
    CHECK(strcmp(lines[1], "gc: objects in each generation: 3 0 1") == 0);
    CHECK(strcmp(lines[2], "gc: objects in permanent generation: 0") == 0);
    CHECK(strcmp(lines[3], collectable) == 0);
    CHECK(strcmp(lines[4], uncollectable) == 0);
    CHECK(is_done_line(lines[5], 2, 1));

    /* NULL restores the default sink (stderr). */
    CHECK(cgc_set_log_sink(NULL, NULL) == capture_line);
    CHECK(cgc_set_log_sink(NULL, NULL) == previous);
    cgc_set_debug(0);
    drop_refs(l);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[3], 1);
    Py_DECREF(young);
    Py_DECREF(live);
    end();
}

/* ---- test_garbage_at_shutdown ------------------------------------------------ */

/* X('first') in a self-loop refers to X('second'); both have tp_del. The
 * final collections of Py_FinalizeEx (cgc_finalize) find them uncollectable
 * and the report at shutdown names them. Runs on a heap of its own. */
static void shutdown_case(int debug) {
    cgc_heap *heap = cgc_heap_new();
    REQUIRE(heap != NULL);
    cgc_heap_set_current(heap);
    cgc_set_error_hook(count_error, NULL);
    PyGC_Disable();
    Obj *first = make(&LegacyType, 1);
    Obj *second = make(&LegacyType, 2);
    set_ref(first, 0, first);
    set_ref(first, 1, second);
    Py_DECREF(first);
    Py_DECREF(second);
    cgc_set_log_sink(capture_line, NULL);
    n_lines = 0;
    cgc_set_debug(debug);
    CHECK_EQ_INT(Py_FinalizeEx(), 0);
    CHECK_EQ_INT(cgc_garbage_count(), 2);

    char first_addr[32], second_addr[32];
    snprintf(first_addr, sizeof first_addr, "%p", (void *)first);
    snprintf(second_addr, sizeof second_addr, "%p", (void *)second);
    for (int i = 0; i < n_lines; i++) fprintf(stderr, "  captured (debug %d): %s\n", debug, lines[i]);
    if (debug == 0) {
        CHECK(find_line("ResourceWarning: gc: 2 uncollectable objects at shutdown; use", 0) >= 0);
        CHECK_EQ_INT(find_line(first_addr, 0), -1);
        CHECK_EQ_INT(find_line(second_addr, 0), -1);
    } else if (debug == CGC_DEBUG_UNCOLLECTABLE) {
        /* CPython: the warning without its hint, then the garbage list. */
        int warning = find_line("gc: 2 uncollectable objects at shutdown", 0);
        CHECK(warning >= 0);
        CHECK_EQ_INT(find_line("to list them", 0), -1);
        if (warning >= 0) {
            CHECK(find_line(first_addr, warning) >= 0);
            CHECK(find_line(second_addr, warning) >= 0);
        }
    } else {
        CHECK_EQ_INT(find_line("uncollectable objects at shutdown", 0), -1);
    }

    cgc_set_debug(0);
    drop_refs(first);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[1], 1);
    CHECK_EQ_INT(deallocs[2], 1);
    cgc_set_log_sink(NULL, NULL);
    cgc_heap_set_current(NULL);
    cgc_heap_delete(heap);
}

static void test_garbage_at_shutdown(void) {
    begin();
    shutdown_case(0);
    reset_counters();
    shutdown_case(CGC_DEBUG_SAVEALL);
    end();
}

static void test_garbage_at_shutdown_debug_uncollectable(void) {
    begin();
    shutdown_case(CGC_DEBUG_UNCOLLECTABLE);
    end();
}

int main(void) {
    cgc_set_error_hook(count_error, NULL);
    PyGC_Disable();
    cgc_set_debug(0);
    RUN(test_enable_disable);
    RUN(test_list);
    RUN(test_thresholds);
    RUN(test_collect_generations);
    RUN(test_get_stats);
    RUN(test_resurrection_does_not_block_cleanup_of_other_objects);
    RUN(test_resurrection_only_happens_once_per_object);
    RUN(test_saveall);
    RUN(test_legacy_finalizer);
    RUN(test_legacy_finalizer_reachable);
    RUN(test_callbacks_collect);
    RUN(test_callbacks_collect_generation);
    RUN(test_callbacks_collect_garbage);
    RUN(test_callback_that_collects);
    RUN(test_freeze);
    RUN(test_traverse_frozen_objects);
    RUN(test_get_objects);
    RUN(test_get_objects_during_gc);
    RUN(test_referents_and_referrers);
    RUN(test_is_tracked);
    RUN(test_visit_objects);
    RUN(test_debug_output);
    RUN(test_garbage_at_shutdown);
    RUN(test_garbage_at_shutdown_debug_uncollectable);
    return CHECK_DONE();
}
