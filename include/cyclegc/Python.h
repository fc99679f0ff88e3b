/* cyclegc's compat header: the documented CPython C API for container types
 * and cyclic garbage collection, under its documented names.
 *
 * Everything here is a typedef, a macro or a static inline function over the
 * native API of <cyclegc/cyclegc.h>: the library exports no Py* symbol, so
 * cyclegc can share a process with an embedded CPython (do not include both
 * this header and CPython's Python.h in one translation unit).
 *
 * Semantics are CPython 3.9+ (heap-type traverse visits the type): see
 * Py_Version / PY_VERSION_HEX.
 *
 * Reference: each name means what CPython's documentation says; the cgc_*
 * function it maps to is documented in <cyclegc/cyclegc.h>, with its errors
 * (cyclegc records an error instead of raising an exception: PyErr_Occurred
 * and cgc_error_message below) and where it differs from CPython. */
#ifndef CYCLEGC_PYTHON_H
#define CYCLEGC_PYTHON_H

#include <cyclegc/cyclegc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ---------------------------------------------------------- */
#define PY_MAJOR_VERSION 3
#define PY_MINOR_VERSION 12
#define PY_MICRO_VERSION 0
#define PY_RELEASE_LEVEL 0xF
#define PY_RELEASE_SERIAL 0
#define PY_VERSION_HEX 0x030C00F0
#define PY_VERSION "3.12.0 (cyclegc)"
#define Py_Version ((unsigned long)PY_VERSION_HEX)

/* ---- Basic types ------------------------------------------------------ */
typedef cgc_ssize_t Py_ssize_t;
typedef Py_ssize_t Py_hash_t;
#define PY_SSIZE_T_MAX PTRDIFF_MAX
#define PY_SSIZE_T_MIN PTRDIFF_MIN

typedef cgc_object PyObject;
typedef cgc_var_object PyVarObject;
typedef cgc_type PyTypeObject;
typedef cgc_gc_head PyGC_Head;

typedef cgc_visitproc visitproc;
typedef cgc_traverseproc traverseproc;
typedef cgc_inquiry inquiry;
typedef cgc_destructor destructor;
typedef cgc_freefunc freefunc;
typedef cgc_allocfunc allocfunc;
typedef cgc_newfunc newfunc;
typedef cgc_initproc initproc;
typedef cgc_unaryfunc reprfunc;
typedef cgc_unaryfunc unaryfunc;
typedef cgc_unaryfunc getiterfunc;
typedef cgc_unaryfunc iternextfunc;
typedef cgc_binaryfunc binaryfunc;
typedef cgc_binaryfunc getattrofunc;
typedef cgc_ternaryfunc ternaryfunc;
typedef cgc_ternaryfunc descrgetfunc;
typedef cgc_hashfunc hashfunc;
typedef cgc_richcmpfunc richcmpfunc;
typedef cgc_getattrfunc getattrfunc;
typedef cgc_setattrfunc setattrfunc;
typedef cgc_setattrofunc setattrofunc;
typedef cgc_descrsetfunc descrsetfunc;
typedef cgc_vectorcallfunc vectorcallfunc;

#define PyObject_HEAD PyObject ob_base;
#define PyObject_VAR_HEAD PyVarObject ob_base;
#define PyObject_HEAD_INIT(type) { 1, (type) },
#define PyVarObject_HEAD_INIT(type, size) { { 1, (type) }, (size) },

#define PyType_Type cgc_type_type
#define PyBaseObject_Type cgc_base_object_type

/* ---- Type flags ------------------------------------------------------- */
#define Py_TPFLAGS_HAVE_FINALIZE CGC_TPFLAGS_HAVE_FINALIZE
#define Py_TPFLAGS_HEAPTYPE CGC_TPFLAGS_HEAPTYPE
#define Py_TPFLAGS_BASETYPE CGC_TPFLAGS_BASETYPE
#define Py_TPFLAGS_READY CGC_TPFLAGS_READY
#define Py_TPFLAGS_READYING CGC_TPFLAGS_READYING
#define Py_TPFLAGS_HAVE_GC CGC_TPFLAGS_HAVE_GC
#define Py_TPFLAGS_DEFAULT CGC_TPFLAGS_DEFAULT

/* ---- Object macros ---------------------------------------------------- */
#define _PyObject_CAST(op) ((PyObject *)(op))
#define _PyVarObject_CAST(op) ((PyVarObject *)(op))

