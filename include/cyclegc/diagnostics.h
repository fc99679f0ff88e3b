/* cyclegc diagnostics: why is it still alive? Leak hunting for the heap.
 *
 * Every diagnostic looks at the calling thread's current heap and only
 * reads it: reference counts, generations, finalizers and weak references
 * are the same afterwards (the leak-check scope is the one exception: it
 * collects when it ends). A question builds the heap's graph once: one node
 * per tracked object, one edge per reference a tp_traverse visits to another
 * tracked object. An object's *external* count is its reference count minus
 * those edges: references from C variables, globals, untracked objects and
 * untraced fields. Objects with an external count above zero are *roots*.
 *
 * Objects returned here are borrowed (no reference is taken): valid until
 * the heap changes. Type names are borrowed from the types. Functions that
 * fail return -1 (or NULL) and record an error (cgc_error_message()).
 * See docs/diagnostics.md. */
#ifndef CYCLEGC_DIAGNOSTICS_H
#define CYCLEGC_DIAGNOSTICS_H

#include <cyclegc/cyclegc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Census and growth (objgraph.typestats, show_growth) -------------- */

typedef struct cgc_diag_type_stats {
    const char *type_name;
    cgc_type *type;
    cgc_ssize_t count;        /* live tracked objects of the type */
    cgc_ssize_t bytes;        /* their size in the heap (each object's slot) */
    cgc_ssize_t count_change; /* cgc_diag_growth: since its previous call; else 0 */
    cgc_ssize_t bytes_change;
} cgc_diag_type_stats;

typedef struct cgc_diag_type_list {
    cgc_diag_type_stats *types; /* malloc'd; free with cgc_diag_census_release */
    cgc_ssize_t count;
    cgc_ssize_t total_objects; /* over every type of the heap */
    cgc_ssize_t total_bytes;
} cgc_diag_type_list;

/* The live tracked objects by type, most numerous first (then most bytes,
 * then by name). Reads the metadata and each object's type only (no
 * traversal). 0, or -1 (NULL `out`: misuse; out of memory). */
CGC_API int cgc_diag_census(cgc_diag_type_list *out);
/* The types whose count or bytes changed since the previous call on this
 * heap (the first call: since an empty heap), largest count increase first;
 * the totals are the whole heap's. Records the census as the new baseline.
 * 0, or -1. */
CGC_API int cgc_diag_growth(cgc_diag_type_list *out);
/* Frees the array; the census is then empty. NULL is ignored. */
CGC_API void cgc_diag_census_release(cgc_diag_type_list *census);
/* The `limit` most numerous types (all if limit <= 0) written to the log
 * sink (cgc_set_log_sink), one line each: objgraph.show_most_common_types. */
CGC_API void cgc_diag_show_most_common_types(cgc_ssize_t limit);
/* cgc_diag_growth written to the log sink: objgraph.show_growth. */
CGC_API void cgc_diag_show_growth(cgc_ssize_t limit);

/* ---- Who holds it (objgraph.find_backref_chain) ----------------------- */

typedef struct cgc_diag_link {
    cgc_object *object;
    const char *type_name;
    cgc_ssize_t refcount;
    cgc_ssize_t external; /* refcount minus the references from tracked objects */
} cgc_diag_link;

typedef struct cgc_diag_chain {
    cgc_diag_link *links; /* malloc'd; free with cgc_diag_chain_release */
    cgc_ssize_t length;
} cgc_diag_chain;

/* The shortest chain of references from a root (an object with an external
 * count above zero) to `object`: links[0] is the root, each link refers to
 * the next, the last is `object` (a root itself: a chain of one). Returns 1;
 * 0 with an empty chain when no root reaches `object` (it is garbage that a
 * collection would free, or uncollectable); -1 when `object` is not a
 * tracked object of the current heap (misuse), during a collection, or out
 * of memory. */
CGC_API int cgc_diag_retainer_chain(cgc_object *object, cgc_diag_chain *out);
/* The same for the nearest object whose type is named `type_name` (the
 * shortest chain to any of them). 1, 0 (no such object reached), or -1. */
CGC_API int cgc_diag_retainer_chain_to_type(const char *type_name, cgc_diag_chain *out);
CGC_API void cgc_diag_chain_release(cgc_diag_chain *chain);
/* The chain to `object` written to the log sink, one line per link
 * ("<type 0x...> refcount 2, external 1"). 1, 0 or -1 as above. */
CGC_API int cgc_diag_show_chain(cgc_object *object);
/* `object`'s external count: its reference count minus the references
 * from tracked objects of the heap. -1 with an error recorded if it is not
 * a tracked object of the current heap (misuse). Below 0 otherwise only
 * when a type's traverse visits references it does not hold (see
 * cgc_diag_check_traverse). */
CGC_API cgc_ssize_t cgc_diag_external_refs(cgc_object *object);

/* ---- Leak reports ------------------------------------------------------ */

/* Asks for a leak report when the current heap shuts down (cgc_heap_delete,
 * cgc_finalize = Py_FinalizeEx): the tracked objects still alive after the
 * final collections, grouped by type (count, bytes) with the shortest chain
 * from a root to one object of each type, written to the log sink.
 * CYCLEGC_LEAK_REPORT=1 in the environment asks it of every heap. Returns
 * the previous setting (0 or 1), or -1 when out of memory. */
