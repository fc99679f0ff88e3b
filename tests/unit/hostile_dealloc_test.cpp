// Hostile deallocators, objects freed under the collector, reference counts
// that underflow: what real types get wrong, and what cyclegc then does.
//
// | mistake                                               | defined outcome                                        |
// |-------------------------------------------------------|--------------------------------------------------------|
// | tp_dealloc calls collect before untracking             | CGC_ERR_CORRUPTION (count 0) naming the type; kept     |
// |                                                       | during that collection, freed by the dealloc after     |
// | tp_dealloc calls collect after untracking              | a correct collection inside the deallocation           |
// | tp_dealloc calls collect during a collection           | 0                                                      |
// | tp_dealloc frees another object of the unreachable set | the collector skips it; no use-after-free              |
// | tp_dealloc never untracks                              | cgc_gc_del untracks: no stale entry anywhere           |
// | tp_dealloc neither untracks nor frees (in a cycle)     | CGC_ERR_MISUSE naming the type; never cleared or       |
// |                                                       | deallocated again; untracked, not counted as collected |
// | tp_dealloc resurrects (stores itself)                  | the object lives on, tracked                           |
// | tp_clear drops its own object once too often           | CGC_ERR_CORRUPTION naming the type  |
// | tp_clear drops another reference once too often        | CGC_ERR_CORRUPTION naming the type  |
// | Py_DECREF below zero outside a collection              | CGC_ERR_CORRUPTION naming the type; not freed again    |
// | a weak reference read while its object's deallocation  | dead (the count reads below zero meanwhile)            |
// |   waits (deferred: deallocations nested too deep)      |                                                        |
// | a Py_DECREF too many of an object whose deallocation   | CGC_ERR_CORRUPTION naming the type; undone, freed once |
// |   waits                                                |                                                        |
#include "hostile_types.hpp"

#include <algorithm>

using namespace cgc_hostile;

namespace {

class HostileDealloc : public HostileTest {
  protected:
    void clear_drops_itself_twice();
    void clear_drops_other_twice();
};

cgc_type collects_type = make_type("hostile.CollectsInDealloc");
cgc_type plain_type = make_type("hostile.Plain");
cgc_type lazy_type = make_type("hostile.ClearDoesNothing");

// tp_dealloc that frees with cgc_gc_del without untracking first.
void no_untrack_dealloc(cgc_object *self) {
    HObj *o = as_h(self);
    drop_slots(o);
    hooks.live.erase(o->id);
    o->canary = kFreed;
    cgc_gc_del(self);  // still tracked
}
cgc_type no_untrack_type = [] {
    cgc_type t = make_type("hostile.NeverUntracks");
    t.tp_dealloc = no_untrack_dealloc;
    return t;
}();

cgc_object *g_global = nullptr;

HObj *self_cycle(cgc_type *type, int id) {
    HObj *o = make(type, id);
    set(o, 0, o);
    cgc_decref(ob(o));
    return o;
}

// tp_dealloc that drops its references and stops there: the object stays
// allocated and tracked, at count 0.
std::vector<int> g_deallocated;  // ids, in order
void leaves_it_dealloc(cgc_object *self) {
    HObj *o = as_h(self);
    g_deallocated.push_back(o->id);
    drop_slots(o);
}
cgc_type leaves_it_type = [] {
    cgc_type t = make_type("hostile.DeallocLeavesIt");
    t.tp_dealloc = leaves_it_dealloc;
    return t;
}();

// In a collected cycle, clearing one member deallocates the other, whose
// tp_dealloc leaves it in the collection: it must get neither its tp_clear
// (on a dead object) nor a second tp_dealloc, and is reported.
TEST_F(HostileDealloc, DeallocThatNeitherUntracksNorFreesIsReportedAndNeverRunAgain) {
    g_deallocated.clear();
    static int dead_clears = 0;
    dead_clears = 0;
    hooks.clear = [](HObj *o) {
        if (std::count(g_deallocated.begin(), g_deallocated.end(), o->id)) ++dead_clears;
        drop_slots(o);
        return 0;
    };
    auto [a, b] = garbage_pair(&leaves_it_type, 1, &leaves_it_type, 2);
    EXPECT_EQ(cgc_collect(2), 0) << "neither was freed";
    EXPECT_EQ(dead_clears, 0) << "tp_clear ran on an object after its tp_dealloc";
    std::vector<int> sorted = g_deallocated;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{1, 2})) << "each tp_dealloc exactly once";
    std::vector<cgc_test::ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 2u);
    for (const cgc_test::ReportedError &error : errors) {
        EXPECT_EQ(error.kind, CGC_ERR_MISUSE);
        EXPECT_CONTAINS(error.message, "hostile.DeallocLeavesIt");
        EXPECT_CONTAINS(error.message, "after its tp_dealloc ran");
    }
    EXPECT_FALSE(cgc_gc_is_tracked(ob(a)) || cgc_gc_is_tracked(ob(b)));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(g_deallocated.size(), 2u);
    hooks.clear = nullptr;
    for (HObj *o : {a, b}) {  // what the type should have done
        hooks.live.erase(o->id);
        o->canary = kFreed;
        cgc_gc_del(ob(o));
    }
}

