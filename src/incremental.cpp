// Incremental full collections: a full collection in slices, each bounded by
// the heap's pause budget (docs/design.md, "Incremental collection").
//
// The slices analyse the tracked generation-2 objects while the program runs
// between them: A. each becomes a candidate, word := its count; B. each
// reference from a candidate to a candidate is subtracted; C. candidates
// with word > 0, and all they reach, are marked; D. the unmarked candidates
// are gathered; E. they are split into weakly connected parts. Mutation
// between slices makes that analysis stale, so it frees nothing: the final
// step F (collector.cpp, find_unreachable_gathered) runs the ordinary
// analysis on a batch of whole parts per slice, on the graph as it is then,
// in one pause each; G. the garbage is cleared over later slices. A stale
// analysis can only gather too few objects (garbage found by the next
// cycle) or too many (a batch finds them referenced from outside it and
// keeps them), never free a live one.
//
// Young collections keep running between slices, on generations 0 and 1
// with their own flags; objects tracked or promoted during a cycle are not
// its candidates (except in a cycle that adopts young objects: step A then
// moves those it meets to generation 2, out of the young collections' way).
// An object untracked (or freed) during a cycle loses its marks, and its
// entry in the mark stack or gathered set becomes null.
#include "analysis_phase.hpp"
#include "arena.hpp"
#include "heap.hpp"

#include <algorithm>

namespace cyclegc::internal {
namespace {


// The work of a slice is counted in units, each about as long as the
// others: a slot visited is one, reading a candidate (its count, or a
// traversal) kTraverseUnits more, each reference a traversal visits one
// more. The clock is read after kFirstCheck units (so that a tiny budget
// makes a tiny slice), then every kClockEvery.
constexpr uint64_t kTraverseUnits = 4;
constexpr uint64_t kFirstCheck = 16;
constexpr uint64_t kClockEvery = 256;
// The least work of an automatic slice per object allocated since the last
// one. A cycle over N objects with R references costs about 16N + 2R units
// (four walks; a read in step A, a traversal in B and C); 64 units per
// allocation end it before about N/3 more objects are allocated when each
// has 2 to 3 references (the heap grows by at most a third during a cycle).
constexpr uint64_t kWorkPerAllocation = 64;
// While a cycle runs, an automatic slice runs at least every this many
// allocations (between young collections, whose interval the adaptive
// schedule may stretch to 64 x 700): each slice then has a small least work
// (256 x 64 units, a quarter of a millisecond or so).
constexpr cgc_ssize_t kSliceInterval = 256;

// Entries of the retired lists freed per slice (a block freed per 64: some
// 30 us).
constexpr size_t kRetiredPerSlice = size_t(1) << 16;

constexpr uint8_t kIncrMarks = kIncrCandidate | kIncrMarked | kIncrListed;

// One slice's clock and work: it ends past its deadline once its least
// work is done, or past its hard deadline (the rest of the least work is
// then the cycle's debt).
struct Slice {
    SliceClock &clock;
    uint64_t deadline;
    uint64_t hard_deadline;  // (UINT64_MAX: none)
    bool bounded;
    uint64_t least_work;
    uint64_t done = 0;
    uint64_t next_check = kFirstCheck;

    Slice(SliceClock &slice_clock, uint64_t ns, uint64_t least, uint64_t hard_ns)
        : clock(slice_clock), deadline(slice_clock.start() + ns),
          hard_deadline(hard_ns ? slice_clock.start() + hard_ns : UINT64_MAX), bounded(ns != 0),
          least_work(least) {}
    bool out_of_time() {
        if (done < next_check) return false;
        next_check = done + kClockEvery;
        if (!bounded || !clock.reached(deadline)) return false;
        return done >= least_work || clock.reached(hard_deadline);
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
bool walk(Heap &heap, Slice &slice, F f, bool young_too = false) {
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
            if (!(meta.flags & kTracked) || (meta.generation != 2 && !(young_too && meta.generation < 2))) continue;
            if (!f(page->object_at(index), meta)) return false;
        }
    }
    return true;
}

// A young object step A meets in a cycle that adopts them: it joins
// generation 2 (as a young collection's survivor would), to be a candidate.
void adopt(Heap &heap, cgc_object *op, GcMeta &meta) {
    remove_from_lists(heap, op, meta);  // (which untracks it)
    meta.flags = static_cast<uint8_t>(meta.flags | kTracked);
    place_in_generation(heap, op, meta, 2);
}

// Step A.
bool make_candidates(Heap &heap, Slice &slice) {
    bool young_too = heap.incremental.adopt_young;
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (meta.generation != 2) {
            adopt(heap, op, meta);
            ++slice.done;
        }
        // (This cycle examines it: it no longer waits for a full collection.)
        if (meta.schedule & kPromotedPending) --heap.long_lived_pending;
        meta.schedule = kIncrCandidate;
        cgc_ssize_t count = cgc_refcount(op);
        meta.word = count <= 0 || count >= kPinnedRefs ? kPinnedRefs : static_cast<uint32_t>(count);
        ++heap.incremental.candidates;
        slice.done += kTraverseUnits;
        return true;
    }, young_too);
}

