/* Incremental collection from C: cgc_set_pause_budget, cgc_collect_slice
 * and cgc_get_pause_stats. A program that mutates its graph between slices
 * (moves references, frees objects the cycle has seen, makes new ones)
 * never has a live object freed, and the old garbage is freed when the
 * cycle ends. */
#include <cyclegc/Python.h>

#include "check.h"

#define CANARY 0x5EEDL

typedef struct {
    PyObject_HEAD
    PyObject *ref;
    long canary;
} Cell;

static long deallocs = 0;
static long bad_deallocs = 0; /* a cell freed twice, or not intact */

static int Cell_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Cell *)self)->ref);
    return 0;
}

static int Cell_clear(PyObject *self) {
    Py_CLEAR(((Cell *)self)->ref);
    return 0;
}

static void Cell_dealloc(PyObject *self) {
    Cell *cell = (Cell *)self;
    PyObject_GC_UnTrack(self);
    if (cell->canary != CANARY) bad_deallocs++;
    cell->canary = 0;
    Py_CLEAR(cell->ref);
    deallocs++;
    PyObject_GC_Del(self);
}

static PyTypeObject CellType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "incremental.Cell",
    .tp_basicsize = sizeof(Cell),
    .tp_dealloc = Cell_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Cell_traverse,
    .tp_clear = Cell_clear,
};

static Cell *cell(PyObject *ref) { /* steals ref */
    Cell *c = PyObject_GC_New(Cell, &CellType);
    REQUIRE(c != NULL);
    c->ref = ref;
    c->canary = CANARY;
    PyObject_GC_Track(c);
    return c;
}

#define N 3000

/* Holders that own one target each, half of them swapped to another holder
 * between every two slices, and old garbage cycles: the live targets all
 * survive, the garbage is freed. */
static void test_moved_references_and_old_garbage(void) {
    static Cell *low[N], *high[N];
    long before = deallocs;
    for (int i = 0; i < N; i++) low[i] = cell(NULL);
    for (int i = 0; i < N; i++) high[i] = cell((PyObject *)cell(NULL));
    for (int i = 0; i < 100; i++) {
        Cell *a = cell(NULL);
        Py_INCREF(a);
        a->ref = (PyObject *)a; /* a self cycle, held by us too */
        cgc_collect(2);         /* now old */
        Py_DECREF(a);           /* old garbage */
    }
    int slices = 0, in_high = 1, status;
    while ((status = cgc_collect_slice(1)) == 0) {
        for (int i = 0; i < N; i++) {
            Cell *from = in_high ? high[i] : low[i], *to = in_high ? low[i] : high[i];
            to->ref = from->ref;
            from->ref = NULL;
        }
        in_high = !in_high;
        /* A new cell in a freed slot's place, and a young cycle. */
        Cell *young = cell(NULL);
        Py_INCREF(young);
        young->ref = (PyObject *)young;
        Py_DECREF(young);
        slices++;
    }
    CHECK_EQ_INT(status, 1);
    CHECK(slices > 4);
    CHECK_EQ_INT(bad_deallocs, 0);
    CHECK_EQ_INT(deallocs - before, 100); /* the old garbage only */
    for (int i = 0; i < N; i++) {
        Py_DECREF(low[i]);
        Py_DECREF(high[i]);
    }
    CHECK_EQ_INT(deallocs - before, 100 + 3 * N);
    cgc_collect(2); /* the young cycles */
    CHECK_EQ_INT(deallocs - before, 100 + 3 * N + slices);
    CHECK_EQ_INT(bad_deallocs, 0);
}

static void test_budget_and_pause_stats(void) {
    cgc_set_pause_budget(250000);
    CHECK_EQ_INT(cgc_get_pause_budget(), 250000);
    cgc_reset_pause_stats();
    cgc_pause_stats stats;
    cgc_get_pause_stats(&stats);
    CHECK_EQ_INT(stats.count, 0);
    cgc_collect(0);
    CHECK_EQ_INT(cgc_collect_slice(0), 1);
    cgc_get_pause_stats(&stats);
    CHECK(stats.count >= 2);
    CHECK(stats.max_ns >= stats.p50_ns);
    CHECK(stats.total_ns >= stats.max_ns);
    cgc_set_pause_budget(0);
}

int main(void) {
    cgc_disable(); /* only the slices this program runs */
    RUN(test_moved_references_and_old_garbage);
    RUN(test_budget_and_pause_stats);
    return CHECK_DONE();
}
