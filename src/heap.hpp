// A heap: all the state of one collector. Outside heaps, cyclegc keeps per
// thread its current heap and its own heap (heap.cpp), and per process the
// page arena (arena.cpp).
#pragma once

#include "incremental.hpp"
#include "object_array.hpp"
#include "page_walk.hpp"
#include "pause_stats.hpp"

#include <cyclegc/cyclegc.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cyclegc::internal {

// Explicit phases, asserted at the entry of each collector step, so that a
// re-entrant call is caught where it starts.
enum class Phase {
    idle,
    finding_unreachable,  // tp_traverse only: no user code may change the graph
    finalizing,           // tp_finalize runs (user code)
    checking_resurrection,
    clearing,             // tp_clear and deallocations (user code)
    callbacks,            // collection callbacks (user code) at start and stop
};

struct WeakRef;  // weakref.cpp
struct SharedHeap;  // shared_heap.hpp
struct Heap;

// The trashcan: objects whose deallocation was deferred, linked through
// their ob_refcnt field, complemented so that the count reads below zero
// (they have count 0 and are untracked; see defer_dealloc). A confined
// heap's is in the heap; on a shared heap each thread has its own
// (t_shared_trashcan), as its deallocations nest on its own stack.
struct Trashcan {
    int depth = 0;
    cgc_object *deferred = nullptr;
    // (Shared heaps) of the deallocations in progress, those whose object
    // was untracked before its destructor ran (dealloc.cpp): while all are,
    // no object of the thread is tracked at count 0, and it may park.
    int untracked = 0;
};
extern thread_local constinit Trashcan t_shared_trashcan __attribute__((tls_model("initial-exec")));

// The error indicator: a confined heap's is in the heap; on a shared heap
// each thread has its own (as CPython's is per thread state).
struct ErrorState {
    cgc_error_kind kind = CGC_ERR_NONE;
    std::string message;
};
ErrorState &error_state(Heap &heap);

// The diagnostics' per-heap state (growth baselines, leak report settings:
// src/diagnostics/state.hpp), made on first use.
namespace diag {
struct State;
void destroy_state(State *state);
}  // namespace diag
struct DiagnosticsSlot {
    diag::State *state = nullptr;
    ~DiagnosticsSlot() { diag::destroy_state(state); }
};

// The pages that hold objects of the set being analysed, one bit per arena
// page: a young collection follows many references into the old heap, and
// this answers "not a candidate" from a small bitmap, without reading the
// target page's header and metadata (two cache misses per reference).
struct PageFilter {
    uint64_t *bits = nullptr;  // arena pages / 64 words, allocated on first use
    std::vector<uint32_t> touched;  // words to clear afterwards
    bool active = false;  // false: every GC object may be a candidate
    size_t last_page = SIZE_MAX;  // the page filter_add saw last

    ~PageFilter() { std::free(bits); }
};

struct Generation {
    // gen 0: allocations of GC objects minus their frees since the last
    // collection; gen 1..2: collections of the next younger generation since
    // this one was last collected.
    cgc_ssize_t count = 0;
    cgc_ssize_t threshold = 0;  // (generation 0: the effective one, Heap::apply_young_threshold)
    cgc_generation_stats stats{};
};

// Default thresholds: CPython's (700, 10, 10).
constexpr cgc_ssize_t kDefaultThresholds[CGC_NUM_GENERATIONS] = {700, 10, 10};
// Deallocations nested deeper than this are deferred to the outermost one
// (the trashcan): frees a 10M-long chain in constant stack.
constexpr int kMaxDeallocDepth = 50;
// A young array's length from which its generation's objects may go unlisted
// (Heap::young_unlisted): 64 KiB of pointers, or more while the adaptive
// schedule raises generation 0's threshold (Heap::young_capacity_kept).
// Under CPython's thresholds the arrays stay below it (generation 1 gathers
// the survivors of at most 11 collections of about 700 objects), and a heap
// built with automatic collection off does not pay an array slot per object
// (docs/design.md).
constexpr size_t kYoungListCap = size_t(1) << 13;
// GcMeta::word of an unlisted young object.
constexpr uint32_t kUnlisted = UINT32_MAX;
// GcMeta::word of a young object a thread tracked in its local heap (a part
// of a shared heap): in no list until a stopped world lists it in the shared
// heap's (take_back, local_heaps.cpp).
constexpr uint32_t kPrivateYoung = UINT32_MAX - 1;

