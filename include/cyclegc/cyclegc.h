/* cyclegc: reference counting with cycle collection for C and C++.
 *
 * The native C API. Every exported symbol starts with `cgc_`; the documented
 * CPython names live only in <cyclegc/Python.h>, which maps onto this header.
 *
 * Objects start with a `cgc_object` header (reference count, type). Types that
 * can hold references to other objects set CGC_TPFLAGS_HAVE_GC and give a
 * `tp_traverse` handler (and usually `tp_clear`); their instances carry a
 * hidden collector header in front of the object and can be tracked. A
 * collection finds tracked objects that only other garbage refers to and
 * breaks their cycles. See docs/design.md.
 *
 * Threading: a heap (cgc_heap) is single-threaded. Each thread has a current
 * heap (by default the process's default heap); objects must only be used by
 * one thread at a time, the thread whose current heap they were created in.
 */
#ifndef CYCLEGC_H
#define CYCLEGC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CGC_API: exported functions; CGC_DATA: exported data. */
#if defined(_WIN32) && defined(CYCLEGC_SHARED)
#  ifdef CYCLEGC_BUILDING
#    define CGC_DATA __declspec(dllexport)
#  else
#    define CGC_DATA __declspec(dllimport)
#  endif
#  define CGC_API CGC_DATA
#elif defined(__GNUC__)
#  define CGC_DATA __attribute__((visibility("default")))
/* A program linked with the shared library calls the functions through its
 * GOT, not through a PLT stub that jumps there: one indirect call instead of
 * a call and a jump (GCC's -fno-plt, for this API only): about 1.5 ns per
 * object in a loop that allocates, tracks and frees. A static link makes
 * the calls direct. */
#  if !defined(CYCLEGC_BUILDING) && defined(__x86_64__) && defined(__has_attribute)
#    if __has_attribute(noplt)
#      define CGC_API __attribute__((visibility("default"), noplt))
#    endif
#  endif
#  ifndef CGC_API
#    define CGC_API CGC_DATA
#  endif
#else
#  define CGC_DATA
#  define CGC_API
#endif

#define CGC_VERSION_MAJOR 0
#define CGC_VERSION_MINOR 1
#define CGC_VERSION_PATCH 0

typedef ptrdiff_t cgc_ssize_t;
typedef struct cgc_object cgc_object;
typedef struct cgc_type cgc_type;
typedef struct cgc_heap cgc_heap;

/* ---- Objects --------------------------------------------------------- */

struct cgc_object {
    cgc_ssize_t ob_refcnt;
    cgc_type *ob_type;
};

typedef struct cgc_var_object {
    cgc_object ob_base;
    cgc_ssize_t ob_size; /* number of items of a variable-size object */
} cgc_var_object;

typedef int (*cgc_visitproc)(cgc_object *object, void *arg);
typedef int (*cgc_traverseproc)(cgc_object *self, cgc_visitproc visit, void *arg);
typedef int (*cgc_inquiry)(cgc_object *self);
typedef void (*cgc_destructor)(cgc_object *self);
typedef void (*cgc_freefunc)(void *memory);
typedef cgc_object *(*cgc_allocfunc)(cgc_type *type, cgc_ssize_t nitems);
typedef cgc_object *(*cgc_newfunc)(cgc_type *type, cgc_object *args, cgc_object *kwds);
typedef int (*cgc_initproc)(cgc_object *self, cgc_object *args, cgc_object *kwds);
typedef cgc_object *(*cgc_unaryfunc)(cgc_object *self);
typedef cgc_object *(*cgc_binaryfunc)(cgc_object *self, cgc_object *other);
typedef cgc_object *(*cgc_ternaryfunc)(cgc_object *self, cgc_object *a, cgc_object *b);
typedef cgc_ssize_t (*cgc_hashfunc)(cgc_object *self);
typedef cgc_object *(*cgc_richcmpfunc)(cgc_object *a, cgc_object *b, int op);
typedef cgc_object *(*cgc_getattrfunc)(cgc_object *self, char *name);
typedef int (*cgc_setattrfunc)(cgc_object *self, char *name, cgc_object *value);
typedef int (*cgc_setattrofunc)(cgc_object *self, cgc_object *name, cgc_object *value);
typedef int (*cgc_descrsetfunc)(cgc_object *self, cgc_object *obj, cgc_object *value);
typedef cgc_object *(*cgc_vectorcallfunc)(cgc_object *callable, cgc_object *const *args,
                                          size_t nargsf, cgc_object *kwnames);

