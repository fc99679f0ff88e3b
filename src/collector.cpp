// The cycle collector.
//
// Reference counting frees every object whose count drops to zero. What it
// cannot free are groups of objects that refer to each other (cycles) and
// that nothing outside the group refers to. A collection finds them among
// the tracked objects of one generation and the younger ones, the
// "candidates" (see docs/design.md for a worked example):
//
//  1. Find the unreachable set. No user code runs but tp_traverse.
//     a. gc_refs := ob_refcnt for every candidate (kept in its GcMeta);
//     b. for every reference from a candidate to a candidate (visited by
//        tp_traverse), decrement the target's gc_refs. What remains counts
//        the references from outside the candidates: untracked objects,
//        older generations, C variables;
//     c. candidates with gc_refs > 0 are reachable, and so is everything
//        they reach: marked with an explicit stack (no recursion; a full
//        collection leaves objects ahead of its page walk to the walk);
//     d. the unmarked candidates form the unreachable set (an array; an
//        object freed or untracked later leaves a NULL behind). The others
//        move to the next older generation;
//     e. unreachable objects with a legacy finalizer (tp_del), and all they
//        reach, are set apart as uncollectable (kept, listed as garbage).
//  2. Weak references to unreachable objects are cleared, and the callbacks
//     of those weak references that are themselves reachable run: no
//     callback can see a half-destroyed object. Then finalize (PEP 442):
//     tp_finalize on every unreachable object not finalized before, before
//     any tp_clear. A finalizer may do anything: resurrect objects, free
//     others, create garbage, ask for a collection (refused while one runs).
//     On a shared heap, whose collections stop the world, the other threads
//     run while these callbacks and finalizers do (one may wait for them),
//     and the world stops again for steps 3 and 4.
//  3. If any callback or finalizer ran, repeat step 1 on the unreachable set
//     with the current counts: an object made reachable again, and all it
//     reaches, survives ("resurrection").
//  4. Clear weak references made meanwhile, then call each unreachable
//     object's tp_clear (dropping its references breaks the cycle, and
//     reference counting frees the rest); an object not freed by that (no
//     tp_clear, or kept alive) moves to the older generation.
//
// An object's states: untracked -> tracked in generation g -> candidate
// (kCollecting) -> reachable (back in a generation) or unreachable ->
// finalized (kFinalized, for life) -> cleared -> freed by its tp_dealloc.
//
// What a type must honour: tp_traverse visits every reference the object
// owns, exactly once, and nothing else, and changes nothing; tp_clear leaves
// the object valid; tp_dealloc untracks before it invalidates references.
// Broken counts (more references found than the count says) are reported
// and the object is kept alive instead of freed.
#include "analysis_phase.hpp"
#include "arena.hpp"
#include "diagnostics/traverse_check.hpp"
#include "heap.hpp"
#include "shared_heap.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace cyclegc::internal {
namespace {


void expect_phase(const Heap &heap, Phase phase, Phase or_phase) {
#if defined(CYCLEGC_DEBUG) && CYCLEGC_DEBUG >= 1
    if (heap.phase != phase && heap.phase != or_phase) {
        report(CGC_ERR_CORRUPTION, "collector: internal phase error (%d, expected %d)",
               static_cast<int>(heap.phase), static_cast<int>(phase));
        std::abort();
    }
#else
    (void)heap;
    (void)phase;
    (void)or_phase;
#endif
}

void expect_phase(const Heap &heap, Phase phase) { expect_phase(heap, phase, phase); }


// ---- The candidate-page filter (see PageFilter) ---------------------------

size_t arena_page_index(const void *p) {
    return (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(g_arena->base())) / kPageSize;
}

// Starts a filter for a set of candidates (added with filter_add).
void filter_begin(Heap &heap) {
    PageFilter &filter = heap.candidate_pages;
    filter.active = false;
    if (!g_arena->holds_every_page()) return;  // (pages outside the arena have no bit)
    if (!filter.bits) {
        try {
            note_internal_allocation(heap);
        } catch (const std::bad_alloc &) {
            return;
        }
        size_t words = g_arena->size() / kPageSize / 64 + 1;
        filter.bits = static_cast<uint64_t *>(std::calloc(words, sizeof(uint64_t)));
        if (!filter.bits) return;
    }
    filter.active = true;
    filter.last_page = SIZE_MAX;
}

// Marks the page of a new member of the set (filter_add).
[[gnu::noinline]] void filter_add_page(Heap &heap, size_t page) {
    PageFilter &filter = heap.candidate_pages;
    filter.last_page = page;
    uint64_t &word = filter.bits[page / 64];
    uint64_t bit = uint64_t(1) << (page % 64);
    if (word & bit) return;
    if (!word) {
        try {
            push_counted(heap, filter.touched, static_cast<uint32_t>(page / 64));
        } catch (...) {
            filter.active = false;  // without memory, no filtering: still correct
            return;
        }
    }
    word |= bit;
}

// Adds a member of the set: inline when it shares the page of the one
// before (consecutive candidates often do).
inline void filter_add(Heap &heap, const void *op) {
    PageFilter &filter = heap.candidate_pages;
    if (!filter.active) return;
    size_t page = arena_page_index(op);
    if (page != filter.last_page) filter_add_page(heap, page);
}

void filter_end(Heap &heap) {
    PageFilter &filter = heap.candidate_pages;
    for (uint32_t word : filter.touched) filter.bits[word] = 0;
    filter.touched.clear();
    filter.active = false;
}

// Whether an object a traversal visits is a GC object (has a GcMeta): one
// compare when the arena is reserved, instead of reading the object's type
// (a cache miss). The test of every reference a full collection follows;
// the arena's bounds are loaded once per pass, not once per reference.
class GcObjectTest {
  public:
    GcObjectTest()
        : base_(reinterpret_cast<uintptr_t>(g_arena->base())),
          size_(g_arena->size()),
          every_page_inside_(g_arena->holds_every_page()) {}
    bool operator()(cgc_object *op) const {
        if (!in_arena(op)) [[unlikely]] return outside_arena_is_gc(op);
        return true;
    }
    bool in_arena(cgc_object *op) const { return offset_in_arena(op) < size_; }
    uintptr_t offset_in_arena(cgc_object *op) const { return reinterpret_cast<uintptr_t>(op) - base_; }
    // Outside the first reservation (or there is none): the arena's other
    // reservations decide, by address. The object is never read: a hostile
    // tp_traverse may visit NULL, a malloc block or garbage.
    bool outside_arena_is_gc(cgc_object *op) const {
        return !every_page_inside_ && g_arena->in_other_reservation(op);
    }
    uintptr_t size() const { return size_; }

  private:
    uintptr_t base_;
    uintptr_t size_;
    bool every_page_inside_;
};

// The test of every reference a young collection (or the resurrection
// check) follows: "a GC object that may be in the set being analysed",
// false only if it certainly is not.
class CandidateTest {
  public:
    // Without a filter: "a GC object".
    CandidateTest() : CandidateTest(nullptr) {}
    explicit CandidateTest(const PageFilter &filter) : CandidateTest(filter.active ? filter.bits : nullptr) {}
    bool operator()(cgc_object *op) const {
        uintptr_t offset = arena_.offset_in_arena(op);
        if (offset >= arena_.size()) [[unlikely]] return arena_.outside_arena_is_gc(op);
        if (!pages_) return true;
        size_t page = offset / kPageSize;
        return (pages_[page / 64] >> (page % 64)) & 1;
    }
    // The test without the filter (full collections start none).
    const GcObjectTest &is_gc_object() const { return arena_; }

  private:
    explicit CandidateTest(const uint64_t *pages) : pages_(pages) {}

