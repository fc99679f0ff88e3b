// The Python 2.0 pointer API: GC objects handled through their collector
// header's pointer (PyObject_AS_GC, PyObject_FROM_GC, PyObject_DEL,
// PyObject_FREE, PyObject_REALLOC), and the malloc family that accepts them.
#include "arena.hpp"
#include "heap.hpp"
#include "object_checks.hpp"

#include <cstdlib>

namespace cyclegc::internal {

namespace {

// The Python 2.0 API handled GC objects through their header pointer
// (PyObject_DEL(PyObject_AS_GC(op)), PyObject_FREE, PyObject_REALLOC): a
// pointer into a GC page is either an object's GcMeta or inside its slot.
struct GcPointer {
    cgc_object *object = nullptr;  // nullptr: not in a GC page (plain memory)
    bool is_head = false;          // the pointer is the object's GcMeta
};

GcPointer resolve_gc_pointer(void *memory) {
    if (!memory) return {};
    // A plain malloc block never lies in the arena's reservations.
    if (!g_arena->contains(memory)) return {};
    Page *page = page_of(memory);
    auto *meta = static_cast<GcMeta *>(memory);
    if (meta >= page->meta && meta < page->meta + page->slot_count)
        return {page->object_at(static_cast<uint32_t>(meta - page->meta)), true};
    return {page->object_at(page->index_of(memory)), false};
}

}  // namespace

// Frees the object a GC pointer designates (see GcPointer). Returns false for
// any other pointer (which the caller frees as plain memory).
bool free_gc_pointer(void *memory) {
    GcPointer gc = resolve_gc_pointer(memory);
    if (gc.object) cgc_gc_del(gc.object);
    return gc.object != nullptr;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

cgc_gc_head *cgc_gc_head_of(cgc_object *op) {
    if (!op || !has_gc_head(op)) {
        report(CGC_ERR_MISUSE, "cgc_gc_head_of (PyObject_AS_GC): %s is not a GC object",
               op ? type_name_of(op) : "NULL");
        return nullptr;
    }
    return reinterpret_cast<cgc_gc_head *>(&meta_of(op));
}

cgc_object *cgc_object_of_gc_head(cgc_gc_head *head) {
    if (!head) return nullptr;
    auto *meta = reinterpret_cast<GcMeta *>(head);
    Page *page = page_of(meta);
    uint32_t index = static_cast<uint32_t>(meta - page->meta);
    return page->object_at(index);
}

void *cgc_malloc(size_t size) { return std::malloc(size ? size : 1); }
void *cgc_calloc(size_t count, size_t size) { return std::calloc(count ? count : 1, size ? size : 1); }
void *cgc_realloc(void *memory, size_t size) { return std::realloc(memory, size ? size : 1); }
void cgc_free(void *memory) {
    if (!free_gc_pointer(memory)) std::free(memory);
}

// Python 2.0's PyObject_REALLOC (spec 004): "for objects participating in
// GC, these macros deal with PyGC_Head pointers". 2.0 resized a container
// (untracked by PyObject_GC_Fini) with
//     g = PyObject_REALLOC(PyObject_AS_GC(op), object_size + PyGC_HEAD_SIZE);
//     op = PyObject_FROM_GC(g);
// Here the header is not in front of the object, so a pointer to a GC
// object's metadata (or to the object itself, then `size` counts the object
// only) resizes the object: a variable-size object to room for enough items
// (its ob_size is left as it was: the caller sets it), a fixed-size one only
// within its tp_basicsize. Any other pointer is plain memory (cgc_realloc).
void *cgc_object_realloc(void *memory, size_t size) {
    const char *function = "cgc_object_realloc (PyObject_REALLOC)";
    GcPointer gc = resolve_gc_pointer(memory);
    if (!gc.object) return cgc_realloc(memory, size);
    cgc_object *op = gc.object;
    bool is_head = gc.is_head;
    if (!is_head && static_cast<void *>(op) != memory) {
        report(CGC_ERR_MISUSE, "%s: %p points inside object %p of type '%s', not to it or to its "
               "collector header", function, memory, static_cast<void *>(op), type_name_of(op));
        return nullptr;
    }
    if (refuse_if_freed(meta_of(op), function, op, op, "it cannot be reallocated")) return nullptr;
    if (cgc_gc_is_tracked(op)) {
        report(CGC_ERR_MISUSE, "%s: object %p of type '%s' is tracked; untrack it (PyObject_GC_Fini) "
               "before resizing it", function, static_cast<void *>(op), type_name_of(op));
        return nullptr;
    }
    auto head_size = static_cast<size_t>(CGC_GC_HEAD_SIZE);
    size_t object_bytes = !is_head ? size : size > head_size ? size - head_size : 0;
    cgc_type *type = op->ob_type;
    cgc_object *resized = op;
    if (type->tp_itemsize > 0) {
        auto basic = static_cast<size_t>(type->tp_basicsize);
        auto item = static_cast<size_t>(type->tp_itemsize);
        size_t items = object_bytes > basic ? (object_bytes - basic + item - 1) / item : 0;
        if (items > static_cast<size_t>(PTRDIFF_MAX) / item) {
            report(CGC_ERR_MEMORY, "%s: %zu bytes for an object of type '%s' is too large", function,
                   size, type_name(type));
            return nullptr;
        }
        auto *var = reinterpret_cast<cgc_var_object *>(op);
        cgc_ssize_t ob_size = var->ob_size;
        cgc_var_object *moved = cgc_gc_resize(var, static_cast<cgc_ssize_t>(items));
        if (!moved) return nullptr;
        moved->ob_size = ob_size;
        resized = &moved->ob_base;
    } else if (object_bytes > static_cast<size_t>(type->tp_basicsize)) {
        report(CGC_ERR_VALUE, "%s: object %p of type '%s' has a fixed size (tp_basicsize %td, "
               "tp_itemsize 0) and cannot grow to %zu bytes", function, static_cast<void *>(op),
               type_name(type), type->tp_basicsize, object_bytes);
        return nullptr;
    }
    return is_head ? static_cast<void *>(cgc_gc_head_of(resized)) : static_cast<void *>(resized);
}

}  // extern "C"
