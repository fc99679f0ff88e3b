// Incremental full collections: a full collection in slices, each bounded by
// the heap's pause budget (docs/design.md, "Incremental collection").
//
// The slices analyse the tracked generation-2 objects while the program runs
// between them: A. each becomes a candidate, word := its count; B. each
// reference from a candidate to a candidate is subtracted; C. candidates
// with word > 0, and all they reach, are marked; D. the unmarked candidates
// are gathered. Mutation between slices makes that analysis stale, so it
// frees nothing: the final step (collector.cpp, find_unreachable_gathered)
// runs the ordinary analysis on the gathered set alone, on the graph as it
// is then, in one pause. A stale analysis can only gather too few objects
// (garbage found by the next cycle) or too many (the final step finds them
// referenced from outside the set and keeps them), never free a live one.
//
// Young collections keep running between slices, on generations 0 and 1
// with their own flags; objects tracked or promoted during a cycle are not
// its candidates. An object untracked (or freed) during a cycle loses its
// marks, and its entry in the mark stack or gathered set becomes null.
#include "analysis_phase.hpp"
#include "arena.hpp"
#include "heap.hpp"

#include <algorithm>

namespace cyclegc::internal {
namespace {


// The work of a slice is counted in units: a slot visited is one, a
// traversal kTraverseUnits more. The clock is read after kFirstCheck units
// (so that a tiny budget makes a tiny slice), then every kClockEvery.
constexpr uint64_t kTraverseUnits = 4;
constexpr uint64_t kFirstCheck = 16;
constexpr uint64_t kClockEvery = 256;
// The least work of an automatic slice per object allocated since the last
// one. A cycle over N objects costs about 12N units (four walks, two
// traversals each); 64 units per allocation end it before about N/5 more
// objects are allocated (the heap grows by at most a fifth during a cycle).
constexpr uint64_t kWorkPerAllocation = 64;
// While a cycle runs, an automatic slice runs at least every this many
// allocations (between young collections, whose interval the adaptive
// schedule may stretch to 64 x 700): each slice then has a small least work.
constexpr cgc_ssize_t kSliceInterval = 512;

constexpr uint8_t kIncrMarks = kIncrCandidate | kIncrMarked | kIncrListed;

// One slice's clock and work.
struct Slice {
    bool thread_cpu;  // the heap's pause clock
    uint64_t deadline;
    bool bounded;
    uint64_t least_work;
    uint64_t done = 0;
    uint64_t next_check = kFirstCheck;

    Slice(const Heap &heap, uint64_t start, uint64_t ns, uint64_t least)
        : thread_cpu(heap.pause_clock_thread_cpu), deadline(start + ns), bounded(ns != 0), least_work(least) {}
    bool out_of_time() {
        if (done < next_check) return false;
        next_check = done + kClockEvery;
        return bounded && done >= least_work && pause_clock_ns(thread_cpu) >= deadline;
    }
};

// Whether a visited pointer is a GC object (has a GcMeta); never reads it.
bool is_gc_object(const cgc_object *op) {
    uintptr_t offset = reinterpret_cast<uintptr_t>(op) - reinterpret_cast<uintptr_t>(g_arena->base());
    if (offset < g_arena->size()) return true;
    return !g_arena->holds_every_page() && g_arena->in_other_reservation(op);
}

inline bool is_candidate(const GcMeta &meta) {
    return (meta.schedule & kIncrCandidate) && (meta.flags & kTracked);
}


// A slot's place in the page walk.
inline uint64_t walk_position(size_t page, uint32_t slot) { return uint64_t(page) << 32 | slot; }

// Calls f(object, meta) for each tracked generation-2 object from the
// cursor on, advancing it; false when the slice ran out of time (or f
// asked to stop), with the cursor at the next slot to visit.
template <typename F>
bool walk(Heap &heap, Slice &slice, F f) {
    IncrementalCycle &cycle = heap.incremental;
    const std::vector<Page *> &pages = heap.space.pages();
    for (; cycle.page < pages.size(); ++cycle.page, cycle.slot = 0) {
        Page *page = pages[cycle.page];
        if (page->used == 0) continue;
        while (cycle.slot < page->bump) {
            if (slice.out_of_time()) return false;
            uint32_t index = cycle.slot++;
            ++slice.done;
            GcMeta &meta = page->meta[index];
            if (!(meta.flags & kTracked) || meta.generation != 2) continue;
            if (!f(page->object_at(index), meta)) return false;
        }
    }
    return true;
}

// Step A.
bool make_candidates(Heap &heap, Slice &slice) {
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        // (This cycle examines it: it no longer waits for a full collection.)
        if (meta.schedule & kPromotedPending) --heap.long_lived_pending;
        meta.schedule = kIncrCandidate;
        cgc_ssize_t count = cgc_refcount(op);
        meta.word = count <= 0 || count >= kPinnedRefs ? kPinnedRefs : static_cast<uint32_t>(count);
        ++heap.incremental.candidates;
        return true;
    });
}

