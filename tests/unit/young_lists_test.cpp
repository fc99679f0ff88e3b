// Young objects the generation arrays do not hold ("unlisted": see
// Heap::young_unlisted). With automatic collection off, a program that
// loads its data would otherwise grow generation 0's array with the heap (8
// more bytes per object, and up to twice that while it doubles). Each test
// sets a small cap; the object counts and CPython's semantics must not see
// the difference: every generation lists, counts and collects exactly the
// objects CPython's would.
#include "test_types.hpp"

#include <algorithm>
#include <set>

using namespace cgc_test;

namespace {

class YoungListsTest : public HeapFixture {
  protected:
    static constexpr size_t kCap = 8;

    void SetUp() override {
        HeapFixture::SetUp();
        gci::Heap &heap = heap_state();
        heap.young_list_cap = kCap;
        heap.unlist_whatever_the_heap = true;  // (one test turns it off)
        for (gci::ObjectArray &young : heap.young) young.set_first_capacity(kCap);
    }

    // The objects cgc_get_objects(generation) lists.
    static std::set<cgc_object *> objects_of(int generation) {
        cgc_object_list list{};
        EXPECT_EQ(cgc_get_objects(generation, &list), 0);
        std::set<cgc_object *> objects(list.items, list.items + list.count);
        EXPECT_EQ(objects.size(), static_cast<size_t>(list.count)) << "an object listed twice";
        cgc_object_list_release(&list);
        return objects;
    }

    // `count` tracked nodes, each holding a reference to itself when
    // `cyclic`; the caller owns one reference to each.
    static std::vector<Node *> make_nodes(int count, bool cyclic, int first_id = 0) {
        std::vector<Node *> nodes;
        for (int i = 0; i < count; ++i) {
            Node *node = new_node(first_id + i);
            if (cyclic) link_next(node, node);
            nodes.push_back(node);
        }
        return nodes;
    }