struct Heap {
    PageSpace space;  // where GC objects live
    RecordedMasks recorded_masks;  // for a full collection's page walks
    Generation generations[CGC_NUM_GENERATIONS];
    // The tracked objects of generations 0 and 1 (GcMeta::word is the index).
    // Generation 2 and the permanent generation are all other tracked
    // objects, found by walking the pages.
    ObjectArray young[2];
    // Young objects the arrays do not hold (GcMeta::word is kUnlisted), found
    // by walking the pages: once an array holds young_list_cap objects and
    // they are at least half of the heap (automatic collection off while a
    // program loads its data), each would cost 8 more bytes there and a walk
    // costs no more than twice the array (see place_in_generation).
    size_t young_unlisted[2] = {0, 0};
    uint32_t unlisted_word = kUnlisted;  // (a local heap's: kPrivateYoung)
    size_t young_list_cap = kYoungListCap;
    bool unlist_whatever_the_heap = false;  // (both set by CYCLEGC_YOUNG_LIST_CAP: tests)
    // The unreachable objects of the running collection (GcMeta::word is the
    // index; an entry becomes NULL when its object is untracked or freed).
    std::vector<cgc_object *> unreachable;
    PageFilter candidate_pages;
    std::vector<GcMeta *> candidate_metas;  // a young collection's (scratch, kept for reuse)
    ObjectArray mark_stack;                 // (scratch, kept for reuse)
    // Its uncollectable objects (legacy finalizers and what they reach), kept
    // apart until the end of the collection, the same way.
    std::vector<cgc_object *> uncollectable;

    bool enabled = true;  // (written through set_enabled)
    // Generation 0's threshold is the count at which an allocation asks for
    // an automatic collection, so none while automatic collection is off
    // (disabled, or a requested threshold of 0): gc.disable() must not send
    // every allocation down the slow path once the count passes the
    // threshold (the count goes on, as CPython's does). Generation 0's
    // threshold as requested is requested_young_threshold (cold, at the end).
    void set_enabled(bool on) {
        enabled = on;
        apply_young_threshold();
    }
    void set_threshold(int generation, cgc_ssize_t threshold) {
        if (generation == 0)
            requested_young_threshold = threshold;
        else
            generations[generation].threshold = threshold;
        apply_young_threshold();
    }
    cgc_ssize_t requested_threshold(int generation) const {
        return generation == 0 ? requested_young_threshold : generations[generation].threshold;
    }
    void apply_young_threshold() {
        bool automatic = enabled && requested_young_threshold > 0;
        generations[0].threshold = automatic ? requested_young_threshold << shift[0] : PTRDIFF_MAX;
    }
    // The adaptive schedule (schedule.cpp), on until the user sets a
    // threshold: generation g's effective threshold (g = 0, 1) is the
    // requested one times 2^shift[g], raised after its collections find little.
    bool adaptive = true;
    int shift[2] = {0, 0};
    // Generation 0's shift raised by collections of generation 1 that found
    // most of what it promoted dead: its own collections keep it at least
    // there. The generation-1 objects the last collection of generation 1
    // examined (besides generation 0's), set as it starts.
    int young_shift_floor = 0;
    // With a pause budget, the shifts the findings alone set, as without one
    // (schedule.cpp, cycle_due).
    int unbudgeted_shift[2] = {0, 0};
    int unbudgeted_shift_floor = 0;
    size_t promoted_examined = 0;
    Phase phase = Phase::idle;
    // A tp_traverse reported an exception (cgc_report_unraisable) during the
    // running analysis: it may have been cut short, so nothing is freed.
    bool traverse_failed = false;
    cgc_auto_mode auto_mode = CGC_AUTO_AT_ALLOCATION;
    // (Written under the state lock, read without it by cgc_safepoint
    // first: set_collection_due.)
    bool collection_due = false;
    bool finalizing = false;  // in cgc_finalize: no collection callbacks (as CPython at exit)

    // CPython's rule against quadratic full collections on a growing heap:
    // a full collection runs only when the objects that survived a gen-1
    // collection since the last full one and are still tracked (the
    // kPromotedPending ones) are >= 25% of those that survived it.
    cgc_ssize_t long_lived_total = 0;
    cgc_ssize_t long_lived_pending = 0;

    // The incremental cycle, if one runs, and the pause budget; the pauses.
    IncrementalCycle incremental;
    PauseHistogram pauses;
    PauseHistogram stops;  // a shared heap's: from a stop's request to the world stopped
    uint64_t stops_not_due = 0;  // (cgc_pause_stats::not_due)
    bool pause_clock_thread_cpu = false;  // (CYCLEGC_PAUSE_CLOCK=thread: pause_clock_ns)
    cgc_pause_observer pause_observer = nullptr;  // (cgc_set_pause_observer)
    void *pause_observer_context = nullptr;
    void record_pause(uint64_t ns, cgc_pause_kind kind) {
        pauses.record(ns);
        if (!pause_observer) return;
        Phase outer = phase;
        phase = Phase::callbacks;  // (a collection asked from it returns 0, as from a gc callback)
        pause_observer(kind, ns, pause_observer_context);
        phase = outer;
    }

