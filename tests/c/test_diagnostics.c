/* The diagnostics from C (<cyclegc/diagnostics.h>): who holds an object,
 * census and growth, the leak report when a heap is deleted, and the
 * leak-check scope. */
#include <cyclegc/Python.h>
#include <cyclegc/diagnostics.h>

#include "check.h"

typedef struct {
    PyObject_HEAD
    PyObject *ref[2];
} Obj;

static int Obj_traverse(PyObject *self, visitproc visit, void *arg) {
    Obj *o = (Obj *)self;
    for (int i = 0; i < 2; i++) Py_VISIT(o->ref[i]);
    return 0;
}

static int Obj_clear(PyObject *self) {
    Obj *o = (Obj *)self;
    for (int i = 0; i < 2; i++) Py_CLEAR(o->ref[i]);
    return 0;
}

static void Obj_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Obj_clear(self);
    PyObject_GC_Del(self);
}

static PyTypeObject HolderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Holder",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Obj_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
};

static PyTypeObject WidgetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "Widget",
    .tp_basicsize = sizeof(Obj),
    .tp_dealloc = Obj_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Obj_traverse,
    .tp_clear = Obj_clear,
};

static Obj *make(PyTypeObject *type) {
    Obj *o = PyObject_GC_New(Obj, type);
    o->ref[0] = o->ref[1] = NULL;
    PyObject_GC_Track(o);
    return o;
}

/* holder -> w1 -> w2; the caller holds holder only. */
static Obj *make_listeners(void) {
    Obj *holder = make(&HolderType), *w1 = make(&WidgetType), *w2 = make(&WidgetType);
    holder->ref[0] = (PyObject *)w1;
    w1->ref[0] = (PyObject *)w2;
    return holder;
}

static void test_retainer_chain(void) {
    Obj *holder = make_listeners();
    PyObject *w2 = ((Obj *)holder->ref[0])->ref[0];
    cgc_diag_chain chain;
    REQUIRE_EQ_INT(cgc_diag_retainer_chain(w2, &chain), 1);
    REQUIRE_EQ_INT(chain.length, 3);
    CHECK(chain.links[0].object == (PyObject *)holder);
    CHECK_EQ_INT(chain.links[0].external, 1);
    CHECK(chain.links[1].object == holder->ref[0]);
    CHECK_EQ_INT(chain.links[2].external, 0);
    CHECK(strcmp(chain.links[2].type_name, "Widget") == 0);
    cgc_diag_chain_release(&chain);
    CHECK_EQ_INT(cgc_diag_external_refs((PyObject *)holder), 1);
    Py_DECREF(holder);
}

static void test_census_and_growth(void) {
    cgc_diag_type_list list;
    REQUIRE_EQ_INT(cgc_diag_growth(&list), 0);
    cgc_diag_census_release(&list);
    Obj *holder = make_listeners();
    REQUIRE_EQ_INT(cgc_diag_census(&list), 0);
    REQUIRE_EQ_INT(list.count, 2);
    CHECK(strcmp(list.types[0].type_name, "Widget") == 0);
    CHECK_EQ_INT(list.types[0].count, 2);
    CHECK_EQ_INT(list.types[0].bytes, 2 * ((sizeof(Obj) + 15) / 16 * 16));
    cgc_diag_census_release(&list);
    REQUIRE_EQ_INT(cgc_diag_growth(&list), 0);
    REQUIRE_EQ_INT(list.count, 2);
    CHECK_EQ_INT(list.types[0].count_change, 2);
    CHECK_EQ_INT(list.types[1].count_change, 1);
    cgc_diag_census_release(&list);
    Py_DECREF(holder);
}

static char log_text[4096];
static void append_log(const char *line, void *context) {
    (void)context;
    strncat(log_text, line, sizeof log_text - strlen(log_text) - 2);
    strcat(log_text, "\n");
}

static Obj *kept_in_deleted_heap;
static void ignore_error(cgc_error_kind kind, const char *message, void *context) {
    (void)kind, (void)message, (void)context;
}

static void test_report_when_a_heap_is_deleted(void) {
    cgc_heap *heap = cgc_heap_new();
    cgc_heap *previous = cgc_heap_current();
    cgc_heap_set_current(heap);
    cgc_set_log_sink(append_log, NULL);
    cgc_set_error_hook(ignore_error, NULL); /* "still has live tracked objects" */
    kept_in_deleted_heap = make_listeners();
    cgc_diag_set_leak_report(1);
    log_text[0] = '\0';
    cgc_heap_delete(heap); /* refused (objects live), after the report */
    CHECK_CONTAINS(log_text, "3 objects");
    CHECK_CONTAINS(log_text, "2 x Widget");
    CHECK_CONTAINS(log_text, "held by <Holder");
    cgc_heap_set_current(heap);
    Py_DECREF(kept_in_deleted_heap);
    cgc_heap_set_current(previous);
    cgc_heap_delete(heap); /* now empty: deleted */
}

static void test_leak_scope(void) {
    cgc_diag_leak_scope *scope = cgc_diag_leak_scope_begin();
    REQUIRE(scope != NULL);
    Obj *holder = make_listeners();
    char *report = NULL;
    CHECK_EQ_INT(cgc_diag_leak_scope_end(scope, &report), 3);
    REQUIRE(report != NULL);
    CHECK_CONTAINS(report, "made inside the leak-check scope outlive it");
    CHECK_CONTAINS(report, "1 x Holder");
    cgc_diag_text_release(report);
    scope = cgc_diag_leak_scope_begin();
    Py_DECREF(holder);
    CHECK_EQ_INT(cgc_diag_leak_scope_end(scope, NULL), 0);
}

int main(void) {
    RUN(test_retainer_chain);
    RUN(test_census_and_growth);
    RUN(test_report_when_a_heap_is_deleted);
    RUN(test_leak_scope);
    return CHECK_DONE();
}
