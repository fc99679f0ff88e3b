/* cyclegc demo: a container type written to CPython's documented C API,
 * a few reference cycles, and the collector freeing them. */
#include <cyclegc/Python.h>
#include <stdio.h>

typedef struct {
    PyObject_HEAD
    PyObject *next; /* another Node, or NULL */
    int id;
} Node;

static int freed = 0;

static int Node_traverse(Node *self, visitproc visit, void *arg) {
    Py_VISIT(self->next);
    return 0;
}

static int Node_clear(Node *self) {
    Py_CLEAR(self->next);
    return 0;
}

static void Node_dealloc(Node *self) {
    PyObject_GC_UnTrack(self);
    printf("  freed node %d\n", self->id);
    freed++;
    Node_clear(self);
    PyObject_GC_Del(self);
}

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "demo.Node",
    .tp_basicsize = sizeof(Node),
    .tp_dealloc = (destructor)Node_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)Node_traverse,
    .tp_clear = (inquiry)Node_clear,
};

static Node *new_node(int id) {
    Node *node = PyObject_GC_New(Node, &NodeType);
    node->next = NULL;
    node->id = id;
    PyObject_GC_Track(node);
    return node;
}

/* A ring of n nodes; returns one of them (a new reference). */
static Node *make_ring(int first_id, int n) {
    Node *head = new_node(first_id), *tail = head;
    for (int i = 1; i < n; i++) {
        Node *node = new_node(first_id + i);
        tail->next = (PyObject *)node; /* steals the new reference */
        tail = node;
    }
    tail->next = Py_NewRef(head);
    return head;
}

int main(void) {
    Py_Initialize();
    if (PyType_Ready(&NodeType) < 0) return 1;
    PyGC_Disable(); /* collect only when asked, to show what happens */

    printf("An acyclic node dies as soon as its last reference goes:\n");
    Node *lone = new_node(1);
    Py_DECREF(lone);

    printf("Three cycles (a self-loop, a 2-ring, a 4-ring) are dropped: nothing is freed yet.\n");
    Node *self_loop = new_node(10);
    self_loop->next = Py_NewRef(self_loop);
    Py_DECREF(self_loop);
    Py_DECREF(make_ring(20, 2));
    Py_DECREF(make_ring(30, 4));
    Node *kept = make_ring(40, 3); /* this one we keep */

    printf("PyGC_Collect() while disabled returns %zd (it only runs when enabled).\n",
           (size_t)PyGC_Collect());
    PyGC_Enable();
    printf("Collecting:\n");
    Py_ssize_t found = PyGC_Collect();
    printf("PyGC_Collect() found %zd unreachable objects; the 3-ring we hold survives.\n",
           (size_t)found);

    printf("Dropping the last reference to the 3-ring and finalizing:\n");
    Py_DECREF(kept);
    Py_FinalizeEx();
    printf("%d nodes freed in all.\n", freed);
    return freed == 11 ? 0 : 1;
}
