/* The leak report at the end of the program (cgc_diag_report_leaks_at_exit),
 * from C. `leak_report_at_exit leak` leaves behind, on purpose, a ring of
 * two widgets that a global holder keeps alive and a cycle of two objects
 * without tp_clear, then returns from main; `leak_report_at_exit clean`
 * frees everything it makes. tests/c/leak_report_check.cmake runs it and
 * checks what it printed to stderr (the default log sink). */
#include <cyclegc/Python.h>
#include <cyclegc/diagnostics.h>

#include <stdio.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    PyObject *ref;
} Obj;

static int Obj_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Obj *)self)->ref);
    return 0;
}

static int Obj_clear(PyObject *self) {
    Py_CLEAR(((Obj *)self)->ref);
    return 0;
}

static void Obj_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Obj_clear(self);
    PyObject_GC_Del(self);
}

#define OBJ_TYPE(name, clear)                                                            \
    {                                                                                    \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = name, .tp_basicsize = sizeof(Obj),     \
        .tp_dealloc = Obj_dealloc, .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, \
        .tp_traverse = Obj_traverse, .tp_clear = clear,                                  \
    }

static PyTypeObject HolderType = OBJ_TYPE("app.Holder", Obj_clear);
static PyTypeObject WidgetType = OBJ_TYPE("app.Widget", Obj_clear);
static PyTypeObject StuckType = OBJ_TYPE("app.Stuck", NULL); /* no tp_clear: its cycles cannot be broken */

static Obj *make(PyTypeObject *type, PyObject *ref) {
    Obj *o = PyObject_GC_New(Obj, type);
    o->ref = ref;
    PyObject_GC_Track(o);
    return o;
}

/* a <-> b, returned with one reference to a (b's only reference is a's). */
static Obj *make_pair(PyTypeObject *type) {
    Obj *a = make(type, NULL), *b = make(type, NULL);
    a->ref = (PyObject *)b;
    Py_INCREF(a);
    b->ref = (PyObject *)a;
    return a;
}

static Obj *holder; /* a global nobody clears: the leak */

int main(int argc, char **argv) {
    int leak = argc > 1 && strcmp(argv[1], "leak") == 0;
    if (cgc_diag_report_leaks_at_exit() != 0) return 1;
    holder = make(&HolderType, (PyObject *)make_pair(&WidgetType));
    Obj *stuck = make_pair(&StuckType);
    if (leak) {
        Py_DECREF(stuck); /* garbage that no collection can break */
    } else {
        Py_CLEAR(holder);     /* the widgets' ring is garbage now: collected */
        Py_CLEAR(stuck->ref); /* broken by hand: nothing else can */
        Py_DECREF(stuck);
    }
    fprintf(stderr, "leak_report_at_exit: main returns (%s)\n", leak ? "leaking" : "clean");
    fflush(stderr);
    return 0;
}