TEST_F(HostileDealloc, CollectingBeforeUntrackingIsReportedAndTheDyingObjectIsKept) {
    cgc_ssize_t found = -1;
    hooks.dealloc = [&found](HObj *o) {
        if (o->ob_base.ob_type == &collects_type) found = cgc_collect(2);  // still tracked, count 0
    };
    self_cycle(&plain_type, 10);
    HObj *dying = make(&collects_type, 1);
    HObj *child = make(&plain_type, 2);
    set(dying, 0, child);
    cgc_decref(ob(child));
    cgc_decref(ob(dying));
    EXPECT_EQ(found, 1) << "the other garbage is collected; the dying object and its child are not";
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.CollectsInDealloc", "reference count 0", "kept alive"});
    EXPECT_TRUE(hooks.live.empty()) << "the deallocation then completed";
}

TEST_F(HostileDealloc, CollectingAfterUntrackingIsACorrectCollection) {
    cgc_ssize_t found = -1;
    hooks.dealloc = [&found](HObj *o) {
        if (o->ob_base.ob_type != &collects_type) return;
        cgc_gc_untrack(ob(o));
        found = cgc_collect(2);
    };
    self_cycle(&plain_type, 10);
    HObj *dying = make(&collects_type, 1);
    HObj *child = make(&plain_type, 2);
    set(dying, 0, child);
    set(child, 0, child);  // the child is a cycle, but the dying object still holds it
    cgc_decref(ob(child));
    cgc_decref(ob(dying));
    EXPECT_EQ(found, 1);
    EXPECT_TRUE(take_errors().empty());
    EXPECT_TRUE(alive(2)) << "released by the deallocation after the collection: now garbage";
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileDealloc, CollectingFromADeallocDuringACollectionReturnsZero) {
    std::vector<cgc_ssize_t> results;
    hooks.dealloc = [&results](HObj *o) {
        if (o->ob_base.ob_type == &collects_type) results.push_back(cgc_collect(2));
    };
    for (int i = 0; i < 3; ++i) {
        HObj *x = self_cycle(&plain_type, 10 + i);
        HObj *c = make(&collects_type, 20 + i);  // freed while the collector clears x
        set(x, 1, c);
        cgc_decref(ob(c));
    }
    EXPECT_EQ(cgc_collect(2), 6);
    EXPECT_EQ(results, std::vector<cgc_ssize_t>(3, 0));
    EXPECT_TRUE(hooks.live.empty());
}

TEST_F(HostileDealloc, FreeingAnotherObjectOfTheUnreachableSetDirectlyIsSkipped) {
    // A <-> B garbage; C is garbage too (a cycle whose tp_clear does nothing).
    // B's deallocation frees C's memory directly (as a buggy owner would):
    // whether the collector has reached C yet or not, it must not touch it.
    for (int round = 0; round < 4; ++round) {
        HObj *a = make(&plain_type, 1);
        HObj *b = make(&plain_type, 2);
        HObj *c = make(&lazy_type, 3);
        set(a, 0, b);
        set(b, 0, a);
        set(c, 0, c);
        b->borrowed = ob(c);
        hooks.clear = [](HObj *o) {
            if (o->ob_base.ob_type != &lazy_type) drop_slots(o);
            return 0;
        };
        hooks.dealloc = [](HObj *o) {
            if (o->id != 2 || !o->borrowed) return;
            HObj *victim = as_h(o->borrowed);
            o->borrowed = nullptr;
            cgc_gc_untrack(ob(victim));
            victim->slot[0] = nullptr;  // its self-reference dies with it
            hooks.live.erase(victim->id);
            victim->canary = kFreed;
            cgc_gc_del(ob(victim));
        };
        // Vary the order of the objects in memory from round to round.
        if (round % 2) std::swap(a, c);
        cgc_decref(ob(a));
        cgc_decref(ob(b));
        cgc_decref(ob(c));
        cgc_collect(2);
        EXPECT_TRUE(hooks.live.empty()) << "round " << round;
        EXPECT_TRUE(hooks.canary_errors.empty()) << hooks.canary_errors.front();
        EXPECT_TRUE(take_errors().empty());
        hooks.dealloc = nullptr;
        hooks.clear = nullptr;
    }
}

