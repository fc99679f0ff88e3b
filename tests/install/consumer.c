/* A program that uses the installed cyclegc the way a user would: only
 * <cyclegc/Python.h>, a container type written to CPython's documented API,
 * a reference cycle, a collection. Exit status 0 when everything checks. */
#include <cyclegc/Python.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    PyObject *next;
} Node;

static int freed = 0;

static int Node_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((Node *)self)->next);
    return 0;
}

static int Node_clear(PyObject *self) {
    Py_CLEAR(((Node *)self)->next);
    return 0;
}

static void Node_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Node_clear(self);
    freed++;
    PyObject_GC_Del(self);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "consumer.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = Node_traverse,
    .tp_clear = Node_clear,
};

static int failures = 0;
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "consumer: %s:%d: check failed: %s\n", __FILE__,   \
                    __LINE__, #cond);                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static Node *new_node(void) {
    Node *node = PyObject_GC_New(Node, &NodeType);
    if (node == NULL) return NULL;
    node->next = NULL;
    PyObject_GC_Track(node);
    return node;
}

int main(void) {
    Py_Initialize();
    CHECK(PyType_Ready(&NodeType) == 0);
    CHECK(PyGC_Disable() == 1); /* only the explicit collection below runs */

    Node *a = new_node();
    Node *b = new_node();
    if (a == NULL || b == NULL) {
        fprintf(stderr, "consumer: allocation failed: %s\n", cgc_error_message());
        return 1;
    }
    CHECK(PyObject_IS_GC(a));
    CHECK(PyObject_GC_IsTracked(a));
    a->next = Py_NewRef(b); /* a <-> b */
    b->next = Py_NewRef(a);
    Py_DECREF(a);
    Py_DECREF(b);
    CHECK(freed == 0); /* reference counting alone cannot free a cycle */

    CHECK(PyGC_Collect() == 0); /* disabled: PyGC_Collect does nothing */
    CHECK(PyGC_Enable() == 0);
    Py_ssize_t collected = PyGC_Collect();
    CHECK(collected == 2);
    CHECK(freed == 2);
    CHECK(PyErr_Occurred() == NULL);
    CHECK(Py_FinalizeEx() == 0);
    /* The library linked is the one whose headers were compiled against. */
    CHECK(strcmp(cgc_version(), CGC_VERSION) == 0);
    CHECK(cgc_version_number() == CGC_VERSION_NUMBER);

    if (failures) {
        fprintf(stderr, "consumer: %d check(s) failed\n", failures);
        return 1;
    }
    printf("consumer (C): ok (collected %td objects, cyclegc %s)\n", collected, cgc_version());
    return 0;
}
