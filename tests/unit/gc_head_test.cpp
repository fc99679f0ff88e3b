// The collector header and the intrusive lists (gc_head.hpp): list
// operations, the flag bits they must keep, the gc_refs encoding, and the
// headers the collector leaves behind on real objects.
#include "test_types.hpp"

#include <vector>

using namespace cgc_test;
using gci::GcHead;
using gci::GcList;

namespace {

std::vector<GcHead *> forward(GcList &list) {
    std::vector<GcHead *> members;
    for (GcHead *h = list.first(); h != list.end(); h = gci::next_of(h)) members.push_back(h);
    return members;
}

std::vector<GcHead *> backward(GcList &list) {
    std::vector<GcHead *> members;
    for (GcHead *h = list.last(); h != list.end(); h = gci::prev_of(h)) members.insert(members.begin(), h);
    return members;
}

// Both directions agree and list exactly `expected`, in order.
void expect_list(GcList &list, const std::vector<GcHead *> &expected) {
    EXPECT_EQ(forward(list), expected);
    EXPECT_EQ(backward(list), expected);
    EXPECT_EQ(list.size(), static_cast<cgc_ssize_t>(expected.size()));
    EXPECT_EQ(list.empty(), expected.empty());
    if (!expected.empty()) {
        EXPECT_EQ(list.first(), expected.front());
        EXPECT_EQ(list.last(), expected.back());
        EXPECT_EQ(gci::prev_of(expected.front()), list.end());
        EXPECT_EQ(gci::next_of(expected.back()), list.end());
    }
}

// Headers as malloc returns them: 16-byte aligned, zeroed (untracked).
struct Heads {
    alignas(16) GcHead h[6]{};
    GcHead *operator[](int i) { return &h[i]; }
};

TEST(GcListTest, NewListIsEmpty) {
    GcList list;
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.size(), 0);
    EXPECT_EQ(list.first(), list.end());
    EXPECT_EQ(list.last(), list.end());
}

TEST(GcListTest, AppendKeepsOrderAndLinksBothWays) {
    Heads heads;
    GcList list;
    list.append(heads[0]);
    expect_list(list, {heads[0]});
    list.append(heads[1]);
    list.append(heads[2]);
    expect_list(list, {heads[0], heads[1], heads[2]});
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(gci::is_tracked(heads[i]));
    EXPECT_FALSE(gci::is_tracked(heads[3]));
}

TEST(GcListTest, UnlinkFromAnyPosition) {
    Heads heads;
    GcList list;
    for (int i = 0; i < 5; ++i) list.append(heads[i]);
    gci::unlink(heads[2]);  // middle
    expect_list(list, {heads[0], heads[1], heads[3], heads[4]});
    gci::unlink(heads[0]);  // first
    expect_list(list, {heads[1], heads[3], heads[4]});
    gci::unlink(heads[4]);  // last
    expect_list(list, {heads[1], heads[3]});
    gci::unlink(heads[1]);
    gci::unlink(heads[3]);
    expect_list(list, {});
    list.append(heads[2]);  // usable again
    expect_list(list, {heads[2]});
}

TEST(GcListTest, SpliceMovesEveryMemberToTheEnd) {
    Heads heads;
    GcList to, from;
    to.append(heads[0]);
    to.append(heads[1]);
    from.append(heads[2]);
    from.append(heads[3]);
    from.append(heads[4]);
    to.splice(from);
    expect_list(to, {heads[0], heads[1], heads[2], heads[3], heads[4]});
    expect_list(from, {});
    from.append(heads[5]);  // the emptied list is usable
    expect_list(from, {heads[5]});
}

TEST(GcListTest, SpliceFromEmptyAndIntoEmpty) {
    Heads heads;
    GcList a, b;
    a.append(heads[0]);
    a.splice(b);  // from empty: nothing changes
    expect_list(a, {heads[0]});
    expect_list(b, {});
    b.splice(a);  // into empty
    expect_list(b, {heads[0]});
    expect_list(a, {});
    GcList c, d;
    c.splice(d);
    expect_list(c, {});
}