    GcObjectTest arena_;
    const uint64_t *pages_;
};

// The candidates of a young collection: the young arrays. Their GcMeta
// addresses are worked out once, by the first of the three passes that use
// them, and kept for the others, in sets of up to kCachedMetas: a larger
// array of addresses streams from beyond the L2 cache, and costs more than
// working each one out again (a page header read, a multiply).
class YoungCandidates {
  public:
    YoungCandidates(Heap &heap, int generation) : heap_(heap), metas_(heap.candidate_metas) {
        list_.swap(heap.young[0]);
        if (generation == 1) {
            auto &older = heap.young[1];
            try {
                list_.append(older);
                older.clear();
            } catch (...) {
                // Out of memory: generation 1 stays out of this collection.
                generation = 0;
            }
        }
        // (In a shared heap, a local heap's young objects are listed by its
        // stops: positions and words may differ.)
        words_are_positions_ = generation == 0 && heap.young_unlisted[0] == 0 && !heap.is_shared();
        add_unlisted(generation);
        if (list_.size() > kCachedMetas) return;
        try {
            reserve_counted(heap, metas_, list_.size());
            caching_ = true;
        } catch (...) {
            // Out of memory: each pass works them out.
        }
    }
    // The array goes back to generation 0 (if nothing was tracked since),
    // empty: no regrowth after each young collection (unless it grew past
    // what generation 0 holds between collections, gathering unlisted
    // objects). Regrowing past the cap would also count the heap's objects
    // (unlist_young), a walk over every page, twice per collection.
    ~YoungCandidates() {
        metas_.clear();
        ObjectArray &young = heap_.young[0];
        list_.clear();
        if (young.empty() && young.capacity() < list_.capacity() && list_.capacity() <= heap_.young_capacity_kept())
            list_.swap(young);
    }
    YoungCandidates(const YoungCandidates &) = delete;
    YoungCandidates &operator=(const YoungCandidates &) = delete;

    // Whether the candidates are generation 0's listed objects alone, each
    // object's word its position in the set, and every tracked object of
    // generation 0 in the heap's pages one of them (see count_in_one_pass).
    bool words_are_positions() const { return words_are_positions_; }
    // The candidates' addresses, without their GcMeta.
    template <typename F>
    void for_each_address(F f) {
        for (cgc_object *op : list_) f(op);
    }

    template <typename F>
    void for_each(F f) {
        size_t n = list_.size();
        if (metas_.size() == n) {
            for (size_t i = 0; i < n; ++i) f(list_[i], *metas_[i]);
            return;
        }
        // The first pass (or each one, without room for them). (Two loops:
        // no test per object.)
        if (!caching_) {
            for (cgc_object *op : list_) f(op, meta_of(op));
            return;
        }
        for (cgc_object *op : list_) {
            GcMeta *meta = &meta_of(op);
            metas_.push_back(meta);  // (into the room reserved)
            f(op, *meta);
        }
    }

  private:
    static constexpr size_t kCachedMetas = 8192;  // (64 KiB of addresses)

    // The unlisted objects of the generations collected join the candidates:
    // a walk over the pages, which costs little more than the young objects
    // themselves (they went unlisted only while they were at least half of
    // the heap: see place_in_generation).
    void add_unlisted(int generation) {
        size_t unlisted = 0;
        for (int g = 0; g <= generation; ++g) unlisted += heap_.young_unlisted[g];
        if (!unlisted) return;
        try {
            list_.reserve(list_.size() + unlisted);
        } catch (...) {
            return;  // Out of memory: they stay out of this collection.
        }
        for_each_tracked(heap_.space, [&](cgc_object *op, GcMeta &meta) {
            if (meta.generation <= generation && meta.word == kUnlisted) list_.push_back(op);  // (room reserved)
        });
        for (int g = 0; g <= generation; ++g) heap_.young_unlisted[g] = 0;
    }

