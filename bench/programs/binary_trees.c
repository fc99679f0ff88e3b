/* binary-trees (see binary_trees.cpp) in C, written to CPython's documented
 * API: compiled against <cyclegc/Python.h> and against CPython's own.
 *
 *     binary_trees_c VARIANT [DEPTH]     (c-cyclegc or c-cpython; 18)
 *
 * The same output and checksum as the C++ variants. */
#define TREE_PAYLOAD
#include "capi_trees.h"

int main(int argc, char **argv) {
    int status = runtime_arguments(argc, argv);
    if (status >= 0) return status;
    program_result r = program_result_init("binary-trees", PROGRAM_VARIANT);
    const int min_depth = 4;
    int max_depth = (int)program_arg(argc, argv, 2, 18);
    if (max_depth < min_depth + 2) max_depth = min_depth + 2;
    const int stretch_depth = max_depth + 1;

    Node *stretch = bottom_up(stretch_depth);
    long count = check(stretch);
    Py_DECREF(stretch);
    printf("stretch tree of depth %d\t check: %ld\n", stretch_depth, count);
    r.checksum += (unsigned long long)count;

    Node *long_lived = bottom_up(max_depth);
    for (int depth = min_depth; depth <= max_depth; depth += 2) {
        long iterations = 1L << (max_depth - depth + min_depth), sum = 0;
        for (long i = 0; i < iterations; ++i) {
            Node *tree = bottom_up(depth);
            sum += check(tree);
            Py_DECREF(tree);
        }
        printf("%ld\t trees of depth %d\t check: %ld\n", iterations, depth, sum);
        r.checksum += (unsigned long long)sum;
    }
    count = check(long_lived);
    Py_DECREF(long_lived);
    printf("long lived tree of depth %d\t check: %ld\n", max_depth, count);
    r.checksum += (unsigned long long)count;
    runtime_report(&r);
    program_print_result(&r);
    return 0;
}
