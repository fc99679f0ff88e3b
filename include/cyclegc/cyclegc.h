/* cyclegc: reference counting with cycle collection for C and C++.
 *
 * The native C API, and its reference. Every exported symbol starts with
 * `cgc_`; the documented CPython names live only in <cyclegc/Python.h>,
 * which maps onto this header (macros and inline functions only).
 *
 * Objects start with a `cgc_object` header (reference count, type). Types that
 * can hold references to other objects set CGC_TPFLAGS_HAVE_GC and give a
 * `tp_traverse` handler (and usually `tp_clear`); their instances can be
 * tracked. The collector's metadata for such an object (8 bytes: its
 * generation, its flags, its gc_refs during a collection) is not in front of
 * the object, as CPython's PyGC_Head is, but beside it, in a table at the
 * start of the 64 KiB page that holds the object: the object's memory is
 * exactly its struct. A collection finds tracked objects that only other
 * garbage refers to and breaks their cycles. See docs/design.md.
 *
 * Errors: a function that can fail returns its error value (NULL, -1, or
 * what its comment says) and records the error (see "Errors" below:
 * cgc_error_occurred, cgc_error_message); misuse of a function that returns
 * nothing is recorded the same way and the operation refused. The comments
 * below say "Errors:" for what each function records.
 *
 * Threading: a heap made by cgc_heap_new_shared is shared: every thread
 * attached to it (cgc_heap_set_current) may use its objects; see "Shared
 * heaps" below. Any other heap (cgc_heap) is confined to one thread, the one
 * that made it current last. A thread that never chooses a heap gets one on first use:
 * the first such thread the process's default heap, every other a heap of
 * its own (finalized at the thread's exit, and deleted unless objects in it
 * outlive the thread). An object may only be used by its heap's thread; a
 * track, untrack or free from another thread is refused and reported
 * (CGC_ERR_MISUSE); in the debug and asan builds every release is checked.
 * Every function here acts on the calling thread's current heap.
 *
 * Environment variables, read once at start-up (supported switches; none is
 * needed in normal use):
 *   CYCLEGC_NO_ARENA=1       take pages from posix_memalign instead of
 *                            reserving an address range for them (for
 *                            environments that refuse large reservations)
 *   CYCLEGC_ARENA_BYTES=N    reserve N bytes of address space for pages
 *                            instead of the default (pages beyond it come
 *                            from posix_memalign)
 *   CYCLEGC_YOUNG_LIST_CAP=N keep at most N young objects in each
 *                            generation's array (past it, young collections
 *                            find them by walking pages): a testing switch
 *                            that makes collections slower
 * See docs/gc.md, "Environment variables".
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
 * a call and a jump (GCC's -fno-plt, for this API only; docs/design.md has
 * the figure). A static link makes the calls direct. */
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

/* The version of this header (the project's version: CMake reads it here).
 * CGC_VERSION is "MAJOR.MINOR.PATCH"; CGC_VERSION_NUMBER is
 * MAJOR * 1000000 + MINOR * 1000 + PATCH, for comparisons in #if. The
 * library's own version at run time: cgc_version(), cgc_version_number(). */
#define CGC_VERSION_MAJOR 0
#define CGC_VERSION_MINOR 1
#define CGC_VERSION_PATCH 0
#define CGC_VERSION_STRINGIFY_(x) #x
#define CGC_VERSION_STRING_(x) CGC_VERSION_STRINGIFY_(x)
#define CGC_VERSION \
    CGC_VERSION_STRING_(CGC_VERSION_MAJOR) "." CGC_VERSION_STRING_(CGC_VERSION_MINOR) "." CGC_VERSION_STRING_(CGC_VERSION_PATCH)
#define CGC_VERSION_NUMBER (CGC_VERSION_MAJOR * 1000000 + CGC_VERSION_MINOR * 1000 + CGC_VERSION_PATCH)

typedef ptrdiff_t cgc_ssize_t;
typedef struct cgc_object cgc_object;
typedef struct cgc_type cgc_type;
typedef struct cgc_heap cgc_heap;

/* ---- Version --------------------------------------------------------- */

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH"
 * (CGC_VERSION of the header it was built from): a static string. */
CGC_API const char *cgc_version(void);
/* The same as a number, MAJOR * 1000000 + MINOR * 1000 + PATCH
 * (CGC_VERSION_NUMBER of the header it was built from). */
CGC_API int cgc_version_number(void);

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

/* The type of type objects (PyType_Type), and the root base type
 * (PyBaseObject_Type, "object"): tp_base of a type that names none. */
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

/* The kind of the error recorded on the current heap and not yet cleared
 * (the last one), or CGC_ERR_NONE. */
CGC_API cgc_error_kind cgc_error_occurred(void);
/* Its message, which names the function, the object's type and what is
 * wrong; "" when there is none. The string is valid until the next error or
 * cgc_error_clear. */