    Heap &heap_;
    ObjectArray list_;
    std::vector<GcMeta *> &metas_;
    bool caching_ = false;
    bool words_are_positions_ = false;
};

// Step 1a, its first half (and 3's): every candidate is flagged and its
// word zeroed before any is traversed, so that count_external_refs adds
// each object's count in the pass that subtracts its references (one pass
// over the objects, not two). Also adds each candidate's page to the filter
// (started by the caller). Returns the number of candidates.
template <typename Set>
cgc_ssize_t flag_candidates(Heap &heap, Set &set) {
    cgc_ssize_t count = 0;
    set.for_each([&](cgc_object *op, GcMeta &meta) {
        filter_add(heap, op);
        meta.word = 0;
        meta.flags = static_cast<uint8_t>((meta.flags | kCollecting) & ~kReachable);
        ++count;
    });
    return count;
}

// A count internal references cannot bring to zero (as a 32-bit signed
// word: those reach at most the count itself, 2^30 references are 8 GiB):
// what a count out of range or at or below zero (reported) starts from.
constexpr uint32_t kKeptRefs = uint32_t(1) << 30;

// The count a candidate's word starts from (added to the references to it
// subtracted already).
inline uint32_t counted_refs(cgc_object *op) {
    cgc_ssize_t refcnt = refcount_of(op);
    if (refcnt > 0 && refcnt < kKeptRefs) [[likely]] return static_cast<uint32_t>(refcnt);
    if (refcnt <= 0)
        report(CGC_ERR_CORRUPTION,
               "collector: tracked object %p of type '%s' has reference count %td: its "
               "tp_dealloc did not untrack it, or a Py_DECREF is too many; kept alive",
               static_cast<void *>(op), type_name_of(op), refcnt);
    return kKeptRefs;
}

// A candidate's word after count_external_refs, read as signed: the
// references to it from outside the candidates (below zero: more were
// found among them than its count).
inline int32_t signed_refs(const GcMeta &meta) { return static_cast<int32_t>(meta.word); }

// Subtracts a reference between candidates. The target's word may fall
// below zero until the pass reaches the target and adds its count.
int visit_subtract(cgc_object *child, void *arg) {
    auto *is_candidate = static_cast<CandidateTest *>(arg);
    if (!(*is_candidate)(child)) return 0;
    GcMeta &meta = meta_of(child);
    if (meta.flags & kCollecting) meta.word -= 1;
    return 0;
}

inline bool has_finalizer_slot(const cgc_object *op) {
    const cgc_type *type = op->ob_type;
    return (type->tp_del != nullptr) | (type->tp_finalize != nullptr);
}

// Step 1a's second half and 1b, in one pass: each candidate's count is added
// to its word, its references to candidates subtracted from theirs. What
// remains counts the references from outside (below zero: more references
// found than the count, reported by mark_reachable). Returns whether any
// candidate's type has tp_del or tp_finalize (its type is loaded here
// anyway: the sweep then reads no object).
template <typename Set>
bool count_external_refs(Heap &heap, Set &set) {
    CandidateTest is_candidate{heap.candidate_pages};
    bool finalizers = false;
    set.for_each([&](cgc_object *op, GcMeta &meta) {
        meta.word += counted_refs(op);
        finalizers |= has_finalizer_slot(op);
        traverse(op, visit_subtract, &is_candidate);
    });
    return finalizers;
}

struct Found {
    cgc_ssize_t candidates = 0;
    cgc_ssize_t unreachable = 0;
    // False when no unreachable object can have tp_del or tp_finalize, so
    // that the pass looking for them is skipped.
    bool maybe_finalizers = true;
};

// visit_subtract when no flag tells the candidates (count_in_one_pass): a
// tracked generation-0 object on a candidate page is one, flagged yet or not.
int visit_subtract_young(cgc_object *child, void *arg) {
    auto *is_candidate = static_cast<CandidateTest *>(arg);
    if (!(*is_candidate)(child)) return 0;
    GcMeta &meta = meta_of(child);
    constexpr uint64_t kPlace = meta_flag_bits(kTracked | kUncollectable) | kMetaGenerationBits;
    if ((meta_bits(meta) & kPlace) == meta_flag_bits(kTracked)) meta.word -= 1;
    return 0;
}

// Steps 1a and 1b of a generation-0 collection in one pass over the objects,
// with no pass zeroing the words first (flag_candidates): each candidate's
// word is its position in the set, so a reference subtracted before the pass
// reaches its target is counted from that position, which the pass takes off
// as it adds the count. A pass over the addresses alone builds the page
// filter first; with no filter (its pages would not tell this heap's
// objects), false: the caller takes the general way.
template <typename Set>
bool count_in_one_pass(Heap &, Set &, Found &) {
    return false;
}
bool count_in_one_pass(Heap &heap, YoungCandidates &set, Found &found) {
    if (!set.words_are_positions()) return false;
    PageFilter &filter = heap.candidate_pages;
    if (!filter.active) return false;
    // (filter_add's test, with the arena's base and the last page in registers)
    auto base = reinterpret_cast<uintptr_t>(g_arena->base());
    size_t last_page = SIZE_MAX;
    set.for_each_address([&](cgc_object *op) {
        size_t page = (reinterpret_cast<uintptr_t>(op) - base) / kPageSize;
        if (page != last_page) filter_add_page(heap, last_page = page);
    });
    if (!filter.active) return false;
    CandidateTest is_candidate{heap.candidate_pages};
    bool finalizers = false;
    uint32_t position = 0;
    set.for_each([&](cgc_object *op, GcMeta &meta) {
        meta.word = meta.word - position++ + counted_refs(op);
        meta.flags = static_cast<uint8_t>((meta.flags | kCollecting) & ~kReachable);
        finalizers |= has_finalizer_slot(op);
        traverse(op, visit_subtract_young, &is_candidate);
    });
    found.candidates = position;
    found.maybe_finalizers = finalizers;
    return true;
}

void report_broken_count(Heap &heap, cgc_object *op, cgc_ssize_t found);

// The mark stack: the heap's, whose storage is kept from one collection to
// the next (growing it anew each time cost page faults).
struct MarkStack {
    Heap &heap;
    ObjectArray &items = heap.mark_stack;
    bool failed = false;
    size_t marked = 0;  // objects marked reachable (the roots too)
    CandidateTest is_candidate{heap.candidate_pages};  // (a full collection uses is_gc_object())
    uint64_t finger = 0;  // a full collection's page walk: the slot it is at (walk_position)
    ~MarkStack() { items.clear(); }
};

inline void mark(GcMeta &meta, MarkStack &stack) {
    meta.flags |= kReachable;
    ++stack.marked;
}

// Marks `child` reachable and pushes it, to be traversed; 1 stops the
// traversal when the stack cannot grow. (Out of line: the visitors that
// call it stay leaf functions on their common path.)
[[gnu::noinline]] int push_reachable(cgc_object *child, GcMeta &meta, MarkStack *stack) {
    mark(meta, *stack);
    __builtin_prefetch(child);  // it will be traversed soon
    try {
        stack->items.push_back(child);  // (growth out of line, and counted)
    } catch (...) {
        stack->failed = true;
        return 1;
    }
    return 0;
}

int visit_mark(cgc_object *child, void *arg) {
    auto *stack = static_cast<MarkStack *>(arg);
    if (!stack->is_candidate(child)) return 0;
    GcMeta &meta = meta_of(child);
    if ((meta.flags & (kCollecting | kReachable)) != kCollecting) return 0;
    return push_reachable(child, meta, stack);
}

// Marks a candidate referenced from outside and all it reaches.
void mark_from(cgc_object *op, GcMeta &meta, MarkStack &stack) {
    mark(meta, stack);
    traverse(op, visit_mark, &stack);
    while (!stack.failed && !stack.items.empty()) {
        cgc_object *next = stack.items.back();
        stack.items.pop_back();
        traverse(next, visit_mark, &stack);
    }
}

// Step 1c: marks what the externally referenced candidates reach. Returns
// false if it ran out of memory (then nothing may be called unreachable).
template <typename Set>
bool mark_reachable(Heap &heap, Set &set) {
    MarkStack stack{heap};
    set.for_each([&](cgc_object *op, GcMeta &meta) {
        int32_t refs = signed_refs(meta);
        if (refs < 0) [[unlikely]]  // kept alive: marked as referenced from outside
            report_broken_count(heap, op, cgc_refcount(op) - refs);
        if (stack.failed || refs == 0 || (meta.flags & kReachable)) return;
        mark_from(op, meta, stack);
    });
    if (stack.failed) report(CGC_ERR_MEMORY, "collector: out of memory for the mark stack; "
                             "this collection frees nothing");
    return !stack.failed && !heap.traverse_failed;
}

// The unreachable array seen as a set of candidates (for step 3).
struct UnreachableSet {
    std::vector<cgc_object *> &items;
    template <typename F>
    void for_each(F f) {
        for (cgc_object *op : items)
            if (op) f(op, meta_of(op));
    }
};

// Leaves the set being collected (reachable, resurrected, uncollectable or
// surviving its clear): back to generation `generation`.
void leave_collection(Heap &heap, cgc_object *op, GcMeta &meta, int generation) {
    meta.flags = static_cast<uint8_t>(meta.flags & ~(kCollecting | kReachable));
    place_in_generation(heap, op, meta, generation);
}

// A survivor of a generation-1 collection, now old: it counts toward the
// next full collection while it lives (see untrack_not_newest).
inline void count_long_lived(Heap &heap, GcMeta &meta) {
    meta.schedule = kPromotedPending;
    ++heap.long_lived_pending;
}

// A survivor of step 1: back to generation `older`, counted toward the next
// full collection if `promoting` it there.
inline void keep_survivor(Heap &heap, cgc_object *op, GcMeta &meta, int older, bool promoting) {
    leave_collection(heap, op, meta, older);
    if (promoting && older == 2) count_long_lived(heap, meta);
}

// Lists a candidate as unreachable (its word: its index); false without
// memory to list it (then it survives, marked with all it reaches).
inline bool list_unreachable(Heap &heap, cgc_object *op, GcMeta &meta) {
    try {
        push_counted(heap, heap.unreachable, op);
    } catch (...) {
        return false;
    }
    meta.word = static_cast<uint32_t>(heap.unreachable.size() - 1);
    return true;
}

// Takes back the candidates listed unreachable from `first` on that were
// marked after the pass had listed them (all of them if marking failed),
// and closes the gaps.
void take_back_marked(Heap &heap, size_t first, bool marked, int older, bool promoting) {
    auto &unreachable = heap.unreachable;
    size_t kept = first;
    for (size_t i = first; i < unreachable.size(); ++i) {
        cgc_object *op = unreachable[i];
        GcMeta &meta = meta_of(op);
        if (!marked || (meta.flags & kReachable)) {
            keep_survivor(heap, op, meta, older, promoting);
            continue;
        }
        meta.word = static_cast<uint32_t>(kept);
        unreachable[kept++] = op;
    }
    unreachable.resize(kept);
}

// Steps 1c and 1d in one pass over the set (as CPython's move_unreachable):
// a candidate referenced from outside, or marked from one before it, is
// marked with all it reaches and leaves the set; one the pass reaches
// unmarked with no reference from outside is listed unreachable, for now.
// A candidate further on may reach it still (a reference backward in the
// set's order): it is marked then, and taken back by a pass over the listed
// ones, run only when the marks outnumber the survivors. One pass over the
// set, not two (a young set streams from the L3 cache).
template <typename Set>
void mark_and_sweep(Heap &heap, Set &set, int older, bool promoting, Found &found) {
    size_t first = heap.unreachable.size();
    size_t marked_survivors = 0;
    bool marked;
    size_t marks;
    {
        MarkStack stack{heap};
        set.for_each([&](cgc_object *op, GcMeta &meta) {
            int32_t refs = signed_refs(meta);
            if (refs < 0) [[unlikely]]  // kept alive: marked as referenced from outside
                report_broken_count(heap, op, cgc_refcount(op) - refs);
            if (meta.flags & kReachable) {
                ++marked_survivors;
            } else if (stack.failed) {
                // Out of memory for marking: nothing is unreachable.
            } else if (refs == 0 && list_unreachable(heap, op, meta)) {
                return;
            } else {
                mark_from(op, meta, stack);
                ++marked_survivors;
            }
            keep_survivor(heap, op, meta, older, promoting);
        });
        if (stack.failed) report(CGC_ERR_MEMORY, "collector: out of memory for the mark stack; "
                                 "this collection frees nothing");
        marked = !stack.failed && !heap.traverse_failed;
        marks = stack.marked;
    }
    if (!marked || marks > marked_survivors) take_back_marked(heap, first, marked, older, promoting);
    found.unreachable = static_cast<cgc_ssize_t>(heap.unreachable.size() - first);
}

// ---- Full collections ----------------------------------------------------
//
// Every tracked object but the frozen ones is a candidate, so the candidates
// are found by walking the pages, and "is a candidate" is read from the
// GcMeta alone. Between collections GcMeta::word is 0 for old objects, so
// instead of gc_refs := ob_refcnt then decrements, a full collection counts
// the references each candidate gets from candidates (word += 1 per
// reference) and compares with ob_refcnt when marking: one pass fewer.

inline bool is_full_candidate(const GcMeta &meta) {
    return (meta.flags & kTracked) && meta.generation != kPermanent;
}

// Counting with a small delay line: the target's GcMeta is prefetched when
// its reference is seen and incremented a few references later, so the
// cache misses overlap instead of stalling one by one.
struct RefCounter {
    RefCounter() = default;
    RefCounter(const RefCounter &) = delete;  // (pending points into it)
    RefCounter &operator=(const RefCounter &) = delete;

