// Type objects: PyType_Ready's defaults and inheritance, heap types made
// from a spec (themselves tracked GC objects), and slot access.
#include "heap.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace cyclegc::internal {
namespace {

// A heap type owns copies of its name and doc string.
struct HeapType {
    cgc_type type;
    char *name;
    char *doc;
};

bool is_heap_type(const cgc_type *type) { return (type->tp_flags & CGC_TPFLAGS_HEAPTYPE) != 0; }

int type_is_gc(cgc_object *op) { return is_heap_type(reinterpret_cast<cgc_type *>(op)); }

int type_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    cgc_type *base = reinterpret_cast<cgc_type *>(self)->tp_base;
    if (base && is_heap_type(base)) return visit(reinterpret_cast<cgc_object *>(base), arg);
    return 0;
}

// A type refers to nothing that can lead back to it except through its base
// and its instances; the base is kept (instances still need it), so there is
// nothing to clear.
int type_clear(cgc_object *) { return 0; }

void type_dealloc(cgc_object *self) {
    cgc_gc_untrack(self);
    auto *heap_type = reinterpret_cast<HeapType *>(self);
    cgc_type *base = heap_type->type.tp_base;
    std::free(heap_type->name);
    std::free(heap_type->doc);
    cgc_gc_del(self);
    if (base && is_heap_type(base)) cgc_decref(reinterpret_cast<cgc_object *>(base));
}

// tp_dealloc of a heap type whose base has its own (static) tp_dealloc: run
// the base's, then drop the instance's reference to its heap type, which a
// static type's dealloc does not know about.
void heap_subtype_dealloc(cgc_object *self) {
    cgc_type *type = self->ob_type;
    cgc_type *base = type->tp_base;
    while (base->tp_dealloc == heap_subtype_dealloc) base = base->tp_base;
    bool base_drops_type = is_heap_type(base);
    base->tp_dealloc(self);
    if (!base_drops_type) cgc_decref(reinterpret_cast<cgc_object *>(type));
}

int type_error(cgc_type *type, const char *function, const char *what) {
    type->tp_flags &= ~CGC_TPFLAGS_READYING;
    report(CGC_ERR_TYPE, "%s: type '%s' %s", function, type_name(type), what);
    return -1;
}

void inherit_gc_slots(cgc_type *type, cgc_type *base) {
    // A subtype that says nothing about GC gets the base's protocol.
    if (!(type->tp_flags & CGC_TPFLAGS_HAVE_GC) && (base->tp_flags & CGC_TPFLAGS_HAVE_GC) &&
        !type->tp_traverse && !type->tp_clear) {
        type->tp_flags |= CGC_TPFLAGS_HAVE_GC;
        type->tp_traverse = base->tp_traverse;
        type->tp_clear = base->tp_clear;
    }
    bool type_gc = (type->tp_flags & CGC_TPFLAGS_HAVE_GC) != 0;
    bool base_gc = (base->tp_flags & CGC_TPFLAGS_HAVE_GC) != 0;
    if (!type->tp_free) {
        if (type_gc == base_gc)
            type->tp_free = base->tp_free;
        else if (type_gc && (base->tp_free == cgc_free || base->tp_free == cgc_object_del))
            type->tp_free = cgc_gc_del;
    }
}

void inherit_slots(cgc_type *type, cgc_type *base) {
    if (type->tp_basicsize == 0) type->tp_basicsize = base->tp_basicsize;
    if (type->tp_itemsize == 0) type->tp_itemsize = base->tp_itemsize;
    inherit_gc_slots(type, base);
    if (!type->tp_dealloc) type->tp_dealloc = base->tp_dealloc;
    if (!type->tp_alloc) type->tp_alloc = base->tp_alloc;
    if (!type->tp_new) type->tp_new = base->tp_new;
    if (!type->tp_init) type->tp_init = base->tp_init;
    if (!type->tp_finalize) type->tp_finalize = base->tp_finalize;
    if (!type->tp_is_gc) type->tp_is_gc = base->tp_is_gc;
    // tp_del (a legacy finalizer) is deliberately not inherited, as in CPython.
}

char *copy_string(const char *text) {
    if (!text) return nullptr;
    size_t length = std::strlen(text) + 1;
    auto *copy = static_cast<char *>(std::malloc(length));
    if (copy) std::memcpy(copy, text, length);
    return copy;
}

