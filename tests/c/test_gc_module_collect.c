/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): enable, disable, collect, the
 * thresholds and counts, get_stats and resurrection in a collection
 * (test_collect_generations, test_get_stats, test_resurrection_*). */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

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

int main(void) {
    start_program();
    RUN(test_enable_disable);
    RUN(test_list);
    RUN(test_thresholds);
    RUN(test_collect_generations);
    RUN(test_get_stats);
    RUN(test_resurrection_does_not_block_cleanup_of_other_objects);
    RUN(test_resurrection_only_happens_once_per_object);
    return CHECK_DONE();
}