/* Type flags: the same bits as CPython's Py_TPFLAGS_*. */
#define CGC_TPFLAGS_HAVE_FINALIZE (1UL << 0)
#define CGC_TPFLAGS_HEAPTYPE (1UL << 9)
#define CGC_TPFLAGS_BASETYPE (1UL << 10)
#define CGC_TPFLAGS_READY (1UL << 12)
#define CGC_TPFLAGS_READYING (1UL << 13)
#define CGC_TPFLAGS_HAVE_GC (1UL << 14)
/* Set on the type objects of the C++ API (cyclegc.hpp): errors about their
 * objects name the C++ API (ref, trace(), finalize()), not the C one. */
#define CGC_TPFLAGS_CXX (1UL << 24)
#define CGC_TPFLAGS_DEFAULT 0UL

/* A type object. The field names and their order are CPython's, so that
 * positional and designated initializers written for CPython work. Fields
 * after the comment "unused" are accepted but not used by cyclegc. */
struct cgc_type {
    cgc_var_object ob_base;
    const char *tp_name;
    cgc_ssize_t tp_basicsize, tp_itemsize;
    cgc_destructor tp_dealloc;
    cgc_ssize_t tp_vectorcall_offset;
    cgc_getattrfunc tp_getattr;
    cgc_setattrfunc tp_setattr;
    void *tp_as_async;
    cgc_unaryfunc tp_repr;
    void *tp_as_number;
    void *tp_as_sequence;
    void *tp_as_mapping;
    cgc_hashfunc tp_hash;
    cgc_ternaryfunc tp_call;
    cgc_unaryfunc tp_str;
    cgc_binaryfunc tp_getattro;
    cgc_setattrofunc tp_setattro;
    void *tp_as_buffer;
    unsigned long tp_flags;
    const char *tp_doc;
    cgc_traverseproc tp_traverse;
    cgc_inquiry tp_clear;
    cgc_richcmpfunc tp_richcompare;
    cgc_ssize_t tp_weaklistoffset;
    cgc_unaryfunc tp_iter;
    cgc_unaryfunc tp_iternext;
    void *tp_methods;
    void *tp_members;
    void *tp_getset;
    cgc_type *tp_base;
    cgc_object *tp_dict;
    cgc_ternaryfunc tp_descr_get;
    cgc_descrsetfunc tp_descr_set;
    cgc_ssize_t tp_dictoffset;
    cgc_initproc tp_init;
    cgc_allocfunc tp_alloc;
    cgc_newfunc tp_new;
    cgc_freefunc tp_free;
    cgc_inquiry tp_is_gc;
    cgc_object *tp_bases;
    cgc_object *tp_mro;
    cgc_object *tp_cache;
    void *tp_subclasses;
    cgc_object *tp_weaklist;
    cgc_destructor tp_del;
    unsigned int tp_version_tag;
    cgc_destructor tp_finalize;
    cgc_vectorcallfunc tp_vectorcall;
    unsigned char tp_watched;
    /* cyclegc's own slot (not in CPython): runs the C++ destructor of the
     * object whose C part is `self` and frees its memory (cgc_gc_raw_free).
     * Set by the C++ API for its types (without tp_finalize): at count 0 the
     * library untracks the object (and clears it during a collection), then
     * calls this. NULL for C types. */
    cgc_destructor tp_cxx_destroy;
};

/* The type of type objects, and the root base type ("object"). */
CGC_DATA extern cgc_type cgc_type_type;
CGC_DATA extern cgc_type cgc_base_object_type;

/* ---- Errors ---------------------------------------------------------- */

/* C has no exceptions: a failing function returns its error value (NULL or
 * -1) and records an error on the current heap, readable with
 * cgc_error_message() until cleared. Misuse of a function that has no error
 * value (tracking an object twice, ...) is recorded the same way and the
 * faulty operation is refused. Every recorded error is also passed to the
 * error hook; the default hook prints "cyclegc: <message>" to stderr. */
typedef enum cgc_error_kind {
    CGC_ERR_NONE = 0,
    CGC_ERR_MEMORY = 1,     /* out of memory */
    CGC_ERR_MISUSE = 2,     /* API used against its contract */
    CGC_ERR_TYPE = 3,       /* a type definition is invalid */
    CGC_ERR_VALUE = 4,      /* an argument is out of range */
    CGC_ERR_CORRUPTION = 5, /* a broken invariant found in the heap (refcounts) */
    CGC_ERR_UNRAISABLE = 6  /* an error inside a finalizer or callback */
} cgc_error_kind;