CGC_API int cgc_diag_set_leak_report(int on);
/* At exit (atexit), the heap current then is finalized (cgc_finalize) with
 * its leak report. 0, or -1 if atexit refuses. */
CGC_API int cgc_diag_report_leaks_at_exit(void);
/* The same report about every tracked object alive now, as text (lines
 * ending in newlines; free with cgc_diag_text_release), without collecting
 * first. NULL when out of memory or during a collection (error recorded). */
CGC_API char *cgc_diag_leak_report(void);
CGC_API void cgc_diag_text_release(char *text);

/* A leak-check scope for tests (as LeakSanitizer for malloc): begin
 * remembers the tracked objects alive; end runs a full collection and
 * counts the tracked objects made since begin that are still alive, then
 * frees the scope. Begin: NULL when out of memory. End: the number of
 * leaked objects (0: none), -1 on error (a NULL scope, another current
 * heap); with `report` non-NULL, *report is the leak report (free with
 * cgc_diag_text_release) or NULL when nothing leaked. An object freed in
 * the scope whose address a leaked object then takes is not seen. */
typedef struct cgc_diag_leak_scope cgc_diag_leak_scope;
CGC_API cgc_diag_leak_scope *cgc_diag_leak_scope_begin(void);
CGC_API cgc_ssize_t cgc_diag_leak_scope_end(cgc_diag_leak_scope *scope, char **report);

/* ---- Dominators and retained sizes -------------------------------------- */

/* An object dominates another when every chain from the roots to the other
 * passes through it; its retained size is the bytes of the objects it
 * dominates, itself included: what would be freed if it died. Computed by
 * Lengauer-Tarjan over the whole heap (millions of objects in seconds). */
typedef struct cgc_diag_retained {
    cgc_object *object;
    const char *type_name;
    cgc_ssize_t self_bytes;
    cgc_ssize_t retained_bytes;
} cgc_diag_retained;

/* `object`'s retained size in bytes (0 when no root reaches it: garbage),
 * or -1 (not a tracked object of the current heap: misuse; out of memory). */
CGC_API cgc_ssize_t cgc_diag_retained_size(cgc_object *object);
/* The bytes that would be freed if every object of the type named
 * `type_name` died: those reachable from the roots, minus those reachable
 * without passing through an object of the type. -1 on error. */
CGC_API cgc_ssize_t cgc_diag_retained_size_of_type(const char *type_name);
/* Writes the `limit` objects of largest retained size to out[0..], largest
 * first, and returns how many it wrote (fewer when the heap has fewer
 * objects that a root reaches), or -1 on error. */
CGC_API cgc_ssize_t cgc_diag_largest_dominators(cgc_ssize_t limit, cgc_diag_retained *out);

/* ---- Traverse checker ---------------------------------------------------- */

/* Types whose tp_traverse (or C++ trace) is inconsistent with their counts
 * or their tp_clear. Each finding is reported (CGC_ERR_TYPE) naming the
 * type, an object and, for an over-visited object, a referrer. */

/* Checks the heap now: objects that more tracked objects visit than their
 * count allows, and objects in cycles held together only by references in
 * their fields that their tp_traverse does not visit, which nothing else
 * holds (one finding per type; docs/diagnostics.md says how borrowed
 * pointers and cycles held from outside are told apart). Returns the
 * number of findings, or -1; with `report` non-NULL, *report is their text
 * (free with cgc_diag_text_release) or NULL when there is none. */
CGC_API cgc_ssize_t cgc_diag_check_traverse(char **report);
/* Switches the checks made by collections on the current heap (in every
 * build): after each tp_clear, the object's tp_traverse must visit
 * nothing; after each full collection, the cycles of untraced references
 * above are reported (each type once per heap). Returns the previous
 * setting, or -1 when out of memory. */
CGC_API int cgc_diag_set_traverse_check(int on);

/* ---- Heap snapshots ------------------------------------------------------ */

/* Writes the heap's graph to `path` as a Chrome DevTools heap snapshot
 * (.heapsnapshot, V8's JSON), which DevTools' Memory panel and memlab load:
 * one node per tracked object named by its type, with its size and an id
 * that stays the same while the object lives; a synthetic root node holds
 * every root. 0, or -1 (NULL path: misuse; cannot open or write: value
 * error naming the file; out of memory; during a collection). */
CGC_API int cgc_diag_write_heapsnapshot(const char *path);
/* Writes the heap's graph to `path` in the `cgcgraph 1` format
 * (docs/graph-format.md; uncompressed text), which cyclegc-inspect and
 * cyclegc-replay read. 0, or -1 as above. */
CGC_API int cgc_diag_write_cgcgraph(const char *path);
/* Writes a Graphviz DOT graph of `object` and the objects that refer to it,
 * and to those, up to `max_depth` levels (objgraph.show_backrefs; at most
 * 10 referrers drawn per object): `object` red, roots yellow, each box with
 * its type, address, count and external count. 0, or -1 (not a tracked
 * object of the current heap: misuse; a negative depth; as above). */
CGC_API int cgc_diag_write_backrefs_dot(cgc_object *object, int max_depth, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* CYCLEGC_DIAGNOSTICS_H */
