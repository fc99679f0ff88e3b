// The stress driver (see driver.hpp): the object types on the cyclegc side
// ("the world"), the operations, and the comparison with the model.
//
// Every operation is a sequence of primitives; each primitive is applied to
// the world first, then to the model. A collection can only start inside a
// world primitive, at its first step (an allocation) or in an explicit
// collect/safepoint, so the model is then exactly in the state the
// collection starts from: the model simulates the collection from the
// collection callback's "stop" phase and compares its prediction with what
// cyclegc reported. Operations read external references ("roots") by index
// only before their first allocation (user code run by a collection may add
// or drop roots); afterwards they use the objects they hold ("temps").
#include "driver.hpp"

#include <cyclegc/cyclegc.h>
#include <cyclegc/cyclegc.hpp>

#include <algorithm>
#include <iterator>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace cgc_stress {

// ---- Sources ---------------------------------------------------------------

namespace {
uint64_t splitmix(uint64_t &x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

RngSource::RngSource(uint64_t seed, std::vector<uint8_t> *record) : record_(record) {
    uint64_t x = seed;
    for (auto &s : s_) s = splitmix(x);
}

uint64_t RngSource::next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

uint32_t RngSource::pick(uint32_t n) {
    if (n <= 1) return 0;
    auto v = static_cast<uint32_t>(next() % n);
    if (record_) {
        record_->push_back(static_cast<uint8_t>(v & 0xFF));
        if (n > 256) record_->push_back(static_cast<uint8_t>(v >> 8));
    }
    return v;
}

uint32_t ByteSource::pick(uint32_t n) {
    if (n <= 1) return 0;
    size_t need = n > 256 ? 2 : 1;
    if (pos_ + need > size_) {
        done_ = true;
        pos_ = size_;
        return 0;
    }
    uint32_t v = data_[pos_];
    if (need == 2) v |= uint32_t(data_[pos_ + 1]) << 8;
    pos_ += need;
    return v % n;
}

namespace {

bool g_abort_on_failure = false;

// ---- The world's object layouts ----------------------------------------------

constexpr uint64_t kLive = 0x5AFEC0DE00000000ull;
constexpr uint64_t kDead = 0xDEADDEADDEADDEADull;
constexpr int kBigSlots = 40;

// Every object of ours carries a tag: a canary that is valid while the
// object lives, its id, and its finalizer action.
struct Tag {
    uint64_t canary;
    uint64_t id;
    uint32_t action;
    uint32_t kind;
};

struct CFixed {
    cgc_object ob_base;
    Tag tag;
    cgc_object *slots[3];
};
struct CBig {
    cgc_object ob_base;
    Tag tag;
    cgc_object *slots[kBigSlots];
};
struct CBox {
    cgc_object ob_base;
    Tag tag;
    cgc_object *slots[2];
};
struct CLeaf {
    cgc_object ob_base;
    Tag tag;
};
struct CVarHead {  // followed by ob_size items
    cgc_var_object ob_base;
    Tag tag;
};

struct CxxNode : cyclegc::object {
    Tag tag;
    std::vector<cyclegc::ref<cgc_object>> slots;
    CxxNode(uint64_t id, FinAction action, Kind kind, size_t n);
    ~CxxNode();
    void trace(cyclegc::tracer &t);
};
struct CxxFinal : CxxNode {
    using CxxNode::CxxNode;
    void finalize();
};

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

// The slots of one of our objects, whatever its layout.
struct SlotsView {
    cgc_object **c = nullptr;  // C layouts
    CxxNode *cxx = nullptr;    // C++ objects
    size_t n = 0;
    cgc_object *get(size_t i) const { return c ? c[i] : cxx->slots[i].get(); }
};

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

class Driver;
Driver *g_driver = nullptr;

// ---- The driver -------------------------------------------------------------------

struct WrContext {
    uint64_t id;
    CbAction action;
};

struct Counts {
    int fin = 0, del = 0, cb = 0;
};

class Driver {
  public:
    Driver(Source &source, const Options &options) : src_(source), opt_(options) {
        m_.fail = [this](const std::string &message) { fail("%s", message.c_str()); };
        m_.untracked_at_dealloc = [this](uint64_t id) { return untracked_at_entry_.count(id) != 0; };
        m_.generation_of = [this](uint64_t id) { return generation_in_world(id); };
        m_.world_callbacks = [this](uint64_t id) {
            auto found = counts_.find(id);
            return found == counts_.end() ? 0 : found->second.cb;
        };
    }
    RunStats run();

    // ---- Hooks, called by the types -------------------------------------------
    [[noreturn]] void fail(const char *format, ...) __attribute__((format(printf, 2, 3)));
    void check_tag(cgc_object *op, const char *where);
    void on_free(cgc_object *op);
    void on_dealloc_entry(cgc_object *op);
    // Returns true if the finalizer must throw (C++ only).
    bool on_finalize(cgc_object *op);
    void on_del(cgc_object *op);
    void on_callback(cgc_object *weakref, WrContext *context);
    void on_weakref_destroyed(WrContext *context);
    void on_collection(const char *phase, const cgc_collection_info *info);
    void on_error(cgc_error_kind kind, const char *message);
    void register_object(cgc_object *op, uint64_t id, bool foreign);

  private:
    // ---- Primitives: world, then model ----------------------------------------
    cgc_object *ptr(uint64_t id);
    uint64_t id_of(cgc_object *op);
    int generation_in_world(uint64_t id);
    void p_hold_root(size_t index, uint64_t *id);
    uint64_t p_new(Kind kind, size_t slots, FinAction action, bool track, uint64_t type);
    uint64_t p_heap_type(bool final);
    uint64_t p_weakref(uint64_t target, bool callback, CbAction action);
    void p_set_slot(uint64_t id, size_t slot, uint64_t target);
    void p_push_root(uint64_t id);
    void p_drop_root(size_t index);
    void p_track(uint64_t id);
    void p_untrack(uint64_t id);
    void p_collect(int generation);
    void p_safepoint();
    void p_weakref_get(size_t index);
    void p_resize(size_t index, size_t items);
    void p_freeze(bool freeze);
    void p_garbage_clear();
    void p_save_all(bool on);
    void canonicalize();
    size_t pick_root();  // an index into the roots (canonical first); none if empty
    void end_op();

    // ---- Operations -----------------------------------------------------------
    void step();
    int choose(std::initializer_list<int> weights);
    Kind choose_kind(bool containers_only);
    FinAction choose_action(Kind kind);
    CbAction choose_cb_action();
    size_t choose_slots(Kind kind, bool at_least_one);
    uint64_t heap_type_for(bool final);
    void op_new();
    void op_new_cycle();
    void op_new_chain();
    void op_set_slot();
    void op_load_slot();
    void op_weakref();
    void op_garbage_break();
    void op_track_any(bool track);
    void op_resize();
    void teardown();

    // ---- Checks -----------------------------------------------------------------
    void check_roots();
    void full_check(const char *why);
    std::string describe(uint64_t id);
    void note(const char *format, ...) __attribute__((format(printf, 2, 3)));

    Source &src_;
    Options opt_;
    Model m_;
    cgc_heap *heap_ = nullptr;

    // The world.
    std::vector<cgc_object *> roots_;
    std::vector<uint64_t> root_epochs_;  // the operation that added each root
    std::vector<cgc_object *> temps_;
    void push_world_root(cgc_object *op) { push_root_entry(op, op_index_); }
    void push_root_entry(cgc_object *op, uint64_t epoch) {
        roots_.push_back(op);
        root_epochs_.push_back(epoch);
    }
    std::unordered_map<cgc_object *, uint64_t> ptr2id_;
    std::unordered_map<uint64_t, cgc_object *> id2ptr_;
    std::unordered_set<uint64_t> foreign_;          // registered weak references and heap types
    std::unordered_set<uint64_t> silently_freed_;   // foreign objects whose address was reused
    std::unordered_set<uint64_t> untracked_at_entry_;
    std::unordered_map<uint64_t, Counts> counts_;
    uint64_t unraisable_ = 0;
    int64_t reported_survivors_ = 0;  // in the running collection (on_error)
    bool collecting_ = false;
    int collection_generation_ = -1;
    uint64_t collections_seen_ = 0;
    bool full_collection_in_op_ = false;
    Prediction last_;

    // Reporting.
    uint64_t op_index_ = 0;
    std::string op_;
    std::vector<std::string> recent_;
    RunStats stats_;
    bool in_teardown_ = false;
};

void Driver::fail(const char *format, ...) {
    char message[2048];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof message, format, args);
    va_end(args);
    std::fprintf(stderr, "\ncyclegc_stress: FAILED (seed %" PRIu64 ", operation %" PRIu64 "%s): %s\n",
                 opt_.seed, op_index_, in_teardown_ ? ", teardown" : "", message);
    std::fprintf(stderr, "  during: %s\n  last operations (oldest first):\n", op_.c_str());
    for (const auto &line : recent_) std::fprintf(stderr, "    %s\n", line.c_str());
    if (!opt_.replay.empty()) std::fprintf(stderr, "  replay: %s\n", opt_.replay.c_str());
    std::fflush(stderr);
    if (g_abort_on_failure) std::abort();
    std::_Exit(1);
}

void Driver::note(const char *format, ...) {
    char line[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    // (Here and below, append rather than `"literal" + std::string`: GCC 12
    // at -O2 warns about that operator+, inlined, with a false -Wrestrict.)
    op_ = std::string("#").append(std::to_string(op_index_)).append(" ").append(line);
    if (opt_.trace) std::fprintf(stderr, "%s\n", op_.c_str());
    if (recent_.size() == 24) recent_.erase(recent_.begin());
    recent_.push_back(op_);
}

std::string Driver::describe(uint64_t id) {
    if (!m_.exists(id)) return std::to_string(id) + " (unknown)";
    const Node &n = m_.node(id);
    std::string s = std::to_string(id) + " (" + info(n.kind).name;
    if (info(n.kind).finalizer) s += std::string(", finalizer ") + name(n.action);
    if (n.kind == Kind::Weakref) s += std::string(n.has_callback ? ", callback " : ", no callback") +
                                      (n.has_callback ? name(n.cb_action) : "");
    s += n.tracked ? ", gen " + std::to_string(n.gen) : ", untracked";
    s += ", count " + std::to_string(n.refcnt) + ")";
    return s;
}

// ---- Hooks --------------------------------------------------------------------------

void Driver::check_tag(cgc_object *op, const char *where) {
    Tag *t = tag_of(op);
    if (t->canary != (kLive ^ t->id))
        fail("%s on object %p of type '%s' whose canary is %s (%#" PRIx64 "): the object was freed or "
             "overwritten",
             where, static_cast<void *>(op), op->ob_type ? op->ob_type->tp_name : "?",
             t->canary == kDead ? "dead" : "corrupt", t->canary);
}

void Driver::register_object(cgc_object *op, uint64_t id, bool foreign) {
    auto found = ptr2id_.find(op);
    if (found != ptr2id_.end()) {
        uint64_t old = found->second;
        if (!foreign_.count(old))
            fail("object %" PRIu64 " was created at the address of object %" PRIu64 ", which is still alive "
                 "(freed without its tp_dealloc?)", id, old);
        // A weak reference or heap type freed without a hook: its address is reused.
        foreign_.erase(old);
        id2ptr_.erase(old);
        silently_freed_.insert(old);
        ptr2id_.erase(found);
    }
    if (id2ptr_.count(id)) fail("object id %" PRIu64 " registered twice", id);
    ptr2id_[op] = id;
    id2ptr_[id] = op;
    if (foreign) foreign_.insert(id);
    ++stats_.objects_created;
}

void Driver::on_free(cgc_object *op) {
    check_tag(op, "tp_dealloc");
    Tag *t = tag_of(op);
    uint64_t id = t->id;
    auto found = id2ptr_.find(id);
    if (found == id2ptr_.end() || found->second != op)
        fail("object %" PRIu64 " freed at %p, which is not where it lives", id, static_cast<void *>(op));
    id2ptr_.erase(found);
    ptr2id_.erase(op);
    t->canary = kDead;
}

void Driver::on_dealloc_entry(cgc_object *op) {
    if (cgc_is_gc(op) && !cgc_gc_is_tracked(op)) untracked_at_entry_.insert(tag_of(op)->id);
}

void Driver::on_del(cgc_object *op) {
    check_tag(op, "tp_del");
    if (++counts_[tag_of(op)->id].del > 1) fail("tp_del of object %" PRIu64 " ran twice", tag_of(op)->id);
}

bool Driver::on_finalize(cgc_object *op) {
    check_tag(op, "tp_finalize");
    Tag *t = tag_of(op);
    uint64_t id = t->id;
    if (++counts_[id].fin > 1) fail("the finalizer of object %s ran twice", describe(id).c_str());
    // (Inside the finalizer the flag is 1 when the collector runs it and 0
    // when a deallocation does, as in CPython; afterwards it is 1 in both,
    // which the full check compares with the model.)
    // A finalizer sees an intact object: every reference it holds is alive.
    SlotsView v = slots_of(op);
    for (size_t i = 0; i < v.n; ++i) {
        cgc_object *s = v.get(i);
        if (!s) continue;
        if (!ptr2id_.count(s)) fail("the finalizer of object %" PRIu64 " sees a freed object in slot %zu", id, i);
        if (!is_foreign(s)) check_tag(s, "a finalizer's referent");
    }
    switch (static_cast<FinAction>(t->action)) {
    case FinAction::None:
    case FinAction::Count: break;
    case FinAction::ResurrectSelf:
        cgc_incref(op);
        push_world_root(op);
        break;
    case FinAction::ResurrectChild:
        if (v.n > 0 && v.get(0)) {
            cgc_incref(v.get(0));
            push_world_root(v.get(0));
        }
        break;
    case FinAction::DropSlots:
        for (size_t i = 0; i < slots_of(op).n; ++i) store_slot(op, i, nullptr);
        break;
    case FinAction::AllocGarbage: {
        cgc_object *a = cgc_gc_new(&plain_type);
        cgc_object *b = cgc_gc_new(&plain_type);
        if (!a || !b) fail("allocation failed in a finalizer");
        for (auto [o, k] : {std::pair{a, 0u}, std::pair{b, 1u}}) {
            *tag_of(o) = Tag{kLive ^ derived_id(id, k), derived_id(id, k), 0, static_cast<uint32_t>(Kind::Plain)};
            register_object(o, derived_id(id, k), false);
            cgc_gc_track(o);
        }
        cgc_incref(b);
        store_slot(a, 0, b);
        cgc_incref(a);
        store_slot(b, 0, a);
        cgc_decref(a);
        cgc_decref(b);
        break;
    }
    case FinAction::WeakrefSelf: {
        auto *context = new WrContext{derived_id(id, 2), CbAction::None};
        cgc_object *w = cgc_weakref_new_owning(op, [](cgc_object *wr, void *c) {
            g_driver->on_callback(wr, static_cast<WrContext *>(c));
        }, context, [](void *c) { g_driver->on_weakref_destroyed(static_cast<WrContext *>(c)); });
        if (!w) fail("weak reference creation failed in a finalizer");
        register_object(w, context->id, true);
        push_world_root(w);
        break;
    }
    case FinAction::CallCollect:
        if (cgc_is_collecting()) {
            cgc_ssize_t r = cgc_collect(2);
            if (r != 0) fail("cgc_collect from a finalizer during a collection returned %td, expected 0", r);
        }
        break;
    case FinAction::UntrackSelf: cgc_gc_untrack(op); break;
    case FinAction::Throw: return true;
    }
    return false;
}

void Driver::on_callback(cgc_object *weakref, WrContext *context) {
    uint64_t id = context->id;
    ++counts_[id].cb;
    if (counts_[id].cb > 1) fail("the callback of weak reference %" PRIu64 " ran twice", id);
    if (cgc_object *referent = cgc_weakref_get(weakref)) {
        cgc_decref(referent);
        fail("the callback of weak reference %" PRIu64 " sees its referent alive", id);
    }
    switch (context->action) {
    case CbAction::None:
    case CbAction::Count: break;
    case CbAction::DropSelf: {
        // Only a reference that existed before this operation: one that user
        // code added during it (a finalizer resurrecting the weak reference)
        // may come before or after this callback, depending on the order of
        // the deallocations.
        auto found = roots_.begin();
        for (; found != roots_.end(); ++found)
            if (*found == weakref && root_epochs_[static_cast<size_t>(found - roots_.begin())] < op_index_) break;
        if (std::getenv("CGC_STRESS_DEBUG_ID") && std::strtoull(std::getenv("CGC_STRESS_DEBUG_ID"), nullptr, 0) == id)
            std::fprintf(stderr, "  world[%" PRIu64 "]: callback drops a root: %s\n", id,
                         found != roots_.end() ? "found" : "none");
        if (found != roots_.end()) {
            *found = nullptr;
            cgc_decref(weakref);
        }
        break;
    }
    case CbAction::AllocGarbage: {
        cgc_object *a = cgc_gc_new(&plain_type);
        cgc_object *b = cgc_gc_new(&plain_type);
        if (!a || !b) fail("allocation failed in a callback");
        for (auto [o, k] : {std::pair{a, 0u}, std::pair{b, 1u}}) {
            *tag_of(o) = Tag{kLive ^ derived_id(id, k), derived_id(id, k), 0, static_cast<uint32_t>(Kind::Plain)};
            register_object(o, derived_id(id, k), false);
            cgc_gc_track(o);
        }
        cgc_incref(b);
        store_slot(a, 0, b);
        cgc_incref(a);
        store_slot(b, 0, a);
        cgc_decref(a);
        cgc_decref(b);
        break;
    }
    case CbAction::CallCollect:
        if (cgc_is_collecting()) {
            cgc_ssize_t r = cgc_collect(2);
            if (r != 0) fail("cgc_collect from a callback during a collection returned %td, expected 0", r);
        }
        break;
    }
}

void Driver::on_weakref_destroyed(WrContext *context) {
    uint64_t id = context->id;
    auto found = id2ptr_.find(id);
    if (found == id2ptr_.end()) fail("weak reference %" PRIu64 " destroyed twice or unknown", id);
    ptr2id_.erase(found->second);
    id2ptr_.erase(found);
    foreign_.erase(id);
    delete context;
}

void Driver::on_collection(const char *phase, const cgc_collection_info *info) {
    if (std::strcmp(phase, "start") == 0) {
        if (collecting_) fail("a collection started inside another");
        collecting_ = true;
        collection_generation_ = info->generation;
        return;
    }
    if (!collecting_ || info->generation != collection_generation_) fail("collection callback 'stop' without 'start'");
    collecting_ = false;
    ++collections_seen_;
    if (info->generation == 2) full_collection_in_op_ = true;
    // The model collects from the state the collection started from.
    last_ = m_.collect(info->generation);
    untracked_at_entry_.clear();
    int64_t reported_survivors = reported_survivors_;
    reported_survivors_ = 0;
    if (reported_survivors != last_.survived_clear)
        fail("collection of generation %d: cyclegc reports %" PRId64 " objects alive after the clearing; "
             "the model expects %" PRId64, info->generation, reported_survivors, last_.survived_clear);
    if (info->collected != last_.collected || info->uncollectable != last_.uncollectable ||
        info->candidates != last_.candidates)
        fail("collection of generation %d: cyclegc reports %td collected, %td uncollectable, %td examined; "
             "the model expects %" PRId64 ", %" PRId64 ", %" PRId64,
             info->generation, info->collected, info->uncollectable, info->candidates, last_.collected,
             last_.uncollectable, last_.candidates);
}

void Driver::on_error(cgc_error_kind kind, const char *message) {
    if (kind == CGC_ERR_UNRAISABLE && std::strstr(message, "CxxFinal") &&
        std::strstr(message, "stress: finalizer raises")) {
        ++unraisable_;
        return;
    }
    // Objects still alive after their cycle was cleared (no tp_clear drops a
    // reference: NoClear, FinalNoClear): counted against the model's.
    long long survivors = 0;
    if (kind == CGC_ERR_MISUSE && std::sscanf(message, "collector: %lld unreachable objects", &survivors) == 1 &&
        std::strstr(message, "still alive after their cycle was cleared")) {
        reported_survivors_ += survivors;
        return;
    }
    fail("cyclegc reported an unexpected error (kind %d): %s", static_cast<int>(kind), message);
}

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

// ---- Primitives ------------------------------------------------------------------------

cgc_object *Driver::ptr(uint64_t id) {
    auto found = id2ptr_.find(id);
    if (found == id2ptr_.end())
        fail("object %s is alive in the model but freed in cyclegc", describe(id).c_str());
    return found->second;
}

int Driver::generation_in_world(uint64_t id) {
    cgc_object *op = ptr(id);
    for (int g = 0; g < 3; ++g) {
        cgc_object_list list{};
        if (cgc_get_objects(g, &list) < 0) fail("cgc_get_objects(%d) failed", g);
        bool found = std::find(list.items, list.items + list.count, op) != list.items + list.count;
        cgc_object_list_release(&list);
        if (found) return g;
    }
    return cgc_gc_is_tracked(op) ? kPermanent : -1;
}

uint64_t Driver::id_of(cgc_object *op) {
    auto found = ptr2id_.find(op);
    if (found == ptr2id_.end()) fail("a reference to an unknown (freed?) object %p", static_cast<void *>(op));
    return found->second;
}

void Driver::p_hold_root(size_t index, uint64_t *id) {
    cgc_object *op = roots_.at(index);
    cgc_incref(op);
    temps_.push_back(op);
    *id = m_.roots.at(index);
    m_.hold(*id);
}

uint64_t Driver::p_new(Kind kind, size_t slots, FinAction action, bool track, uint64_t type) {
    m_.settle();  // a collection may start in the allocation: the model must be exact
    uint64_t id = m_.next_id();
    const KindInfo &k = info(kind);
    cgc_object *op = nullptr;
    if (k.cxx) {
        cyclegc::ref<CxxNode> r = kind == Kind::CxxFinal ? cyclegc::ref<CxxNode>(cyclegc::make<CxxFinal>(id, action, kind, slots))
                                                         : cyclegc::make<CxxNode>(id, action, kind, slots);
        op = r.release()->as_cobject();
        if (reinterpret_cast<char *>(tag_of(op)) != reinterpret_cast<char *>(&static_cast<CxxNode *>(cyclegc::object::from_cobject(op))->tag))
            fail("unexpected C++ object layout");
        if (!track) cgc_gc_untrack(op);
    } else if (k.heap_instance) {
        auto *t = reinterpret_cast<cgc_type *>(ptr(type));
        op = track ? t->tp_alloc(t, 0) : cgc_gc_new(t);
    } else if (!k.gc) {
        op = cgc_object_new(static_type(kind));
    } else if (k.var) {
        op = cgc_gc_new_var(static_type(kind), static_cast<cgc_ssize_t>(slots));
    } else {
        op = cgc_gc_new(static_type(kind));
    }
    if (!op) fail("allocation of a %s failed: %s", k.name, cgc_error_message());
    if (!k.cxx) *tag_of(op) = Tag{kLive ^ id, id, static_cast<uint32_t>(action), static_cast<uint32_t>(kind)};
    register_object(op, id, false);
    if (track && !k.cxx && !k.heap_instance) cgc_gc_track(op);
    temps_.push_back(op);
    m_.take_id();
    m_.alloc(id, kind, k.var || k.cxx ? slots : static_cast<size_t>(k.fixed_slots), action, type, track);
    return id;
}

uint64_t Driver::p_heap_type(bool final) {
    m_.settle();
    uint64_t id = m_.next_id();
    cgc_object *t = cgc_type_from_spec(final ? &heap_final_spec : &heap_plain_spec, nullptr);
    if (!t) fail("cgc_type_from_spec failed: %s", cgc_error_message());
    register_object(t, id, true);
    temps_.push_back(t);
    m_.take_id();
    m_.alloc_heap_type(id, final);
    return id;
}

uint64_t Driver::p_weakref(uint64_t target, bool callback, CbAction action) {
    m_.settle();
    uint64_t id = m_.next_id();
    cgc_object *object = ptr(target);
    WrContext *context = nullptr;
    cgc_object *w;
    if (callback) {
        context = new WrContext{id, action};
        w = cgc_weakref_new_owning(object, [](cgc_object *wr, void *c) {
            g_driver->on_callback(wr, static_cast<WrContext *>(c));
        }, context, [](void *c) { g_driver->on_weakref_destroyed(static_cast<WrContext *>(c)); });
    } else {
        w = cgc_weakref_new(object, nullptr, nullptr);
    }
    if (!w) fail("weak reference creation failed: %s", cgc_error_message());
    temps_.push_back(w);
    // The model decides whether cyclegc had to share an existing one.
    uint64_t shared = callback ? 0 : m_.shared_weakref(target);
    if (shared) {
        auto found = ptr2id_.find(w);
        if (found == ptr2id_.end() || found->second != shared)
            fail("cgc_weakref_new(%s) returned %p, expected the existing weak reference %s",
                 describe(target).c_str(), static_cast<void *>(w), describe(shared).c_str());
        m_.hold(shared);
        return shared;
    }
    register_object(w, id, true);
    m_.take_id();
    m_.alloc_weakref(id, target, callback, action);
    return id;
}

void Driver::p_set_slot(uint64_t id, size_t slot, uint64_t target) {
    cgc_object *op = ptr(id);
    cgc_object *value = target ? ptr(target) : nullptr;
    cgc_xincref(value);
    store_slot(op, slot, value);
    m_.set_slot(id, slot, target);
}

void Driver::p_push_root(uint64_t id) {
    cgc_object *op = ptr(id);
    cgc_incref(op);
    push_world_root(op);
    m_.push_root(id);
}

void Driver::p_drop_root(size_t index) {
    cgc_object *op = roots_.at(index);
    roots_[index] = roots_.back();
    roots_.pop_back();
    root_epochs_[index] = root_epochs_.back();
    root_epochs_.pop_back();
    cgc_xdecref(op);
    m_.drop_root(index);
}

void Driver::p_track(uint64_t id) {
    cgc_gc_track(ptr(id));
    m_.track(id);
}

void Driver::p_untrack(uint64_t id) {
    cgc_gc_untrack(ptr(id));
    m_.untrack(id);
}

void Driver::p_collect(int generation) {
    m_.settle();
    uint64_t before = collections_seen_;
    cgc_ssize_t r = cgc_collect(generation);
    if (collections_seen_ != before + 1) fail("cgc_collect(%d) ran %" PRIu64 " collections", generation, collections_seen_ - before);
    if (r != last_.collected + last_.uncollectable)
        fail("cgc_collect(%d) returned %td, the model expects %" PRId64, generation, r,
             last_.collected + last_.uncollectable);
}

void Driver::p_safepoint() {
    m_.settle();
    uint64_t before = collections_seen_;
    cgc_ssize_t r = cgc_safepoint();
    if (collections_seen_ == before) {
        if (r != 0) fail("cgc_safepoint returned %td without collecting", r);
    } else if (r != last_.collected + last_.uncollectable) {
        fail("cgc_safepoint returned %td, the model expects %" PRId64, r, last_.collected + last_.uncollectable);
    }
}

void Driver::p_weakref_get(size_t index) {
    cgc_object *w = roots_.at(index);
    uint64_t wid = m_.roots.at(index);
    cgc_object *got = cgc_weakref_get(w);
    uint64_t expected = m_.node(wid).referent;
    if (expected && !m_.node(expected).alive) fail("model: weak reference %" PRIu64 " to a dead object", wid);
    uint64_t actual = got ? id_of(got) : 0;
    if (actual != expected)
        fail("weak reference %s reads %s, the model expects %s", describe(wid).c_str(),
             actual ? describe(actual).c_str() : "dead", expected ? describe(expected).c_str() : "dead");
    if (got) {
        push_world_root(got);  // takes over the new reference
        m_.push_root(expected);
    }
}

void Driver::p_resize(size_t index, size_t items) {
    cgc_object *op = roots_.at(index);
    uint64_t id = m_.roots.at(index);
    auto *var = reinterpret_cast<cgc_var_object *>(op);
    size_t old = static_cast<size_t>(var->ob_size);
    for (size_t i = items; i < old; ++i) p_set_slot(id, i, 0);  // drop what is cut off
    cgc_var_object *moved = cgc_gc_resize(var, static_cast<cgc_ssize_t>(items));
    if (!moved) fail("cgc_gc_resize to %zu items failed: %s", items, cgc_error_message());
    auto *now = reinterpret_cast<cgc_object *>(moved);
    if (now != op) {
        check_tag(now, "a resized object");
        // Re-registered at its new address (which may have been a weak
        // reference's or a heap type's, freed without a hook of ours).
        ptr2id_.erase(op);
        id2ptr_.erase(id);
        register_object(now, id, false);
        --stats_.objects_created;
        roots_[index] = now;
    }
    // As CPython's callers do: new items start NULL.
    auto **itemv = reinterpret_cast<cgc_object **>(reinterpret_cast<char *>(now) + sizeof(CVarHead));
    for (size_t i = old; i < items; ++i) itemv[i] = nullptr;
    m_.resize(id, items);
}

void Driver::p_freeze(bool freeze) {
    if (freeze) {
        cgc_freeze();
        m_.freeze();
    } else {
        cgc_unfreeze();
        m_.unfreeze();
    }
}

void Driver::p_garbage_clear() {
    cgc_garbage_clear();
    m_.garbage_clear();
}

void Driver::p_save_all(bool on) {
    cgc_set_debug(on ? CGC_DEBUG_SAVEALL : 0);
    m_.save_all = on;
}

// User code run by a collection or a deallocation may add or drop roots, in
// an order that depends on the collector's order: both sides are then
// sorted by id, so that an index means the same object on both.
void Driver::canonicalize() {
    std::vector<std::pair<uint64_t, std::pair<uint64_t, cgc_object *>>> entries;  // id, epoch, object
    bool compact = std::find(roots_.begin(), roots_.end(), nullptr) != roots_.end();
    if (m_.roots_dirty || compact) {
        for (size_t i = 0; i < roots_.size(); ++i)
            if (roots_[i]) entries.push_back({m_.roots_dirty ? id_of(roots_[i]) : i, {root_epochs_[i], roots_[i]}});
        if (m_.roots_dirty) std::sort(entries.begin(), entries.end());
        roots_.clear();
        root_epochs_.clear();
        for (auto &e : entries) push_root_entry(e.second.second, e.second.first);
    }
    m_.canonicalize_roots();
}

size_t Driver::pick_root() {
    canonicalize();
    if (roots_.size() != m_.roots.size()) fail("%zu roots in the world, %zu in the model", roots_.size(), m_.roots.size());
    return src_.pick(static_cast<uint32_t>(std::min<size_t>(m_.roots.size(), 65536)));
}

void Driver::end_op() {
    std::vector<cgc_object *> held;
    held.swap(temps_);
    for (cgc_object *op : held) cgc_decref(op);
    m_.release_temps();
    m_.settle();
    canonicalize();
    untracked_at_entry_.clear();
}

// ---- Operations ------------------------------------------------------------------------

int Driver::choose(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int r = static_cast<int>(src_.pick(static_cast<uint32_t>(total)));
    int i = 0;
    for (int w : weights) {
        if (r < w) return i;
        r -= w;
        ++i;
    }
    return 0;
}

Kind Driver::choose_kind(bool containers_only) {
    //                  Plain Final NoClr Legcy FinNC Var VarF Big HeapP HeapF Cxx CxxF Leaf Box
    int k = choose({20, 16, 6, 4, 3, 8, 5, 2, 6, 5, 8, 6, containers_only ? 0 : 4, containers_only ? 0 : 3});
    return static_cast<Kind>(k);
}

FinAction Driver::choose_action(Kind kind) {
    if (!info(kind).finalizer) return FinAction::None;
    //                None Self Child Drop Alloc Weak Collect Untrack Throw
    int a = choose({30, 10, 8, 8, 5, 5, 4, 3, info(kind).cxx ? 6 : 0});
    return static_cast<FinAction>(a);
}

CbAction Driver::choose_cb_action() { return static_cast<CbAction>(choose({10, 6, 3, 2})); }

size_t Driver::choose_slots(Kind kind, bool at_least_one) {
    const KindInfo &k = info(kind);
    if (k.var) {
        if (src_.pick(40) == 0) return 1000 + src_.pick(1200);  // beyond the size classes: a large page
        return (at_least_one ? 1 : 0) + src_.pick(6);
    }
    if (k.cxx) return (at_least_one ? 1 : 0) + src_.pick(4);
    return static_cast<size_t>(k.fixed_slots);
}

// A heap type of the right flavour, held in the temporaries (made if needed).
uint64_t Driver::heap_type_for(bool final) {
    canonicalize();
    std::vector<size_t> candidates;
    for (size_t i = 0; i < m_.roots.size(); ++i) {
        const Node &n = m_.node(m_.roots[i]);
        if (n.kind == Kind::HeapType && n.type_final == final) candidates.push_back(i);
    }
    if (candidates.empty() || src_.pick(20) == 0) return p_heap_type(final);  // held by the temps
    uint64_t id;
    p_hold_root(candidates[src_.pick(static_cast<uint32_t>(candidates.size()))], &id);
    return id;
}

void Driver::op_new() {
    Kind kind = choose_kind(false);
    const KindInfo &k = info(kind);
    size_t n = choose_slots(kind, false);
    FinAction action = choose_action(kind);
    bool track = k.gc && src_.pick(10) != 0;
    note("new %s (id %" PRIu64 ", %zu slots, finalizer %s, %s)", k.name, m_.next_id(), n, name(action),
         track ? "tracked" : "untracked");
    // Everything read from the roots is taken before allocating.
    size_t init = std::min<size_t>(n, 4);
    std::vector<std::pair<size_t, uint64_t>> links;  // slot, target (UINT64_MAX: itself)
    for (size_t i = 0; i < init; ++i) {
        size_t slot = k.var && n > 4 ? src_.pick(static_cast<uint32_t>(std::min<size_t>(n, 65536))) : i;
        switch (src_.pick(5)) {
        case 0:
        case 1: break;
        case 2:
            links.emplace_back(slot, UINT64_MAX);
            break;
        default:
            if (!m_.roots.empty()) {
                uint64_t target;
                size_t index = pick_root();
                p_hold_root(index, &target);
                links.emplace_back(slot, target);
            }
        }
    }
    uint64_t type = k.heap_instance ? heap_type_for(kind == Kind::HeapFinal) : 0;
    uint64_t id = p_new(kind, n, action, track, type);
    for (auto [slot, target] : links) p_set_slot(id, slot, target == UINT64_MAX ? id : target);
    if (src_.pick(8) != 0) p_push_root(id);
}

void Driver::op_new_cycle() {
    size_t count = 1 + src_.pick(5);
    note("new cycle of %zu from id %" PRIu64, count, m_.next_id());
    std::vector<uint64_t> outside;
    size_t extra = src_.pick(3);
    for (size_t i = 0; i < extra && !m_.roots.empty(); ++i) {
        uint64_t target;
        size_t index = pick_root();
        p_hold_root(index, &target);
        outside.push_back(target);
    }
    std::vector<uint64_t> members;
    for (size_t i = 0; i < count; ++i) {
        Kind kind = choose_kind(true);
        uint64_t type = info(kind).heap_instance ? heap_type_for(kind == Kind::HeapFinal) : 0;
        members.push_back(p_new(kind, choose_slots(kind, true), choose_action(kind), src_.pick(10) != 0, type));
    }
    for (size_t i = 0; i < count; ++i) {
        uint64_t id = members[i];
        size_t n = m_.node(id).slots.size();
        p_set_slot(id, src_.pick(4) == 0 ? src_.pick(static_cast<uint32_t>(std::min<size_t>(n, 65536))) : 0,
                   members[(i + 1) % count]);
    }
    size_t links = src_.pick(4);
    for (size_t i = 0; i < links; ++i) {
        uint64_t id = members[src_.pick(static_cast<uint32_t>(count))];
        size_t n = m_.node(id).slots.size();
        uint64_t target = !outside.empty() && src_.pick(2) ? outside[src_.pick(static_cast<uint32_t>(outside.size()))]
                                                           : members[src_.pick(static_cast<uint32_t>(count))];
        p_set_slot(id, src_.pick(static_cast<uint32_t>(std::min<size_t>(n, 65536))), target);
    }
    uint64_t weak = 0;
    if (src_.pick(3) == 0) {
        weak = p_weakref(members[src_.pick(static_cast<uint32_t>(count))], src_.pick(4) != 0, choose_cb_action());
        p_push_root(weak);
    }
    bool keep = src_.pick(3) == 0;
    if (keep) p_push_root(members[src_.pick(static_cast<uint32_t>(count))]);
    if (opt_.trace) {
        std::string text;
        for (uint64_t id : members) text.append(" ").append(describe(id));
        note("  cycle%s%s:%s", keep ? " kept" : " garbage", weak ? ", weakly referenced" : "", text.c_str());
    }
}

void Driver::op_new_chain() {
    size_t length = 20 + src_.pick(200);
    note("new chain of %zu from id %" PRIu64, length, m_.next_id());
    uint64_t previous = 0;
    for (size_t i = 0; i < length; ++i) {
        Kind kind = src_.pick(4) == 0 ? Kind::Final : Kind::Plain;
        FinAction action = kind == Kind::Final ? (src_.pick(3) == 0 ? FinAction::ResurrectSelf : FinAction::None)
                                               : FinAction::None;
        uint64_t id = p_new(kind, 3, action, true, 0);
        if (previous) p_set_slot(id, 0, previous);
        previous = id;
    }
    p_push_root(previous);
}

void Driver::op_set_slot() {
    if (m_.roots.empty()) return;
    size_t index = pick_root();
    uint64_t id = m_.roots[index];
    size_t n = m_.node(id).slots.size();
    if (n == 0) return;
    size_t slot = src_.pick(static_cast<uint32_t>(std::min<size_t>(n, 65536)));
    uint64_t target = 0;
    switch (src_.pick(6)) {
    case 0: break;
    case 1: target = id; break;
    default: target = m_.roots[src_.pick(static_cast<uint32_t>(m_.roots.size()))];
    }
    note("set slot %zu of %s to %s", slot, describe(id).c_str(), target ? describe(target).c_str() : "NULL");
    p_set_slot(id, slot, target);
}

void Driver::op_load_slot() {
    if (m_.roots.empty()) return;
    uint64_t id = m_.roots[src_.pick(static_cast<uint32_t>(m_.roots.size()))];
    const Node &n = m_.node(id);
    if (n.slots.empty()) return;
    uint64_t target = n.slots[src_.pick(static_cast<uint32_t>(std::min<size_t>(n.slots.size(), 65536)))];
    if (!target) return;
    note("load %s from %s", describe(target).c_str(), describe(id).c_str());
    p_push_root(target);
}

void Driver::op_weakref() {
    if (m_.roots.empty()) return;
    size_t index = src_.pick(static_cast<uint32_t>(m_.roots.size()));
    if (!info(m_.node(m_.roots[index]).kind).gc) return;
    uint64_t target;
    p_hold_root(index, &target);
    bool callback = src_.pick(3) != 0;
    CbAction action = callback ? choose_cb_action() : CbAction::None;
    note("weak reference (id %" PRIu64 ", %s) to %s", m_.next_id(), callback ? name(action) : "no callback",
         describe(target).c_str());
    uint64_t w = p_weakref(target, callback, action);
    p_push_root(w);
}

void Driver::op_garbage_break() {
    // Break the uncollectable cycles in the garbage list, then empty it.
    std::vector<uint64_t> listed = m_.garbage;
    note("break the %zu objects of the garbage list", listed.size());
    for (uint64_t id : listed) {
        const Node &n = m_.node(id);
        for (size_t i = 0; i < n.slots.size(); ++i)
            if (m_.node(id).slots[i]) p_set_slot(id, i, 0);
    }
    p_garbage_clear();
}

void Driver::op_track_any(bool track) {
    std::vector<uint64_t> candidates;
    for (auto &[id, n] : m_.nodes()) {
        const KindInfo &k = info(n.kind);
        if (n.alive && k.gc && !k.foreign && n.tracked != track) candidates.push_back(id);
    }
    if (candidates.empty()) return;
    std::sort(candidates.begin(), candidates.end());
    uint64_t id = candidates[src_.pick(static_cast<uint32_t>(std::min<size_t>(candidates.size(), 65536)))];
    note("%s %s (any live object)", track ? "track" : "untrack", describe(id).c_str());
    if (track)
        p_track(id);
    else
        p_untrack(id);
}

void Driver::op_resize() {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < m_.roots.size(); ++i) {
        const Node &n = m_.node(m_.roots[i]);
        if (info(n.kind).var && !n.tracked && n.refcnt == 1) candidates.push_back(i);
    }
    if (candidates.empty()) return;
    size_t index = candidates[src_.pick(static_cast<uint32_t>(candidates.size()))];
    size_t items = src_.pick(30) == 0 ? 1000 + src_.pick(1500) : src_.pick(12);
    note("resize %s to %zu items", describe(m_.roots[index]).c_str(), items);
    p_resize(index, items);
}

void Driver::step() {
    const bool crowded = m_.roots.size() > 300;
    int op = choose({
        crowded ? 40 : 160,  // 0 new
        crowded ? 10 : 60,   // 1 new cycle
        crowded ? 0 : 3,     // 2 new chain
        crowded ? 400 : 170, // 3 drop root
        crowded ? 60 : 12,   // 4 drop many
        30,                  // 5 dup root
        140,                 // 6 set slot
        70,                  // 7 load slot
        45,                  // 8 weak reference
        30,                  // 9 weak reference get
        12,                  // 10 untrack root
        12,                  // 11 track root
        6,                   // 12 track any
        3,                   // 13 untrack any
        15,                  // 14 resize
        45,                  // 15 young collection
        25,                  // 16 full collection
        2,                   // 17 freeze
        3,                   // 18 unfreeze
        4,                   // 19 garbage clear
        6,                   // 20 garbage break
        2,                   // 21 save-all toggle
        4,                   // 22 heap type
        8,                   // 23 safepoint
        2,                   // 24 full check
    });
    switch (op) {
    case 0: op_new(); break;
    case 1: op_new_cycle(); break;
    case 2: op_new_chain(); break;
    case 3:
        if (!m_.roots.empty()) {
            size_t i = src_.pick(static_cast<uint32_t>(m_.roots.size()));
            note("drop root %s", describe(m_.roots[i]).c_str());
            p_drop_root(i);
        }
        break;
    case 4: {
        size_t n = std::min<size_t>(m_.roots.size(), 1 + src_.pick(30));
        note("drop %zu roots", n);
        for (size_t k = 0; k < n; ++k) {
            canonicalize();  // (user code may have dropped roots)
            if (m_.roots.empty()) break;
            size_t index = pick_root();
            p_drop_root(index);
        }
        break;
    }
    case 5:
        if (!m_.roots.empty()) {
            uint64_t id = m_.roots[src_.pick(static_cast<uint32_t>(m_.roots.size()))];
            note("dup root %s", describe(id).c_str());
            p_push_root(id);
        }
        break;
    case 6: op_set_slot(); break;
    case 7: op_load_slot(); break;
    case 8: op_weakref(); break;
    case 9: {
        std::vector<size_t> weak;
        for (size_t i = 0; i < m_.roots.size(); ++i)
            if (m_.node(m_.roots[i]).kind == Kind::Weakref) weak.push_back(i);
        if (weak.empty()) break;
        size_t i = weak[src_.pick(static_cast<uint32_t>(weak.size()))];
        note("get weak reference %s", describe(m_.roots[i]).c_str());
        p_weakref_get(i);
        break;
    }
    case 10:
    case 11: {
        if (m_.roots.empty()) break;
        uint64_t id = m_.roots[src_.pick(static_cast<uint32_t>(m_.roots.size()))];
        const Node &n = m_.node(id);
        const KindInfo &k = info(n.kind);
        if (!k.gc || k.foreign || n.tracked != (op == 10)) break;
        note("%s %s", op == 10 ? "untrack" : "track", describe(id).c_str());
        if (op == 10)
            p_untrack(id);
        else
            p_track(id);
        break;
    }
    case 12: op_track_any(true); break;
    case 13: op_track_any(false); break;
    case 14: op_resize(); break;
    case 15: {
        int g = static_cast<int>(src_.pick(2));
        note("collect generation %d", g);
        p_collect(g);
        break;
    }
    case 16:
        note("collect generation 2");
        p_collect(2);
        if (std::string unexplained = m_.explain_survivors(); !unexplained.empty())
            fail("after a full collection, the model keeps objects nothing explains: %s", unexplained.c_str());
        break;
    case 17: note("freeze"); p_freeze(true); break;
    case 18: note("unfreeze"); p_freeze(false); break;
    case 19: note("clear the garbage list (%zu)", m_.garbage.size()); p_garbage_clear(); break;
    case 20: op_garbage_break(); break;
    case 21: note("DEBUG_SAVEALL %s", m_.save_all ? "off" : "on"); p_save_all(!m_.save_all); break;
    case 22: {
        bool final = src_.pick(2) != 0;
        note("heap type (id %" PRIu64 ")%s", m_.next_id(), final ? " with finalizer" : "");
        p_push_root(p_heap_type(final));
        break;
    }
    case 23: note("safepoint"); p_safepoint(); break;
    case 24: note("check"); full_check("requested"); break;
    }
}

void Driver::teardown() {
    in_teardown_ = true;
    m_.epoch = op_index_;
    note("teardown");
    p_save_all(false);
    for (int round = 0; round < 32; ++round) {
        for (canonicalize(); !m_.roots.empty(); canonicalize()) p_drop_root(m_.roots.size() - 1);
        p_garbage_clear();
        end_op();
        if (m_.alive_count() == 0) break;
        p_freeze(false);
        // Break every reference of every live object of ours (cycles through
        // untracked or non-GC objects, or without tp_clear, included).
        for (uint64_t id : m_.sorted_ids(true)) {
            if (!m_.exists(id) || !m_.node(id).alive || info(m_.node(id).kind).foreign) continue;
            cgc_object *op = ptr(id);
            cgc_incref(op);
            temps_.push_back(op);
            m_.hold(id);
            for (size_t i = 0; i < m_.node(id).slots.size(); ++i)
                if (m_.node(id).slots[i]) p_set_slot(id, i, 0);
        }
        end_op();
        p_collect(2);
        end_op();
    }
    if (m_.alive_count() != 0) {
        std::string left;
        for (uint64_t id : m_.sorted_ids(true)) left.append(" ").append(describe(id));
        fail("teardown could not free everything:%s", left.c_str());
    }
    full_check("teardown");
    if (!id2ptr_.empty()) fail("%zu objects are still alive in cyclegc after teardown", id2ptr_.size());
}

// ---- Checks ------------------------------------------------------------------------------

void Driver::check_roots() {
    if (roots_.size() != m_.roots.size()) {
        std::vector<uint64_t> world, model = m_.roots, only_world, only_model;
        for (cgc_object *op : roots_) world.push_back(ptr2id_.count(op) ? ptr2id_[op] : 0);
        std::sort(world.begin(), world.end());
        std::sort(model.begin(), model.end());
        std::set_difference(world.begin(), world.end(), model.begin(), model.end(), std::back_inserter(only_world));
        std::set_difference(model.begin(), model.end(), world.begin(), world.end(), std::back_inserter(only_model));
        std::string a, b;
        for (uint64_t id : only_world) a.append(" ").append(describe(id));
        for (uint64_t id : only_model) b.append(" ").append(describe(id));
        fail("%zu roots in the world, %zu in the model; only in the world:%s; only in the model:%s", roots_.size(),
             m_.roots.size(), a.c_str(), b.c_str());
    }
    for (size_t i = 0; i < roots_.size(); ++i) {
        if (!ptr2id_.count(roots_[i]))
            fail("root %zu (the model's %s) is %p, which cyclegc freed or never made", i,
                 describe(m_.roots[i]).c_str(), static_cast<void *>(roots_[i]));
        uint64_t id = id_of(roots_[i]);
        if (id != m_.roots[i])
            fail("root %zu is %s in the world, %s in the model", i, describe(id).c_str(), describe(m_.roots[i]).c_str());
        if (!is_foreign(roots_[i])) check_tag(roots_[i], "a root");
    }
}

int collect_visitor(cgc_object *op, void *arg) {
    static_cast<std::unordered_set<cgc_object *> *>(arg)->insert(op);
    return 1;
}

void Driver::full_check(const char *why) {
    ++stats_.full_checks;
    check_roots();
    // Every tracked object, and the generation of each.
    std::unordered_set<cgc_object *> tracked;
    cgc_visit_objects(collect_visitor, &tracked);
    std::unordered_map<cgc_object *, int> generation;
    for (int g = 0; g < 3; ++g) {
        cgc_object_list list{};
        if (cgc_get_objects(g, &list) < 0) fail("cgc_get_objects(%d) failed", g);
        for (cgc_ssize_t i = 0; i < list.count; ++i) {
            if (!generation.emplace(list.items[i], g).second) fail("an object is listed in two generations");
        }
        cgc_object_list_release(&list);
    }
    // Weak references and heap types are freed without a hook of ours:
    // not tracked means freed.
    std::vector<uint64_t> gone;
    for (uint64_t id : foreign_)
        if (!tracked.count(id2ptr_.at(id))) gone.push_back(id);
    for (uint64_t id : gone) {
        ptr2id_.erase(id2ptr_.at(id));
        id2ptr_.erase(id);
        foreign_.erase(id);
        silently_freed_.insert(id);
    }
    size_t alive = 0;
    for (uint64_t id : m_.sorted_ids(false)) {
        const Node &n = m_.node(id);
        const KindInfo &k = info(n.kind);
        auto found = id2ptr_.find(id);
        bool world_alive = found != id2ptr_.end();
        if (n.alive != world_alive)
            fail("[%s] object %s: the model says %s, cyclegc %s", why, describe(id).c_str(),
                 n.alive ? "alive" : "freed", world_alive ? "kept it (a leak)" : "freed it");
        const Counts &c = counts_[id];
        if (c.fin != n.fin_calls || c.del != n.del_calls || c.cb != n.cb_calls)
            fail("[%s] object %s: finalizer/tp_del/callback ran %d/%d/%d times, the model expects %d/%d/%d", why,
                 describe(id).c_str(), c.fin, c.del, c.cb, n.fin_calls, n.del_calls, n.cb_calls);
        if (!n.alive) continue;
        ++alive;
        cgc_object *op = found->second;
        if (!k.foreign) {
            check_tag(op, "a live object");
            if (static_cast<Kind>(tag_of(op)->kind) != n.kind) fail("object %" PRIu64 " changed kind", id);
        }
        if (op->ob_refcnt != n.refcnt)
            fail("[%s] object %s has reference count %td, the model expects %" PRId64, why, describe(id).c_str(),
                 op->ob_refcnt, n.refcnt);
        if (k.gc) {
            bool is_tracked = cgc_gc_is_tracked(op) != 0;
            if (is_tracked != n.tracked || is_tracked != (tracked.count(op) != 0))
                fail("[%s] object %s: tracked is %d (listed: %d), the model expects %d", why, describe(id).c_str(),
                     is_tracked, static_cast<int>(tracked.count(op)), n.tracked);
            if (n.tracked) {
                auto g = generation.find(op);
                int actual = g == generation.end() ? kPermanent : g->second;
                if (actual != n.gen)
                    fail("[%s] object %s is in generation %d, the model expects %d", why, describe(id).c_str(), actual,
                         n.gen);
            }
            if ((cgc_gc_is_finalized(op) != 0) != n.finalized)
                fail("[%s] object %s: finalized flag %d, the model expects %d", why, describe(id).c_str(),
                     cgc_gc_is_finalized(op), n.finalized);
            if (static_cast<size_t>(cgc_weakref_count(op)) != m_.weakref_count(id))
                fail("[%s] object %s has %td weak references, the model expects %zu", why, describe(id).c_str(),
                     cgc_weakref_count(op), m_.weakref_count(id));
        }
        if (n.kind == Kind::Weakref) {
            cgc_object *got = cgc_weakref_get(op);
            uint64_t actual = got ? id_of(got) : 0;
            cgc_xdecref(got);
            if (actual != n.referent)
                fail("[%s] weak reference %s reads %s, the model expects %s", why, describe(id).c_str(),
                     actual ? describe(actual).c_str() : "dead", n.referent ? describe(n.referent).c_str() : "dead");
        }
        if (n.type && op->ob_type != reinterpret_cast<cgc_type *>(ptr(n.type)))
            fail("object %" PRIu64 " has lost its heap type", id);
        SlotsView v = slots_of(op);
        if (v.n != n.slots.size())
            fail("[%s] object %s has %zu slots, the model expects %zu", why, describe(id).c_str(), v.n, n.slots.size());
        for (size_t i = 0; i < v.n; ++i) {
            cgc_object *s = v.get(i);
            uint64_t actual = s ? id_of(s) : 0;
            if (actual != n.slots[i])
                fail("[%s] slot %zu of object %s is %s, the model expects %s", why, i, describe(id).c_str(),
                     describe(actual).c_str(), describe(n.slots[i]).c_str());
        }
    }
    if (alive != id2ptr_.size()) {
        for (auto &[id, op] : id2ptr_)
            if (!m_.exists(id) || !m_.node(id).alive) fail("[%s] cyclegc has object %" PRIu64 " the model does not know", why, id);
    }
    // The garbage list, the counts, the statistics.
    cgc_object_list garbage{};
    if (cgc_get_garbage(&garbage) < 0) fail("cgc_get_garbage failed");
    std::vector<uint64_t> listed;
    for (cgc_ssize_t i = 0; i < garbage.count; ++i) listed.push_back(id_of(garbage.items[i]));
    cgc_object_list_release(&garbage);
    std::vector<uint64_t> expected = m_.garbage;
    std::sort(listed.begin(), listed.end());
    std::sort(expected.begin(), expected.end());
    if (listed != expected) {
        std::string a, b;
        for (uint64_t id : listed) a.append(" ").append(std::to_string(id));
        for (uint64_t id : expected) b.append(" ").append(std::to_string(id));
        fail("[%s] the garbage list holds [%s ], the model expects [%s ]", why, a.c_str(), b.c_str());
    }
    for (int g = 1; g < 3; ++g)
        if (cgc_get_count(g) != m_.count[g])
            fail("[%s] cgc_get_count(%d) is %td, the model expects %" PRId64, why, g, cgc_get_count(g), m_.count[g]);
    for (int g = 0; g < 3; ++g) {
        cgc_generation_stats s{};
        cgc_get_stats(g, &s);
        const GenStats &e = m_.stats[g];
        if (s.collections != e.collections || s.collected != e.collected || s.uncollectable != e.uncollectable ||
            s.examined != e.examined)
            fail("[%s] statistics of generation %d: %" PRIu64 " collections, %" PRIu64 " collected, %" PRIu64
                 " uncollectable, %" PRIu64 " examined; the model expects %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64,
                 why, g, s.collections, s.collected, s.uncollectable, s.examined, e.collections, e.collected,
                 e.uncollectable, e.examined);
    }
    size_t frozen = 0;
    for (auto &[id, n] : m_.nodes())
        if (n.alive && n.tracked && n.gen == kPermanent) ++frozen;
    if (static_cast<size_t>(cgc_get_freeze_count()) != frozen)
        fail("[%s] cgc_get_freeze_count() is %td, the model expects %zu", why, cgc_get_freeze_count(), frozen);
    if (unraisable_ != m_.unraisable)
        fail("[%s] %" PRIu64 " unraisable errors reported, the model expects %" PRIu64, why, unraisable_, m_.unraisable);
    // Forget the dead.
    for (auto &[id, n] : m_.nodes())
        if (!n.alive) counts_.erase(id);
    m_.forget_dead();
    silently_freed_.clear();
    stats_.max_live = std::max<uint64_t>(stats_.max_live, alive);
}

RunStats Driver::run() {
    g_driver = this;
    heap_ = cgc_heap_new();
    if (!heap_) fail("cgc_heap_new failed");
    cgc_heap_set_current(heap_);
    cgc_set_error_hook([](cgc_error_kind kind, const char *message, void *) { g_driver->on_error(kind, message); }, nullptr);
    if (cgc_add_collection_callback([](const char *phase, const cgc_collection_info *i, void *) {
            g_driver->on_collection(phase, i);
        }, nullptr) < 0)
        fail("cgc_add_collection_callback failed");

    // Automatic collection: off, at allocation, or at safepoints.
    int mode = static_cast<int>(src_.pick(4));
    cgc_ssize_t t0 = 5 + src_.pick(150), t1 = 1 + src_.pick(8), t2 = 1 + src_.pick(8);
    switch (mode) {
    case 0: cgc_disable(); break;
    case 1:
    case 2:
        cgc_set_threshold(0, t0);
        cgc_set_threshold(1, t1);
        cgc_set_threshold(2, t2);
        cgc_set_auto_mode(mode == 1 ? CGC_AUTO_AT_ALLOCATION : CGC_AUTO_AT_SAFEPOINT);
        break;
    default: break;  // CPython's thresholds, at allocation
    }
    note("start: automatic collection %s, thresholds %td %td %td",
         mode == 0 ? "off" : mode == 2 ? "at safepoints" : "at allocation", cgc_get_threshold(0),
         cgc_get_threshold(1), cgc_get_threshold(2));

    auto start = std::chrono::steady_clock::now();
    for (op_index_ = 0; op_index_ < opt_.max_ops; ++op_index_) {
        if (src_.exhausted()) break;
        if (opt_.seconds > 0 && (op_index_ & 255) == 0 &&
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > opt_.seconds)
            break;
        full_collection_in_op_ = false;
        m_.epoch = op_index_;
        step();
        end_op();
        check_roots();
        if (full_collection_in_op_ || (opt_.check_every && op_index_ % opt_.check_every == 0)) full_check("after the operation");
    }
    stats_.ops = op_index_;
    teardown();
    stats_.model = m_.events;
    cgc_heap_set_current(nullptr);
    uint64_t misuse = cgc_error_count(CGC_ERR_MISUSE);
    cgc_heap_delete(heap_);
    if (cgc_error_count(CGC_ERR_MISUSE) != misuse) fail("cgc_heap_delete refused to delete the heap");
    g_driver = nullptr;
    return stats_;
}

}  // namespace

void set_abort_on_failure(bool abort_on_failure) { g_abort_on_failure = abort_on_failure; }

RunStats run_sequence(Source &source, const Options &options) {
    Driver driver(source, options);
    return driver.run();
}

}  // namespace cgc_stress
