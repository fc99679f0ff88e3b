// The stress driver's internals, shared by its files: the layouts of the
// objects on the cyclegc side ("the world"), the types that make them, and
// the Driver, which applies every operation to the world and to the model.
#pragma once

#include "driver.hpp"
#include "incremental.hpp"  // (the incremental cycle the driver observes: hooks.cpp)

#include <cyclegc/cyclegc.h>
#include <cyclegc/cyclegc.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace cgc_stress::detail {

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

// ---- Types (world_types.cpp) -------------------------------------------------------

extern cgc_type plain_type;
extern cgc_type_spec heap_plain_spec;
extern cgc_type_spec heap_final_spec;
cgc_type *static_type(Kind kind);

// The slots of one of our objects, whatever its layout.
struct SlotsView {
    cgc_object **c = nullptr;  // C layouts
    CxxNode *cxx = nullptr;    // C++ objects
    size_t n = 0;
    cgc_object *get(size_t i) const { return c ? c[i] : cxx->slots[i].get(); }
};

bool is_var(const cgc_object *op);
// The tag that follows the object header, whatever the layout.
Tag *tag_of(cgc_object *op);
// Weak references and heap types: objects of cyclegc's own types.
bool is_foreign(const cgc_object *op);
SlotsView slots_of(cgc_object *op);
// Stores `value` (a new reference, or NULL) in slot i and drops the old one
// (Py_XSETREF).
void store_slot(cgc_object *op, size_t i, cgc_object *value);

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
    void make_garbage_pair(uint64_t id, const char *where);

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
    void p_slice();
    void on_incremental(const cyclegc::internal::IncrementalCycle &cycle, cyclegc::internal::IncrementalEvent event);
    void check_prediction(const Prediction &expected, const cgc_collection_info *info, int64_t reported_survivors);
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
    // An incremental cycle's collection (its final and clear steps, over
    // several slices): started, not yet reported; the batch being proven
    // (its first?); the ids of the cycle's to-clear list, entry by entry,
    // and how many of them the model cleared, and checked for survivors; the
    // survivors the clearing reported.
    bool cycle_open_ = false;
    bool batch_first_ = false;
    std::vector<uint64_t> batch_ids_;
    size_t to_clear_before_ = 0;
    std::vector<uint64_t> clear_ids_;
    size_t cleared_upto_ = 0;
    size_t kept_upto_ = 0;
    int64_t cycle_survivors_ = 0;
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

// The running driver (the types' handlers call its hooks).
extern Driver *g_driver;
extern bool g_abort_on_failure;

}  // namespace cgc_stress::detail
