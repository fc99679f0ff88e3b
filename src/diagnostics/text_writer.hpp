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
    explicit TextWriter(std::FILE *file) : file_(file), buffer_(kBlock + kSlack) {}
    ~TextWriter() { flush(); }
    TextWriter(const TextWriter &) = delete;
    TextWriter &operator=(const TextWriter &) = delete;

    TextWriter &operator<<(std::string_view text) {
        if (text.size() > kSlack) {  // (long text: written through)
            flush();
            if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) failed_ = true;
            return *this;
        }
        std::memcpy(&buffer_[used_], text.data(), text.size());
        used_ += text.size();
        return maybe_flush();
    }
    TextWriter &operator<<(char c) {
        buffer_[used_++] = c;
        return maybe_flush();
    }
    TextWriter &operator<<(uint64_t value) {
        char digits[20];
        int n = 0;
        do digits[n++] = static_cast<char>('0' + value % 10);
        while (value /= 10);
        char *out = &buffer_[used_];
        for (int i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
        used_ += n;
        return maybe_flush();
    }
    TextWriter &operator<<(int64_t value) {
        if (value < 0) {
            buffer_[used_++] = '-';
            return *this << static_cast<uint64_t>(-(value + 1)) + 1;
        }
        return *this << static_cast<uint64_t>(value);
    }
    TextWriter &operator<<(uint32_t value) { return *this << static_cast<uint64_t>(value); }
    TextWriter &operator<<(int value) { return *this << static_cast<int64_t>(value); }
    // `text` as a JSON string, quotes included.
    TextWriter &json_string(std::string_view text);
    bool flush() {
        if (used_ && std::fwrite(buffer_.data(), 1, used_, file_) != used_) failed_ = true;
        used_ = 0;
        return !failed_;
    }
    bool failed() const { return failed_; }

  private:
    static constexpr size_t kBlock = size_t(1) << 20;
    static constexpr size_t kSlack = 256;  // what one append may add past kBlock
    TextWriter &maybe_flush() {
        if (used_ >= kBlock) flush();
        return *this;
    }
    std::FILE *file_;
    std::vector<char> buffer_;
    size_t used_ = 0;
    bool failed_ = false;
};

inline TextWriter &TextWriter::json_string(std::string_view text) {
    *this << '"';
    for (char c : text) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            *this << '\\' << c;
        } else if (u < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
            *this << std::string_view(escaped, 6);
        } else {
            *this << c;
        }
    }
    return *this << '"';
}

}  // namespace cyclegc::internal::diag