CGC_API const char *cgc_error_message(void);
/* Forgets the recorded error (cgc_error_count keeps counting). */
CGC_API void cgc_error_clear(void);
/* Records an error as cyclegc does, and passes it to the error hook: for
 * types that report their own (a tp_clear that fails, ...). `message` is
 * copied. */
CGC_API void cgc_error_set(cgc_error_kind kind, const char *message);
/* Sets the function every recorded error is passed to, with `context`, on
 * the current heap; hook == NULL restores the default (print
 * "cyclegc: <message>" to stderr). Returns the previous hook. */
CGC_API cgc_error_hook cgc_set_error_hook(cgc_error_hook hook, void *context);
/* How many errors of `kind` were recorded on the current heap since it was
 * made (cleared or not); 0 for a kind out of range. */
CGC_API uint64_t cgc_error_count(cgc_error_kind kind);
/* The error hook in use (the default's address if none was set) and, when
 * `context` is not NULL, its context; for a wrapper that must free the
 * context of the hook it replaces. */
CGC_API cgc_error_hook cgc_get_error_hook(void **context);

/* ---- Heaps ----------------------------------------------------------- */

/* A new, empty heap (its own generations, thresholds, error state, hooks):
 * make it current with cgc_heap_set_current in the thread that uses it.
 * Returns NULL if out of memory (nothing is recorded: there is no heap to
 * record it on). */
CGC_API cgc_heap *cgc_heap_new(void);
/* Runs final collections on `heap` (as cgc_finalize), then frees its state.
 * NULL does nothing. Errors (CGC_ERR_MISUSE, heap kept): the default heap;
 * a heap that still has live GC objects after the collections (its state
 * is kept, leaked, so that they stay valid). */
CGC_API void cgc_heap_delete(cgc_heap *heap);
/* A new, empty shared heap: any thread attached to it (made it current with
 * cgc_heap_set_current) may reference, release, track, untrack and collect
 * its objects. See "Shared heaps" below. Returns NULL if out of memory. */
CGC_API cgc_heap *cgc_heap_new_shared(void);
/* 1 if `heap` was made by cgc_heap_new_shared, else 0 (NULL: 0). */
CGC_API int cgc_heap_is_shared(cgc_heap *heap);
/* Moves an isolated graph from a confined heap to another confined heap
 * `to`, so that another thread may use it: `root` and everything it reaches
 * through tp_traverse in its heap (and the non-GC objects it reaches outside
 * every heap), which nothing outside the graph may refer to but the caller's
 * one reference to `root`. Objects of a shared heap it reaches stay where they
 * are. Pages move whole: the graph's pages must hold nothing else, so build
 * it while a heap of its own is current. Call it on the thread that owns
 * root's heap; hand `root` to `to`'s thread through a synchronising queue
 * (a mutex), after which only that thread uses the graph (docs/gc.md,
 * "Transfer"). Returns 0, or -1 with CGC_ERR_MISUSE recorded (nothing moved):
 * a reference from outside into the graph (naming the object, its type and
 * a tracked referrer if there is one), an object of another confined heap
 * reached, an object with weak references or a weak reference in it, an
 * object outside the graph on one of its pages, `to` the root's heap, a
 * shared heap or not a heap (deleted), root's heap shared or collecting, the
 * call made by another thread than root's heap's; CGC_ERR_MEMORY. */
CGC_API int cgc_heap_transfer(cgc_object *root, cgc_heap *to);
/* The calling thread's current heap (its own heap unless set: see Threading). */
CGC_API cgc_heap *cgc_heap_current(void);
/* Sets the calling thread's current heap, which the thread then owns (NULL:
 * the thread's own heap, see Threading above). */
CGC_API void cgc_heap_set_current(cgc_heap *heap);

/* ---- Shared heaps ---------------------------------------------------- */

/* Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS: a thread attached to a
 * shared heap detaches before a call that may block (I/O, a lock, a join),
 * so that a collection need not wait for it, and attaches again after
 * (waiting, if a collection runs, until it ends). A detached thread must
 * not touch the heap's objects: a collection may be running. On a confined
 * heap, or a thread attached to no shared heap, both do nothing. */
CGC_API void cgc_thread_detach(void);
CGC_API void cgc_thread_attach(void);

/* ---- Reference counting ---------------------------------------------- */

/* Frees an object whose reference count dropped to zero (cgc_decref calls
 * it): untracks it, runs its type's tp_dealloc (or the C++ destructor) and
 * clears its weak references. Deep chains of deallocations are flattened
 * (a trashcan for every GC object), so freeing a long list does not
 * recurse. Errors: a count below zero is CGC_ERR_CORRUPTION (the object is
 * not freed again). */
CGC_API void cgc_dealloc(cgc_object *op);