    Trashcan trashcan;  // (a confined heap's: trashcan_of)

    // The gc module's surface (gc_module.cpp).
    int debug_flags = 0;
    cgc_log_sink log_sink = nullptr;
    void *log_context = nullptr;
    std::vector<std::pair<cgc_collection_callback, void *>> callbacks;
    // While invoke_callbacks walks `callbacks`, a removed callback is blanked
    // (null), not erased, so the walk's indices stay valid; the walk erases
    // the blanks when it ends.
    int callbacks_walking = 0;
    std::vector<cgc_object *> garbage;  // strong references
    // Objects without a collector header whose finalizer runs from their
    // tp_dealloc (cgc_call_finalizer_from_dealloc), which cannot be held
    // through a GcMeta flag: a Py_DECREF too many inside it is caught here.
    std::vector<cgc_object *> finalizing_without_header;

    // Weak references: referent -> first weak reference to it. An object
    // with weak references has kHasWeakrefs set, so the common case (none)
    // costs one bit test at deallocation.
    std::unordered_map<cgc_object *, WeakRef *> weakref_lists;

    // Fault injection (cgc_debug_fail_allocations): the library's own
    // allocations are counted, and the armed one fails once.
    uint64_t internal_allocations = 0;
    uint64_t fail_allocation_at = 0;

    // Errors (a confined heap's indicator: error_state).
    ErrorState error;
    cgc_error_hook error_hook = nullptr;
    cgc_unraisable_hook unraisable_hook = nullptr;
    void *unraisable_hook_context = nullptr;
    void *error_hook_context = nullptr;
    uint64_t error_counts[CGC_ERR_UNRAISABLE + 1] = {};
    cgc_ssize_t requested_young_threshold = 0;  // (set_threshold)
    DiagnosticsSlot diagnostics;

    // The thread the heap is confined to: the one that made it current last
    // (thread_id(); 0: none, any thread may adopt it), and its system id
    // for messages.
    uint64_t owner = 0;
    long owner_tid = 0;
    // A shared heap's threads and counts (shared_heap.hpp); null for a heap
    // confined to one thread. A shared heap has no owner (owner stays 0).
    SharedHeap *shared = nullptr;
    // The heap whose state this is: itself, or for a local heap (a thread's
    // part of a shared heap, local_heaps.cpp) the shared heap.
    Heap *home = this;

    Heap();
    ~Heap();
    Heap(const Heap &) = delete;
    Heap &operator=(const Heap &) = delete;
    bool is_shared() const { return shared != nullptr; }
    bool is_local() const { return home != this; }
    bool collecting() const { return phase != Phase::idle; }
    // The length up to which a young array grows before its objects may go
    // unlisted, and the storage generation 0's array keeps from one
    // collection to the next: the cap, or room for twice generation 0's
    // effective threshold (raised by the adaptive schedule) if larger.
    size_t young_capacity_kept() const {
        if (unlist_whatever_the_heap) return young_list_cap;  // (tests: the cap, exactly)
        cgc_ssize_t threshold = generations[0].threshold;
        size_t room = threshold > 0 && threshold < PTRDIFF_MAX / 2 ? 2 * size_t(threshold) : 0;
        return std::max(young_list_cap, room);
    }
    // The tracked objects of young generation g, listed or not.
    size_t young_count(int g) const { return young[g].size() + young_unlisted[g]; }
    // Empties both young generations' lists (their objects have moved on).
    void clear_young() {
        for (int g = 0; g < 2; ++g) {
            young[g].clear();
            young_unlisted[g] = 0;
        }
    }
};

// Registers a heap made, unregisters one deleted (transfer.cpp: a heap
// handle is checked before a transfer writes to it).
void note_heap_made(const Heap *heap);
void note_heap_gone(const Heap *heap);

// The heap of the calling thread's fast paths: its current heap if it is
// confined; its local heap if it is attached to a shared heap (null while
// detached); the shared heap itself while it stops the world; null if it
// chose none yet. The inline fast paths compare an object's page_heap with
// it: a shared heap's objects outside the thread's lent pages take the slow
// paths, which take the shared heap's state lock.
extern thread_local constinit Heap *t_current_heap __attribute__((tls_model("initial-exec")));
// For a fast path whose page's heap is not t_current_heap: a page lent to a
// thread while the calling thread stops the world (t_current_heap is the
// shared heap, home of every local heap, only then). Its threads are parked
// or detached, and the shared heap's lists and counts hold the page's
// tracked objects (take_back): the stopping thread untracks and frees them
// there, without the state lock, as a confined heap's.
inline bool lent_while_stopped(const Heap *page_heap, const Heap *current) {
    return page_heap->home == current;
}
Heap &current_heap_slow();
// The calling thread's current heap (the default heap until one is set; a
// shared heap, not the thread's local part of it).
inline Heap &current_heap() {
    Heap *heap = t_current_heap;
    return heap ? *heap->home : current_heap_slow();
}

