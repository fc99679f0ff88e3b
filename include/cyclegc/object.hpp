// cyclegc::object: the base of every C++ object the collector manages.
#ifndef CYCLEGC_OBJECT_HPP
#define CYCLEGC_OBJECT_HPP

#include <cyclegc/cyclegc.h>

#include <cstddef>
#include <type_traits>

namespace cyclegc {

class tracer;

namespace detail {

// The type of an object whose constructor has not finished: releasing its
// last reference then is reported instead of freeing half-built memory.
inline void released_while_constructing(cgc_object *op) {
    cgc_error_set(CGC_ERR_MISUSE,
                  "cyclegc::make: the last reference to an object was released inside its own "
                  "constructor; the object is not freed");
    op->ob_refcnt = 1;
}

inline cgc_type &constructing_type() noexcept {
    static cgc_type type = [] {
        cgc_type t{};
        t.tp_name = "cyclegc::<object under construction>";
        t.tp_basicsize = sizeof(cgc_object);
        t.tp_dealloc = released_while_constructing;
        t.tp_flags = CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_READY;
        return t;
    }();
    return type;
}

}  // namespace detail

// Derive from `object` to be managed by cyclegc; create instances with
// cyclegc::make<T>(...) and hold them with cyclegc::ref<T>. This base is the
// object's C part (PyObject_HEAD: count and type), so a C++ object is also a
// valid PyObject*; the collector's metadata lives beside it in its page.
class object {
  public:
    object() noexcept { header_.ob_type = &detail::constructing_type(); }
    // Copying an object's fields never copies its identity or count.
    object(const object &) noexcept : object() {}
    object &operator=(const object &) noexcept { return *this; }
    // (When a constructor throws, make<T> clears the weak references made
    // to the object meanwhile.)
    ~object() = default;

    // This object as a C object (a borrowed reference).
    cgc_object *as_cobject() noexcept { return &header_; }
    const cgc_object *as_cobject() const noexcept { return &header_; }
    cgc_ssize_t use_count() const noexcept { return cgc_refcount(&header_); }

    // The object whose C part is `op` (which must be a C++ object).
    static object *from_cobject(cgc_object *op) noexcept {
        return reinterpret_cast<object *>(reinterpret_cast<char *>(op) - offsetof(object, header_));
    }

  private:
    cgc_object header_{1, nullptr};
};

static_assert(std::is_standard_layout_v<object>);

namespace detail {

template <class T>
inline constexpr bool always_false = false;

template <class T>
concept cxx_object = std::is_base_of_v<object, std::remove_cv_t<T>>;

template <class T>
concept c_object = std::is_same_v<std::remove_cv_t<T>, cgc_object>;

template <class T>
concept managed = cxx_object<T> || c_object<T>;

// The C header of a managed object.
template <managed T>
inline cgc_object *header(T *p) noexcept {
    if constexpr (c_object<T>)
        return const_cast<cgc_object *>(p);
    else
        return const_cast<object *>(static_cast<const object *>(p))->as_cobject();
}

// The managed object whose C header is `op`.
template <managed T>
inline T *downcast(cgc_object *op) noexcept {
    if constexpr (c_object<T>)
        return op;
    else
        return static_cast<T *>(object::from_cobject(op));
}

// (The C API's inline paths: cyclegc.h, "The count word".)
inline void incref(cgc_object *op) noexcept { cgc_incref(op); }
inline void decref(cgc_object *op) noexcept { cgc_decref(op); }

}  // namespace detail
}  // namespace cyclegc

#endif