// Step B's references, through a short delay line: each target's GcMeta is
// prefetched when its reference is visited and decremented kDelay references
// later, so that the cache misses of a random graph overlap (as the full
// collection's RefCounter does). Flushed before the slice ends.
struct Subtractor {
    static constexpr unsigned kDelay = 8;
    GcMeta idle{};  // (not tracked: never a candidate)
    GcMeta *pending[kDelay] = {&idle, &idle, &idle, &idle, &idle, &idle, &idle, &idle};
    unsigned next = 0;
    uint64_t &done;  // the slice's work

    explicit Subtractor(uint64_t &work) : done(work) {}
    Subtractor(const Subtractor &) = delete;  // (pending points into it)
    Subtractor &operator=(const Subtractor &) = delete;
    ~Subtractor() { flush(); }

    // (Clamped at 0: references made since step A are not in the word.)
    static void subtract(GcMeta &meta) {
        if (is_candidate(meta) && meta.word != 0 && meta.word != kPinnedRefs) --meta.word;
    }
    void add(GcMeta *meta) {
        __builtin_prefetch(meta, 1);
        GcMeta *&slot = pending[next++ % kDelay];
        subtract(*slot);
        slot = meta;
    }
    void flush() {
        for (GcMeta *&slot : pending) {
            subtract(*slot);
            slot = &idle;
        }
    }
};

int visit_subtract(cgc_object *child, void *arg) {
    auto *subtractor = static_cast<Subtractor *>(arg);
    ++subtractor->done;
    if (is_gc_object(child)) subtractor->add(&meta_of(child));
    return 0;
}

// Step B.
bool subtract_internal_refs(Heap &heap, Slice &slice) {
    Subtractor subtractor(slice.done);
    return walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (!is_candidate(meta)) return true;
        traverse(op, visit_subtract, &subtractor);
        slice.done += kTraverseUnits;
        return true;
    });
}

// Step C's references, through a delay line as step B's: a child's GcMeta
// is prefetched when its reference is visited and looked at kDelay
// references later, against the walk's cursor at that moment: a candidate
// ahead of it is only marked (the walk traverses it when it gets there),
// one behind it goes on the stack. Without memory for the stack it is left
// unmarked: gathered, the final step decides it on the current graph.
// Flushed before the stack is found empty and before the slice ends.
struct MarkPass {
    static constexpr unsigned kDelay = 8;
    IncrementalCycle &cycle;
    uint64_t &done;  // the slice's work
    cgc_object *pending[kDelay] = {};
    unsigned next = 0;

    MarkPass(IncrementalCycle &incremental, uint64_t &work) : cycle(incremental), done(work) {}

    void mark(cgc_object *child) {
        Page *page = page_of(child);
        uint32_t index = page->index_of(child);
        GcMeta &meta = page->meta[index];
        if (!is_candidate(meta) || (meta.schedule & kIncrMarked)) return;
        if (walk_position(page->index_in_heap, index) >= walk_position(cycle.page, cycle.slot)) {
            meta.schedule |= kIncrMarked;
            return;
        }
        std::deque<cgc_object *> &stack = cycle.stack;
        try {
            stack.push_back(child);
        } catch (...) {
            return;
        }
        meta.word = static_cast<uint32_t>(stack.size() - 1);
        meta.schedule |= kIncrMarked | kIncrListed;
    }
    void add(cgc_object *child) {
        __builtin_prefetch(&meta_of(child), 1);
        cgc_object *&slot = pending[next++ % kDelay];
        if (slot) mark(slot);
        slot = child;
    }
    void flush() {
        for (cgc_object *&slot : pending) {
            if (slot) mark(slot);
            slot = nullptr;
        }
    }
};

