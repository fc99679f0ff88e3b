// Whether an aggregate has a member the collector must see (a ref, weak,
// container of them, a struct with a trace member...): make<T> refuses such
// a T without a `trace` member, whose cycles would otherwise leak silently.
#ifndef CYCLEGC_DETAIL_AGGREGATE_PROBE_HPP
#define CYCLEGC_DETAIL_AGGREGATE_PROBE_HPP

#include "../tracer.hpp"

#include <cstddef>
#include <type_traits>
#include <utility>

namespace cyclegc::detail {

// Converts to any type (declared only: used in unevaluated braces).
struct any_member {
    template <class U>
    operator U() const;
};
// Converts to any type the tracer does not trace.
struct any_untraced_member {
    template <class U>
        requires(!traceable_v<U>)
    operator U() const;
};

template <class T, std::size_t... I>
constexpr bool brace_init(std::index_sequence<I...>) {
    return requires { T{(void(I), any_member{})...}; };
}
template <class T, std::size_t Slot, std::size_t... I>
constexpr bool brace_init_untraced_at(std::index_sequence<I...>) {
    return requires { T{std::conditional_t<I == Slot, any_untraced_member, any_member>{}...}; };
}

// How many initializers T{...} takes (bases first, then members).
template <class T, std::size_t N = 0>
constexpr std::size_t initializer_count() {
    if constexpr (N < 64 && brace_init<T>(std::make_index_sequence<N + 1>{}))
        return initializer_count<T, N + 1>();
    else
        return N;
}

// True when some initializer of the aggregate T accepts anything but a
// traceable type: that base or member is traceable. (A class with private
// members is no aggregate: not detected.)
template <class T>
constexpr bool aggregate_holds_traceable() {
    if constexpr (!std::is_aggregate_v<T>) {
        return false;
    } else {
        constexpr std::size_t count = initializer_count<T>();
        return []<std::size_t... Slot>(std::index_sequence<Slot...>) {
            return (!brace_init_untraced_at<T, Slot>(std::make_index_sequence<count>{}) || ...);
        }(std::make_index_sequence<count>{});
    }
}

}  // namespace cyclegc::detail

#endif
