/* The gc module's surface from C, through <cyclegc/Python.h> (and the native
 * cgc_* names where CPython has no C name): the debug output. */
#include <cyclegc/Python.h>

#include "check.h"
#include "gc_module_objects.h"

/* ---- debug output ------------------------------------------------------------ */

static int is_done_line(const char *line, int unreachable, int uncollectable) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "gc: done, %d unreachable, %d uncollectable, ", unreachable, uncollectable);
    size_t n = strlen(prefix);
    if (strncmp(line, prefix, n) != 0) return 0;
    const char *p = line + n;
    while (*p >= '0' && *p <= '9') p++;
    if (*p++ != '.') return 0;
    for (int i = 0; i < 4; i++, p++)
        if (*p < '0' || *p > '9') return 0;
    return strncmp(p, "s elapsed; pauses: ", 19) == 0; /* (then the pause statistics) */
}

static void test_debug_output(void) {
    begin();
    cgc_log_sink previous = cgc_set_log_sink(capture_line, NULL);
    CHECK(previous != NULL);
    Obj *live = make(&PlainType, 1);
    gc_collect(); /* live is in generation 2 */

    /* No flags: no output. */
    cgc_set_debug(0);
    n_lines = 0;
    self_cycle_garbage(&PlainType, 4);
    CHECK_EQ_INT(cgc_collect(0), 1);
    CHECK_EQ_INT(n_lines, 0);

    Obj *x = self_cycle_garbage(&PlainType, 2);
    Obj *l = self_cycle_garbage(&LegacyType, 3);
    Obj *young = make(&PlainType, 5);
    char collectable[128], uncollectable[128];
    snprintf(collectable, sizeof collectable, "gc: collectable <Plain %p>", (void *)x);
    snprintf(uncollectable, sizeof uncollectable, "gc: uncollectable <Legacy %p>", (void *)l);
    cgc_set_debug(CGC_DEBUG_STATS | CGC_DEBUG_COLLECTABLE | CGC_DEBUG_UNCOLLECTABLE);
    CHECK_EQ_INT(cgc_get_debug(), 7);
    n_lines = 0;
    CHECK_EQ_INT(cgc_collect(2), 2);
    for (int i = 0; i < n_lines; i++) fprintf(stderr, "  captured: %s\n", lines[i]);
    REQUIRE_EQ_INT(n_lines, 6);
    CHECK(strcmp(lines[0], "gc: collecting generation 2...") == 0);
    CHECK(strcmp(lines[1], "gc: objects in each generation: 3 0 1") == 0);
    CHECK(strcmp(lines[2], "gc: objects in permanent generation: 0") == 0);
    CHECK(strcmp(lines[3], collectable) == 0);
    CHECK(strcmp(lines[4], uncollectable) == 0);
    CHECK(is_done_line(lines[5], 2, 1));

    /* NULL restores the default sink (stderr). */
    CHECK(cgc_set_log_sink(NULL, NULL) == capture_line);
    CHECK(cgc_set_log_sink(NULL, NULL) == previous);
    cgc_set_debug(0);
    drop_refs(l);
    cgc_garbage_clear();
    CHECK_EQ_INT(deallocs[3], 1);
    Py_DECREF(young);
    Py_DECREF(live);
    end();
}

int main(void) {
    start_program();
    RUN(test_debug_output);
    return CHECK_DONE();
}
