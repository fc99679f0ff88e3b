/* A driver for counting instructions with callgrind: the loops of the
 * micro-benchmarks (bench/micro/loops.h) against <cyclegc/Python.h>, or
 * against CPython's own <Python.h> when built with -DDRIVER_CPYTHON, without
 * Google Benchmark's own work around them. bench/instructions/count.sh runs
 * it twice with different sizes and prints the difference per iteration.
 *
 *   driver acyclic N      N allocate + track + release
 *   driver cycles N       N short-lived 2-cycles, automatic collection on
 *   driver tree N C       a live binary tree of N objects, then 1 + C full collections
 *   driver acyclic-shared N, driver cycles-shared N
 *                         the first two on a shared heap, from its one attached thread
 */
#ifdef DRIVER_CPYTHON
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#else
#include <cyclegc/Python.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_PREFIX cg
#include "../micro/loops.h"

/* CPython as the micro-benchmarks start it (bench/micro/loops_cpython.c):
 * its own objects frozen, so that collections see only the loop's. */
static int ready(void) {
#ifdef DRIVER_CPYTHON
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status) || PyRun_SimpleString("import gc; gc.collect(); gc.freeze()") != 0) return -1;
#endif
    return cg_ready();
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: driver acyclic|cycles N | driver tree N COLLECTIONS\n");
        return 2;
    }
    long n = atol(argv[2]);
    if (ready() < 0) {
        fprintf(stderr, "driver: set-up failed\n");
        return 1;
    }
#ifndef DRIVER_CPYTHON
    const char *shared = strstr(argv[1], "-shared");
    if (shared && shared[7] == '\0') {
        cgc_heap_set_current(cgc_heap_new_shared());
        argv[1][shared - argv[1]] = '\0';
    }
#endif
    if (strcmp(argv[1], "acyclic") == 0) {
        cg_acyclic(n);
    } else if (strcmp(argv[1], "cycles") == 0) {
        cg_cycles(n);
    } else if (strcmp(argv[1], "tree") == 0 && argc > 3) {
        void **nodes = cg_build_tree(n);
        PyGC_Collect();
        for (int i = 0, c = atoi(argv[3]); i < c; ++i) PyGC_Collect();
        cg_release_tree(nodes, n);
    } else {
        fprintf(stderr, "driver: unknown mode %s\n", argv[1]);
        return 2;
    }
    return 0;
}
