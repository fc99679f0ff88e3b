// The reference model (see model.hpp).
#include "model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace cgc_stress {

namespace {

// CGC_STRESS_DEBUG_ID=<id>: the model prints what happens to that object.
const uint64_t g_debug_id = [] {
    const char *text = std::getenv("CGC_STRESS_DEBUG_ID");
    return text ? std::strtoull(text, nullptr, 0) : 0;
}();
#define DEBUG_ID(id, ...)                                                  \
    do {                                                                   \
        if (g_debug_id && (id) == g_debug_id) {                            \
            std::fprintf(stderr, "  model[%llu]: ", (unsigned long long)(id)); \
            std::fprintf(stderr, __VA_ARGS__);                             \
            std::fprintf(stderr, "\n");                                    \
        }                                                                  \
    } while (0)

using DS = DeallocStyle;

// name, gc, finalizer, clear, legacy, var, heap_instance, cxx, foreign, fixed slots, dealloc
const KindInfo kInfo[] = {
    {"Plain", true, false, true, false, false, false, false, false, 3, DS::Static},
    {"Final", true, true, true, false, false, false, false, false, 3, DS::Static},
    {"NoClear", true, false, false, false, false, false, false, false, 3, DS::Static},
    {"Legacy", true, false, true, true, false, false, false, false, 3, DS::Static},
    {"FinalNoClear", true, true, false, false, false, false, false, false, 3, DS::Static},
    {"Var", true, false, true, false, true, false, false, false, 0, DS::Static},
    {"VarFinal", true, true, true, false, true, false, false, false, 0, DS::Static},
    {"Big", true, false, true, false, false, false, false, false, 40, DS::Static},
    {"HeapPlain", true, false, true, false, false, true, false, false, 3, DS::Retrack},
    {"HeapFinal", true, true, true, false, false, true, false, false, 3, DS::Retrack},
    {"Cxx", true, false, true, false, false, false, true, false, 0, DS::Retrack},
    {"CxxFinal", true, true, true, false, false, false, true, false, 0, DS::Retrack},
    {"Leaf", false, false, false, false, false, false, false, false, 0, DS::NonGc},
    {"Box", false, false, false, false, false, false, false, false, 2, DS::NonGc},
    {"HeapType", true, false, true, false, false, false, false, true, 0, DS::Foreign},
    {"Weakref", true, false, true, false, false, false, false, true, 0, DS::Foreign},
};
static_assert(sizeof kInfo / sizeof *kInfo == static_cast<size_t>(Kind::Count));

}  // namespace

const KindInfo &info(Kind kind) { return kInfo[static_cast<size_t>(kind)]; }

const char *name(FinAction action) {
    static const char *const names[] = {"none",         "resurrect-self", "resurrect-child",
                                        "drop-slots",   "alloc-garbage",  "weakref-self",
                                        "call-collect", "untrack-self",   "throw"};
    return names[static_cast<size_t>(action)];
}

const char *name(CbAction action) {
    static const char *const names[] = {"none", "drop-self", "alloc-garbage", "call-collect"};
    return names[static_cast<size_t>(action)];
}

Node &Model::node(uint64_t id) {
    auto found = nodes_.find(id);
    if (found == nodes_.end()) {
        fail("model: unknown object id " + std::to_string(id));
        std::abort();
    }
    return found->second;
}

const Node &Model::node(uint64_t id) const { return const_cast<Model *>(this)->node(id); }

std::vector<uint64_t> Model::sorted_ids(bool alive_only) const {
    std::vector<uint64_t> ids;
    ids.reserve(nodes_.size());
    for (auto &[id, n] : nodes_)
        if (!alive_only || n.alive) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
}

void Model::alloc(uint64_t id, Kind kind, size_t slots, FinAction action, uint64_t type, bool track) {
    if (nodes_.count(id)) fail("model: object id " + std::to_string(id) + " created twice");
    Node &n = nodes_[id];
    n.id = id;
    n.kind = kind;
    n.action = action;
    n.slots.assign(slots, 0);
    n.refcnt = 1;
    n.born = collections_started;
    n.type = type;
    if (type) incref(type);
    ++alive_;
    temps.push_back(id);
    if (track) this->track(id);
}