    static constexpr unsigned kDepth = 8;
    GcMeta idle{};  // what an empty place of the line holds: not tracked, so never counted
    GcMeta *pending[kDepth] = {&idle, &idle, &idle, &idle, &idle, &idle, &idle, &idle};
    unsigned next = 0;
    GcObjectTest is_gc_object;

    static void count(GcMeta *meta) {
        if (is_full_candidate(*meta) && meta->word != UINT32_MAX) meta->word++;
    }
    void add(GcMeta *meta) {
        __builtin_prefetch(meta, 1);
        GcMeta *&slot = pending[next++ % kDepth];
        count(slot);
        slot = meta;
    }
    void flush() {
        for (GcMeta *&slot : pending) {
            count(slot);
            slot = &idle;
        }
    }
};

// The visitors of a full collection are leaf functions on their common path
// (a reference into the arena): what may call out (a type's tp_is_gc, the
// mark stack's growth) is tail-called, so no register is saved per visit.
[[gnu::noinline]] int visit_count_outside_arena(cgc_object *child, void *arg) {
    auto *counter = static_cast<RefCounter *>(arg);
    if (counter->is_gc_object.outside_arena_is_gc(child)) counter->add(&meta_of(child));
    return 0;
}

int visit_count(cgc_object *child, void *arg) {
    auto *counter = static_cast<RefCounter *>(arg);
    if (!counter->is_gc_object.in_arena(child)) [[unlikely]] return visit_count_outside_arena(child, arg);
    counter->add(&meta_of(child));
    return 0;
}

// A slot's place in a full collection's page walk (pages in PageSpace::pages()
// order, slots in address order).
inline uint64_t walk_position(const Page *page, uint32_t index) {
    return uint64_t(page->index_in_heap) << 32 | index;
}

// Marks a full collection's candidate, if it is one and not marked yet. One
// the page walk has yet to reach is only marked: the walk traverses it when
// it gets there, in address order (a prefetcher's order), instead of from
// the stack, in the graph's order (a cache miss each on a heap larger than
// the cache). Only one behind the walk goes on the stack (the "finger" of
// mark-sweep collectors).
inline int mark_full(cgc_object *child, MarkStack *stack) {
    Page *page = page_of(child);
    uint32_t index = page->index_of(child);
    GcMeta &meta = page->meta[index];
    if (!is_full_candidate(meta) || (meta.flags & kReachable)) return 0;
    if (walk_position(page, index) > stack->finger) {
        mark(meta, *stack);
        return 0;
    }
    return push_reachable(child, meta, stack);
}

[[gnu::noinline]] int visit_mark_full_outside_arena(cgc_object *child, void *arg) {
    auto *stack = static_cast<MarkStack *>(arg);
    if (!stack->is_candidate.is_gc_object().outside_arena_is_gc(child)) return 0;
    return mark_full(child, stack);
}

int visit_mark_full(cgc_object *child, void *arg) {
    auto *stack = static_cast<MarkStack *>(arg);
    if (!stack->is_candidate.is_gc_object().in_arena(child)) [[unlikely]]
        return visit_mark_full_outside_arena(child, arg);
    return mark_full(child, stack);
}

struct FindReferrer {
    cgc_object *target;
    bool found;
};

int visit_find(cgc_object *child, void *arg) {
    auto *search = static_cast<FindReferrer *>(arg);
    if (child == search->target) search->found = true;
    return search->found;
}

// A candidate with more references from candidates than its count: report
// it, naming one referrer (a slow search, on this error path only).
void report_broken_count(Heap &heap, cgc_object *op, cgc_ssize_t found) {
    cgc_object *referrer = nullptr;
    for_each_tracked(heap.space, [&](cgc_object *candidate, GcMeta &) {
        if (referrer) return;
        FindReferrer search{op, false};
        traverse(candidate, visit_find, &search);
        if (search.found) referrer = candidate;
    });
    char from[160] = "no tracked object visits it now";
    if (referrer)
        std::snprintf(from, sizeof from, "one from %p of type '%s'", static_cast<void *>(referrer),
                      type_name_of(referrer));
    report(CGC_ERR_CORRUPTION,
           "collector: object %p of type '%s' has reference count %td, but %td references to it "
           "were found (%s): a tp_traverse visits a reference it does not own (or one twice), or "
           "a Py_INCREF is missing; the object is kept alive",
           static_cast<void *>(op), type_name_of(op), cgc_refcount(op), found, from);
}

// A full collection's candidate whose count is at or below zero, or below
// the references found to it: reported; the caller keeps it alive.
[[gnu::noinline]] void report_bad_count(Heap &heap, cgc_object *op, const GcMeta &meta) {
    cgc_ssize_t refcnt = cgc_refcount(op);
    if (refcnt <= 0) {
        report(CGC_ERR_CORRUPTION,
               "collector: tracked object %p of type '%s' has reference count %td: its "
               "tp_dealloc did not untrack it, or a Py_DECREF is too many; kept alive",
               static_cast<void *>(op), type_name_of(op), refcnt);
        return;
    }
    report_broken_count(heap, op, meta.word);
}

// Step 1, 1a to 1d, of a full collection: 1a and 1b in one walk (references
// counted up from 0), 1c and 1d in one walk each.
Found find_unreachable_full(Heap &heap) {
    // Young objects are candidates too: their words (indices) become 0.
    for (int g = 0; g < 2; ++g)
        for (cgc_object *op : heap.young[g]) meta_of(op).word = 0;
    if (heap.young_unlisted[0] || heap.young_unlisted[1]) {
        for_each_tracked(heap.space, [](cgc_object *, GcMeta &meta) {
            if (meta.generation < 2) meta.word = 0;
        });
    }
    heap.clear_young();
    AnalysisPhase analysis(heap);
    PageSpace &space = heap.space;
    // The three walks below see the same tracked objects (nothing is
    // tracked or untracked meanwhile): the first records which slots of the
    // pages it gathers are tracked, the others read that (RecordedMasks).
    RefCounter counter;
    for_each_tracked(space, [&](cgc_object *op, GcMeta &meta) {
        if (meta.generation != kPermanent) traverse(op, visit_count, &counter);
    }, Masks::record, &heap.recorded_masks);
    counter.flush();

    MarkStack stack{heap};
    Found found;
    // Whether an object the walk leaves unmarked (the unreachable objects are
    // among them) has a type with tp_del or tp_finalize: read here, where the
    // object's first line is in cache, instead of in a pass of its own.
    bool maybe_finalizers = false;
    for_each_tracked(space, [&](cgc_object *op, GcMeta &meta) {
        if (meta.generation == kPermanent) return;
        ++found.candidates;
        if (stack.failed) return;
        // Marked already (by an object behind the walk, which left its
        // traversal to the walk), or referenced from outside: traversed now.
        cgc_ssize_t refcnt = cgc_refcount(op);
        auto found_refs = static_cast<cgc_ssize_t>(meta.word);
        if (!(meta.flags & kReachable)) {
            if (refcnt == found_refs && refcnt > 0) {  // referenced from candidates only, so far
                maybe_finalizers |= has_finalizer_slot(op);
                return;
            }
            if (refcnt <= 0 || refcnt < found_refs) report_bad_count(heap, op, meta);  // kept alive
            mark(meta, stack);
        } else if (refcnt < found_refs) [[unlikely]] {
            // Marked ahead of the walk (by an object before it), with more
            // references found than its count: reported all the same.
            report_bad_count(heap, op, meta);
        }
        Page *page = page_of(op);
        stack.finger = walk_position(page, static_cast<uint32_t>(&meta - page->meta));
        traverse(op, visit_mark_full, &stack);
        while (!stack.failed && !stack.items.empty()) {
            cgc_object *next = stack.items.back();
            stack.items.pop_back();
            traverse(next, visit_mark_full, &stack);
        }
    }, Masks::replay, &heap.recorded_masks);
    if (stack.failed)
        report(CGC_ERR_MEMORY, "collector: out of memory for the mark stack; this collection frees nothing");
    if (heap.traverse_failed) stack.failed = true;  // (a traversal cut short: nothing is unreachable)
    found.maybe_finalizers = maybe_finalizers;

    // Room for the unreachable objects, in one allocation: growing the array
    // by doublings on a fresh heap cost page faults for twice the memory and
    // copies (about 1 ms for 133k unreachable objects). Without the memory,
    // the sweep grows it as it goes.
    auto &unreachable = heap.unreachable;
    try {
        if (!stack.failed) reserve_counted(heap, unreachable, static_cast<size_t>(found.candidates) - stack.marked);
    } catch (...) {
    }
    for_each_tracked(space, [&](cgc_object *op, GcMeta &meta) {
        if (meta.generation == kPermanent) return;
        meta.schedule = 0;  // (the long-lived count starts again: update_long_lived)
        if (!(meta.flags & kReachable) && !stack.failed) {
            try {
                push_counted(heap, unreachable, op);
                meta.word = static_cast<uint32_t>(unreachable.size() - 1);
                meta.flags |= kCollecting;
                ++found.unreachable;
                return;
            } catch (...) {
                // No memory to list it: it survives this collection.
            }
        }
        meta.flags &= static_cast<uint8_t>(~kReachable);
        meta.generation = 2;
        meta.word = 0;
    }, Masks::replay, &heap.recorded_masks);
    return found;
}


// Step 1, 1a to 1d: the unreachable candidates end in heap.unreachable.
template <typename Set>
Found find_unreachable(Heap &heap, Set &set, int older, bool promoting = true) {
    AnalysisPhase analysis(heap);
    Found found;
    filter_begin(heap);
    if (!count_in_one_pass(heap, set, found)) {
        found.candidates = flag_candidates(heap, set);
        found.maybe_finalizers = count_external_refs(heap, set);
    }
    mark_and_sweep(heap, set, older, promoting, found);
    filter_end(heap);
    return found;
}

// The incremental cycle's final step: the ordinary analysis on a batch of
// the gathered set (whole parts of it: incremental.cpp, step E), with the
// counts as they are now (docs/design.md, "Incremental collection"). Its
// survivors stay in generation 2.
Found find_unreachable_gathered(Heap &heap) {
    UnreachableSet candidates{heap.incremental.batch};
    return find_unreachable(heap, candidates, 2, false);
}

// Step 1e, legacy finalizers: unreachable objects with tp_del and all they
// reach become uncollectable. They wait in heap.uncollectable (an object
// freed meanwhile, when clearing the collectable garbage drops the last
// reference to it, leaves a NULL and is not counted, as in CPython).
void take_uncollectable(Heap &heap, cgc_object *op, GcMeta &meta) {
    try {
        push_counted(heap, heap.uncollectable, op);
    } catch (...) {
        report(CGC_ERR_MEMORY, "collector: out of memory for the uncollectable list");
        return;
    }
    heap.unreachable[meta.word] = nullptr;
    meta.flags = static_cast<uint8_t>((meta.flags & ~kCollecting) | kUncollectable);
    meta.word = static_cast<uint32_t>(heap.uncollectable.size() - 1);
}

int visit_legacy_reachable(cgc_object *child, void *heap) {
    if (!GcObjectTest{}(child)) return 0;  // (a cold path: the bounds loaded per call)
    GcMeta &meta = meta_of(child);
    if (meta.flags & kCollecting) take_uncollectable(*static_cast<Heap *>(heap), child, meta);
    return 0;
}

// Sets apart the unreachable objects with a legacy finalizer (tp_del) and
// all they reach. Returns whether any unreachable object has a tp_finalize:
// the same look at each object's type serves both, so that a heap without
// finalizers is spared a second pass over the objects (a cache miss each).
bool move_legacy_finalizers(Heap &heap) {
    expect_phase(heap, Phase::callbacks);  // (between steps: step 1's analysis is over)
    bool finalizers = false;
    for (cgc_object *op : heap.unreachable) {
        if (!op) continue;
        cgc_type *type = op->ob_type;
        if (type->tp_del)
            take_uncollectable(heap, op, meta_of(op));
        else if (type->tp_finalize)
            finalizers = true;
    }
    for (size_t i = 0; i < heap.uncollectable.size(); ++i)
        traverse(heap.uncollectable[i], visit_legacy_reachable, &heap);
    return finalizers;
}

// Calls user code on `op` holding a reference to it (kHeld): if the code
// drops one reference too many, the deallocation that follows is refused and
// reported (cgc_dealloc) instead of freeing memory the collector still uses.
template <typename Function>
void call_holding(cgc_object *op, const char *what, Function function) {
    GcMeta &meta = meta_of(op);
    cgc_incref(op);
    bool nested = hold(meta);
    call_user_code(what, op, function);
    let_go(meta, nested);
    cgc_decref(op);
}

// Step 2, finalizers (after the weak references' callbacks). Returns
// whether any ran. A shared heap's other threads may run meanwhile
// (let_world_run): the set and the objects' flags are read and changed
// under the state lock, never held while a finalizer runs.
bool finalize_garbage(Heap &heap) {
    expect_phase(heap, Phase::finalizing);
    bool ran = false;
    // By index: a finalizer may free any member (leaving NULL), never add.
    for (size_t i = 0; i < heap.unreachable.size(); ++i) {
        cgc_object *op;
        cgc_destructor finalize;
        bool nested;
        {
            StateLock guard(heap);
            op = heap.unreachable[i];
            if (!op) continue;
            GcMeta &meta = meta_of(op);
            finalize = op->ob_type->tp_finalize;
            if (!finalize || (meta.flags & kFinalized)) continue;
            meta.flags |= kFinalized;
            // As call_holding, the flag changed under the lock.
            cgc_incref(op);
            nested = hold(meta);
        }
        call_user_code("tp_finalize", op, [&] { finalize(op); });
        {
            StateLock guard(heap);
            let_go(meta_of(op), nested);
        }
        cgc_decref(op);
        ran = true;
    }
    return ran;
}

// Step 3: resurrected objects leave the unreachable set.
void keep_resurrected(Heap &heap, int older) {
    expect_phase(heap, Phase::finalizing);
    heap.phase = Phase::checking_resurrection;
    UnreachableSet set{heap.unreachable};
    AnalysisPhase analysis(heap);
    filter_begin(heap);
    flag_candidates(heap, set);
    count_external_refs(heap, set);
    bool marked = mark_reachable(heap, set);
    filter_end(heap);
    for (cgc_object *&op : heap.unreachable) {
        if (!op) continue;
        GcMeta &meta = meta_of(op);
        if (!marked || (meta.flags & kReachable)) {
            cgc_object *survivor = op;
            op = nullptr;
            leave_collection(heap, survivor, meta, older);
        }
    }
    // Indices were overwritten by gc_refs: restore them.
    for (size_t i = 0; i < heap.unreachable.size(); ++i)
        if (cgc_object *op = heap.unreachable[i]) meta_of(op).word = static_cast<uint32_t>(i);
}

// DEBUG_SAVEALL and uncollectable objects: the garbage list holds them.
void save_as_garbage(Heap &heap, cgc_object *op) {
    try {
        push_counted(heap, heap.garbage, op);
        cgc_incref(op);
    } catch (...) {
        report(CGC_ERR_MEMORY, "collector: out of memory for the garbage list");
    }
}

// An unreachable object whose count is 0 but which is still tracked and
// allocated: its tp_dealloc ran (a clear dropped its last reference) and
// neither untracked nor freed it. Clearing it or dropping a reference to it
// would run that tp_dealloc again on a dead object: it is reported and left
// alone, untracked (leaked: its type gave no way to free it).
[[gnu::cold]] void forget_undead(Heap &heap, cgc_object *op) {
    report(CGC_ERR_MISUSE,
           "collector: object %p of type '%s' is still tracked after its tp_dealloc ran (reference "
           "count %td): a tp_dealloc must untrack and free its object; not cleared nor deallocated "
           "again, left untracked (leaked)",
           static_cast<void *>(op), type_name_of(op), cgc_refcount(op));
    remove_from_lists(heap, op, meta_of(op));
}

// Unreachable objects still there after every clear ran: a tp_clear put a
// reference back, or no clear dropped one. Not collected (they moved to the
// older generation): reported once per collection.
void report_survivors(int older, cgc_ssize_t count, cgc_object *first, bool save_all) {
    if (count == 0 || save_all) return;
    report(CGC_ERR_MISUSE,
           "collector: %td unreachable objects (the first %p, of type '%s') are still alive after "
           "their cycle was cleared: a tp_clear put a reference back, or no tp_clear drops one; "
           "not collected, kept in generation %d",
           count, static_cast<void *>(first), type_name_of(first), older);
}

// tp_clear on an unreachable object, held meanwhile (as call_holding). A
// C++ object left with the hold alone, most of a C++ cycle's members, is
// released directly (release_cleared_cxx).
void clear_holding(Heap &heap, cgc_object *op, cgc_inquiry clear) {
    GcMeta &meta = meta_of(op);
    cgc_incref(op);
    bool nested = hold(meta);
    call_user_code("tp_clear", op, [&] {
        clear(op);
        if (heap.diagnostics.state) diag::check_after_clear(heap, op);  // (if switched on)
    });
    let_go(meta, nested);
    // (The type tested here: a C type's object makes no call.)
    if (!op->ob_type->tp_cxx_destroy || !release_cleared_cxx(heap, op, meta)) cgc_decref(op);
}

// Step 4 on one unreachable object (or the garbage list, under
// DEBUG_SAVEALL); false if its tp_dealloc ran already (forget_undead).
bool clear_one(Heap &heap, cgc_object *op, bool save_all) {
    if (refcount_of(op) <= 0) [[unlikely]] {
        forget_undead(heap, op);
        return false;
    }
    if (save_all) {
        save_as_garbage(heap, op);
    } else if (cgc_inquiry clear = op->ob_type->tp_clear) {
        clear_holding(heap, op, clear);
    }
    return true;
}

// Step 4 on C++ objects without finalize() (tp_cxx_destroy), in windows of
// the set: each member is held (a count and kHeld), then cleared, so that
// a clear's decrement of another member never reaches 0 (no cascade, no
// test); then each one the hold alone keeps is untracked and destroyed
// (tp_cxx_destroy: its destructor, the free). Every destructor sees its
// traced references cleared, as release_cxx_untracking's do. A member
// still referenced (a const ref of a member not destroyed yet, or
// resurrected by an outside destructor) stays held: release_holds.
constexpr size_t kClearWindow = 256;

inline bool can_hold_cxx(cgc_object *op, const GcMeta &meta) {
    const cgc_type *type = op->ob_type;
    return type->tp_cxx_destroy && type->tp_clear && op->ob_refcnt > 0 &&
           allocated_without(meta, kHeld | kHasWeakrefs);
}

// The member at `entry`, held and cleared: destroyed if the hold is its
// only reference (false: left held).
inline bool destroy_if_only_held(Heap &heap, cgc_object *&entry, GcMeta &meta) {
    cgc_object *op = entry;
    uint64_t bits = meta_bits(meta);
    constexpr uint64_t kTested = meta_flag_bits(kAllocated | kTracked | kCollecting | kHeld | kHasWeakrefs);
    if (op->ob_refcnt != 1 || (bits & kTested) != meta_flag_bits(kAllocated | kTracked | kCollecting | kHeld))
        return false;
    entry = nullptr;  // (untracked as untrack_not_newest does a member)
    set_meta_bits(meta, bits & ~meta_flag_bits(kTracked | kCollecting | kReachable | kHeld));
    op->ob_refcnt = 0;
    destroy_cxx_in_trashcan(heap, op, op->ob_type->tp_cxx_destroy);
    return true;
}

// Returns where it stopped: the set's end, or the first object that is no
// such C++ object (the rest take clear_one). `held_left`: members left held.
size_t clear_cxx_members(Heap &heap, bool &held_left) {
    auto &unreachable = heap.unreachable;
    size_t n = unreachable.size();
    if (heap.is_shared() || t_current_heap != &heap || heap.diagnostics.state ||
        heap.trashcan.depth >= kMaxDeallocDepth)
        return 0;
    GcMeta *metas[kClearWindow];
    for (size_t start = 0; start < n;) {
        size_t end = std::min(n, start + kClearWindow), stop = start;
        for (; stop < end; ++stop) {
            cgc_object *op = unreachable[stop];
            if (!op) continue;
            GcMeta &meta = meta_of(op);
            if (!can_hold_cxx(op, meta)) [[unlikely]]
                break;
            ++op->ob_refcnt;
            meta.flags |= kHeld;
            metas[stop - start] = &meta;
        }
        for (size_t i = start; i < stop; ++i) {
            if (cgc_object *op = unreachable[i]) {
                cgc_inquiry clear = op->ob_type->tp_clear;
                call_user_code("tp_clear", op, [&] { clear(op); });
            }
        }
        for (size_t i = start; i < stop; ++i)
            if (unreachable[i] && !destroy_if_only_held(heap, unreachable[i], *metas[i - start])) held_left = true;
        if (stop < end) return stop;
        start = end;
    }
    return n;
}

// clear_cxx_members' members left held, once every clear has run: the
// cleared ones that the hold alone keeps are destroyed, the others let go.
void release_holds(Heap &heap) {
    auto &unreachable = heap.unreachable;
    for (size_t i = 0, n = unreachable.size(); i < n; ++i) {
        cgc_object *op = unreachable[i];
        if (!op) continue;
        GcMeta &meta = meta_of(op);
        if (!(meta.flags & kHeld) || destroy_if_only_held(heap, unreachable[i], meta)) continue;
        let_go(meta, false);
        cgc_decref(op);
    }
}

// Step 4. Returns how many of the unreachable objects were not freed: they
// survived the clears, or their tp_dealloc left them (forget_undead). (One
// that user code untracks meanwhile leaves the set as a freed one does, and
// counts as collected: the two cannot be told apart.)
cgc_ssize_t clear_garbage(Heap &heap, int older) {
    expect_phase(heap, Phase::finalizing, Phase::checking_resurrection);
    heap.phase = Phase::clearing;
    bool save_all = (heap.debug_flags & CGC_DEBUG_SAVEALL) != 0;
    cgc_ssize_t not_freed = 0;
    // (Entries may be emptied meanwhile, never added: nothing is swept.)
    auto &unreachable = heap.unreachable;
    bool held_left = false;
    size_t start = save_all ? 0 : clear_cxx_members(heap, held_left);
    for (size_t i = start, n = unreachable.size(); i < n; ++i) {
        cgc_object *op = unreachable[i];
        if (op && !clear_one(heap, op, save_all)) ++not_freed;
    }
    if (held_left) {
        release_holds(heap);
    } else if (start == unreachable.size()) {  // (clear_cxx_members destroyed every one)
        unreachable.clear();
        return 0;
    }
    // What is still here survived the clears (an object cleared early may
    // have been freed by a later clear: counted only now).
    cgc_ssize_t survivors = 0;
    cgc_object *first = nullptr;
    for (cgc_object *&op : unreachable) {
        if (!op) continue;
        if (refcount_of(op) <= 0) [[unlikely]] {
            forget_undead(heap, op);
            ++not_freed;
            continue;
        }
        cgc_object *survivor = op;
        op = nullptr;
        leave_collection(heap, survivor, meta_of(survivor), older);
        if (!first) first = survivor;
        ++survivors;
    }
    unreachable.clear();
    report_survivors(older, survivors, first, save_all);
    return not_freed + (save_all ? 0 : survivors);
}

void log_objects(Heap &heap, const std::vector<cgc_object *> &objects, const char *what) {
    for (cgc_object *op : objects)
        if (op) log_line(heap, "gc: %s <%s %p>", what, type_name_of(op), static_cast<void *>(op));
}

// The uncollectable objects still alive join generation `older`; those
// with tp_del (all of them under DEBUG_SAVEALL) go to the garbage list.
cgc_ssize_t keep_uncollectable(Heap &heap, int older) {
    bool save_all = (heap.debug_flags & CGC_DEBUG_SAVEALL) != 0;
    auto &uncollectable = heap.uncollectable;
    if (heap.debug_flags & CGC_DEBUG_UNCOLLECTABLE) log_objects(heap, uncollectable, "uncollectable");
    cgc_ssize_t count = 0;
    for (cgc_object *op : uncollectable) {
        if (!op) continue;
        ++count;
        if (save_all || op->ob_type->tp_del) save_as_garbage(heap, op);
    }
    for (cgc_object *&op : uncollectable) {
        if (!op) continue;
        GcMeta &meta = meta_of(op);
        meta.flags &= static_cast<uint8_t>(~kUncollectable);
        place_in_generation(heap, op, meta, older);
        op = nullptr;
    }
    uncollectable.clear();
    return count;
}

// (long_lived_pending grows as a generation-1 collection promotes objects:
// count_long_lived.)
// An incremental cycle's final step leaves the pending count as it is: it
// counts the objects promoted since the cycle began, which it did not examine.
void update_long_lived(Heap &heap, int generation, cgc_ssize_t survivors, bool incremental_final) {
    if (generation == CGC_NUM_GENERATIONS - 1) {
        if (!incremental_final) heap.long_lived_pending = 0;
        heap.long_lived_total = survivors;
    }
}

void invoke_callbacks(Heap &heap, const char *phase, const cgc_collection_info &info) {
    if (heap.callbacks.empty() || heap.finalizing) return;
    Phase outer = heap.phase;
    heap.phase = Phase::callbacks;  // a collection requested from here returns 0
    // The live list, by index (a callback may add or remove callbacks): one
    // removed meanwhile is blanked and never runs after its removal (its
    // context may be freed); one added runs from the next phase on.
    size_t count = heap.callbacks.size();
    ++heap.callbacks_walking;
    for (size_t i = 0; i < count; ++i) {
        cgc_collection_callback callback = heap.callbacks[i].first;
        void *context = heap.callbacks[i].second;
        if (callback) call_user_code("a collection callback", nullptr, [&] { callback(phase, &info, context); });
    }
    if (--heap.callbacks_walking == 0)
        std::erase_if(heap.callbacks, [](const auto &entry) { return entry.first == nullptr; });
    heap.phase = outer;
}

void log_generation_sizes(Heap &heap, int generation) {
    cgc_ssize_t old = 0, frozen = 0;
    for_each_tracked(heap.space, [&](cgc_object *, GcMeta &meta) {
        if (meta.generation == 2) ++old;
        if (meta.generation == kPermanent) ++frozen;
    });
    log_line(heap, "gc: collecting generation %d...", generation);
    log_line(heap, "gc: objects in each generation: %zu %zu %td", heap.young_count(0), heap.young_count(1), old);
    log_line(heap, "gc: objects in permanent generation: %td", frozen);
}

// The collector's arrays keep their storage from one collection to the
// next, up to 1M entries (8 MiB) each: beyond, it is given back.
void release_large_scratch(Heap &heap) {
    constexpr size_t kKeptEntries = size_t(1) << 20;
    auto release = [](auto &array) {
        if (array.capacity() > kKeptEntries) {
            std::decay_t<decltype(array)> none;
            array.swap(none);
        }
    };
    release(heap.unreachable);
    release(heap.mark_stack);
    release(heap.candidate_metas);
    heap.recorded_masks.release_if_larger(kKeptEntries);
}

// DEBUG_STATS: the collection's outcome and the heap's pauses so far.
void log_done(Heap &heap, cgc_ssize_t collected, cgc_ssize_t uncollectable, uint64_t ns) {
    cgc_pause_stats pauses = heap.pauses.stats();
    log_line(heap, "gc: done, %td unreachable, %td uncollectable, %.4fs elapsed; pauses: %llu, "
             "p50 %.1fus, p99 %.1fus, p99.9 %.1fus, max %.1fus",
             collected + uncollectable, uncollectable, static_cast<double>(ns) / 1e9,
             static_cast<unsigned long long>(pauses.count), static_cast<double>(pauses.p50_ns) / 1e3,
             static_cast<double>(pauses.p99_ns) / 1e3, static_cast<double>(pauses.p999_ns) / 1e3,
             static_cast<double>(pauses.max_ns) / 1e3);
}

struct Outcome {
    cgc_ssize_t candidates = 0;
    cgc_ssize_t collected = 0;
    cgc_ssize_t uncollectable = 0;
};

// A batch of the incremental cycle's final step, its garbage proven,
// finalized and its weak references cleared: the clear step's slices clear
// it (tp_clear, then the survivors' pass) instead of this pause, after every
// batch (all finalizers before any tp_clear, as in one collection). Nothing outside the set
// refers to it, so the program cannot see it meanwhile; unmarked as the
// collection's set, no other collection takes it for a candidate.
bool hand_over_garbage(Heap &heap, cgc_ssize_t garbage) {
    IncrementalCycle &cycle = heap.incremental;
    std::deque<cgc_object *> &to_clear = cycle.to_clear;
    size_t next = to_clear.size();
    try {
        // (Room for all of it first: a deque grows without copying.)
        note_internal_allocation(heap);
        to_clear.resize(next + static_cast<size_t>(garbage));
    } catch (...) {
        return false;  // cleared now
    }
    for (cgc_object *op : heap.unreachable) {
        if (!op) continue;
        GcMeta &meta = meta_of(op);
        meta.flags = static_cast<uint8_t>(meta.flags & ~(kCollecting | kReachable));
        meta.schedule = kIncrListed | kIncrClearing;
        meta.word = static_cast<uint32_t>(next);
        to_clear[next++] = op;
    }
    heap.unreachable.clear();
    return true;
}

// Steps 1 to 4 on generation `generation` and the younger ones (or on the
// incremental cycle's gathered set).
Outcome run_collection(Heap &heap, int generation, bool incremental_final) {
    expect_phase(heap, Phase::callbacks);  // (collect's: the start callbacks have run)
    Generation *gens = heap.generations;
    bool oldest = generation == CGC_NUM_GENERATIONS - 1;
    int older = oldest ? generation : generation + 1;
    if (!oldest) gens[generation + 1].count++;
    if (!incremental_final) {
        for (int g = 0; g <= generation; ++g) gens[g].count = 0;
    } else {
        gens[2].count = 0;  // (the young generations' counts went on during the cycle)
    }

    Outcome outcome;
    Found found;  // step 1
    if (incremental_final) {
        cgc_ssize_t examined = heap.incremental.candidates;
        found = find_unreachable_gathered(heap);
        found.candidates = examined;
    } else if (oldest) {
        found = find_unreachable_full(heap);
    } else {
        if (generation == 1) heap.promoted_examined = heap.young_count(1);  // (adapt_schedule)
        YoungCandidates candidates(heap, generation);
        found = find_unreachable(heap, candidates, older);
    }
    outcome.candidates = found.candidates;
    cgc_ssize_t unreachable = found.unreachable;
    if (incremental_final) unreachable = heap.incremental.pending.unreachable += found.unreachable;  // (all batches')
    update_long_lived(heap, generation, found.candidates - unreachable, incremental_final);

    bool finalizers = found.maybe_finalizers && move_legacy_finalizers(heap);  // 1e
    if (heap.is_shared()) disown_for_clearing(heap, heap.unreachable);
    if (heap.debug_flags & CGC_DEBUG_COLLECTABLE) log_objects(heap, heap.unreachable, "collectable");

    // Step 2.
    heap.phase = Phase::finalizing;
    std::vector<WeakRef *> callbacks;
    queue_weakref_callbacks(heap, heap.unreachable, callbacks);
    bool user_code_ran = !callbacks.empty();
    // A shared heap's other threads run while this user code does.
    bool restarted = (user_code_ran || finalizers) && let_world_run(heap);
    cgc_ssize_t weakrefs_freed = run_weakref_callbacks(callbacks);
    // (Weak reference callbacks may free unreachable objects, never add any:
    // without a finalizer among them before, there is none after.)
    if (finalizers) user_code_ran |= finalize_garbage(heap);
    if (restarted) stop_world_again(heap);
    if (user_code_ran) keep_resurrected(heap, older);  // step 3
    // Step 4.
    clear_weakrefs_silently(heap, heap.unreachable);
    auto garbage = static_cast<cgc_ssize_t>(std::count_if(heap.unreachable.begin(), heap.unreachable.end(),
                                                          [](cgc_object *op) { return op; }));
    outcome.collected = weakrefs_freed + garbage;
    // (Legacy finalizers and DEBUG_SAVEALL keep the whole of step 4 here.)
    bool save_all = (heap.debug_flags & CGC_DEBUG_SAVEALL) != 0;
    if (incremental_final && garbage > 0 && heap.uncollectable.empty() && !save_all && hand_over_garbage(heap, garbage))
        return outcome;
    if (heap.is_shared() && stopped_by_this_thread(heap)) [[unlikely]] {
        make_garbage_counts_plain(heap);
        outcome.collected -= clear_garbage(heap, older);
        rebias_plain_survivors(heap);
    } else {
        outcome.collected -= clear_garbage(heap, older);  // (only what was freed counts)
    }
    outcome.uncollectable = keep_uncollectable(heap, older);
    release_large_scratch(heap);
    return outcome;
}

// The end of a collection: statistics, the "stop" callbacks, the checks
// after it. (An incremental cycle's final step: when its clear step ends.)
void report_collection(Heap &heap, int generation, const Outcome &outcome, uint64_t ns, bool incremental) {
    if (heap.debug_flags & CGC_DEBUG_STATS) log_done(heap, outcome.collected, outcome.uncollectable, ns);
    cgc_generation_stats &stats = heap.generations[generation].stats;
    stats.collections++;
    stats.collected += static_cast<uint64_t>(outcome.collected);
    stats.uncollectable += static_cast<uint64_t>(outcome.uncollectable);
    stats.examined += static_cast<uint64_t>(outcome.candidates);
    if (!incremental) {  // (an incremental cycle's slices add their own)
        stats.total_ns += ns;
        stats.max_pause_ns = std::max(stats.max_pause_ns, ns);
    }
    cgc_collection_info info{};
    info.generation = generation;
    info.collected = outcome.collected;
    info.uncollectable = outcome.uncollectable;
    info.candidates = outcome.candidates;
    info.duration_ns = ns;
    invoke_callbacks(heap, "stop", info);
    heap.phase = Phase::idle;
    if (generation == CGC_NUM_GENERATIONS - 1 && heap.diagnostics.state)
        diag::check_after_full_collection(heap);  // (if switched on)
#if defined(CYCLEGC_DEBUG) && CYCLEGC_DEBUG >= 2
    validate_heap(heap, "after a collection");
#endif
}

// ---- The incremental cycle's clear step ------------------------------------
//
// Step 4 of its final step, in slices: the same two passes as clear_garbage
// over the cycle's to-clear list, each entry nulled when its object is
// untracked (forget_listed), with the clock read every few entries.

struct ClearClock {
    SliceClock &clock;
    uint64_t deadline;  // (0: no deadline)
    uint64_t least;     // entries visited before the clock may stop the slice
    uint64_t visited = 0;