// A number for the calling thread, unique in the process (0: not numbered
// yet; thread_id() numbers it).
extern thread_local constinit uint64_t t_thread_id __attribute__((tls_model("initial-exec")));
uint64_t thread_id();
// Makes the calling thread the heap's owner.
void claim(Heap &heap);
// Reports (CGC_ERR_MISUSE) a use of `heap`'s object `op` by `function` from a
// thread other than the heap's owner: true if it was such a use (refused).
bool foreign_thread_use(Heap &heap, const char *function, const cgc_object *op);
// Whether the calling thread may use the heap's objects (a heap is confined
// to the thread that made it current); reports the misuse if not.
inline bool owned_here(Heap &heap, const char *function, const cgc_object *op) {
    if (heap.owner == t_thread_id || heap.owner == 0) [[likely]]
        return true;
    return !foreign_thread_use(heap, function, op);
}
// owned_here() on a fast path: checked in the debug and asan builds only.
#if defined(CYCLEGC_DEBUG) && CYCLEGC_DEBUG >= 1
#define CYCLEGC_OWNED_HERE(heap, function, op) ::cyclegc::internal::owned_here(heap, function, op)
#else
#define CYCLEGC_OWNED_HERE(heap, function, op) true
#endif

inline void set_collection_due(Heap &heap, bool due) {
    std::atomic_ref(heap.collection_due).store(due, std::memory_order_relaxed);
}
inline Trashcan &trashcan_of(Heap &heap) { return heap.shared ? t_shared_trashcan : heap.trashcan; }

// ---- Shared heaps: attached threads, state lock, stop-the-world
// (stop_the_world.cpp) ----

// The shared heap the calling thread is attached to (null: none).
Heap *attached_heap();
// Attaches the calling thread to `heap` if it is shared, after detaching it
// from the shared heap it was attached to (null or a confined heap: detaches).
void attach_to(Heap *heap);
// Whether the calling thread is attached to `heap` and not detached.
bool attached_here(const Heap &heap);
// Reports (CGC_ERR_MISUSE) a use of shared heap `heap`'s object `op` by
// `function` from a thread not attached to the heap, or detached from it,
// and not collecting it: true if it was such a use (refused).
bool unattached_use(const Heap &heap, const char *function, const cgc_object *op);
// Parks the calling thread while another stops the world of `heap`.
void park(Heap &heap);
// park() inside deallocations that all destroy untracked objects (the
// caller has checked): a thread freeing a large structure does not hold up
// a stop until its end.
void park_in_release(Heap &heap);
// A safepoint: parks if a stop of a shared heap's world is requested.
void safepoint_slow(Heap &heap);
inline void safepoint(Heap &heap) {
    if (heap.shared) [[unlikely]] safepoint_slow(heap);
}
void lock_state(Heap &heap);
void unlock_state(Heap &heap);
// Holds a shared heap's state lock for a scope (nested scopes on one thread
// hold it once); nothing on a confined heap. Waiting for it is a safepoint.
class StateLock {
  public:
    explicit StateLock(Heap &heap) : heap_(heap.shared ? &heap : nullptr) {
        if (heap_) [[unlikely]] lock_state(*heap_);
    }
    StateLock(const StateLock &) = delete;
    StateLock &operator=(const StateLock &) = delete;
    ~StateLock() {
        if (heap_) [[unlikely]] unlock_state(*heap_);
    }