int visit_mark(cgc_object *child, void *arg) {
    auto *pass = static_cast<MarkPass *>(arg);
    ++pass->done;
    if (is_gc_object(child)) pass->add(child);
    return 0;
}

// Traverses what the stack holds (and what the delay line pushes on it);
// false when the slice ran out of time, the line flushed.
bool drain_stack(MarkPass &pass, Slice &slice) {
    std::deque<cgc_object *> &stack = pass.cycle.stack;
    for (;;) {
        while (!stack.empty()) {
            if (slice.out_of_time()) {
                pass.flush();
                return false;
            }
            cgc_object *op = stack.back();
            stack.pop_back();
            if (!op) continue;  // (untracked since it was pushed)
            GcMeta &meta = meta_of(op);
            meta.schedule = static_cast<uint8_t>(meta.schedule & ~kIncrListed);
            meta.word = 0;
            traverse(op, visit_mark, &pass);
            slice.done += kTraverseUnits;
        }
        pass.flush();
        if (stack.empty()) return true;
    }
}

// Step C.
bool mark_reachable(Heap &heap, Slice &slice) {
    IncrementalCycle &cycle = heap.incremental;
    MarkPass pass(cycle, slice.done);
    if (!drain_stack(pass, slice)) return false;
    bool done = walk(heap, slice, [&](cgc_object *op, GcMeta &meta) {
        if (!is_candidate(meta) || (!(meta.schedule & kIncrMarked) && meta.word == 0)) return true;
        meta.schedule |= kIncrMarked;
        traverse(op, visit_mark, &pass);
        slice.done += kTraverseUnits;
        return true;
    });
    // (What the walk left on the stack, or in the line, before the slice ends.)
    return drain_stack(pass, slice) && done;
}

// Step D. The marked candidates leave the cycle; the others are gathered.
bool gather_unmarked(Heap &heap, Slice &slice) {
    std::deque<cgc_object *> &gathered = heap.incremental.gathered;
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

// Step E. The final step's analysis must see a set whole, on the graph of
// one moment, so it cannot be sliced; but a set splits into parts that no
// reference joins (weakly connected), and the analysis of the whole is that
// of each part. Each part is proven in its own slice (a batch of them per
// slice): a part stays whole, the largest is the longest pause. Parts
// joined by the program since they were found are analysed apart, which is
// still sound: references from outside a batch count as external (a live
// object is kept), and garbage, unreachable, cannot be relinked.

uint32_t find_part(std::vector<uint32_t> &parent, uint32_t i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];  // (path halving)
        i = parent[i];
    }
    return i;
}

struct GroupPass {
    IncrementalCycle &cycle;
    uint32_t member;  // the gathered entry being traversed
};

// Joins the part of a gathered object the member refers to.
int visit_group(cgc_object *child, void *arg) {
    if (!is_gc_object(child)) return 0;
    auto *pass = static_cast<GroupPass *>(arg);
    IncrementalCycle &cycle = pass->cycle;
    const GcMeta &meta = meta_of(child);
    if ((meta.schedule & (kIncrListed | kIncrClearing)) != kIncrListed) return 0;
    if (meta.word >= cycle.gathered.size() || cycle.gathered[meta.word] != child) return 0;
    uint32_t a = find_part(cycle.parent, pass->member), b = find_part(cycle.parent, meta.word);
    if (a == b) return 0;
    if (a > b) std::swap(a, b);
    cycle.parent[b] = a;  // (the part's root is its first entry: take_batch)
    std::swap(cycle.next_member[a], cycle.next_member[b]);  // the circular lists spliced
    return 0;
}