int visit_subtract(cgc_object *child, void *) {
    if (!is_gc_object(child)) return 0;
    GcMeta &meta = meta_of(child);
    // (Clamped at 0: references made since step A are not in the word.)
    if (is_candidate(meta) && meta.word != 0 && meta.word != kPinnedRefs) --meta.word;
    return 0;
}

// Step B.
bool subtract_internal_refs(Heap &heap, Slice &slice) {
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (!is_candidate(meta)) return true;
        traverse(op, visit_subtract, nullptr);
        slice.done += kTraverseUnits;
        return true;
    });
}

struct MarkPass {
    IncrementalCycle &cycle;
    uint64_t cursor;  // the walk's position: candidates from here on are traversed by the walk
};

// Marks a candidate a marked object refers to. One ahead of the walk is
// only marked (the walk traverses it when it gets there); one behind it goes
// on the stack. Without memory for the stack it is left unmarked: gathered,
// the final step decides it on the current graph.
int visit_mark(cgc_object *child, void *arg) {
    if (!is_gc_object(child)) return 0;
    auto *pass = static_cast<MarkPass *>(arg);
    Page *page = page_of(child);
    uint32_t index = page->index_of(child);
    GcMeta &meta = page->meta[index];
    if (!is_candidate(meta) || (meta.schedule & kIncrMarked)) return 0;
    if (walk_position(page->index_in_heap, index) >= pass->cursor) {
        meta.schedule |= kIncrMarked;
        return 0;
    }
    std::vector<cgc_object *> &stack = pass->cycle.stack;
    try {
        stack.push_back(child);
    } catch (...) {
        return 0;
    }
    meta.word = static_cast<uint32_t>(stack.size() - 1);
    meta.schedule |= kIncrMarked | kIncrListed;
    return 0;
}

// Traverses what the stack holds; false when the slice ran out of time.
bool drain_stack(Heap &heap, Slice &slice) {
    IncrementalCycle &cycle = heap.incremental;
    MarkPass pass{cycle, walk_position(cycle.page, cycle.slot)};
    while (!cycle.stack.empty()) {
        if (slice.out_of_time()) return false;
        cgc_object *op = cycle.stack.back();
        cycle.stack.pop_back();
        if (!op) continue;  // (untracked since it was pushed)
        GcMeta &meta = meta_of(op);
        meta.schedule = static_cast<uint8_t>(meta.schedule & ~kIncrListed);
        meta.word = 0;
        traverse(op, visit_mark, &pass);
        slice.done += kTraverseUnits;
    }
    return true;
}

// Step C.
bool mark_reachable(Heap &heap, Slice &slice) {
    if (!drain_stack(heap, slice)) return false;
    IncrementalCycle &cycle = heap.incremental;
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (!is_candidate(meta) || (!(meta.schedule & kIncrMarked) && meta.word == 0)) return true;
        meta.schedule |= kIncrMarked;
        MarkPass pass{cycle, walk_position(cycle.page, cycle.slot)};
        traverse(op, visit_mark, &pass);
        slice.done += kTraverseUnits;
        return drain_stack(heap, slice);
    });
}

