// Incremental full collections (cgc_set_pause_budget, cgc_collect_slice):
// cycles found over several slices while the program changes the graph
// between them, and the pause statistics.
#include "test_types.hpp"

#include <cyclegc/cyclegc.hpp>

#include <chrono>
#include <string_view>
#include <thread>
#include <vector>

using namespace cgc_test;

namespace {

using Step = gci::IncrementalStep;

class IncrementalTest : public HeapFixture {
  protected:
    gci::IncrementalCycle &cycle() { return heap_state().incremental; }

    // Runs slices of 1 ns (each does the least work, a few hundred units)
    // until the cycle reaches `step`; returns how many ran.
    int slice_until(Step step) {
        int slices = 0;
        while (cycle().step != step && slices < 1'000'000) {
            EXPECT_EQ(cgc_collect_slice(1), 0);
            ++slices;
        }
        return slices;
    }
    // Runs tiny slices until a cycle finishes; returns how many ran.
    int finish_cycle() {
        for (int slices = 1; slices < 1'000'000; ++slices)
            if (cgc_collect_slice(1) == 1) return slices;
        ADD_FAILURE() << "the cycle never finished";
        return 0;
    }
    // Finishes the cycle, which must have freed `freed` objects in all and
    // reported `collected`.
    void finish_freeing(int freed, uint64_t collected) {
        finish_cycle();
        EXPECT_EQ(counters.deallocated, freed);
        EXPECT_EQ(stats_of(2).collected, collected);
    }
};

// `n` nodes in generation 2, each referring to the one made before it (so
// the walk in address order meets referents behind it), the newest held.
Node *old_chain(int n, int first_id = 0) {
    Node *newest = nullptr;
    for (int i = 0; i < n; ++i) {
        Node *node = new_node(first_id + i);
        node->next = newest ? obj(newest) : nullptr;  // (transfers the reference)
        newest = node;
    }
    cgc_collect(1);
    cgc_collect(1);
    return newest;
}

// `n` 2-cycles moved to generation 2, then dropped: garbage (borrowed).
std::vector<Node *> old_garbage_pairs(int n, int first_id) {
    std::vector<Node *> pairs;
    for (int i = 0; i < n; ++i) {
        Node *a = new_node(first_id + 2 * i), *b = new_node(first_id + 2 * i + 1);
        link_next(a, b);
        link_next(b, a);
        pairs.push_back(a);
        pairs.push_back(b);
    }
    cgc_collect(1);
    cgc_collect(1);
    for (Node *node : pairs) cgc_decref(obj(node));
    return pairs;
}

// A self cycle in generation 2 that nothing else refers to.
Node *old_garbage_self_cycle(int id) {
    Node *node = new_node(id);
    link_next(node, node);
    cgc_collect(1);
    cgc_collect(1);
    EXPECT_EQ(generation_of(node), 2);
    cgc_decref(obj(node));
    return node;  // (borrowed)
}

TEST_F(IncrementalTest, GarbageIsFoundOverSeveralSlices) {
    Node *live = old_chain(5000);
    old_garbage_pairs(100, 1000);
    EXPECT_EQ(counters.deallocated, 0);
    int slices = finish_cycle();
    EXPECT_GT(slices, 4);  // each step took several
    EXPECT_EQ(counters.deallocated, 200);
    EXPECT_EQ(cycle().step, Step::none);
    EXPECT_EQ(stats_of(2).collections, 1u);
    EXPECT_EQ(stats_of(2).collected, 200u);
    EXPECT_GE(stats_of(2).examined, 5200u);
    cgc_decref(obj(live));
}

// Steps B and C handle each reference a few references after visiting it
// (its GcMeta prefetched meanwhile): what waits at a slice's end is handled
// before the program runs again. A heap of nothing but garbage 2-cycles,
// in slices of the least work: a decrement lost at a slice's end keeps its
// pair; a mark lost in step C gathers a live node of the chain.
TEST_F(IncrementalTest, ReferencesPendingAtASliceEndAreCountedInIt) {
    Node *live = old_chain(3000, 100000);
    std::vector<Node *> pairs = old_garbage_pairs(3000, 0);
    EXPECT_GT(slice_until(Step::final), 20);
    EXPECT_EQ(cycle().gathered.size(), pairs.size());  // every pair, no node of the chain
    finish_freeing(6000, 6000);
    cgc_decref(obj(live));
}

// Pages emptied while the cycle's walks run (steps A-D) are released by
// the slices after them, a few per slice, never all in one pause.
TEST_F(IncrementalTest, PagesEmptiedDuringACycleAreReleasedAFewPerSlice) {
    cgc_set_pause_budget(1'000'000);
    Node *live = old_chain(3000);
    std::vector<Node *> dying;
    for (int i = 0; i < 60000; ++i) dying.push_back(new_node(i));
    cgc_collect(1);
    cgc_collect(1);
    gci::PageSpace &space = heap_state().space;
    size_t full = space.page_bytes();
    slice_until(Step::subtract);
    for (Node *node : dying) cgc_decref(obj(node));  // (freed at once: pages empty under the walk)
    EXPECT_EQ(counters.deallocated, 60000);
    EXPECT_EQ(space.page_bytes(), full);
    int slices = 0;
    while ((cycle().running() || space.release_waiting()) && slices < 100000) {
        cgc_collect_slice(1);
        ++slices;
    }
    EXPECT_FALSE(space.release_waiting());
    EXPECT_LE(space.most_released_at_once(), gci::PageSpace::kReleasesPerStep);
    EXPECT_GE(full - space.page_bytes(), 40 * gci::kPageSize) << "the emptied pages were not released";
    finish_cycle();
    cgc_set_pause_budget(0);
    cgc_decref(obj(live));
}

// A cycle started by a slice when the young generations are too large to
// collect within it (data built with collections off): no young collection
// first; step A takes the young objects in as candidates, and the cycle
// frees their garbage.
TEST_F(IncrementalTest, ASliceAdoptsYoungGenerationsTooLargeToCollectFirst) {
    std::vector<Node *> kept;
    for (int i = 0; i < 30000; ++i) kept.push_back(new_node(i));
    for (int i = 0; i < 1000; ++i) {
        Node *a = new_node(100000 + i), *b = new_node(200000 + i);
        link_next(a, b);
        link_next(b, a);
        cgc_decref(obj(a));
        cgc_decref(obj(b));
    }
    cgc_ssize_t young_collections = stats_of(0).collections + stats_of(1).collections;
    EXPECT_EQ(cgc_collect_slice(100'000), 0);
    EXPECT_EQ(stats_of(0).collections + stats_of(1).collections, young_collections) << "collected young first";
    EXPECT_TRUE(cycle().adopt_young);
    EXPECT_LT(tracked_in(0), 32000) << "the first slice took none in";
    finish_cycle();
    EXPECT_EQ(counters.deallocated, 2000);
    EXPECT_EQ(stats_of(2).collected, 2000u);
    EXPECT_EQ(tracked_in(0) + tracked_in(1), 0);
    for (Node *node : kept) EXPECT_EQ(generation_of(node), 2);
    for (Node *node : kept) cgc_decref(obj(node));
}

TEST_F(IncrementalTest, ReturnValues) {
    Node *live = old_chain(3000);
    EXPECT_EQ(cgc_collect_slice(1), 0);  // started, work remains
    EXPECT_TRUE(cycle().running());
    EXPECT_EQ(cgc_collect_slice(0), 1);  // 0: to the end
    EXPECT_FALSE(cycle().running());
    EXPECT_EQ(cgc_collect_slice(0), 1);  // a whole cycle
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, ObjectReferencedFromALocalBeforeTheFinalStepSurvives) {
    Node *live = old_chain(2000);
    Node *x = old_garbage_self_cycle(7);
    slice_until(Step::final);
    // The analysis gathered x as garbage; the program takes a reference.
    ASSERT_FALSE(cycle().gathered.empty());
    cgc_incref(obj(x));
    EXPECT_EQ(cgc_collect_slice(1), 1);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(generation_of(x), 2);
    cgc_decref(obj(x));
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.deallocated, 1);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, ObjectReferencedFromAYoungObjectMidCycleSurvives) {
    Node *live = old_chain(2000);
    Node *x = old_garbage_self_cycle(7);
    slice_until(Step::mark);
    Node *young = new_node(8);  // tracked during the cycle: not a candidate
    link_extra(young, obj(x));
    finish_cycle();
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(x->ob_base.ob_refcnt, 2);
    cgc_decref(obj(young));  // young and x are garbage now
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.deallocated, 2);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, ObjectResurrectedThroughAWeakReferenceSurvives) {
    Node *live = old_chain(2000);
    Node *x = old_garbage_self_cycle(7);
    cgc_object *weak = cgc_weakref_new(obj(x), nullptr, nullptr);
    ASSERT_NE(weak, nullptr);
    slice_until(Step::final);
    cgc_object *strong = cgc_weakref_get(weak);
    ASSERT_EQ(strong, obj(x));
    EXPECT_EQ(cgc_collect_slice(1), 1);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(cgc_weakref_get_ref(weak, &strong), 1);  // still alive
    cgc_decref(strong);
    cgc_decref(strong);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.deallocated, 1);
    cgc_object *dead = nullptr;
    EXPECT_EQ(cgc_weakref_get_ref(weak, &dead), 0);
    cgc_decref(weak);
    cgc_decref(obj(live));
}