bool set_slot(HeapType *heap_type, const cgc_type_slot &slot) {
    cgc_type *t = &heap_type->type;
    void *p = slot.pfunc;
    switch (slot.slot) {
    case CGC_tp_alloc: t->tp_alloc = reinterpret_cast<cgc_allocfunc>(p); return true;
    case CGC_tp_base:
    case CGC_tp_bases: return true;  // handled before the slots
    case CGC_tp_call: t->tp_call = reinterpret_cast<cgc_ternaryfunc>(p); return true;
    case CGC_tp_clear: t->tp_clear = reinterpret_cast<cgc_inquiry>(p); return true;
    case CGC_tp_dealloc: t->tp_dealloc = reinterpret_cast<cgc_destructor>(p); return true;
    case CGC_tp_del: t->tp_del = reinterpret_cast<cgc_destructor>(p); return true;
    case CGC_tp_descr_get: t->tp_descr_get = reinterpret_cast<cgc_ternaryfunc>(p); return true;
    case CGC_tp_descr_set: t->tp_descr_set = reinterpret_cast<cgc_descrsetfunc>(p); return true;
    case CGC_tp_doc:
        heap_type->doc = copy_string(static_cast<const char *>(p));
        t->tp_doc = heap_type->doc;
        return true;
    case CGC_tp_getattr: t->tp_getattr = reinterpret_cast<cgc_getattrfunc>(p); return true;
    case CGC_tp_getattro: t->tp_getattro = reinterpret_cast<cgc_binaryfunc>(p); return true;
    case CGC_tp_hash: t->tp_hash = reinterpret_cast<cgc_hashfunc>(p); return true;
    case CGC_tp_init: t->tp_init = reinterpret_cast<cgc_initproc>(p); return true;
    case CGC_tp_is_gc: t->tp_is_gc = reinterpret_cast<cgc_inquiry>(p); return true;
    case CGC_tp_iter: t->tp_iter = reinterpret_cast<cgc_unaryfunc>(p); return true;
    case CGC_tp_iternext: t->tp_iternext = reinterpret_cast<cgc_unaryfunc>(p); return true;
    case CGC_tp_methods: t->tp_methods = p; return true;
    case CGC_tp_new: t->tp_new = reinterpret_cast<cgc_newfunc>(p); return true;
    case CGC_tp_repr: t->tp_repr = reinterpret_cast<cgc_unaryfunc>(p); return true;
    case CGC_tp_richcompare: t->tp_richcompare = reinterpret_cast<cgc_richcmpfunc>(p); return true;
    case CGC_tp_setattr: t->tp_setattr = reinterpret_cast<cgc_setattrfunc>(p); return true;
    case CGC_tp_setattro: t->tp_setattro = reinterpret_cast<cgc_setattrofunc>(p); return true;
    case CGC_tp_str: t->tp_str = reinterpret_cast<cgc_unaryfunc>(p); return true;
    case CGC_tp_traverse: t->tp_traverse = reinterpret_cast<cgc_traverseproc>(p); return true;
    case CGC_tp_members: t->tp_members = p; return true;
    case CGC_tp_getset: t->tp_getset = p; return true;
    case CGC_tp_free: t->tp_free = reinterpret_cast<cgc_freefunc>(p); return true;
    case CGC_tp_finalize: t->tp_finalize = reinterpret_cast<cgc_destructor>(p); return true;
    case CGC_tp_vectorcall: t->tp_vectorcall = reinterpret_cast<cgc_vectorcallfunc>(p); return true;
    default: return false;
    }
}

cgc_type *spec_base(cgc_type_spec *spec, cgc_object *bases) {
    if (bases) return reinterpret_cast<cgc_type *>(bases);
    cgc_type *base = nullptr;
    for (cgc_type_slot *slot = spec->slots; slot && slot->slot; ++slot) {
        if (slot->slot == CGC_tp_bases || (slot->slot == CGC_tp_base && !base))
            base = static_cast<cgc_type *>(slot->pfunc);
    }
    return base;
}

bool is_type_object(cgc_object *op) {
    for (cgc_type *t = op->ob_type; t; t = t->tp_base)
        if (t == &cgc_type_type) return true;
    return false;
}

