// The stress driver (see driver.hpp): reporting, the primitives and the run.
// The object types on the cyclegc side ("the world") are in world_types.cpp,
// the hooks their handlers call in hooks.cpp, the operations in
// operations.cpp and the comparison with the model in checks.cpp.
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
#include "world.hpp"

#include "heap.hpp"  // (the incremental cycle's observer)

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <stdexcept>

namespace gci = cyclegc::internal;

namespace cgc_stress::detail {

bool g_abort_on_failure = false;

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

// Incremental mode: a slice of the cycle (starting one with a collection of
// generations 0 and 1, ending one with its final step), whose collections
// the model follows through the callbacks.
void Driver::p_slice() {
    m_.settle();
    if (cgc_collect_slice(1) < 0) fail("cgc_collect_slice failed: %s", cgc_error_message());
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
    if (opt_.pause_budget) cgc_set_pause_budget(opt_.pause_budget);
    gci::IncrementalCycle &cycle = gci::current_heap().incremental;
    cycle.observer = [](void *context, gci::IncrementalEvent event) {
        g_driver->on_incremental(*static_cast<const gci::IncrementalCycle *>(context), event);
    };
    cycle.observer_context = &cycle;
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
        if (opt_.pause_budget) {
            p_slice();
            end_op();
        }
        check_roots();
        if (full_collection_in_op_ || (opt_.check_every && op_index_ % opt_.check_every == 0)) full_check("after the operation");
    }
    stats_.ops = op_index_;
    teardown();
    stats_.model = m_.events;
    cycle.observer = nullptr;
    cgc_heap_set_current(nullptr);
    uint64_t misuse = cgc_error_count(CGC_ERR_MISUSE);
    cgc_heap_delete(heap_);
    if (cgc_error_count(CGC_ERR_MISUSE) != misuse) fail("cgc_heap_delete refused to delete the heap");
    g_driver = nullptr;
    return stats_;
}

}  // namespace cgc_stress::detail

namespace cgc_stress {

void set_abort_on_failure(bool abort_on_failure) { detail::g_abort_on_failure = abort_on_failure; }

RunStats run_sequence(Source &source, const Options &options) {
    detail::Driver driver(source, options);
    return driver.run();
}

}  // namespace cgc_stress