// Step D. The marked candidates leave the cycle; the others are gathered.
bool gather_unmarked(Heap &heap, Slice &slice) {
    std::vector<cgc_object *> &gathered = heap.incremental.gathered;
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (!is_candidate(meta)) return true;
        bool marked = meta.schedule & kIncrMarked;
        meta.schedule = 0;
        meta.word = 0;
        if (marked) return true;
        try {
            gathered.push_back(op);
        } catch (...) {
            return true;  // no memory to gather it: it survives this cycle
        }
        meta.word = static_cast<uint32_t>(gathered.size() - 1);
        meta.schedule = kIncrListed;
        return true;
    });
}

// Starts a cycle over the objects in generation 2 now.
void begin_cycle(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    cycle.step = IncrementalStep::candidates;
    cycle.page = 0;
    cycle.slot = 0;
    cycle.candidates = 0;
    heap.space.pin();
}

// Runs the analysis steps from where the cycle is; true when they are done.
bool analyse(Heap &heap, Slice &slice) {
    IncrementalCycle &cycle = heap.incremental;
    AnalysisPhase analysis(heap);
    for (;;) {
        bool done = false;
        switch (cycle.step) {
            case IncrementalStep::candidates: done = make_candidates(heap, slice); break;
            case IncrementalStep::subtract: done = subtract_internal_refs(heap, slice); break;
            case IncrementalStep::mark: done = mark_reachable(heap, slice); break;
            case IncrementalStep::gather: done = gather_unmarked(heap, slice); break;
            default: return true;
        }
        if (!done) return false;
        cycle.step = static_cast<IncrementalStep>(static_cast<int>(cycle.step) + 1);
        cycle.page = 0;
        cycle.slot = 0;
    }
}

uint64_t elapsed_ns(const Heap &heap, uint64_t since) { return pause_clock_ns(heap.pause_clock_thread_cpu) - since; }

}  // namespace

void forget_listed(Heap &heap, cgc_object *op, uint32_t index) {
    IncrementalCycle &cycle = heap.incremental;
    std::vector<cgc_object *> &list = cycle.step == IncrementalStep::mark    ? cycle.stack
                                      : cycle.step == IncrementalStep::clear ? cycle.to_clear
                                                                             : cycle.gathered;
    if (index < list.size() && list[index] == op) list[index] = nullptr;
}

void end_cycle(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    cycle.stack.clear();
    cycle.gathered.clear();
    cycle.step = IncrementalStep::none;
    heap.space.unpin();
    heap.apply_young_threshold();  // (no more slices between young collections)
}

void abandon_cycle(Heap &heap) {
    if (heap.incremental.step == IncrementalStep::clear) {
        clear_garbage_slice(heap, 0, 0);
        return;
    }
    if (!heap.incremental.running()) return;
    for (Page *page : heap.space.pages()) {
        for (uint32_t i = 0; i < page->bump; ++i) {
            GcMeta &meta = page->meta[i];
            if ((meta.flags & kTracked) && (meta.schedule & kIncrMarks)) {
                meta.schedule = static_cast<uint8_t>(meta.schedule & ~kIncrMarks);
                meta.word = 0;
            }
        }
    }
    end_cycle(heap);
}

