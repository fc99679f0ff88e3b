// Heaps, the current heap of each thread, error reporting, and the
// collector's settings (enable, thresholds, statistics).
#include "arena.hpp"
#include "heap.hpp"
#include "shared_heap.hpp"

#include "diagnostics/leak_report.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include <unistd.h>

namespace cyclegc::internal {

void note_page_allocation(Heap &heap) { note_internal_allocation(heap); }

Heap::Heap() {
    note_heap_made(this);
    for (int g = 0; g < CGC_NUM_GENERATIONS; ++g) set_threshold(g, kDefaultThresholds[g]);
    // Tests: a small cap, past which young objects go unlisted whatever the
    // size of the heap, makes them take the unlisted paths with few objects
    // (the arrays then grow from that size, so that they fill up there).
    // Incremental full collections from the start (docs/gc.md): the test
    // suites run again with a budget.
    if (const char *budget = std::getenv("CYCLEGC_PAUSE_BUDGET_NS"))
        incremental.budget_ns = std::strtoull(budget, nullptr, 10);
    if (const char *clock = std::getenv("CYCLEGC_PAUSE_CLOCK"))
        pause_clock_thread_cpu = std::string_view(clock) == "thread";
    if (const char *cap = std::getenv("CYCLEGC_YOUNG_LIST_CAP")) {
        young_list_cap = std::strtoull(cap, nullptr, 10);
        unlist_whatever_the_heap = true;
        if (young_list_cap < 1024)
            for (ObjectArray &young_array : young) young_array.set_first_capacity(young_list_cap);
    }
}

Heap::~Heap() {
    note_heap_gone(this);
    delete shared;
}

namespace {

Heap &default_heap() {
    // Constructed on first use and never destroyed: objects may outlive
    // static destructors (a C++ global holding a reference).
    static Heap *heap = new Heap();
    return *heap;
}

void print_to_stderr(cgc_error_kind, const char *message, void *) {
    std::fprintf(stderr, "cyclegc: %s\n", message);
}

// As CPython at exit: uncollectable objects left in the garbage list are
// announced (listed with DEBUG_UNCOLLECTABLE), unless DEBUG_SAVEALL put
// them there on purpose.
void report_garbage_at_shutdown(Heap &heap) {
    if (heap.garbage.empty() || (heap.debug_flags & CGC_DEBUG_SAVEALL)) return;
    if (heap.debug_flags & CGC_DEBUG_UNCOLLECTABLE) {
        log_line(heap, "ResourceWarning: gc: %zu uncollectable objects at shutdown", heap.garbage.size());
        for (cgc_object *op : heap.garbage)
            log_line(heap, "gc: uncollectable <%s %p>", type_name_of(op), static_cast<void *>(op));
    } else {
        log_line(heap, "ResourceWarning: gc: %zu uncollectable objects at shutdown; use "
                 "cgc_set_debug(CGC_DEBUG_UNCOLLECTABLE) to list them", heap.garbage.size());
    }
}

}  // namespace

// initial-exec: a plain %fs-relative load, not a __tls_get_addr call.
constinit thread_local Heap *t_current_heap __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local uint64_t t_thread_id __attribute__((tls_model("initial-exec"))) = 0;

uint64_t thread_id() {
    static std::atomic<uint64_t> last{0};
    if (!t_thread_id) t_thread_id = last.fetch_add(1, std::memory_order_relaxed) + 1;
    return t_thread_id;
}

void claim(Heap &heap) {
    if (heap.is_shared()) return;  // (any attached thread may use it)
    heap.owner = thread_id();
    heap.owner_tid = static_cast<long>(gettid());
}

bool foreign_thread_use(Heap &heap, const char *function, const cgc_object *op) {
    if (heap.owner == thread_id()) return false;  // (the thread had no number yet)
    report(CGC_ERR_MISUSE,
           "%s: object %p of type '%s' belongs to a heap confined to thread %ld, but thread %ld "
           "used it; a heap's objects may only be used by the thread that made the heap current "
           "(cgc_heap_set_current); refused", function, static_cast<const void *>(op),
           op ? type_name_of(op) : "<none>", heap.owner_tid, static_cast<long>(gettid()));
    return true;
}

namespace {

// The heap a thread gets when it uses cyclegc without choosing one: the
// process's default heap for the first such thread, a heap of its own for
// every other (two threads on one heap would race on its counts and lists).
// At the thread's exit its own heap is finalized, and deleted if no object
// in it outlives the thread; else it is kept for them, owned by no thread.
struct ThreadHome {
    Heap *heap = nullptr;
    bool own = false;  // made for this thread (not the default heap)