/* The count word. An object of a confined heap counts in ob_refcnt, a
 * plain integer. An object of a shared heap has a negative ob_refcnt (bit
 * 63 set): bits 32..62 hold its owner's thread tag (the allocating
 * thread's, never 0; 0 once the object is "merged": it has no owner any
 * more), bits 0..31 the owner's local count. The owner counts there with
 * plain loads and stores; every other thread (and every thread once the
 * object is merged) counts atomically in the object's shared count, which
 * the library keeps beside the object. The real count is the sum: read it
 * with cgc_refcount (Py_REFCNT), never from ob_refcnt. docs/gc.md, "Shared
 * heaps". */
#if defined(__GNUC__)
#  define CGC_LIKELY(x) __builtin_expect(!!(x), 1)
#  define CGC_COUNT_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#  define CGC_COUNT_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#  define CGC_TLS_MODEL __attribute__((tls_model("initial-exec")))
#else
#  define CGC_LIKELY(x) (x)
#  define CGC_COUNT_LOAD(p) (*(p))
#  define CGC_COUNT_STORE(p, v) (*(p) = (v))
#  define CGC_TLS_MODEL
#endif
#if defined(__cplusplus) && __cplusplus >= 202002L
#  define CGC_THREAD_LOCAL thread_local constinit
#elif defined(__cplusplus) || !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#  define CGC_THREAD_LOCAL __thread
#else
#  define CGC_THREAD_LOCAL _Thread_local
#endif
/* The upper 32 bits of the count word of the objects the calling thread
 * owns (bit 31 set, then its tag, even); 0 until it allocates in a shared
 * heap. Internal: read by the inline paths below. */
CGC_DATA extern CGC_THREAD_LOCAL uint32_t cgc_thread_count_tag CGC_TLS_MODEL;
#define CGC_COUNT_OWNED_HERE(c) ((uint32_t)((uint64_t)(c) >> 32) == cgc_thread_count_tag)

/* The out-of-line paths of cgc_incref and cgc_decref: a shared-heap object
 * counted by a thread that does not own it (or a merged one), its owner's
 * local count reaching zero, a count below zero. Internal. */
CGC_API void cgc_incref_shared(cgc_object *op);
CGC_API void cgc_decref_slow(cgc_object *op);
/* Py_REFCNT: the object's reference count (a shared-heap object's local and
 * shared counts summed: exact when no other thread counts meanwhile). */
CGC_API cgc_ssize_t cgc_refcount_shared(const cgc_object *op);
static inline cgc_ssize_t cgc_refcount(const cgc_object *op) {
    cgc_ssize_t c = CGC_COUNT_LOAD(&op->ob_refcnt);
    return c >= 0 ? c : cgc_refcount_shared(op);
}
/* Py_SET_REFCNT: sets the count. On a shared-heap object the owner's local
 * count becomes `n` and the shared count 0 (a merged object: the shared
 * count becomes `n`); only the object's owner, or a thread that knows no
 * other thread uses the object, may call it. Errors: CGC_ERR_MISUSE for a
 * negative `n` or one above 2^32 - 1 on a shared-heap object. */
CGC_API void cgc_set_refcount_shared(cgc_object *op, cgc_ssize_t n);
static inline void cgc_set_refcount(cgc_object *op, cgc_ssize_t n) {
    if (CGC_COUNT_LOAD(&op->ob_refcnt) >= 0 && n >= 0)
        op->ob_refcnt = n;
    else
        cgc_set_refcount_shared(op, n);
}

/* Py_INCREF, Py_DECREF and their NULL-tolerant versions. A confined
 * object's count is tested and stored as before (one predictable branch
 * more); the owner of a shared-heap object stores its local count, with no
 * atomic instruction, through the same store. Its decrement tests the tag
 * and a local count above 1 in one compare: the word minus 2 keeps the tag
 * unless the local count is below 2 (tags are even, so the tag minus 1 is
 * never another thread's). */
static inline void cgc_incref(cgc_object *op) {
    cgc_ssize_t c = CGC_COUNT_LOAD(&op->ob_refcnt);
    if (CGC_LIKELY(c >= 0) || CGC_COUNT_OWNED_HERE(c))
        CGC_COUNT_STORE(&op->ob_refcnt, c + 1);
    else
        cgc_incref_shared(op);
}
static inline void cgc_decref(cgc_object *op) {
    cgc_ssize_t c = CGC_COUNT_LOAD(&op->ob_refcnt);
    if (CGC_LIKELY(c > 1) || CGC_COUNT_OWNED_HERE((uint64_t)c - 2)) {
        CGC_COUNT_STORE(&op->ob_refcnt, c - 1);
    } else if (c == 1) {  /* (not through cgc_decref_slow: a call less per death) */
        op->ob_refcnt = 0;
        cgc_dealloc(op);
    } else {
        cgc_decref_slow(op);
    }
}
static inline void cgc_xincref(cgc_object *op) { if (op) cgc_incref(op); }
static inline void cgc_xdecref(cgc_object *op) { if (op) cgc_decref(op); }

/* ---- Allocation and tracking ----------------------------------------- */

