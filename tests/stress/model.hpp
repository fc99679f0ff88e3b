// The reference model of the stress driver: the object graph as the program
// sees it (objects, their references, external references, weak references),
// reference counting, and CPython's rules for what a collection frees, what
// it keeps (tp_del cycles, resurrection, cycles without tp_clear) and in
// which order user code runs (docs/design.md, CPython's gc_collect_main).
//
// The model knows nothing of cyclegc: it is a plain simulation. The driver
// (driver.cpp) applies every operation both to cyclegc and to the model and
// compares them. Everything the model predicts is independent of the order
// in which the collector visits objects (page order): finalizer and callback
// actions only touch their own object, the external references, or new
// objects whose ids derive from their creator.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cgc_stress {

// What an object is: its type's behaviour.
enum class Kind : uint8_t {
    Plain,         // static C GC type, 3 slots, traverse + clear
    Final,         // + tp_finalize
    NoClear,       // no tp_clear
    Legacy,        // tp_del (legacy finalizer): its cycles are uncollectable
    FinalNoClear,  // tp_finalize, no tp_clear
    Var,           // variable size (items are the slots), resizable while untracked
    VarFinal,      // variable size + tp_finalize
    Big,           // 40 slots (another size class)
    HeapPlain,     // instance of a heap type (PyType_FromSpec), default tp_dealloc
    HeapFinal,     // instance of a heap type with tp_finalize, default tp_dealloc
    Cxx,           // C++ object (cyclegc::make), a vector of refs
    CxxFinal,      // C++ object with finalize() (which may throw)
    Leaf,          // non-GC object without references
    Box,           // non-GC object with 2 references (invisible to the collector)
    HeapType,      // a heap type object (library-owned layout)
    Weakref,       // a weak reference object (library-owned layout)
    Count
};

// What a dealloc does when its finalizer resurrects the object.
enum class DeallocStyle : uint8_t {
    Static,   // finalizer first, then untrack (CPython's documented pattern): tracking unchanged
    Retrack,  // untrack, track, finalize (default dealloc, C++ objects): tracked in generation 0
    NonGc,
    Foreign,
};

struct KindInfo {
    const char *name;
    bool gc;
    bool finalizer;
    bool clear;
    bool legacy;
    bool var;
    bool heap_instance;
    bool cxx;
    bool foreign;      // layout owned by the library (no canary): heap types, weak references
    int fixed_slots;   // slots of a fixed-size kind (var kinds: chosen per object)
    DeallocStyle dealloc;
};
const KindInfo &info(Kind kind);

// What a finalizer does (one per object, chosen when it is created).
enum class FinAction : uint8_t {
    None,
    ResurrectSelf,   // stores a new reference to itself in the external references
    ResurrectChild,  // stores a new reference to its slot 0 in the external references
    DropSlots,       // clears its own slots
    AllocGarbage,    // allocates a new garbage 2-cycle
    WeakrefSelf,     // creates a weak reference (with callback) to itself, kept externally
    CallCollect,     // asks for a full collection (refused, 0, during one)
    UntrackSelf,     // untracks itself
    Throw,           // C++ only: throws (reported as unraisable)
    Count
};
const char *name(FinAction action);

// What a weak reference callback does.
enum class CbAction : uint8_t {
    None,
    DropSelf,      // drops one external reference to its own weak reference
    AllocGarbage,  // allocates a new garbage 2-cycle
    CallCollect,   // asks for a full collection (refused, 0, during one)
    Count
};
const char *name(CbAction action);

constexpr uint8_t kPermanent = 3;  // generation of frozen objects

// Ids of objects created by user code (finalizers, callbacks) derive from
// their creator, so that they do not depend on the order in which the
// collector runs that code. Regular ids are below 2^40.
inline uint64_t derived_id(uint64_t creator, unsigned k) { return (uint64_t(1) << 60) | (creator << 3) | k; }