void Model::alloc_heap_type(uint64_t id, bool final) {
    alloc(id, Kind::HeapType, 0, FinAction::None, 0, true);
    node(id).type_final = final;
}

void Model::alloc_weakref(uint64_t id, uint64_t target, bool callback, CbAction action) {
    alloc(id, Kind::Weakref, 0, FinAction::None, 0, true);
    Node &w = node(id);
    w.referent = target;
    w.has_callback = callback;
    w.cb_action = action;
    weak_[target].push_back(id);
}

uint64_t Model::shared_weakref(uint64_t target) const {
    auto found = weak_.find(target);
    if (found == weak_.end()) return 0;
    for (uint64_t w : found->second)
        if (!node(w).has_callback) return w;
    return 0;
}

size_t Model::weakref_count(uint64_t target) const {
    auto found = weak_.find(target);
    return found == weak_.end() ? 0 : found->second.size();
}

void Model::incref(uint64_t id) {
    Node &n = node(id);
    if (!n.alive) fail("model: incref of dead object " + std::to_string(id));
    ++n.refcnt;
}

void Model::decref(uint64_t id) {
    Node &n = node(id);
    if (!n.alive) fail("model: decref of dead object " + std::to_string(id));
    if (--n.refcnt == 0) {
        pending_.push_back(id);
        if (!draining_) drain();
    } else if (n.refcnt < 0) {
        fail("model: negative count for object " + std::to_string(id));
    }
}

void Model::drain() {
    draining_ = true;
    while (!pending_.empty()) {
        uint64_t id = pending_.back();
        pending_.pop_back();
        dying(id);
    }
    draining_ = false;
}

void Model::set_slot(uint64_t id, size_t slot, uint64_t target) {
    if (target) incref(target);
    Node &n = node(id);
    uint64_t old = n.slots.at(slot);
    n.slots[slot] = target;
    xdecref(old);
}

void Model::resize(uint64_t id, size_t slots) {
    Node &n = node(id);
    for (size_t i = slots; i < n.slots.size(); ++i)
        if (n.slots[i]) fail("model: resize drops a reference");
    n.slots.resize(slots, 0);
}

void Model::track(uint64_t id) {
    Node &n = node(id);
    n.tracked = true;
    n.gen = 0;
    n.in_set = n.in_uc = false;
}

void Model::untrack(uint64_t id) {
    Node &n = node(id);
    n.tracked = false;
    n.in_set = n.in_uc = false;
}

void Model::push_root(uint64_t id) {
    incref(id);
    roots.push_back(id);
    root_epochs.push_back(epoch);
}

void Model::hold(uint64_t id) {
    incref(id);
    temps.push_back(id);
}

void Model::release_temps() {
    std::vector<uint64_t> held;
    held.swap(temps);
    for (uint64_t id : held) decref(id);
}

void Model::drop_root(size_t index) {
    uint64_t id = roots.at(index);
    roots[index] = roots.back();
    roots.pop_back();
    root_epochs[index] = root_epochs.back();
    root_epochs.pop_back();
    xdecref(id);
}

void Model::canonicalize_roots() {
    std::vector<std::pair<uint64_t, uint64_t>> entries;  // id, epoch
    for (size_t i = 0; i < roots.size(); ++i)
        if (roots[i]) entries.emplace_back(roots[i], root_epochs[i]);
    if (roots_dirty) std::sort(entries.begin(), entries.end());
    roots.clear();
    root_epochs.clear();
    for (auto &[id, e] : entries) {
        roots.push_back(id);
        root_epochs.push_back(e);
    }
    roots_dirty = false;
}

void Model::garbage_clear() {
    std::vector<uint64_t> dropped;
    dropped.swap(garbage);
    for (uint64_t id : dropped) decref(id);
}

void Model::freeze() {
    for (auto &[id, n] : nodes_)
        if (n.alive && n.tracked) n.gen = kPermanent;
    count[0] = count[1] = count[2] = 0;
}

