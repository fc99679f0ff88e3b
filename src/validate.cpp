// Whole-heap validation, the most expensive tier of internal checks
// (CYCLEGC_DEBUG >= 2, the debug preset): run after every collection, it
// checks every page's slot accounting and free list, and that every tracked
// object is in exactly one generation, with the young arrays and the
// objects' indices pointing at each other. A failure names the object and
// its type, and aborts.
#include "heap.hpp"

#include <cstdarg>
#include <cstdio>

namespace cyclegc::internal {
namespace {

[[noreturn]] void broken(const char *when, const char *format, ...) __attribute__((format(printf, 2, 3)));
void broken(const char *when, const char *format, ...) {
    char what[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(what, sizeof what, format, args);
    va_end(args);
    char message[640];
    std::snprintf(message, sizeof message, "heap validation (%s): %s", when, what);
    invariant_failed(message, __FILE__, __LINE__);
}

// A page's slots: `used` counts the allocated ones below `bump`, and the
// free list holds exactly the others, each once.
void validate_page(const Heap &heap, const Page *page, size_t position, const char *when) {
    if (page->heap != &heap) broken(when, "page %p is listed in a heap it does not name", (const void *)page);
    if (page->index_in_heap != position)
        broken(when, "page %p is at %zu in the heap's pages but records %u", (const void *)page, position,
               page->index_in_heap);
    if (page->bump > page->slot_count || page->used > page->bump)
        broken(when, "page %p: used %u, bump %u, slots %u", (const void *)page, page->used, page->bump,
               page->slot_count);
    uint32_t allocated = 0;
    for (uint32_t i = 0; i < page->bump; ++i) allocated += (page->meta[i].flags & kAllocated) != 0;
    if (allocated != page->used)
        broken(when, "page %p counts %u objects but holds %u", (const void *)page, page->used, allocated);
    uint32_t free_slots = 0;
    for (uint32_t link = page->free_head; link; link = page->meta[link - 1].word) {
        uint32_t index = link - 1;
        if (index >= page->bump || (page->meta[index].flags & kAllocated) || ++free_slots > page->bump - allocated)
            broken(when, "page %p: its free list is broken at slot %u", (const void *)page, index);
    }
    if (free_slots != page->bump - allocated)
        broken(when, "page %p: %u slots free but %u on its free list", (const void *)page,
               page->bump - allocated, free_slots);
}

// A tracked object between collections: in one generation, in no
// collection's set, and (young, listed) at its index in its array.
void validate_tracked(Heap &heap, const cgc_object *op, const GcMeta &meta, size_t listed[2],
                      size_t unlisted[2], const char *when) {
    if (meta.flags & (kCollecting | kReachable | kUncollectable))
        broken(when, "object %p of type '%s' is tracked with a collection's flags (%#x) between collections",
               (const void *)op, type_name_of(op), meta.flags);
    if (meta.generation > kPermanent)
        broken(when, "object %p of type '%s' is in generation %u", (const void *)op, type_name_of(op),
               meta.generation);
    if (meta.generation >= 2) return;
    int g = meta.generation;
    if (meta.word == kUnlisted) {
        ++unlisted[g];
        return;
    }
    ++listed[g];
    if (meta.word >= heap.young[g].size() || heap.young[g][meta.word] != op)
        broken(when, "object %p of type '%s' records index %u in generation %d's array, which does not "
               "hold it there", (const void *)op, type_name_of(op), meta.word, g);
}

}  // namespace

void validate_heap(Heap &heap, const char *when) {
    if (heap.phase != Phase::idle) broken(when, "validated while a collection runs (phase %d)", (int)heap.phase);
    const auto &pages = heap.space.pages();
    for (size_t p = 0; p < pages.size(); ++p) validate_page(heap, pages[p], p, when);
    size_t listed[2] = {0, 0}, unlisted[2] = {0, 0};
    for_each_tracked(heap.space, [&](cgc_object *op, GcMeta &meta) {
        validate_tracked(heap, op, meta, listed, unlisted, when);
    });
    for (int g = 0; g < 2; ++g) {
        if (listed[g] != heap.young[g].size())
            broken(when, "generation %d's array holds %zu entries but %zu objects point into it", g,
                   heap.young[g].size(), listed[g]);
        if (unlisted[g] != heap.young_unlisted[g])
            broken(when, "generation %d counts %zu unlisted objects but %zu were found", g,
                   heap.young_unlisted[g], unlisted[g]);
    }
    if (!heap.unreachable.empty() || !heap.uncollectable.empty())
        broken(when, "a collection's sets are not empty between collections (%zu unreachable, %zu uncollectable)",
               heap.unreachable.size(), heap.uncollectable.size());
}

}  // namespace cyclegc::internal
