// cyclegc::ref<T>: a strong, intrusive, one-pointer-wide reference.
#ifndef CYCLEGC_REF_HPP
#define CYCLEGC_REF_HPP

#include "object.hpp"

#include <compare>
#include <concepts>
#include <cstddef>
#include <functional>
#include <utility>

namespace cyclegc {

// A strong reference, like std::shared_ptr but one pointer wide, with the
// count in the object and plain (non-atomic) increments. T may be
// incomplete where a ref<T> is declared (a member of T itself).
// T is a type derived from cyclegc::object, or cgc_object (PyObject) for
// objects made through the C API.
template <class T>
class ref {
  public:
    using element_type = T;

    constexpr ref() noexcept = default;
    constexpr ref(std::nullptr_t) noexcept {}
    ref(const ref &other) noexcept : pointer_(other.pointer_) { retain(); }
    ref(ref &&other) noexcept : pointer_(std::exchange(other.pointer_, nullptr)) {}
    template <class U>
        requires std::convertible_to<U *, T *>
    ref(const ref<U> &other) noexcept : pointer_(other.get()) {
        retain();
    }
    template <class U>
        requires std::convertible_to<U *, T *>
    ref(ref<U> &&other) noexcept : pointer_(other.release()) {}
    ~ref() { reset(); }

    // Common mistakes, refused with the fix: a raw pointer has no reference
    // the ref could take over (`ref<T>(new T)`, `r = this`).
    template <class U>
    explicit ref(U *) {
        static_assert(detail::always_false<U>,
                      "cyclegc::ref: no conversion from a raw pointer. Create objects with "
                      "cyclegc::make<T>(args...); for an object already managed use "
                      "ref<T>::borrow(p) (a new reference, e.g. ref<T>::borrow(this)) or "
                      "ref<T>::adopt(p) (takes over a reference the caller owns)");
    }
    template <class U>
    ref &operator=(U *) {
        static_assert(detail::always_false<U>,
                      "cyclegc::ref: cannot assign a raw pointer (such as `this`): assign "
                      "ref<T>::borrow(pointer) instead");
        return *this;
    }

    ref &operator=(const ref &other) noexcept {
        ref(other).swap(*this);
        return *this;
    }
    ref &operator=(ref &&other) noexcept {
        ref(std::move(other)).swap(*this);
        return *this;
    }
    ref &operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }

    // Takes over a reference the caller owns (e.g. from a C function that
    // returns a new reference).
    [[nodiscard]] static ref adopt(T *pointer) noexcept {
        ref r;
        r.pointer_ = pointer;
        return r;
    }
    // Takes a new reference to `pointer` (a borrowed reference).
    [[nodiscard]] static ref borrow(T *pointer) noexcept {
        ref r = adopt(pointer);
        r.retain();
        return r;
    }

    // Drops the reference; the pointer is null before the object may die,
    // so a destructor that looks back here sees nullptr.
    void reset() noexcept {
        if (T *old = std::exchange(pointer_, nullptr)) detail::decref(detail::header(old));
    }
    // Gives up ownership without dropping the reference.
    [[nodiscard]] T *release() noexcept { return std::exchange(pointer_, nullptr); }
    void swap(ref &other) noexcept { std::swap(pointer_, other.pointer_); }

    T *get() const noexcept { return pointer_; }
    T &operator*() const noexcept { return *pointer_; }
    T *operator->() const noexcept { return pointer_; }
    explicit operator bool() const noexcept { return pointer_ != nullptr; }
    cgc_ssize_t use_count() const noexcept { return pointer_ ? cgc_refcount(detail::header(pointer_)) : 0; }

  private:
    void retain() noexcept {
        if (pointer_) detail::incref(detail::header(pointer_));
    }

    T *pointer_ = nullptr;
};

template <class T, class U>
bool operator==(const ref<T> &a, const ref<U> &b) noexcept {
    return a.get() == b.get();
}
template <class T>
bool operator==(const ref<T> &a, std::nullptr_t) noexcept {
    return a.get() == nullptr;
}
template <class T, class U>
std::strong_ordering operator<=>(const ref<T> &a, const ref<U> &b) noexcept {
    return std::compare_three_way{}(a.get(), b.get());
}
template <class T>
std::strong_ordering operator<=>(const ref<T> &a, std::nullptr_t) noexcept {
    return std::compare_three_way{}(a.get(), static_cast<T *>(nullptr));
}
template <class T>
void swap(ref<T> &a, ref<T> &b) noexcept {
    a.swap(b);
}

template <class To, class From>
ref<To> static_pointer_cast(const ref<From> &from) noexcept {
    return ref<To>::borrow(static_cast<To *>(from.get()));
}
template <class To, class From>
ref<To> dynamic_pointer_cast(const ref<From> &from) noexcept {
    return ref<To>::borrow(dynamic_cast<To *>(from.get()));
}

// A C++ object seen as a C object (PyObject*), sharing the reference.
template <class T>
ref<cgc_object> as_cobject(const ref<T> &r) noexcept {
    return ref<cgc_object>::borrow(r ? detail::header(r.get()) : nullptr);
}

}  // namespace cyclegc

template <class T>
struct std::hash<cyclegc::ref<T>> {
    size_t operator()(const cyclegc::ref<T> &r) const noexcept { return std::hash<T *>{}(r.get()); }
};

#endif
