// The type object cyclegc makes for each C++ type T, so that the C API and
// the collector see C++ objects like any other: tp_traverse and tp_clear
// call T::trace, tp_finalize calls T::finalize, tp_dealloc runs ~T.
#ifndef CYCLEGC_TYPE_HPP
#define CYCLEGC_TYPE_HPP

#include "detail/aggregate_probe.hpp"
#include "tracer.hpp"

#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <string>
#include <typeinfo>

namespace cyclegc {
namespace detail {

template <class T>
concept traced = access::traceable<T>;

template <class T>
concept finalizable = access::finalizable<T>;

inline std::string demangle(const char *name) {
    int status = 0;
    char *readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string result = status == 0 && readable ? readable : name;
    std::free(readable);
    return result;
}

// Reports an exception that escaped a finalizer or callback to the
// unraisable hook (cgc_set_unraisable_hook), naming its type and message.
inline void report_exception(const char *where, cgc_object *op) noexcept {
    std::string message = where;
    try {
        throw;
    } catch (const std::exception &error) {
        message += ": ";
        message += demangle(typeid(error).name());
        message += ": ";
        message += error.what();
    } catch (...) {
        message += ": unknown exception";
    }
    cgc_report_unraisable(message.c_str(), op);
}

// A destructor that kept a reference to its own object (stored ref to
// `this`): the object is destroyed, but its memory is kept, never reused.
template <class T>
void report_resurrected_by_destructor() noexcept {
    try {
        std::string message = "cyclegc: an object of type '" + demangle(typeid(T).name()) +
                              "' was destroyed while a reference to it was kept (its destructor stored a "
                              "ref to `this`): its memory is kept, never reused";
        cgc_error_set(CGC_ERR_MISUSE, message.c_str());
    } catch (...) {
        cgc_error_set(CGC_ERR_MISUSE, "cyclegc: an object was destroyed while a reference to it was kept");
    }
}

template <class T>
struct cxx_type {
    // An exception from trace() does not escape into the collector: it is
    // reported (unraisable), and a collection whose analysis it interrupts
    // frees nothing (a traversal cut short could hide a live object).
    static int traverse(cgc_object *op, cgc_visitproc visit, void *arg) {
        tracer t = tracer::visitor(visit, arg);
        try {
            access::trace(*downcast<T>(op), t);
        } catch (...) {
            report_exception("trace()", op);
            return -1;
        }
        return t.result();
    }
    static int clear(cgc_object *op) {
        tracer t = tracer::clearer();
        access::trace(*downcast<T>(op), t);
        return 0;
    }
    static int traverse_nothing(cgc_object *, cgc_visitproc, void *) { return 0; }
    static void finalize(cgc_object *op) {
        try {
            access::finalize(*downcast<T>(op));
        } catch (...) {
            report_exception("finalize()", op);
        }
    }
    static void dealloc(cgc_object *op) {
        bool collecting = false;
        if constexpr (traced<T>) collecting = cgc_gc_untrack_dying(op);  // leaves are never tracked
        if constexpr (finalizable<T>) {
            // PEP 442: a dying object is finalized once, and may resurrect.
            if constexpr (traced<T>) cgc_gc_track(op);
            if (cgc_call_finalizer_from_dealloc(op) < 0) return;
            if constexpr (traced<T>) collecting = cgc_gc_untrack_dying(op);
        }
        // (Weak references were cleared before tp_dealloc, or after
        // finalize() by cgc_call_finalizer_from_dealloc.)
        // During a collection (a collected cycle being torn down), clear the
        // references before the destructor runs: every destructor in a
        // collected cycle sees its traced references cleared, not only the
        // one the collector happened to clear first.
        if constexpr (traced<T>) {
            if (collecting) clear(op);
        }
        destroy_and_free(op);
    }
    // tp_cxx_destroy: the library has untracked the object (and cleared it,
    // during a collection); this runs the destructor and frees the memory.
    // The destructor runs with a count of 1, as a CPython finalizer runs on
    // an object resurrected for it: a ref to `this` taken and dropped inside
    // it (ref<T>::borrow(this) passed to a function) does not deallocate the
    // object again.
    static void destroy_and_free(cgc_object *op) {
        T *self = downcast<T>(op);
        op->ob_refcnt = 1;
        // (The count is in the object, whose lifetime the destructor ends:
        // without these barriers the compiler may drop the store as dead,
        // and read the count back as anything.)
        __asm__ __volatile__("" : : "r"(op) : "memory");
        self->~T();
        __asm__ __volatile__("" : : "r"(op) : "memory");
        if (op->ob_refcnt != 1) [[unlikely]] {
            report_resurrected_by_destructor<T>();
            return;
        }
        op->ob_refcnt = 0;  // (freed, a Py_DECREF too many finds 0 and is reported)
        cgc_gc_raw_free(static_cast<void *>(self));
    }
    // tp_free takes the C object; the memory starts at the C++ object.
    static void free_memory(void *op) {
        cgc_gc_raw_free(static_cast<void *>(downcast<T>(static_cast<cgc_object *>(op))));
    }