// The forest's entries, each its own part, made a clock's check at a time
// (each its own page fault on a large set); false when out of time.
bool make_singletons(IncrementalCycle &cycle, Slice &slice) {
    size_t n = cycle.gathered.size();
    for (auto i = static_cast<uint32_t>(cycle.parent.size()); i < n; ++i) {
        if (slice.out_of_time()) return false;
        ++slice.done;
        cycle.parent.push_back(i);  // (room reserved)
        cycle.next_member.push_back(i);
    }
    return true;
}

bool group_parts(Heap &heap, Slice &slice) {
    IncrementalCycle &cycle = heap.incremental;
    size_t n = cycle.gathered.size();
    if (cycle.parent.capacity() < n || cycle.next_member.capacity() < n) {
        try {
            note_internal_allocation(heap);
            cycle.parent.reserve(n);
            cycle.next_member.reserve(n);
        } catch (...) {
            cycle.parent.clear();  // without memory, one part
            cycle.next_member.clear();
            return true;
        }
    }
    if (!make_singletons(cycle, slice)) return false;
    for (; cycle.page < n; ++cycle.page) {
        if (slice.out_of_time()) return false;
        ++slice.done;
        cgc_object *op = cycle.gathered[cycle.page];
        if (!op) continue;
        GroupPass pass{cycle, static_cast<uint32_t>(cycle.page)};
        traverse(op, visit_group, &pass);
        slice.done += kTraverseUnits;
    }
    return true;
}

// Adds gathered entry i to the batch (if its object lives), its marks
// cleared. Throws when the batch cannot grow.
void add_to_batch(Heap &heap, IncrementalCycle &cycle, size_t i) {
    cgc_object *op = cycle.gathered[i];
    if (!op) return;
    push_counted(heap, cycle.batch, op);
    cycle.gathered[i] = nullptr;
    GcMeta &meta = meta_of(op);
    meta.schedule = 0;
    meta.word = 0;
}

// The gathered set and its parts, emptied.
void release_gathered(IncrementalCycle &cycle) {
    retire_list(cycle, cycle.gathered);
    cycle.parent.clear();
    cycle.next_member.clear();
}

// The gathered objects no batch took leave the cycle, unmarked.
void drop_gathered(IncrementalCycle &cycle) {
    for (cgc_object *op : cycle.gathered) {
        if (!op) continue;
        GcMeta &meta = meta_of(op);
        meta.schedule = 0;
        meta.word = 0;
    }
    release_gathered(cycle);
}

// Whether a young collection of both young generations would take longer
// than `ns` (0: no limit), at the recent cost per object of either (or 50 ns).
bool young_outlasts(const Heap &heap, uint64_t ns) {
    constexpr size_t kFewYoung = 8192;  // (a young collection of these fits any budget worth setting)
    size_t young = heap.young_count(0) + heap.young_count(1);
    if (ns == 0 || young < kFewYoung) return false;
    const IncrementalCycle &cycle = heap.incremental;
    double cost = std::max({cycle.young_ns_per_object, cycle.older_ns_per_object, 50.0});
    return static_cast<double>(young) * cost > static_cast<double>(ns);
}

// A pause that is no collection of its own, counted in `generation`'s time.
void record_pause_of(Heap &heap, int generation, uint64_t took, cgc_pause_kind kind) {
    heap.record_pause(took, kind);
    cgc_generation_stats &stats = heap.generations[generation].stats;
    stats.total_ns += took;
    stats.max_pause_ns = std::max(stats.max_pause_ns, took);
}

// Under a budget, generation 1 due but too large to collect within half
// of it (a program building long-lived data: its young collections find
// nothing, and generation 1 gathers the survivors of ten, 60,000 to 120,000
// objects, 2 to 8 ms): its objects join generation 2 unexamined instead,
// counted toward the next cycle, which examines them in slices; generation
// 2's count advances as after a collection of generation 1. Returns false
// (nothing done) if generation 1 fits, or has unlisted objects, or the
// thresholds were set (CPython's schedule, exactly).
bool promote_generation_one(Heap &heap) {
    if (!heap.adaptive || heap.young_unlisted[1] != 0) return false;
    if (!young_outlasts(heap, heap.incremental.budget_ns / 2)) return false;
    SliceClock clock(heap.pause_clock_thread_cpu);
    for (cgc_object *op : heap.young[1]) {
        GcMeta &meta = meta_of(op);
        meta.generation = 2;
        meta.word = 0;  // (as place_in_generation)
        meta.schedule = kPromotedPending;  // (as a survivor of generation 1: count_long_lived)
        ++heap.long_lived_pending;
    }
    heap.young[1].clear();
    heap.generations[1].count = 0;
    heap.generations[2].count++;
    record_pause_of(heap, 1, clock.elapsed(), CGC_PAUSE_YOUNG);
    return true;
}