struct Node {
    uint64_t id = 0;
    Kind kind = Kind::Plain;
    bool alive = true;
    bool tracked = false;
    bool finalized = false;
    uint8_t gen = 0;
    FinAction action = FinAction::None;
    std::vector<uint64_t> slots;  // 0: NULL
    uint64_t type = 0;            // heap instances: their heap type (a strong reference)
    bool type_final = false;      // heap types: their instances have tp_finalize
    // Weak reference objects.
    uint64_t referent = 0;  // 0 once dead
    bool has_callback = false;
    CbAction cb_action = CbAction::None;
    // Reference count and what ran.
    int64_t refcnt = 0;
    int fin_calls = 0;
    int del_calls = 0;
    int cb_calls = 0;
    uint64_t born = 0;  // collections started before it was created
    // Scratch of the collection being simulated.
    bool in_set = false;
    bool in_uc = false;
    bool reach = false;
    int64_t gc_refs = 0;
};

struct Prediction {
    int generation = 0;
    int64_t collected = 0;
    int64_t uncollectable = 0;
    int64_t candidates = 0;
    int64_t survived_clear = 0;  // still alive once their cycle was cleared: reported, not collected
};

struct GenStats {
    uint64_t collections = 0, collected = 0, uncollectable = 0, examined = 0;
};

// Counts of interesting events, for the report.
struct ModelStats {
    uint64_t collections[3] = {};
    uint64_t freed_by_collector = 0;   // objects freed while a collection ran
    uint64_t freed_by_refcount = 0;
    uint64_t uncollectable = 0;
    uint64_t resurrected = 0;          // objects a collection found alive again after finalizers
    uint64_t finalizers = 0;
    uint64_t callbacks = 0;
    uint64_t callbacks_in_collection = 0;
    uint64_t weakrefs_freed_by_callbacks = 0;
    uint64_t survived_clear = 0;       // left after their tp_clear (no tp_clear, or kept)
    uint64_t dealloc_resurrections = 0;
    uint64_t trashcan_untracked_resurrections = 0;
    uint64_t trashcan_retracked_resurrections = 0;
    uint64_t unraisable = 0;
    uint64_t explained_collections = 0;  // full collections checked by explain_survivors
};

class Model {
  public:
    // Failure reporting (the driver prints context and stops).
    std::function<void(const std::string &)> fail;
    // Asked when a Static-style object resurrects in its dealloc: was it
    // untracked when its dealloc started? (cyclegc's trashcan untracks
    // objects whose deallocation it defers.)
    std::function<bool(uint64_t)> untracked_at_dealloc;
    // Asked after a collection for objects whose generation depends on the
    // collector's order (see dying()): their generation in cyclegc.
    std::function<int(uint64_t)> generation_of;
    // How many times cyclegc ran the callback of a weak reference.
    std::function<int(uint64_t)> world_callbacks;
    // Checks the choices taken from cyclegc (after each operation).
    void settle();

    // ---- Ids and objects -------------------------------------------------
    uint64_t next_id() const { return next_id_; }
    uint64_t take_id() { return next_id_++; }
    bool exists(uint64_t id) const { return nodes_.count(id) != 0; }
    Node &node(uint64_t id);
    const Node &node(uint64_t id) const;
    const std::unordered_map<uint64_t, Node> &nodes() const { return nodes_; }
    std::vector<uint64_t> sorted_ids(bool alive_only) const;
    size_t alive_count() const { return alive_; }

    // A new object, reference count 1, held by the operation's temporaries.
    void alloc(uint64_t id, Kind kind, size_t slots, FinAction action, uint64_t type, bool track);
    void alloc_heap_type(uint64_t id, bool final);
    // A new weak reference to `target`, count 1, held by the temporaries.
    void alloc_weakref(uint64_t id, uint64_t target, bool callback, CbAction action);
    // The callback-less weak reference to `target` that cyclegc shares, or 0.
    uint64_t shared_weakref(uint64_t target) const;
    size_t weakref_count(uint64_t target) const;

    // ---- References --------------------------------------------------------
    void incref(uint64_t id);
    void decref(uint64_t id);
    void xdecref(uint64_t id) {
        if (id) decref(id);
    }
    void set_slot(uint64_t id, size_t slot, uint64_t target);
    void resize(uint64_t id, size_t slots);  // slots beyond the new size must be NULL
    void track(uint64_t id);
    void untrack(uint64_t id);

    // External references: the roots (a multiset; the driver keeps both
    // sides in the same order) and the operation's temporaries.
    std::vector<uint64_t> roots;  // 0: a dropped entry, compacted after the operation
    std::vector<uint64_t> root_epochs;  // the operation that added each root
    uint64_t epoch = 0;                 // the current operation
    std::vector<uint64_t> temps;
    bool roots_dirty = false;     // user code added or dropped roots: sort after the operation
    void push_root(uint64_t id);  // a new reference
    void hold(uint64_t id);       // a new reference in the temporaries
    void release_temps();
    void drop_root(size_t index);  // swap-remove
    void canonicalize_roots();

