/* A shared heap from C: a thread that blocks inside Py_BEGIN_ALLOW_THREADS
 * does not delay a collection on another thread, and PyEval_SaveThread /
 * PyEval_RestoreThread bracket a wait the same way. */
#include "check.h"

#include <pthread.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    PyObject *other;
} Link;

static int freed = 0;  /* (only the main thread collects while the worker is detached) */

static int link_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Link *)self)->other);
    return 0;
}

static int link_clear(PyObject *self) {
    Py_CLEAR(((Link *)self)->other);
    return 0;
}

static void link_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    link_clear(self);
    freed++;
    PyObject_GC_Del(self);
}

static PyTypeObject link_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "test.Link",
    .tp_basicsize = sizeof(Link),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = link_traverse,
    .tp_clear = link_clear,
    .tp_dealloc = link_dealloc,
};

static void drop_two_cycle(void) {
    Link *a = PyObject_GC_New(Link, &link_type);
    Link *b = PyObject_GC_New(Link, &link_type);
    a->other = (PyObject *)b;
    b->other = Py_NewRef((PyObject *)a);
    PyObject_GC_Track((PyObject *)a);
    PyObject_GC_Track((PyObject *)b);
    Py_DECREF(a);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cgc_heap *shared;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_changed = PTHREAD_COND_INITIALIZER;
static int worker_detached = 0, main_done = 0;

/* Attaches, drops a cycle, then waits (detached) until the main thread has
 * collected it. */
static void *worker(void *unused) {
    (void)unused;
    cgc_heap_set_current(shared);
    drop_two_cycle();
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&gate);
    worker_detached = 1;
    pthread_cond_broadcast(&gate_changed);
    while (!main_done) pthread_cond_wait(&gate_changed, &gate);
    pthread_mutex_unlock(&gate);
    Py_END_ALLOW_THREADS
    drop_two_cycle(); /* attached again */
    cgc_heap_set_current(NULL);
    return NULL;
}

static void test_a_detached_thread_does_not_delay_a_collection(void) {
    shared = cgc_heap_new_shared();
    REQUIRE(shared != NULL);
    cgc_heap_set_current(shared);
    pthread_t thread;
    REQUIRE(pthread_create(&thread, NULL, worker, NULL) == 0);
    PyThreadState *state = PyEval_SaveThread();
    pthread_mutex_lock(&gate);
    while (!worker_detached) pthread_cond_wait(&gate_changed, &gate);
    pthread_mutex_unlock(&gate);
    PyEval_RestoreThread(state);
    double start = now_s();
    CHECK_EQ_INT(cgc_collect(2), 2); /* would wait forever for an attached worker */
    CHECK(now_s() - start < 5.0);
    CHECK_EQ_INT(freed, 2);
    pthread_mutex_lock(&gate);
    main_done = 1;
    pthread_cond_broadcast(&gate_changed);
    pthread_mutex_unlock(&gate);
    Py_BEGIN_ALLOW_THREADS
    pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS
    CHECK_EQ_INT(cgc_collect(2), 2);
    CHECK_EQ_INT(freed, 4);
    cgc_heap_set_current(NULL);
    cgc_heap_delete(shared);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_NONE);
}

int main(void) {
    RUN(test_a_detached_thread_does_not_delay_a_collection);
    return CHECK_DONE();
}