/* PyObject_New / PyObject_NewVar: memory for an object of `type` (with
 * `nitems` items of tp_itemsize), zero-filled, reference count 1, ob_type
 * set (and ob_size); a heap type gets a reference. A GC type's object is
 * placed in a GC page, untracked. The type is readied first if it is not.
 * Returns NULL on error. Errors: CGC_ERR_MISUSE (NULL type), CGC_ERR_TYPE (a
 * type cgc_type_ready refuses), CGC_ERR_VALUE (negative nitems),
 * CGC_ERR_MEMORY. May run an automatic collection first. */
CGC_API cgc_object *cgc_object_new(cgc_type *type);
CGC_API cgc_object *cgc_object_new_var(cgc_type *type, cgc_ssize_t nitems);
/* PyObject_Del: frees the memory of an object from cgc_object_new* (GC or
 * not: the object's place tells), without running anything; a tracked GC
 * object is untracked first. NULL does nothing. Errors for GC objects
 * (CGC_ERR_MISUSE, nothing freed): as cgc_gc_del. */
CGC_API void cgc_object_del(void *op);
/* PyObject_GC_New / PyObject_GC_NewVar: cgc_object_new* for GC types
 * (CGC_TPFLAGS_HAVE_GC); the object is untracked: track it with
 * cgc_gc_track once its fields are set. Returns NULL on error, as
 * cgc_object_new, and CGC_ERR_MISUSE for a type without CGC_TPFLAGS_HAVE_GC.
 * May run an automatic collection first. A GC object (and cgc_gc_raw_alloc's
 * memory) has at most 4 GiB less 16 bytes: a larger one is refused (NULL,
 * CGC_ERR_MEMORY, "larger than the 4 GiB a GC object may have") even where
 * malloc would serve it. */
CGC_API cgc_object *cgc_gc_new(cgc_type *type);
CGC_API cgc_object *cgc_gc_new_var(cgc_type *type, cgc_ssize_t nitems);
/* PyObject_GC_Resize: gives an untracked variable-size GC object room for
 * `nitems` items and sets ob_size. Returns the object, which may have moved
 * (the old pointer is then invalid), or NULL with the object unchanged.
 * Errors: CGC_ERR_MISUSE (NULL, not a GC object, freed, fixed-size type,
 * tracked), CGC_ERR_VALUE (negative nitems), CGC_ERR_MEMORY. */
CGC_API cgc_var_object *cgc_gc_resize(cgc_var_object *op, cgc_ssize_t nitems);
/* PyObject_GC_Del: frees a GC object's memory (a tp_free; it untracks the
 * object if the dealloc did not). NULL does nothing. Errors
 * (CGC_ERR_MISUSE, nothing freed): an object already freed, one freed from
 * inside a tp_traverse, or one the collector holds a reference to while its
 * tp_clear or finalizer runs. */
CGC_API void cgc_gc_del(void *op);
/* PyObject_GC_Track: the collector considers the object from now on (it
 * joins the youngest generation). Its fields must be valid: tp_traverse may
 * run at the next allocation. Errors (CGC_ERR_MISUSE, not tracked): NULL,
 * not a GC object, freed, already tracked, or called from a tp_traverse. */
CGC_API void cgc_gc_track(void *op);
/* PyObject_GC_UnTrack: the collector no longer considers the object (a
 * tp_dealloc's first step). Untracking an untracked object does nothing.
 * Errors (CGC_ERR_MISUSE, ignored): not a GC object, or called from a
 * tp_traverse. */
CGC_API void cgc_gc_untrack(void *op);
/* PyObject_IS_GC: 1 if the object is a GC object (its type has
 * CGC_TPFLAGS_HAVE_GC and, if it has one, tp_is_gc says so), else 0 (also
 * for NULL). */
CGC_API int cgc_is_gc(cgc_object *op);
/* PyObject_GC_IsTracked: 1 if the object is a tracked GC object, else 0. */
CGC_API int cgc_gc_is_tracked(cgc_object *op);
/* PyObject_GC_IsFinalized: 1 if the object's tp_finalize has run (it runs
 * once per object), else 0 (also for objects that are not GC objects). */
CGC_API int cgc_gc_is_finalized(cgc_object *op);

/* PyMem_Malloc, PyMem_Calloc, PyMem_Realloc: raw memory (no object
 * header), as malloc, calloc and realloc (a request of 0 bytes returns a
 * unique pointer, as CPython's do). Return NULL if out of memory (nothing is
 * recorded: the caller reports it, as with PyErr_NoMemory). */
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
/* PyMem_Free, PyObject_Free: frees raw memory from cgc_malloc and company,
 * or (Python 2.0's PyObject_FREE) an untracked GC object given by its
 * pointer or its collector header's. NULL does nothing. */
CGC_API void cgc_free(void *memory);