    ~ThreadHome() {
        if (!own) return;
        Heap *home = heap;
        heap = nullptr;
        t_current_heap = home;
        cgc_finalize();
        if (home->space.live_objects() == 0) {
            t_current_heap = nullptr;
            delete home;
        } else {
            home->owner = 0;
        }
    }
};
thread_local ThreadHome t_home;

}  // namespace

Heap &current_heap_slow() {
    if (Heap *shared = attached_heap()) return *shared;  // (t_current_heap stays null: see heap.hpp)
    ThreadHome &home = t_home;
    if (!home.heap) {
        static std::atomic<bool> default_taken{false};
        if (!default_taken.exchange(true)) {
            home.heap = &default_heap();
        } else {
            home.heap = new (std::nothrow) Heap();
            if (!home.heap) {
                std::fprintf(stderr, "cyclegc: out of memory for the heap of a new thread\n");
                std::abort();
            }
            home.own = true;
        }
    }
    claim(*home.heap);
    t_current_heap = home.heap;
    return *home.heap;
}

// cgc_heap_delete of a shared heap: refused while other threads are
// attached; else finalized with the calling thread attached, which then
// returns to the heap it had.
void delete_shared_heap(Heap *heap) {
    if (int others = other_attached_threads(*heap)) {
        report(CGC_ERR_MISUSE, "cgc_heap_delete: %d other thread(s) are still attached to the shared heap; "
                               "not deleted (each must choose another heap or exit first)", others);
        return;
    }
    Heap *previous_shared = attached_heap();
    Heap *previous_confined = previous_shared ? nullptr : t_current_heap;
    attach_to(heap);
    cgc_finalize();
    attach_to(previous_shared == heap ? nullptr : previous_shared);
    bool empty = heap->space.live_objects() == 0;  // (its local heaps taken back)
    if (!attached_heap()) t_current_heap = previous_confined;
    if (!empty) {
        report(CGC_ERR_MISUSE, "cgc_heap_delete: the shared heap still has live GC objects; its state is kept "
                               "(leaked) so that they stay valid");
        return;
    }
    delete heap;
}

void invariant_failed(const char *what, const char *file, int line) {
    report(CGC_ERR_CORRUPTION, "cyclegc internal invariant broken at %s:%d: %s", file, line, what);
    std::abort();
}

constinit thread_local bool t_names_cxx_type __attribute__((tls_model("initial-exec"))) = false;

namespace {

// The C API's words, and what a user of the C++ API wrote instead (the
// longer phrases first: they are replaced before their parts).
constexpr std::pair<std::string_view, std::string_view> kCxxTerms[] = {
    {"a tp_traverse visits a reference it does not own (or one twice), or a Py_INCREF is missing",
     "a trace() names a reference it does not own, or names one twice"},
    {"a tp_traverse visits a reference it does not own, or a Py_INCREF is missing",
     "a trace() names a reference it does not own, or names one twice"},
    {"its tp_dealloc did not untrack it, or a Py_DECREF is too many",
     "a reference to it was dropped once too often (ref<T>::adopt of a pointer the caller did not own?)"},
    {"a Py_DECREF without a matching Py_INCREF",
     "a reference dropped that was never taken (ref<T>::adopt of a pointer the caller did not own?)"},
    {"a Py_DECREF too many", "a reference dropped once too often"},
    {"Py_DECREF: ", "cyclegc::ref: "},
    {"tp_clear or finalizer", "finalize() or trace() (clearing)"},
    {"finalizer or tp_clear", "finalize() or trace() (clearing)"},
    {"its own finalizer", "its own finalize()"},
    {"tp_traverse", "trace()"},
    {"tp_clear", "trace() (clearing)"},
};

// Rewrites a message about a C++ object in the C++ API's terms.
void word_for_cxx(char *buffer, size_t size) {
    std::string text = buffer;
    for (auto [c_term, cxx_term] : kCxxTerms)
        for (size_t at = text.find(c_term); at != std::string::npos; at = text.find(c_term, at + cxx_term.size()))
            text.replace(at, c_term.size(), cxx_term);
    std::snprintf(buffer, size, "%s", text.c_str());
}

}  // namespace

ErrorState &error_state(Heap &heap) {
    if (!heap.shared) return heap.error;
    static thread_local ErrorState t_error;
    return t_error;
}

void report(cgc_error_kind kind, const char *format, ...) {
    Heap &heap = current_heap();
    char buffer[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    if (t_names_cxx_type) {
        t_names_cxx_type = false;
        try {
            word_for_cxx(buffer, sizeof buffer);
        } catch (...) {
        }
    }
    ErrorState &error = error_state(heap);
    error.kind = kind;
    error.message = buffer;
    if (kind >= 0 && kind <= CGC_ERR_UNRAISABLE)
        std::atomic_ref(heap.error_counts[kind]).fetch_add(1, std::memory_order_relaxed);
    cgc_error_hook hook = heap.error_hook ? heap.error_hook : print_to_stderr;
    hook(kind, buffer, heap.error_hook_context);
}

}  // namespace cyclegc::internal

using namespace cyclegc::internal;

extern "C" {

cgc_error_kind cgc_error_occurred(void) { return error_state(current_heap()).kind; }

const char *cgc_error_message(void) { return error_state(current_heap()).message.c_str(); }

void cgc_error_clear(void) {
    ErrorState &error = error_state(current_heap());
    error.kind = CGC_ERR_NONE;
    error.message.clear();
}

void cgc_error_set(cgc_error_kind kind, const char *message) { report(kind, "%s", message); }

cgc_error_hook cgc_set_error_hook(cgc_error_hook hook, void *context) {
    Heap &heap = current_heap();
    cgc_error_hook previous = heap.error_hook ? heap.error_hook : print_to_stderr;
    heap.error_hook = hook;
    heap.error_hook_context = context;
    return previous;
}

uint64_t cgc_error_count(cgc_error_kind kind) {
    if (kind < 0 || kind > CGC_ERR_UNRAISABLE) return 0;
    return std::atomic_ref(current_heap().error_counts[kind]).load(std::memory_order_relaxed);
}

cgc_error_hook cgc_get_error_hook(void **context) {
    Heap &heap = current_heap();
    if (context) *context = heap.error_hook_context;
    return heap.error_hook ? heap.error_hook : print_to_stderr;
}

cgc_heap *cgc_heap_new(void) {
    Heap *heap = new (std::nothrow) Heap();
    return reinterpret_cast<cgc_heap *>(heap);
}

void cgc_heap_delete(cgc_heap *handle) {
    if (!handle) return;
    Heap *heap = reinterpret_cast<Heap *>(handle);
    if (heap == &default_heap()) {
        report(CGC_ERR_MISUSE, "cgc_heap_delete: the default heap cannot be deleted");
        return;
    }
    if (heap->shared) {
        delete_shared_heap(heap);
        return;
    }
    Heap *previous = t_current_heap;  // (a local heap if the thread is attached)
    t_current_heap = heap;
    claim(*heap);  // (deleting it is the last use: this thread's)
    cgc_finalize();
    bool empty = heap->space.live_objects() == 0;
    t_current_heap = previous == heap ? nullptr : previous;
    if (!empty) {
        // Live objects sit in this heap's pages: keep the heap rather than
        // leave them dangling.
        report(CGC_ERR_MISUSE, "cgc_heap_delete: the heap still has live tracked objects (or other live GC objects); "
                               "its state is kept (leaked) so that they stay valid");
        return;
    }
    delete heap;
}

cgc_heap *cgc_heap_new_shared(void) {
    Heap *heap = new (std::nothrow) Heap();
    if (!heap) return nullptr;
    heap->shared = new (std::nothrow) SharedHeap();
    if (!heap->shared) {
        delete heap;
        return nullptr;
    }
    return reinterpret_cast<cgc_heap *>(heap);
}

int cgc_heap_is_shared(cgc_heap *handle) {
    return handle && reinterpret_cast<Heap *>(handle)->is_shared() ? 1 : 0;
}

cgc_heap *cgc_heap_current(void) { return reinterpret_cast<cgc_heap *>(&current_heap()); }

void cgc_heap_set_current(cgc_heap *handle) {
    Heap *heap = reinterpret_cast<Heap *>(handle);
    attach_to(heap);  // (a shared heap: attached, its local heap current; else detached from one)
    if (heap && heap->shared) return;
    if (!heap) {
        t_current_heap = nullptr;  // the thread's own heap on next use
        return;
    }
    claim(*heap);
    t_current_heap = heap;
}

int cgc_enable(void) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    int previous = heap.enabled;
    heap.set_enabled(true);
    return previous;
}

int cgc_disable(void) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    int previous = heap.enabled;
    heap.set_enabled(false);
    return previous;
}

