// The adaptive schedule: how often young collections run under the default
// thresholds.
//
// A young collection costs about the same per object it examines, and it
// examines the objects that outlived its threshold. A program that builds
// long-lived acyclic structures (trees built bottom-up, a document loaded)
// makes every young collection examine every object it allocates, to find
// nothing, and every middle one examine them again. As PHP 7.3 does with
// its root buffer, a collection of generation 0 or 1 that frees little
// doubles that generation's effective threshold (up to kMaxShift[g]
// doublings), and one that frees much halves it again: garbage cycles wait
// at most that many allocations longer (generation 1 is counted in
// collections of generation 0, so its span in allocations is the product).
// gc.get_threshold() still reports the requested values. An explicit
// set_threshold turns this off (heap.cpp): CPython's behaviour, exactly.
// With a pause budget, a threshold grows only while its generation's
// collections take less than half the budget.
#include "heap.hpp"

#include <algorithm>

namespace cyclegc::internal {
namespace {

// Generation 0: up to 64 x 700 allocations; generation 1: up to 4 x 10
// collections of generation 0 (about 1.8M allocations at most between
// two collections of generation 1).
constexpr int kMaxShift[2] = {6, 2};

}  // namespace

void adapt_schedule(Heap &heap, int generation, uint64_t examined, uint64_t collected, uint64_t ns) {
    if (!heap.adaptive || generation > 1 || examined == 0) return;
    int &shift = heap.shift[generation];
    uint64_t budget = heap.incremental.budget_ns;
    if (budget && ns > budget / 4) {
        // With a pause budget, a young collection stays within half of it:
        // a longer one halves its generation's threshold, whatever it found
        // (one over a quarter no longer doubles it).
        if (ns > budget / 2) shift = std::max(shift - 1, 0);
    } else if (collected * 16 < examined)  // under 1 in 16 was garbage: fruitless
        shift = std::min(shift + 1, kMaxShift[generation]);
    else if (collected * 4 >= examined)  // 1 in 4 or more: productive
        shift = std::max(shift - 1, 0);
    heap.apply_young_threshold();
}

bool generation_due(const Heap &heap, int g) {
    const Generation &generation = heap.generations[g];
    return generation.count > (g == 1 ? generation.threshold << heap.shift[1] : generation.threshold);
}

}  // namespace cyclegc::internal