int run_slice(Heap &heap, uint64_t ns, uint64_t least_work) {
    IncrementalCycle &cycle = heap.incremental;
    if (!cycle.running()) {
        // The young generations first: the cycle then examines every object
        // tracked now, so that the garbage of this moment is freed when it ends.
        collect(heap, 1);
        begin_cycle(heap);
    }
    uint64_t start = pause_clock_ns(heap.pause_clock_thread_cpu);
    Slice slice(heap, start, ns, least_work);
    uint64_t deadline = ns ? start + ns : 0;
    bool finished = false;
    if (cycle.step == IncrementalStep::clear) {
        // (Garbage is cleared at least as fast as objects are allocated.)
        finished = clear_garbage_slice(heap, deadline, least_work / kWorkPerAllocation);
    } else {
        // The final step starts a slice of its own (unless the slice is
        // unbounded): its pause, proportional to the gathered set, is not
        // added to a slice's analysis. Its garbage is cleared in the time left.
        bool final_now = cycle.step == IncrementalStep::final;
        if (analyse(heap, slice)) {
            cycle.step = IncrementalStep::final;
            if (final_now || ns == 0) {
                collect(heap, 2, true);
                finished = cycle.step != IncrementalStep::clear || clear_garbage_slice(heap, deadline, 0);
            }
        }
    }
    cycle.count_at_slice = heap.generations[0].count;
    uint64_t took = elapsed_ns(heap, start);
    heap.pauses.record(took);
    cgc_generation_stats &stats = heap.generations[2].stats;
    stats.total_ns += took;
    stats.max_pause_ns = std::max(stats.max_pause_ns, took);
    return finished ? 1 : 0;
}

cgc_ssize_t collect_automatic_incremental(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    Generation &young = heap.generations[0];
    cgc_ssize_t allocated = std::max<cgc_ssize_t>(young.count - cycle.count_at_slice, 0);
    uint64_t start = pause_clock_ns(heap.pause_clock_thread_cpu);
    cgc_ssize_t found = 0;
    // The young collection due, as collect_automatic would run it.
    heap.apply_young_threshold();
    if (young.count > young.threshold) {
        int g = generation_due(heap, 1) ? 1 : 0;
        cgc_generation_stats before = heap.generations[g].stats;
        found = collect(heap, g);
        const cgc_generation_stats &after = heap.generations[g].stats;
        adapt_schedule(heap, g, after.examined - before.examined, after.collected - before.collected,
                       after.total_ns - before.total_ns);
    }
    // Where a full collection would run, a cycle starts (over generation 2:
    // the young garbage of this moment is the young collections' to free).
    if (!cycle.running() && generation_due(heap, 2) && heap.long_lived_pending >= heap.long_lived_total / 4)
        begin_cycle(heap);
    if (cycle.running()) {
        uint64_t spent = elapsed_ns(heap, start);
        // (Aimed at half the budget: a slice's work varies with the cache
        // and the graph, and its clock is read every few hundred units.)
        uint64_t aim = cycle.budget_ns / 2;
        uint64_t left = aim > spent ? aim - spent : 1;
        run_slice(heap, left, static_cast<uint64_t>(allocated) * kWorkPerAllocation);
    }
    cycle.count_at_slice = young.count;
    // The next slice: after kSliceInterval more allocations at most.
    heap.apply_young_threshold();
    if (cycle.running() && young.threshold != PTRDIFF_MAX)
        young.threshold = std::min(young.threshold, young.count + kSliceInterval);
    return found;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

void cgc_set_pause_budget(uint64_t ns) { current_heap().incremental.budget_ns = ns; }

uint64_t cgc_get_pause_budget(void) { return current_heap().incremental.budget_ns; }

int cgc_collect_slice(uint64_t ns) {
    Heap &heap = current_heap();
    if (heap.shared) {
        // Not incremental (docs/gc.md): a full collection, the world stopped.
        collect(heap, CGC_NUM_GENERATIONS - 1);
        return 1;
    }
    if (heap.collecting()) {
        report(CGC_ERR_MISUSE, "cgc_collect_slice: called during a collection; nothing done");
        return -1;
    }
    return run_slice(heap, ns, 0);
}

void cgc_get_pause_stats(cgc_pause_stats *out) {
    if (!out) return;
    Heap &heap = current_heap();
    StateLock guard(heap);
    *out = heap.pauses.stats();
}

void cgc_reset_pause_stats(void) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    heap.pauses.reset();
    heap.stops.reset();
}

void cgc_get_stop_stats(cgc_pause_stats *out) {
    if (!out) return;
    Heap &heap = current_heap();
    StateLock guard(heap);
    *out = heap.stops.stats();
}

}  // extern "C"
