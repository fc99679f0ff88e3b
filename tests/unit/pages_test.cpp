// Size-class pages and the side metadata.
#include "arena.hpp"
#include "heap.hpp"
#include "pages.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>

#include <set>
#include <vector>

namespace cyclegc::internal {
namespace {

TEST(PagesTest, SlotIndexByReciprocalIsExact) {
    // index_of() replaces a division by a multiplication; check it against
    // the division for every slot size and every offset inside a page.
    for (uint32_t size = 16; size <= 8192; size += 16) {
        uint32_t reciprocal = static_cast<uint32_t>((uint64_t(1) << 32) / size + 1);
        for (uint64_t offset = 0; offset < kPageSize; offset += 7) {
            ASSERT_EQ((offset * reciprocal) >> 32, offset / size) << "size " << size << " offset " << offset;
        }
    }
}

TEST(PagesTest, AllocationsAreZeroedAlignedAndDistinct) {
    Heap heap;
    std::set<void *> seen;
    std::vector<void *> slots;
    for (size_t size : {1, 16, 17, 100, 512, 513, 4000, 8192, 8193, 100000}) {
        for (int i = 0; i < 100; ++i) {
            auto *p = static_cast<unsigned char *>(heap.space.allocate(heap, size));
            ASSERT_NE(p, nullptr);
            EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kGranule, 0u);
            EXPECT_TRUE(seen.insert(p).second);
            for (size_t b = 0; b < size; ++b) ASSERT_EQ(p[b], 0) << "size " << size;
            EXPECT_GE(PageSpace::capacity(p), size);
            EXPECT_EQ(page_of(p)->heap, &heap);
            EXPECT_EQ(meta_of(p).flags, kAllocated);
            std::fill(p, p + size, 0xAB);  // dirty it: reused slots must come back zeroed
            slots.push_back(p);
        }
    }
    EXPECT_EQ(heap.space.live_objects(), slots.size());
    for (void *p : slots) heap.space.release(p);
    EXPECT_EQ(heap.space.live_objects(), 0u);
    auto *again = static_cast<unsigned char *>(heap.space.allocate(heap, 100));
    for (int b = 0; b < 100; ++b) ASSERT_EQ(again[b], 0);
    heap.space.release(again);
}

// An emptied page is kept by the arena for reuse (memory and all, so it
// still holds its old bytes): handed out again, for another size class, it
// must read as zero, header, metadata and slots.
TEST(PagesTest, KeptPagesComeBackZeroed) {
    cgc_release_free_memory();
    std::set<void *> emptied;
    {
        Heap heap;
        std::vector<unsigned char *> slots;
        for (int i = 0; i < 20000; ++i) {
            auto *p = static_cast<unsigned char *>(heap.space.allocate(heap, 64));
            std::fill(p, p + 64, 0xCD);
            slots.push_back(p);
        }
        for (unsigned char *p : slots) emptied.insert(page_of(p));
        for (unsigned char *p : slots) heap.space.release(p);
    }
    Heap heap;
    std::vector<unsigned char *> slots;
    size_t reused = 0;
    for (int i = 0; i < 20000; ++i) {
        auto *p = static_cast<unsigned char *>(heap.space.allocate(heap, 96));
        ASSERT_NE(p, nullptr);
        for (int b = 0; b < 96; ++b) ASSERT_EQ(p[b], 0) << "object " << i << " byte " << b;
        reused += emptied.count(page_of(p));
        slots.push_back(p);
    }
    EXPECT_GT(reused, 0u) << "no kept page was reused: the test proves nothing";
    // The GcMetas of slots not handed out yet read as never used.
    Page *last = page_of(slots.back());
    for (uint32_t i = last->bump; i < last->slot_count; ++i) ASSERT_EQ(meta_bits(last->meta[i]), 0u) << "slot " << i;
    for (unsigned char *p : slots) heap.space.release(p);
}

// In every mode (`unit.no_arena` too, where the memory of freed pages once
// stayed with malloc and this returned 0).
TEST(PagesTest, KeptPagesAreGivenBackOnRequest) {
    cgc_release_free_memory();
    {
        Heap heap;
        std::vector<void *> slots;
        for (int i = 0; i < 20000; ++i) slots.push_back(heap.space.allocate(heap, 64));
        for (void *p : slots) heap.space.release(p);
    }
    size_t released = cgc_release_free_memory();
    EXPECT_GE(released, 10 * kPageSize);  // 20,000 x 64 bytes: about 20 pages emptied
    EXPECT_LE(released, size_t(32) << 20);  // the bound on what is kept
    EXPECT_EQ(released % kPageSize, 0u);
    EXPECT_EQ(cgc_release_free_memory(), 0u);
}

TEST(PagesTest, EmptyPagesAreReturned) {
    Heap heap;
    std::vector<void *> slots;
    for (int i = 0; i < 100000; ++i) slots.push_back(heap.space.allocate(heap, 48));
    size_t full = heap.space.page_bytes();
    EXPECT_GE(full, 100000u * 48);
    for (void *p : slots) heap.space.release(p);
    // At most one empty page per size class is kept.
    EXPECT_LE(heap.space.page_bytes(), kPageSize);
}

// Under a pause budget the pages that empty while a walk runs are freed a
// few per release step, not all when it ends; all of them in the end, even
// when other pages are freed and allocated between the steps (free_page
// moves the last page into the freed one's place).
TEST(PagesTest, PagesEmptiedDuringAWalkAreReleasedAFewPerStep) {
    Heap heap;
    heap.space.bound_release(true);
    std::vector<void *> slots, others;
    for (int i = 0; i < 100000; ++i) slots.push_back(heap.space.allocate(heap, 48));
    for (int i = 0; i < 20000; ++i) others.push_back(heap.space.allocate(heap, 160));
    size_t full = heap.space.page_bytes();
    heap.space.pin();
    for (void *p : slots) heap.space.release(p);
    heap.space.unpin();
    EXPECT_EQ(heap.space.page_bytes(), full) << "nothing freed at the walk's end";
    EXPECT_TRUE(heap.space.release_waiting());
    size_t steps = 0;
    for (; heap.space.release_waiting() && steps < 100000; ++steps) {
        heap.space.release_emptied_step();
        if (!others.empty()) {  // (pages of another class emptied and freed between steps)
            for (int i = 0; i < 500 && !others.empty(); ++i) {
                heap.space.release(others.back());
                others.pop_back();
            }
        }
    }
    EXPECT_FALSE(heap.space.release_waiting());
    EXPECT_LE(heap.space.most_released_at_once(), PageSpace::kReleasesPerStep);
    EXPECT_GE(steps, 100000 * 48 / kPageSize / PageSpace::kReleasesPerStep);  // (the 48-byte pages)
    for (void *p : others) heap.space.release(p);
    EXPECT_LE(heap.space.page_bytes(), 2 * kPageSize) << "an emptied page was never released";
}

// Stop-the-world (no budget): all at the walk's end, in one release.
TEST(PagesTest, PagesEmptiedDuringAWalkAreReleasedAtItsEndWithoutABudget) {
    Heap heap;
    std::vector<void *> slots;
    for (int i = 0; i < 100000; ++i) slots.push_back(heap.space.allocate(heap, 48));
    heap.space.pin();
    for (void *p : slots) heap.space.release(p);
    heap.space.unpin();
    EXPECT_FALSE(heap.space.release_waiting());
    EXPECT_LE(heap.space.page_bytes(), kPageSize);
    EXPECT_GT(heap.space.most_released_at_once(), PageSpace::kReleasesPerStep);
}

TEST(PagesTest, MetaIsFoundFromAnInteriorObjectStart) {
    // A C++ object's C part may start a few bytes into its slot.
    Heap heap;
    char *slot = static_cast<char *>(heap.space.allocate(heap, 64));
    GcMeta &meta = meta_of(slot);
    EXPECT_EQ(&meta_of(slot + 8), &meta);
    EXPECT_EQ(&meta_of(slot + 63), &meta);
    heap.space.release(slot);
}

// Under an address-space limit (ulimit -v) the arena starts with at most a
// quarter of it, leaving the rest to the program, and reserves more as it
// fills. `unit.ulimit` runs this with a 2 GB limit (where the arena once
// reserved nothing, its smallest reservation, 1 GiB, being too much).
TEST(PagesTest, ArenaUnderAnAddressSpaceLimitStartsWithAQuarterAndGrows) {
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
        GTEST_SKIP() << "no address-space limit (unit.ulimit sets one)";
    if (std::getenv("CYCLEGC_ARENA_BYTES")) GTEST_SKIP() << "CYCLEGC_ARENA_BYTES sets the size";
    const Arena &arena = Arena::instance();
    EXPECT_LE(arena.size(), limit.rlim_cur / 4);
    if (!std::getenv("CYCLEGC_NO_ARENA")) {
        EXPECT_GE(arena.size(), limit.rlim_cur / 8) << "as large as allowed";
    }
    // Regions of 64 MiB (only their headers touched) until one lies beyond
    // the first reservation.
    Heap heap;
    std::vector<void *> regions;
    bool beyond = false;
    while (!beyond && regions.size() < 64) {
        void *p = heap.space.allocate(heap, size_t(64) << 20);
        ASSERT_NE(p, nullptr) << regions.size() << " regions of 64 MiB";
        regions.push_back(p);
        EXPECT_TRUE(arena.contains(p));
        beyond = !arena.in_first_reservation(p);
    }
    EXPECT_TRUE(beyond);
    EXPECT_FALSE(arena.holds_every_page());
    for (void *p : regions) heap.space.release(p);
}

TEST(PagesTest, ArenaContainsItsPagesOnly) {
    Heap heap;
    void *p = heap.space.allocate(heap, 32);
    void *large = heap.space.allocate(heap, 200000);
    EXPECT_TRUE(Arena::instance().contains(p));
    EXPECT_TRUE(Arena::instance().contains(large));
    int local = 0;
    EXPECT_FALSE(Arena::instance().contains(&local));
    void *malloced = std::malloc(16);
    EXPECT_FALSE(Arena::instance().contains(malloced));
    EXPECT_FALSE(Arena::instance().contains(nullptr));
    EXPECT_FALSE(Arena::instance().contains(reinterpret_cast<void *>(uintptr_t(1))));
    std::free(malloced);
    heap.space.release(p);
    heap.space.release(large);
}

// take_slot leaves a page that fills up in its class list (no call on the
// fast path); the next allocation finds it full and moves on. Filling pages
// exactly, freeing from a full page and refilling must keep every slot
// distinct and accounted for.
TEST(PagesTest, PagesThatFillUpAreLeftForTheNextAllocation) {
    Heap heap;
    constexpr size_t kSize = 48;
    Page *first = page_of(heap.space.allocate(heap, kSize));
    heap.space.release(first->slot(0));
    uint32_t per_page = first->slot_count;
    std::set<void *> seen;
    std::vector<void *> slots;
    for (uint32_t i = 0; i < 2 * per_page + 1; ++i) {
        void *p = heap.space.allocate(heap, kSize);
        ASSERT_NE(p, nullptr);
        ASSERT_TRUE(seen.insert(p).second) << "slot handed out twice";
        slots.push_back(p);
    }
    EXPECT_EQ(heap.space.live_objects(), slots.size());
    EXPECT_EQ(page_of(slots[per_page - 1])->used, per_page);  // full, and no slot of it reused
    EXPECT_NE(page_of(slots[per_page]), page_of(slots[per_page - 1]));
    // Free one slot of the full first page: it is handed out again before
    // any new page is made.
    size_t pages = heap.space.pages().size();
    heap.space.release(slots[3]);
    void *again = heap.space.allocate(heap, kSize);
    EXPECT_EQ(again, slots[3]);  // its page, linked again, is the first with room
    EXPECT_EQ(heap.space.pages().size(), pages);
    slots[3] = again;
    for (void *p : slots) heap.space.release(p);
    EXPECT_EQ(heap.space.live_objects(), 0u);
}

// for_each_tracked stops a page's scan after its last object (counted by
// `used`): objects before and after holes, and the last slot of a full page,
// are still all seen, untracked ones skipped.
TEST(PagesTest, WalkingTrackedObjectsSeesEveryOneUpToTheLast) {
    Heap heap;
    constexpr size_t kSize = 64;
    std::vector<void *> slots;
    void *first = heap.space.allocate(heap, kSize);
    slots.push_back(first);
    uint32_t per_page = page_of(first)->slot_count;
    for (uint32_t i = 1; i < per_page; ++i) slots.push_back(heap.space.allocate(heap, kSize));
    ASSERT_EQ(page_of(slots.back()), page_of(first));
    std::set<void *> tracked;
    for (uint32_t i = 0; i < per_page; ++i) {
        if (i % 7 == 3) {
            heap.space.release(slots[i]);  // holes
        } else if (i % 5 != 1) {
            meta_of(slots[i]).flags |= kTracked;
            tracked.insert(slots[i]);
        }  // else allocated, untracked
    }
    ASSERT_TRUE(tracked.count(slots[per_page - 1]));
    std::set<void *> seen;
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &) { EXPECT_TRUE(seen.insert(op).second); });
    EXPECT_EQ(seen, tracked);
    for (uint32_t i = 0; i < per_page; ++i) {
        if (i % 7 == 3) continue;
        meta_of(slots[i]).flags &= static_cast<uint8_t>(~kTracked);
        heap.space.release(slots[i]);
    }
    EXPECT_EQ(heap.space.live_objects(), 0u);
}