// Starts a cycle over the objects in generation 2 now.
void begin_cycle(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    cycle.step = IncrementalStep::candidates;
    cycle.page = 0;
    cycle.slot = 0;
    cycle.candidates = 0;
    cycle.adopt_young = false;
    cycle.debt = 0;
    cycle.pending = PendingOutcome{};
    heap.space.pin();
    cycle.pinned = true;
}

void unpin(IncrementalCycle &cycle, Heap &heap) {
    if (!cycle.pinned) return;
    cycle.pinned = false;
    heap.space.unpin();
}

// The cycle's next step, its cursor at the start.
void next_step(IncrementalCycle &cycle, Heap &heap) {
    if (cycle.step == IncrementalStep::gather) unpin(cycle, heap);  // (no more page walks)
    cycle.step = static_cast<IncrementalStep>(static_cast<int>(cycle.step) + 1);
    cycle.page = 0;
    cycle.slot = 0;
    cycle.batch_cursor = 0;
}

// Runs the analysis steps from where the cycle is; true when they are done.
bool analyse(Heap &heap, Slice &slice) {
    IncrementalCycle &cycle = heap.incremental;
    // Step A reads counts, calls nothing: it runs outside the analysis scope,
    // which parks generation 0's list (step A may take objects out of it).
    if (cycle.step == IncrementalStep::candidates) {
        if (!make_candidates(heap, slice)) return false;
        next_step(cycle, heap);
    }
    AnalysisPhase analysis(heap);
    for (;;) {
        bool done = false;
        switch (cycle.step) {
            case IncrementalStep::subtract: done = subtract_internal_refs(heap, slice); break;
            case IncrementalStep::mark: done = mark_reachable(heap, slice); break;
            case IncrementalStep::gather: done = gather_unmarked(heap, slice); break;
            case IncrementalStep::group: done = group_parts(heap, slice); break;
            default: return true;
        }
        if (!done) return false;
        next_step(cycle, heap);
    }
}

// Whether a part with a living member is left for step F (the batch cursor
// moved past the entries that cannot start one).
bool parts_left(IncrementalCycle &cycle) {
    size_t n = cycle.gathered.size();
    bool one_part = cycle.parent.size() != n;
    while (cycle.batch_cursor < n) {
        size_t i = cycle.batch_cursor;
        if (one_part ? cycle.gathered[i] != nullptr : cycle.parent[i] == i) return true;
        ++cycle.batch_cursor;
    }
    return false;
}

// A slice's pause, counted as the full collections' time.
void record_slice(Heap &heap, uint64_t took, cgc_pause_kind kind) { record_pause_of(heap, 2, took, kind); }

// Whether the last cycle left work for slices of their own: retired lists
// to free, emptied pages to release.
bool leftovers(Heap &heap) { return !heap.incremental.retired.empty() || heap.space.release_waiting(); }

// A slice that only frees what the last cycle left (leftovers), counted as
// the cycles' slices are.
void release_leftovers_slice(Heap &heap) {
    SliceClock clock(heap.pause_clock_thread_cpu);
    trim_retired(heap.incremental);
    heap.space.release_emptied_step();
    record_slice(heap, clock.elapsed(), CGC_PAUSE_SLICE);
}

// The final step's analysis (collect's) on cycle.batch.
void prove_batch(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    cycle.notify(IncrementalEvent::batch_begin);
    collect(heap, CGC_NUM_GENERATIONS - 1, true);
    cycle.notify(IncrementalEvent::batch_end);
    cycle.batch.clear();
}