TEST_F(HostileDealloc, DeallocThatNeverUntracksLeavesNoStaleEntry) {
    // Young, old, and in the middle of a collection.
    for (int i = 0; i < 100; ++i) cgc_decref(ob(make(&no_untrack_type, i)));
    std::vector<HObj *> held;
    for (int i = 0; i < 100; ++i) held.push_back(make(&no_untrack_type, 100 + i));
    EXPECT_EQ(cgc_collect(2), 0);
    for (HObj *o : held) cgc_decref(ob(o));
    for (int i = 0; i < 50; ++i) self_cycle(&no_untrack_type, 200 + i);
    EXPECT_EQ(cgc_collect(2), 50);
    EXPECT_EQ(cgc_test::tracked_total(), 0);
    cgc_object_list all{};
    ASSERT_EQ(cgc_get_objects(-1, &all), 0);
    EXPECT_EQ(all.count, 0);
    cgc_object_list_release(&all);
    EXPECT_TRUE(hooks.live.empty());
    EXPECT_TRUE(take_errors().empty());
}

TEST_F(HostileDealloc, DeallocThatResurrectsKeepsTheObjectTracked) {
    // An old-style tp_dealloc that stores its object instead of freeing it.
    hooks.dealloc = [](HObj *o) {
        if (g_global) return;
        cgc_incref(ob(o));
        g_global = ob(o);
    };
    cgc_type resurrecting = make_type("hostile.ResurrectsInDealloc");
    resurrecting.tp_dealloc = [](cgc_object *self) {
        if (hooks.dealloc) hooks.dealloc(as_h(self));
        if (self->ob_refcnt > 0) return;  // resurrected
        h_dealloc(self);
    };
    HObj *a = make(&resurrecting, 1);
    cgc_decref(ob(a));
    ASSERT_EQ(g_global, ob(a));
    EXPECT_TRUE(alive(1));
    EXPECT_TRUE(cgc_gc_is_tracked(ob(a)));
    EXPECT_EQ(cgc_collect(2), 0);
    hooks.dealloc = nullptr;
    cgc_object *kept = g_global;
    g_global = nullptr;
    cgc_decref(kept);
    EXPECT_FALSE(alive(1));
    EXPECT_TRUE(take_errors().empty());
}

// Found by this test: the collector holds a temporary
// reference while tp_clear runs. A tp_clear that dropped its object's last
// reference and one more freed the object under the collector, whose
// Py_DECREF then wrote into the freed slot (the page's free-list link), and
// a later allocation crashed.
void HostileDealloc::clear_drops_itself_twice() {
    hooks.clear = [](HObj *o) {
        drop_slots(o);            // its self-reference: count 2 -> 1 (the collector's)
        cgc_decref(ob(o));        // once too often: freed under the collector
        return 0;
    };
    self_cycle(&plain_type, 1);
    cgc_collect(2);
    hooks.clear = nullptr;
    std::vector<cgc_test::ReportedError> errors = take_errors();
    EXPECT_FALSE(errors.empty()) << "the underflow is not reported";
    for (const auto &e : errors) {
        EXPECT_EQ(e.kind, CGC_ERR_CORRUPTION) << e.message;
        EXPECT_CONTAINS(e.message, "hostile.Plain");
    }
    std::vector<HObj *> many;
    for (int i = 0; i < 1000; ++i) many.push_back(make(&plain_type, 100 + i));
    for (HObj *o : many) cgc_decref(ob(o));
}

TEST_F(HostileDealloc, ObjectFreedWhileTheCollectorHoldsItIsReportedNotCorrupting) {
    EXPECT_SURVIVES(clear_drops_itself_twice());
}

// The same from a reference count that underflows (freed
// slots are chained through their GcMeta, so a stray Py_DECREF finds a count
// of 0): A's tp_clear drops its reference to B twice; B is freed by the
// first, and the second used to decrement B's free-list link.
void HostileDealloc::clear_drops_other_twice() {
    HObj *a = make(&plain_type, 1);
    HObj *b = make(&plain_type, 2);
    set(a, 0, b);
    cgc_decref(ob(b));  // B: held by A only
    set(a, 1, a);
    cgc_decref(ob(a));
    hooks.clear = [](HObj *o) {
        if (o->id == 1 && o->slot[0]) {
            cgc_object *b_ref = o->slot[0];
            o->slot[0] = nullptr;
            cgc_decref(b_ref);
            cgc_decref(b_ref);  // once too often
        }
        drop_slots(o);
        return 0;
    };
    cgc_collect(2);
    hooks.clear = nullptr;
    std::vector<cgc_test::ReportedError> errors = take_errors();
    EXPECT_FALSE(errors.empty()) << "the underflow is not reported";
    for (const auto &e : errors) EXPECT_EQ(e.kind, CGC_ERR_CORRUPTION) << e.message;
    std::vector<HObj *> many;
    for (int i = 0; i < 1000; ++i) many.push_back(make(&plain_type, 100 + i));
    for (HObj *o : many) cgc_decref(ob(o));
}

