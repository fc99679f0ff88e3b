// The pause histogram of a heap: every collection and every incremental
// slice records its duration (cgc_get_pause_stats).
#pragma once

#include <cyclegc/cyclegc.h>

#include <cstdint>
#include <ctime>

namespace cyclegc::internal {

// The clock of pauses, slice deadlines and collection times: monotonic wall
// time, or (CYCLEGC_PAUSE_CLOCK=thread, read when a heap is made) the
// thread's CPU time, for measuring pauses on a machine shared with other
// work, where wall time counts the time the thread waits for a core.
inline uint64_t pause_clock_ns(bool thread_cpu) {
    timespec now;
    clock_gettime(thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &now);
    return uint64_t(now.tv_sec) * 1'000'000'000u + uint64_t(now.tv_nsec);
}

// The pause clock for a slice that checks its deadlines every few
// microseconds. The thread's CPU clock is a system call (0.7 us here, the
// monotonic clock 30 ns through the vDSO): it is read only when the
// monotonic clock says a deadline may have come, CPU time never running
// faster than wall time. With the monotonic pause clock, one read a check.
class SliceClock {
  public:
    explicit SliceClock(bool thread_cpu) : thread_cpu_(thread_cpu) {
        sync();
        start_ = pause_;
    }
    // The pause clock when the slice began.
    uint64_t start() const { return start_; }
    // Whether the pause clock has reached `deadline`.
    bool reached(uint64_t deadline) {
        if (upper_bound() < deadline) return false;
        if (!thread_cpu_) return true;
        sync();
        return pause_ >= deadline;
    }
    // At least the pause clock's time since start(), read cheaply.
    uint64_t elapsed_upper_bound() const { return upper_bound() - start_; }
    // The pause clock's time since start(), exact.
    uint64_t elapsed() {
        sync();
        return pause_ - start_;
    }

  private:
    uint64_t upper_bound() const { return pause_ + (pause_clock_ns(false) - monotonic_); }
    void sync() {
        monotonic_ = pause_clock_ns(false);
        pause_ = thread_cpu_ ? pause_clock_ns(true) : monotonic_;
    }

    bool thread_cpu_;
    uint64_t monotonic_ = 0, pause_ = 0;  // both clocks at the last sync
    uint64_t start_ = 0;
};

// Log-linear buckets: [0, 1024 ns) is one bucket, then each power of two
// from 2^10 ns (about 1 us) is split into kSubBuckets equal parts, so a
// percentile read from it is at most 1/kSubBuckets (12.5%) above the true
// value (it reports the bucket's upper bound, or the maximum if smaller).
class PauseHistogram {
  public:
    static constexpr int kSubBits = 3;
    static constexpr int kSubBuckets = 1 << kSubBits;
    static constexpr int kFirstPower = 10;
    static constexpr int kBuckets = 1 + (64 - kFirstPower) * kSubBuckets;

    void record(uint64_t ns);
    void reset() { *this = PauseHistogram{}; }
    cgc_pause_stats stats() const;
    // The smallest recorded bound below which a fraction `quantile` of the
    // pauses lie (0 when none were recorded).
    uint64_t percentile(double quantile) const;

    static int bucket_of(uint64_t ns);
    static uint64_t upper_bound(int bucket);

  private:
    uint64_t counts_[kBuckets] = {};
    uint64_t count_ = 0;
    uint64_t total_ns_ = 0;
    uint64_t max_ns_ = 0;
};

}  // namespace cyclegc::internal
