/* cgc_heap_transfer from C: a producer thread builds rings of objects while
 * a heap of its own is current, moves each to the consumer's heap and hands
 * it over through a queue with a mutex; the consumer checks, drops and
 * collects them. Every object is freed once, on the consumer's heap. And a
 * graph referred to from outside is refused, with the object named. */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

#define ALIVE 0x11fe
#define DEAD 0xdead

typedef struct {
    PyObject_HEAD
    PyObject *next;
    PyObject *back;
    int state;
} Link;

static atomic_int made, freed, freed_twice;

static int link_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Link *)self)->next);
    Py_VISIT(((Link *)self)->back);
    return 0;
}

static int link_clear(PyObject *self) {
    Py_CLEAR(((Link *)self)->next);
    Py_CLEAR(((Link *)self)->back);
    return 0;
}

static void link_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    if (((Link *)self)->state != ALIVE) atomic_fetch_add(&freed_twice, 1);
    ((Link *)self)->state = DEAD;
    link_clear(self);
    atomic_fetch_add(&freed, 1);
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

static Link *new_link(void) {
    Link *link = PyObject_GC_New(Link, &link_type);
    link->next = link->back = NULL;
    link->state = ALIVE;
    PyObject_GC_Track((PyObject *)link);
    atomic_fetch_add(&made, 1);
    return link;
}

/* A ring of `length` links, each also referring back to the head. */
static PyObject *make_ring(int length) {
    Link *head = new_link(), *last = head;
    for (int i = 1; i < length; ++i) {
        Link *link = new_link();
        last->next = (PyObject *)link;
        link->back = Py_NewRef((PyObject *)head);
        last = link;
    }
    last->next = Py_NewRef((PyObject *)head);
    return (PyObject *)head;
}

static int ring_length(PyObject *head) {
    int length = 0;
    PyObject *link = head;
    do {
        if (((Link *)link)->state != ALIVE) return -1;
        ++length;
        link = ((Link *)link)->next;
    } while (link != head && length < 100000);
    return length;
}

#define ITEMS 40
#define RING 300

static cgc_heap *consumer_heap;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_changed = PTHREAD_COND_INITIALIZER;
static PyObject *queue[ITEMS];
static int queued = 0;
static int bad_rings = 0; /* (the consumer's) */

static void *producer(void *unused) {
    (void)unused;
    cgc_heap *staging = cgc_heap_new();
    for (int i = 0; i < ITEMS; ++i) {
        cgc_heap *own = cgc_heap_current();
        cgc_heap_set_current(staging);
        PyObject *root = make_ring(RING);
        cgc_heap_set_current(own);
        if (cgc_heap_transfer(root, consumer_heap) != 0) {
            fprintf(stderr, "transfer refused: %s\n", cgc_error_message());
            exit(1);
        }
        Py_DECREF(make_ring(3)); /* garbage on the producer's own heap */
        if (i % 8 == 5) cgc_collect(2);
        pthread_mutex_lock(&queue_lock);
        queue[queued++] = root;
        pthread_cond_signal(&queue_changed);
        pthread_mutex_unlock(&queue_lock);
    }
    cgc_heap_delete(staging);
    cgc_collect(2); /* (its own heap may be the default heap, not finalized at exit) */
    return NULL;
}

static void *consumer(void *unused) {
    (void)unused;
    cgc_heap_set_current(consumer_heap);
    for (int taken = 0; taken < ITEMS; ++taken) {
        pthread_mutex_lock(&queue_lock);
        while (queued == taken) pthread_cond_wait(&queue_changed, &queue_lock);
        PyObject *root = queue[taken];
        pthread_mutex_unlock(&queue_lock);
        if (ring_length(root) != RING) bad_rings++;
        Py_DECREF(make_ring(3));
        Py_DECREF(root);
        if (taken % 8 == 3) cgc_collect(2);
    }
    cgc_collect(2);
    return NULL;
}

static void test_producer_hands_rings_to_a_consumer(void) {
    consumer_heap = cgc_heap_new();
    REQUIRE(consumer_heap != NULL);
    pthread_t threads[2];
    REQUIRE(pthread_create(&threads[0], NULL, consumer, NULL) == 0);
    REQUIRE(pthread_create(&threads[1], NULL, producer, NULL) == 0);
    pthread_join(threads[1], NULL);
    pthread_join(threads[0], NULL);
    CHECK_EQ_INT(bad_rings, 0);
    CHECK_EQ_INT(atomic_load(&freed_twice), 0);
    CHECK_EQ_INT(atomic_load(&freed), atomic_load(&made));
    cgc_heap_delete(consumer_heap);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_NONE);
}

static void test_a_graph_referred_to_from_outside_is_refused(void) {
    cgc_heap *staging = cgc_heap_new(), *other = cgc_heap_new();
    cgc_heap *own = cgc_heap_current();
    cgc_heap_set_current(staging);
    PyObject *root = make_ring(4);
    PyObject *inside = Py_NewRef(((Link *)root)->next);
    cgc_heap_set_current(own);
    CHECK_EQ_INT(cgc_heap_transfer(root, other), -1);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_MISUSE);
    CHECK_CONTAINS(cgc_error_message(), "cgc_heap_transfer");
    CHECK_CONTAINS(cgc_error_message(), "test.Link");
    CHECK_CONTAINS(cgc_error_message(), "outside the graph");
    cgc_error_clear();
    CHECK_EQ_INT(cgc_heap_transfer(root, staging), -1);
    CHECK_CONTAINS(cgc_error_message(), "receiving heap already");
    cgc_error_clear();
    Py_DECREF(inside);
    CHECK_EQ_INT(cgc_heap_transfer(root, other), 0);
    cgc_heap_delete(staging); /* empty: its pages moved */
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_NONE);
    int before = atomic_load(&freed);
    cgc_heap_set_current(other);
    Py_DECREF(root);
    CHECK_EQ_INT(cgc_collect(2), 4);
    CHECK_EQ_INT(atomic_load(&freed) - before, 4);
    cgc_heap_set_current(own);
    cgc_heap_delete(other);
    CHECK_EQ_INT(cgc_error_occurred(), CGC_ERR_NONE);
}

int main(void) {
    RUN(test_producer_hands_rings_to_a_consumer);
    RUN(test_a_graph_referred_to_from_outside_is_refused);
    return CHECK_DONE();
}