/* The collector's metadata of a GC object (PyGC_Head): 8 bytes, kept in
 * the object's page beside the object, not in front of it. Opaque: only
 * its address is of use, to the Python 2.0 names (PyObject_AS_GC,
 * PyObject_FROM_GC), which convert between the two pointers. */
typedef struct cgc_gc_head {
    uint64_t opaque;
} cgc_gc_head;
#define CGC_GC_HEAD_SIZE ((cgc_ssize_t)sizeof(cgc_gc_head))
/* PyObject_AS_GC: the metadata of a GC object. Returns NULL (recorded:
 * CGC_ERR_MISUSE) for an object that is not a GC object. */
CGC_API cgc_gc_head *cgc_gc_head_of(cgc_object *op);
/* PyObject_FROM_GC: the object whose metadata `head` is. */
CGC_API cgc_object *cgc_object_of_gc_head(cgc_gc_head *head);

/* ---- Types ----------------------------------------------------------- */

/* PyType_Ready: checks a static type and fills in what it leaves out
 * (tp_base: object; inherited slots; tp_alloc, tp_free and tp_dealloc
 * defaults), then sets CGC_TPFLAGS_READY. Readies its base first. Returns 0,
 * or -1 (recorded: CGC_ERR_MISUSE for NULL, CGC_ERR_TYPE for an invalid
 * type: sizes, a base that is not a base type, a GC type without
 * tp_traverse, ...). Readying a ready type does nothing and returns 0. */
CGC_API int cgc_type_ready(cgc_type *type);
/* PyType_GenericAlloc: the default tp_alloc, cgc_object_new_var (GC types
 * get one spare item, as in CPython; the object is tracked, as CPython's
 * is). Returns NULL on error, as cgc_object_new. */
CGC_API cgc_object *cgc_type_generic_alloc(cgc_type *type, cgc_ssize_t nitems);
/* PyType_GenericNew: type->tp_alloc(type, 0) (the type readied first); the
 * arguments are ignored. NULL for a NULL type or on tp_alloc's error. */
CGC_API cgc_object *cgc_type_generic_new(cgc_type *type, cgc_object *args, cgc_object *kwds);
/* The default tp_dealloc: untrack, finalize (tp_finalize, which may
 * resurrect the object: then it stops), tp_clear, clear weak references,
 * tp_free, and release the heap type's reference. */
CGC_API void cgc_default_dealloc(cgc_object *self);
/* PyObject_CallFinalizerFromDealloc: runs tp_finalize from a tp_dealloc,
 * once per object. Returns -1 if the finalizer resurrected the object (the
 * dealloc must then return at once), 0 otherwise. Errors: CGC_ERR_MISUSE if
 * the reference count is not 0 (nothing runs; 0 returned), or if the object
 * was freed already (-1 returned). */
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

/* PyType_FromSpecWithBases: creates a heap type (itself a tracked GC
 * object, which its instances hold a reference to) from a spec; its name
 * and doc are copied. `bases` is NULL, or a single type object: cyclegc
 * types have single inheritance. Returns a new reference, or NULL
 * (recorded: CGC_ERR_MISUSE for a NULL spec or name; CGC_ERR_TYPE for a
 * base that is not a type, a slot id cyclegc does not support, or what
 * cgc_type_ready refuses; CGC_ERR_MEMORY). */
CGC_API cgc_object *cgc_type_from_spec(cgc_type_spec *spec, cgc_object *bases);
/* PyType_GetSlot: the function or value in slot `slot` (a CGC_tp_* id) of
 * a type, NULL if it has none. Errors (NULL returned): CGC_ERR_MISUSE for a
 * NULL type, CGC_ERR_VALUE for an invalid slot id. */
CGC_API void *cgc_type_get_slot(cgc_type *type, int slot);

/* ---- Collection ------------------------------------------------------ */

#define CGC_NUM_GENERATIONS 3

/* gc.collect(generation): collects generations 0..`generation` (2: a full
 * collection) whether or not automatic collection is enabled. Returns the
 * number of unreachable objects found (collected + uncollectable), 0 if a
 * collection is already running (from a finalizer or callback: nothing is
 * done), -1 for an invalid generation (recorded: CGC_ERR_VALUE). */
CGC_API cgc_ssize_t cgc_collect(int generation);
/* PyGC_Collect: a full collection if automatic collection is enabled (and
 * none is running); returns what cgc_collect returns, or 0. */
CGC_API cgc_ssize_t cgc_collect_if_enabled(void);
/* PyGC_Enable, PyGC_Disable (gc.enable, gc.disable): turn automatic
 * collection on or off on the current heap; return the previous state
 * (1 enabled, 0 disabled). */
CGC_API int cgc_enable(void);
CGC_API int cgc_disable(void);
/* PyGC_IsEnabled: 1 if automatic collection is enabled, else 0. */
CGC_API int cgc_is_enabled(void);
/* 1 while a collection runs on the current heap (in finalizers, weak
 * reference callbacks, tp_clear, collection callbacks), else 0. */
