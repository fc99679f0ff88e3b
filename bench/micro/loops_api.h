/* The two instantiations of loops.h, as the C++ side sees them. */
#ifndef CYCLEGC_BENCH_LOOPS_API_H
#define CYCLEGC_BENCH_LOOPS_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CYCLEGC_BENCH_DECLARE_LOOPS(p)                                                  \
    int p##_ready(void);                                                                \
    void p##_acyclic(long n);                                                           \
    void p##_cycles(long n);                                                            \
    void p##_cycles_into(void **old, long old_count, long n, uint64_t *seed);           \
    void **p##_build_tree(long n);                                                      \
    void p##_release_tree(void **nodes, long n);                                        \
    void *p##_new_object(void);                                                         \
    void p##_release_object(void *op);                                                  \
    void p##_incref_decref(void *op, long n);                                           \
    /* Not in loops.h: each API's own way to run the collector. */                      \
    int p##_setup(void);           /* 0 if usable */                                    \
    long p##_collect(int generation);                                                   \
    void p##_set_enabled(int enabled);

CYCLEGC_BENCH_DECLARE_LOOPS(cgcloop)
CYCLEGC_BENCH_DECLARE_LOOPS(cpyloop)

#ifdef __cplusplus
}
#endif
#endif
