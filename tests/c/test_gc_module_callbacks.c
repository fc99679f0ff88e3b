/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): the collection callbacks
 * (GCCallbackTests). */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

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

int main(void) {
    start_program();
    RUN(test_callbacks_collect);
    RUN(test_callbacks_collect_generation);
    RUN(test_callbacks_collect_garbage);
    RUN(test_callback_that_collects);
    return CHECK_DONE();
}
