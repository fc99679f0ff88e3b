// cyclegc::heap: a heap of one's own (cgc_heap_new) and a scope that makes
// a heap the thread's current one.
#ifndef CYCLEGC_HEAP_HPP
#define CYCLEGC_HEAP_HPP

#include "gc.hpp"

#include <new>
#include <utility>

namespace cyclegc {

// Owns a heap. Objects made while it is current (see use()) live on it and
// must only be used by one thread at a time; they never move to another
// heap. Destroying the heap runs final collections; a heap that still has
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

}  // namespace cyclegc

#endif