static inline PyTypeObject *Py_TYPE(const void *op) { return ((const PyObject *)op)->ob_type; }
#define Py_TYPE(op) Py_TYPE(_PyObject_CAST(op))
static inline Py_ssize_t Py_SIZE(const void *op) { return ((const PyVarObject *)op)->ob_size; }
#define Py_SIZE(op) Py_SIZE(_PyObject_CAST(op))
static inline Py_ssize_t Py_REFCNT(const void *op) { return cgc_refcount((const PyObject *)op); }
#define Py_REFCNT(op) Py_REFCNT(_PyObject_CAST(op))
static inline void Py_SET_TYPE(void *op, PyTypeObject *type) { ((PyObject *)op)->ob_type = type; }
static inline void Py_SET_SIZE(void *op, Py_ssize_t size) { ((PyVarObject *)op)->ob_size = size; }
static inline void Py_SET_REFCNT(void *op, Py_ssize_t n) { cgc_set_refcount((PyObject *)op, n); }
static inline int Py_IS_TYPE(const void *op, const PyTypeObject *type) {
    return ((const PyObject *)op)->ob_type == type;
}
#define Py_IS_TYPE(op, type) Py_IS_TYPE(_PyObject_CAST(op), (type))
#define Py_Is(x, y) ((x) == (y))

/* Doc strings (the tutorial's `.tp_doc = PyDoc_STR("...")`). */
#define PyDoc_STR(str) str
#define PyDoc_VAR(name) static const char name[]
#define PyDoc_STRVAR(name, str) PyDoc_VAR(name) = PyDoc_STR(str)

#define Py_INCREF(op) cgc_incref(_PyObject_CAST(op))
#define Py_DECREF(op) cgc_decref(_PyObject_CAST(op))
#define Py_XINCREF(op) cgc_xincref(_PyObject_CAST(op))
#define Py_XDECREF(op) cgc_xdecref(_PyObject_CAST(op))
static inline PyObject *Py_NewRef(PyObject *op) { cgc_incref(op); return op; }
static inline PyObject *Py_XNewRef(PyObject *op) { cgc_xincref(op); return op; }
#define Py_NewRef(op) Py_NewRef(_PyObject_CAST(op))
#define Py_XNewRef(op) Py_XNewRef(_PyObject_CAST(op))

/* Set the variable to NULL before the decref, so that a destructor that
 * looks at it again sees NULL. */
#define Py_CLEAR(op)                                   \
    do {                                               \
        PyObject *_py_tmp = _PyObject_CAST(op);        \
        if (_py_tmp != NULL) {                         \
            (op) = NULL;                               \
            Py_DECREF(_py_tmp);                        \
        }                                              \
    } while (0)
#define Py_SETREF(dst, src)                            \
    do {                                               \
        PyObject *_py_tmp = _PyObject_CAST(dst);       \
        (dst) = (src);                                 \
        Py_DECREF(_py_tmp);                            \
    } while (0)
#define Py_XSETREF(dst, src)                           \
    do {                                               \
        PyObject *_py_tmp = _PyObject_CAST(dst);       \
        (dst) = (src);                                 \
        Py_XDECREF(_py_tmp);                           \
    } while (0)

#define Py_VISIT(op)                                                  \
    do {                                                              \
        if (op) {                                                     \
            int vret = visit(_PyObject_CAST(op), arg);                \
            if (vret) return vret;                                    \
        }                                                             \
    } while (0)

/* Empty since CPython 3.14: every GC object gets cyclegc's trashcan. */
#define Py_TRASHCAN_BEGIN(op, dealloc)
#define Py_TRASHCAN_END
#define Py_TRASHCAN_SAFE_BEGIN(op)
#define Py_TRASHCAN_SAFE_END(op)

/* ---- Memory ----------------------------------------------------------- */
#define PyObject_Malloc cgc_malloc
#define PyObject_Calloc cgc_calloc
/* Raw memory, or a GC object resized through its header pointer or its own
 * pointer (Python 2.0: "for objects participating in GC, these macros deal
 * with PyGC_Head pointers"). */
#define PyObject_Realloc cgc_object_realloc
#define PyObject_Free cgc_free
#define PyMem_Malloc cgc_malloc
#define PyMem_Calloc cgc_calloc
#define PyMem_Realloc cgc_realloc
#define PyMem_Free cgc_free
#define PyObject_MALLOC cgc_malloc
#define PyObject_REALLOC cgc_object_realloc
#define PyObject_FREE cgc_free
/* Object-level free: knows whether the object has a collector header. */
#define PyObject_Del cgc_object_del
#define PyObject_DEL cgc_object_del