typedef void (*cgc_error_hook)(cgc_error_kind kind, const char *message, void *context);

CGC_API cgc_error_kind cgc_error_occurred(void);
CGC_API const char *cgc_error_message(void); /* "" when there is none */
CGC_API void cgc_error_clear(void);
/* Records an error as cyclegc does (for types that report their own). */
CGC_API void cgc_error_set(cgc_error_kind kind, const char *message);
/* hook == NULL restores the default. Returns the previous hook. */
CGC_API cgc_error_hook cgc_set_error_hook(cgc_error_hook hook, void *context);
/* How many errors of each kind were reported on the current heap. */
CGC_API uint64_t cgc_error_count(cgc_error_kind kind);
/* The error hook in use (the default's address if none was set) and, when
 * `context` is not NULL, its context; for a wrapper that must free the
 * context of the hook it replaces. */
CGC_API cgc_error_hook cgc_get_error_hook(void **context);

/* ---- Heaps ----------------------------------------------------------- */

CGC_API cgc_heap *cgc_heap_new(void);
/* Runs final collections, then frees the heap's state (not its objects). */
CGC_API void cgc_heap_delete(cgc_heap *heap);
CGC_API cgc_heap *cgc_heap_current(void);
/* Sets the calling thread's current heap (NULL: the default heap). */
CGC_API void cgc_heap_set_current(cgc_heap *heap);

/* ---- Reference counting ---------------------------------------------- */

/* Called when a reference count drops to zero (or below: reported). */
CGC_API void cgc_dealloc(cgc_object *op);

static inline void cgc_incref(cgc_object *op) { op->ob_refcnt++; }
static inline void cgc_decref(cgc_object *op) {
    if (--op->ob_refcnt <= 0) cgc_dealloc(op);
}
static inline void cgc_xincref(cgc_object *op) { if (op) cgc_incref(op); }
static inline void cgc_xdecref(cgc_object *op) { if (op) cgc_decref(op); }

/* ---- Allocation and tracking ----------------------------------------- */

/* Allocate an object of `type` (GC types get the collector header,
 * untracked). Reference count 1; heap types are incref'd. NULL on error. */
CGC_API cgc_object *cgc_object_new(cgc_type *type);
CGC_API cgc_object *cgc_object_new_var(cgc_type *type, cgc_ssize_t nitems);
/* Free an object allocated by cgc_object_new*: type-aware (GC or not). */
CGC_API void cgc_object_del(void *op);
/* GC-only versions: the type must have CGC_TPFLAGS_HAVE_GC. */
CGC_API cgc_object *cgc_gc_new(cgc_type *type);
CGC_API cgc_object *cgc_gc_new_var(cgc_type *type, cgc_ssize_t nitems);
CGC_API cgc_var_object *cgc_gc_resize(cgc_var_object *op, cgc_ssize_t nitems);
CGC_API void cgc_gc_del(void *op);
CGC_API void cgc_gc_track(void *op);
CGC_API void cgc_gc_untrack(void *op);
CGC_API int cgc_is_gc(cgc_object *op);
CGC_API int cgc_gc_is_tracked(cgc_object *op);
CGC_API int cgc_gc_is_finalized(cgc_object *op);

/* Memory for an object that embeds its own collector header (the C++ API's
 * cyclegc::object): counts as a GC allocation (and may collect, before the
 * memory exists). `alignment` is at most 16. The memory is not zero-filled:
 * the constructor initializes it. */
CGC_API void *cgc_gc_raw_alloc(size_t size, size_t alignment);
/* Tells where in `memory` the object's C part (cgc_object) is, once built,
 * and tracks it if `track` is non-zero. */
CGC_API void cgc_gc_raw_bind(void *memory, cgc_object *op, int track);
/* The same two steps with a handle to the memory's collector metadata
 * carried from one to the other (returned in registers), so that binding
 * need not look it up again: what cyclegc::make uses. `memory` is NULL when
 * the allocation failed; free with cgc_gc_raw_free(slot.memory). */
typedef struct cgc_raw_slot {
    void *memory;
    void *gc_meta; /* opaque */
} cgc_raw_slot;
CGC_API cgc_raw_slot cgc_gc_raw_alloc_slot(size_t size, size_t alignment);
CGC_API void cgc_gc_raw_bind_slot(cgc_raw_slot slot, cgc_object *op, int track);
/* Untracks a dying object (as cgc_gc_untrack) and tells whether a
 * collection is running (as cgc_is_collecting): one call for the C++ API's
 * destructor path. */
