// The pause histogram (see pause_stats.hpp).
#include "pause_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cyclegc::internal {

int PauseHistogram::bucket_of(uint64_t ns) {
    if (ns < (uint64_t(1) << kFirstPower)) return 0;
    int power = 63 - std::countl_zero(ns);
    auto sub = static_cast<int>((ns >> (power - kSubBits)) & (kSubBuckets - 1));
    return 1 + (power - kFirstPower) * kSubBuckets + sub;
}

uint64_t PauseHistogram::upper_bound(int bucket) {
    if (bucket == 0) return (uint64_t(1) << kFirstPower) - 1;
    int power = kFirstPower + (bucket - 1) / kSubBuckets;
    auto sub = static_cast<uint64_t>((bucket - 1) % kSubBuckets);
    uint64_t step = uint64_t(1) << (power - kSubBits);
    // (The last bucket's bound is 2^64 - 1, computed without overflow.)
    return (uint64_t(1) << power) + sub * step + (step - 1);
}

void PauseHistogram::record(uint64_t ns) {
    ++counts_[bucket_of(ns)];
    ++count_;
    total_ns_ += ns;
    max_ns_ = std::max(max_ns_, ns);
}

uint64_t PauseHistogram::percentile(double quantile) const {
    if (count_ == 0) return 0;
    // The rank of the pause at that quantile, 1-based: ceil(q * count).
    // (Less a little: 0.99 * 1000 must be 990, not 991 by rounding.)
    auto rank = static_cast<uint64_t>(std::ceil(quantile * static_cast<double>(count_) - 1e-6));
    rank = std::clamp<uint64_t>(rank, 1, count_);
    uint64_t seen = 0;
    for (int bucket = 0; bucket < kBuckets; ++bucket) {
        seen += counts_[bucket];
        if (seen >= rank) return std::min(upper_bound(bucket), max_ns_);
    }
    return max_ns_;
}

cgc_pause_stats PauseHistogram::stats() const {
    cgc_pause_stats out{};
    out.count = count_;
    out.total_ns = total_ns_;
    out.max_ns = max_ns_;
    out.p50_ns = percentile(0.5);
    out.p99_ns = percentile(0.99);
    out.p999_ns = percentile(0.999);
    return out;
}

}  // namespace cyclegc::internal
