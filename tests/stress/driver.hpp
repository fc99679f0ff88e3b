// The stress driver: random (or fuzzer-chosen) operation sequences applied to
// cyclegc and to the reference model (model.hpp), with checks after every
// operation (cheap ones) and after every full collection (everything).
#pragma once

#include "model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc_stress {

// Where the driver's choices come from.
class Source {
  public:
    virtual ~Source() = default;
    // A number in [0, n); n <= 65536. 0 when exhausted.
    virtual uint32_t pick(uint32_t n) = 0;
    virtual bool exhausted() const = 0;
};

// Seeded pseudo-random choices (xoshiro256**). Can record its choices as the
// bytes a ByteSource would decode to the same choices (fuzz corpus).
class RngSource : public Source {
  public:
    explicit RngSource(uint64_t seed, std::vector<uint8_t> *record = nullptr);
    uint32_t pick(uint32_t n) override;
    bool exhausted() const override { return false; }

  private:
    uint64_t next();
    uint64_t s_[4];
    std::vector<uint8_t> *record_;
};

// Choices read from bytes (the fuzzer's input, or a replay file): one byte
// for n <= 256, two (little-endian) above.
class ByteSource : public Source {
  public:
    ByteSource(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    uint32_t pick(uint32_t n) override;
    bool exhausted() const override { return done_; }

  private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    bool done_ = false;
};

struct Options {
    uint64_t seed = 0;           // printed on failure
    uint64_t max_ops = 10000;    // operations (the source may end first)
    double seconds = 0;          // stop after this long (0: no limit)
    uint64_t check_every = 0;    // full check every N operations (0: after full collections only)
    bool trace = false;          // print every operation
    uint64_t pause_budget = 0;   // incremental mode: this budget, and a tiny slice after every operation
    std::string replay;          // how to replay this run, printed on failure
};

struct RunStats {
    uint64_t ops = 0;
    uint64_t full_checks = 0;
    uint64_t objects_created = 0;
    uint64_t max_live = 0;
    ModelStats model;
};

// Runs one operation sequence on a fresh heap, then frees everything and
// deletes the heap. A failed check prints the seed, the operation and the
// last operations, then exits(1) (abort() if set_abort_on_failure).
RunStats run_sequence(Source &source, const Options &options);
void set_abort_on_failure(bool abort_on_failure);

}  // namespace cgc_stress