CGC_API int cgc_gc_untrack_dying(cgc_object *op);
/* Frees memory from cgc_gc_raw_alloc (untracking the object if needed). */
CGC_API void cgc_gc_raw_free(void *memory);

/* Raw memory (no object header). */
CGC_API void *cgc_malloc(size_t size);
CGC_API void *cgc_calloc(size_t count, size_t size);
CGC_API void *cgc_realloc(void *memory, size_t size);
/* cgc_realloc, except that a pointer to an untracked GC object, or to its
 * collector header (cgc_gc_head_of), resizes the object: `size` counts the
 * object (plus CGC_GC_HEAD_SIZE when given the header, as Python 2.0's
 * PyObject_REALLOC(PyObject_AS_GC(op), ...) did); returns the same kind of
 * pointer, or NULL (recorded error) for a tracked object or a fixed-size
 * object asked to grow. */
CGC_API void *cgc_object_realloc(void *memory, size_t size);
CGC_API void cgc_free(void *memory);

/* The collector's metadata of a GC object (PyGC_Head): 8 bytes, kept in
 * the object's page beside the object, not inside it. */
typedef struct cgc_gc_head {
    uint64_t opaque;
} cgc_gc_head;
#define CGC_GC_HEAD_SIZE ((cgc_ssize_t)sizeof(cgc_gc_head))
CGC_API cgc_gc_head *cgc_gc_head_of(cgc_object *op);
CGC_API cgc_object *cgc_object_of_gc_head(cgc_gc_head *head);

/* ---- Types ----------------------------------------------------------- */

CGC_API int cgc_type_ready(cgc_type *type);
CGC_API cgc_object *cgc_type_generic_alloc(cgc_type *type, cgc_ssize_t nitems);
CGC_API cgc_object *cgc_type_generic_new(cgc_type *type, cgc_object *args, cgc_object *kwds);
/* The default tp_dealloc: untrack, finalize, clear, tp_free, decref heap type. */
CGC_API void cgc_default_dealloc(cgc_object *self);
/* Run tp_finalize from a tp_dealloc; returns -1 if the object was resurrected
 * (the dealloc must then stop), 0 otherwise. */
CGC_API int cgc_call_finalizer_from_dealloc(cgc_object *self);

typedef struct cgc_type_slot {
    int slot; /* one of CGC_tp_* */
    void *pfunc;
} cgc_type_slot;

typedef struct cgc_type_spec {
    const char *name;
    int basicsize;
    int itemsize;
    unsigned int flags;
    cgc_type_slot *slots; /* terminated by a slot of id 0 */
} cgc_type_spec;

/* Slot ids: CPython's numbers. */
#define CGC_tp_alloc 47
#define CGC_tp_base 48
#define CGC_tp_bases 49
#define CGC_tp_call 50
#define CGC_tp_clear 51
#define CGC_tp_dealloc 52
#define CGC_tp_del 53
#define CGC_tp_descr_get 54
#define CGC_tp_descr_set 55
#define CGC_tp_doc 56
#define CGC_tp_getattr 57
#define CGC_tp_getattro 58
#define CGC_tp_hash 59
#define CGC_tp_init 60
#define CGC_tp_is_gc 61
#define CGC_tp_iter 62
#define CGC_tp_iternext 63
#define CGC_tp_methods 64
#define CGC_tp_new 65
#define CGC_tp_repr 66
#define CGC_tp_richcompare 67
#define CGC_tp_setattr 68
#define CGC_tp_setattro 69
#define CGC_tp_str 70
#define CGC_tp_traverse 71
#define CGC_tp_members 72
#define CGC_tp_getset 73
#define CGC_tp_free 74
#define CGC_tp_finalize 80
#define CGC_tp_vectorcall 82

/* Creates a heap type (a tracked GC object). `bases` is NULL, or a single
 * type object: cyclegc types have single inheritance. */
CGC_API cgc_object *cgc_type_from_spec(cgc_type_spec *spec, cgc_object *bases);
CGC_API void *cgc_type_get_slot(cgc_type *type, int slot);

/* ---- Collection ------------------------------------------------------ */

#define CGC_NUM_GENERATIONS 3

/* Collect generation `generation` (0..2; 2 = full) whether or not automatic
 * collection is enabled. Returns collected + uncollectable, 0 if a
 * collection is already running, -1 for an invalid generation. */