int cgc_is_enabled(void) { return current_heap().enabled; }

int cgc_is_collecting(void) { return current_heap().collecting(); }

void cgc_set_threshold(int generation, cgc_ssize_t threshold) {
    if (generation < 0 || generation >= CGC_NUM_GENERATIONS || threshold < 0) {
        report(CGC_ERR_VALUE, "cgc_set_threshold: generation %d / threshold %td out of range",
               generation, threshold);
        return;
    }
    Heap &heap = current_heap();
    StateLock guard(heap);
    // The user's thresholds are honoured exactly, as CPython's.
    heap.adaptive = false;
    heap.shift[0] = heap.shift[1] = heap.young_shift_floor = 0;
    heap.unbudgeted_shift[0] = heap.unbudgeted_shift[1] = heap.unbudgeted_shift_floor = 0;
    heap.set_threshold(generation, threshold);
}

cgc_ssize_t cgc_get_threshold(int generation) {
    if (generation < 0 || generation >= CGC_NUM_GENERATIONS) return -1;
    Heap &heap = current_heap();
    StateLock guard(heap);
    return heap.requested_threshold(generation);
}

cgc_ssize_t cgc_get_count(int generation) {
    if (generation < 0 || generation >= CGC_NUM_GENERATIONS) return -1;
    Heap &heap = current_heap();
    StateLock guard(heap);
    return heap.generations[generation].count;
}