#define PyObject_New(type, typeobj) ((type *)cgc_object_new(typeobj))
#define PyObject_NewVar(type, typeobj, n) ((type *)cgc_object_new_var((typeobj), (n)))
#define PyObject_NEW PyObject_New
#define PyObject_NEW_VAR PyObject_NewVar

/* ---- Supporting cyclic garbage collection ----------------------------- */
#define PyObject_GC_New(type, typeobj) ((type *)cgc_gc_new(typeobj))
#define PyObject_GC_NewVar(type, typeobj, n) ((type *)cgc_gc_new_var((typeobj), (n)))
#define PyObject_GC_Resize(type, op, n) ((type *)cgc_gc_resize(_PyVarObject_CAST(op), (n)))
#define PyObject_GC_Track cgc_gc_track
#define PyObject_GC_UnTrack cgc_gc_untrack
#define PyObject_GC_Del cgc_gc_del
#define PyObject_IS_GC(op) cgc_is_gc(_PyObject_CAST(op))
#define PyObject_GC_IsTracked(op) cgc_gc_is_tracked(_PyObject_CAST(op))
#define PyObject_GC_IsFinalized(op) cgc_gc_is_finalized(_PyObject_CAST(op))

/* The macro versions the 2.x and 3.0-3.7 pages document ("It should not be
 * used for extension modules"; removed from CPython's public API in 3.8):
 * the same as the functions here. */
#define _PyObject_GC_TRACK(op) cgc_gc_track(_PyObject_CAST(op))
#define _PyObject_GC_UNTRACK(op) cgc_gc_untrack(_PyObject_CAST(op))
/* The constructor spellings of the 2.x page's rule ("PyObject_GC_New or
 * PyObject_GC_VarNew") and of the 2.0 API's summary ("PyObject_{New, VarNew,
 * Del}"): documentation names of PyObject_GC_NewVar and PyObject_NewVar. */
#define PyObject_GC_VarNew PyObject_GC_NewVar
#define PyObject_VarNew PyObject_NewVar

#define PyGC_Collect cgc_collect_if_enabled
#define PyGC_Enable cgc_enable
#define PyGC_Disable cgc_disable
#define PyGC_IsEnabled cgc_is_enabled

/* The Python 2.0 names. In Python 2.0 the GC header sat in front of the
 * object; here PyObject_AS_GC gives the object's collector metadata, kept
 * beside it in its page, and PyObject_FROM_GC converts back: code that only
 * converts between the two pointers, and sizes with PyGC_HEAD_SIZE, works. */
#define Py_TPFLAGS_GC Py_TPFLAGS_HAVE_GC
#define PyGC_HEAD_SIZE CGC_GC_HEAD_SIZE
#define PyObject_GC_Init(op) cgc_gc_track(op)
#define PyObject_GC_Fini(op) cgc_gc_untrack(op)
#define PyObject_AS_GC(op) cgc_gc_head_of(_PyObject_CAST(op))
#define PyObject_FROM_GC(g) cgc_object_of_gc_head((PyGC_Head *)(g))

/* ---- Types ------------------------------------------------------------ */
#define PyType_Ready cgc_type_ready
#define PyType_GenericAlloc cgc_type_generic_alloc
#define PyType_GenericNew cgc_type_generic_new
#define PyObject_CallFinalizerFromDealloc cgc_call_finalizer_from_dealloc
#define PyType_FromSpec(spec) cgc_type_from_spec((spec), NULL)
#define PyType_FromSpecWithBases cgc_type_from_spec
#define PyType_GetSlot cgc_type_get_slot
static inline int PyType_HasFeature(PyTypeObject *type, unsigned long feature) {
    return (type->tp_flags & feature) != 0;
}
#define PyType_IS_GC(t) PyType_HasFeature((t), Py_TPFLAGS_HAVE_GC)
static inline int PyType_Check(PyObject *op) { return Py_TYPE(op) == &PyType_Type; }

typedef cgc_type_slot PyType_Slot;
typedef cgc_type_spec PyType_Spec;

