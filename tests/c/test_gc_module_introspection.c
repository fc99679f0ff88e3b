/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): introspection: get_objects,
 * referents and referrers, PyObject_GC_IsTracked / IsFinalized and
 * PyUnstable_GC_VisitObjects (test_get_objects, test_get_objects_during_gc). */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

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

int main(void) {
    start_program();
    RUN(test_get_objects);
    RUN(test_get_objects_during_gc);
    RUN(test_referents_and_referrers);
    RUN(test_is_tracked);
    RUN(test_visit_objects);
    return CHECK_DONE();
}
