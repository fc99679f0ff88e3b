// cyclegc::heap: a heap of one's own (cgc_heap_new) or shared between
// threads (cgc_heap_new_shared), a scope that makes a heap the thread's
// current one, and a scope that detaches the thread from a shared heap
// around a blocking call.
#ifndef CYCLEGC_HEAP_HPP
#define CYCLEGC_HEAP_HPP

#include "gc.hpp"

#include <new>
#include <stdexcept>
#include <utility>

namespace cyclegc {

// Owns a heap. Objects made while it is current (see use()) live on it and
// must only be used by one thread at a time; they move to another heap only
// by transfer() below. Destroying the heap runs final collections; a heap that still has
// live objects is then kept (reported as CGC_ERR_MISUSE) so they stay valid.
// Release every object, weak and callback_handle of the heap first.
class heap {
  public:
    // Makes `h` the current heap of this thread until the scope ends, then
    // restores the one that was current before.
    class scope {
      public:
        explicit scope(cgc_heap *h) noexcept : previous_(cgc_heap_current()) { cgc_heap_set_current(h); }
        scope(const scope &) = delete;
        scope &operator=(const scope &) = delete;
        ~scope() { cgc_heap_set_current(previous_); }

      private:
        cgc_heap *previous_;
    };

    heap() : handle_(cgc_heap_new()) {
        if (!handle_) throw std::bad_alloc();
    }
    // A shared heap: every thread that makes it current (use()) is attached
    // to it and may use its objects; its collections stop the world
    // (docs/cpp.md). Destroy it once no other thread is attached.
    static heap shared() {
        cgc_heap *handle = cgc_heap_new_shared();
        if (!handle) throw std::bad_alloc();
        return heap(handle);
    }
    bool is_shared() const noexcept { return cgc_heap_is_shared(handle_) != 0; }
    heap(heap &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    heap &operator=(heap &&other) noexcept {
        if (this != &other) {
            destroy();
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    heap(const heap &) = delete;
    heap &operator=(const heap &) = delete;
    ~heap() { destroy(); }

    // Current for this thread until the returned scope is destroyed.
    [[nodiscard]] scope use() const noexcept { return scope(handle_); }
    cgc_heap *get() const noexcept { return handle_; }

  private:
    explicit heap(cgc_heap *handle) noexcept : handle_(handle) {}
    void destroy() noexcept {
        if (!handle_) return;
        {
            // The C++ hooks installed on it are freed with it.
            scope current(handle_);
            set_unraisable_hook({});
            set_error_hook({});
            set_log_sink({});
        }
        cgc_heap_delete(std::exchange(handle_, nullptr));
    }

    cgc_heap *handle_;
};

// Moves the isolated graph of `root` (what it reaches, referred to from
// nowhere else but by `root` itself) to the confined heap `to`, for the thread
// that uses `to`: hand `root` over through a synchronising queue (a mutex).
// Build the graph while a heap of its own is current: pages move whole
// (cgc_heap_transfer, docs/cpp.md). Throws std::logic_error with the
// library's message if refused (nothing moved).
template <class T>
void transfer(const ref<T> &root, cgc_heap *to) {
    cgc_object *header = root ? detail::header(root.get()) : nullptr;
    if (cgc_heap_transfer(header, to) < 0) throw std::logic_error(cgc_error_message());
}
template <class T>
void transfer(const ref<T> &root, const heap &to) {
    transfer(root, to.get());
}

// Detaches the calling thread from its shared heap until the scope ends
// (cgc_thread_detach / cgc_thread_attach, Py_BEGIN/END_ALLOW_THREADS): a
// collection on another thread then does not wait for it. Meanwhile the
// thread must not touch the heap's objects (no ref copied, released or
// dereferenced). Nothing on a confined heap.
class detached_scope {
  public:
    detached_scope() noexcept { cgc_thread_detach(); }
    detached_scope(const detached_scope &) = delete;
    detached_scope &operator=(const detached_scope &) = delete;
    ~detached_scope() { cgc_thread_attach(); }
};

// A safepoint (cgc_safepoint): on a shared heap, the calling thread parks
// here if another thread is stopping the world; then runs the automatic
// collection that is due, if any, and returns what it found (0: none). A
// loop that runs long without making objects (walking a large graph) calls
// it now and then, else every collection waits for the loop's end. Cheap
// when nothing is asked: a few loads.
inline cgc_ssize_t safepoint() { return cgc_safepoint(); }

}  // namespace cyclegc

#endif
