// The gc module's functions in C++ (see docs/gc.md for the full table).
#ifndef CYCLEGC_DETAIL_GC_HPP
#define CYCLEGC_DETAIL_GC_HPP

#include "weak.hpp"

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

class callback_handle {
  public:
    callback_handle() = default;
    explicit callback_handle(collection_callback callback)
        : callback_(std::make_unique<collection_callback>(std::move(callback))) {
        if (cgc_add_collection_callback(run, callback_.get()) < 0) throw std::bad_alloc();
    }
    callback_handle(callback_handle &&) noexcept = default;
    callback_handle &operator=(callback_handle &&other) noexcept {
        remove();
        callback_ = std::move(other.callback_);
        return *this;
    }
    ~callback_handle() { remove(); }
    void remove() noexcept {
        if (callback_) cgc_remove_collection_callback(run, callback_.get());
        callback_.reset();
    }

  private:
    static void run(const char *phase, const cgc_collection_info *info, void *context) {
        try {
            (*static_cast<collection_callback *>(context))(phase, *info);
        } catch (...) {
            detail::report_exception("collection callback", nullptr);
        }
    }
    std::unique_ptr<collection_callback> callback_;
};

[[nodiscard]] inline callback_handle add_collection_callback(collection_callback callback) {
    return callback_handle(std::move(callback));
}

// Where exceptions from finalizers and callbacks go (they never escape a
// collection). The default prints "cyclegc: Exception ignored in: ..." to
// stderr. An empty function restores the default.
using unraisable_hook = std::function<void(std::string_view message, cgc_object *object)>;

inline void set_unraisable_hook(unraisable_hook hook) {
    static unraisable_hook installed;
    installed = std::move(hook);
    if (!installed) {
        cgc_set_unraisable_hook(nullptr, nullptr);
        return;
    }
    cgc_set_unraisable_hook(
        [](const char *message, cgc_object *object, void *context) {
            try {
                (*static_cast<unraisable_hook *>(context))(message, object);
            } catch (...) {
            }
        },
        &installed);
}

}  // namespace cyclegc

#endif