// Step F: batches of parts analysed (collect's final step), each sized to
// the time left by what the batches before it cost per object; true when
// no part is left. (ns = 0: all in one batch.)
// At least `least` objects are proven (the step keeps up with the
// allocations, as the others do), unless that would take the slice past
// its hard deadline (`hard` ns after its start): `proven` says how many were.
bool prove_batches(Heap &heap, SliceClock &clock, uint64_t ns, uint64_t hard, size_t least, size_t &proven) {
    IncrementalCycle &cycle = heap.incremental;
    auto past = [&](uint64_t after) { return after != UINT64_MAX && clock.reached(clock.start() + after); };
    for (bool first = true;; first = false) {
        if (!parts_left(cycle)) {
            // (Nothing gathered: the collection is run all the same, empty, so
            // that it starts, ends and is counted as any other.)
            if (!cycle.pending.started) prove_batch(heap);
            return true;
        }
        if (ns && !first && past(ns) && (proven >= least || past(hard))) return false;
        uint64_t spent = clock.elapsed_upper_bound();
        // (Half the time left: what a batch costs per object varies twofold.)
        auto fitting = [&](uint64_t until) {
            double left = static_cast<double>(until - std::min(until, spent));
            return std::max<size_t>(1, static_cast<size_t>(left / (2 * cycle.ns_per_object)));
        };
        size_t limit = ns ? fitting(ns) : SIZE_MAX;
        if (proven < least) limit = std::max(limit, std::min(least - proven, fitting(hard)));
        if (!take_batch(heap, limit)) return true;
        proven += cycle.batch.size();
        auto objects = static_cast<double>(cycle.batch.size());
        // (On the pause clock exactly: the cheap upper bound counts the time
        // the thread waited for a core, which made later batches too small.)
        uint64_t began = clock.elapsed();
        prove_batch(heap);
        double per_object = static_cast<double>(clock.elapsed() - began) / objects;
        // A batch costlier than the estimate sets it at once (the next batch
        // is sized by that cost); a cheaper one lowers it a quarter of the
        // way. (Averaged both ways, a batch 5x its estimate left the next
        // ones too large: a batch in a hundred cost over twice its estimate.)
        cycle.ns_per_object = std::max({1.0, per_object, 0.75 * cycle.ns_per_object + 0.25 * per_object});
    }
}

}  // namespace

void set_pause_budget(Heap &heap, uint64_t ns) {
    heap.incremental.budget_ns = ns;
    if (ns == 0) heap.space.bound_release(false);  // (set again by the slices of a budget)
}

void retire_list(IncrementalCycle &cycle, std::deque<cgc_object *> &list) {
    if (list.size() > kRetiredPerSlice) {
        try {
            cycle.retired.emplace_back().swap(list);
            return;
        } catch (...) {
            // (No room to keep it: freed now.)
        }
    }
    list.clear();
}

void trim_retired(IncrementalCycle &cycle) {
    if (cycle.retired.empty()) return;
    std::deque<cgc_object *> &oldest = cycle.retired.front();
    size_t n = std::min(oldest.size(), kRetiredPerSlice);
    oldest.erase(oldest.begin(), oldest.begin() + static_cast<std::ptrdiff_t>(n));
    if (oldest.empty()) cycle.retired.pop_front();
}

void forget_listed(Heap &heap, cgc_object *op, uint32_t index) {
    IncrementalCycle &cycle = heap.incremental;
    auto forget = [&](auto &list) {
        if (index < list.size() && list[index] == op) list[index] = nullptr;
    };
    if (meta_of(op).schedule & kIncrClearing)
        forget(cycle.to_clear);
    else if (cycle.step == IncrementalStep::mark)
        forget(cycle.stack);
    else
        forget(cycle.gathered);
}

void end_cycle(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    cycle.stack.clear();
    drop_gathered(cycle);
    cycle.batch.clear();
    cycle.step = IncrementalStep::none;
    unpin(cycle, heap);
    heap.apply_young_threshold();  // (no more slices between young collections)
}

void abandon_cycle(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    if (!cycle.running()) return;
    if (cycle.step >= IncrementalStep::final && cycle.pending.started) {
        // Garbage proven, finalized: it is cleared, and the cycle reported.
        drop_gathered(cycle);
        cycle.step = IncrementalStep::clear;
        SliceClock clock(heap.pause_clock_thread_cpu);
        clear_garbage_slice(heap, clock, 0, 0);
        return;
    }
    if (cycle.step >= IncrementalStep::group) {
        drop_gathered(cycle);  // (the only marks left)
    } else {
        for (Page *page : heap.space.pages()) {
            for (uint32_t i = 0; i < page->bump; ++i) {
                GcMeta &meta = page->meta[i];
                if ((meta.flags & kTracked) && (meta.schedule & kIncrMarks)) {
                    meta.schedule = static_cast<uint8_t>(meta.schedule & ~kIncrMarks);
                    meta.word = 0;
                }
            }
        }
    }
    end_cycle(heap);
}

