// An incremental cycle's state (incremental.cpp): a full collection in
// slices, each bounded by a pause budget.
#pragma once

#include <cyclegc/cyclegc.h>

#include <cstdint>
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
    final,       // the final atomic step: an ordinary analysis of the gathered set
    clear,       // the garbage it proved is cleared (tp_clear), a budget's worth a slice
};

// What the final step found, reported (statistics, "stop" callbacks) when
// the clearing ends.
struct PendingOutcome {
    cgc_ssize_t candidates = 0;
    cgc_ssize_t collected = 0;  // weak references freed + the objects to clear
    uint64_t ns = 0;            // the final step's and the clearing slices' time
};

struct IncrementalCycle {
    IncrementalStep step = IncrementalStep::none;
    uint64_t budget_ns = 0;  // cgc_set_pause_budget: 0 is stop-the-world
    // The cursor of the running step's page walk: the next slot it visits.
    size_t page = 0;
    uint32_t slot = 0;
    // Objects marked behind the mark step's cursor, to be traversed; and the
    // gathered objects. An object in either has kIncrListed and its index in
    // GcMeta::word: untracking it nulls its entry (forget_listed), so no
    // entry ever points at a freed object.
    std::vector<cgc_object *> stack;
    std::vector<cgc_object *> gathered;
    // The clear step: the garbage (kIncrClearing, entries nulled as above),
    // the next entry to clear, then the next to check for survivors.
    std::vector<cgc_object *> to_clear;
    size_t clear_cursor = 0;
    size_t survivor_cursor = 0;
    PendingOutcome pending;
    cgc_ssize_t candidates = 0;  // step A's count (examined by the cycle)
    // generations[0].count when the last slice ran (the allocations since
    // then set the slice's least work: see kWorkPerAllocation).
    cgc_ssize_t count_at_slice = 0;

    bool running() const { return step != IncrementalStep::none; }
};

// An object in the cycle's stack or gathered set is being untracked: its
// entry, at `index`, becomes null.
void forget_listed(Heap &heap, cgc_object *op, uint32_t index);
// Ends the running cycle's bookkeeping (the pages unpinned) once its
// gathered set has been taken for the final step.
void end_cycle(Heap &heap);
// Drops a running cycle (every mark cleared, nothing freed): before a
// stop-the-world full collection, gc.freeze(), or the heap's end. Garbage
// already proven (the clear step) is cleared to the end instead.
void abandon_cycle(Heap &heap);
// Starts a cycle if none runs (after a collection of the young
// generations, so that it examines every object tracked now) and works on
// it for about `ns` (0: to its end), and at least `least_work` units.
// Returns 1 if the cycle finished (its final step ran), 0 if work remains.
int run_slice(Heap &heap, uint64_t ns, uint64_t least_work);
// The automatic collection point when a pause budget is set: the young
// collection that is due, and a slice of the cycle (started when the
// long-lived rule says a full collection is due).
cgc_ssize_t collect_automatic_incremental(Heap &heap);

}  // namespace cyclegc::internal
