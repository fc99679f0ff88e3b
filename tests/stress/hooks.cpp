// The stress driver's hooks, called by the handlers of its types
// (world_types.cpp): deallocation, finalizers, weak reference callbacks,
// collection callbacks and reported errors, each checked against the model.
#include "world.hpp"

#include "heap.hpp"  // (the incremental cycle: on_incremental)

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

namespace gci = cyclegc::internal;

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

// A garbage cycle of two plain objects, made by user code (a finalizer or a
// weak reference callback of object `id`): ids derived from `id`.
void Driver::make_garbage_pair(uint64_t id, const char *where) {
    cgc_object *a = cgc_gc_new(&plain_type);
    cgc_object *b = cgc_gc_new(&plain_type);
    if (!a || !b) fail("allocation failed in %s", where);
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
        make_garbage_pair(id, "a finalizer");
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
        make_garbage_pair(id, "a callback");
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

// The incremental cycle's final step, a batch at a time, and its clear
// step, a slice at a time: the model follows each on the graph as it is
// then (the program runs between them).
void Driver::on_incremental(const gci::IncrementalCycle &cycle, gci::IncrementalEvent event) {
    switch (event) {
    case gci::IncrementalEvent::batch_begin:
        batch_first_ = !cycle.pending.started;
        batch_ids_.clear();
        for (cgc_object *op : cycle.batch)
            if (op) batch_ids_.push_back(id_of(op));
        to_clear_before_ = cycle.to_clear.size();
        if (batch_first_) {
            clear_ids_.clear();
            cleared_upto_ = kept_upto_ = 0;
        }
        break;
    case gci::IncrementalEvent::batch_end: {
        std::vector<uint64_t> model = m_.collect_batch(batch_ids_, batch_first_), world;
        for (size_t i = to_clear_before_; i < cycle.to_clear.size(); ++i) {
            uint64_t id = cycle.to_clear[i] ? id_of(cycle.to_clear[i]) : 0;
            clear_ids_.push_back(id);
            if (id) world.push_back(id);
        }
        std::sort(model.begin(), model.end());
        std::sort(world.begin(), world.end());
        if (model != world)
            fail("a batch of the incremental final step left %zu objects to clear, the model %zu", world.size(),
                 model.size());
        break;
    }
    case gci::IncrementalEvent::cleared:
        for (; cleared_upto_ < cycle.clear_cursor; ++cleared_upto_)
            if (uint64_t id = clear_ids_.at(cleared_upto_)) m_.clear_waiting(id);
        for (; kept_upto_ < cycle.survivor_cursor; ++kept_upto_)
            if (uint64_t id = clear_ids_.at(kept_upto_)) m_.keep_waiting(id);
        break;
    }
}

void Driver::on_collection(const char *phase, const cgc_collection_info *info) {
    // (An incremental cycle's collection starts with its first batch and
    // ends with its clear step, young collections running meanwhile.)
    bool cycle_step = info->generation == 2 && !collecting_;
    if (std::strcmp(phase, "start") == 0) {
        if (cycle_step && gci::current_heap().incremental.step == gci::IncrementalStep::final) {
            if (cycle_open_) fail("an incremental cycle's collection started twice");
            cycle_open_ = true;
            return;
        }
        if (collecting_) fail("a collection started inside another");
        collecting_ = true;
        collection_generation_ = info->generation;
        return;
    }
    if (cycle_step && cycle_open_) {
        cycle_open_ = false;
        Prediction expected = m_.finish_batches(info->candidates);
        int64_t survivors = cycle_survivors_;
        cycle_survivors_ = 0;
        check_prediction(expected, info, survivors);
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
    check_prediction(last_, info, reported_survivors);
}

void Driver::check_prediction(const Prediction &expected, const cgc_collection_info *info, int64_t reported_survivors) {
    if (reported_survivors != expected.survived_clear)
        fail("collection of generation %d: cyclegc reports %" PRId64 " objects alive after the clearing; "
             "the model expects %" PRId64, info->generation, reported_survivors, expected.survived_clear);
    if (info->collected != expected.collected || info->uncollectable != expected.uncollectable ||
        info->candidates != expected.candidates)
        fail("collection of generation %d: cyclegc reports %td collected, %td uncollectable, %td examined; "
             "the model expects %" PRId64 ", %" PRId64 ", %" PRId64,
             info->generation, info->collected, info->uncollectable, info->candidates, expected.collected,
             expected.uncollectable, expected.candidates);
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
        (collecting_ ? reported_survivors_ : cycle_survivors_) += survivors;
        return;
    }
    fail("cyclegc reported an unexpected error (kind %d): %s", static_cast<int>(kind), message);
}

}  // namespace cgc_stress::detail