bool take_batch(Heap &heap, size_t limit) {
    IncrementalCycle &cycle = heap.incremental;
    std::vector<cgc_object *> &batch = cycle.batch;
    batch.clear();
    size_t n = cycle.gathered.size();
    bool one_part = cycle.parent.size() != n;  // (no memory for step E)
    try {
        while (cycle.batch_cursor < n && batch.size() < limit) {
            size_t i = cycle.batch_cursor++;
            if (one_part) {
                add_to_batch(heap, cycle, i);
                continue;
            }
            if (cycle.parent[i] != i) continue;  // (taken with its part's first entry)
            size_t j = i;
            do {
                add_to_batch(heap, cycle, j);
                j = cycle.next_member[j];
            } while (j != i);
        }
    } catch (...) {
        // No memory for the batch: what it holds is analysed; the rest of the
        // part, left out, counts as outside it (kept alive: never unsound).
    }
    return !batch.empty();
}

void prepare_cycle(Heap &heap, uint64_t ns) {
    IncrementalCycle &cycle = heap.incremental;
    heap.space.bound_release(cycle.budget_ns != 0);
    if (cycle.running()) return;
    // The young generations first: the cycle then examines every object
    // tracked now, so that the garbage of this moment is freed when it
    // ends. Unless collecting them would outlast the slice (a program
    // that built its data with collections off): then step A takes them
    // in as candidates, a slice's worth at a time.
    bool adopt = young_outlasts(heap, ns);
    if (!adopt) collect(heap, 1);
    begin_cycle(heap);
    cycle.adopt_young = adopt;
}

int run_slice(Heap &heap, SliceClock &clock, uint64_t ns, uint64_t least_work, uint64_t hard_ns) {
    IncrementalCycle &cycle = heap.incremental;
    Slice slice(clock, ns, least_work, hard_ns);
    trim_retired(cycle);
    heap.space.release_emptied_step();  // (pages emptied while the last walks ran)
    uint64_t deadline = ns ? clock.start() + ns : 0;
    bool finished = false;
    if (cycle.step == IncrementalStep::clear) {
        // (Garbage is cleared at least as fast as objects are allocated.)
        finished = clear_garbage_slice(heap, clock, deadline, least_work / kWorkPerAllocation);
        cycle.debt = 0;
    } else {
        // Step F starts a slice of its own (unless the slice is unbounded):
        // its batches are sized to a slice. Its garbage is cleared in the
        // time left by its last batch.
        bool proving = cycle.step == IncrementalStep::final;
        // (A batch's object is priced as a candidate's four reads.)
        constexpr uint64_t kUnitsPerProven = 4 * kTraverseUnits;
        size_t least_proven = least_work / kUnitsPerProven, proven = 0;
        uint64_t hard = hard_ns ? hard_ns : UINT64_MAX;
        bool analysed = analyse(heap, slice);
        if (analysed && (proving || ns == 0) && prove_batches(heap, clock, ns, hard, least_proven, proven)) {
            release_gathered(cycle);  // (every entry taken by a batch: none to unmark)
            cycle.step = IncrementalStep::clear;
            finished = clear_garbage_slice(heap, clock, deadline, 0);
        }
        slice.done += proven * kUnitsPerProven;
        cycle.debt = least_work > slice.done && !finished ? least_work - slice.done : 0;
    }
    cycle.count_at_slice = heap.generations[0].count;
    record_slice(heap, clock.elapsed(), finished ? CGC_PAUSE_LAST_SLICE : CGC_PAUSE_SLICE);
    return finished ? 1 : 0;
}

