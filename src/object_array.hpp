// A growable array of object pointers for the young generations: the
// tracking fast path (PyObject_GC_Track) is a bounds check and a store, with
// growth out of line. std::vector's inlined reallocation made that path
// save six registers per call.
#pragma once

#include <cyclegc/cyclegc.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace cyclegc::internal {

class ObjectArray {
  public:
    ObjectArray() = default;
    ObjectArray(const ObjectArray &) = delete;
    ObjectArray &operator=(const ObjectArray &) = delete;
    ~ObjectArray() { std::free(items_); }

    size_t size() const { return size_; }
    size_t capacity() const { return capacity_; }
    bool empty() const { return size_ == 0; }
    cgc_object *&operator[](size_t i) { return items_[i]; }
    cgc_object *back() const { return items_[size_ - 1]; }
    // Throws std::bad_alloc when it cannot grow.
    void reserve(size_t needed) {
        if (needed > capacity_) grow(needed);
    }
    cgc_object **begin() { return items_; }
    cgc_object **end() { return items_ + size_; }
    cgc_object *const *begin() const { return items_; }
    cgc_object *const *end() const { return items_ + size_; }

    // Throws std::bad_alloc when it cannot grow (as std::vector does).
    void push_back(cgc_object *op) {
        if (size_ == capacity_) grow(size_ + 1);
        items_[size_++] = op;
    }
    void pop_back() { --size_; }
    void clear() { size_ = 0; }
    void swap(ObjectArray &other) noexcept {
        std::swap(items_, other.items_);
        std::swap(size_, other.size_);
        std::swap(capacity_, other.capacity_);
    }
    void append(const ObjectArray &other) {
        if (size_ + other.size_ > capacity_) grow(size_ + other.size_);
        if (other.size_) std::memcpy(items_ + size_, other.items_, other.size_ * sizeof *items_);
        size_ += other.size_;
    }

    // The capacity of the first growth (then doubled). Not swapped: it
    // belongs to the array's role, not to its storage.
    void set_first_capacity(size_t capacity) { first_capacity_ = capacity > 0 ? capacity : 1; }

  private:
    [[gnu::noinline]] void grow(size_t needed);

    cgc_object **items_ = nullptr;
    size_t size_ = 0;
    size_t capacity_ = 0;
    size_t first_capacity_ = 1024;
};

}  // namespace cyclegc::internal