void Model::unfreeze() {
    for (auto &[id, n] : nodes_)
        if (n.alive && n.tracked && n.gen == kPermanent) n.gen = 2;
}

// ---- Death -------------------------------------------------------------

void Model::detach(Node &w) {
    if (!w.referent) return;
    DEBUG_ID(w.id, "detached from %llu", (unsigned long long)w.referent);
    DEBUG_ID(w.referent, "weak reference %llu detached", (unsigned long long)w.id);
    auto found = weak_.find(w.referent);
    if (found != weak_.end()) {
        auto &list = found->second;
        list.erase(std::remove(list.begin(), list.end(), w.id), list.end());
        if (list.empty()) weak_.erase(found);
    }
    w.referent = 0;
}

void Model::run_callbacks(const std::vector<uint64_t> &queue, bool in_collection, int64_t *freed) {
    for (uint64_t w : queue) {
        Node &n = node(w);
        DEBUG_ID(w, "callback (%s)", in_collection ? "in a collection" : "at death");
        ++n.cb_calls;
        ++events.callbacks;
        if (in_collection) ++events.callbacks_in_collection;
        run_callback(w, in_collection);
        if (freed && node(w).refcnt == 1) {
            ++*freed;
            ++events.weakrefs_freed_by_callbacks;
        }
        decref(w);
    }
}

// A referent dies by reference counting: its weak references are cleared
// and their callbacks run. When a weak reference dies in the same cascade as
// its referent, whether its callback runs depends on which dies first, an
// order the model does not reproduce: there the model follows cyclegc
// (`world_callbacks`) and checks afterwards that the choice was possible
// (settle()).
void Model::clear_weakrefs(uint64_t id, bool callbacks) {
    auto found = weak_.find(id);
    if (found == weak_.end()) return;
    std::vector<uint64_t> list = found->second;
    std::vector<uint64_t> queue;
    for (uint64_t w : list) {
        Node &n = node(w);
        detach(n);
        if (!callbacks || !n.has_callback) continue;
        bool world_ran = !world_callbacks || world_callbacks(w) > n.cb_calls;
        if (!world_ran) {
            DEBUG_ID(w, "callback not run by cyclegc: it must die in this operation");
            skipped_.push_back(w);
        } else if (n.refcnt == 0) {
            // Dying already (pending): cyclegc ran its callback first.
            ++n.cb_calls;
            ++events.callbacks;
            run_callback(w, false);
        } else {
            incref(w);
            queue.push_back(w);
        }
    }
    run_callbacks(queue, false, nullptr);
}

void Model::settle() {
    for (uint64_t id : static_resurrected_) {
        Node &n = node(id);
        if (!n.alive || !n.tracked || n.in_set || n.in_uc) continue;
        int actual = generation_of ? generation_of(id) : n.gen;
        if (actual != n.gen && actual != 0)
            fail("object " + std::to_string(id) + " resurrected by its finalizer at deallocation is in generation " +
                 std::to_string(actual) + ", expected " + std::to_string(n.gen) + " (or 0, if deferred)");
        if (actual != n.gen) ++events.trashcan_retracked_resurrections;
        n.gen = static_cast<uint8_t>(actual);
    }
    static_resurrected_.clear();
    for (uint64_t w : skipped_)
        if (node(w).alive)
            fail("weak reference " + std::to_string(w) + " outlived its referent but its callback did not run");
    for (auto [w, referent] : early_)
        if (node(referent).alive)
            fail("the callback of weak reference " + std::to_string(w) + " ran while its referent " +
                 std::to_string(referent) + " is alive");
    skipped_.clear();
    early_.clear();
}

