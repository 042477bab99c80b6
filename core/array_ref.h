#pragma once
// IntArrayRef: a non-owning view of int64 values (sizes, strides, dims), taken by value.
// DimVector: the owning small vector that holds them without a heap allocation up to
// kInlineDims dims, so that making a tensor of ordinary rank allocates no shape memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace xten {

class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  constexpr IntArrayRef(const int64_t* data, size_t size) : data_(data), size_(size) {}
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  // Valid for the full expression it appears in, e.g. the call `zeros({2, 3})`.
  constexpr IntArrayRef(std::initializer_list<int64_t> l)  // NOLINT
      : data_(l.begin()), size_(l.size()) {}
#pragma GCC diagnostic pop
  constexpr IntArrayRef(const int64_t& single) : data_(&single), size_(1) {}  // NOLINT

  const int64_t* data() const {
    return data_;
  }
  size_t size() const {
    return size_;
  }
  bool empty() const {
    return size_ == 0;
  }
  const int64_t* begin() const {
    return data_;
  }
  const int64_t* end() const {
    return data_ + size_;
  }
  const int64_t& operator[](size_t i) const {
    return data_[i];
  }
  const int64_t& back() const {
    return data_[size_ - 1];
  }
  std::vector<int64_t> vec() const {
    return {begin(), end()};
  }
  IntArrayRef slice(size_t start, size_t n) const {
    return {data_ + start, n};
  }

  friend bool operator==(IntArrayRef a, IntArrayRef b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(IntArrayRef a, IntArrayRef b) {
    return !(a == b);
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

// "(2, 3)"; "()" for a zero-dim shape.
std::string to_string(IntArrayRef a);
std::ostream& operator<<(std::ostream& os, IntArrayRef a);

class DimVector {
 public:
  static constexpr size_t kInlineDims = 6;

  DimVector() = default;
  explicit DimVector(size_t n, int64_t value = 0) { assign(n, value); }
  DimVector(IntArrayRef a) { assign(a.begin(), a.end()); }  // NOLINT
  DimVector(std::initializer_list<int64_t> l) { assign(l.begin(), l.end()); }
  DimVector(const DimVector& o) { assign(o.begin(), o.end()); }
  DimVector& operator=(const DimVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  DimVector(DimVector&& o) noexcept { take(o); }
  DimVector& operator=(DimVector&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~DimVector() { release(); }

  operator IntArrayRef() const { return {data_, size_}; }  // NOLINT
  int64_t* data() { return data_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* begin() { return data_; }
  int64_t* end() { return data_ + size_; }
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  int64_t& operator[](size_t i) { return data_[i]; }
  const int64_t& operator[](size_t i) const { return data_[i]; }
  int64_t& back() { return data_[size_ - 1]; }

  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void assign(size_t n, int64_t value) {
    size_ = 0;
    resize(n, value);
  }
  void assign(const int64_t* b, const int64_t* e) {
    const size_t n = static_cast<size_t>(e - b);
    reserve(n);
    if (n) std::memmove(data_, b, n * sizeof(int64_t));
    size_ = n;
  }
  void push_back(int64_t v) {
    if (size_ == cap_) reserve(cap_ * 2);
    data_[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    push_back(0);
    std::memmove(data_ + pos + 1, data_ + pos, (size_ - 1 - pos) * sizeof(int64_t));
    data_[pos] = v;
  }
  void erase(size_t pos) {
    std::memmove(data_ + pos, data_ + pos + 1, (size_ - 1 - pos) * sizeof(int64_t));
    --size_;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    auto* p = new int64_t[n];
    if (size_) std::memcpy(p, data_, size_ * sizeof(int64_t));
    release();
    data_ = p;
    cap_ = n;
  }

 private:
  void release() {
    if (data_ != inline_) delete[] data_;
    data_ = inline_;
    cap_ = kInlineDims;
  }
  void take(DimVector& o) {
    if (o.data_ == o.inline_) {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(int64_t));
      data_ = inline_;
      cap_ = kInlineDims;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = kInlineDims;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  int64_t inline_[kInlineDims];
  int64_t* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = kInlineDims;
};

}  // namespace xten

template <>
struct fmt::formatter<xten::IntArrayRef> : fmt::formatter<std::string> {
  template <class Ctx>
  auto format(xten::IntArrayRef a, Ctx& ctx) const {
    return fmt::formatter<std::string>::format(xten::to_string(a), ctx);
  }
};
template <>
struct fmt::formatter<xten::DimVector> : fmt::formatter<xten::IntArrayRef> {};