CGC_API cgc_ssize_t cgc_collect(int generation);
/* PyGC_Collect: a full collection only if enabled. */
CGC_API cgc_ssize_t cgc_collect_if_enabled(void);
CGC_API int cgc_enable(void);  /* returns the previous state */
CGC_API int cgc_disable(void); /* returns the previous state */
CGC_API int cgc_is_enabled(void);
CGC_API int cgc_is_collecting(void);

CGC_API void cgc_set_threshold(int generation, cgc_ssize_t threshold);
CGC_API cgc_ssize_t cgc_get_threshold(int generation);
CGC_API cgc_ssize_t cgc_get_count(int generation);

typedef struct cgc_generation_stats {
    uint64_t collections;   /* collections of this generation */
    uint64_t collected;     /* objects freed by them */
    uint64_t uncollectable; /* unreachable objects they could not free */
    uint64_t examined;      /* objects they examined (candidates) */
    uint64_t total_ns;      /* time spent in them */
    uint64_t max_pause_ns;  /* the longest one */
} cgc_generation_stats;

CGC_API void cgc_get_stats(int generation, cgc_generation_stats *out);

/* When automatic collections run. CGC_AUTO_AT_ALLOCATION (the default, as in
 * CPython <= 3.11): inside the allocation that crosses the threshold.
 * CGC_AUTO_AT_SAFEPOINT (as CPython >= 3.12 at its eval breaker): the
 * allocation only marks a collection as due; it runs at the next
 * cgc_safepoint() call. */
typedef enum cgc_auto_mode { CGC_AUTO_AT_ALLOCATION = 0, CGC_AUTO_AT_SAFEPOINT = 1 } cgc_auto_mode;
CGC_API void cgc_set_auto_mode(cgc_auto_mode mode);
/* Runs a collection that is due, if any; returns what it returned. */
CGC_API cgc_ssize_t cgc_safepoint(void);


/* ---- The gc module's surface ------------------------------------------ */

/* Debug flags (gc.DEBUG_*), CPython's values. Output goes to the log sink. */
#define CGC_DEBUG_STATS 1
#define CGC_DEBUG_COLLECTABLE 2
#define CGC_DEBUG_UNCOLLECTABLE 4
#define CGC_DEBUG_SAVEALL 32
#define CGC_DEBUG_LEAK (CGC_DEBUG_COLLECTABLE | CGC_DEBUG_UNCOLLECTABLE | CGC_DEBUG_SAVEALL)
CGC_API void cgc_set_debug(int flags);
CGC_API int cgc_get_debug(void);

/* Where debug output goes, one line (without newline) per call; NULL
 * restores the default, stderr. Returns the previous sink. */
typedef void (*cgc_log_sink)(const char *line, void *context);
CGC_API cgc_log_sink cgc_set_log_sink(cgc_log_sink sink, void *context);

/* Callbacks at the start and stop of every collection (gc.callbacks). */
typedef struct cgc_collection_info {
    int generation;
    cgc_ssize_t collected;     /* "stop" only */
    cgc_ssize_t uncollectable; /* "stop" only */
    cgc_ssize_t candidates;    /* "stop" only: objects examined */
    uint64_t duration_ns;      /* "stop" only */
} cgc_collection_info;
typedef void (*cgc_collection_callback)(const char *phase, const cgc_collection_info *info,
                                        void *context);
/* Returns 0, or -1 if out of memory. */
CGC_API int cgc_add_collection_callback(cgc_collection_callback callback, void *context);
/* Returns 0, or -1 if that (callback, context) pair is not registered. */
CGC_API int cgc_remove_collection_callback(cgc_collection_callback callback, void *context);
/* (A callback removed while the callbacks run, by itself or by another, is
 * not called again, even in the same phase; one added runs from the next
 * phase on.) */

/* gc.freeze(): move every tracked object to a permanent generation that
 * collections ignore; gc.unfreeze() moves them back to the oldest one. */
CGC_API void cgc_freeze(void);
CGC_API void cgc_unfreeze(void);
CGC_API cgc_ssize_t cgc_get_freeze_count(void);

/* A list of new references, returned by the introspection functions. */
typedef struct cgc_object_list {
    cgc_object **items;
    cgc_ssize_t count;
} cgc_object_list;
/* Drops the references and frees the array. */
CGC_API void cgc_object_list_release(cgc_object_list *list);

