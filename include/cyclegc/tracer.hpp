// cyclegc::tracer: what a type's `trace` member hands its references to.
// One `trace` serves as both tp_traverse (visit every reference) and
// tp_clear (reset every reference, which breaks a cycle).
#ifndef CYCLEGC_TRACER_HPP
#define CYCLEGC_TRACER_HPP

#include "ref.hpp"

#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

namespace cyclegc {

template <class T>
class weak;

// The collector calls a type's `trace` and `finalize` members through this
// class: they may be private if the type declares
// `friend class cyclegc::access;`.
class access {
  public:
    template <class T>
    static constexpr bool traceable = requires(T &object, tracer &t) { object.trace(t); };
    template <class T>
    static constexpr bool const_traceable = requires(const T &object, tracer &t) { object.trace(t); };
    template <class T>
    static constexpr bool finalizable = requires(T &object) { object.finalize(); };

    template <class T>
    static void trace(T &object, tracer &t) {
        object.trace(t);
    }
    template <class T>
    static void finalize(T &object) {
        object.finalize();
    }
};

// How a member type is traced: specialize for your own wrapper types
// (`static constexpr bool traceable = true;` and
// `static void trace(tracer&, M&)`), or give the type a
// `void trace(cyclegc::tracer&)` member.
template <class M, class = void>
struct trace_traits {
    static constexpr bool traceable = false;
};

namespace detail {

template <class M>
inline constexpr bool traceable_v = trace_traits<std::remove_cv_t<M>>::traceable;

// Values that hold no reference: allowed beside references inside a pair,
// tuple or variant, but pointless to trace on their own.
template <class M>
inline constexpr bool leaf_v = std::is_arithmetic_v<M> || std::is_enum_v<M> ||
                               std::is_same_v<M, std::monostate> || std::is_same_v<M, std::nullptr_t>;
template <class C, class Tr, class A>
inline constexpr bool leaf_v<std::basic_string<C, Tr, A>> = true;
template <class C, class Tr>
inline constexpr bool leaf_v<std::basic_string_view<C, Tr>> = true;

template <class M>
inline constexpr bool part_v = traceable_v<M> || leaf_v<std::remove_cv_t<M>>;

template <class M>
concept has_trace_member = access::traceable<M>;

// Whether M declares a member named `trace` (or `finalize`), accessible or
// not: a name also declared by a second base is ambiguous whatever its
// access, so `&probe<M>::trace` is ill-formed exactly when M has one. (A
// final class cannot be probed: it is taken as having none.)
struct declares_nothing {
    void trace();
    void finalize();
};
template <class M>
struct member_probe : M, declares_nothing {};
template <class M>
concept declares_trace = std::is_class_v<M> && !std::is_final_v<M> && !requires { &member_probe<M>::trace; };
template <class M>
concept declares_finalize =
    std::is_class_v<M> && !std::is_final_v<M> && !requires { &member_probe<M>::finalize; };

template <class M>
concept range = requires(M &m) {
    std::begin(m);
    std::end(m);
    typename M::value_type;
};

template <class M>
concept clearable_range = range<M> && std::is_default_constructible_v<M> && requires(M &m) {
    m.clear();
    m.swap(m);
};

}  // namespace detail

class tracer {
  public:
    // Traces each member: a ref, a weak (its weak reference object, not the
    // referent: a weak keeps nothing alive), a standard container, optional,
    // variant, pair, tuple or unique_ptr of traceable things, or a type with
    // its own `trace` member.
    template <class... Members>
    void operator()(Members &...members) {
        (trace_member(members), ...);
    }

    // True while the collector is breaking a cycle (tp_clear) rather than
    // visiting references (tp_traverse).
    bool clearing() const noexcept { return visit_ == nullptr; }

    // The tracer's two uses, for the type glue (type.hpp) and for tests.
    static tracer visitor(cgc_visitproc visit, void *arg) noexcept { return tracer(visit, arg); }
    static tracer clearer() noexcept { return tracer(nullptr, nullptr); }
    int result() const noexcept { return result_; }

    // Hands one C object reference to the visitor (or, when clearing,
    // resets it).
    template <class T>
    void reference(ref<T> &r) {
        if (clearing())
            r.reset();
        else
            reference(static_cast<const ref<T> &>(r));
    }
    template <class T>
    void reference(const ref<T> &r) {
        if (!clearing() && result_ == 0 && r) result_ = visit_(detail::header(r.get()), arg_);
    }

