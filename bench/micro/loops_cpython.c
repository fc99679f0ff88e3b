/* loops.h compiled against the embedded CPython's own Python.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "loops_api.h"

#define LOOP_PREFIX cpyloop
#include "loops.h"

static PyObject *gc_module;

/* Starts the interpreter once; its own objects are frozen (gc.freeze()) so
 * that collections see only the benchmark's objects, as in cyclegc. */
int cpyloop_setup(void) {
    static int status = 1;
    if (status != 1) return status;
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    PyStatus st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) return status = -1;
    gc_module = PyImport_ImportModule("gc");
    if (!gc_module || PyRun_SimpleString("import gc; gc.collect(); gc.freeze()") != 0 || cpyloop_ready() < 0) {
        PyErr_Print();
        return status = -1;
    }
    return status = 0;
}

/* gc.collect(generation): PyGC_Collect only does full collections. */
long cpyloop_collect(int generation) {
    PyObject *result = PyObject_CallMethod(gc_module, "collect", "i", generation);
    if (!result) {
        PyErr_Print();
        return -1;
    }
    long n = PyLong_AsLong(result);
    Py_DECREF(result);
    return n;
}

void cpyloop_set_enabled(int enabled) {
    if (enabled)
        PyGC_Enable();
    else
        PyGC_Disable();
}
