// The home of a C++ callable handed to the C library as a callback's
// context (collection callbacks, hooks, the log sink).
#ifndef CYCLEGC_DETAIL_CALLABLE_BOX_HPP
#define CYCLEGC_DETAIL_CALLABLE_BOX_HPP

#include <utility>

namespace cyclegc::detail {

// A callback may remove or replace itself (or another that is running
// further up the stack): freeing its callable then would destroy the
// captures it is still using. So a box retired while a call runs is freed
// when the last running call returns.
template <class F>
class callable_box {
  public:
    explicit callable_box(F callable) : callable_(std::move(callable)) {}
    callable_box(const callable_box &) = delete;
    callable_box &operator=(const callable_box &) = delete;

    template <class... Args>
    void call(Args &&...args) {
        running_guard guard{this};
        callable_(std::forward<Args>(args)...);
    }

    // Frees the box now, or when its running calls have returned.
    static void retire(callable_box *box) noexcept {
        if (!box) return;
        if (box->running_ > 0)
            box->retired_ = true;
        else
            delete box;
    }

  private:
    struct running_guard {
        callable_box *box;
        explicit running_guard(callable_box *b) noexcept : box(b) { ++box->running_; }
        running_guard(const running_guard &) = delete;
        running_guard &operator=(const running_guard &) = delete;
        ~running_guard() {
            if (--box->running_ == 0 && box->retired_) delete box;
        }
    };

    F callable_;
    int running_ = 0;
    bool retired_ = false;
};

}  // namespace cyclegc::detail

#endif
