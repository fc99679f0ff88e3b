// Library bugs found by the stress and hostile-type work (docs/testing.md),
// each reduced to a minimal reproduction, kept as regression tests.
// Scenarios that hung or crashed run in a child
// process (EXPECT_SURVIVES), so that a regression fails one test only.
#include "hostile_types.hpp"

using namespace cgc_hostile;

namespace {

class FoundBugs : public HostileTest {
  protected:
    void weakref_list_head_freed_by_its_allocation();
};

cgc_type plain_type = make_type("found.Plain");
cgc_type final_type = make_type("found.Final", /*finalizer=*/true);

void no_callback(cgc_object *, void *) {}

// cgc_weakref_new_owning (PyWeakref_NewRef) read the referent's first weak
// reference, then allocated the new one; that allocation may run a
// collection that frees the first weak reference (garbage itself: only
// garbage holds it). The new weak reference was then linked to the freed one
// (a write into freed memory); here it even reused its slot, so that
// wr->next == wr and every walk of the list (cgc_weakref_count, the
// referent's death) looped forever. Fixed: the list is looked up after the
// allocation.
void FoundBugs::weakref_list_head_freed_by_its_allocation() {
    HObj *x = make(&plain_type, 1);  // the referent, kept alive
    HObj *g = make(&plain_type, 2);
    g->slot[0] = cgc_weakref_new(ob(x), no_callback, nullptr);  // x's first weak reference, owned by g
    set(g, 1, g);
    cgc_decref(ob(g));                                          // g (and the weak reference) are garbage
    cgc_enable();
    cgc_set_threshold(0, 1);                                    // the next GC allocation collects
    cgc_object *w2 = cgc_weakref_new(ob(x), no_callback, nullptr);
    cgc_disable();
    ASSERT_NE(w2, nullptr);
    EXPECT_FALSE(alive(2)) << "the collection ran inside the allocation";
    EXPECT_EQ(cgc_weakref_count(ob(x)), 1);  // loops forever while the bug is there
    cgc_decref(ob(x));
    cgc_object *dead = cgc_weakref_get(w2);
    EXPECT_EQ(dead, nullptr);
    cgc_decref(w2);
}

TEST_F(FoundBugs, WeakrefCreatedWhileItsAllocationCollectsTheFirstWeakrefOfTheReferent) {
    EXPECT_SURVIVES(weakref_list_head_freed_by_its_allocation());
}

// An object whose deallocation the trashcan defers (nested 50 deep) is
// untracked first. If its tp_dealloc follows CPython's pattern for static
// types (finalizer first, untrack after) and the finalizer resurrected it,
// it lived on untracked: its future cycles were never collected. Expected:
// tracked, as before (fixed: deferred objects that were tracked are tracked
// again, in generation 0, before their tp_dealloc runs).
TEST_F(FoundBugs, ObjectResurrectedFromADeferredDeallocStaysTracked) {
    static cgc_object *kept = nullptr;
    hooks.finalize = [](HObj *o) {
        if (o->id == 1000 && !kept) {
            cgc_incref(ob(o));
            kept = ob(o);
        }
    };
    // head -> ... 50 objects -> the resurrecting one: the 51st deallocation
    // in a row, the first the trashcan defers.
    HObj *deep = make(&final_type, 1000);
    HObj *head = deep;
    for (int i = 0; i < 50; ++i) {
        HObj *n = make(&plain_type, i + 1);
        n->slot[0] = ob(head);  // takes over the reference
        head = n;
    }
    cgc_decref(ob(head));
    ASSERT_EQ(kept, ob(deep)) << "the finalizer resurrected it";
    EXPECT_TRUE(cgc_gc_is_tracked(ob(deep))) << "resurrected from a deferred deallocation, it was left untracked";
    // The consequence: a cycle through it is never collected.
    set(deep, 0, deep);
    hooks.finalize = nullptr;
    cgc_object *last = kept;
    kept = nullptr;
    cgc_decref(last);
    cgc_collect(2);
    EXPECT_FALSE(alive(1000)) << "its cycle was not collected";
    if (alive(1000)) drop_slots(deep);  // clean up the leak
}

}  // namespace