    static cgc_type make() {
        static const std::string name = demangle(typeid(T).name());
        cgc_type type{};
        type.tp_name = name.c_str();
        type.tp_basicsize = sizeof(T);
        // Every C++ object has a collector header (in cyclegc::object), so
        // every C++ type is a GC type (weak references work on leaves too);
        // only types with references (a trace member) are ever tracked.
        type.tp_flags = CGC_TPFLAGS_HAVE_GC | CGC_TPFLAGS_CXX;  // (errors worded for C++)
        type.tp_dealloc = dealloc;
        // A trace or finalize the collector cannot call would leave the
        // type untracked (its cycles leaked) or unfinalized, silently.
        static_assert(traced<T> || !declares_trace<T>,
                      "cyclegc: T has a `trace` member the collector cannot call, so T would never be "
                      "tracked and its cycles would leak: make it `public: void trace(cyclegc::tracer&)`, "
                      "or keep it private and declare `friend class cyclegc::access;` in T");
        static_assert(finalizable<T> || !declares_finalize<T>,
                      "cyclegc: T has a `finalize` member the collector cannot call: make it "
                      "`public: void finalize()`, or keep it private and declare "
                      "`friend class cyclegc::access;` in T");
        if constexpr (!traced<T>)
            static_assert(!aggregate_holds_traceable<T>(),
                          "cyclegc: T holds a ref (or a weak, a container of them, a struct with a trace "
                          "member) but has no trace member, so T would never be tracked and its cycles "
                          "would leak: add `void trace(cyclegc::tracer &t) { t(...); }` naming them");
        if constexpr (traced<T>) {
            static_assert(!access::const_traceable<T>,
                          "cyclegc: T::trace must not be const: the same member clears the "
                          "references when a cycle is broken");
            type.tp_traverse = traverse;
            type.tp_clear = clear;
        } else {
            type.tp_traverse = traverse_nothing;
        }
        if constexpr (finalizable<T>)
            type.tp_finalize = finalize;
        else
            type.tp_cxx_destroy = destroy_and_free;
        type.tp_free = free_memory;
        return type;
    }

    // The type object, made on first use (thread-safe); afterwards one load
    // and a test, with the making out of line.
    static cgc_type *get() {
        if (cgc_type *type = ready_.load(std::memory_order_acquire)) [[likely]]
            return type;
        return make_once();
    }
    [[gnu::noinline]] static cgc_type *make_once() {
        static cgc_type type = [] {
            cgc_type t = make();
            cgc_type_ready(&t);
            return t;
        }();
        ready_.store(&type, std::memory_order_release);
        return &type;
    }
    static inline std::atomic<cgc_type *> ready_{nullptr};
};

}  // namespace detail

// The type object of a C++ type: what Py_TYPE() of its instances is.
template <class T>
    requires detail::cxx_object<T>
cgc_type *type_of() {
    return detail::cxx_type<std::remove_cv_t<T>>::get();
}

}  // namespace cyclegc

#endif
