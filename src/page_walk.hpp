// The page walk: every tracked object of a heap's pages, page by page in
// address order, as full collections, gc_module and the diagnostics see
// them; and the tracked-slot masks a collection's first walk records for
// its later ones.
#pragma once

#include "pages.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cyclegc::internal {

// What a walk does with the tracked-slot masks of the pages whose slots
// it gathers (see RecordedMasks): nothing; record them; or read the recorded
// ones instead of the pages' GcMeta, which is only right while no
// object is tracked or untracked (a collection's analysis).
enum class Masks { none, record, replay };

// Masks recorded by a walk (Masks::record) for the later walks of the
// same analysis (Masks::replay): the first walk of a full collection
// reads every gathered page's GcMeta, the other two read a bit per
// slot instead of 8 bytes. A page's entry is read only if that page is
// still at its index: a page that empties during a walk (of untracked
// objects only) is freed when the walk ends, and the last page takes
// its index. A heap keeps one (Heap::recorded_masks).
class RecordedMasks {
  public:
    static constexpr uint32_t kMaxWords = kPageSize / kGranule / 64;

    void start() {
        entries_.clear();
        words_.clear();
        failed_ = false;
    }
    // Room for the masks of n slots of `page`, at index p of its heap's
    // pages, among the recorded ones, or null (out of memory: that page is
    // not recorded, and will be read from its GcMeta).
    uint64_t *record(Page *page, size_t p, uint32_t n);
    // The masks recorded for `page` at index p, and how many slots they
    // cover (slots handed out since hold untracked objects), or null.
    uint64_t *recorded(const Page *page, size_t p, uint32_t &slots) {
        if (p >= entries_.size() || entries_[p].page != page) return nullptr;
        slots = entries_[p].slots;
        return &words_[entries_[p].first_word];
    }
    // Gives back the memory of the masks if they took more than
    // `kept_words` words; they are kept for the next collection otherwise.
    void release_if_larger(size_t kept_words) {
        if (words_.capacity() <= kept_words) return;
        std::vector<Entry>().swap(entries_);
        std::vector<uint64_t>().swap(words_);
    }

  private:
    struct Entry {
        Page *page;  // null: not recorded
        uint32_t slots;
        uint32_t first_word;  // in words_
    };
    std::vector<Entry> entries_;  // by page index
    std::vector<uint64_t> words_;
    bool failed_ = false;
};

// The tracked slots among meta[0, n) as masks: bit i % 64 of
// words[i / 64] for slot i.
inline void tracked_masks(const GcMeta *meta, uint32_t n, uint64_t *words) {
    uint32_t i = 0;
#if defined(__SSE2__)
    // Two GcMeta per 16-byte load: shifting each 64-bit lane left by 30
    // brings its kTracked flag (bit 33) to the lane's sign bit, which
    // movemask collects. On pages that mix tracked and untracked
    // objects, as an aged heap's do, this is faster than a test per slot
    // (docs/design.md, "SSE2 slot scan").
    static_assert(kTracked == 2 && offsetof(GcMeta, flags) == 4, "the shift below");
    for (; i + 64 <= n; i += 64) {
        uint64_t mask = 0;
        for (uint32_t j = 0; j < 64; j += 2) {
            __m128i pair = _mm_loadu_si128(reinterpret_cast<const __m128i *>(meta + i + j));
            mask |= uint64_t(_mm_movemask_pd(_mm_castsi128_pd(_mm_slli_epi64(pair, 30)))) << j;
        }
        words[i / 64] = mask;
    }
#endif
    for (; i < n; i += 64) {
        uint64_t mask = 0;
        for (uint32_t j = 0; j < 64 && i + j < n; ++j)
            mask |= uint64_t((meta[i + j].flags & kTracked) != 0) << j;  // (a free slot's flags are 0)
        words[i / 64] = mask;
    }
}

// Writes the indices of the slots set in masks of n slots to `tracked`,
// in order, and returns how many.
inline uint32_t indices_of(const uint64_t *words, uint32_t n, uint16_t *tracked) {
    uint32_t count = 0;
    for (uint32_t w = 0; w * 64 < n; ++w)
        for (uint64_t mask = words[w]; mask; mask &= mask - 1)
            tracked[count++] = static_cast<uint16_t>(w * 64 + std::countr_zero(mask));
    return count;
}

// Calls f(object, meta) for every tracked object of `space`, in address
// order of each page. f may run user code (a tp_traverse) that allocates
// and frees untracked objects: pages made meanwhile are walked too (their
// objects are untracked), and pages that empty meanwhile stay in place
// until the walk ends (a page freed mid-walk would move another into its
// place in pages(), which the walk would then skip). Masks::record and
// Masks::replay take the heap's `recorded` masks.
template <typename F>
void for_each_tracked(PageSpace &space, F f, Masks masks = Masks::none, RecordedMasks *recorded = nullptr) {
    PageSpace::WalkGuard guard(space);
    if (masks == Masks::record) recorded->start();
    const std::vector<Page *> &pages = space.pages();
    uint16_t tracked[kPageSize / kGranule];
    for (size_t p = 0; p < pages.size(); ++p) {
        Page *page = pages[p];
        const GcMeta *meta = page->meta;
        uint32_t n = page->bump, used = page->used;
        if (used == n && page->walk_all_tracked) {
            // Every slot held a tracked object at the last walk: the
            // test is predictable while that lasts.
            bool mixed = false;
            for (uint32_t i = 0; i < n; ++i) {
                if (meta[i].flags & kTracked)
                    f(page->object_at(i), page->meta[i]);
                else
                    mixed = true;
            }
            page->walk_all_tracked = !mixed;
            continue;
        }
        if (used == 0) continue;  // (an empty page kept for reuse)
        if (used < n / 16 && masks == Masks::none) {
            // Nearly empty (a page kept after its objects died): few
            // branches mispredict, and the scan stops at the last object.
            // (A collection's walks take the masks below instead: its
            // later walks then read a bit per slot, not the GcMeta.)
            for (uint32_t i = 0, left = used; left != 0 && i < n; ++i) {
                uint8_t flags = meta[i].flags;
                if (!(flags & kAllocated)) continue;
                --left;
                if (flags & kTracked) f(page->object_at(i), page->meta[i]);
            }
            continue;
        }
        // Free or untracked slots among the tracked objects: the tracked
        // slots' indices are gathered first, without a branch. On a page
        // that a collection left sparse, or that mixes tracked and
        // untracked objects (an aged heap), a test per slot mispredicts
        // about once per object (docs/design.md, "branch-free slot
        // gathering").
        uint64_t scratch[RecordedMasks::kMaxWords];
        uint64_t *words = scratch;
        uint32_t slots = n;
        uint64_t *replayed = masks == Masks::replay ? recorded->recorded(page, p, slots) : nullptr;
        if (replayed) {
            words = replayed;
        } else {
            if (masks == Masks::record)
                if (uint64_t *record = recorded->record(page, p, n)) words = record;
            tracked_masks(meta, n, words);
        }
        uint32_t count = indices_of(words, slots, tracked);
        page->walk_all_tracked = count == n;
        for (uint32_t k = 0; k < count; ++k) f(page->object_at(tracked[k]), page->meta[tracked[k]]);
    }
}

}  // namespace cyclegc::internal