TEST(GcListTest, FlagsSurviveAppendSpliceAndUnlink) {
    Heads heads;
    GcList list, other;
    gci::set_finalized(heads[0]);
    gci::set_has_weakrefs(heads[1], true);
    heads[2]->link[1] = gci::kCollecting;
    gci::set_finalized(heads[3]);
    gci::set_has_weakrefs(heads[3], true);
    for (int i = 0; i < 4; ++i) list.append(heads[i]);
    auto expect_flags = [&] {
        EXPECT_TRUE(gci::is_finalized(heads[0]));
        EXPECT_FALSE(gci::has_weakrefs(heads[0]));
        EXPECT_FALSE(gci::is_collecting(heads[0]));
        EXPECT_TRUE(gci::has_weakrefs(heads[1]));
        EXPECT_FALSE(gci::is_finalized(heads[1]));
        EXPECT_TRUE(gci::is_collecting(heads[2]));
        EXPECT_FALSE(gci::is_finalized(heads[2]));
        EXPECT_TRUE(gci::is_finalized(heads[3]));
        EXPECT_TRUE(gci::has_weakrefs(heads[3]));
    };
    expect_flags();
    expect_list(list, {heads[0], heads[1], heads[2], heads[3]});

    other.append(heads[4]);
    other.splice(list);  // heads[0] gets a new "prev": its flags stay
    expect_flags();
    expect_list(other, {heads[4], heads[0], heads[1], heads[2], heads[3]});

    gci::unlink(heads[1]);  // the neighbours get new links: their flags stay
    expect_flags();
    expect_list(other, {heads[4], heads[0], heads[2], heads[3]});
    gci::unlink(heads[4]);
    gci::unlink(heads[3]);
    expect_flags();
    expect_list(other, {heads[0], heads[2]});

    gci::clear_collecting(heads[2]);
    EXPECT_FALSE(gci::is_collecting(heads[2]));
    gci::set_has_weakrefs(heads[1], false);
    EXPECT_FALSE(gci::has_weakrefs(heads[1]));
    expect_list(other, {heads[0], heads[2]});
}

TEST(GcListTest, SetPrevKeepsFlags) {
    Heads heads;
    gci::set_finalized(heads[0]);
    heads[0]->link[1] |= gci::kCollecting;
    gci::set_prev(heads[0], heads[1]);
    EXPECT_EQ(gci::prev_of(heads[0]), heads[1]);
    EXPECT_TRUE(gci::is_finalized(heads[0]));
    EXPECT_TRUE(gci::is_collecting(heads[0]));
}

TEST(GcHeadTest, RefsEncodingKeepsLifetimeFlags) {
    Heads heads;
    GcHead *h = heads[0];
    gci::set_refs(h, 5);
    EXPECT_EQ(gci::refs_of(h), 5);
    EXPECT_TRUE(gci::is_collecting(h));
    EXPECT_FALSE(gci::is_finalized(h));
    EXPECT_FALSE(gci::has_weakrefs(h));

    gci::set_finalized(h);
    gci::set_has_weakrefs(h, true);
    for (cgc_ssize_t refs : {cgc_ssize_t(0), cgc_ssize_t(1), cgc_ssize_t(7), cgc_ssize_t(8),
                             cgc_ssize_t(1) << 40, (cgc_ssize_t(1) << 40) + 1}) {
        gci::set_refs(h, refs);
        EXPECT_EQ(gci::refs_of(h), refs);
        EXPECT_TRUE(gci::is_collecting(h));
        EXPECT_TRUE(gci::is_finalized(h));
        EXPECT_TRUE(gci::has_weakrefs(h));
    }
    // Decrementing as the collector does keeps the flags.
    gci::set_refs(h, 3);
    gci::set_refs(h, gci::refs_of(h) - 1);
    EXPECT_EQ(gci::refs_of(h), 2);
    EXPECT_TRUE(gci::is_finalized(h));
}

TEST(GcHeadTest, UnreachableTagIsStrippedFromNext) {
    Heads heads;
    gci::set_next(heads[0], heads[1]);
    EXPECT_FALSE(gci::is_tagged_unreachable(heads[0]));
    heads[0]->link[0] |= gci::kUnreachableTag;
    EXPECT_TRUE(gci::is_tagged_unreachable(heads[0]));
    EXPECT_EQ(gci::next_of(heads[0]), heads[1]);
    EXPECT_TRUE(gci::is_tracked(heads[0]));
}