#define Py_tp_alloc CGC_tp_alloc
#define Py_tp_base CGC_tp_base
#define Py_tp_bases CGC_tp_bases
#define Py_tp_call CGC_tp_call
#define Py_tp_clear CGC_tp_clear
#define Py_tp_dealloc CGC_tp_dealloc
#define Py_tp_del CGC_tp_del
#define Py_tp_descr_get CGC_tp_descr_get
#define Py_tp_descr_set CGC_tp_descr_set
#define Py_tp_doc CGC_tp_doc
#define Py_tp_getattr CGC_tp_getattr
#define Py_tp_getattro CGC_tp_getattro
#define Py_tp_hash CGC_tp_hash
#define Py_tp_init CGC_tp_init
#define Py_tp_is_gc CGC_tp_is_gc
#define Py_tp_iter CGC_tp_iter
#define Py_tp_iternext CGC_tp_iternext
#define Py_tp_methods CGC_tp_methods
#define Py_tp_new CGC_tp_new
#define Py_tp_repr CGC_tp_repr
#define Py_tp_richcompare CGC_tp_richcompare
#define Py_tp_setattr CGC_tp_setattr
#define Py_tp_setattro CGC_tp_setattro
#define Py_tp_str CGC_tp_str
#define Py_tp_traverse CGC_tp_traverse
#define Py_tp_members CGC_tp_members
#define Py_tp_getset CGC_tp_getset
#define Py_tp_free CGC_tp_free
#define Py_tp_finalize CGC_tp_finalize
#define Py_tp_vectorcall CGC_tp_vectorcall

/* ---- Weak references and gc-module helpers ----------------------------- */
/* cyclegc has no callable objects: a weak reference's callback is a C
 * function (cgc_weakref_new); PyWeakref_NewRef takes only a NULL callback. */
static inline PyObject *PyWeakref_NewRef(PyObject *ob, PyObject *callback) {
    if (callback != NULL) {
        cgc_error_set(CGC_ERR_VALUE, "PyWeakref_NewRef: callable callbacks are not supported by "
                                     "cyclegc; pass NULL, or use cgc_weakref_new with a C callback");
        return NULL;
    }
    return cgc_weakref_new(ob, NULL, NULL);
}
#define PyWeakref_GetRef cgc_weakref_get_ref
#define PyWeakref_Check(op) cgc_weakref_check(_PyObject_CAST(op))
#define PyWeakref_CheckRef(op) cgc_weakref_check(_PyObject_CAST(op))
#define PyObject_ClearWeakRefs cgc_clear_weakrefs
typedef cgc_object_visitor gcvisitobjects_t;
#define PyUnstable_GC_VisitObjects cgc_visit_objects

/* ---- Errors ----------------------------------------------------------- */
/* cyclegc has no exception objects: PyErr_Occurred() returns non-NULL (a
 * marker, not an object) when an error is recorded; the message is
 * cgc_error_message(). */
static inline PyObject *PyErr_Occurred(void) {
    return cgc_error_occurred() ? (PyObject *)&cgc_base_object_type : NULL;
}
#define PyErr_Clear cgc_error_clear
static inline PyObject *PyErr_NoMemory(void) {
    cgc_error_set(CGC_ERR_MEMORY, "out of memory");
    return NULL;
}
static inline void PyErr_Print(void) {
    if (cgc_error_occurred()) fprintf(stderr, "cyclegc error: %s\n", cgc_error_message());
    cgc_error_clear();
}

/* ---- Interpreter lifetime --------------------------------------------- */
#define Py_Initialize cgc_initialize
#define Py_FinalizeEx cgc_finalize
static inline void Py_Finalize(void) { (void)cgc_finalize(); }
static inline int Py_IsInitialized(void) { return 1; }

/* ---- Threads ---------------------------------------------------------- */
/* A thread's state, as far as the documented API needs it: an opaque token
 * that PyEval_SaveThread hands out and PyEval_RestoreThread takes back (a
 * thread attaches to a shared heap with cgc_heap_set_current). */
typedef struct cgc_thread_state PyThreadState;
/* Detaches the calling thread from its shared heap around a blocking call
 * (cgc_thread_detach): it must not touch the heap's objects until
 * PyEval_RestoreThread. */
static inline PyThreadState *PyEval_SaveThread(void) {
    cgc_thread_detach();
    return (PyThreadState *)cgc_heap_current();
}
static inline void PyEval_RestoreThread(PyThreadState *tstate) {
    (void)tstate;
    cgc_thread_attach();
}
#define Py_BEGIN_ALLOW_THREADS \
    {                          \
        PyThreadState *_save;  \
        _save = PyEval_SaveThread();
#define Py_BLOCK_THREADS PyEval_RestoreThread(_save);
#define Py_UNBLOCK_THREADS _save = PyEval_SaveThread();
#define Py_END_ALLOW_THREADS    \
    PyEval_RestoreThread(_save); \
    }

#ifdef __cplusplus
}
#endif
#endif /* CYCLEGC_PYTHON_H */
