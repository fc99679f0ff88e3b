// The stress driver's checks: the world compared with the model, cheaply
// after every operation and in full after every full collection.
#include "world.hpp"

#include "heap.hpp"  // (the incremental cycle's to-clear list)

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
    // An incremental cycle's garbage waiting for its clear step: tracked,
    // but hidden from the walks (and the model's set still holds it).
    std::unordered_set<cgc_object *> waiting;
    for (cgc_object *op : gci::current_heap().incremental.to_clear)
        if (op) waiting.insert(op);
    // Weak references and heap types are freed without a hook of ours:
    // not tracked means freed.
    std::vector<uint64_t> gone;
    for (uint64_t id : foreign_)
        if (!tracked.count(id2ptr_.at(id)) && !waiting.count(id2ptr_.at(id))) gone.push_back(id);
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
            bool hidden = waiting.count(op) != 0;
            if (hidden != n.in_set)
                fail("[%s] object %s: waiting to be cleared is %d, the model expects %d", why, describe(id).c_str(),
                     hidden, n.in_set);
            if (is_tracked != n.tracked || is_tracked != (tracked.count(op) != 0 || hidden))
                fail("[%s] object %s: tracked is %d (listed: %d), the model expects %d", why, describe(id).c_str(),
                     is_tracked, static_cast<int>(tracked.count(op)), n.tracked);
            if (n.tracked && !hidden) {
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

}  // namespace cgc_stress::detail
