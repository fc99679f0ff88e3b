// cyclegc::function<R(Args...)>: a callable whose captured references the
// collector sees, so that an observer cycle through it can be collected.
#ifndef CYCLEGC_FUNCTION_HPP
#define CYCLEGC_FUNCTION_HPP

#include "tracer.hpp"

#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cyclegc {

// References (or anything traceable, and plain values beside them)
// captured for a cyclegc::function:
// cyclegc::function<void(int)> f(cyclegc::capture(a, b),
//                                [](ref<A> &a, ref<B> &b, int x) { ... });
// The callable receives them first, before the call's own arguments.
template <class... Captures>
struct captured {
    std::tuple<Captures...> values;
};
template <class... Captures>
captured<std::decay_t<Captures>...> capture(Captures &&...values) {
    static_assert((detail::part_v<std::decay_t<Captures>> && ...),
                  "cyclegc::capture: capture refs, weaks, other traceable values, or plain values "
                  "(numbers, strings); raw pointers and shared_ptrs hide references from the collector");
    return {{std::forward<Captures>(values)...}};
}

template <class Signature>
class function;

namespace detail {
// std::invoke_r (C++23): a void R discards the result.
template <class R, class F, class... Args>
R invoke_r(F &f, Args &&...args) {
    if constexpr (std::is_void_v<R>)
        std::invoke(f, std::forward<Args>(args)...);
    else
        return std::invoke(f, std::forward<Args>(args)...);
}
}  // namespace detail

// Like std::function (copyable, empty when default-constructed), with a
// `trace` member: the collector sees the references it holds, either those
// given with cyclegc::capture, or those of a callable object that has its
// own `trace` member. When a cycle through it is broken, it becomes empty.
// A lambda's own captures stay invisible: capture refs with capture().
template <class R, class... Args>
class function<R(Args...)> {
  public:
    function() noexcept = default;
    function(std::nullptr_t) noexcept {}
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, function> && std::is_copy_constructible_v<std::decay_t<F>> &&
                 std::is_invocable_r_v<R, std::decay_t<F> &, Args...>)
    function(F &&callable) : impl_(std::make_unique<holder<std::decay_t<F>>>(std::forward<F>(callable))) {}
    template <class... Captures, class F>
        requires std::is_copy_constructible_v<std::decay_t<F>> &&
                 std::is_invocable_r_v<R, std::decay_t<F> &, Captures &..., Args...>
    function(captured<Captures...> captures, F &&callable)
        : impl_(std::make_unique<holder<bound<std::decay_t<F>, Captures...>>>(
              bound<std::decay_t<F>, Captures...>{std::move(captures.values), std::forward<F>(callable)})) {}

    function(const function &other) : impl_(other.impl_ ? other.impl_->clone() : nullptr) {}
    function(function &&) noexcept = default;
    function &operator=(const function &other) {
        function(other).swap(*this);
        return *this;
    }
    function &operator=(function &&other) noexcept {
        function(std::move(other)).swap(*this);
        return *this;
    }
    function &operator=(std::nullptr_t) noexcept {
        function().swap(*this);
        return *this;
    }

    R operator()(Args... args) const {
        if (!impl_) throw std::bad_function_call();
        return impl_->call(std::forward<Args>(args)...);
    }
    explicit operator bool() const noexcept { return impl_ != nullptr; }
    void swap(function &other) noexcept { impl_.swap(other.impl_); }

    // Visits the captured references; clearing empties the function (its
    // captures die after it is already empty).
    void trace(tracer &t) {
        if (t.clearing()) {
            auto dropped = std::move(impl_);
            return;
        }
        if (impl_) impl_->trace(t);
    }

  private:
    struct erased {
        virtual ~erased() = default;
        virtual R call(Args &&...args) = 0;
        virtual void trace(tracer &t) = 0;
        virtual std::unique_ptr<erased> clone() const = 0;
    };

    template <class F, class... Captures>
    struct bound {
        std::tuple<Captures...> captures;
        F callable;
        R operator()(Args &&...args) {
            return std::apply(
                [&](Captures &...values) -> R {
                    return detail::invoke_r<R>(callable, values..., std::forward<Args>(args)...);
                },
                captures);
        }
        void trace(tracer &t) {
            std::apply([&](Captures &...values) { (detail::trace_part(t, values), ...); }, captures);
        }
    };

    template <class F>
    struct holder final : erased {
        template <class G>
        explicit holder(G &&f) : target(std::forward<G>(f)) {}
        R call(Args &&...args) override { return detail::invoke_r<R>(target, std::forward<Args>(args)...); }
        void trace(tracer &t) override {
            if constexpr (detail::has_trace_member<F>) access::trace(target, t);
        }
        std::unique_ptr<erased> clone() const override { return std::make_unique<holder>(target); }
        F target;
    };

    std::unique_ptr<erased> impl_;
};

template <class R, class... Args>
void swap(function<R(Args...)> &a, function<R(Args...)> &b) noexcept {
    a.swap(b);
}

}  // namespace cyclegc

#endif