int ready_locked(cgc_type *type) {
    const char *function = "cgc_type_ready (PyType_Ready)";
    if (type_is_ready(type)) return 0;
    if (type->tp_flags & CGC_TPFLAGS_READYING)
        return type_error(type, function, "is its own base (readied recursively)");
    std::atomic_ref(type->tp_flags).store(type->tp_flags | CGC_TPFLAGS_READYING, std::memory_order_relaxed);
    if (!type->ob_base.ob_base.ob_type) type->ob_base.ob_base.ob_type = &cgc_type_type;
    if (!type->tp_base && type != &cgc_base_object_type) type->tp_base = &cgc_base_object_type;
    if (cgc_type *base = type->tp_base) {
        if (cgc_type_ready(base) < 0) return type_error(type, function, "has a base that is not valid");
        if (!(base->tp_flags & CGC_TPFLAGS_BASETYPE))
            return type_error(type, function, "has a base type without Py_TPFLAGS_BASETYPE");
        inherit_slots(type, base);
        if (type->tp_basicsize < base->tp_basicsize)
            return type_error(type, function, "has tp_basicsize smaller than its base's");
    }
    if (type->tp_basicsize < static_cast<cgc_ssize_t>(sizeof(cgc_object)))
        return type_error(type, function, "has tp_basicsize smaller than PyObject");
    if (type->tp_itemsize < 0) return type_error(type, function, "has a negative tp_itemsize");
    // (Else allocating it writes ob_size past tp_basicsize: into the first
    // item, or, with no item, into the next object.)
    if (type->tp_itemsize > 0 && type->tp_basicsize < static_cast<cgc_ssize_t>(sizeof(cgc_var_object)))
        return type_error(type, function, "has items (tp_itemsize) but a tp_basicsize smaller than "
                          "PyVarObject: PyObject_VAR_HEAD is missing");
    if ((type->tp_flags & CGC_TPFLAGS_HAVE_GC) && !type->tp_traverse)
        return type_error(type, function, "has the Py_TPFLAGS_HAVE_GC flag but has no traverse function");
    if (!type->tp_alloc) type->tp_alloc = cgc_type_generic_alloc;
    if (!type->tp_dealloc) type->tp_dealloc = cgc_default_dealloc;
    if (!type->tp_free)
        type->tp_free = (type->tp_flags & CGC_TPFLAGS_HAVE_GC) ? cgc_gc_del : cgc_object_del;
    // Published last, with release order: a thread that sees the flag
    // (type_is_ready, acquire) sees every slot filled above.
    std::atomic_ref(type->tp_flags).store((type->tp_flags & ~CGC_TPFLAGS_READYING) | CGC_TPFLAGS_READY,
                                          std::memory_order_release);
    return 0;
}

}  // namespace
}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

cgc_type cgc_type_type = {
    .ob_base = {{1, &cgc_type_type}, 0},
    .tp_name = "type",
    .tp_basicsize = sizeof(HeapType),
    .tp_dealloc = type_dealloc,
    .tp_flags = CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_BASETYPE,
    .tp_doc = "the type of type objects",
    .tp_traverse = type_traverse,
    .tp_clear = type_clear,
    .tp_base = &cgc_base_object_type,
    .tp_free = cgc_gc_del,
    .tp_is_gc = type_is_gc,
};

cgc_type cgc_base_object_type = {
    .ob_base = {{1, &cgc_type_type}, 0},
    .tp_name = "object",
    .tp_basicsize = sizeof(cgc_object),
    .tp_dealloc = cgc_default_dealloc,
    .tp_flags = CGC_TPFLAGS_BASETYPE,
    .tp_doc = "the base of every type",
    .tp_alloc = cgc_type_generic_alloc,
    .tp_new = cgc_type_generic_new,
    .tp_free = cgc_object_del,
};

int cgc_type_ready(cgc_type *type) {
    if (!type) {
        report(CGC_ERR_MISUSE, "cgc_type_ready (PyType_Ready): the type is NULL");
        return -1;
    }
    if (type_is_ready(type)) return 0;
    // A static type is shared by every thread and readied by the first
    // that uses it: two threads may get here at once. Readying is rare and
    // short, so one process-wide lock serializes it (recursive: a type
    // readies its bases).
    static std::recursive_mutex readying;
    std::lock_guard lock(readying);
    return ready_locked(type);
}

}  // extern "C"

