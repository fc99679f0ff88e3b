// The stress driver's object types on the cyclegc side ("the world"): C types
// of every layout, heap types and C++ objects, whose handlers check the
// object's tag and report to the driver's hooks.
#include "world.hpp"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace cgc_stress::detail {

// ---- Types ----------------------------------------------------------------------

int c_traverse(cgc_object *self, cgc_visitproc visit, void *arg);
int heap_traverse(cgc_object *self, cgc_visitproc visit, void *arg);
int c_clear(cgc_object *self);
void c_finalize(cgc_object *self);
void c_dealloc(cgc_object *self);
void legacy_del(cgc_object *self);
void heap_free(void *memory);

cgc_type make_type(const char *name, Kind kind, size_t basicsize, size_t itemsize) {
    const KindInfo &k = info(kind);
    cgc_type t{};
    t.tp_name = name;
    t.tp_basicsize = static_cast<cgc_ssize_t>(basicsize);
    t.tp_itemsize = static_cast<cgc_ssize_t>(itemsize);
    t.tp_flags = k.gc ? CGC_TPFLAGS_HAVE_GC : 0;
    t.tp_dealloc = c_dealloc;
    if (k.gc) t.tp_traverse = c_traverse;
    if (k.clear) t.tp_clear = c_clear;
    if (k.finalizer) t.tp_finalize = c_finalize;
    if (k.legacy) t.tp_del = legacy_del;
    return t;
}

cgc_type plain_type = make_type("stress.Plain", Kind::Plain, sizeof(CFixed), 0);
cgc_type final_type = make_type("stress.Final", Kind::Final, sizeof(CFixed), 0);
cgc_type noclear_type = make_type("stress.NoClear", Kind::NoClear, sizeof(CFixed), 0);
cgc_type legacy_type = make_type("stress.Legacy", Kind::Legacy, sizeof(CFixed), 0);
cgc_type finalnoclear_type = make_type("stress.FinalNoClear", Kind::FinalNoClear, sizeof(CFixed), 0);
cgc_type var_type = make_type("stress.Var", Kind::Var, sizeof(CVarHead), sizeof(cgc_object *));
cgc_type varfinal_type = make_type("stress.VarFinal", Kind::VarFinal, sizeof(CVarHead), sizeof(cgc_object *));
cgc_type big_type = make_type("stress.Big", Kind::Big, sizeof(CBig), 0);
cgc_type leaf_type = make_type("stress.Leaf", Kind::Leaf, sizeof(CLeaf), 0);
cgc_type box_type = make_type("stress.Box", Kind::Box, sizeof(CBox), 0);

cgc_type *static_type(Kind kind) {
    switch (kind) {
    case Kind::Plain: return &plain_type;
    case Kind::Final: return &final_type;
    case Kind::NoClear: return &noclear_type;
    case Kind::Legacy: return &legacy_type;
    case Kind::FinalNoClear: return &finalnoclear_type;
    case Kind::Var: return &var_type;
    case Kind::VarFinal: return &varfinal_type;
    case Kind::Big: return &big_type;
    case Kind::Leaf: return &leaf_type;
    case Kind::Box: return &box_type;
    default: return nullptr;
    }
}

cgc_type_slot heap_plain_slots[] = {{CGC_tp_traverse, reinterpret_cast<void *>(heap_traverse)},
                                    {CGC_tp_clear, reinterpret_cast<void *>(c_clear)},
                                    {CGC_tp_free, reinterpret_cast<void *>(heap_free)},
                                    {0, nullptr}};
cgc_type_slot heap_final_slots[] = {{CGC_tp_traverse, reinterpret_cast<void *>(heap_traverse)},
                                    {CGC_tp_clear, reinterpret_cast<void *>(c_clear)},
                                    {CGC_tp_free, reinterpret_cast<void *>(heap_free)},
                                    {CGC_tp_finalize, reinterpret_cast<void *>(c_finalize)},
                                    {0, nullptr}};
cgc_type_spec heap_plain_spec = {"stress.HeapPlain", sizeof(CFixed), 0,
                                 CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_BASETYPE, heap_plain_slots};
cgc_type_spec heap_final_spec = {"stress.HeapFinal", sizeof(CFixed), 0,
                                 CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_BASETYPE, heap_final_slots};