    // Counted `cost` more entries; true once the slice is over.
    bool spent(uint64_t cost, uint64_t every) {
        uint64_t before = visited;
        visited += cost;
        if (deadline == 0 || visited < least || before / every == visited / every) return false;
        return clock.reached(deadline);
    }
};

// The clear pass (clear_garbage's first); true when it reached the end.
bool clear_some(Heap &heap, ClearClock &clock) {
    IncrementalCycle &cycle = heap.incremental;
    std::deque<cgc_object *> &to_clear = cycle.to_clear;  // (never added to meanwhile)
    while (cycle.clear_cursor < to_clear.size()) {
        cgc_object *op = to_clear[cycle.clear_cursor++];
        if (!op) {
            if (clock.spent(1, 1024)) return false;
            continue;
        }
        if (!clear_one(heap, op, false)) --cycle.pending.collected;
        if (clock.spent(64, 1024)) return false;
    }
    return true;
}

// The survivors' pass (clear_garbage's second): what is still listed was
// not freed by the clears and goes back to generation 2, reported.
bool keep_some_survivors(Heap &heap, ClearClock &clock) {
    IncrementalCycle &cycle = heap.incremental;
    std::deque<cgc_object *> &to_clear = cycle.to_clear;
    cgc_ssize_t survivors = 0;
    cgc_object *first = nullptr;
    bool done = true;
    while (cycle.survivor_cursor < to_clear.size()) {
        if (clock.spent(1, 1024)) {
            done = false;
            break;
        }
        cgc_object *&op = to_clear[cycle.survivor_cursor++];
        if (!op) continue;
        --cycle.pending.collected;
        if (cgc_refcount(op) <= 0) [[unlikely]] {
            forget_undead(heap, op);
            continue;
        }
        cgc_object *survivor = op;
        op = nullptr;
        GcMeta &meta = meta_of(survivor);
        meta.schedule = 0;
        leave_collection(heap, survivor, meta, CGC_NUM_GENERATIONS - 1);
        if (!first) first = survivor;
        ++survivors;
    }
    report_survivors(CGC_NUM_GENERATIONS - 1, survivors, first, false);
    return done;
}

void release_cleared(IncrementalCycle &cycle) {
    retire_list(cycle, cycle.to_clear);
    cycle.clear_cursor = 0;
    cycle.survivor_cursor = 0;
}

}  // namespace