CGC_API int cgc_is_collecting(void);

/* gc.set_threshold: generation 0's threshold is the number of new GC
 * allocations (minus deallocations) that triggers a young collection; 1's
 * and 2's count collections of the generation below. 0 for generation 0
 * turns automatic collection off. Errors (CGC_ERR_VALUE, ignored): a
 * generation out of 0..2 or a negative threshold. */
CGC_API void cgc_set_threshold(int generation, cgc_ssize_t threshold);
/* gc.get_threshold: the threshold last set for `generation`; -1 for a
 * generation out of 0..2. */
CGC_API cgc_ssize_t cgc_get_threshold(int generation);
/* gc.get_count: the count compared with the threshold of `generation`; -1
 * for a generation out of 0..2. */
CGC_API cgc_ssize_t cgc_get_count(int generation);

typedef struct cgc_generation_stats {
    uint64_t collections;   /* collections of this generation */
    uint64_t collected;     /* objects freed by them */
    uint64_t uncollectable; /* unreachable objects they could not free */
    uint64_t examined;      /* objects they examined (candidates) */
    uint64_t total_ns;      /* time spent in them */
    uint64_t max_pause_ns;  /* the longest one */
} cgc_generation_stats;

/* gc.get_stats: the statistics of `generation` (0..2) since the heap was
 * made, into *out (all zero for a generation out of range; NULL out does
 * nothing). */
CGC_API void cgc_get_stats(int generation, cgc_generation_stats *out);

/* ---- Incremental collection and pauses ---------------------------------- */

/* Sets the current heap's pause budget, in nanoseconds. 0 (the default, or
 * the CYCLEGC_PAUSE_BUDGET_NS environment variable read when the heap is
 * made) keeps stop-the-world collections. A positive value makes the
 * automatic full collections incremental: a cycle runs in slices of about
 * `ns` each, one at each automatic collection point (where young
 * collections run), doing at least as much work as the allocations since
 * the last slice call for, so that a cycle over N objects ends before about
 * N/3 more are allocated (later when that work does not fit in 4/5 of the
 * budget: the rest is done by slices that come sooner). No slice runs while automatic collection is
 * disabled. The semantics do not change: nothing reachable is freed, and
 * the garbage that existed when a cycle began is freed when it ends. */
CGC_API void cgc_set_pause_budget(uint64_t ns);
/* The current heap's pause budget (0: stop-the-world). */
CGC_API uint64_t cgc_get_pause_budget(void);
/* Does about `ns` of incremental collection work now (0: until the cycle
 * ends), whatever the budget, for a program with idle time. Starts a cycle
 * if none runs, which examines every tracked object (generations 0 and 1
 * collected first, or taken in a slice at a time if that would outlast
 * `ns`). Returns 1 if a cycle finished (its
 * garbage is freed), 0 if work remains, -1 if called during a collection
 * (recorded: CGC_ERR_MISUSE). cgc_collect(2) during a cycle ends it: its
 * stop-the-world collection does the cycle's work at once. */
CGC_API int cgc_collect_slice(uint64_t ns);

/* Pause statistics of the current heap: every collection (each young one,
 * each stop-the-world full one) and every slice of an incremental cycle is
 * a pause. Percentiles are read from a log-linear histogram (one bucket
 * below 1024 ns, then 8 per power of two): each is an upper bound at most
 * 12.5% above the true value, and never above max_ns. */
typedef struct cgc_pause_stats {
    uint64_t count;    /* pauses recorded */
    uint64_t total_ns; /* their total */
    uint64_t max_ns;   /* the longest */
    uint64_t p50_ns;   /* median */
    uint64_t p99_ns;
    uint64_t p999_ns;  /* 99.9th percentile */
    uint64_t not_due;  /* stops only (cgc_get_stop_stats): those that found no
                          automatic collection due once every thread's count
                          was added (0 for pauses) */
} cgc_pause_stats;
/* Fills *out with the current heap's pause statistics since it was made or
 * last reset (NULL out does nothing). */
CGC_API void cgc_get_pause_stats(cgc_pause_stats *out);
/* Forgets the pauses recorded so far (a benchmark after its warm-up), and
 * the stops below. */
CGC_API void cgc_reset_pause_stats(void);
/* A shared heap's stops: for each time a thread stopped the world (a
 * collection, a walk of the gc module), the time from its request to every
 * other attached thread parked, in the same form (all zero on a confined
 * heap). The pause statistics above count from the world stopped on. */
CGC_API void cgc_get_stop_stats(cgc_pause_stats *out);
/* What a pause was, for a pause observer. */
typedef enum cgc_pause_kind {
    CGC_PAUSE_YOUNG = 0,      /* a collection of generation 0 or 1 */
    CGC_PAUSE_FULL = 1,       /* a stop-the-world full collection */
    CGC_PAUSE_SLICE = 2,      /* a slice of an incremental cycle */
    CGC_PAUSE_LAST_SLICE = 3  /* the slice that ended its cycle */
} cgc_pause_kind;
typedef void (*cgc_pause_observer)(cgc_pause_kind kind, uint64_t ns, void *context);
/* Calls `observer` at the end of each pause the statistics above record,
 * with its kind and length (a log of every pause: bench/programs/pauses.cpp).
 * It runs inside the pause's collection point: it should only record (no GC
 * object made or released; a collection asked from it returns 0, as from a
 * collection callback). NULL stops the calls. */
