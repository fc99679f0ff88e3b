/* The one line every program of bench/programs prints at its end, shared
 * by the C and the C++ programs so that run.sh and report.py read one
 * format:
 *
 *   {"program":"binary-trees","variant":"cyclegc","checksum":"...",
 *    "cpu_s":..,"wall_s":..,"max_rss_kb":..,"collections":"g0/g1/g2",
 *    "max_pause_ms":..,"gc_s":..,"ns_per_iter":..,"throughput":..}
 *
 * CPU time is user + system of the whole process (getrusage, so collector
 * threads and page faults count), wall time runs from program_start(). A
 * figure a variant cannot give is the string "-". */
#ifndef CYCLEGC_BENCH_PROGRAMS_RESULT_H
#define CYCLEGC_BENCH_PROGRAMS_RESULT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

typedef struct program_result {
    const char *program;
    const char *variant;
    unsigned long long checksum;
    /* Collections per generation; generations < 0: not available; 1: a
     * collector without generations (Boehm), counted in [0]. */
    int generations;
    unsigned long long collections[3];
    double max_pause_ns; /* < 0: not available */
    double gc_ns;        /* time in collections; < 0: not available */
    double ns_per_iter;  /* the program's own per-iteration figure; < 0: none */
    double throughput;   /* the program's units (trees, say) per wall second; < 0: none */
} program_result;

static inline double program_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Called first thing in main: the origin of wall_s. */
static inline double *program_wall_origin(void) {
    static double origin;
    return &origin;
}
static inline void program_start(void) { *program_wall_origin() = program_now_ns(); }

/* A result with nothing measured by the collector yet. */
static inline program_result program_result_init(const char *program, const char *variant) {
    program_result r;
    memset(&r, 0, sizeof r);
    r.program = program;
    r.variant = variant;
    r.generations = -1;
    r.max_pause_ns = -1;
    r.gc_ns = -1;
    r.ns_per_iter = -1;
    r.throughput = -1;
    return r;
}

static inline void program_print_number(const char *key, double value, double scale, int digits) {
    if (value < 0)
        printf(",\"%s\":\"-\"", key);
    else
        printf(",\"%s\":%.*f", key, digits, value / scale);
}

static inline void program_print_collections(const program_result *r) {
    printf(",\"collections\":\"");
    if (r->generations < 0) printf("-");
    for (int g = 0; g < r->generations; ++g) printf(g ? "/%llu" : "%llu", r->collections[g]);
    printf("\"");
}

static inline void program_print_result(const program_result *r) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    double wall = program_now_ns() - *program_wall_origin();
    printf("{\"program\":\"%s\",\"variant\":\"%s\",\"checksum\":\"%llu\"", r->program, r->variant, r->checksum);
    program_print_number("cpu_s", cpu, 1, 3);
    program_print_number("wall_s", wall, 1e9, 3);
    printf(",\"max_rss_kb\":%ld", usage.ru_maxrss);
    program_print_collections(r);
    program_print_number("max_pause_ms", r->max_pause_ns, 1e6, 3);
    program_print_number("gc_s", r->gc_ns, 1e9, 3);
    program_print_number("ns_per_iter", r->ns_per_iter, 1, 1);
    program_print_number("throughput", r->throughput, 1, 0);
    printf("}\n");
    fflush(stdout);
}

/* argv[i] as a positive count, or `fallback` when absent. */
static inline long program_arg(int argc, char **argv, int i, long fallback) {
    if (i >= argc) return fallback;
    char *end = NULL;
    long value = strtol(argv[i], &end, 10);
    if (*end != '\0' || value <= 0) {
        fprintf(stderr, "%s: argument %d must be a positive integer, not \"%s\"\n", argv[0], i, argv[i]);
        exit(2);
    }
    return value;
}

#endif