cgc_ssize_t collect(Heap &heap, int generation, bool incremental_final) {
    if (heap.shared && !stopped_by_this_thread(heap)) [[unlikely]]
        return collect_stopped(heap, generation, false);
    if (heap.collecting()) return 0;
    expect_phase(heap, Phase::idle);
    receive_transfers(heap);  // (the objects transferred here are tracked: they are collected too)
    // A stop-the-world full collection does a running cycle's work at once.
    if (generation == CGC_NUM_GENERATIONS - 1 && !incremental_final) abandon_cycle(heap);
    set_collection_due(heap, false);
    // Queued objects hold a reference the analysis would count as external.
    if (heap.is_shared()) merge_all_queues(heap);
    heap.phase = Phase::callbacks;
    // (An incremental cycle's final step is one collection in batches: it
    // starts with the first, and is reported when its clear step ends.)
    PendingOutcome &pending = heap.incremental.pending;
    if (!incremental_final || !pending.started) {
        cgc_collection_info info{};
        info.generation = generation;
        invoke_callbacks(heap, "start", info);
        if (heap.debug_flags & CGC_DEBUG_STATS) log_generation_sizes(heap, generation);
    }
    uint64_t start = pause_clock_ns(heap.pause_clock_thread_cpu);
    Outcome outcome = run_collection(heap, generation, incremental_final);
    uint64_t ns = pause_clock_ns(heap.pause_clock_thread_cpu) - start;
    if (incremental_final) {  // (its slices record the pauses)
        pending.started = true;
        pending.candidates = outcome.candidates;
        pending.collected += outcome.collected;
        pending.uncollectable += outcome.uncollectable;
        pending.ns += ns;
        heap.phase = Phase::idle;
        return 0;
    }
    heap.record_pause(ns, generation == CGC_NUM_GENERATIONS - 1 ? CGC_PAUSE_FULL : CGC_PAUSE_YOUNG);
    report_collection(heap, generation, outcome, ns, false);
    return outcome.collected + outcome.uncollectable;
}

