// The collector: what it frees and what it keeps, generations, counts,
// statistics, scheduling (the long-lived rule), re-entrancy, finalizers
// (PEP 442: resurrection, order), user code that changes the unreachable set
// while it is processed, and refcount corruption.
#include "arena.hpp"
#include "test_types.hpp"

#include <algorithm>
#include <set>
#include <vector>

using namespace cgc_test;

namespace {

class CollectorTest : public HeapFixture {};

// ---- What is freed and what is kept -----------------------------------------

TEST_F(CollectorTest, SelfCycleIsCollected) {
    Node *a = new_node();
    link_next(a, a);
    cgc_decref(obj(a));
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(CollectorTest, LongRingIsCollectedWithoutRecursion) {
    const int n = 1'000'000;
    Node *first = new_node();
    Node *last = first;
    for (int i = 1; i < n; ++i) {
        Node *node = new_node();
        last->next = obj(node);  // transfers the new reference
        last = node;
    }
    link_next(last, first);
    EXPECT_EQ(cgc_collect(2), 0);  // we still hold `first`
    EXPECT_EQ(counters.deallocated, 0);
    cgc_decref(obj(first));
    EXPECT_EQ(cgc_collect(2), n);
    EXPECT_EQ(counters.deallocated, n);
    EXPECT_LE(counters.max_dealloc_depth, 2 * gci::kMaxDeallocDepth);
}

TEST_F(CollectorTest, CyclesReachableFromOutsideSurvive) {
    Node *a = new_node(1);
    Node *b = new_node(2);
    Node *c = new_node(3);
    link_next(a, b);  // a -> (b <-> c), and the test holds only a
    link_next(b, c);
    link_next(c, b);
    cgc_decref(obj(b));
    cgc_decref(obj(c));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(obj(b)->ob_refcnt, 2);
    EXPECT_EQ(obj(c)->ob_refcnt, 1);
    EXPECT_EQ(counters.cleared, 0);

    cgc_decref(obj(a));  // reference counting frees a; b <-> c is garbage now
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(counters.deallocated, 3);
}

TEST_F(CollectorTest, ReachabilityDoesNotDependOnListOrder) {
    // holder -> b <-> c. When b and c are tracked before holder, the scan
    // meets them first (gc_refs 0) and must move them back when it reaches
    // holder; tracked after, holder marks them before the scan gets there.
    for (bool holder_last : {true, false}) {
        SCOPED_TRACE(holder_last ? "holder tracked last" : "holder tracked first");
        reset_node_state();
        Node *holder = holder_last ? nullptr : new_node(1);
        Node *b = new_node(2);
        Node *c = new_node(3);
        if (holder_last) holder = new_node(1);
        link_next(b, c);
        link_next(c, b);
        link_next(holder, b);
        cgc_decref(obj(b));
        cgc_decref(obj(c));
        EXPECT_EQ(cgc_collect(0), 0);
        EXPECT_EQ(counters.deallocated, 0);
        EXPECT_EQ(counters.cleared, 0);
        for (Node *node : {holder, b, c}) EXPECT_EQ(generation_of(node), 1);
        EXPECT_EQ(holder->next, obj(b));
        EXPECT_EQ(b->next, obj(c));
        cgc_decref(obj(holder));
        EXPECT_EQ(cgc_collect(1), 2);
        EXPECT_EQ(counters.deallocated, 3);
    }
}

// A young collection lists a candidate unreachable when its pass reaches it
// unmarked; one marked later (held through one tracked after it) is taken
// back, and the garbage listed around it keeps indices that clearing finds:
// garbage g1 <-> g2, live b <-> c held by holder, tracked g1, b, g2, c, holder.
TEST_F(CollectorTest, CandidatesMarkedAfterTheyWereListedUnreachableAreTakenBack) {
    Node *g1 = new_node(1);
    Node *b = new_node(2);
    Node *g2 = new_node(3);
    Node *c = new_node(4);
    Node *holder = new_node(5);
    link_next(g1, g2);
    link_next(g2, g1);
    link_next(b, c);
    link_next(c, b);
    link_next(holder, c);
    for (Node *node : {g1, g2, b, c}) cgc_decref(obj(node));
    EXPECT_EQ(cgc_collect(0), 2);
    EXPECT_EQ(counters.deallocated, 2);
    EXPECT_EQ(counters.cleared, 1);  // g1's clear frees g2, then g1
    for (Node *node : {holder, b, c}) EXPECT_EQ(generation_of(node), 1);
    EXPECT_EQ(b->next, obj(c));
    EXPECT_EQ(c->next, obj(b));
    cgc_decref(obj(holder));
    EXPECT_EQ(cgc_collect(1), 2);
    EXPECT_EQ(counters.deallocated, 5);
}

// A full collection's marking walks the pages in address order and leaves
// an object it finds reachable ahead of its position to be traversed when
// it gets there, one behind it to the stack. A cycle that jumps back and
// forth across the heap, held by one member in its middle, needs both to
// survive; dropped, it is garbage as a whole.
TEST_F(CollectorTest, FullCollectionFollowsReferencesAheadOfAndBehindItsWalk) {
    const int n = 1000;
    std::vector<Node *> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back(new_node(i));
    // The cycle's order: n/2, n-1, 0, n-2, 1, ... (by allocation, roughly
    // by address).
    std::vector<Node *> order{nodes[n / 2]};
    for (int low = 0, high = n - 1; low <= high; ++low, --high) {
        if (high != n / 2) order.push_back(nodes[high]);
        if (low != high && low != n / 2) order.push_back(nodes[low]);
    }
    ASSERT_EQ(order.size(), size_t(n));
    for (int i = 0; i < n; ++i) link_next(order[i], order[(i + 1) % n]);
    for (int i = 0; i < n; ++i)
        if (nodes[i] != order[0]) cgc_decref(obj(nodes[i]));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(counters.cleared, 0);
    for (int i = 0; i < n; ++i) EXPECT_EQ(order[i]->next, obj(order[(i + 1) % n]));
    EXPECT_EQ(cgc_collect(2), 0);  // (the same again, now all old)
    EXPECT_EQ(counters.deallocated, 0);
    cgc_decref(obj(order[0]));
    EXPECT_EQ(cgc_collect(2), n);
    EXPECT_EQ(counters.deallocated, n);
}

// Pages beyond the arena's first reservation come from later ones; the
// collector must still see their objects as GC objects (through the page
// map) in both kinds of collection. Runs where the arena is small enough to fill here:
// `unit.small_arena` (CYCLEGC_ARENA_BYTES=2097152).
TEST_F(CollectorTest, CyclesAcrossTheEdgeOfAFullArenaAreCollectedCorrectly) {
    const gci::Arena &arena = gci::Arena::instance();
    if (!arena.reserved() || arena.size() > (size_t(64) << 20))
        GTEST_SKIP() << "needs a small arena (CYCLEGC_ARENA_BYTES), as unit.small_arena sets";
    // Allocate until there is a node in the arena and one beyond it (pages
    // the arena holds are reused first; about 1,000 nodes fill a page).
    std::vector<Node *> nodes;
    Node *inside = nullptr;
    Node *outside = nullptr;
    while ((!inside || !outside) && nodes.size() < 1'000'000) {
        Node *node = new_node(static_cast<int>(nodes.size()));
        nodes.push_back(node);
        (arena.in_first_reservation(node) ? inside : outside) = node;
    }
    ASSERT_TRUE(inside && outside) << nodes.size() << " nodes, all on one side of the arena's edge";
    EXPECT_FALSE(arena.holds_every_page());
    // A cycle across the edge, held only through the object outside: both
    // survive young and full collections, then both are freed.
    link_next(inside, outside);
    link_next(outside, inside);
    for (Node *node : nodes)
        if (node != outside) cgc_decref(obj(node));
    size_t others = nodes.size() - 2;  // freed by their counts just now
    EXPECT_EQ(static_cast<size_t>(counters.deallocated), others);
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(inside->next, obj(outside));
    EXPECT_EQ(outside->next, obj(inside));
    EXPECT_EQ(static_cast<size_t>(counters.deallocated), others);
    cgc_decref(obj(outside));
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(static_cast<size_t>(counters.deallocated), others + 2);
}

TEST_F(CollectorTest, ReferenceFromUntrackedObjectKeepsCycleAlive) {
    Node *holder = new_node(&node_type, 0, /*track=*/false);
    Node *x = new_node(1);
    Node *y = new_node(2);
    link_next(x, y);
    link_next(y, x);
    link_extra(holder, obj(x));
    cgc_decref(obj(x));
    cgc_decref(obj(y));
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.deallocated, 0);

    cgc_decref(obj(holder));  // frees holder, which drops x
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(counters.deallocated, 3);
}

TEST_F(CollectorTest, GarbageReferringToLiveObjectsFreesOnlyTheGarbage) {
    Node *live = new_node(1);
    Node *a = new_node(2);
    Node *b = new_node(3);
    link_next(a, b);
    link_next(b, a);
    link_extra(a, obj(live));
    link_extra(b, obj(live));
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    EXPECT_EQ(obj(live)->ob_refcnt, 3);
    EXPECT_EQ(cgc_collect(0), 2);
    EXPECT_EQ(counters.deallocated, 2);
    EXPECT_EQ(obj(live)->ob_refcnt, 1);
    EXPECT_TRUE(cgc_gc_is_tracked(obj(live)));
    cgc_decref(obj(live));
}

// ---- Generations ------------------------------------------------------------

TEST_F(CollectorTest, YoungCollectionExaminesOnlyYoungObjects) {
    std::vector<Node *> nodes;
    for (int i = 0; i < 5; ++i) nodes.push_back(new_node(i));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(stats_of(0).examined, 5u);
    for (Node *node : nodes) EXPECT_EQ(generation_of(node), 1);

    for (int i = 5; i < 8; ++i) nodes.push_back(new_node(i));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(stats_of(0).examined, 5u + 3u);  // only the 3 new ones
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(stats_of(0).examined, 8u);  // nothing young left
    EXPECT_EQ(stats_of(0).collections, 3u);

    EXPECT_EQ(cgc_collect(1), 0);
    EXPECT_EQ(stats_of(1).examined, 8u);
    for (Node *node : nodes) EXPECT_EQ(generation_of(node), 2);
    EXPECT_EQ(cgc_collect(1), 0);
    EXPECT_EQ(stats_of(1).examined, 8u);  // they are old now

    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(stats_of(2).examined, 8u);
    for (Node *node : nodes) EXPECT_EQ(generation_of(node), 2);
    for (Node *node : nodes) cgc_decref(obj(node));
}

TEST_F(CollectorTest, SurvivorsArePromotedOneGenerationAtATime) {
    Node *x = new_node();
    EXPECT_EQ(generation_of(x), 0);
    cgc_collect(0);
    EXPECT_EQ(generation_of(x), 1);
    cgc_collect(0);
    EXPECT_EQ(generation_of(x), 1);
    cgc_collect(1);
    EXPECT_EQ(generation_of(x), 2);
    cgc_collect(2);
    EXPECT_EQ(generation_of(x), 2);
    cgc_decref(obj(x));
}

TEST_F(CollectorTest, OldGarbageIsLeftToOlderCollections) {
    Node *a = new_node(1);
    Node *b = new_node(2);
    link_next(a, b);
    link_next(b, a);
    cgc_collect(0);  // held: promoted to generation 1
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(cgc_collect(1), 2);
    EXPECT_EQ(counters.deallocated, 2);
}

TEST_F(CollectorTest, ReferenceFromOlderGenerationKeepsYoungObjectAlive) {
    Node *old = new_node(1);
    cgc_collect(2);
    ASSERT_EQ(generation_of(old), 2);
    Node *young = new_node(2);
    link_next(young, young);  // would be garbage without `old`'s reference
    link_next(old, young);
    cgc_decref(obj(young));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(generation_of(young), 1);
    cgc_decref(obj(old));  // old freed; young is a garbage self-cycle now
    EXPECT_EQ(counters.deallocated, 1);
    EXPECT_EQ(cgc_collect(1), 1);
    EXPECT_EQ(counters.deallocated, 2);
}

// A young collection counts a reference to a candidate its pass has not
// reached yet (g1 -> g2, a -> b: tracked later) as one to a reached one, and
// none to a generation-1 neighbour (x, referenced from young objects on the
// same pages): x keeps its index in generation 1's array.
TEST_F(CollectorTest, YoungCountsReferencesAheadAndLeavesOlderNeighboursAlone) {
    Node *older[3];
    for (int i = 0; i < 3; ++i) older[i] = new_node(10 + i);
    EXPECT_EQ(cgc_collect(0), 0);
    Node *x = older[1];
    ASSERT_EQ(generation_of(x), 1);
    Node *g1 = new_node(1);
    Node *a = new_node(2);
    Node *g2 = new_node(3);
    Node *b = new_node(4);
    link_next(g1, g2);  // ahead of the pass
    link_next(g2, g1);
    link_next(a, b);    // ahead, and b held through a alone
    link_next(b, a);
    for (Node *node : {g1, g2, a}) link_extra(node, obj(x));
    for (Node *node : {g1, g2, b}) cgc_decref(obj(node));
    EXPECT_EQ(cgc_collect(0), 2);
    EXPECT_EQ(counters.deallocated, 2);
    EXPECT_EQ(generation_of(a), 1);
    EXPECT_EQ(generation_of(b), 1);
    EXPECT_EQ(a->next, obj(b));
    gci::Heap &heap = heap_state();
    uint32_t index = gci::meta_of(obj(x)).word;
    ASSERT_LT(index, heap.young[1].size());
    EXPECT_EQ(heap.young[1][index], obj(x));
    for (Node *node : older) cgc_decref(obj(node));
    cgc_decref(obj(a));  // a <-> b garbage, x held by a alone
    EXPECT_EQ(cgc_collect(1), 3);
    EXPECT_EQ(counters.deallocated, 7);
    EXPECT_EQ(tracked_in(1), 0);
}

// ---- Counts (CPython's test_collect_generations) ----------------------------

TEST_F(CollectorTest, CountsFollowCollections) {
    cgc_collect(2);
    Node *x = new_node();  // trickles into generation N + 1 after collect(N)
    cgc_collect(0);
    EXPECT_EQ(cgc_get_count(1), 1);
    EXPECT_EQ(cgc_get_count(2), 0);
    cgc_collect(1);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(cgc_get_count(2), 1);
    cgc_collect(2);
    EXPECT_EQ(cgc_get_count(1), 0);
    EXPECT_EQ(cgc_get_count(2), 0);
    cgc_decref(obj(x));
}

TEST_F(CollectorTest, YoungCountIsAllocationsMinusFrees) {
    EXPECT_EQ(cgc_get_count(0), 0);
    Node *a = new_node(1);
    Node *b = new_node(2);
    Node *c = new_node(&node_type, 3, /*track=*/false);  // untracked GC objects count too
    EXPECT_EQ(cgc_get_count(0), 3);
    cgc_decref(obj(b));
    EXPECT_EQ(cgc_get_count(0), 2);
    cgc_collect(0);
    EXPECT_EQ(cgc_get_count(0), 0);
    EXPECT_EQ(cgc_get_count(1), 1);
    cgc_decref(obj(a));
    cgc_decref(obj(c));
    EXPECT_EQ(cgc_get_count(0), 0);  // never below zero
}

// ---- Statistics -------------------------------------------------------------

TEST_F(CollectorTest, StatisticsAccumulatePerGeneration) {
    for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) {
        cgc_generation_stats s = stats_of(g);
        EXPECT_EQ(s.collections + s.collected + s.examined + s.total_ns + s.max_pause_ns, 0u);
    }
    Node *live1 = new_node(1);
    Node *live2 = new_node(2);
    for (int i = 0; i < 3; ++i) make_garbage_self_cycle();
    EXPECT_EQ(cgc_collect(0), 3);
    cgc_generation_stats first = stats_of(0);
    EXPECT_EQ(first.collections, 1u);
    EXPECT_EQ(first.collected, 3u);
    EXPECT_EQ(first.examined, 5u);
    EXPECT_EQ(first.uncollectable, 0u);
    EXPECT_GT(first.total_ns, 0u);
    EXPECT_GT(first.max_pause_ns, 0u);
    EXPECT_LE(first.max_pause_ns, first.total_ns);
    EXPECT_EQ(stats_of(1).collections, 0u);
    EXPECT_EQ(stats_of(2).collections, 0u);