void Model::dying(uint64_t id) {
    Node &n = node(id);
    const KindInfo &k = info(n.kind);
    DEBUG_ID(id, "dying (in set %d, uncollectable %d, finalizing %d)", n.in_set, n.in_uc, finalizing_);
    if (n.refcnt != 0) fail("model: object " + std::to_string(id) + " dies with count " + std::to_string(n.refcnt));
    if (k.gc && k.finalizer && !n.finalized) {
        // PyObject_CallFinalizerFromDealloc: weak references wait for it.
        n.finalized = true;
        ++n.fin_calls;
        ++events.finalizers;
        n.refcnt = 1;
        run_finalizer(id, false);
        Node &again = node(id);
        if (--again.refcnt > 0) {
            ++events.dealloc_resurrections;
            if (k.dealloc == DeallocStyle::Retrack) {
                again.tracked = true;
                again.gen = 0;
                again.in_set = again.in_uc = false;
            } else if (again.tracked && untracked_at_dealloc && untracked_at_dealloc(id)) {
                // Deferred by the trashcan, which untracked it (cyclegc before
                // f6184a3): it lives on untracked.
                ++events.trashcan_untracked_resurrections;
                again.tracked = false;
                again.in_set = again.in_uc = false;
            } else if (again.tracked) {
                // Tracked as before, in the same generation; or, if the
                // trashcan deferred it (re-tracked before its dealloc), in
                // generation 0. The driver tells which (settle()).
                static_resurrected_.push_back(id);
            }
            return;
        }
    }
    if (k.gc) clear_weakrefs(id, true);
    Node &m = node(id);
    if (m.kind == Kind::Legacy) ++m.del_calls;
    if (m.kind == Kind::Weakref) {
        if (m.referent && m.has_callback && world_callbacks && world_callbacks(id) > m.cb_calls) {
            // cyclegc freed its referent first (same cascade): the callback ran.
            early_.emplace_back(id, m.referent);
            ++m.cb_calls;
            ++events.callbacks;
            run_callback(id, false);
        }
        detach(node(id));
    }
    m.alive = false;
    m.tracked = false;
    m.in_set = m.in_uc = false;
    --alive_;
    std::vector<uint64_t> slots;
    slots.swap(m.slots);
    uint64_t type = m.type;
    for (uint64_t s : slots)
        if (s) decref(s);
    if (type) decref(type);
}

// ---- User code -----------------------------------------------------------

void Model::alloc_garbage_cycle(uint64_t creator) {
    uint64_t a = derived_id(creator, 0), b = derived_id(creator, 1);
    alloc(a, Kind::Plain, 3, FinAction::None, 0, true);
    alloc(b, Kind::Plain, 3, FinAction::None, 0, true);
    temps.pop_back();
    temps.pop_back();
    set_slot(a, 0, b);
    set_slot(b, 0, a);
    decref(a);
    decref(b);
}

void Model::run_finalizer(uint64_t id, bool in_collection) {
    (void)in_collection;
    Node &n = node(id);
    switch (n.action) {
    case FinAction::None:
    case FinAction::CallCollect:
    case FinAction::Count: break;
    case FinAction::ResurrectSelf:
        push_root(id);
        roots_dirty = true;
        break;
    case FinAction::ResurrectChild:
        if (!n.slots.empty() && n.slots[0]) {
            push_root(n.slots[0]);
            roots_dirty = true;
        }
        break;
    case FinAction::DropSlots:
        for (size_t i = 0; i < node(id).slots.size(); ++i) {
            Node &again = node(id);
            uint64_t old = again.slots[i];
            again.slots[i] = 0;
            xdecref(old);
        }
        break;
    case FinAction::AllocGarbage: alloc_garbage_cycle(id); break;
    case FinAction::WeakrefSelf: {
        uint64_t w = derived_id(id, 2);
        alloc_weakref(w, id, true, CbAction::None);
        temps.pop_back();
        roots.push_back(w);  // takes over the new reference
        root_epochs.push_back(epoch);
        roots_dirty = true;
        break;
    }
    case FinAction::UntrackSelf: untrack(id); break;
    case FinAction::Throw:
        ++unraisable;
        ++events.unraisable;
        break;
    }
}

void Model::run_callback(uint64_t w, bool in_collection) {
    (void)in_collection;
    switch (node(w).cb_action) {
    case CbAction::None:
    case CbAction::CallCollect:
    case CbAction::Count: break;
    case CbAction::DropSelf: {
        // One reference to it that existed before this operation (see the driver).
        for (size_t i = 0; i < roots.size(); ++i) {
            if (roots[i] != w || root_epochs[i] >= epoch) continue;
            roots[i] = 0;
            roots_dirty = true;
            decref(w);
            break;
        }
        break;
    }
    case CbAction::AllocGarbage: alloc_garbage_cycle(w); break;
    }
}