  private:
    Heap *heap_;
};
// How many threads other than the calling one are attached to `heap`.
int other_attached_threads(Heap &heap);
void delete_shared_heap(Heap *heap);
// Whether the calling thread stopped the world of `heap` (it collects).
bool stopped_by_this_thread(const Heap &heap);
// Stops the world of `heap` for the calling thread: false if it cannot
// (it holds the state lock, or is inside a deallocation while another
// thread stops it). restart_world undoes it. `give_way`: false also after
// parking through another thread's stop (an automatic collection: the
// other one collected, and the next slow allocation counts again).
bool stop_world(Heap &heap, bool give_way = false);
void restart_world(Heap &heap);
// Within a collection of a shared heap whose world this thread stopped:
// restarts the world so that other threads run while the collection's
// finalizers and weak-reference callbacks do (CPython's order: one may wait
// for another thread). False if it cannot (not attached, or inside a
// deallocation). stop_world_again stops it once they have run.
bool let_world_run(Heap &heap);
void stop_world_again(Heap &heap);
// The world of a shared heap stopped for a scope (nothing on a confined
// heap, or if the calling thread stopped it already): for the gc module's
// walks over every object, as CPython's free-threaded build does.
class StoppedWorld {
  public:
    explicit StoppedWorld(Heap &heap)
        : heap_(heap.shared && !stopped_by_this_thread(heap) && stop_world(heap) ? &heap : nullptr) {}
    StoppedWorld(const StoppedWorld &) = delete;
    StoppedWorld &operator=(const StoppedWorld &) = delete;
    ~StoppedWorld() {
        if (heap_) restart_world(*heap_);
    }

  private:
    Heap *heap_;
};
// Stops the world of `heap`, runs collect (or collect_automatic), restarts it.
cgc_ssize_t collect_stopped(Heap &heap, int generation, bool automatic);

// Records an error on the current heap and passes it to the error hook.
void report(cgc_error_kind kind, const char *format, ...) __attribute__((format(printf, 2, 3)));

// An internal invariant that a fast path relies on without testing it,
// checked in builds with CYCLEGC_DEBUG >= 1 (the debug and asan presets):
// a failure is reported as corruption and aborts.
[[noreturn]] void invariant_failed(const char *what, const char *file, int line);
#if defined(CYCLEGC_DEBUG) && CYCLEGC_DEBUG >= 1
#define CYCLEGC_INVARIANT(condition, what) \
    ((condition) ? (void)0 : ::cyclegc::internal::invariant_failed(what, __FILE__, __LINE__))
#else
#define CYCLEGC_INVARIANT(condition, what) ((void)sizeof(condition))  // (not evaluated)
#endif

inline const char *type_name(const cgc_type *type) {
    return type && type->tp_name ? type->tp_name : "<unnamed type>";
}
// Set when a message names a C++ type (CGC_TPFLAGS_CXX): report() then
// words it for the C++ API, and resets it.
extern constinit thread_local bool t_names_cxx_type;
inline const char *type_name_of(const cgc_object *op) {
    if (op->ob_type && (op->ob_type->tp_flags & CGC_TPFLAGS_CXX)) t_names_cxx_type = true;
    return type_name(op->ob_type);
}

// The object has a collector header: a GC type whose tp_is_gc (if any) agrees.
// Whether cgc_type_ready has finished with `type`. Another thread may be
// readying a static type at this moment (type.cpp): the acquire pairs with
// its release, so a ready type's slots are seen filled.
inline bool type_is_ready(cgc_type *type) {
    return (std::atomic_ref(type->tp_flags).load(std::memory_order_acquire) & CGC_TPFLAGS_READY) != 0;
}

inline bool has_gc_head(cgc_object *op) {
    cgc_type *type = op->ob_type;
    return (type->tp_flags & CGC_TPFLAGS_HAVE_GC) && (!type->tp_is_gc || type->tp_is_gc(op));
}

// Allocates an object of `type` (with a collector header if it is a GC
// type; untracked), reference count 1, zero-filled. `spare_item` adds one
// item past the end, as PyType_GenericAlloc does.
cgc_object *allocate_object(cgc_type *type, cgc_ssize_t nitems, const char *function,
                            bool spare_item = false);

void report_unraisable_exception(const char *what, cgc_object *op, const char *message) noexcept;

// Called before each allocation the library makes for itself (page, array
// growth): throws std::bad_alloc when fault injection says this one fails.
inline void note_internal_allocation(Heap &heap) {
    if (++heap.internal_allocations == heap.fail_allocation_at) {
        heap.fail_allocation_at = 0;
        throw std::bad_alloc();
    }
}
// push_back that counts the allocation it may make (and may fail by
// injection as well as for real).
template <typename Vector, typename Value>
[[gnu::always_inline]] inline void push_counted(Heap &heap, Vector &vector, Value value) {
    if (vector.size() == vector.capacity()) [[unlikely]]
        note_internal_allocation(heap);
    vector.push_back(value);
}
// reserve() for `count` more entries, counting the allocation it makes (as
// push_counted). Throws when out of memory, real or injected.
template <typename Vector>
void reserve_counted(Heap &heap, Vector &vector, size_t count) {
    if (vector.capacity() - vector.size() >= count) return;
    note_internal_allocation(heap);
    vector.reserve(vector.size() + count);
}

