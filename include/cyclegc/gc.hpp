// The gc module's functions in C++ (see docs/gc.md for the full table).
#ifndef CYCLEGC_GC_HPP
#define CYCLEGC_GC_HPP

#include "detail/callable_box.hpp"
#include "weak.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace cyclegc {

using collection_info = cgc_collection_info;
using generation_stats = cgc_generation_stats;

// Runs a collection of `generation` (2: full) even if automatic collection
// is disabled; returns the number of unreachable objects found.
inline cgc_ssize_t collect(int generation = 2) {
    cgc_ssize_t found = cgc_collect(generation);
    if (found < 0) throw std::invalid_argument("cyclegc::collect: invalid generation");
    return found;
}
inline bool enable() noexcept { return cgc_enable() != 0; }
inline bool disable() noexcept { return cgc_disable() != 0; }
inline bool is_enabled() noexcept { return cgc_is_enabled() != 0; }
inline cgc_ssize_t get_count(int generation) noexcept { return cgc_get_count(generation); }
inline cgc_ssize_t get_threshold(int generation) noexcept { return cgc_get_threshold(generation); }
inline void set_threshold(cgc_ssize_t t0, cgc_ssize_t t1 = -1, cgc_ssize_t t2 = -1) noexcept {
    cgc_set_threshold(0, t0);
    if (t1 >= 0) cgc_set_threshold(1, t1);
    if (t2 >= 0) cgc_set_threshold(2, t2);
}
inline generation_stats get_stats(int generation) noexcept {
    generation_stats stats{};
    cgc_get_stats(generation, &stats);
    return stats;
}
// Incremental collection (docs/gc.md): a positive budget makes automatic
// full collections run in slices of about that long; zero (the default) keeps
// them stop-the-world.
inline void set_pause_budget(std::chrono::nanoseconds budget) noexcept {
    cgc_set_pause_budget(budget.count() > 0 ? static_cast<uint64_t>(budget.count()) : 0);
}
inline std::chrono::nanoseconds get_pause_budget() noexcept {
    return std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(cgc_get_pause_budget()));
}
// About `budget` of incremental collection work now (zero: until the cycle
// ends); true if a cycle finished. Throws std::logic_error during a collection.
inline bool collect_slice(std::chrono::nanoseconds budget) {
    int status = cgc_collect_slice(budget.count() > 0 ? static_cast<uint64_t>(budget.count()) : 0);
    if (status < 0) throw std::logic_error("cyclegc::collect_slice: called during a collection");
    return status == 1;
}
// Every collection's and every slice's pause: count, total, max and
// percentiles read from a histogram (within 12.5% above the true value).
using pause_stats = cgc_pause_stats;
inline pause_stats get_pause_stats() noexcept {
    pause_stats stats{};
    cgc_get_pause_stats(&stats);
    return stats;
}
inline void reset_pause_stats() noexcept { cgc_reset_pause_stats(); }
inline void set_debug(int flags) noexcept { cgc_set_debug(flags); }
inline int get_debug() noexcept { return cgc_get_debug(); }
inline void freeze() noexcept { cgc_freeze(); }
inline void unfreeze() noexcept { cgc_unfreeze(); }
inline cgc_ssize_t get_freeze_count() noexcept { return cgc_get_freeze_count(); }

template <class T>
bool is_tracked(const ref<T> &r) noexcept {
    return r && cgc_gc_is_tracked(detail::header(r.get()));
}
template <class T>
bool is_finalized(const ref<T> &r) noexcept {
    return r && cgc_gc_is_finalized(detail::header(r.get()));
}

namespace detail {

inline std::vector<ref<cgc_object>> adopt_list(int status, cgc_object_list &list) {
    if (status < 0) throw std::runtime_error(cgc_error_message());
    std::vector<ref<cgc_object>> result;
    result.reserve(static_cast<size_t>(list.count));
    for (cgc_ssize_t i = 0; i < list.count; ++i) result.push_back(ref<cgc_object>::borrow(list.items[i]));
    cgc_object_list_release(&list);
    return result;
}

inline std::vector<cgc_object *> headers(std::span<const ref<cgc_object>> objects) {
    std::vector<cgc_object *> result;
    for (auto &r : objects) result.push_back(r.get());
    return result;
}

}  // namespace detail

// Tracked objects of one generation, or of all (-1).
inline std::vector<ref<cgc_object>> get_objects(int generation = -1) {
    cgc_object_list list{};
    int status = cgc_get_objects(generation, &list);
    return detail::adopt_list(status, list);
}
inline std::vector<ref<cgc_object>> get_referrers(std::span<const ref<cgc_object>> objects) {
    cgc_object_list list{};
    auto items = detail::headers(objects);
    int status = cgc_get_referrers(items.data(), static_cast<cgc_ssize_t>(items.size()), &list);
    return detail::adopt_list(status, list);
}
inline std::vector<ref<cgc_object>> get_referents(std::span<const ref<cgc_object>> objects) {
    cgc_object_list list{};
    auto items = detail::headers(objects);
    int status = cgc_get_referents(items.data(), static_cast<cgc_ssize_t>(items.size()), &list);
    return detail::adopt_list(status, list);
}
inline std::vector<ref<cgc_object>> garbage() {
    cgc_object_list list{};
    int status = cgc_get_garbage(&list);
    return detail::adopt_list(status, list);
}
inline void clear_garbage() noexcept { cgc_garbage_clear(); }