CGC_API void cgc_set_pause_observer(cgc_pause_observer observer, void *context);

/* When automatic collections run. CGC_AUTO_AT_ALLOCATION (the default, as in
 * CPython <= 3.11): inside the allocation that crosses the threshold.
 * CGC_AUTO_AT_SAFEPOINT (as CPython >= 3.12 at its eval breaker): the
 * allocation only marks a collection as due; it runs at the next
 * cgc_safepoint() call. */
typedef enum cgc_auto_mode { CGC_AUTO_AT_ALLOCATION = 0, CGC_AUTO_AT_SAFEPOINT = 1 } cgc_auto_mode;
/* Sets when the current heap's automatic collections run. */
CGC_API void cgc_set_auto_mode(cgc_auto_mode mode);
/* Runs the automatic collection that is due, if any (none runs while a
 * collection is running); returns what it returned (as cgc_collect), or 0. */
CGC_API cgc_ssize_t cgc_safepoint(void);


/* ---- The gc module's surface ------------------------------------------ */

/* Debug flags (gc.DEBUG_*), CPython's values. Output goes to the log sink. */
#define CGC_DEBUG_STATS 1
#define CGC_DEBUG_COLLECTABLE 2
#define CGC_DEBUG_UNCOLLECTABLE 4
#define CGC_DEBUG_SAVEALL 32
#define CGC_DEBUG_LEAK (CGC_DEBUG_COLLECTABLE | CGC_DEBUG_UNCOLLECTABLE | CGC_DEBUG_SAVEALL)
/* gc.set_debug, gc.get_debug: the current heap's debug flags. */
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
/* Adds a callback, called with phase "start" and "stop" around every
 * collection of the current heap, in the order added. Returns 0, or -1
 * (recorded: CGC_ERR_MISUSE for NULL, CGC_ERR_MEMORY). */
CGC_API int cgc_add_collection_callback(cgc_collection_callback callback, void *context);
/* Removes the first registration of that (callback, context) pair.
 * Returns 0, or -1 if it is not registered (nothing recorded). */
CGC_API int cgc_remove_collection_callback(cgc_collection_callback callback, void *context);
/* (A callback removed while the callbacks run, by itself or by another, is
 * not called again, even in the same phase; one added runs from the next
 * phase on.) */

/* gc.freeze(): move every tracked object to a permanent generation that
 * collections ignore; gc.unfreeze() moves them back to the oldest one.
 * Errors (CGC_ERR_MISUSE, ignored): called during a collection. */
CGC_API void cgc_freeze(void);
CGC_API void cgc_unfreeze(void);
/* gc.get_freeze_count(): the number of objects in the permanent generation. */
CGC_API cgc_ssize_t cgc_get_freeze_count(void);

/* A list of new references, returned by the introspection functions. */
typedef struct cgc_object_list {
    cgc_object **items;
    cgc_ssize_t count;
} cgc_object_list;
/* Drops the list's references and frees its array; the list is left empty.
 * NULL does nothing. */
CGC_API void cgc_object_list_release(cgc_object_list *list);

/* The functions that fill a cgc_object_list return 0, or -1 (recorded:
 * CGC_ERR_MISUSE for a NULL out or objects, CGC_ERR_VALUE for an invalid
 * generation or count, CGC_ERR_MEMORY). Release the list with
 * cgc_object_list_release. */
/* gc.get_objects(generation): tracked objects of one generation (0..2), or
 * of all of them and the permanent one (-1). */
CGC_API int cgc_get_objects(int generation, cgc_object_list *out);
/* gc.get_referrers: tracked objects whose tp_traverse visits any of
 * `objects` (`count` of them). */
CGC_API int cgc_get_referrers(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out);
/* gc.get_referents: what the tp_traverse of each of `objects` visits. */
CGC_API int cgc_get_referents(cgc_object *const *objects, cgc_ssize_t count, cgc_object_list *out);
/* Calls `visitor` on every tracked object (permanent generation included),
 * with automatic collection off, until it returns 0. */
typedef int (*cgc_object_visitor)(cgc_object *object, void *arg);
CGC_API void cgc_visit_objects(cgc_object_visitor visitor, void *arg);

/* gc.garbage: uncollectable objects (legacy tp_del finalizers in cycles)
 * and, with CGC_DEBUG_SAVEALL, every unreachable object. The list holds a
 * reference to each. */
