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
// A collection of generation 1 that finds most of the objects generation 0
// promoted dead (medium-lived objects: they outlived generation 0's
// threshold, then died) says that examining them in generation 0 was
// wasted: it raises generation 0's threshold instead (up to 256 x 700),
// so that the next ones die before their first examination, and generation
// 0's own collections keep it there. Generation 1's span in allocations
// stays within 64 x 700 x 40 all the same: its threshold in collections of
// generation 0 shrinks as generation 0's grows past 64 x 700.
// With a pause budget, a threshold grows only while its generation's
// collections take less than half the budget, and generation 0's stays
// where they would take a quarter of it.
#include "heap.hpp"

#include <algorithm>

namespace cyclegc::internal {
namespace {

// Generation 0: up to 64 x 700 allocations on its own collections'
// findings, up to 256 x 700 on generation 1's; generation 1: up to 4 x 10
// collections of generation 0 (about 1.8M allocations at most between two
// collections of generation 1, whatever generation 0's threshold).
constexpr int kMaxShift[2] = {6, 2};
constexpr int kMaxLearntShift = 8;
constexpr int kLearntStep = 2;  // (generation 1's collections are rare: learn fast)
constexpr int kMaxSpanShift = kMaxShift[0] + kMaxShift[1];

// Whether a collection of generation 1 freed 3 in 4 or more of the objects
// generation 0 had promoted (the candidates besides generation 0's), and
// those were a quarter of its candidates or more: a couple of survivors
// dying does not count.
bool promoted_mostly_dead(const Heap &heap, uint64_t examined, uint64_t collected) {
    uint64_t promoted = heap.promoted_examined;
    if (promoted * 4 < examined || promoted > examined) return false;
    uint64_t young = examined - promoted;  // (at most all of them were freed)
    return collected > young && (collected - young) * 4 >= promoted * 3;
}

// Generation 0's and 1's collections' rules, without a pause budget, on
// `shifts` and their floor `learnt` (the heap's, or with a budget the
// shadow ones: cycle_due).
void adapt_to_findings(const Heap &heap, int generation, uint64_t examined, uint64_t collected, int (&shifts)[2],
                       int &learnt) {
    int &shift = shifts[generation];
    if (generation == 1 && promoted_mostly_dead(heap, examined, collected)) {
        if (shifts[0] < kMaxLearntShift)
            learnt = shifts[0] = std::min(shifts[0] + kLearntStep, kMaxLearntShift);
        else
            shift = std::max(shift - 1, 0);
        return;
    }
    if (generation == 1) learnt = std::max(learnt - 1, 0);
    if (collected * 16 < examined)  // under 1 in 16 was garbage: fruitless
        shift = std::min(shift + 1, std::max(kMaxShift[generation], generation == 0 ? learnt : 0));
    else if (collected * 4 >= examined)  // 1 in 4 or more: productive
        shift = std::max(shift - 1, generation == 0 ? learnt : 0);
}

// Under a pause budget, generation 0's threshold stays where its
// collections, at the cost per object the recent ones had, would take a
// quarter of the budget at most, whatever raised it (generation 1's
// findings raise it fourfold): the cost per object grows once a set
// outgrows the caches (tree 1M: 16 ns under 5,000 objects, 90 over 20,000).
void keep_young_within_budget(Heap &heap, int generation, uint64_t examined, uint64_t ns, uint64_t budget) {
    double &cost = heap.incremental.young_ns_per_object;
    double now = static_cast<double>(ns) / static_cast<double>(examined);
    double &learnt = generation == 0 ? cost : heap.incremental.older_ns_per_object;
    learnt = learnt > 0 ? 0.75 * learnt + 0.25 * now : now;
    if (cost <= 0) return;
    auto predicted = [&] { return static_cast<double>(heap.requested_young_threshold << heap.shift[0]) * cost; };
    while (heap.shift[0] > 0 && predicted() > static_cast<double>(budget / 4)) --heap.shift[0];
    heap.young_shift_floor = std::min(heap.young_shift_floor, heap.shift[0]);
}

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
        heap.young_shift_floor = std::min(heap.young_shift_floor, heap.shift[0]);
    } else {
        adapt_to_findings(heap, generation, examined, collected, heap.shift, heap.young_shift_floor);
    }
    if (budget) {
        keep_young_within_budget(heap, generation, examined, ns, budget);
        int (&unbudgeted)[2] = heap.unbudgeted_shift;
        adapt_to_findings(heap, generation, examined, collected, unbudgeted, heap.unbudgeted_shift_floor);
        unbudgeted[1] = std::min(unbudgeted[1], kMaxSpanShift - unbudgeted[0]);
    }
    heap.shift[1] = std::min(heap.shift[1], kMaxSpanShift - heap.shift[0]);
    heap.apply_young_threshold();
}

// The budget keeps generation 0's threshold within it, 16 times lower on a
// heap being built (fruitless young collections), which made generation 1's
// collections, and so generation 2's count, 16 times more frequent: cycles
// over the whole heap each time it grew a quarter, seven more over the
// build of a 10M-object tree. Weighed, cycles come as full collections do
// without a budget.
bool cycle_due(const Heap &heap) {
    const int *shift = heap.shift, *unbudgeted = heap.unbudgeted_shift;
    int cut = std::clamp(unbudgeted[0] + unbudgeted[1] - shift[0] - shift[1], 0, kMaxSpanShift);
    const Generation &generation = heap.generations[2];
    return generation.count > generation.threshold << cut;
}

bool generation_due(const Heap &heap, int g) {
    const Generation &generation = heap.generations[g];
    return generation.count > (g == 1 ? generation.threshold << heap.shift[1] : generation.threshold);
}

}  // namespace cyclegc::internal