// A collection callback (gc.callbacks): called with "start" and "stop".
// Removed when the returned handle is destroyed.
using collection_callback = std::function<void(std::string_view phase, const collection_info &info)>;

// Owns one registered collection callback, on the heap that was current
// when it was added (it must be destroyed before that heap). A callback may
// remove itself or any other while it runs: a removed callback is never
// called again, and one that is running is freed when it returns.
class callback_handle {
    using box = detail::callable_box<collection_callback>;

  public:
    callback_handle() = default;
    explicit callback_handle(collection_callback callback)
        : box_(new box(std::move(callback))), heap_(cgc_heap_current()) {
        if (cgc_add_collection_callback(run, box_) < 0) {
            delete std::exchange(box_, nullptr);
            throw std::bad_alloc();
        }
    }
    callback_handle(callback_handle &&other) noexcept
        : box_(std::exchange(other.box_, nullptr)), heap_(other.heap_) {}
    callback_handle &operator=(callback_handle &&other) noexcept {
        if (this != &other) {
            remove();
            box_ = std::exchange(other.box_, nullptr);
            heap_ = other.heap_;
        }
        return *this;
    }
    ~callback_handle() { remove(); }

    void remove() noexcept {
        box *registered = std::exchange(box_, nullptr);
        if (!registered) return;
        cgc_heap *current = cgc_heap_current();
        cgc_heap_set_current(heap_);
        cgc_remove_collection_callback(run, registered);
        cgc_heap_set_current(current);
        box::retire(registered);
    }

  private:
    static void run(const char *phase, const cgc_collection_info *info, void *context) {
        try {
            static_cast<box *>(context)->call(phase, *info);
        } catch (...) {
            detail::report_exception("collection callback", nullptr);
        }
    }

    box *box_ = nullptr;
    cgc_heap *heap_ = nullptr;
};

[[nodiscard]] inline callback_handle add_collection_callback(collection_callback callback) {
    return callback_handle(std::move(callback));
}

// Where exceptions from finalizers and callbacks go (they never escape a
// collection). The default prints "cyclegc: Exception ignored in: ..." to
// stderr.
using unraisable_hook = std::function<void(std::string_view message, cgc_object *object)>;
// Where every error the library reports goes (cgc_set_error_hook); the
// default prints "cyclegc: <message>" to stderr.
using error_hook = std::function<void(cgc_error_kind kind, std::string_view message)>;
// Where debug output (set_debug) goes, one line at a time; the default is
// stderr.
using log_sink = std::function<void(std::string_view line)>;

namespace detail {

template <class F>
using hook_box = callable_box<F>;

// Installs `callable` on the current heap through the C setter (an empty
// one restores the default), then frees the callable of the C++ hook it
// replaces, at once or, if that one is running (a hook may replace
// itself), when it returns. An exception from a hook has nowhere to go.
template <class F, class Hook>
void install_hook(F callable, Hook trampoline, Hook (*get)(void **), Hook (*set)(Hook, void *)) {
    void *previous_context = nullptr;
    Hook previous = get(&previous_context);
    auto *installed = callable ? new hook_box<F>(std::move(callable)) : nullptr;
    set(installed ? trampoline : nullptr, installed);
    if (previous == trampoline) hook_box<F>::retire(static_cast<hook_box<F> *>(previous_context));
}

inline void run_unraisable_hook(const char *message, cgc_object *object, void *context) {
    try {
        static_cast<hook_box<unraisable_hook> *>(context)->call(message, object);
    } catch (...) {
    }
}
inline void run_error_hook(cgc_error_kind kind, const char *message, void *context) {
    try {
        static_cast<hook_box<error_hook> *>(context)->call(kind, message);
    } catch (...) {
    }
}
inline void run_log_sink(const char *line, void *context) {
    try {
        static_cast<hook_box<log_sink> *>(context)->call(line);
    } catch (...) {
    }
}

}  // namespace detail

// Each applies to the current heap; an empty function restores the
// default. A hook may replace or reset itself while it runs: its captures
// live until it returns.
inline void set_unraisable_hook(unraisable_hook hook) {
    detail::install_hook(std::move(hook), &detail::run_unraisable_hook, cgc_get_unraisable_hook,
                         cgc_set_unraisable_hook);
}
inline void set_error_hook(error_hook hook) {
    detail::install_hook(std::move(hook), &detail::run_error_hook, cgc_get_error_hook, cgc_set_error_hook);
}
inline void set_log_sink(log_sink sink) {
    detail::install_hook(std::move(sink), &detail::run_log_sink, cgc_get_log_sink, cgc_set_log_sink);
}

}  // namespace cyclegc

#endif