void cgc_get_stats(int generation, cgc_generation_stats *out) {
    if (!out) return;
    if (generation < 0 || generation >= CGC_NUM_GENERATIONS) {
        *out = cgc_generation_stats{};
        return;
    }
    Heap &heap = current_heap();
    StateLock guard(heap);
    *out = heap.generations[generation].stats;
}

void cgc_set_auto_mode(cgc_auto_mode mode) {
    Heap &heap = current_heap();
    StateLock guard(heap);
    heap.auto_mode = mode;
}

cgc_ssize_t cgc_safepoint(void) {
    Heap &heap = current_heap();
    if (heap.shared) {
        safepoint(heap);
        // (Read unlocked first: a loop that calls this often takes no lock.)
        if (!std::atomic_ref(heap.collection_due).load(std::memory_order_relaxed)) return 0;
        bool due;
        {
            StateLock guard(heap);
            due = heap.collection_due && !heap.collecting();
        }
        return due ? collect_stopped(heap, 0, true) : 0;
    }
    if (!heap.collection_due || heap.collecting()) return 0;
    return collect_automatic(heap);
}

cgc_ssize_t cgc_collect(int generation) {
    if (generation < 0 || generation >= CGC_NUM_GENERATIONS) {
        report(CGC_ERR_VALUE, "cgc_collect: invalid generation %d (expected 0..%d)", generation,
               CGC_NUM_GENERATIONS - 1);
        return -1;
    }
    return collect(current_heap(), generation);
}

cgc_ssize_t cgc_collect_if_enabled(void) {
    Heap &heap = current_heap();
    if (!heap.enabled || heap.collecting()) return 0;
    return collect(heap, CGC_NUM_GENERATIONS - 1);
}

uint64_t cgc_debug_fail_allocations(uint64_t nth) {
    Heap &heap = current_heap();
    heap.fail_allocation_at = nth ? heap.internal_allocations + nth : 0;
    return heap.internal_allocations;
}

void cgc_initialize(void) { (void)current_heap(); }

size_t cgc_release_free_memory(void) { return Arena::instance().release_retained(); }

int cgc_finalize(void) {
    Heap &heap = current_heap();
    if (heap.collecting()) {
        report(CGC_ERR_MISUSE, "cgc_finalize (Py_FinalizeEx): called during a collection");
        return -1;
    }
    // Finalizers run by one collection may release more cycles: repeat
    // while collections find garbage (bounded, in case a finalizer keeps
    // creating new garbage).
    heap.finalizing = true;
    for (int round = 0; round < 16; ++round) {
        if (collect(heap, CGC_NUM_GENERATIONS - 1) == 0) break;
    }
    heap.finalizing = false;
    report_garbage_at_shutdown(heap);
    diag::report_leaks_at_shutdown(heap);
    return 0;
}

}  // extern "C"
