// cyclegc's diagnostics in C++: census and growth, who holds an object,
// leak reports, a leak-check scope for tests. See docs/diagnostics.md and
// <cyclegc/diagnostics.h>, which these wrap.
//
//     TEST(Widgets, CloseReleasesEverything) {
//         cyclegc::diag::leak_check scope([](const std::string &report) { ADD_FAILURE() << report; });
//         ...   // objects made here must be gone when `scope` ends
//     }
#ifndef CYCLEGC_DIAGNOSTICS_HPP
#define CYCLEGC_DIAGNOSTICS_HPP

#include <cyclegc/cyclegc.hpp>
#include <cyclegc/diagnostics.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cyclegc::diag {

struct type_stats {
    std::string type_name;
    cgc_type *type;
    cgc_ssize_t count, bytes;                // live tracked objects of the type, their bytes
    cgc_ssize_t count_change, bytes_change;  // growth(): since its previous call
};

struct link {
    cgc_object *object;  // borrowed
    std::string type_name;
    cgc_ssize_t refcount, external;  // external: references from outside the tracked objects
};

namespace detail {

inline void throw_last_error() { throw std::runtime_error(cgc_error_message()); }

inline std::vector<type_stats> adopt(int status, cgc_diag_type_list &list) {
    if (status < 0) throw_last_error();
    std::vector<type_stats> lines;
    for (cgc_ssize_t i = 0; i < list.count; ++i) {
        const cgc_diag_type_stats &s = list.types[i];
        lines.push_back({s.type_name, s.type, s.count, s.bytes, s.count_change, s.bytes_change});
    }
    cgc_diag_census_release(&list);
    return lines;
}

inline std::vector<link> adopt(int status, cgc_diag_chain &chain) {
    if (status < 0) throw_last_error();
    std::vector<link> links;
    for (cgc_ssize_t i = 0; i < chain.length; ++i) {
        const cgc_diag_link &l = chain.links[i];
        links.push_back({l.object, l.type_name, l.refcount, l.external});
    }
    cgc_diag_chain_release(&chain);
    return links;
}

inline std::string adopt(char *text) {
    std::string copy = text ? text : "";
    cgc_diag_text_release(text);
    return copy;
}

inline cgc_object *header_of(cgc_object *op) noexcept { return op; }
template <class T>
cgc_object *header_of(const ref<T> &r) noexcept {
    return r ? cyclegc::detail::header(r.get()) : nullptr;
}

}  // namespace detail

// Live tracked objects by type, most numerous first. Throws std::runtime_error.
inline std::vector<type_stats> census() {
    cgc_diag_type_list list;
    int status = cgc_diag_census(&list);
    return detail::adopt(status, list);
}
// The types whose count changed since the previous call on this heap.
inline std::vector<type_stats> growth() {
    cgc_diag_type_list list;
    int status = cgc_diag_growth(&list);
    return detail::adopt(status, list);
}

// The shortest chain from a root (held from outside the tracked objects) to
// `object` (a ref<T> or a cgc_object*), root first; empty if no root
// reaches it (garbage). Throws std::runtime_error if it is not tracked.
template <class Object>
std::vector<link> retainer_chain(const Object &object) {
    cgc_diag_chain chain;
    int status = cgc_diag_retainer_chain(detail::header_of(object), &chain);
    return detail::adopt(status, chain);
}
// The same to the nearest object of the type named `type_name`.
inline std::vector<link> retainer_chain_to_type(const std::string &type_name) {
    cgc_diag_chain chain;
    int status = cgc_diag_retainer_chain_to_type(type_name.c_str(), &chain);
    return detail::adopt(status, chain);
}
// `object`'s references from outside the tracked objects.
template <class Object>
cgc_ssize_t external_refs(const Object &object) {
    cgc_ssize_t count = cgc_diag_external_refs(detail::header_of(object));
    if (count == -1 && cgc_error_occurred()) detail::throw_last_error();
    return count;
}

// The leak report about every tracked object alive now.
inline std::string leak_report() { return detail::adopt(cgc_diag_leak_report()); }

// A leak-check scope: when it ends (destructor or finish()), a full
// collection runs and the tracked objects made inside it that are still
// alive are passed to `on_leak` as a report. By default the report goes to
// stderr and the program aborts; tests pass their own failure, e.g.
// [](const std::string &report) { ADD_FAILURE() << report; }.
class leak_check {
  public:
    using handler = std::function<void(const std::string &report)>;
    explicit leak_check(handler on_leak = abort_on_leak) : scope_(cgc_diag_leak_scope_begin()), on_leak_(std::move(on_leak)) {
        if (!scope_) detail::throw_last_error();
    }
    leak_check(const leak_check &) = delete;
    leak_check &operator=(const leak_check &) = delete;
    ~leak_check() {
        if (scope_) finish();
    }
    // Ends the scope now; returns the number of leaked objects (the handler
    // has been called if any).
    cgc_ssize_t finish() {
        char *text = nullptr;
        cgc_ssize_t leaked = cgc_diag_leak_scope_end(std::exchange(scope_, nullptr), &text);
        std::string report = detail::adopt(text);
        if (leaked > 0 && on_leak_) on_leak_(report);
        return leaked;
    }
    static void abort_on_leak(const std::string &report) {
        std::fputs(report.c_str(), stderr);
        std::abort();
    }

  private:
    cgc_diag_leak_scope *scope_;
    handler on_leak_;
};

}  // namespace cyclegc::diag

#endif  // CYCLEGC_DIAGNOSTICS_HPP
