/* Boehm's GCBench (see gcbench.cpp) in C, written to CPython's documented
 * API: compiled against <cyclegc/Python.h> and against CPython's own.
 *
 *     gcbench_c VARIANT [MAX_DEPTH]      (c-cyclegc or c-cpython; 16)
 *
 * The same checksum as the C++ variants. */
#define TREE_PAYLOAD int i, j;
#include "capi_trees.h"

static long tree_size(int depth) { return (1L << (depth + 1)) - 1; }

/* Top-down: the node exists (and is tracked) before its children. */
static void populate(int depth, Node *node) {
    if (depth <= 0) return;
    node->left = new_node(NULL, NULL);
    node->right = new_node(NULL, NULL);
    populate(depth - 1, node->left);
    populate(depth - 1, node->right);
}

static Node *top_down(int depth) {
    Node *tree = new_node(NULL, NULL);
    populate(depth, tree);
    return tree;
}

/* Builds and drops `iterations` trees; returns the node count of the last. */
static long construct(long iterations, int depth, Node *(*build)(int)) {
    long nodes = 0;
    for (long i = 0; i < iterations; ++i) {
        Node *tree = build(depth);
        if (i == iterations - 1) nodes = check(tree);
        Py_DECREF(tree);
    }
    return nodes;
}

int main(int argc, char **argv) {
    int status = runtime_arguments(argc, argv);
    if (status >= 0) return status;
    program_result r = program_result_init("gcbench", PROGRAM_VARIANT);
    const int min_depth = 4;
    int max_depth = (int)program_arg(argc, argv, 2, 16);
    if (max_depth < min_depth) max_depth = min_depth;
    const int stretch_depth = max_depth + 2;
    const long array_size = 500000;

    Node *stretch = bottom_up(stretch_depth);
    r.checksum += (unsigned long long)check(stretch);
    Py_DECREF(stretch);
    Node *long_lived = top_down(max_depth);
    double *array = calloc((size_t)array_size, sizeof(double));
    if (!array) return 1;
    for (long i = 0; i < array_size / 2; ++i) array[i] = 1.0 / (double)i;
    for (int depth = min_depth; depth <= max_depth; depth += 2) {
        long iterations = 2 * tree_size(stretch_depth) / tree_size(depth);
        r.checksum += (unsigned long long)construct(iterations, depth, top_down);
        r.checksum += (unsigned long long)construct(iterations, depth, bottom_up);
    }
    r.checksum += (unsigned long long)check(long_lived) + (array[1000] == 1.0 / 1000 ? 1 : 0);
    Py_DECREF(long_lived);
    free(array);
    runtime_report(&r);
    program_print_result(&r);
    return 0;
}
