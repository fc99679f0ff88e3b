// Buffered output for the snapshot writers: numbers formatted by hand and
// written in 1 MiB blocks (a snapshot of millions of objects is written at
// several million objects per second; printf would be the bottleneck).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace cyclegc::internal::diag {

class TextWriter {
  public:
    explicit TextWriter(std::FILE *file) : file_(file) { buffer_.reserve(kBlock + 64); }
    ~TextWriter() { flush(); }
    TextWriter(const TextWriter &) = delete;
    TextWriter &operator=(const TextWriter &) = delete;

    TextWriter &operator<<(std::string_view text) {
        buffer_.insert(buffer_.end(), text.begin(), text.end());
        return maybe_flush();
    }
    TextWriter &operator<<(char c) {
        buffer_.push_back(c);
        return maybe_flush();
    }
    TextWriter &operator<<(uint64_t value) {
        char digits[20];
        int n = 0;
        do digits[n++] = static_cast<char>('0' + value % 10);
        while (value /= 10);
        while (n) buffer_.push_back(digits[--n]);
        return maybe_flush();
    }
    TextWriter &operator<<(int64_t value) {
        if (value < 0) {
            buffer_.push_back('-');
            return *this << static_cast<uint64_t>(-(value + 1)) + 1;
        }
        return *this << static_cast<uint64_t>(value);
    }
    TextWriter &operator<<(uint32_t value) { return *this << static_cast<uint64_t>(value); }
    TextWriter &operator<<(int value) { return *this << static_cast<int64_t>(value); }
    // `text` as a JSON string, quotes included.
    TextWriter &json_string(std::string_view text);
    bool flush() {
        if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) failed_ = true;
        buffer_.clear();
        return !failed_;
    }
    bool failed() const { return failed_; }

  private:
    static constexpr size_t kBlock = size_t(1) << 20;
    TextWriter &maybe_flush() {
        if (buffer_.size() >= kBlock) flush();
        return *this;
    }
    std::FILE *file_;
    std::vector<char> buffer_;
    bool failed_ = false;
};

inline TextWriter &TextWriter::json_string(std::string_view text) {
    buffer_.push_back('"');
    for (char c : text) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            buffer_.push_back('\\');
            buffer_.push_back(c);
        } else if (u < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
            buffer_.insert(buffer_.end(), escaped, escaped + 6);
        } else {
            buffer_.push_back(c);
        }
    }
    buffer_.push_back('"');
    return maybe_flush();
}

}  // namespace cyclegc::internal::diag