// tp_clear as the collector calls it.
void Model::clear_object(uint64_t id) {
    Node &n = node(id);
    switch (n.kind) {
    case Kind::Weakref: detach(n); break;
    case Kind::HeapType: break;  // type_clear keeps the base
    case Kind::Cxx:
    case Kind::CxxFinal: {  // the tracer empties the container
        std::vector<uint64_t> dropped;
        dropped.swap(n.slots);
        for (uint64_t s : dropped)
            if (s) decref(s);
        break;
    }
    default:
        for (size_t i = 0; i < node(id).slots.size(); ++i) {
            Node &again = node(id);
            uint64_t old = again.slots[i];
            again.slots[i] = 0;
            xdecref(old);
        }
    }
}

// ---- Collection ------------------------------------------------------------

void Model::mark_from_outside(const std::vector<uint64_t> &set) {
    for (uint64_t id : set) {
        Node &n = node(id);
        n.gc_refs = n.refcnt;
        n.reach = false;
    }
    for (uint64_t id : set)
        for_each_edge(node(id), [&](uint64_t t) {
            Node &target = node(t);
            if (target.in_set) --target.gc_refs;
        });
    std::vector<uint64_t> stack;
    for (uint64_t id : set) {
        Node &n = node(id);
        if (n.gc_refs < 0) fail("model: negative gc_refs for " + std::to_string(id));
        if (n.gc_refs > 0 && !n.reach) {
            n.reach = true;
            stack.push_back(id);
        }
    }
    while (!stack.empty()) {
        uint64_t id = stack.back();
        stack.pop_back();
        for_each_edge(node(id), [&](uint64_t t) {
            Node &target = node(t);
            if (target.in_set && !target.reach) {
                target.reach = true;
                stack.push_back(t);
            }
        });
    }
}

Prediction Model::collect(int generation) {
    const bool full = generation == 2;
    const uint8_t older = static_cast<uint8_t>(full ? 2 : generation + 1);
    ++collections_started;
    ++events.collections[generation];
    if (generation < 2) ++count[generation + 1];
    for (int g = 0; g <= generation; ++g) count[g] = 0;

    Prediction p;
    p.generation = generation;
    const uint64_t user_code_before = events.finalizers + events.callbacks;
    std::vector<uint64_t> set;
    for (auto &[id, n] : nodes_)
        if (n.alive && n.tracked && n.gen != kPermanent && (full || n.gen <= generation)) set.push_back(id);
    p.candidates = static_cast<int64_t>(set.size());
    Unreachable found = find_and_finalize(set, older, full, p);
    clear_all(found.remaining, older, p);
    keep_uncollectable(found.uc, older, p);
    if (full) last_full_user_code_ = events.finalizers + events.callbacks != user_code_before;
    add_stats(generation, p);
    return p;
}

std::vector<uint64_t> Model::collect_batch(const std::vector<uint64_t> &batch, bool first) {
    if (first) {
        ++collections_started;
        ++events.collections[2];
        cycle_ = Prediction{};
        cycle_.generation = 2;
        waiting_.clear();
    }
    count[2] = 0;
    std::vector<uint64_t> set;
    for (uint64_t id : batch)
        if (node(id).alive && node(id).tracked) set.push_back(id);
    Unreachable found = find_and_finalize(set, 2, false, cycle_);
    std::vector<uint64_t> waiting;
    // (Legacy finalizers and DEBUG_SAVEALL clear the batch's garbage at once.)
    if (found.uc.empty() && !save_all)
        waiting = found.remaining;
    else
        clear_all(found.remaining, 2, cycle_);
    keep_uncollectable(found.uc, 2, cycle_);
    waiting_.insert(waiting_.end(), waiting.begin(), waiting.end());
    return waiting;
}

