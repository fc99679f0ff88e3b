#ifndef CYCLEGC_BENCH_TIMER_HPP
#define CYCLEGC_BENCH_TIMER_HPP

#include <time.h>

namespace cgcbench {

// Which clock the replays read: the calling thread's CPU time (user +
// system, so page faults count) by default, which other processes on a
// busy machine do not inflate; or wall time (--wall).
inline bool &use_wall_clock() {
    static bool wall = false;
    return wall;
}

inline double clock_ns() {
    timespec ts;
    clock_gettime(use_wall_clock() ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
}

// Time since construction, in nanoseconds, on the clock above.
class Timer {
  public:
    Timer() : start_(clock_ns()) {}
    double ns() const { return clock_ns() - start_; }

  private:
    double start_;
};

}  // namespace cgcbench

#endif