    make_garbage_self_cycle();
    EXPECT_EQ(cgc_collect(0), 1);
    cgc_generation_stats second = stats_of(0);
    EXPECT_EQ(second.collections, 2u);
    EXPECT_EQ(second.collected, 4u);
    EXPECT_EQ(second.examined, 6u);  // 5 + the new one (live1, live2 are in gen 1)
    EXPECT_GT(second.total_ns, first.total_ns);
    EXPECT_GE(second.max_pause_ns, first.max_pause_ns);
    EXPECT_LE(second.max_pause_ns, second.total_ns);

    EXPECT_EQ(cgc_collect(2), 0);
    cgc_generation_stats full = stats_of(2);
    EXPECT_EQ(full.collections, 1u);
    EXPECT_EQ(full.examined, 2u);
    EXPECT_EQ(full.collected, 0u);
    EXPECT_EQ(stats_of(0).collections, 2u);  // a full collection counts for gen 2 only
    cgc_decref(obj(live1));
    cgc_decref(obj(live2));
}

// ---- Scheduling: the long-lived rule ----------------------------------------

// 100,000 objects in the old generation after a full collection, then
// thresholds (100, 1, 1), automatic collection on: a full collection is due
// once 25,000 objects promoted since are alive.
// Full collections run or started: with a pause budget (the suite's
// incremental variants), a full collection is a cycle of slices, which ends
// some allocations after the rule starts it.
uint64_t full_collections_started() {
    return stats_of(2).collections + (heap_state().incremental.running() ? 1 : 0);
}