TEST(GcHeadTest, HeaderSitsRightBeforeTheObject) {
    static_assert(sizeof(cgc_gc_head) == 16);
    EXPECT_EQ(CGC_GC_HEAD_SIZE, 16);
    Heads heads;
    cgc_object *op = gci::object_of(heads[0]);
    EXPECT_EQ(reinterpret_cast<char *>(op), reinterpret_cast<char *>(heads[0]) + 16);
    EXPECT_EQ(gci::head_of(op), heads[0]);
}

// ---- Headers of real objects --------------------------------------------------

class GcHeadObjectTest : public HeapFixture {};

TEST_F(GcHeadObjectTest, TrackAndUntrackSetTheLinks) {
    Node *node = new_node(&node_type, 1, /*track=*/false);
    GcHead *h = gci::head_of(node);
    EXPECT_EQ(h->link[0], 0u);
    EXPECT_EQ(h->link[1], 0u);
    cgc_gc_track(node);
    EXPECT_TRUE(gci::is_tracked(h));
    EXPECT_EQ(heap_state().generations[0].objects.last(), h);
    EXPECT_FALSE(gci::is_collecting(h));
    cgc_gc_untrack(node);
    EXPECT_EQ(h->link[0], 0u);
    EXPECT_EQ(h->link[1] & gci::kCollecting, 0u);
    expect_list(heap_state().generations[0].objects, {});
    cgc_gc_untrack(node);  // idempotent
    EXPECT_FALSE(cgc_gc_is_tracked(obj(node)));
    cgc_decref(obj(node));
}

TEST_F(GcHeadObjectTest, FinalizedFlagSurvivesPromotionAndRetracking) {
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        saved = obj(node);
        cgc_incref(saved);
    };
    Node *a = make_garbage_self_cycle(&final_node_type, 1);
    cgc_collect(0);
    ASSERT_EQ(saved, obj(a));
    GcHead *h = gci::head_of(a);
    EXPECT_TRUE(gci::is_finalized(h));
    cgc_collect(1);  // promoted: gen 1 -> gen 2
    EXPECT_EQ(generation_of(a), 2);
    EXPECT_TRUE(gci::is_finalized(h));
    cgc_gc_untrack(a);
    EXPECT_TRUE(gci::is_finalized(h));
    cgc_gc_track(a);
    EXPECT_TRUE(gci::is_finalized(h));
    EXPECT_EQ(generation_of(a), 0);
    cgc_decref(saved);
    EXPECT_EQ(cgc_collect(2), 1);
    EXPECT_EQ(counters.finalized, 1);  // the flag did its job
    EXPECT_EQ(counters.deallocated, 1);
}

TEST_F(GcHeadObjectTest, CollectionsLeaveConsistentListsWithoutCollectingFlags) {
    // A mix: live objects, garbage, a resurrected object, and an object that
    // survives its clear (no tp_clear).
    cgc_object *saved = nullptr;
    on_finalize = [&](Node *node) {
        if (node->id == 3) {
            saved = obj(node);
            cgc_incref(saved);
        }
    };
    std::vector<Node *> live;
    for (int i = 0; i < 10; ++i) live.push_back(new_node(100 + i));
    for (int i = 0; i < 9; ++i) link_next(live[i], live[i + 1]);
    for (int i = 0; i < 5; ++i) make_garbage_self_cycle(&node_type, 200 + i);
    make_garbage_self_cycle(&final_node_type, 3);
    Node *stubborn = make_garbage_self_cycle(&noclear_node_type, 4);

    for (int generation : {0, 1, 2}) {
        cgc_collect(generation);
        for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) {
            GcList &list = heap_state().generations[g].objects;
            std::vector<GcHead *> members = forward(list);
            EXPECT_EQ(backward(list), members) << "generation " << g;
            for (GcHead *h : members) {
                EXPECT_FALSE(gci::is_collecting(h)) << "generation " << g;
                EXPECT_FALSE(gci::is_tagged_unreachable(h)) << "generation " << g;
            }
        }
    }
    ASSERT_NE(saved, nullptr);
    EXPECT_TRUE(gci::is_finalized(gci::head_of(saved)));
    EXPECT_EQ(counters.deallocated, 5);
    EXPECT_EQ(tracked_total(), 10 + 2);

    for (Node *node : live) cgc_decref(obj(node));
    link_next(stubborn, nullptr);
    cgc_decref(saved);
}

}  // namespace