void Model::clear_waiting(uint64_t id) {
    Node &n = node(id);
    if (!n.alive || !n.in_set || !info(n.kind).clear) return;
    incref(id);
    clear_object(id);
    decref(id);
}

void Model::keep_waiting(uint64_t id) { keep_survivors({id}, 2, false, cycle_); }

Prediction Model::finish_batches(int64_t examined) {
    keep_survivors(waiting_, 2, false, cycle_);
    waiting_.clear();
    settle();
    cycle_.candidates = examined;
    add_stats(2, cycle_);
    return cycle_;
}

void Model::add_stats(int generation, const Prediction &p) {
    GenStats &s = stats[generation];
    s.collections++;
    s.collected += static_cast<uint64_t>(p.collected);
    s.uncollectable += static_cast<uint64_t>(p.uncollectable);
    s.examined += static_cast<uint64_t>(p.candidates);
}

// Steps 1 to 3 on `set`, and the silent clearing of weak references: adds
// to p.collected what they free and the garbage left to clear.
Model::Unreachable Model::find_and_finalize(std::vector<uint64_t> set, uint8_t older, bool full, Prediction &p) {
    std::sort(set.begin(), set.end());
    for (uint64_t id : set) node(id).in_set = true;
    if (g_debug_id && exists(g_debug_id))
        DEBUG_ID(g_debug_id, "collection of generation %d starts: alive %d, tracked %d, gen %d, count %lld, candidate %d",
                 older, node(g_debug_id).alive, node(g_debug_id).tracked, node(g_debug_id).gen,
                 (long long)node(g_debug_id).refcnt, node(g_debug_id).in_set);

    // 1. The unreachable set.
    mark_from_outside(set);
    std::vector<uint64_t> unreachable;
    for (uint64_t id : set) {
        Node &n = node(id);
        if (n.reach) {
            n.in_set = false;
            n.gen = older;
        } else {
            DEBUG_ID(id, "unreachable");
            unreachable.push_back(id);
        }
    }

    // Legacy finalizers and all they reach: uncollectable.
    std::vector<uint64_t> uc;
    for (uint64_t id : unreachable) {
        Node &n = node(id);
        if (info(n.kind).legacy) {
            n.in_set = false;
            n.in_uc = true;
            uc.push_back(id);
        }
    }
    for (size_t i = 0; i < uc.size(); ++i)
        for_each_edge(node(uc[i]), [&](uint64_t t) {
            Node &target = node(t);
            if (target.in_set) {
                target.in_set = false;
                target.in_uc = true;
                uc.push_back(t);
            }
        });
    unreachable.erase(std::remove_if(unreachable.begin(), unreachable.end(),
                                     [&](uint64_t id) { return !node(id).in_set; }),
                      unreachable.end());
    if (full) last_full_unreachable_ = unreachable;  // the uncollectable ones are kept by rule (a)

    // 2. Weak references to garbage: cleared; callbacks of the reachable ones.
    std::vector<uint64_t> queue;
    for (uint64_t id : unreachable) {
        Node &n = node(id);
        if (!n.alive || !n.in_set) continue;
        if (n.kind == Kind::Weakref) detach(n);
        auto found = weak_.find(id);
        if (found == weak_.end()) continue;
        std::vector<uint64_t> list = found->second;
        for (uint64_t w : list) {
            Node &wn = node(w);
            detach(wn);
            if (wn.has_callback && !wn.in_set) {
                incref(w);
                queue.push_back(w);
            }
        }
    }
    bool ran = !queue.empty();
    int64_t weakrefs_freed = 0;
    run_callbacks(queue, true, &weakrefs_freed);

    // Finalizers (PEP 442), all before any tp_clear.
    // A member whose finalizer can run from its dealloc (when another
    // finalizer drops the last reference to it) instead of from the
    // collector: which comes first depends on the collector's order. If it
    // resurrects, from the collector it survives into the older generation;
    // from a default or C++ dealloc it is re-tracked in generation 0, and so
    // is it from a static type's dealloc that the trashcan deferred (tracked
    // again before the dealloc runs). All are right; the driver tells which
    // happened (generation_of).
    finalizing_ = true;
    ambiguous_.clear();
    for (uint64_t id : unreachable) {
        const Node &n = node(id);
        if (n.alive && n.in_set && info(n.kind).finalizer && !n.finalized) ambiguous_.push_back(id);
    }
    for (uint64_t id : unreachable) {
        Node &n = node(id);
        if (!n.alive || !n.in_set) continue;
        if (!info(n.kind).finalizer || n.finalized) continue;
        n.finalized = true;
        ++n.fin_calls;
        ++events.finalizers;
        incref(id);
        run_finalizer(id, true);
        decref(id);
        ran = true;
    }
    finalizing_ = false;

    // 3. Resurrection.
    std::vector<uint64_t> remaining;
    for (uint64_t id : unreachable) {
        Node &n = node(id);
        if (n.alive && n.in_set) remaining.push_back(id);
    }
    if (ran) {
        mark_from_outside(remaining);
        std::vector<uint64_t> still;
        for (uint64_t id : remaining) {
            Node &n = node(id);
            if (n.reach) {
                n.in_set = false;
                n.gen = older;
                ++events.resurrected;
            } else {
                still.push_back(id);
            }
        }
        remaining.swap(still);
    }
    // Weak references made meanwhile, and garbage weak references: cleared
    // without callbacks.
    for (uint64_t id : remaining) {
        Node &n = node(id);
        if (n.kind == Kind::Weakref) detach(n);
        auto found = weak_.find(id);
        if (found == weak_.end()) continue;
        std::vector<uint64_t> list = found->second;
        for (uint64_t w : list) detach(node(w));
    }
    p.collected += weakrefs_freed + static_cast<int64_t>(remaining.size());
    return Unreachable{remaining, uc};
}

