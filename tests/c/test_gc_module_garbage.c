/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): the garbage list, DEBUG_SAVEALL,
 * legacy (tp_del) finalizers and the report at shutdown (test_saveall,
 * test_legacy_finalizer, test_garbage_at_shutdown). */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

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
    start_program();
    RUN(test_saveall);
    RUN(test_legacy_finalizer);
    RUN(test_legacy_finalizer_reachable);
    RUN(test_garbage_at_shutdown);
    RUN(test_garbage_at_shutdown_debug_uncollectable);
    return CHECK_DONE();
}