extern "C" {

cgc_object *cgc_type_generic_alloc(cgc_type *type, cgc_ssize_t nitems) {
    cgc_object *op = allocate_object(type, nitems, "cgc_type_generic_alloc (PyType_GenericAlloc)",
                                     /*spare_item=*/true);
    if (op && has_gc_head(op)) cgc_gc_track(op);
    return op;
}

cgc_object *cgc_type_generic_new(cgc_type *type, cgc_object *, cgc_object *) {
    if (!type) return nullptr;
    if (!(type->tp_flags & CGC_TPFLAGS_READY) && cgc_type_ready(type) < 0) return nullptr;
    return type->tp_alloc(type, 0);
}

cgc_object *cgc_type_from_spec(cgc_type_spec *spec, cgc_object *bases) {
    const char *function = "cgc_type_from_spec (PyType_FromSpec)";
    if (!spec || !spec->name) {
        report(CGC_ERR_MISUSE, "%s: the spec or its name is NULL", function);
        return nullptr;
    }
    cgc_type *base = spec_base(spec, bases);
    // A static base not readied yet has no type object pointer: ready it.
    if (base && !base->ob_base.ob_base.ob_type && cgc_type_ready(base) < 0) return nullptr;
    if (base && !is_type_object(reinterpret_cast<cgc_object *>(base))) {
        report(CGC_ERR_TYPE, "%s: the base of '%s' is not a type object (cyclegc types have "
               "single inheritance: pass one type)", function, spec->name);
        return nullptr;
    }
    if (!(cgc_type_type.tp_flags & CGC_TPFLAGS_READY) && cgc_type_ready(&cgc_type_type) < 0)
        return nullptr;
    auto *heap_type = reinterpret_cast<HeapType *>(cgc_gc_new(&cgc_type_type));
    if (!heap_type) return nullptr;
    cgc_type *type = &heap_type->type;
    heap_type->name = copy_string(spec->name);
    type->tp_name = heap_type->name;
    type->tp_basicsize = spec->basicsize;
    type->tp_itemsize = spec->itemsize;
    type->tp_flags = spec->flags | CGC_TPFLAGS_HEAPTYPE;
    for (cgc_type_slot *slot = spec->slots; slot && slot->slot; ++slot) {
        if (!set_slot(heap_type, *slot)) {
            report(CGC_ERR_TYPE, "%s: type '%s' uses slot id %d, which cyclegc does not support",
                   function, spec->name, slot->slot);
            type_dealloc(reinterpret_cast<cgc_object *>(type));
            return nullptr;
        }
    }
    if (base) {
        type->tp_base = base;
        if (is_heap_type(base)) cgc_incref(reinterpret_cast<cgc_object *>(base));
    }
    cgc_type *effective_base = base ? base : &cgc_base_object_type;
    if (!type->tp_dealloc && cgc_type_ready(effective_base) == 0 &&
        effective_base->tp_dealloc != cgc_default_dealloc)
        type->tp_dealloc = heap_subtype_dealloc;
    if (cgc_type_ready(type) < 0) {
        type_dealloc(reinterpret_cast<cgc_object *>(type));
        return nullptr;
    }
    cgc_gc_track(type);
    return reinterpret_cast<cgc_object *>(type);
}

void *cgc_type_get_slot(cgc_type *type, int slot) {
    if (!type) {
        report(CGC_ERR_MISUSE, "cgc_type_get_slot (PyType_GetSlot): the type is NULL");
        return nullptr;
    }
    switch (slot) {
    case CGC_tp_alloc: return reinterpret_cast<void *>(type->tp_alloc);
    case CGC_tp_base: return type->tp_base;
    case CGC_tp_bases: return type->tp_bases;
    case CGC_tp_call: return reinterpret_cast<void *>(type->tp_call);
    case CGC_tp_clear: return reinterpret_cast<void *>(type->tp_clear);
    case CGC_tp_dealloc: return reinterpret_cast<void *>(type->tp_dealloc);
    case CGC_tp_del: return reinterpret_cast<void *>(type->tp_del);
    case CGC_tp_descr_get: return reinterpret_cast<void *>(type->tp_descr_get);
    case CGC_tp_descr_set: return reinterpret_cast<void *>(type->tp_descr_set);
    case CGC_tp_doc: return const_cast<char *>(type->tp_doc);
    case CGC_tp_getattr: return reinterpret_cast<void *>(type->tp_getattr);
    case CGC_tp_getattro: return reinterpret_cast<void *>(type->tp_getattro);
    case CGC_tp_hash: return reinterpret_cast<void *>(type->tp_hash);
    case CGC_tp_init: return reinterpret_cast<void *>(type->tp_init);
    case CGC_tp_is_gc: return reinterpret_cast<void *>(type->tp_is_gc);
    case CGC_tp_iter: return reinterpret_cast<void *>(type->tp_iter);
    case CGC_tp_iternext: return reinterpret_cast<void *>(type->tp_iternext);
    case CGC_tp_methods: return type->tp_methods;
    case CGC_tp_new: return reinterpret_cast<void *>(type->tp_new);
    case CGC_tp_repr: return reinterpret_cast<void *>(type->tp_repr);
    case CGC_tp_richcompare: return reinterpret_cast<void *>(type->tp_richcompare);
    case CGC_tp_setattr: return reinterpret_cast<void *>(type->tp_setattr);
    case CGC_tp_setattro: return reinterpret_cast<void *>(type->tp_setattro);
    case CGC_tp_str: return reinterpret_cast<void *>(type->tp_str);
    case CGC_tp_traverse: return reinterpret_cast<void *>(type->tp_traverse);
    case CGC_tp_members: return type->tp_members;
    case CGC_tp_getset: return type->tp_getset;
    case CGC_tp_free: return reinterpret_cast<void *>(type->tp_free);
    case CGC_tp_finalize: return reinterpret_cast<void *>(type->tp_finalize);
    case CGC_tp_vectorcall: return reinterpret_cast<void *>(type->tp_vectorcall);
    default:
        report(CGC_ERR_VALUE, "cgc_type_get_slot (PyType_GetSlot): invalid slot id %d for type '%s'",
               slot, type_name(type));
        return nullptr;
    }
}

}  // extern "C"