std::vector<Node *> old_heap_and_small_thresholds() {
    std::vector<Node *> live;
    for (int i = 0; i < 100'000; ++i) live.push_back(new_node());
    cgc_collect(2);
    cgc_set_threshold(0, 100);
    cgc_set_threshold(1, 1);
    cgc_set_threshold(2, 1);
    cgc_enable();
    return live;
}

TEST_F(CollectorTest, GrowingLiveHeapDoesNotRunFullCollectionEveryTime) {
    // A large live heap, fully collected once: 100,000 long-lived objects.
    // Small thresholds: without the 25% rule, an automatic full collection
    // would run about every 7 young collections (~700 allocations).
    std::vector<Node *> live = old_heap_and_small_thresholds();
    uint64_t full_before = full_collections_started();
    uint64_t young_before = stats_of(0).collections;
    uint64_t middle_before = stats_of(1).collections;

    // 20,000 new long-lived objects: less than 25% of 100,000.
    for (int i = 0; i < 20'000; ++i) live.push_back(new_node());
    EXPECT_GT(stats_of(0).collections, young_before + 50);
    EXPECT_GT(stats_of(1).collections, middle_before + 20);
    EXPECT_EQ(full_collections_started(), full_before) << "full collections while the new long-lived "
                                                       "objects are < 25% of the old ones";

    // 20,000 more: the pending ones pass 25% once, so one full collection.
    for (int i = 0; i < 20'000; ++i) live.push_back(new_node());
    uint64_t full_runs = full_collections_started() - full_before;
    EXPECT_GE(full_runs, 1u);
    EXPECT_LE(full_runs, 2u);

    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 140'000);
}

// gh-122569: objects promoted to the old generation that have died since
// by reference count must not count toward the next full collection.
TEST_F(CollectorTest, PromotedObjectsThatDiedDoNotTriggerFullCollections) {
    std::vector<Node *> live = old_heap_and_small_thresholds();
    uint64_t full_before = full_collections_started();
    uint64_t middle_before = stats_of(1).collections;

    // 60 batches of 1,000 objects, each promoted while it lives, then freed
    // by reference count: 60,000 promotions (> 25% of 100,000), none alive.
    for (int batch = 0; batch < 60; ++batch) {
        std::vector<Node *> nodes;
        for (int i = 0; i < 1'000; ++i) nodes.push_back(new_node());
        for (Node *node : nodes) cgc_decref(obj(node));
    }
    EXPECT_GT(stats_of(1).collections, middle_before + 100);
    EXPECT_EQ(full_collections_started(), full_before) << "a full collection for promoted objects "
                                                       "that died by reference count";

    // Untracked ones do not count either (they are in no generation).
    std::vector<Node *> untracked;
    for (int i = 0; i < 20'000; ++i) untracked.push_back(new_node());  // promoted: < 25%
    for (Node *node : untracked) cgc_gc_untrack(obj(node));
    for (int i = 0; i < 20'000; ++i) live.push_back(new_node());  // 20,000 more: < 25%
    EXPECT_EQ(full_collections_started(), full_before);

    // Promoted objects still alive do: 30,000 of them pass 25%.
    for (int i = 0; i < 10'000; ++i) live.push_back(new_node());
    EXPECT_GE(full_collections_started(), full_before + 1);

    cgc_disable();
    for (Node *node : untracked) {
        cgc_gc_track(obj(node));  // (its tp_dealloc untracks it)
        cgc_decref(obj(node));
    }
    for (Node *node : live) cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 100'000 + 60'000 + 20'000 + 30'000);
}

// Frozen objects leave the count of promoted objects: dying later, they do
// not make it go below what is alive in the old generation.
TEST_F(CollectorTest, FreezingPromotedObjectsTakesThemOutOfTheLongLivedCount) {
    std::vector<Node *> live = old_heap_and_small_thresholds();
    std::vector<Node *> frozen;
    for (int i = 0; i < 20'000; ++i) frozen.push_back(new_node());  // promoted: < 25%
    cgc_freeze();
    cgc_unfreeze();  // back in the old generation, no longer counted as new
    uint64_t full_before = full_collections_started();
    for (int i = 0; i < 20'000; ++i) live.push_back(new_node());  // 20,000 new: < 25%
    EXPECT_EQ(full_collections_started(), full_before);
    // Freed, the unfrozen ones take nothing off the count of the new ones.
    for (Node *node : frozen) cgc_decref(obj(node));
    for (int i = 0; i < 10'000; ++i) live.push_back(new_node());  // 30,000 new: > 25%
    EXPECT_GE(full_collections_started(), full_before + 1);

    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
}

// ---- Scheduling: the adaptive default schedule --------------------------------

uint64_t automatic_collections() { return stats_of(0).collections + stats_of(1).collections + stats_of(2).collections; }

// Young collections that find nothing raise generation 0's effective
// threshold; get_threshold() still reports the requested one.
TEST_F(CollectorTest, DefaultScheduleRunsFewerYoungCollectionsThatFindNothing) {
    if (cgc_get_pause_budget() != 0)
        GTEST_SKIP() << "with a pause budget, thresholds grow only while collections take under half of it";
    cgc_enable();
    std::vector<Node *> live;
    for (int i = 0; i < 100'000; ++i) live.push_back(new_node());
    // CPython's schedule: one collection every 701 allocations, 142 of them.
    EXPECT_LT(automatic_collections(), 40u);
    EXPECT_EQ(stats_of(0).collected + stats_of(1).collected, 0u);
    EXPECT_EQ(cgc_get_threshold(0), 700);
    EXPECT_EQ(cgc_get_threshold(1), 10);
    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
}

// An explicit threshold is honoured exactly, even set to the default value.
TEST_F(CollectorTest, ExplicitThresholdTurnsTheAdaptiveScheduleOff) {
    cgc_set_threshold(0, 700);
    cgc_enable();
    std::vector<Node *> live;
    for (int i = 0; i < 70'100; ++i) live.push_back(new_node());
    EXPECT_EQ(automatic_collections(), 100u);  // one every 701 allocations
    EXPECT_EQ(stats_of(1).collections, 8u);    // after each 11 of generation 0
    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
}

// Once young collections find garbage again, the threshold comes back
// down: short-lived cycles do not pile up by the tens of thousands.
TEST_F(CollectorTest, DefaultScheduleComesBackDownWhenCollectionsFindGarbage) {
    cgc_enable();
    std::vector<Node *> live;
    for (int i = 0; i < 100'000; ++i) live.push_back(new_node());  // raises the threshold
    size_t most_waiting = 0;
    for (int i = 0; i < 100'000; ++i) {
        Node *a = new_node();
        Node *b = new_node();
        link_next(a, b);
        link_next(b, a);
        cgc_decref(obj(a));
        cgc_decref(obj(b));
        if (i >= 50'000) most_waiting = std::max(most_waiting, size_t(2 * (i + 1)) - size_t(counters.deallocated));
    }
    EXPECT_LE(most_waiting, 2'000u) << "garbage cycles waiting for a collection once it finds them";
    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
}

// Cycles that outlive generation 0's threshold and die soon after are what
// generation 1's collections free: the schedule learns it and raises
// generation 0's threshold, so that most die before their first
// examination. (Doubling and halving on each generation's findings alone
// examined each object about twice: once young, again in generation 1.)
TEST_F(CollectorTest, DefaultScheduleExaminesMediumLivedCyclesAboutOnce) {
    if (cgc_get_pause_budget() != 0)
        GTEST_SKIP() << "with a pause budget, thresholds grow only while collections take under half of it";
    cgc_enable();
    constexpr int kKept = 10'000;  // pairs: each lives 20,000 allocations
    constexpr int kPairs = 1'500'000;
    std::vector<Node *> ring(kKept, nullptr);
    auto examined = [] { return stats_of(0).examined + stats_of(1).examined + stats_of(2).examined; };
    uint64_t before = 0;
    for (int i = 0; i < kPairs; ++i) {
        if (i == kPairs / 2) before = examined();  // (the second half: the schedule has learnt)
        Node *a = new_node();
        Node *b = new_node();
        link_next(a, b);
        link_next(b, a);
        cgc_decref(obj(b));
        Node *&slot = ring[static_cast<size_t>(i % kKept)];
        if (slot) cgc_decref(obj(slot));
        slot = a;
    }
    double per_object = double(examined() - before) / double(kPairs);  // (kPairs / 2 pairs)
    EXPECT_LT(per_object, 1.5);
    EXPECT_GT(stats_of(1).collected, 0u);
    cgc_disable();
    for (Node *node : ring) cgc_decref(obj(node));
}

// gc.disable() stops automatic collections, not the count (CPython's
// get_count() keeps growing past the threshold); enabling them again makes
// the next allocation collect. The count is kept on the allocation fast
// path too, which gc.disable() must not turn off.
TEST_F(CollectorTest, AllocationsAreCountedWhileDisabledAndCollectOnceEnabled) {
    cgc_enable();
    cgc_set_threshold(0, 700);
    cgc_collect(2);
    uint64_t young_before = stats_of(0).collections;
    cgc_disable();
    std::vector<Node *> nodes;
    for (int i = 0; i < 2'000; ++i) nodes.push_back(new_node(i));
    EXPECT_EQ(cgc_get_count(0), 2'000);
    EXPECT_EQ(stats_of(0).collections, young_before);
    cgc_enable();
    nodes.push_back(new_node(2'000));  // past the threshold: collects
    EXPECT_EQ(stats_of(0).collections, young_before + 1);
    EXPECT_LT(cgc_get_count(0), 700);
    // With the threshold at 0, automatic collection is off as well.
    cgc_set_threshold(0, 0);
    uint64_t after = stats_of(0).collections;
    for (int i = 0; i < 2'000; ++i) nodes.push_back(new_node(i));
    EXPECT_EQ(stats_of(0).collections, after);
    cgc_set_threshold(0, 700);
    nodes.push_back(new_node(4'001));
    EXPECT_EQ(stats_of(0).collections, after + 1);
    for (Node *node : nodes) cgc_decref(obj(node));
}

// ---- Re-entrancy ------------------------------------------------------------

TEST_F(CollectorTest, CollectionReturnsZeroWhenReentered) {
    cgc_enable();  // so that cgc_collect_if_enabled would collect if it could
    std::vector<cgc_ssize_t> nested;
    std::vector<int> collecting;
    int finalize_result = 99;
    on_finalize = [&](Node *) {
        // Garbage a nested collection would find if it ran.
        make_garbage_self_cycle(&node_type, 100);
        collecting.push_back(cgc_is_collecting());
        nested.push_back(cgc_collect(0));
        nested.push_back(cgc_collect(2));
        nested.push_back(cgc_collect_if_enabled());
        nested.push_back(cgc_safepoint());
        finalize_result = cgc_finalize();
    };
    on_clear = [&](Node *node) {
        if (node->id != 1) return;
        collecting.push_back(cgc_is_collecting());
        nested.push_back(cgc_collect(2));
    };
    EXPECT_EQ(cgc_is_collecting(), 0);
    make_garbage_self_cycle(&final_node_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(cgc_is_collecting(), 0);

    EXPECT_EQ(nested, (std::vector<cgc_ssize_t>{0, 0, 0, 0, 0}));
    EXPECT_EQ(collecting, (std::vector<int>{1, 1}));
    EXPECT_EQ(finalize_result, -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_finalize", "during a collection"});
    EXPECT_EQ(stats_of(2).collections, 1u);
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(counters.deallocated, 1);

    // The garbage the finalizer made is young: the next collection frees it.
    on_finalize = nullptr;
    on_clear = nullptr;
    EXPECT_EQ(cgc_collect(0), 1);
    EXPECT_EQ(counters.deallocated, 2);
}

TEST_F(CollectorTest, AllocationInsideFinalizerDoesNotStartCollection) {
    cgc_set_threshold(0, 5);
    cgc_enable();
    on_finalize = [&](Node *) {
        for (int i = 0; i < 20; ++i) make_garbage_self_cycle(&node_type, 100 + i);
    };
    make_garbage_self_cycle(&final_node_type, 1);
    EXPECT_EQ(cgc_collect(2), 1);
    on_finalize = nullptr;
    EXPECT_EQ(stats_of(0).collections, 0u);
    EXPECT_EQ(counters.deallocated, 1);
    // The next allocation is over the threshold and collects them.
    Node *trigger = new_node(200);
    EXPECT_EQ(stats_of(0).collections, 1u);
    EXPECT_EQ(counters.deallocated, 21);
    cgc_decref(obj(trigger));
}

// ---- Finalizers (PEP 442) ----------------------------------------------------

TEST_F(CollectorTest, FinalizerCanResurrectItsObject) {
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        saved = obj(node);
        cgc_incref(saved);
    };
    Node *a = make_garbage_self_cycle(&final_node_type, 1);
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.cleared, 0);
    EXPECT_EQ(counters.deallocated, 0);
    ASSERT_EQ(saved, obj(a));
    EXPECT_EQ(saved->ob_refcnt, 2);
    EXPECT_TRUE(cgc_gc_is_finalized(saved));
    EXPECT_TRUE(cgc_gc_is_tracked(saved));
    EXPECT_EQ(generation_of(saved), 1);  // resurrected objects are survivors
    EXPECT_EQ(a->next, obj(a));          // and were not cleared

    cgc_decref(saved);  // garbage again: freed, and not finalized a second time
    EXPECT_EQ(cgc_collect(1), 1);
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(CollectorTest, ResurrectionKeepsEverythingTheObjectReaches) {
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        if (node->id != 1) return;
        saved = obj(node);
        cgc_incref(saved);
    };
    Node *a = new_node(&final_node_type, 1);
    Node *b = new_node(&final_node_type, 2);
    Node *c = new_node(&node_type, 3);  // reachable only from b, no finalizer
    link_next(a, b);
    link_next(b, a);
    link_extra(b, obj(c));
    cgc_decref(obj(a));
    cgc_decref(obj(b));
    cgc_decref(obj(c));

    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.finalized, 2);  // every finalizer runs before the check
    EXPECT_EQ(counters.cleared, 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(b->extra, obj(c));
    EXPECT_TRUE(cgc_gc_is_tracked(obj(b)));
    EXPECT_TRUE(cgc_gc_is_tracked(obj(c)));
    EXPECT_TRUE(cgc_gc_is_finalized(obj(b)));
    EXPECT_FALSE(cgc_gc_is_finalized(obj(c)));

    cgc_decref(saved);
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_EQ(counters.finalized, 2);
    EXPECT_EQ(counters.deallocated, 3);
}

TEST_F(CollectorTest, ResurrectedObjectFreedByRefcountIsNotFinalizedAgain) {
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        saved = obj(node);
        cgc_incref(saved);
    };
    Node *a = make_garbage_self_cycle(&final_node_type, 1);
    EXPECT_EQ(cgc_collect(2), 0);
    ASSERT_EQ(saved, obj(a));
    link_next(a, nullptr);  // break the cycle by hand
    cgc_decref(saved);      // dealloc: PyObject_CallFinalizerFromDealloc must not run it again
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(CollectorTest, AllFinalizersRunBeforeAnyClear) {
    log_events = true;
    const int n = 4;
    std::vector<Node *> ring;
    for (int i = 1; i <= n; ++i) ring.push_back(new_node(&final_node_type, i));
    for (int i = 0; i < n; ++i) link_next(ring[i], ring[(i + 1) % n]);
    int intact_neighbours = 0;
    on_finalize = [&](Node *node) {
        if (node->next && as_node(node->next)->next) ++intact_neighbours;
    };
    for (Node *node : ring) cgc_decref(obj(node));
    EXPECT_EQ(cgc_collect(2), n);
    EXPECT_EQ(counters.finalized, n);
    EXPECT_EQ(counters.deallocated, n);
    EXPECT_EQ(intact_neighbours, n);

    std::set<std::string> finalized;
    size_t last_finalize = 0, first_clear = events.size();
    for (size_t i = 0; i < events.size(); ++i) {
        if (events[i][0] == 'F') {
            finalized.insert(events[i]);
            last_finalize = i;
        }
        if (events[i][0] == 'C') first_clear = std::min(first_clear, i);
    }
    EXPECT_EQ(finalized.size(), size_t(n));
    EXPECT_LT(last_finalize, first_clear) << ::testing::PrintToString(events);
}

// ---- User code changing the unreachable set during a collection -------------

TEST_F(CollectorTest, FinalizerFreesOtherUnreachableObjects) {
    // a <-> b, a.extra = c, c <-> d: all garbage. a's finalizer breaks c <-> d
    // and drops c, so c and d are freed in the middle of the finalizer pass,
    // before or after the pass reaches them (creation order decides).
    for (bool cd_first : {true, false}) {
        SCOPED_TRACE(cd_first ? "c, d tracked first" : "c, d tracked last");
        reset_node_state();
        Node *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
        auto make_cd = [&] {
            c = new_node(&final_node_type, 3);
            d = new_node(&final_node_type, 4);
        };
        if (cd_first) make_cd();
        a = new_node(&final_node_type, 1);
        b = new_node(&node_type, 2);
        if (!cd_first) make_cd();
        link_next(a, b);
        link_next(b, a);
        link_extra(a, obj(c));
        link_next(c, d);
        link_next(d, c);
        on_finalize = [](Node *node) {
            if (node->id != 1) return;
            cgc_object *cc = node->extra;
            node->extra = nullptr;
            Node *c_node = as_node(cc);
            cgc_object *dd = c_node->next;
            c_node->next = nullptr;
            cgc_decref(dd);  // frees d, which drops its reference to c
            cgc_decref(cc);  // frees c
        };
        for (Node *node : {a, b, c, d}) cgc_decref(obj(node));
        cgc_ssize_t collected = cgc_collect(2);
        EXPECT_GE(collected, 2);
        EXPECT_LE(collected, 4);
        EXPECT_EQ(counters.deallocated, 4);
        EXPECT_EQ(counters.finalized, 3);  // a, c, d: each once
        EXPECT_EQ(tracked_total(), 0);
    }
}

TEST_F(CollectorTest, FinalizerUntracksAnotherUnreachableObject) {
    for (bool b_first : {true, false}) {
        SCOPED_TRACE(b_first ? "b tracked first" : "b tracked last");
        reset_node_state();
        Node *a = nullptr, *b = nullptr;
        if (b_first) b = new_node(&node_type, 2);
        a = new_node(&final_node_type, 1);
        if (!b_first) b = new_node(&node_type, 2);
        link_next(a, b);
        link_next(b, a);
        on_finalize = [b](Node *node) {
            if (node->id == 1) cgc_gc_untrack(obj(b));
        };
        cgc_decref(obj(a));
        cgc_decref(obj(b));
        // b is untracked now: its reference to a counts as external, so a
        // (and b) survive. Nothing may be freed, nothing may crash.
        EXPECT_EQ(cgc_collect(2), 0);
        EXPECT_EQ(counters.deallocated, 0);
        EXPECT_EQ(counters.cleared, 0);
        EXPECT_FALSE(cgc_gc_is_tracked(obj(b)));
        EXPECT_TRUE(cgc_gc_is_tracked(obj(a)));
        EXPECT_FALSE((gci::meta_of(a).flags & gci::kCollecting));
        // Tracked again, the cycle is garbage (a is already finalized).
        on_finalize = nullptr;
        cgc_gc_track(obj(b));
        EXPECT_EQ(cgc_collect(2), 2);
        EXPECT_EQ(counters.deallocated, 2);
        EXPECT_EQ(counters.finalized, 1);
    }
}

TEST_F(CollectorTest, TpClearUntracksAndFreesOtherUnreachableObjects) {
    // a <-> b and c <-> d, a.extra = c. a's tp_clear untracks c first.
    for (bool cd_first : {true, false}) {
        SCOPED_TRACE(cd_first ? "c, d tracked first" : "c, d tracked last");
        reset_node_state();
        Node *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
        auto make_cd = [&] {
            c = new_node(3);
            d = new_node(4);
        };
        if (cd_first) make_cd();
        a = new_node(1);
        b = new_node(2);
        if (!cd_first) make_cd();
        link_next(a, b);
        link_next(b, a);
        link_extra(a, obj(c));
        link_next(c, d);
        link_next(d, c);
        on_clear = [](Node *node) {
            if (node->id == 1 && node->extra) cgc_gc_untrack(node->extra);
        };
        for (Node *node : {a, b, c, d}) cgc_decref(obj(node));
        EXPECT_EQ(cgc_collect(2), 4);
        EXPECT_EQ(counters.deallocated, 4);
        EXPECT_EQ(tracked_total(), 0);
    }
}

TEST_F(CollectorTest, ObjectSurvivingItsClearMovesToOlderGeneration) {
    Node *x = make_garbage_self_cycle(&noclear_node_type, 1);  // no tp_clear
    EXPECT_EQ(cgc_collect(0), 0);  // not freed: not collected (CPython counts it)
    expect_one_error(CGC_ERR_MISUSE, {"1 unreachable objects", "no tp_clear"});
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_TRUE(cgc_gc_is_tracked(obj(x)));
    EXPECT_EQ(generation_of(x), 1);
    EXPECT_FALSE((gci::meta_of(x).flags & gci::kCollecting));

    uint64_t examined = stats_of(0).examined;
    cgc_collect(0);
    EXPECT_EQ(stats_of(0).examined, examined);  // not young any more
    EXPECT_EQ(generation_of(x), 1);
    cgc_collect(1);
    EXPECT_EQ(generation_of(x), 2);
    cgc_collect(2);
    EXPECT_EQ(generation_of(x), 2);
    EXPECT_EQ(take_errors().size(), 2u);  // each collection that found it says so
    EXPECT_EQ(counters.deallocated, 0);

    link_next(x, nullptr);  // break it by hand: freed
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(CollectorTest, ObjectWithoutClearIsFreedThroughItsNeighbour) {
    // x has no tp_clear; y has one: whichever comes first, both are freed.
    for (bool x_first : {true, false}) {
        SCOPED_TRACE(x_first ? "x first" : "y first");
        reset_node_state();
        Node *x = nullptr, *y = nullptr;
        if (x_first) x = new_node(&noclear_node_type, 1);
        y = new_node(&node_type, 2);
        if (!x_first) x = new_node(&noclear_node_type, 1);
        link_next(x, y);
        link_next(y, x);
        cgc_decref(obj(x));
        cgc_decref(obj(y));
        EXPECT_EQ(cgc_collect(2), 2);
        EXPECT_EQ(counters.deallocated, 2);
        EXPECT_EQ(tracked_total(), 0);
    }
}

TEST_F(CollectorTest, GraphChangesFromTraverseAreRefused) {
    Node *outsider = new_node(&node_type, 9, /*track=*/false);
    Node *culprit = new_node(1);
    Node *victim = new_node(2);
    bool done = false;
    on_traverse = [&](Node *node) {
        if (node->id != 1 || done) return;
        done = true;
        cgc_gc_track(obj(outsider));
        cgc_gc_untrack(obj(victim));
    };
    EXPECT_EQ(cgc_collect(2), 0);
    on_traverse = nullptr;
    ASSERT_TRUE(done);
    EXPECT_FALSE(cgc_gc_is_tracked(obj(outsider)));
    EXPECT_TRUE(cgc_gc_is_tracked(obj(victim)));
    std::vector<ReportedError> errors = take_errors();
    ASSERT_EQ(errors.size(), 2u) << describe(errors);
    for (const ReportedError &error : errors) {
        EXPECT_EQ(error.kind, CGC_ERR_MISUSE);
        EXPECT_CONTAINS(error.message, "tp_traverse");
        EXPECT_CONTAINS(error.message, "test.Node");
    }
    EXPECT_CONTAINS(errors[0].message, "cgc_gc_track");
    EXPECT_CONTAINS(errors[1].message, "cgc_gc_untrack");
    for (Node *node : {outsider, culprit, victim}) cgc_decref(obj(node));
}

// ---- Corruption ---------------------------------------------------------------

TEST_F(CollectorTest, TraverseVisitingUnownedReferenceIsReportedAndNothingIsFreed) {
    Node *a = new_node(1);
    Node *b = new_node(2);
    link_next(a, b);
    link_next(b, a);
    Node *liar = new_node(&final_node_type, 3);
    liar->next = obj(a);  // the bug: a reference it does not own
    cgc_decref(obj(a));   // a: 1 reference (from b), visited twice
    cgc_decref(obj(b));

    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(counters.cleared, 0);
    std::vector<ReportedError> errors = take_errors();
    ASSERT_GE(errors.size(), 1u);
    EXPECT_EQ(errors[0].kind, CGC_ERR_CORRUPTION);
    EXPECT_CONTAINS(errors[0].message, "test.Node");
    EXPECT_CONTAINS(errors[0].message, "tp_traverse");
    EXPECT_EQ(cgc_error_occurred(), CGC_ERR_CORRUPTION);
    EXPECT_EQ(cgc_error_count(CGC_ERR_CORRUPTION), errors.size());
    EXPECT_EQ(obj(a)->ob_refcnt, 1);
    EXPECT_EQ(obj(b)->ob_refcnt, 1);
    EXPECT_TRUE(cgc_gc_is_tracked(obj(a)));
    EXPECT_TRUE(cgc_gc_is_tracked(obj(b)));

    liar->next = nullptr;  // repair: now a <-> b is plain garbage
    cgc_decref(obj(liar));
    EXPECT_EQ(cgc_collect(2), 2);
    EXPECT_EQ(counters.deallocated, 3);
    EXPECT_TRUE(take_errors().empty());
}

TEST_F(CollectorTest, TrackedObjectWithZeroCountIsReportedAndKept) {
    Node *z = new_node(1);
    obj(z)->ob_refcnt = 0;  // a Py_DECREF too many whose dealloc did not run
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(counters.deallocated, 0);
    expect_one_error(CGC_ERR_CORRUPTION, {"test.Node", "reference count 0"});
    EXPECT_TRUE(cgc_gc_is_tracked(obj(z)));
    obj(z)->ob_refcnt = 1;
    cgc_decref(obj(z));
    EXPECT_EQ(counters.deallocated, 1);
}

}  // namespace