/* A copy of gc.garbage (new references): 0, or -1 as cgc_get_objects. */
CGC_API int cgc_get_garbage(cgc_object_list *out);
/* len(gc.garbage). */
CGC_API cgc_ssize_t cgc_garbage_count(void);
/* Empties gc.garbage, dropping its references (which may free objects). */
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
/* A weak reference to `object` (PyWeakref_NewRef with a C callback):
 * returns a new reference to a weak reference object, or NULL (recorded:
 * CGC_ERR_MISUSE for NULL, CGC_ERR_TYPE for an object that is not a GC
 * object, CGC_ERR_MEMORY). Without a callback, an existing callback-less
 * weak reference to the object may be returned. */
CGC_API cgc_object *cgc_weakref_new(cgc_object *object, cgc_weakref_callback callback, void *context);
/* The same, with `destroy(context)` called when the weak reference object
 * itself is freed (for a context the weak reference owns; if the function
 * fails, the context is still the caller's). */
CGC_API cgc_object *cgc_weakref_new_owning(cgc_object *object, cgc_weakref_callback callback,
                                           void *context, void (*destroy)(void *context));
/* Returns a new reference to the referent, or NULL if it is dead (or if
 * `weakref` is not a weak reference: recorded, CGC_ERR_TYPE). */
CGC_API cgc_object *cgc_weakref_get(cgc_object *weakref);
/* PyWeakref_GetRef: 1 and a new reference in *out, 0 and NULL if the
 * referent is dead, -1 and NULL if `weakref` is not a weak reference
 * (recorded: CGC_ERR_TYPE). */
CGC_API int cgc_weakref_get_ref(cgc_object *weakref, cgc_object **out);
/* PyWeakref_Check: 1 if `object` is a weak reference object, else 0. */
CGC_API int cgc_weakref_check(cgc_object *object);
/* PyObject_ClearWeakRefs: clears every weak reference to `object` and runs
 * their callbacks (cgc_dealloc and the collector do it for GC objects).
 * NULL does nothing. */
CGC_API void cgc_clear_weakrefs(cgc_object *object);
/* weakref.getweakrefcount: the number of live weak references to `object`. */
CGC_API cgc_ssize_t cgc_weakref_count(cgc_object *object);

/* Errors inside finalizers, callbacks and tp_clear have nowhere to go: they
 * are reported as CGC_ERR_UNRAISABLE ("unraisable", as in CPython):
 * passed to the unraisable hook with the object concerned (or NULL). */
CGC_API void cgc_report_unraisable(const char *message, cgc_object *object);
/* Where unraisable errors go; NULL restores the default (the error hook,
 * which prints to stderr). Returns the previous hook. */
typedef void (*cgc_unraisable_hook)(const char *message, cgc_object *object, void *context);
CGC_API cgc_unraisable_hook cgc_set_unraisable_hook(cgc_unraisable_hook hook, void *context);
/* The unraisable hook in use (NULL: the default) and, when `context` is not
 * NULL, its context. */
CGC_API cgc_unraisable_hook cgc_get_unraisable_hook(void **context);

/* Memory: empty GC pages are kept for reuse (up to 32 MiB in the process)
 * instead of being given back to the system at once; this gives their
 * memory back now. Returns the number of bytes given back. */
CGC_API size_t cgc_release_free_memory(void);

/* Py_Initialize: sets up the current heap (optional: the first use does). */
CGC_API void cgc_initialize(void);
/* Py_FinalizeEx: runs full collections on the current heap until one finds
 * nothing (at most 16), then reports what gc.garbage holds. Objects still
 * referenced stay valid. Returns 0, or -1 if called during a collection
 * (recorded: CGC_ERR_MISUSE). */
CGC_API int cgc_finalize(void);

/* ==== For the C++ API and for tests: not for applications ================
 *
 * What <cyclegc/cyclegc.hpp> is built on (objects that embed their own C
 * part, cyclegc::object, allocated before their constructor runs), and
 * fault injection for tests. Stable only together with the C++ headers of
 * the same version. */

/* Memory in a GC page for a C++ object (cyclegc::object) whose C part
 * (cgc_object) lies inside it, after its vtable pointer: counts as a GC
 * allocation (and may collect, before the memory exists). The memory is not
 * zero-filled: the constructor initializes it. Returns NULL on error
 * (recorded: CGC_ERR_VALUE for an alignment above 16, CGC_ERR_MEMORY). */
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

/* Fault injection, for testing how the library survives running out of
 * memory: from now on, the `nth` allocation the library makes for itself on
 * the current heap (a GC page, the growth of an internal array: young
 * generations, mark stack, unreachable set, garbage list, callback queues)
 * fails once; 0 disarms. Returns how many such allocations the heap has made
 * so far. */
#define CGC_HAVE_DEBUG_FAIL_ALLOCATIONS 1
CGC_API uint64_t cgc_debug_fail_allocations(uint64_t nth);

#ifdef __cplusplus
}
#endif
#endif /* CYCLEGC_H */