    // ---- The gc module -----------------------------------------------------
    std::vector<uint64_t> garbage;  // strong references
    void garbage_clear();
    void freeze();
    void unfreeze();
    bool save_all = false;
    int64_t count[3] = {};  // cgc_get_count(1), (2); count[0] is not modelled
    GenStats stats[3];
    uint64_t collections_started = 0;

    // Simulates cgc_collect(generation) from the current state.
    Prediction collect(int generation);
    // An incremental cycle's final step, a batch of its gathered set at a
    // time (the first starts the collection), on the graph as it is then:
    // steps 1 to 3. Returns the garbage that waits for the clear step (none
    // if uncollectable objects or DEBUG_SAVEALL made the batch clear it).
    std::vector<uint64_t> collect_batch(const std::vector<uint64_t> &batch, bool first);
    // The clear step, an object at a time in the collector's order: its
    // tp_clear; then, if still alive, it survived (back in generation 2).
    void clear_waiting(uint64_t id);
    void keep_waiting(uint64_t id);
    // The clear step's end: what is still alive survived. The collection's
    // prediction (`examined`: the cycle's candidates).
    Prediction finish_batches(int64_t examined);

    ModelStats events;
    uint64_t unraisable = 0;

    // Forgets dead nodes (after the driver compared them).
    void forget_dead();

    // Checks the model against CPython's rules right after a full collection
    // in which no finalizer or callback ran: every object that was unreachable
    // when it started and is still alive is uncollectable (reachable from a
    // tp_del object), or reachable from an external reference, the garbage
    // list, an untracked, non-GC or frozen object, or a cycle without
    // tp_clear. Returns "" or a description.
    std::string explain_survivors();

  private:
    void dying(uint64_t id);
    void drain();
    void detach(Node &weakref);
    void clear_weakrefs(uint64_t id, bool callbacks);
    void run_callbacks(const std::vector<uint64_t> &queue, bool in_collection, int64_t *freed);
    void run_finalizer(uint64_t id, bool in_collection);
    void run_callback(uint64_t weakref, bool in_collection);
    void alloc_garbage_cycle(uint64_t creator);
    void clear_object(uint64_t id);
    template <typename F>
    void for_each_edge(const Node &n, F f) const {
        for (uint64_t s : n.slots)
            if (s) f(s);
        if (n.type) f(n.type);
    }
    struct Unreachable {
        std::vector<uint64_t> remaining;  // the garbage, to clear
        std::vector<uint64_t> uc;         // set apart as uncollectable
    };
    Unreachable find_and_finalize(std::vector<uint64_t> set, uint8_t older, bool full, Prediction &p);
    void clear_all(const std::vector<uint64_t> &remaining, uint8_t older, Prediction &p);
    void keep_survivors(const std::vector<uint64_t> &remaining, uint8_t older, bool saved, Prediction &p);
    void keep_uncollectable(const std::vector<uint64_t> &uc, uint8_t older, Prediction &p);
    void add_stats(int generation, const Prediction &p);
    // Steps 1 of a collection on `set`: marks reach on those referenced from
    // outside the set and what they reach.
    void mark_from_outside(const std::vector<uint64_t> &set);

    std::unordered_map<uint64_t, Node> nodes_;
    std::unordered_map<uint64_t, std::vector<uint64_t>> weak_;  // referent -> weak references
    std::vector<uint64_t> pending_;                             // count reached 0
    std::vector<uint64_t> last_full_unreachable_;
    bool last_full_user_code_ = false;
    std::vector<uint64_t> ambiguous_;
    std::vector<uint64_t> skipped_;
    std::vector<uint64_t> static_resurrected_;
    std::vector<std::pair<uint64_t, uint64_t>> early_;
    bool finalizing_ = false;
    Prediction cycle_;               // the incremental cycle's batches so far
    std::vector<uint64_t> waiting_;  // their garbage, waiting for the clear step
    bool draining_ = false;
    uint64_t next_id_ = 1;
    size_t alive_ = 0;
};

}  // namespace cgc_stress