// References moved between slices, from holders the walk has yet to reach to
// holders it has passed: the stale marking misses some targets, which the
// final step finds referenced and keeps.
TEST_F(IncrementalTest, ReferencesMovedBetweenSlicesFreeNothingLive) {
    const int n = 3000;
    std::vector<Node *> low, high, targets;
    for (int i = 0; i < n; ++i) low.push_back(new_node(i));
    for (int i = 0; i < n; ++i) targets.push_back(new_node(n + i));
    for (int i = 0; i < n; ++i) high.push_back(new_node(2 * n + i));
    for (int i = 0; i < n; ++i) {
        high[i]->next = obj(targets[i]);  // (the reference made above moves in)
        cgc_xincref(high[i]->next);
        cgc_decref(obj(targets[i]));
    }
    cgc_collect(1);
    cgc_collect(1);
    bool in_high = true;
    int slices = 0;
    while (cgc_collect_slice(1) == 0) {
        // Each target is referenced by exactly one holder at any time.
        for (int i = 0; i < n; ++i) {
            Node *from = in_high ? high[i] : low[i];
            Node *to = in_high ? low[i] : high[i];
            to->next = from->next;
            from->next = nullptr;
        }
        in_high = !in_high;
        ++slices;
    }
    EXPECT_GT(slices, 4);
    EXPECT_EQ(counters.deallocated, 0);
    for (Node *target : targets) EXPECT_EQ(generation_of(target), 2);
    for (Node *node : low) cgc_decref(obj(node));
    for (Node *node : high) cgc_decref(obj(node));
    EXPECT_EQ(counters.deallocated, 3 * n);
}