bool clear_garbage_slice(Heap &heap, SliceClock &slice_clock, uint64_t deadline, uint64_t least) {
    expect_phase(heap, Phase::idle);
    IncrementalCycle &cycle = heap.incremental;
    uint64_t start = slice_clock.elapsed();
    heap.phase = Phase::clearing;
    ClearClock clock{slice_clock, deadline, least};
    bool done = clear_some(heap, clock) && keep_some_survivors(heap, clock);
    cycle.pending.ns += slice_clock.elapsed() - start;
    cycle.notify(IncrementalEvent::cleared);
    if (!done) {
        heap.phase = Phase::idle;
        return false;
    }
    release_cleared(cycle);
    Outcome outcome;
    outcome.candidates = cycle.pending.candidates;
    outcome.collected = cycle.pending.collected;
    outcome.uncollectable = cycle.pending.uncollectable;
    end_cycle(heap);
    heap.phase = Phase::callbacks;
    report_collection(heap, CGC_NUM_GENERATIONS - 1, outcome, cycle.pending.ns, true);
    return true;
}

cgc_ssize_t collect_automatic(Heap &heap) {
    if (heap.shared && !stopped_by_this_thread(heap)) [[unlikely]]
        return collect_stopped(heap, 0, true);
    set_collection_due(heap, false);
    if (heap.collecting()) return 0;
    // (A shared heap's collections are not incremental: docs/gc.md.)
    if (heap.incremental.budget_ns && !heap.shared) return collect_automatic_incremental(heap);
    // (The budget was set to 0 while a cycle's garbage waited to be cleared.)
    if (heap.incremental.step == IncrementalStep::clear) abandon_cycle(heap);
    heap.incremental.retired.clear();
    for (int g = CGC_NUM_GENERATIONS - 1; g >= 0; --g) {
        Generation &generation = heap.generations[g];
        if (g == 0 ? generation.count <= generation.threshold : !generation_due(heap, g)) continue;
        // Full collections wait until enough new long-lived objects exist.
        if (g == CGC_NUM_GENERATIONS - 1 && heap.long_lived_pending < heap.long_lived_total / 4)
            continue;
        cgc_generation_stats before = generation.stats;
        cgc_ssize_t found = collect(heap, g);
        adapt_schedule(heap, g, generation.stats.examined - before.examined,
                       generation.stats.collected - before.collected, generation.stats.total_ns - before.total_ns);
        return found;
    }
    if (heap.shared) ++heap.stops_not_due;  // (the world stopped for nothing: cgc_pause_stats::not_due)
    return 0;
}

}  // namespace cyclegc::internal