// Step 4 on the garbage `remaining`: each tp_clear, then what is still
// alive survived (not collected: an object cleared early may be freed by a
// later clear).
void Model::clear_all(const std::vector<uint64_t> &remaining, uint8_t older, Prediction &p) {
    for (uint64_t id : remaining) {
        Node &n = node(id);
        if (!n.alive || !n.in_set) continue;
        if (save_all) {
            garbage.push_back(id);
            incref(id);
        } else if (info(n.kind).clear) {
            incref(id);
            clear_object(id);
            decref(id);
        }
    }
    keep_survivors(remaining, older, save_all, p);
}

// What is still alive once its cycle was cleared goes to `older`; reported
// by the collector unless DEBUG_SAVEALL `saved` it in the garbage list.
void Model::keep_survivors(const std::vector<uint64_t> &remaining, uint8_t older, bool saved, Prediction &p) {
    int64_t survived = 0;
    for (uint64_t id : remaining) {
        Node &n = node(id);
        if (!n.alive || !n.in_set) continue;
        n.in_set = false;
        n.gen = older;
        ++events.survived_clear;
        if (!saved) ++survived;
    }
    p.survived_clear += survived;
    p.collected -= survived;
    for (uint64_t id : remaining)
        if (!node(id).alive) ++events.freed_by_collector;
}

// The uncollectable objects set apart by step 1 (legacy finalizers and all
// they reach), and the objects resurrected by their finalizers.
void Model::keep_uncollectable(const std::vector<uint64_t> &uc, uint8_t older, Prediction &p) {
    // An uncollectable object resurrected by its finalizer in a deallocation
    // the trashcan deferred was untracked, then tracked again in generation
    // 0: it left the uncollectable set (not counted). The driver tells.
    for (uint64_t id : static_resurrected_) {
        Node &n = node(id);
        if (n.alive && n.tracked && n.in_uc && generation_of && generation_of(id) == 0) {
            n.in_uc = false;
            n.gen = 0;
            ++events.trashcan_retracked_resurrections;
        }
    }
    // Uncollectable objects still alive.
    int64_t uncollectable = 0;
    for (uint64_t id : uc) {
        Node &n = node(id);
        if (!n.alive || !n.in_uc) continue;
        ++uncollectable;
        if (save_all || info(n.kind).legacy) {
            garbage.push_back(id);
            incref(id);
        }
    }
    for (uint64_t id : uc) {
        Node &n = node(id);
        if (!n.alive || !n.in_uc) continue;
        n.in_uc = false;
        n.gen = older;
    }
    events.uncollectable += static_cast<uint64_t>(uncollectable);
    p.uncollectable += uncollectable;

    for (uint64_t id : ambiguous_) {
        Node &n = node(id);
        // (Garbage waiting for the clear step is no more in a generation.)
        if (!n.alive || !n.tracked || n.in_set || (n.gen != 0 && n.gen != older)) continue;
        int actual = generation_of ? generation_of(id) : 0;
        if (actual != 0 && actual != older)
            fail("object " + std::to_string(id) + " resurrected during the finalizers is in generation " +
                 std::to_string(actual) + ", expected 0 or " + std::to_string(older));
        n.gen = static_cast<uint8_t>(actual);
    }
    ambiguous_.clear();
    settle();
}