cgc_ssize_t collect_automatic_incremental(Heap &heap) {
    IncrementalCycle &cycle = heap.incremental;
    Generation &young = heap.generations[0];
    cgc_ssize_t allocated = std::max<cgc_ssize_t>(young.count - cycle.count_at_slice, 0);
    heap.space.bound_release(true);  // (only a heap that runs slices: not a shared heap's)
    cgc_ssize_t found = 0;
    // (The young collection's time, or generation 1's promotion's: the
    // slice comes in the same pause.)
    auto young_ns = [&] { return heap.generations[0].stats.total_ns + heap.generations[1].stats.total_ns; };
    uint64_t young_ns_before = young_ns();
    // The young collection due, as collect_automatic would run it.
    heap.apply_young_threshold();
    // (Or its list: the count is allocations minus deallocations, and the
    // clear step frees old garbage as fast as the program allocates, which
    // held the count near 0 while generation 0 grew to 30,000 objects.)
    auto listed = static_cast<cgc_ssize_t>(heap.young_count(0));
    if (young.count > young.threshold || listed > young.threshold) {
        int g = generation_due(heap, 1) && !promote_generation_one(heap) ? 1 : 0;
        cgc_generation_stats before = heap.generations[g].stats;
        found = collect(heap, g);
        const cgc_generation_stats &after = heap.generations[g].stats;
        adapt_schedule(heap, g, after.examined - before.examined, after.collected - before.collected,
                       after.total_ns - before.total_ns);
    }
    uint64_t spent = young_ns() - young_ns_before;
    // Where a full collection would run, a cycle starts (over generation 2:
    // the young garbage of this moment is the young collections' to free).
    if (!cycle.running() && cycle_due(heap) && heap.long_lived_pending >= heap.long_lived_total / 4)
        begin_cycle(heap);
    if (!cycle.running() && leftovers(heap)) release_leftovers_slice(heap);
    if (cycle.running()) {
        // (Aimed at 2/5 of the budget: a slice's work varies with the cache
        // and the graph, and its clock is read every few hundred units; at
        // half of it, a slice's overrun put the 99th percentile just past it.)
        // Its least work (what keeps up with the allocations) may take it to
        // 9/20 of the budget, not further: the rest is a debt for the next
        // slices, which come sooner. (At 4/5, a random 10M-object heap's
        // cycles ran a tenth of all pauses at 0.8 ms: the 99th percentile.)
        uint64_t aim = cycle.budget_ns / 5 * 2, hard = cycle.budget_ns / 20 * 9;
        uint64_t left = aim > spent ? aim - spent : 1, hard_left = hard > spent ? hard - spent : 1;
        SliceClock clock(heap.pause_clock_thread_cpu);
        run_slice(heap, clock, left, static_cast<uint64_t>(allocated) * kWorkPerAllocation + cycle.debt, hard_left);
    }
    cycle.count_at_slice = young.count;
    // The next slice: after kSliceInterval more allocations at most (an
    // eighth of that while the cycle is in debt, so that it pays it off; at
    // the next allocation once the debt outgrows what kSliceInterval
    // allocations ask: where the budget's 9/20 buys less than their least
    // work, a slow machine or build, the program slows, the heap does not
    // outgrow the cycle).
    heap.apply_young_threshold();
    cgc_ssize_t interval = !cycle.debt                                     ? kSliceInterval
                           : cycle.debt < kSliceInterval * kWorkPerAllocation ? kSliceInterval / 8
                                                                              : 1;
    if ((cycle.running() || leftovers(heap)) && young.threshold != PTRDIFF_MAX)
        young.threshold = std::min(young.threshold, young.count + interval);
    return found;
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

void cgc_set_pause_budget(uint64_t ns) { set_pause_budget(current_heap(), ns); }

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
    prepare_cycle(heap, ns);
    SliceClock clock(heap.pause_clock_thread_cpu);
    return run_slice(heap, clock, ns, 0);
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
    heap.stops_not_due = 0;
}

void cgc_get_stop_stats(cgc_pause_stats *out) {
    if (!out) return;
    Heap &heap = current_heap();
    StateLock guard(heap);
    *out = heap.stops.stats();
    out->not_due = heap.stops_not_due;
}

void cgc_set_pause_observer(cgc_pause_observer observer, void *context) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    heap.pause_observer = observer;
    heap.pause_observer_context = context;
}

}  // extern "C"