// Runs user code (a finalizer, tp_clear, a callback) from inside the
// collector: a C++ exception escaping it must not unwind through the
// collector, so it is reported as unraisable and swallowed.
template <typename Function>
void call_user_code(const char *what, cgc_object *op, Function function) noexcept {
    try {
        function();
    } catch (const std::exception &error) {
        report_unraisable_exception(what, op, error.what());
    } catch (...) {
        report_unraisable_exception(what, op, "unknown exception");
    }
}

// Writes one line to the heap's log sink (debug output).
void log_line(Heap &heap, const char *format, ...) __attribute__((format(printf, 2, 3)));

// Weak references during a collection (weakref.cpp), in two calls so that a
// shared heap's world can run between them. The first clears weak
// references to the unreachable objects and those that are themselves
// unreachable, and queues (holding a reference) the reachable ones that have
// a callback; the second runs the queued callbacks and returns how many weak
// reference objects the queue's release freed (counted as collected, as in
// CPython).
struct WeakRef;
void queue_weakref_callbacks(Heap &heap, const std::vector<cgc_object *> &unreachable,
                             std::vector<WeakRef *> &queue);
cgc_ssize_t run_weakref_callbacks(std::vector<WeakRef *> &queue);
// Clears, without callbacks, weak references to the unreachable objects
// (made by finalizers) and unreachable weak reference objects.
void clear_weakrefs_silently(Heap &heap, const std::vector<cgc_object *> &unreachable);
bool is_weakref(cgc_object *op);
// Unlinks a weak reference object from its referent (it becomes dead).
void detach_weakref(cgc_object *weakref);
// An untracked object moved (resized): its weak references follow it.
void move_weakrefs(Heap &heap, cgc_object *from, cgc_object *to);

bool free_gc_pointer(void *memory);
void track_slow(cgc_object *op);
// Freeing a slot that is not is_plain_allocated(): tracked, with weak
// references, or free already (refused: reported as misuse of `function`,
// naming `memory`, and the type of `op` if not null).
void raw_free_slow(Page *page, uint32_t index, void *memory, cgc_object *op, const char *function);
void untrack_slow(cgc_object *op);

// Tracking (tracking.cpp): the heap of the object's page keeps the lists
// (a shared heap's, for a page lent to a thread).
inline Heap &heap_of(const cgc_object *op) { return *page_heap(page_of(op))->home; }

// The common case of tracking: not tracked yet, room in generation 0's
// array. Updates `bits` (the object's GcMeta, see meta_bits) for the caller
// to store; false: take the slow path (which reports misuse). While a
// collection analyses the graph, generation 0's array is parked (see
// AnalysisPhase in collector.cpp) and has no room: tracking from tp_traverse
// takes the slow path, with no phase test here. `maybe_local`: false when
// the caller knows the heap is no shared heap's local heap (no call then).
inline bool try_track(Heap &heap, uint64_t &bits, cgc_object *op, bool maybe_local = true) {
    ObjectArray &young = heap.young[0];
    // (Tracked already, or a slot freed already: the slow path reports it.)
    if ((bits ^ meta_flag_bits(kAllocated)) & meta_flag_bits(kAllocated | kTracked)) return false;
    uint64_t word = young.size();  // generation 0, word = index
    if (word == young.capacity()) [[unlikely]] {
        // The array is full: the object goes unlisted if generation 0's
        // objects do already (Heap::young_unlisted), else the slow path
        // decides (or refuses: the array is parked during an analysis).
        if (!heap.young_unlisted[0]) return false;
        ++heap.young_unlisted[0];
        word = heap.unlisted_word;
        // (A local heap's: its next stop lists the object from its page.)
        if (maybe_local && heap.is_local()) heap.space.mark_fresh(page_of(op));
    } else {
        young.push_back(op);
    }
    if (bits == meta_flag_bits(kAllocated)) [[likely]] {
        // A slot as allocation left it: the new value is a constant and the
        // index, not a function of the loaded one, so the store need not
        // wait for that load (see untrack_newest).
        bits = meta_flag_bits(kAllocated | kTracked) | word;
        return true;
    }
    bits &= ~(kMetaWordBits | kMetaGenerationBits | meta_flag_bits(kCollecting | kReachable));
    bits |= meta_flag_bits(kTracked) | word;
    return true;
}
// try_track on the object's GcMeta. It is read and written whole, in one
// access each: each hot-path access to a GcMeta reads what one earlier
// store wrote (a load that spans two stores cannot be forwarded from them
// and waits for both to reach the cache).
inline bool track_fast(Page *page, GcMeta &meta, cgc_object *op) {
    uint64_t bits = meta_bits(meta);
    // An object of another heap than the thread's current one: the slow
    // path checks that the thread owns that heap.
    Heap *heap = page_heap(page);
    if (heap != t_current_heap || !try_track(*heap, bits, op)) return false;
    set_meta_bits(meta, bits);
    return true;
}