    template <class M>
    void trace_member(M &member) {
        static_assert(detail::traceable_v<M> || !detail::declares_trace<std::remove_cv_t<M>>,
                      "cyclegc::tracer: this member's type has a `trace` member the collector cannot "
                      "call: make it `public: void trace(cyclegc::tracer&)`, or keep it private and "
                      "declare `friend class cyclegc::access;` in the type.");
        static_assert(detail::traceable_v<M>,
                      "cyclegc::tracer: this member cannot be traced. Trace refs, weaks, standard "
                      "containers/optional/variant/pair/tuple/unique_ptr holding them, or types "
                      "with a `void trace(cyclegc::tracer&)` member (a struct that holds refs needs "
                      "one, naming them); leave plain values out.");
        trace_traits<std::remove_cv_t<M>>::trace(*this, member);
    }

  private:
    tracer(cgc_visitproc visit, void *arg) noexcept : visit_(visit), arg_(arg) {}

    cgc_visitproc visit_;
    void *arg_;
    int result_ = 0;
};

template <class T>
struct trace_traits<ref<T>> {
    static constexpr bool traceable = true;
    static void trace(tracer &t, ref<T> &r) { t.reference(r); }
    static void trace(tracer &t, const ref<T> &r) { t.reference(r); }
};

// A weak<T> owns its weak reference object (never the referent): tracing it
// lets the collector see when the weak reference is itself garbage, whose
// callback then must not run; clearing drops it.
template <class T>
struct trace_traits<weak<T>> {
    static constexpr bool traceable = true;
    static void trace(tracer &t, weak<T> &w) {
        if (t.clearing())
            w.reset();
        else
            t.reference(w.cobject());
    }
    static void trace(tracer &t, const weak<T> &w) { t.reference(w.cobject()); }
};

template <class M>
struct trace_traits<M, std::enable_if_t<detail::has_trace_member<M>>> {
    static constexpr bool traceable = true;
    static void trace(tracer &t, M &m) { access::trace(m, t); }
};

namespace detail {

template <class M>
void trace_part(tracer &t, M &part) {
    if constexpr (traceable_v<M>) t.trace_member(part);
}

}  // namespace detail

// Containers: visit every element; when clearing, empty the container
// (swapped out first, so destructors run after it is already empty; this
// also covers std::set and map keys, which cannot be reset in place).
template <class M>
struct trace_traits<M, std::enable_if_t<detail::range<M> && !detail::has_trace_member<M> &&
                                        !detail::leaf_v<M>>> {
    using element = typename M::value_type;
    static constexpr bool traceable = detail::traceable_v<element>;
    static void trace(tracer &t, M &container) {
        if constexpr (detail::clearable_range<M>) {
            if (t.clearing()) {
                M dropped;
                dropped.swap(container);
                return;
            }
        }
        for (auto &element_ref : container) t.trace_member(element_ref);
    }
};

template <class A, class B>
struct trace_traits<std::pair<A, B>> {
    static constexpr bool traceable =
        detail::part_v<A> && detail::part_v<B> && (detail::traceable_v<A> || detail::traceable_v<B>);
    template <class P>
    static void trace(tracer &t, P &p) {
        detail::trace_part(t, p.first);
        detail::trace_part(t, p.second);
    }
};

template <class... Ts>
struct trace_traits<std::tuple<Ts...>> {
    static constexpr bool traceable = (detail::part_v<Ts> && ...) && (detail::traceable_v<Ts> || ...);
    static void trace(tracer &t, std::tuple<Ts...> &tuple) {
        std::apply([&](auto &...parts) { (detail::trace_part(t, parts), ...); }, tuple);
    }
};

template <class... Ts>
struct trace_traits<std::variant<Ts...>> {
    static constexpr bool traceable = (detail::part_v<Ts> && ...) && (detail::traceable_v<Ts> || ...);
    static void trace(tracer &t, std::variant<Ts...> &variant) {
        std::visit([&](auto &alternative) { detail::trace_part(t, alternative); }, variant);
    }
};

template <class T>
struct trace_traits<std::optional<T>> {
    static constexpr bool traceable = detail::traceable_v<T>;
    static void trace(tracer &t, std::optional<T> &optional) {
        if (optional) t.trace_member(*optional);
    }
};

template <class T, class D>
struct trace_traits<std::unique_ptr<T, D>> {
    static constexpr bool traceable = detail::traceable_v<T>;
    static void trace(tracer &t, std::unique_ptr<T, D> &pointer) {
        if (pointer) t.trace_member(*pointer);
    }
};

}  // namespace cyclegc

#endif
