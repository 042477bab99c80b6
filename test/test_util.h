#pragma once
// Helpers shared by the tests: reading any element as double, references over broadcast
// indices, dtype tolerances, and layouts (non-contiguous, broadcast, zero-size, zero-dim).
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <xten/xten.h>

namespace xten::testing {

inline const std::vector<ScalarType>& all_dtypes() {
  static const std::vector<ScalarType> v{kBool, kByte, kChar,     kShort, kInt,
                                         kLong, kHalf, kBFloat16, kFloat, kDouble};
  return v;
}
inline const std::vector<ScalarType>& float_dtypes() {
  static const std::vector<ScalarType> v{kHalf, kBFloat16, kFloat, kDouble};
  return v;
}
inline const std::vector<ScalarType>& int_dtypes() {
  static const std::vector<ScalarType> v{kByte, kChar, kShort, kInt, kLong};
  return v;
}

// Element `idx` of `t` (broadcast: leading dims may be missing, size-1 dims repeat).
inline double value_at(const Tensor& t, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  const size_t lead = idx.size() - static_cast<size_t>(t.dim());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) != 1) off += idx[lead + d] * t.stride(d);
  const void* p = t.data_ptr();
  switch (t.dtype()) {
    case kBool:
      return static_cast<const bool*>(p)[off];
    case kByte:
      return static_cast<const uint8_t*>(p)[off];
    case kChar:
      return static_cast<const int8_t*>(p)[off];
    case kShort:
      return static_cast<const int16_t*>(p)[off];
    case kInt:
      return static_cast<const int32_t*>(p)[off];
    case kLong:
      return static_cast<double>(static_cast<const int64_t*>(p)[off]);
    case kHalf:
      return static_cast<float>(static_cast<const Half*>(p)[off]);
    case kBFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(p)[off]);
    case kFloat:
      return static_cast<const float*>(p)[off];
    case kDouble:
      return static_cast<const double*>(p)[off];
    default:
      break;
  }
  ADD_FAILURE() << "bad dtype";
  return 0;
}

inline void for_each_index(IntArrayRef shape,
                           const std::function<void(const std::vector<int64_t>&)>& f) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// A double rounded to what dtype `t` stores (wrapping for integers, as a cast does).
inline double round_to(double v, ScalarType t) {
  switch (t) {
    case kBool:
      return v != 0;
    case kByte:
      return static_cast<uint8_t>(static_cast<int64_t>(v));
    case kChar:
      return static_cast<int8_t>(static_cast<int64_t>(v));
    case kShort:
      return static_cast<int16_t>(static_cast<int64_t>(v));
    case kInt:
      return static_cast<int32_t>(static_cast<int64_t>(v));
    case kLong:
      return std::trunc(v);
    case kHalf:
      return static_cast<float>(Half(static_cast<float>(v)));
    case kBFloat16:
      return static_cast<float>(BFloat16(static_cast<float>(v)));
    case kFloat:
      return static_cast<float>(v);
    default:
      return v;
  }
}

// Tolerance by dtype (design.md section 6): exact for integers and bool.
inline bool close(double actual, double expected, ScalarType t, double rtol_scale = 1.0) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  double rtol = 0, atol = 0;
  switch (t) {
    case kHalf:
    case kBFloat16:
      rtol = 1e-2;
      atol = 1e-3;
      break;
    case kFloat:
      rtol = 1e-6;
      atol = 1e-6;
      break;
    case kDouble:
      rtol = 1e-12;
      atol = 1e-12;
      break;
    default:
      return actual == expected;
  }
  return std::abs(actual - expected) <= rtol_scale * (atol + rtol * std::abs(expected));
}

// Checks every element of `out` against ref(index) rounded to out's dtype.
inline void expect_elements(const Tensor& out,
                            const std::function<double(const std::vector<int64_t>&)>& ref,
                            const std::string& what, double rtol_scale = 1.0) {
  int failures = 0;
  for_each_index(out.sizes(), [&](const std::vector<int64_t>& idx) {
    const double e = round_to(ref(idx), out.dtype());
    const double a = value_at(out, idx);
    if (!close(a, e, out.dtype(), rtol_scale) && failures++ < 5)
      ADD_FAILURE() << what << " at index " << to_string(IntArrayRef(idx)) << ": got " << a
                    << ", expected " << e << " (dtype " << to_string(out.dtype()) << ")";
  });
}

// Random values valid for `dtype` in [lo, hi) (integers: integral values).
inline Tensor random_tensor(IntArrayRef shape, ScalarType dtype, double lo = -8, double hi = 8) {
  if (dtype == kBool) return randint(0, 2, shape).to(kBool);
  if (is_integral_type(dtype, false)) {
    const double l = dtype == kByte ? std::max(lo, 0.0) : lo;
    return randint(static_cast<int64_t>(l), static_cast<int64_t>(hi), shape).to(dtype);
  }
  return (rand(shape, kDouble) * (hi - lo) + lo).to(dtype);
}

// The same values in a non-contiguous layout (every other element of a wider buffer).
inline Tensor non_contiguous(const Tensor& t) {
  if (t.dim() == 0) return t;
  std::vector<int64_t> wide(t.sizes().begin(), t.sizes().end());
  wide.back() *= 2;
  Tensor buf = zeros(wide, t.dtype());
  Tensor v = buf.slice(-1, 0, std::nullopt, 2);
  v.copy_(t);
  EXPECT_FALSE(t.numel() > 1 && v.is_contiguous());
  return v;
}

// The same dtype, shape and values bit for bit (NaN payloads included), layouts aside; tensors
// on a device are compared through the host.
inline ::testing::AssertionResult same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to(kCPU).contiguous(), y = b.to(kCPU).contiguous();
  if (x.dtype() != y.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << to_string(x.dtype()) << " vs " << to_string(y.dtype());
  if (x.sizes() != y.sizes())
    return ::testing::AssertionFailure() << "shape " << x.sizes() << " vs " << y.sizes();
  if (std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0)
    return ::testing::AssertionFailure() << "values differ\n" << x << "\n" << y;
  return ::testing::AssertionSuccess();
}

// Expects `stmt` to throw E with a message containing `needle`.
#define EXPECT_THROW_MSG(stmt, E, needle)                                      \
  do {                                                                         \
    try {                                                                      \
      stmt;                                                                    \
      ADD_FAILURE() << "expected " #E " from: " #stmt;                         \
    } catch (const E& e) {                                                     \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)         \
          << "message: " << e.what() << "\nexpected to contain: " << (needle); \
    }                                                                          \
  } while (0)

}  // namespace xten::testing