// The common case of untracking a tracked object: the newest young object
// (an object that dies soon after it was made), not part of a running
// collection. (During a collection's later phases generation 0 holds the
// objects tracked since it started, so the newest one may go the same way;
// during its analysis generation 0's array is parked and empty, so this
// fails and the callers' slow paths refuse.)
inline bool untrack_newest(Heap &heap, GcMeta &meta, cgc_object *op) {
    ObjectArray &young = heap.young[0];
    uint64_t bits = meta_bits(meta);
    if ((bits & (kMetaGenerationBits | meta_flag_bits(kCollecting | kUncollectable))) ||
        (bits & kMetaWordBits) + 1 != young.size())
        return false;
    // A tracked generation-0 object that is in no collection's set is at
    // its index in generation 0's array (during an analysis, which rewrites
    // indices, the array is parked and empty).
    CYCLEGC_INVARIANT(young.back() == op, "untrack_newest: generation 0's array and the object's index disagree");
    young.pop_back();
    if ((bits >> 32) == (kAllocated | kTracked)) [[likely]] {
        set_meta_bits(meta, meta_flag_bits(kAllocated) | young.size());
        return true;
    }
    set_meta_bits(meta, bits & ~meta_flag_bits(kTracked));
    return true;
}

// Untracks an object a thread tracked in its local heap (kPrivateYoung),
// in no list: false if it is not one.
inline bool untrack_private(GcMeta &meta) {
    uint64_t bits = meta_bits(meta);
    constexpr uint64_t kPlace = kMetaWordBits | kMetaGenerationBits | kMetaScheduleBits |
                                meta_flag_bits(kTracked | kCollecting | kUncollectable);
    if ((bits & kPlace) != (meta_flag_bits(kTracked) | kPrivateYoung)) return false;
    set_meta_bits(meta, bits & ~meta_flag_bits(kTracked));
    return true;
}
// untrack_private, or for an object in a page lent to the calling thread
// (`local`, its local heap) that survived a collection, which left it in no
// list (place_in_generation): unlisted in generation 1, or old. What the
// shared heap counts of them changes in the local heap (folded at the next
// stop: fold_local_changes): no lock. False: another object, or one that a
// collection holds (kCollecting, kUncollectable).
inline bool untrack_own(Heap &local, GcMeta &meta) {
    if (untrack_private(meta)) return true;
    uint64_t bits = meta_bits(meta);
    if (bits & meta_flag_bits(kCollecting | kUncollectable)) return false;
    uint64_t generation = bits & kMetaGenerationBits;
    if (generation == kMetaGeneration1 && (bits & kMetaWordBits) == kUnlisted) {
        ++local.young_unlisted[1];  // (untracked since the last stop)
    } else if (generation == kMetaGeneration2 && !(bits & kMetaIncrListed)) {
        local.long_lived_pending -= static_cast<cgc_ssize_t>((bits & kMetaPromotedPending) >> 56);
    } else {
        return false;
    }
    set_meta_bits(meta, bits & ~(meta_flag_bits(kTracked | kReachable) | kMetaScheduleBits));
    return true;
}

// The end of a C++ object's tp_clear during a collection's clear step:
// when the collector's hold is its last reference, it is untracked and
// destroyed at once (dealloc.cpp), as release_cxx_untracking would after a
// Py_DECREF, without that path's tests and second tp_clear. False (nothing
// done) otherwise: the caller drops its reference.
bool release_cleared_cxx(Heap &heap, cgc_object *op, GcMeta &meta);
// Runs the deallocations the trashcan deferred (at depth 0).
void run_deferred_deallocs(Trashcan &trashcan);

// Runs an untracked C++ object's destructor and frees it (its count 0), one
// level deeper in the heap's trashcan; what that level deferred runs after.
inline void destroy_cxx_in_trashcan(Heap &heap, cgc_object *op, cgc_destructor destroy_and_free) {
    Trashcan &trashcan = heap.trashcan;
    ++trashcan.depth;
    destroy_and_free(op);
    if (--trashcan.depth == 0 && trashcan.deferred) run_deferred_deallocs(trashcan);
}

// Puts a tracked object in generation `generation` (its lists).
void place_in_generation(Heap &heap, cgc_object *op, GcMeta &meta, int generation);
// Removes a tracked object from the young list or the unreachable list.
void remove_from_lists(Heap &heap, cgc_object *op, GcMeta &meta);