// A full page's walk takes the plain loop while its last walk found every
// slot tracked (Page::walk_all_tracked), and the gathering loop once a walk
// found an untracked object among them (an aged heap mixes them). Either
// way a walk sees exactly the tracked objects, and the hint follows the
// page's state one walk behind.
TEST(PagesTest, WalkHintFollowsAFullPageThatMixesTrackedAndUntrackedObjects) {
    Heap heap;
    constexpr size_t kSize = 48;
    std::vector<void *> slots{heap.space.allocate(heap, kSize)};
    Page *page = page_of(slots[0]);
    for (uint32_t i = 1; i < page->slot_count; ++i) slots.push_back(heap.space.allocate(heap, kSize));
    ASSERT_EQ(page_of(slots.back()), page);
    ASSERT_EQ(page->used, page->slot_count);
    std::set<void *> tracked;
    auto set_tracked = [&](void *p, bool on) {
        GcMeta &meta = meta_of(p);
        meta.flags = static_cast<uint8_t>(on ? meta.flags | kTracked : meta.flags & ~kTracked);
        if (on) tracked.insert(p); else tracked.erase(p);
    };
    auto walk_sees_the_tracked = [&] {
        std::set<void *> seen;
        for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &) { EXPECT_TRUE(seen.insert(op).second); });
        EXPECT_EQ(seen, tracked);
    };
    for (void *p : slots) set_tracked(p, true);
    EXPECT_TRUE(page->walk_all_tracked);  // a new page
    walk_sees_the_tracked();
    EXPECT_TRUE(page->walk_all_tracked);
    for (size_t i = 0; i < slots.size(); i += 3) set_tracked(slots[i], false);
    walk_sees_the_tracked();  // the plain loop, on a page that now mixes
    EXPECT_FALSE(page->walk_all_tracked);
    walk_sees_the_tracked();  // the gathering loop
    EXPECT_FALSE(page->walk_all_tracked);
    for (void *p : slots) set_tracked(p, true);
    walk_sees_the_tracked();  // the gathering loop finds them all tracked
    EXPECT_TRUE(page->walk_all_tracked);
    walk_sees_the_tracked();
    for (void *p : slots) {
        set_tracked(p, false);
        heap.space.release(p);
    }
    EXPECT_EQ(heap.space.live_objects(), 0u);
}

}  // namespace
}  // namespace cyclegc::internal