/* Tracked objects of one generation (0..2), or of all (-1). 0, or -1. */
CGC_API int cgc_get_objects(int generation, cgc_object_list *out);
/* Tracked objects whose tp_traverse visits any of `objects`. */
CGC_API int cgc_get_referrers(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out);
/* What the tp_traverse of each of `objects` visits. */
CGC_API int cgc_get_referents(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out);
/* Calls `visitor` on every tracked object (permanent generation included),
 * with automatic collection off, until it returns 0. */
typedef int (*cgc_object_visitor)(cgc_object *object, void *arg);
CGC_API void cgc_visit_objects(cgc_object_visitor visitor, void *arg);

/* gc.garbage: uncollectable objects (legacy tp_del finalizers in cycles)
 * and, with CGC_DEBUG_SAVEALL, every unreachable object. The list holds a
 * reference to each. */
CGC_API int cgc_get_garbage(cgc_object_list *out);
CGC_API cgc_ssize_t cgc_garbage_count(void);
/* Drops the list's references (which may free the objects). */
CGC_API void cgc_garbage_clear(void);
/* The log sink in use (the default's address if none was set) and, when
 * `context` is not NULL, its context. */
CGC_API cgc_log_sink cgc_get_log_sink(void **context);

/* ---- Weak references -------------------------------------------------- */

/* A weak reference to a GC object. The callback (optional) runs when the
 * referent dies, with the weak reference (dead by then) and `context`;
 * during a collection, only for weak references that are themselves
 * reachable, and before any finalizer or tp_clear runs. */
typedef void (*cgc_weakref_callback)(cgc_object *weakref, void *context);
CGC_DATA extern cgc_type cgc_weakref_type;
/* Returns a new reference to a weak reference object, or NULL. Without a
 * callback, an existing callback-less weak reference may be returned. */
CGC_API cgc_object *cgc_weakref_new(cgc_object *object, cgc_weakref_callback callback, void *context);
/* The same, with `destroy(context)` called when the weak reference object
 * itself is freed (for a context the weak reference owns). */
CGC_API cgc_object *cgc_weakref_new_owning(cgc_object *object, cgc_weakref_callback callback,
                                           void *context, void (*destroy)(void *context));
/* Returns a new reference to the referent, or NULL if it is dead. */
CGC_API cgc_object *cgc_weakref_get(cgc_object *weakref);
/* PyWeakref_GetRef: 1 and a new reference, 0 and NULL if dead, -1 on error. */
CGC_API int cgc_weakref_get_ref(cgc_object *weakref, cgc_object **out);
CGC_API int cgc_weakref_check(cgc_object *object);
/* Clears every weak reference to `object` and runs their callbacks. */
CGC_API void cgc_clear_weakrefs(cgc_object *object);
CGC_API cgc_ssize_t cgc_weakref_count(cgc_object *object);

/* Errors inside finalizers, callbacks and tp_clear have nowhere to go: they
 * are reported as CGC_ERR_UNRAISABLE ("unraisable", as in CPython). */
CGC_API void cgc_report_unraisable(const char *message, cgc_object *object);
/* Where unraisable errors go; NULL restores the default (the error hook,
 * which prints to stderr). Returns the previous hook. */
typedef void (*cgc_unraisable_hook)(const char *message, cgc_object *object, void *context);
CGC_API cgc_unraisable_hook cgc_set_unraisable_hook(cgc_unraisable_hook hook, void *context);
/* The unraisable hook in use (NULL: the default) and, when `context` is not
 * NULL, its context. */
CGC_API cgc_unraisable_hook cgc_get_unraisable_hook(void **context);

/* Fault injection, for testing how the library survives running out of
 * memory: from now on, the `nth` allocation the library makes for itself on
 * the current heap (a GC page, the growth of an internal array: young
 * generations, mark stack, unreachable set, garbage list, callback queues)
 * fails once; 0 disarms. Returns how many such allocations the heap has made
 * so far. */
#define CGC_HAVE_DEBUG_FAIL_ALLOCATIONS 1
CGC_API uint64_t cgc_debug_fail_allocations(uint64_t nth);

/* Memory: empty GC pages are kept for reuse (up to 32 MiB in the process)
 * instead of being given back to the system at once; this gives their
 * memory back now. Returns the number of bytes given back. */
CGC_API size_t cgc_release_free_memory(void);

/* Process-level setup (optional). Finalize runs final full collections. */
CGC_API void cgc_initialize(void);
CGC_API int cgc_finalize(void);

#ifdef __cplusplus
}
#endif
#endif /* CYCLEGC_H */
