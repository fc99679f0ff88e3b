/* Tiny check macros shared by the C tests (header only).
 *
 * CHECK*   record a failure (file:line and the expression) and go on.
 * REQUIRE* stop the program at once: use them where going on after a failure
 *          would touch freed memory.
 * RUN(f)   runs one test function and says which one it was.
 * CHECK_DONE() is what main returns: 0 when every check passed. */
#ifndef CYCLEGC_TESTS_C_CHECK_H
#define CYCLEGC_TESTS_C_CHECK_H

#include <cyclegc/Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures_ = 0;

static inline void check_fail2_(const char *file, int line, const char *what, const char *expr,
                                const char *detail, int fatal) {
    fprintf(stderr, "%s:%d: %s failed: %s%s%s\n", file, line, what, expr, *detail ? " " : "",
            detail);
    fflush(stderr);
    check_failures_++;
    if (fatal) {
        fprintf(stderr, "(fatal: stopping)\n");
        exit(1);
    }
}

static inline void check_fail_(const char *file, int line, const char *what, const char *expr,
                               int fatal) {
    check_fail2_(file, line, what, expr, "", fatal);
}

#define CHECK_IMPL_(cond, what, expr, fatal)                                     \
    do {                                                                         \
        if (!(cond)) check_fail_(__FILE__, __LINE__, (what), (expr), (fatal));   \
    } while (0)

#define CHECK(expr) CHECK_IMPL_((expr), "CHECK", #expr, 0)
#define REQUIRE(expr) CHECK_IMPL_((expr), "REQUIRE", #expr, 1)

#define CHECK_EQ_INT_IMPL_(a, b, what, fatal)                                              \
    do {                                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
        if (check_a_ != check_b_) {                                                        \
            char check_msg_[64];                                                           \
            snprintf(check_msg_, sizeof check_msg_, "(%lld != %lld)", check_a_, check_b_); \
            check_fail2_(__FILE__, __LINE__, (what), #a " == " #b, check_msg_, (fatal));    \
        }                                                                                  \
    } while (0)

#define CHECK_EQ_INT(a, b) CHECK_EQ_INT_IMPL_(a, b, "CHECK_EQ_INT", 0)
#define REQUIRE_EQ_INT(a, b) CHECK_EQ_INT_IMPL_(a, b, "REQUIRE_EQ_INT", 1)

/* `haystack` contains `needle` (both C strings). */
#define CHECK_CONTAINS(haystack, needle)                                                    \
    do {                                                                                   \
        const char *check_h_ = (haystack), *check_n_ = (needle);                           \
        if (!check_h_ || !strstr(check_h_, check_n_)) {                                    \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: %s contains %s\n  text: \"%s\"\n" \
                    "  wanted: \"%s\"\n", __FILE__, __LINE__, #haystack, #needle,          \
                    check_h_ ? check_h_ : "(null)", check_n_);                            \
            check_failures_++;                                                             \
        }                                                                                  \
    } while (0)

#define RUN(test)                                                                          \
    do {                                                                                   \
        int check_before_ = check_failures_;                                               \
        test();                                                                            \
        fprintf(stderr, "%s %s\n", check_failures_ == check_before_ ? "ok  " : "FAIL",     \
                #test);                                                                    \
    } while (0)

#define CHECK_DONE() (check_failures_ == 0 ? 0 : (fprintf(stderr, "%d check(s) failed\n", \
                                                          check_failures_), 1))

/* ISO C has no conversion between function and object pointers, but
 * PyType_Slot.pfunc is a void *: convert through memcpy so that the tests
 * build with -Wpedantic -Werror. Slot arrays are therefore built at run time. */
typedef void (*check_any_function_)(void);
_Static_assert(sizeof(check_any_function_) == sizeof(void *), "function pointers fit a void *");
static inline void *check_fn_to_ptr_(check_any_function_ f) {
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}
#define FN(f) check_fn_to_ptr_((check_any_function_)(f))

/* Like Python's gc.collect(): a full collection whether or not automatic
 * collection is enabled (PyGC_Collect runs only when it is); the enabled
 * state is restored. Returns what PyGC_Collect returned. */
static inline Py_ssize_t gc_collect(void) {
    int was_enabled = PyGC_Enable();
    Py_ssize_t found = PyGC_Collect();
    if (!was_enabled) PyGC_Disable();
    return found;
}

#endif /* CYCLEGC_TESTS_C_CHECK_H */