TEST_F(HostileDealloc, ReferenceDroppedOnceTooOftenByTpClearIsReportedNotCorrupting) {
    EXPECT_SURVIVES(clear_drops_other_twice());
}

TEST_F(HostileDealloc, DecrefBelowZeroOutsideACollectionIsReportedOnce) {
    HObj *a = make(&plain_type, 1);
    ob(a)->ob_refcnt = 0;  // a Py_DECREF too many happened earlier, without freeing it
    cgc_decref(ob(a));
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Plain", "below zero"});
    EXPECT_TRUE(alive(1)) << "not freed (again)";
    // A collection meanwhile keeps it (count <= 0) and says so.
    EXPECT_EQ(cgc_collect(2), 0);
    expect_one_error(CGC_ERR_CORRUPTION, {"hostile.Plain", "kept alive"});
    ob(a)->ob_refcnt = 1;
    cgc_decref(ob(a));
    EXPECT_FALSE(alive(1));
}

// A chain whose deallocation, once a node's successor was deferred (the
// deallocations nest too deep), looks at that successor: through a weak
// reference (legitimate: it must read as dead) and with one Py_DECREF too
// many (a bug: reported, undone).
struct ChainLink {
    cgc_object ob_base;
    cgc_object *next;
    int id;
};
struct DeferredProbe {
    int at = -1;                  // the node whose deallocation probes
    cgc_object *weak = nullptr;   // a weak reference to its successor
    bool extra_decref = false;    // and drop its successor once too often
    int got_ref = -1;             // what the weak reference gave
    int freed = 0;
} probe;
cgc_type chain_type = [] {
    cgc_type t{};
    t.tp_name = "hostile.ChainLink";
    t.tp_basicsize = sizeof(ChainLink);
    t.tp_flags = CGC_TPFLAGS_HAVE_GC;
    t.tp_traverse = [](cgc_object *self, cgc_visitproc visit, void *arg) {
        cgc_object *next = reinterpret_cast<ChainLink *>(self)->next;
        return next ? visit(next, arg) : 0;
    };
    t.tp_dealloc = [](cgc_object *self) {
        auto *link = reinterpret_cast<ChainLink *>(self);
        cgc_gc_untrack(self);
        cgc_object *next = link->next;
        link->next = nullptr;
        cgc_xdecref(next);  // deferred, deep enough in the chain
        if (link->id == probe.at) {
            cgc_object *got = nullptr;
            probe.got_ref = cgc_weakref_get_ref(probe.weak, &got);
            cgc_xdecref(got);
            if (probe.extra_decref) cgc_decref(next);
        }
        ++probe.freed;
        cgc_gc_del(self);
    };
    return t;
}();

void free_chain_probing_a_deferred_link(bool extra_decref) {
    const int n = 4 * cgc_test::gci::kMaxDeallocDepth;
    std::vector<cgc_object *> links(n);
    cgc_object *head = nullptr;
    for (int i = n - 1; i >= 0; --i) {
        links[i] = cgc_gc_new(&chain_type);
        ASSERT_NE(links[i], nullptr);
        reinterpret_cast<ChainLink *>(links[i])->next = head;  // (transfers the reference)
        reinterpret_cast<ChainLink *>(links[i])->id = i;
        cgc_gc_track(links[i]);
        head = links[i];
    }
    // Link k is freed at depth k + 1: the successor of the link at the
    // depth limit is deferred.
    int at = cgc_test::gci::kMaxDeallocDepth - 1;
    probe = DeferredProbe{at, cgc_weakref_new(links[at + 1], nullptr, nullptr), extra_decref};
    ASSERT_NE(probe.weak, nullptr);
    cgc_decref(head);
    EXPECT_EQ(probe.freed, n);
    EXPECT_EQ(probe.got_ref, 0) << "a weak reference to an object being deallocated gave it out";
    EXPECT_EQ(cgc_test::heap_state().trashcan.deferred, nullptr);
    cgc_decref(probe.weak);
}

TEST_F(HostileDealloc, AWeakReferenceToAnObjectWhoseDeallocationWaitsIsDead) {
    EXPECT_SURVIVES(free_chain_probing_a_deferred_link(false));
}

TEST_F(HostileDealloc, ADecrefTooManyOfAnObjectWhoseDeallocationWaitsIsReportedAndUndone) {
    EXPECT_SURVIVES({
        free_chain_probing_a_deferred_link(true);
        expect_one_error(CGC_ERR_CORRUPTION, {"Py_DECREF", "hostile.ChainLink", "being deallocated", "ignored"});
    });
}

}  // namespace
