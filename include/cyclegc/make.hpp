// cyclegc::make<T>(args...): construct a collected object.
#ifndef CYCLEGC_MAKE_HPP
#define CYCLEGC_MAKE_HPP

#include "type.hpp"

#include <new>
#include <type_traits>
#include <utility>

namespace cyclegc {
namespace detail {
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_bad_alloc() { throw std::bad_alloc(); }
}  // namespace detail

// Constructs a T in collector memory and returns the first reference to it.
// The object is tracked once its constructor has finished (if T has a
// `trace` member); an exception from the constructor frees the memory.
// May run an automatic collection first, before the object exists.
template <class T, class... Args>
ref<T> make(Args &&...args) {
    static_assert(detail::cxx_object<T>, "cyclegc::make<T>: T must derive from cyclegc::object");
    static_assert(!std::is_abstract_v<T>, "cyclegc::make<T>: T is abstract");
    static_assert(alignof(T) <= 16, "cyclegc::make<T>: T needs more than 16-byte alignment");
    cgc_type *type = type_of<T>();
    cgc_raw_slot slot = cgc_gc_raw_alloc_slot(sizeof(T), alignof(T));
    void *memory = slot.memory;
    if (!memory) [[unlikely]] detail::throw_bad_alloc();
    T *self;
    if constexpr (std::is_nothrow_constructible_v<T, Args &&...>) {
        self = ::new (memory) T(std::forward<Args>(args)...);
    } else {
        try {
            self = ::new (memory) T(std::forward<Args>(args)...);
        } catch (...) {
            // Weak references made to the object meanwhile must not outlive
            // its memory. (The address of its C part, from the type alone.)
            cgc_clear_weakrefs(detail::header(static_cast<T *>(memory)));
            cgc_gc_raw_free(memory);
            throw;
        }
    }
    cgc_object *op = detail::header(self);
    op->ob_type = type;
    cgc_gc_raw_bind_slot(slot, op, detail::traced<T>);
    return ref<T>::adopt(self);
}

}  // namespace cyclegc

#endif
