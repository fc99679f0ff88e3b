// The sources of the driver's choices: a seeded generator (recording the
// choices it makes, for replay) or the bytes of a fuzzer's input.
#include "driver.hpp"

namespace cgc_stress {

// ---- Sources ---------------------------------------------------------------

namespace {
uint64_t splitmix(uint64_t &x) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

RngSource::RngSource(uint64_t seed, std::vector<uint8_t> *record) : record_(record) {
    uint64_t x = seed;
    for (auto &s : s_) s = splitmix(x);
}

uint64_t RngSource::next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
}

uint32_t RngSource::pick(uint32_t n) {
    if (n <= 1) return 0;
    auto v = static_cast<uint32_t>(next() % n);
    if (record_) {
        record_->push_back(static_cast<uint8_t>(v & 0xFF));
        if (n > 256) record_->push_back(static_cast<uint8_t>(v >> 8));
    }
    return v;
}

uint32_t ByteSource::pick(uint32_t n) {
    if (n <= 1) return 0;
    size_t need = n > 256 ? 2 : 1;
    if (pos_ + need > size_) {
        done_ = true;
        pos_ = size_;
        return 0;
    }
    uint32_t v = data_[pos_];
    if (need == 2) v |= uint32_t(data_[pos_ + 1]) << 8;
    pos_ += need;
    return v % n;
}

}  // namespace cgc_stress
