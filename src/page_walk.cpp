// The recorded masks of the page walk (see page_walk.hpp).
#include "page_walk.hpp"

#include "heap.hpp"

#include <algorithm>
#include <new>

namespace cyclegc::internal {

uint64_t *RecordedMasks::record(Page *page, size_t p, uint32_t n) {
    size_t words = (n + 63) / 64;
    if (!failed_) {
        try {
            Heap &heap = *page->heap;
            // (Both grow by doubling: one page's few words at a time, an
            // exact reserve would copy the whole record each time.)
            if (entries_.capacity() <= p) note_internal_allocation(heap);
            entries_.resize(std::max(entries_.size(), p + 1), Entry{nullptr, 0, 0});
            if (words_.capacity() - words_.size() < words) note_internal_allocation(heap);
            auto first_word = static_cast<uint32_t>(words_.size());
            words_.resize(words_.size() + words);
            entries_[p] = {page, n, first_word};
            return &words_[first_word];
        } catch (const std::bad_alloc &) {
            // That page and the later ones are read from their GcMeta.
            failed_ = true;
        }
    }
    return nullptr;
}

}  // namespace cyclegc::internal
