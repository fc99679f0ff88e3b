// An incremental cycle's state (incremental.cpp): a full collection in
// slices, each bounded by a pause budget.
#pragma once

#include <cyclegc/cyclegc.h>

#include "pause_stats.hpp"

#include <cstdint>
#include <deque>
#include <vector>

namespace cyclegc::internal {

struct Heap;

// The steps of an incremental cycle, in order (docs/design.md, "Incremental
// collection"). Each of the first four walks the pages with a cursor that
// stays valid between slices (the pages are pinned while a cycle runs).
enum class IncrementalStep : uint8_t {
    none,        // no cycle
    candidates,  // A: the tracked generation-2 objects become candidates, word := count
    subtract,    // B: references among candidates are subtracted from word
    mark,        // C: what candidates with word > 0 reach is marked
    gather,      // D: the unmarked candidates are gathered
    group,       // E: the gathered set split into its connected parts
    final,       // F: the ordinary analysis, a batch of whole parts per slice
    clear,       // G: the garbage it proved is cleared (tp_clear), a budget's worth a slice
};

// What the final step's batches found, reported (statistics, "stop"
// callbacks) when the clear step ends.
struct PendingOutcome {
    cgc_ssize_t candidates = 0;
    cgc_ssize_t unreachable = 0;  // found by the batches so far
    cgc_ssize_t collected = 0;    // weak references freed + the objects to clear
    cgc_ssize_t uncollectable = 0;
    uint64_t ns = 0;  // the batches' and the clearing slices' time
    bool started = false;  // the "start" callbacks ran
};

// What a test observes of steps F and G (tests/stress: its model follows
// each batch and each clearing slice, with the program running between).
enum class IncrementalEvent : uint8_t {
    batch_begin,  // cycle.batch holds the batch, before its analysis
    batch_end,    // its garbage appended to cycle.to_clear (or cleared at once)
    cleared,      // a clearing slice moved clear_cursor and survivor_cursor
};
using IncrementalObserver = void (*)(void *context, IncrementalEvent event);

struct IncrementalCycle {
    IncrementalStep step = IncrementalStep::none;
    uint64_t budget_ns = 0;  // cgc_set_pause_budget: 0 is stop-the-world
    bool pinned = false;  // the pages, while steps A to D walk them
    // Step A makes the young objects it meets candidates too (moved to
    // generation 2): a cycle that cgc_collect_slice started when a young
    // collection first would have outlasted the slice.
    bool adopt_young = false;
    // The cursor of the running step's page walk: the next slot it visits
    // (step E: the next gathered entry).
    size_t page = 0;
    uint32_t slot = 0;
    // Objects marked behind the mark step's cursor, to be traversed; and the
    // gathered objects. An object in either has kIncrListed and its index in
    // GcMeta::word: untracking it nulls its entry (forget_listed), so no
    // entry ever points at a freed object.
    // (Deques: growing one copies nothing, where a vector's doubling copied
    // every entry in one pause.)
    std::deque<cgc_object *> stack;
    std::deque<cgc_object *> gathered;
    // Step E's parts: a union-find forest over the gathered entries, and
    // each part's members as a circular list (next_member), spliced when
    // two parts join. Empty when there was no memory: one part.
    std::vector<uint32_t> parent;
    std::vector<uint32_t> next_member;
    size_t batch_cursor = 0;  // step F: the next gathered entry whose part is due
    std::vector<cgc_object *> batch;  // step F: the batch being analysed
    double ns_per_object = 50;  // what step F's batches have cost, to size the next
    // Step G: the garbage (kIncrListed | kIncrClearing, entries nulled as
    // above), the next entry to clear, then the next to check for survivors.
    std::deque<cgc_object *> to_clear;
    size_t clear_cursor = 0;
    size_t survivor_cursor = 0;
    // Lists done with (the gathered set, the to-clear list), freed a part
    // per slice (trim_retired): freeing the 20 MB of a 10M-object heap's
    // cycle took 1-2 ms in one pause. (A deque of them: a vector's growth
    // copies, a deque's move constructor not being noexcept.)
    std::deque<std::deque<cgc_object *>> retired;
    PendingOutcome pending;
    cgc_ssize_t candidates = 0;  // step A's count (examined by the cycle)
    // generations[0].count when the last slice ran (the allocations since
    // then set the slice's least work: see kWorkPerAllocation).
    cgc_ssize_t count_at_slice = 0;
    // The least work the last slice left undone (its hard deadline came
    // first), added to the next one's.
    uint64_t debt = 0;
    // What generation 0's recent collections cost per object (schedule.cpp:
    // its threshold is kept within the budget).
    double young_ns_per_object = 0;
    // And generation 1's (both young generations: their objects are more
    // spread out, a tree 10M's cost 2-5 times generation 0's).
    double older_ns_per_object = 0;
    IncrementalObserver observer = nullptr;  // (tests only)
    void *observer_context = nullptr;

    bool running() const { return step != IncrementalStep::none; }
    void notify(IncrementalEvent event) {
        if (observer) observer(observer_context, event);
    }
};

// cgc_set_pause_budget: 0 is stop-the-world (and pages emptied while
// walks ran are freed when they end, not by slices: PageSpace::bound_release).
void set_pause_budget(Heap &heap, uint64_t ns);
// An object in the cycle's stack, gathered set or to-clear list is being
// untracked: its entry, at `index`, becomes null.
void forget_listed(Heap &heap, cgc_object *op, uint32_t index);
// Empties `list`: a long one is kept in cycle.retired, to be freed over the
// next slices; a short one is freed now.
void retire_list(IncrementalCycle &cycle, std::deque<cgc_object *> &list);
// Frees a slice's part of the retired lists.
void trim_retired(IncrementalCycle &cycle);
// Ends the cycle (its garbage cleared, its collection reported).
void end_cycle(Heap &heap);
// Drops a running cycle: before a stop-the-world full collection,
// gc.freeze(), or the heap's end. Marks are cleared and nothing is freed,
// but garbage already proven (steps F and G) is cleared to the end.
void abandon_cycle(Heap &heap);
// Step F's next batch, in cycle.batch: the members of whole parts, about
// `limit` objects (at least one part), their marks cleared. False when no
// part is left.
bool take_batch(Heap &heap, size_t limit);
// Starts a cycle if none runs (after a collection of the young
// generations, so that it examines every object tracked now, unless that
// would outlast a slice of `ns`).
void prepare_cycle(Heap &heap, uint64_t ns);
// Works on the running cycle until `ns` after the clock's start (0: to its
// end), and at least `least_work` units unless that takes more than `hard_ns`
// (0: no such limit; what is left is cycle.debt); records the slice's pause.
// Returns 1 if the cycle finished (its final step ran), 0 if work remains.
int run_slice(Heap &heap, SliceClock &clock, uint64_t ns, uint64_t least_work, uint64_t hard_ns = 0);
// The automatic collection point when a pause budget is set: the young
// collection that is due, and a slice of the cycle (started when the
// long-lived rule says a full collection is due).
cgc_ssize_t collect_automatic_incremental(Heap &heap);

}  // namespace cyclegc::internal
