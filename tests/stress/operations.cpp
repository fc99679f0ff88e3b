// The stress driver's operations: each picks its arguments from the source
// and runs as a sequence of primitives (driver.cpp).
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

}  // namespace cgc_stress::detail