bool is_var(const cgc_object *op) { return op->ob_type->tp_itemsize != 0; }
Tag *tag_of(cgc_object *op) {
    size_t offset = is_var(op) ? sizeof(cgc_var_object) : sizeof(cgc_object);
    return reinterpret_cast<Tag *>(reinterpret_cast<char *>(op) + offset);
}
bool is_foreign(const cgc_object *op) { return op->ob_type == &cgc_weakref_type || op->ob_type == &cgc_type_type; }

SlotsView slots_of(cgc_object *op) {
    SlotsView v;
    if (is_foreign(op)) return v;
    auto kind = static_cast<Kind>(tag_of(op)->kind);
    switch (kind) {
    case Kind::Var:
    case Kind::VarFinal:
        v.c = reinterpret_cast<cgc_object **>(reinterpret_cast<char *>(op) + sizeof(CVarHead));
        v.n = static_cast<size_t>(reinterpret_cast<cgc_var_object *>(op)->ob_size);
        break;
    case Kind::Big:
        v.c = reinterpret_cast<CBig *>(op)->slots;
        v.n = kBigSlots;
        break;
    case Kind::Box:
        v.c = reinterpret_cast<CBox *>(op)->slots;
        v.n = 2;
        break;
    case Kind::Leaf: break;
    case Kind::Cxx:
    case Kind::CxxFinal:
        v.cxx = static_cast<CxxNode *>(cyclegc::object::from_cobject(op));
        v.n = v.cxx->slots.size();
        break;
    default:
        v.c = reinterpret_cast<CFixed *>(op)->slots;
        v.n = 3;
    }
    return v;
}

// Stores `value` (a new reference, or NULL) in slot i and drops the old one
// (Py_XSETREF).
void store_slot(cgc_object *op, size_t i, cgc_object *value) {
    SlotsView v = slots_of(op);
    if (v.cxx) {
        v.cxx->slots[i] = cyclegc::ref<cgc_object>::adopt(value);
        return;
    }
    cgc_object *old = v.c[i];
    v.c[i] = value;
    cgc_xdecref(old);
}

Driver *g_driver = nullptr;

// ---- Type functions ------------------------------------------------------------------

int c_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    g_driver->check_tag(self, "tp_traverse");
    SlotsView v = slots_of(self);
    for (size_t i = 0; i < v.n; ++i)
        if (cgc_object *s = v.get(i))
            if (int r = visit(s, arg)) return r;
    return 0;
}

int heap_traverse(cgc_object *self, cgc_visitproc visit, void *arg) {
    if (int r = visit(reinterpret_cast<cgc_object *>(self->ob_type), arg)) return r;
    return c_traverse(self, visit, arg);
}

int c_clear(cgc_object *self) {
    g_driver->check_tag(self, "tp_clear");
    for (size_t i = 0; i < slots_of(self).n; ++i) store_slot(self, i, nullptr);
    return 0;
}

void c_finalize(cgc_object *self) { g_driver->on_finalize(self); }

void legacy_del(cgc_object *self) { g_driver->on_del(self); }

void c_dealloc(cgc_object *self) {
    g_driver->check_tag(self, "tp_dealloc");
    g_driver->on_dealloc_entry(self);
    cgc_type *type = self->ob_type;
    // CPython's pattern for a static type: finalize first (it may resurrect).
    if (type->tp_finalize && cgc_call_finalizer_from_dealloc(self) < 0) return;
    bool gc = cgc_is_gc(self);
    if (gc) cgc_gc_untrack(self);
    if (type->tp_del) type->tp_del(self);
    SlotsView v = slots_of(self);
    for (size_t i = 0; i < v.n; ++i) store_slot(self, i, nullptr);
    g_driver->on_free(self);
    type->tp_free(self);
}

void heap_free(void *memory) {
    auto *op = static_cast<cgc_object *>(memory);
    g_driver->on_free(op);
    cgc_gc_del(op);
}

CxxNode::CxxNode(uint64_t id, FinAction action, Kind kind, size_t n) : slots(n) {
    tag = Tag{kLive ^ id, id, static_cast<uint32_t>(action), static_cast<uint32_t>(kind)};
}

CxxNode::~CxxNode() {
    g_driver->on_free(as_cobject());
    // (the slots are released after this body, by the vector's destructor)
}

void CxxNode::trace(cyclegc::tracer &t) {
    g_driver->check_tag(as_cobject(), t.clearing() ? "tp_clear (C++)" : "tp_traverse (C++)");
    t(slots);
}

void CxxFinal::finalize() {
    if (g_driver->on_finalize(as_cobject())) throw std::runtime_error("stress: finalizer raises");
}

}  // namespace cgc_stress::detail
