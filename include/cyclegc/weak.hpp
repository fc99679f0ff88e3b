// cyclegc::weak<T>: a weak reference, optionally with a callback.
#ifndef CYCLEGC_WEAK_HPP
#define CYCLEGC_WEAK_HPP

#include "type.hpp"

#include <functional>
#include <new>

namespace cyclegc {

// Refers to an object without keeping it alive. lock() returns a strong
// reference, or null once the object is dead. The optional callback runs
// when the object dies, as CPython's weakref callbacks: at once when its
// count drops to zero; in a collection, before any finalizer or clear, and
// only if this weak reference is itself reachable.
template <class T>
class weak {
  public:
    weak() noexcept = default;
    weak(std::nullptr_t) noexcept {}
    weak(const ref<T> &target) : weak(target, nullptr) {}
    template <class U>
        requires std::convertible_to<U *, T *>
    weak(const ref<U> &target) : weak(ref<T>(target)) {}
    weak(const ref<T> &target, std::function<void()> callback) {
        if (!target) return;
        cgc_object *op = detail::header(target.get());
        cgc_object *w;
        if (callback) {
            auto *owned = new std::function<void()>(std::move(callback));
            w = cgc_weakref_new_owning(op, run_callback, owned, destroy_callback);
            if (!w) destroy_callback(owned);
        } else {
            w = cgc_weakref_new(op, nullptr, nullptr);
        }
        if (!w) throw std::bad_alloc();
        weakref_ = ref<cgc_object>::adopt(w);
    }

    ref<T> lock() const noexcept {
        if (!weakref_) return nullptr;
        cgc_object *op = cgc_weakref_get(weakref_.get());
        return op ? ref<T>::adopt(detail::downcast<T>(op)) : ref<T>();
    }
    bool expired() const noexcept {
        cgc_object *op = weakref_ ? cgc_weakref_get(weakref_.get()) : nullptr;
        if (op) detail::decref(op);
        return op == nullptr;
    }
    void reset() noexcept { weakref_.reset(); }
    // The underlying C weak reference object (PyWeakref).
    const ref<cgc_object> &cobject() const noexcept { return weakref_; }

  private:
    static void run_callback(cgc_object *weakref, void *context) {
        try {
            (*static_cast<std::function<void()> *>(context))();
        } catch (...) {
            detail::report_exception("weak reference callback", weakref);
        }
    }
    static void destroy_callback(void *context) { delete static_cast<std::function<void()> *>(context); }

    ref<cgc_object> weakref_;
};

}  // namespace cyclegc

#endif