// Untracks a tracked object that untrack_newest() turned down: an old
// object (in no list) and a member of the running collection's unreachable
// set (cleared, it dies) inline, any other one through its list.
inline void untrack_not_newest(Heap &heap, GcMeta &meta, cgc_object *op) {
    uint64_t bits = meta_bits(meta);
    uint64_t lists = bits & meta_flag_bits(kCollecting | kUncollectable);
    if (!lists && (bits & kMetaGenerationBits) >= kMetaGeneration2) {
        // A promoted object that dies no longer counts toward the next full
        // collection (gh-122569: counting promotions alone repeats full
        // collections that find nothing).
        heap.long_lived_pending -= static_cast<cgc_ssize_t>((bits & kMetaPromotedPending) >> 56);
        if (bits & kMetaIncrListed) [[unlikely]]
            forget_listed(heap, op, static_cast<uint32_t>(bits));
        set_meta_bits(meta, bits & ~(meta_flag_bits(kTracked | kReachable) | kMetaScheduleBits));
        return;
    }
    auto index = static_cast<uint32_t>(bits & kMetaWordBits);
    if (lists == meta_flag_bits(kCollecting) && index < heap.unreachable.size() && heap.unreachable[index] == op) {
        heap.unreachable[index] = nullptr;
        set_meta_bits(meta, bits & ~meta_flag_bits(kTracked | kCollecting | kReachable));
        return;
    }
    remove_from_lists(heap, op, meta);
}

// Untracks a tracked object (not from inside tp_traverse, which the callers
// have ruled out).
inline void untrack_tracked(Heap &heap, GcMeta &meta, cgc_object *op) {
    if (!untrack_newest(heap, meta, op)) untrack_not_newest(heap, meta, op);
}

// Frees an untracked GC object's slot: it no longer counts toward
// generation 0's allocations.
inline void free_slot(Heap &heap, Page *page, uint32_t index) {
    Generation &young = heap.generations[0];
    // (A plain store, relaxed-atomic as in fast_page.)
    if (young.count > 0) std::atomic_ref(young.count).store(young.count - 1, std::memory_order_relaxed);
    heap.space.release_at(page, index);
}
// free_slot from a slow path, `heap` being the page's (home) heap, whose
// state lock the caller holds: a page lent to another thread gets the slot
// on its remote list (local_heaps.cpp). `counted`: the slot counted as an
// allocation (else resized away).
void release_slot(Heap &heap, Page *page, uint32_t index, bool counted = true);

// cyclegc holds a reference to the object while user code (its finalizer,
// its tp_clear) runs: a Py_DECREF too many meanwhile is refused (see
// cgc_dealloc). Returns whether it was held already, for let_go().
inline bool hold(GcMeta &meta) {
    bool nested = meta.flags & kHeld;
    meta.flags |= kHeld;
    return nested;
}
inline void let_go(GcMeta &meta, bool nested) {
    if (!nested) meta.flags = static_cast<uint8_t>(meta.flags & ~kHeld);
}

// Checks the whole heap between collections (validate.cpp): every page's
// slot accounting and free list, every tracked object in exactly one
// generation. A failure is reported as corruption and aborts. Run after
// every collection when CYCLEGC_DEBUG >= 2.
void validate_heap(Heap &heap, const char *when);

// Collector entry points (collector.cpp). `incremental_final`: the final
// step of the incremental cycle (generation 2), on its gathered set.
// The final step may leave its garbage to the cycle's clear step.
cgc_ssize_t collect(Heap &heap, int generation, bool incremental_final = false);
cgc_ssize_t collect_automatic(Heap &heap);
// The incremental cycle's clear step: clears its garbage until `deadline`
// (on the pause clock, read through `clock`; 0: to the end), visiting at
// least `least` entries. Returns true when it ended (the collection
// reported, the cycle over).
bool clear_garbage_slice(Heap &heap, SliceClock &clock, uint64_t deadline, uint64_t least);
// The adaptive schedule's decision after an automatic collection of
// `generation` that examined `examined` objects, freed `collected` and took
// `ns`.
void adapt_schedule(Heap &heap, int generation, uint64_t examined, uint64_t collected, uint64_t ns);
// Whether generation g (> 0) is due: its count is over its effective threshold.
bool generation_due(const Heap &heap, int g);
// With a pause budget: whether generation 2 is due, its count weighed by the
// allocations the young collections it counts would span without the budget.
bool cycle_due(const Heap &heap);
// Called when a GC object is allocated: counts it, may collect.
void note_gc_allocation(Heap &heap);
// A slot of `size` bytes from the heap's pages, counted as an allocation
// (note_gc_allocation) first (null: out of memory).
void *allocate_counted(Heap &heap, size_t size);

}  // namespace cyclegc::internal
