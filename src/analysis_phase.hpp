// The scope of a collector's analysis (collector.cpp, incremental.cpp).
#pragma once

#include "heap.hpp"

namespace cyclegc::internal {

// gc_refs given to an object whose count cannot be trusted (or is huge): it
// stays reachable for the rest of the analysis, whatever is subtracted.
constexpr uint32_t kPinnedRefs = uint32_t(1) << 31;

// Calls the object's tp_traverse, if its type has one.
inline void traverse(cgc_object *op, cgc_visitproc visit, void *arg) {
    if (cgc_traverseproc traverse_function = op->ob_type->tp_traverse) traverse_function(op, visit, arg);
}

// Steps 1a to 1d of a collection (and their repeat in step 3), and an
// incremental cycle's slices, run in this scope. Only tp_traverse runs,
// which must not change the graph. So that the fast paths need no phase test, they are made to
// fail meanwhile and their slow paths refuse and report:
// - generation 0's array is parked (empty, no room) and so is its count of
//   unlisted objects: tracking (try_track) and untracking the newest
//   object (untrack_newest) fail;
// - the deallocation depth is at its limit: cgc_dealloc goes to
//   dealloc_slow, which refuses to free a tracked object.
class AnalysisPhase {
  public:
    explicit AnalysisPhase(Heap &heap)
        : heap_(heap), outer_(heap.phase), dealloc_depth_(trashcan_of(heap).depth), unlisted_(heap.young_unlisted[0]) {
        heap.phase = Phase::finding_unreachable;
        heap.traverse_failed = false;
        trashcan_of(heap).depth = kMaxDeallocDepth;
        parked_.swap(heap.young[0]);
        heap.young_unlisted[0] = 0;
    }
    ~AnalysisPhase() {
        parked_.swap(heap_.young[0]);  // (nothing was tracked meanwhile)
        heap_.young_unlisted[0] = unlisted_;
        trashcan_of(heap_).depth = dealloc_depth_;
        heap_.phase = outer_;
    }
    AnalysisPhase(const AnalysisPhase &) = delete;
    AnalysisPhase &operator=(const AnalysisPhase &) = delete;

  private:
    Heap &heap_;
    Phase outer_;
    int dealloc_depth_;
    size_t unlisted_;
    ObjectArray parked_;
};

}  // namespace cyclegc::internal