// Objects on the mark stack freed between slices: their entries become null
// (never read again), and new objects take their slots.
TEST_F(IncrementalTest, ObjectsFreedWhileOnTheMarkStackLeaveNullEntries) {
    const int n = 4000;
    Node *head = old_chain(n);
    int slices = 0;
    // Until the stack holds a node below the head's child (one the cut frees).
    auto listed_below_child = [&] {
        size_t entries = 0;
        for (cgc_object *op : cycle().stack) entries += op != nullptr && op != head->next;
        return entries;
    };
    while (cycle().step != Step::mark || listed_below_child() == 0) {
        ASSERT_EQ(cgc_collect_slice(1), 0);
        ASSERT_LT(++slices, 100'000);
    }
    // Cut the chain below the head's child: the rest, what the stack holds
    // among it, is freed.
    Node *child = as_node(head->next);
    link_next(child, nullptr);
    EXPECT_EQ(counters.deallocated, n - 2);
    size_t live_entries = 0;
    for (cgc_object *op : cycle().stack) {
        if (!op || op == obj(child)) continue;
        ++live_entries;
        const gci::GcMeta &meta = gci::meta_of(op);
        EXPECT_TRUE(meta.flags & gci::kTracked);
        EXPECT_TRUE(meta.schedule & gci::kIncrListed);
    }
    EXPECT_EQ(live_entries, 0u);
    // New objects in the freed slots, garbage among them.
    std::vector<Node *> fresh;
    for (int i = 0; i < 1000; ++i) fresh.push_back(new_node(100000 + i));
    for (int i = 0; i < 1000; i += 2) {
        link_next(fresh[i], fresh[i + 1]);
        link_next(fresh[i + 1], fresh[i]);
    }
    for (Node *node : fresh) cgc_decref(obj(node));
    finish_cycle();
    EXPECT_EQ(counters.deallocated, n - 2);  // the fresh garbage is young: not this cycle's
    EXPECT_EQ(cgc_collect(2), 1000);
    cgc_decref(obj(head));
}

TEST_F(IncrementalTest, GatheredObjectsFreedBeforeTheFinalStepLeaveNullEntries) {
    Node *live = old_chain(2000);
    std::vector<Node *> garbage;
    for (int i = 0; i < 50; ++i) garbage.push_back(old_garbage_self_cycle(i));
    slice_until(Step::final);
    EXPECT_EQ(cycle().gathered.size(), 50u);
    // The program breaks half of the cycles itself: freed now.
    for (int i = 0; i < 50; i += 2) link_next(garbage[i], nullptr);
    EXPECT_EQ(counters.deallocated, 25);
    size_t left = 0;
    for (cgc_object *op : cycle().gathered) left += op != nullptr;
    EXPECT_EQ(left, 25u);
    finish_freeing(50, 25);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, FullCollectionEndsTheCycleAtOnce) {
    Node *live = old_chain(3000);
    Node *x = old_garbage_self_cycle(1);
    (void)x;
    slice_until(Step::mark);
    make_garbage_pair(2, 3);  // young garbage, made during the cycle
    EXPECT_EQ(cgc_collect(2), 3);
    EXPECT_FALSE(cycle().running());
    EXPECT_EQ(counters.deallocated, 3);
    // The collection counted references from zero: no word was left over.
    EXPECT_EQ(cgc_collect(2), 0);
    EXPECT_EQ(cgc_collect_slice(0), 1);  // a new cycle
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, FreezeBetweenSlicesDropsTheCycle) {
    Node *live = old_chain(3000);
    Node *x = old_garbage_self_cycle(1);
    slice_until(Step::subtract);
    cgc_freeze();
    EXPECT_FALSE(cycle().running());
    EXPECT_EQ(generation_of(x), CGC_NUM_GENERATIONS);  // frozen, with no cycle's marks
    EXPECT_EQ(gci::meta_of(x).schedule, 0);
    EXPECT_EQ(cgc_collect_slice(0), 1);
    EXPECT_EQ(counters.deallocated, 0);  // frozen objects are not collected
    cgc_unfreeze();
    EXPECT_EQ(cgc_collect_slice(0), 1);
    EXPECT_EQ(counters.deallocated, 1);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, IntrospectionAndSettingsBetweenSlices) {
    Node *live = old_chain(3000);
    slice_until(Step::mark);
    cgc_object_list all{};
    ASSERT_EQ(cgc_get_objects(-1, &all), 0);
    EXPECT_EQ(all.count, 3000);
    cgc_object_list_release(&all);
    cgc_set_threshold(0, 100);
    EXPECT_EQ(cgc_get_threshold(0), 100);
    EXPECT_TRUE(cycle().running());
    finish_cycle();
    EXPECT_EQ(counters.deallocated, 0);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, NoAutomaticSlicesWhileDisabled) {
    Node *live = old_chain(20000);
    cgc_set_pause_budget(50'000);
    EXPECT_EQ(cgc_get_pause_budget(), 50'000u);
    cgc_collect_slice(1);
    ASSERT_TRUE(cycle().running());
    size_t page = cycle().page;
    gci::IncrementalStep step = cycle().step;
    std::vector<Node *> made;
    for (int i = 0; i < 20000; ++i) made.push_back(new_node(i));  // (disabled by the fixture)
    EXPECT_EQ(cycle().step, step);
    EXPECT_EQ(cycle().page, page);
    cgc_enable();
    for (int i = 0; i < 200000 && cycle().running(); ++i) made.push_back(new_node(i));
    EXPECT_FALSE(cycle().running());  // automatic slices ended it
    cgc_disable();
    for (Node *node : made) cgc_decref(obj(node));
    cgc_decref(obj(live));
}

// With a budget, the long-lived rule starts cycles instead of full
// collections, and the slices free the old garbage.
TEST_F(IncrementalTest, AutomaticCyclesFreeOldGarbage) {
    cgc_set_pause_budget(100'000);
    cgc_set_threshold(0, 700);  // (no adaptive schedule: the counts below are CPython's)
    cgc_enable();
    std::vector<Node *> live;
    for (int i = 0; i < 30000; ++i) {
        Node *node = new_node(i);
        if (i % 3 == 0) {
            link_next(node, node);  // garbage once dropped, if it reaches an old generation first
            cgc_collect(1);
        }
        live.push_back(node);
        if (live.size() > 100) {
            cgc_decref(obj(live.front()));
            live.erase(live.begin());
        }
    }
    std::vector<Node *> kept;  // (allocations that live: frees count back down)
    for (int i = 0; i < 200000 && stats_of(2).collections == 0; ++i) kept.push_back(new_node(i));
    EXPECT_GE(stats_of(2).collections, 1u);
    EXPECT_GT(stats_of(2).collected, 0u);
    cgc_pause_stats pauses{};
    cgc_get_pause_stats(&pauses);
    EXPECT_GT(pauses.count, stats_of(0).collections + stats_of(1).collections);  // and the slices
    cgc_disable();
    for (Node *node : live) cgc_decref(obj(node));
    for (Node *node : kept) cgc_decref(obj(node));
}

// With a budget and the default schedule, generation 1 due but too large to
// collect within half of it joins generation 2 unexamined (the next cycle
// examines it in slices), counted toward that cycle, and only generation 0
// is collected.
TEST_F(IncrementalTest, GenerationOneTooLargeForTheBudgetIsPromotedUnexamined) {
    if (heap_state().unlist_whatever_the_heap)
        GTEST_SKIP() << "young objects unlisted (CYCLEGC_YOUNG_LIST_CAP): generation 1 is collected";
    Node *old = old_chain(30000);  // (young objects stay listed while the old ones are more)
    cgc_set_pause_budget(100'000);
    std::vector<Node *> middle;
    for (int i = 0; i < 10000; ++i) middle.push_back(new_node(i));
    for (int i = 0; i <= 10; ++i) cgc_collect(0);  // (generation 1 due: 11 collections of generation 0)
    ASSERT_EQ(tracked_in(1), 10000);
    uint64_t middle_collections = stats_of(1).collections, young_collections = stats_of(0).collections;
    cgc_ssize_t pending = heap_state().long_lived_pending;
    cgc_enable();
    std::vector<Node *> young;
    for (int i = 0; i < 800 && stats_of(0).collections == young_collections; ++i) young.push_back(new_node(i));
    cgc_disable();
    EXPECT_EQ(stats_of(0).collections, young_collections + 1);
    EXPECT_EQ(stats_of(1).collections, middle_collections) << "generation 1 was collected";
    for (Node *node : middle) EXPECT_EQ(generation_of(node), 2);
    EXPECT_EQ(heap_state().long_lived_pending, pending + 10000);
    EXPECT_EQ(tracked_in(0) + tracked_in(1), static_cast<cgc_ssize_t>(young.size()));
    cgc_set_pause_budget(0);
    for (Node *node : middle) cgc_decref(obj(node));
    for (Node *node : young) cgc_decref(obj(node));
    cgc_decref(obj(old));
}

// Under a budget generation 0's threshold stays within it, lower than its
// findings would set: the young collections that generation 2's count
// counts span fewer allocations, and a cycle waits for that many more.
TEST_F(IncrementalTest, CyclesAreDueAsFullCollectionsWouldBeWithoutTheBudget) {
    gci::Heap &heap = heap_state();
    heap.generations[2].count = 11;  // (over its threshold, 10)
    EXPECT_TRUE(gci::cycle_due(heap));
    heap.unbudgeted_shift[0] = 6;  // the findings: 64 x 700
    heap.shift[0] = 2;             // the budget: 4 x 700, 16 times more collections
    EXPECT_FALSE(gci::cycle_due(heap));
    heap.generations[2].count = 10 * 16;
    EXPECT_FALSE(gci::cycle_due(heap));
    heap.generations[2].count = 10 * 16 + 1;
    EXPECT_TRUE(gci::cycle_due(heap));
    heap.shift[0] = heap.unbudgeted_shift[0] = 0;
    heap.generations[2].count = 0;
}

TEST_F(IncrementalTest, FinalizersRunOnce) {
    Node *live = old_chain(2000);
    Node *f = new_node(&final_node_type, 1);
    link_next(f, f);
    cgc_collect(1);
    cgc_collect(1);
    cgc_decref(obj(f));
    on_finalize = [](Node *node) {
        // Resurrects it once: the collection keeps it, the next frees it.
        static bool resurrected = false;
        if (!resurrected) {
            resurrected = true;
            cgc_incref(obj(node));
            link_extra(node, nullptr);
        }
    };
    EXPECT_GE(finish_cycle(), 1);
    EXPECT_EQ(counters.finalized, 1);
    EXPECT_EQ(counters.deallocated, 0);
    cgc_decref(obj(f));  // the finalizer's reference: the self cycle is garbage again
    finish_cycle();
    EXPECT_EQ(counters.finalized, 1);  // not again
    EXPECT_EQ(counters.deallocated, 1);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, SliceDuringACollectionIsRefused) {
    int status = 2;
    on_finalize = [&](Node *) { status = cgc_collect_slice(1000); };
    Node *f = new_node(&final_node_type, 1);
    link_next(f, f);
    cgc_decref(obj(f));
    cgc_collect(2);
    EXPECT_EQ(status, -1);
    expect_one_error(CGC_ERR_MISUSE, {"cgc_collect_slice", "during a collection"});
}

TEST_F(IncrementalTest, CppSpellings) {
    using namespace std::chrono_literals;
    cyclegc::set_pause_budget(2ms);
    EXPECT_EQ(cyclegc::get_pause_budget(), 2ms);
    cyclegc::reset_pause_stats();
    Node *live = old_chain(1000);
    while (!cyclegc::collect_slice(1ns)) {
    }
    cyclegc::pause_stats pauses = cyclegc::get_pause_stats();
    EXPECT_GT(pauses.count, 2u);
    EXPECT_GE(pauses.max_ns, pauses.p50_ns);
    cyclegc::set_pause_budget(0ns);
    cgc_decref(obj(live));
}

// ---- The clear step: the proven garbage cleared over later slices ---------

// `n` self cycles in generation 2, dropped: garbage each clear frees one of.
std::vector<Node *> old_garbage_self_cycles(int n, int first_id = 0) {
    std::vector<Node *> nodes;
    for (int i = 0; i < n; ++i) {
        Node *node = new_node(first_id + i);
        link_next(node, node);
        nodes.push_back(node);
    }
    cgc_collect(1);
    cgc_collect(1);
    for (Node *node : nodes) cgc_decref(obj(node));
    return nodes;  // (borrowed: valid until freed)
}

// The "stop" callbacks of full collections: what each reported.
void record_full_stops(const char *phase, const cgc_collection_info *info, void *context) {
    if (std::string_view(phase) == "stop" && info->generation == 2)
        static_cast<std::vector<cgc_ssize_t> *>(context)->push_back(info->collected);
}

// A garbage object still waiting in the to-clear list.
cgc_object *waiting_garbage(gci::IncrementalCycle &cycle) {
    for (size_t i = cycle.clear_cursor; i < cycle.to_clear.size(); ++i)
        if (cycle.to_clear[i]) return cycle.to_clear[i];
    return nullptr;
}

TEST_F(IncrementalTest, GarbageIsClearedOverLaterSlicesAndReportedWhenItEnds) {
    Node *live = old_chain(1000);
    old_garbage_self_cycles(2000, 5000);
    std::vector<cgc_ssize_t> stops;
    cgc_add_collection_callback(record_full_stops, &stops);
    slice_until(Step::clear);
    EXPECT_GT(counters.deallocated, 0);
    EXPECT_LT(counters.deallocated, 2000);
    EXPECT_TRUE(stops.empty());  // not reported yet
    EXPECT_EQ(stats_of(2).collections, 0u);
    // Out of sight of the program.
    cgc_object_list all{};
    ASSERT_EQ(cgc_get_objects(-1, &all), 0);
    EXPECT_EQ(all.count, 1000);
    cgc_object_list_release(&all);
    cgc_object *waiting = waiting_garbage(cycle());
    ASSERT_NE(waiting, nullptr);
    cgc_object_list referrers{};
    ASSERT_EQ(cgc_get_referrers(&waiting, 1, &referrers), 0);
    EXPECT_EQ(referrers.count, 0);  // (it refers to itself)
    cgc_object_list_release(&referrers);
    // Young and middle collections meanwhile do not examine it.
    int freed = counters.deallocated;
    uint64_t examined = stats_of(1).examined;
    Node *young = new_node(1);
    cgc_collect(0);
    cgc_collect(1);
    EXPECT_EQ(stats_of(1).examined - examined, 1u);  // the young object alone
    EXPECT_EQ(counters.deallocated, freed);
    EXPECT_EQ(cycle().step, Step::clear);  // no other cycle started
    EXPECT_EQ(finish_cycle() > 1, true);
    EXPECT_EQ(counters.deallocated, 2000);
    ASSERT_EQ(stops.size(), 1u);
    EXPECT_EQ(stops[0], 2000);
    EXPECT_EQ(stats_of(2).collections, 1u);
    EXPECT_EQ(stats_of(2).collected, 2000u);
    cgc_remove_collection_callback(record_full_stops, &stops);
    cgc_decref(obj(young));
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, FullCollectionFinishesTheClearingFirst) {
    Node *live = old_chain(1000);
    old_garbage_self_cycles(1000);
    slice_until(Step::clear);
    EXPECT_EQ(cgc_collect(2), 0);  // (the cycle's garbage is the cycle's)
    EXPECT_EQ(counters.deallocated, 1000);
    EXPECT_EQ(cycle().step, Step::none);
    EXPECT_EQ(stats_of(2).collections, 2u);
    EXPECT_EQ(stats_of(2).collected, 1000u);  // counted once
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, FreezeAndFinalizeFinishTheClearingFirst) {
    Node *live = old_chain(1000);
    old_garbage_self_cycles(1000);
    slice_until(Step::clear);
    cgc_freeze();
    EXPECT_EQ(counters.deallocated, 1000);
    EXPECT_EQ(cgc_get_freeze_count(), 1000);  // the live chain alone
    cgc_unfreeze();
    old_garbage_self_cycles(1000);
    slice_until(Step::clear);
    cgc_finalize();  // (as deleting the heap does)
    EXPECT_EQ(counters.deallocated, 2000);
    EXPECT_EQ(cycle().step, Step::none);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, GarbageFreedWhileWaitingToBeClearedLeavesANullEntry) {
    Node *live = old_chain(1000);
    std::vector<Node *> garbage = old_garbage_self_cycles(1000);
    slice_until(Step::clear);
    // The test alone still knows the last one: it breaks its cycle.
    Node *last = garbage.back();
    ASSERT_EQ(waiting_garbage(cycle()) != nullptr, true);
    ASSERT_EQ(cycle().to_clear.back(), obj(last));
    link_next(last, nullptr);
    EXPECT_EQ(cycle().to_clear.back(), nullptr);
    finish_freeing(1000, 1000);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, ObjectsTheClearsDoNotFreeReturnToGenerationTwo) {
    Node *live = old_chain(1000);
    old_garbage_self_cycles(500);
    Node *kept = new_node(&noclear_node_type, 1);  // no tp_clear: nothing breaks its cycle
    link_next(kept, kept);
    cgc_collect(1);
    cgc_collect(1);
    cgc_decref(obj(kept));
    slice_until(Step::clear);
    finish_cycle();
    expect_one_error(CGC_ERR_MISUSE, {"still alive after their cycle was cleared"});
    EXPECT_EQ(counters.deallocated, 500);
    EXPECT_EQ(generation_of(kept), 2);
    EXPECT_EQ(gci::meta_of(kept).schedule, 0);
    EXPECT_EQ(stats_of(2).collected, 500u);
    cgc_object_list all{};
    ASSERT_EQ(cgc_get_objects(2, &all), 0);
    EXPECT_EQ(all.count, 1001);  // seen again
    cgc_object_list_release(&all);
    link_next(kept, nullptr);
    cgc_decref(obj(live));
}

// ---- Step E and F: the gathered set proven a batch of whole parts a slice -

TEST_F(IncrementalTest, TheFinalStepProvesWholePartsOverSeveralSlices) {
    Node *live = old_chain(1000);
    // One part of 500 (a ring: a batch that split it would keep it all) and
    // 500 parts of one.
    std::vector<Node *> ring;
    for (int i = 0; i < 500; ++i) ring.push_back(new_node(i));
    for (int i = 0; i < 500; ++i) link_next(ring[i], ring[(i + 1) % 500]);
    cgc_collect(1);
    cgc_collect(1);
    for (Node *node : ring) cgc_decref(obj(node));
    old_garbage_self_cycles(500, 1000);
    slice_until(Step::final);
    int proving = slice_until(Step::clear);
    EXPECT_GT(proving, 100);  // one part per 1 ns slice
    finish_freeing(1000, 1000);
    cgc_decref(obj(live));
}

TEST_F(IncrementalTest, PartsLinkedAfterTheyWereFoundAreProvenApartAndKept) {
    Node *live = old_chain(1000);
    Node *x = old_garbage_self_cycle(1);
    Node *y = old_garbage_self_cycle(2);
    slice_until(Step::final);  // x and y found as two parts
    // The program (which kept pointers) takes y and links it to x.
    cgc_incref(obj(y));
    link_extra(y, obj(x));
    cgc_collect_slice(1);  // x's part: referenced from y, outside its batch
    finish_cycle();
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(generation_of(x), 2);
    EXPECT_EQ(generation_of(y), 2);
    cgc_decref(obj(y));
    EXPECT_EQ(cgc_collect(2), 2);
    cgc_decref(obj(live));
}

// What step F's batches cost per object, timed from outside (inside the
// library's own timing of each batch) on the heap's pause clock.
struct BatchTimer {
    gci::IncrementalCycle *cycle;
    bool thread_clock;
    gci::SliceClock clock{false};
    size_t objects = 0;
    double costliest = 0;  // ns per object, the costliest batch's
    static void observe(void *context, gci::IncrementalEvent event) {
        auto *timer = static_cast<BatchTimer *>(context);
        if (event == gci::IncrementalEvent::batch_begin) {
            timer->objects = timer->cycle->batch.size();
            timer->clock = gci::SliceClock(timer->thread_clock);
        } else if (event == gci::IncrementalEvent::batch_end && timer->objects) {
            double cost = static_cast<double>(timer->clock.elapsed()) / static_cast<double>(timer->objects);
            timer->costliest = std::max(timer->costliest, cost);
        }
    }
};

// A batch costlier per object than the estimate step F sized it by raises
// the estimate to its cost at once (averaged, the next batches overran too).
TEST_F(IncrementalTest, ABatchCostlierThanItsEstimateSetsItAtOnce) {
    Node *live = old_chain(100);
    old_garbage_self_cycles(50, 1000);
    slice_until(Step::final);
    cycle().ns_per_object = 1;  // below what any batch costs
    BatchTimer timer{&cycle(), heap_state().pause_clock_thread_cpu};
    cycle().observer = &BatchTimer::observe;
    cycle().observer_context = &timer;
    EXPECT_EQ(cgc_collect_slice(1), 0);  // one batch (one part)
    ASSERT_GT(timer.costliest, 0.0);
    EXPECT_GE(cycle().ns_per_object, timer.costliest);
    cycle().observer = nullptr;
    finish_freeing(50, 50);
    cgc_decref(obj(live));
}

// ---- The pause histogram ------------------------------------------------

TEST(PauseHistogram, BucketsAreLogLinear) {
    using H = gci::PauseHistogram;
    EXPECT_EQ(H::bucket_of(0), 0);
    EXPECT_EQ(H::bucket_of(1023), 0);
    EXPECT_EQ(H::bucket_of(1024), 1);
    EXPECT_EQ(H::upper_bound(1), 1024u + 128 - 1);
    EXPECT_EQ(H::bucket_of(2047), 8);
    EXPECT_EQ(H::upper_bound(8), 2047u);
    EXPECT_EQ(H::bucket_of(2048), 9);
    EXPECT_EQ(H::upper_bound(H::kBuckets - 1), UINT64_MAX);
    for (uint64_t ns : {1500ull, 999'999ull, 123'456'789ull, 1ull << 40}) {
        uint64_t bound = H::upper_bound(H::bucket_of(ns));
        EXPECT_GE(bound, ns);
        EXPECT_LE(bound, ns + ns / 8);  // the documented resolution
    }
}

TEST(PauseHistogram, PercentilesFromKnownPauses) {
    gci::PauseHistogram histogram;
    EXPECT_EQ(histogram.stats().p50_ns, 0u);
    for (int i = 0; i < 989; ++i) histogram.record(2000);
    for (int i = 0; i < 10; ++i) histogram.record(500'000);
    histogram.record(1'000'000);
    cgc_pause_stats stats = histogram.stats();
    EXPECT_EQ(stats.count, 1000u);
    EXPECT_EQ(stats.total_ns, 989u * 2000 + 10u * 500'000 + 1'000'000);
    EXPECT_EQ(stats.max_ns, 1'000'000u);
    EXPECT_EQ(stats.p50_ns, 2047u);    // 2000's bucket: [1920, 2047]
    EXPECT_EQ(stats.p99_ns, 524'287u);   // the 990th pause: 500'000's bucket, [491'520, 524'287]
    EXPECT_EQ(stats.p999_ns, 524'287u);  // the 999th
    histogram.record(1'000'000);
    EXPECT_EQ(histogram.percentile(1.0), 1'000'000u);  // capped at the maximum
    histogram.reset();
    EXPECT_EQ(histogram.stats().count, 0u);
}

// A slice's deadlines on the thread's CPU clock, checked through the
// monotonic one: time the thread spends asleep does not bring them closer.
TEST(SliceClock, ThreadDeadlinesIgnoreTimeAsleep) {
    gci::SliceClock clock(true);
    uint64_t deadline = clock.start() + 2'000'000;  // 2 ms of CPU time
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(clock.reached(deadline));
    EXPECT_LT(clock.elapsed(), 2'000'000u);
    volatile uint64_t spin = 0;
    while (!clock.reached(deadline)) spin = spin + 1;
    uint64_t exact = clock.elapsed();  // (read first: the bound is from the same sync or later)
    EXPECT_GE(exact, 2'000'000u);
    EXPECT_GE(clock.elapsed_upper_bound(), exact);
}

TEST(SliceClock, MonotonicDeadlinesCountTimeAsleep) {
    gci::SliceClock clock(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    EXPECT_TRUE(clock.reached(clock.start() + 2'000'000));
    EXPECT_GE(clock.elapsed(), 2'000'000u);
}

TEST_F(IncrementalTest, EveryCollectionIsAPause) {
    cgc_reset_pause_stats();
    cgc_collect(0);
    cgc_collect(2);
    cgc_pause_stats stats{};
    cgc_get_pause_stats(&stats);
    EXPECT_EQ(stats.count, 2u);
    EXPECT_GE(stats.total_ns, stats.max_ns);
}

struct ObservedPause {
    cgc_pause_kind kind;
    uint64_t ns;
};

void observe_pause(cgc_pause_kind kind, uint64_t ns, void *context) {
    static_cast<std::vector<ObservedPause> *>(context)->push_back({kind, ns});
}

TEST_F(IncrementalTest, ThePauseObserverSeesEveryPauseWithItsKind) {
    Node *held = old_chain(100);
    std::vector<ObservedPause> seen;
    cgc_set_pause_observer(observe_pause, &seen);
    cgc_reset_pause_stats();
    cgc_collect(0);
    cgc_collect(2);
    int slices = finish_cycle();  // (a collection of generation 1, then the slices)
    cgc_pause_stats stats{};
    cgc_get_pause_stats(&stats);
    cgc_set_pause_observer(nullptr, nullptr);
    cgc_collect(0);  // (not seen)

    ASSERT_EQ(seen.size(), stats.count);
    ASSERT_EQ(seen.size(), size_t(3 + slices));
    EXPECT_EQ(seen[0].kind, CGC_PAUSE_YOUNG);
    EXPECT_EQ(seen[1].kind, CGC_PAUSE_FULL);
    EXPECT_EQ(seen[2].kind, CGC_PAUSE_YOUNG);
    for (size_t i = 3; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i].kind, CGC_PAUSE_SLICE) << i;
    EXPECT_EQ(seen.back().kind, CGC_PAUSE_LAST_SLICE);
    uint64_t total = 0;
    for (const ObservedPause &pause : seen) total += pause.ns;
    EXPECT_EQ(total, stats.total_ns);
    cgc_decref(obj(held));
}

// A collection asked from the observer (inside the pause) is refused with
// 0, as from a collection callback, instead of running inside the one that
// ends.
void collect_from_observer(cgc_pause_kind, uint64_t, void *context) {
    static_cast<std::vector<cgc_ssize_t> *>(context)->push_back(cgc_collect(2));
}

TEST_F(IncrementalTest, ACollectionAskedFromThePauseObserverReturnsZero) {
    Node *held = old_chain(100);
    std::vector<cgc_ssize_t> results;
    cgc_set_pause_observer(collect_from_observer, &results);
    old_garbage_self_cycle(7);  // (its collections are observed too)
    finish_cycle();
    cgc_set_pause_observer(nullptr, nullptr);
    ASSERT_GE(results.size(), 3u);
    for (cgc_ssize_t found : results) EXPECT_EQ(found, 0);
    EXPECT_EQ(counters.deallocated, 1);  // (by the cycle, once)
    cgc_decref(obj(held));
}

}  // namespace
