/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): freeze (test_freeze,
 * test_traverse_frozen_objects). */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

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

int main(void) {
    start_program();
    RUN(test_freeze);
    RUN(test_traverse_frozen_objects);
    return CHECK_DONE();
}
