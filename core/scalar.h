#pragma once
// Scalar: a number passed to an op (alpha, fill value, clamp bound). It keeps the category
// it was written in (bool, integer, floating), which type promotion reads.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>

#include <xten/core/scalar_type.h>

namespace xten {

class Scalar {
 public:
  Scalar() : Scalar(int64_t{0}) {}
  Scalar(bool v) : tag_(Tag::Bool) { v_.i = v; }  // NOLINT
  Scalar(const char*) = delete;  // a string is not a number (it would convert to bool)
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : tag_(Tag::Int) {  // NOLINT
    v_.i = static_cast<int64_t>(v);
  }
  Scalar(double v) : tag_(Tag::Double) { v_.d = v; }                          // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}                         // NOLINT
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}      // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT

  bool is_boolean() const { return tag_ == Tag::Bool; }
  bool is_integral(bool include_bool) const {
    return tag_ == Tag::Int || (include_bool && tag_ == Tag::Bool);
  }
  bool is_floating_point() const { return tag_ == Tag::Double; }
  // The dtype a Scalar has as an operand: Bool, Long or Double.
  ScalarType type() const { return tag_ == Tag::Bool ? kBool : tag_ == Tag::Int ? kLong : kDouble; }

  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return tag_ == Tag::Double ? v_.d != 0 : v_.i != 0;
    } else if (tag_ == Tag::Double) {
      return static_cast<T>(v_.d);
    } else {
      return static_cast<T>(v_.i);
    }
  }
  double to_double() const { return to<double>(); }
  int64_t to_long() const { return to<int64_t>(); }

  std::string to_string() const;

 private:
  enum class Tag : uint8_t { Bool, Int, Double };
  Tag tag_;
  union {
    int64_t i;
    double d;
  } v_;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace xten