    static void release(const std::vector<Node *> &nodes) {
        for (Node *node : nodes) cgc_decref(obj(node));
    }
};

// A heap made of young objects only: past the cap, generation 0's array
// stops growing; the others are found by walking the pages.
TEST_F(YoungListsTest, GenerationZeroStopsGrowingAtTheCapAndStillListsEveryObject) {
    std::vector<Node *> nodes = make_nodes(100, false);
    gci::Heap &heap = heap_state();
    EXPECT_EQ(heap.young[0].size(), kCap);
    EXPECT_LE(heap.young[0].capacity(), kCap);
    EXPECT_EQ(heap.young_unlisted[0], 100 - kCap);
    EXPECT_EQ(tracked_in(0), 100);

    std::set<cgc_object *> listed = objects_of(0);
    EXPECT_EQ(listed.size(), 100u);
    for (Node *node : nodes) EXPECT_TRUE(listed.count(obj(node)));
    EXPECT_TRUE(objects_of(1).empty());
    EXPECT_TRUE(objects_of(2).empty());
    EXPECT_EQ(objects_of(-1).size(), 100u);
    for (Node *node : nodes) EXPECT_EQ(generation_of(node), 0);
    release(nodes);
    EXPECT_EQ(tracked_in(0), 0);
    EXPECT_EQ(heap.young_unlisted[0], 0u);
}

// Untracking an unlisted object: it leaves the generation, and a later
// collection neither sees it nor loses count.
TEST_F(YoungListsTest, AnUnlistedObjectCanBeUntrackedAndTrackedAgain) {
    std::vector<Node *> nodes = make_nodes(20, false);
    Node *last = nodes.back();  // unlisted: tracked after the array filled
    ASSERT_EQ(gci::meta_of(last).word, gci::kUnlisted);
    cgc_gc_untrack(last);
    EXPECT_FALSE(cgc_gc_is_tracked(obj(last)));
    EXPECT_EQ(tracked_in(0), 19);
    EXPECT_FALSE(objects_of(0).count(obj(last)));
    cgc_gc_track(last);
    EXPECT_TRUE(cgc_gc_is_tracked(obj(last)));
    EXPECT_EQ(tracked_in(0), 20);
    EXPECT_TRUE(objects_of(0).count(obj(last)));
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(tracked_in(0), 0);
    EXPECT_EQ(tracked_in(1), 20);
    release(nodes);
}

// A young collection finds garbage among the unlisted objects, and its
// survivors, listed or not, reach generation 1.
TEST_F(YoungListsTest, AYoungCollectionCollectsUnlistedGarbageAndPromotesUnlistedSurvivors) {
    std::vector<Node *> kept = make_nodes(30, true, 0);
    std::vector<Node *> dropped = make_nodes(30, true, 100);
    release(dropped);  // 30 garbage self-cycles, most of them unlisted
    EXPECT_EQ(tracked_in(0), 60);
    EXPECT_EQ(cgc_collect(0), 30);
    EXPECT_EQ(counters.deallocated, 30);
    EXPECT_EQ(tracked_in(0), 0);
    EXPECT_EQ(tracked_in(1), 30);
    std::set<cgc_object *> survivors = objects_of(1);
    EXPECT_EQ(survivors.size(), 30u);
    for (Node *node : kept) {
        EXPECT_TRUE(survivors.count(obj(node)));
        EXPECT_EQ(generation_of(node), 1);
    }
    // Generation 1 filled its array too: its collection finds its unlisted
    // members as well.
    EXPECT_GT(heap_state().young_unlisted[1], 0u);
    for (Node *node : kept) link_next(node, nullptr);
    release(std::vector<Node *>(kept.begin(), kept.begin() + 10));
    EXPECT_EQ(counters.deallocated, 40);  // acyclic now: freed by reference counting
    for (int i = 10; i < 30; ++i) link_next(kept[i], kept[i]);  // cycles again, and dropped
    release(std::vector<Node *>(kept.begin() + 10, kept.end()));
    EXPECT_EQ(cgc_collect(0), 0);  // they are in generation 1
    EXPECT_EQ(cgc_collect(1), 20);
    EXPECT_EQ(counters.deallocated, 60);
    EXPECT_EQ(tracked_total(), 0);
}

// A young collection of a generation leaves the other generation's unlisted
// objects alone.
TEST_F(YoungListsTest, CollectingGenerationZeroLeavesGenerationOnesUnlistedObjects) {
    std::vector<Node *> older = make_nodes(20, true, 0);
    EXPECT_EQ(cgc_collect(0), 0);
    ASSERT_GT(heap_state().young_unlisted[1], 0u);
    release(older);  // garbage now, in generation 1
    std::vector<Node *> young = make_nodes(20, false, 100);
    EXPECT_EQ(cgc_collect(0), 0);
    EXPECT_EQ(counters.deallocated, 0);
    EXPECT_EQ(tracked_in(1), 40);
    EXPECT_EQ(cgc_collect(1), 20);
    EXPECT_EQ(counters.deallocated, 20);
    release(young);
}

// A full collection counts references from zero: the unlisted objects'
// index word must be reset first, or their counts would be wrong (a live
// object freed, or garbage kept).
TEST_F(YoungListsTest, AFullCollectionCountsUnlistedObjectsCorrectly) {
    // A chain held from outside through its head only, every node unlisted
    // past the cap, plus garbage cycles of two.
    std::vector<Node *> chain = make_nodes(40, false, 0);
    for (size_t i = 0; i + 1 < chain.size(); ++i) link_next(chain[i], chain[i + 1]);
    release(std::vector<Node *>(chain.begin() + 1, chain.end()));
    for (int i = 0; i < 20; ++i) make_garbage_pair(100 + i, 200 + i);
    EXPECT_EQ(cgc_collect(2), 40);
    EXPECT_EQ(counters.deallocated, 40);
    EXPECT_EQ(heap_state().young_unlisted[0], 0u);
    EXPECT_EQ(tracked_in(2), 40);
    for (Node *node : chain) EXPECT_EQ(generation_of(node), 2);
    cgc_decref(obj(chain[0]));
    EXPECT_EQ(counters.deallocated, 80);
}

// Freezing moves unlisted young objects to the permanent generation too.
TEST_F(YoungListsTest, FreezeAndUnfreezeTakeUnlistedObjects) {
    std::vector<Node *> nodes = make_nodes(30, false);
    cgc_freeze();
    EXPECT_EQ(cgc_get_freeze_count(), 30);
    EXPECT_EQ(tracked_in(0), 0);
    EXPECT_TRUE(objects_of(0).empty());
    for (Node *node : nodes) EXPECT_EQ(generation_of(node), CGC_NUM_GENERATIONS);
    cgc_unfreeze();
    EXPECT_EQ(tracked_in(2), 30);
    release(nodes);
}

// The referrers of an object include unlisted young ones.
TEST_F(YoungListsTest, GetReferrersFindsUnlistedReferrers) {
    Node *target = new_node(0);
    std::vector<Node *> referrers = make_nodes(20, false, 1);
    for (Node *node : referrers) link_next(node, target);
    cgc_object *targets[] = {obj(target)};
    cgc_object_list list{};
    ASSERT_EQ(cgc_get_referrers(targets, 1, &list), 0);
    EXPECT_EQ(list.count, 20);
    cgc_object_list_release(&list);
    release(referrers);
    cgc_decref(obj(target));
}

// When the young objects are fewer than the rest of the heap, a walk over
// the pages would cost more than the array: generation 0 keeps growing.
TEST_F(YoungListsTest, YoungObjectsStayListedWhileTheOldHeapIsLarger) {
    heap_state().unlist_whatever_the_heap = false;
    std::vector<Node *> old = make_nodes(64, false, 0);
    EXPECT_EQ(cgc_collect(2), 0);
    ASSERT_EQ(tracked_in(2), 64);
    std::vector<Node *> young = make_nodes(20, false, 100);
    EXPECT_EQ(heap_state().young_unlisted[0], 0u);
    EXPECT_EQ(heap_state().young[0].size(), 20u);
    release(young);
    release(old);
}

// Automatic collection when it is turned back on: the first young
// collection takes every object tracked meanwhile.
TEST_F(YoungListsTest, AutomaticCollectionAfterABulkLoadTakesTheUnlistedObjects) {
    std::vector<Node *> kept = make_nodes(50, true, 0);
    std::vector<Node *> dropped = make_nodes(50, true, 100);
    release(dropped);
    cgc_set_threshold(0, 10);
    cgc_enable();
    Node *trigger = new_node(1000);  // an allocation over the threshold collects
    EXPECT_EQ(counters.deallocated, 50);
    EXPECT_EQ(tracked_in(0), 1);
    EXPECT_EQ(heap_state().young_unlisted[0], 0u);
    cgc_disable();
    cgc_decref(obj(trigger));
    release(kept);
}

}  // namespace