void Model::forget_dead() {
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        if (!it->second.alive)
            it = nodes_.erase(it);
        else
            ++it;
    }
}

std::string Model::explain_survivors() {
    // Finalizers and callbacks can keep anything alive (resurrection, and
    // objects they free expose new garbage): the check applies to
    // collections in which no user code ran.
    if (last_full_user_code_) return "";
    ++events.explained_collections;
    // Seeds: what keeps objects alive legitimately after a full collection.
    std::unordered_set<uint64_t> seen;
    std::vector<uint64_t> stack;
    auto add = [&](uint64_t id) {
        if (id && seen.insert(id).second) stack.push_back(id);
    };
    for (uint64_t id : roots) add(id);
    for (uint64_t id : temps) add(id);
    for (uint64_t id : garbage) add(id);
    // Cycles among live tracked objects without tp_clear: the collector
    // cannot break them (CPython keeps them too).
    auto on_noclear_cycle = [&](uint64_t start) {
        // Is `start` on a cycle of no-clear tracked objects? (small graphs: DFS)
        std::vector<uint64_t> work{start};
        std::unordered_set<uint64_t> visited;
        while (!work.empty()) {
            uint64_t id = work.back();
            work.pop_back();
            const Node &n = node(id);
            bool found = false;
            for_each_edge(n, [&](uint64_t t) {
                const Node &target = node(t);
                if (!target.alive || !target.tracked || info(target.kind).clear) return;
                if (t == start) found = true;
                if (visited.insert(t).second) work.push_back(t);
            });
            if (found) return true;
        }
        return false;
    };
    for (auto &[id, n] : nodes_) {
        if (!n.alive) continue;
        const KindInfo &k = info(n.kind);
        if (!k.gc || !n.tracked || n.gen == kPermanent || n.born >= collections_started) {
            // Not collectable by a collection (or newer than the last one):
            // it and what it refers to are legitimately alive.
            add(id);
            continue;
        }
        if (!k.clear && on_noclear_cycle(id)) add(id);
    }
    while (!stack.empty()) {
        uint64_t id = stack.back();
        stack.pop_back();
        for_each_edge(node(id), [&](uint64_t t) { add(t); });
    }
    std::string unexplained;
    for (uint64_t id : last_full_unreachable_) {
        const Node &n = node(id);
        if (!n.alive || seen.count(id)) continue;
        if (!unexplained.empty()) unexplained += "; ";
        unexplained += std::to_string(id) + " (" + info(n.kind).name + ", count " + std::to_string(n.refcnt) +
                       ", gen " + std::to_string(n.gen) + (n.finalized ? ", finalized" : "") + ", referrers:";
        for (auto &entry : nodes_) {
            const Node &r = entry.second;
            if (!r.alive) continue;
            for_each_edge(r, [&](uint64_t t) {
                if (t == id)  // (append: see Driver::note on GCC 12's -Wrestrict)
                    unexplained.append(" ").append(std::to_string(r.id)).append("(").append(info(r.kind).name).append(")");
            });
        }
        unexplained += ")";
    }
    return unexplained;
}

}  // namespace cgc_stress
