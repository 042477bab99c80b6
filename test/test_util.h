#pragma once
// Helpers shared by the tests: reading any element as double, references over broadcast
// indices, dtype tolerances, and layouts (non-contiguous, broadcast, zero-size, zero-dim).
#include <algorithm>
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

// Tolerance by dtype (docs/adding_an_op.md, step 3): exact for integers and bool.
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
  // (an empty tensor may have no memory at all: memcmp must not see its null pointer)
  if (x.nbytes() > 0 && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) != 0)
    return ::testing::AssertionFailure() << "values differ\n" << x << "\n" << y;
  return ::testing::AssertionSuccess();
}

// Expects `stmt` to throw E with a message containing `needle`.
// Whether a and b (any devices and float dtypes) have the same shape and |a - b| <= atol +
// rtol * |b| everywhere.
inline ::testing::AssertionResult allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5,
                                           double atol = 1e-6) {
  if (a.sizes() != b.sizes())
    return ::testing::AssertionFailure()
           << "shapes " << to_string(a.sizes()) << " and " << to_string(b.sizes());
  NoGradGuard no_grad;
  const Tensor x = a.to(Device("cpu"), kDouble), y = b.to(Device("cpu"), kDouble);
  const Tensor err = (x - y).abs() - (y.abs() * rtol + atol);
  if (x.numel() == 0 || err.max().item<double>() <= 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |a - b| = " << (x - y).abs().max().item<double>()
                                       << "\n a = " << x << "\n b = " << y;
}

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

// Activations and clamp-like ops, each of which must give NaN where its input is NaN (as
// PyTorch: NaN in, NaN out, so that divergence stays visible). Reductions and pooling see a
// NaN in every row or window of the inputs check_nan_propagation makes. Shared by the CPU
// test and the XPU one.
struct NanCase {
  const char* op;
  std::function<Tensor(const Tensor&)> fn;
};
inline std::vector<NanCase> nan_propagating_ops() {
  using T = const Tensor&;
  return {
      {"relu", [](T x) { return relu(x); }},
      {"relu_",
       [](T x) {
         Tensor y = x.clone();
         return relu_(y);
       }},
      {"relu6 (hardtanh 0, 6)", [](T x) { return hardtanh(x, 0, 6); }},
      {"hardtanh", [](T x) { return hardtanh(x); }},
      {"leaky_relu", [](T x) { return leaky_relu(x, 0.1); }},
      {"elu", [](T x) { return elu(x); }},
      {"gelu", [](T x) { return gelu(x); }},
      {"gelu tanh", [](T x) { return gelu(x, "tanh"); }},
      {"silu", [](T x) { return silu(x); }},
      {"softplus", [](T x) { return softplus(x); }},
      {"hardswish", [](T x) { return hardswish(x); }},
      {"sigmoid", [](T x) { return sigmoid(x); }},
      {"tanh", [](T x) { return tanh(x); }},
      {"clamp", [](T x) { return clamp(x, -1, 1); }},
      {"clamp_min", [](T x) { return clamp(x, 0, std::nullopt); }},
      {"clamp_max", [](T x) { return clamp(x, std::nullopt, 0); }},
      {"maximum", [](T x) { return maximum(x, zeros_like(x)); }},
      {"maximum (NaN second)", [](T x) { return maximum(zeros_like(x), x); }},
      {"minimum", [](T x) { return minimum(zeros_like(x), x); }},
      {"amax dim", [](T x) { return amax(x, {1}); }},
      {"amin dim", [](T x) { return amin(x, {1}); }},
      {"max dim", [](T x) { return std::get<0>(max(x, 1)); }},
      {"min dim", [](T x) { return std::get<0>(min(x, 1)); }},
      {"max_pool2d",
       [](T x) {
         return max_pool2d(x.unsqueeze(0).unsqueeze(0), {1, 4});
       }},
      {"adaptive_max_pool2d",
       [](T x) {
         return std::get<0>(adaptive_max_pool2d(x.unsqueeze(0).unsqueeze(0), {2, 1}));
       }},
  };
}
// Runs every case on rows of 4 (one NaN per row, at a different column each row) of dtype
// `t` on `device`, and expects NaN exactly at the NaN inputs (everywhere, for the
// reductions and pooling, whose every row or window holds one).
inline void check_nan_propagation(ScalarType t, const char* device, int64_t rows) {
  Tensor x = random_tensor({rows, 4}, t, -3, 3);
  const Tensor col = remainder(arange(rows * 4), 4).reshape({rows, 4});
  const Tensor at = col == remainder(arange(rows), 4).unsqueeze(1);
  x = where(at, full({}, NAN, t), x).to(device);
  for (const NanCase& c : nan_propagating_ops()) {
    const Tensor y = c.fn(x).to(kCPU);
    const Tensor expect = y.numel() == x.numel() ? at : ones(y.sizes(), kBool);
    EXPECT_TRUE(same_bytes(isnan(y).reshape(expect.sizes()), expect))
        << c.op << " " << to_string(t) << " on " << device << ": NaN in must give NaN out\n"
        << y;
  }
}

// Values at -inf and +inf that PyTorch 2.11 gives (test/data/grad_edges.json has them with their
// gradients): the activations whose forms meet 0 * inf or inf - inf there.
struct InfCase {
  const char* op;
  std::function<Tensor(const Tensor&)> fn;
  double at_minus_inf, at_plus_inf;  // NaN: NaN expected
};
inline std::vector<InfCase> infinity_cases() {
  using T = const Tensor&;
  const double inf = INFINITY;
  return {
      {"gelu", [](T x) { return gelu(x); }, NAN, NAN},
      {"gelu tanh", [](T x) { return gelu(x, "tanh"); }, NAN, inf},
      {"silu", [](T x) { return silu(x); }, NAN, inf},
      {"tanh", [](T x) { return tanh(x); }, -1, 1},
      {"sigmoid", [](T x) { return sigmoid(x); }, 0, 1},
      {"exp", [](T x) { return exp(x); }, 0, inf},
      {"relu", [](T x) { return relu(x); }, 0, inf},
      {"hardtanh", [](T x) { return hardtanh(x); }, -1, 1},
      {"elu", [](T x) { return elu(x); }, -1, inf},
      {"leaky_relu", [](T x) { return leaky_relu(x, 0.1); }, -inf, inf},
  };
}
// Every case on `n` copies of -inf and +inf of dtype `t` on `device` (n large enough for the
// vector loops and threads when big).
inline void check_infinities(ScalarType t, const char* device, int64_t n) {
  const Tensor x = cat({full({n}, -INFINITY, t), full({n}, INFINITY, t)}).to(device);
  for (const InfCase& c : infinity_cases()) {
    const Tensor y = c.fn(x).to(kCPU).to(kDouble);
    for (int side = 0; side < 2; ++side) {
      const double want = side ? c.at_plus_inf : c.at_minus_inf;
      const Tensor part = y.narrow(0, side * n, n);
      const bool ok =
          std::isnan(want) ? isnan(part).all().item<bool>() : (part == want).all().item<bool>();
      EXPECT_TRUE(ok) << c.op << " " << to_string(t) << " on " << device << " at "
                      << (side ? "+inf" : "-inf") << ": expected " << want << ", got "
                      << part.narrow(0, 0, 1);
    }
  }
}

// Every 1021st float (by bit pattern) of [0, up_to] and its negative: the ulp tests' samples.
inline std::vector<float> every_1021st_float_and_its_negative(float up_to) {
  std::vector<float> xs;
  for (uint32_t b = 0;; b += 1021) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    if (x > up_to) break;
    xs.push_back(x);
    xs.push_back(-x);
  }
  return xs;
}

// The worst errors of gelu and gelu_backward (exact form) on xs against long double, computed
// on `device`.
struct GeluErrors {
  double worst = 0, worst_grad = 0;  // ulp; the derivative's of the size of its terms
  float at = 0, at_grad = 0;
};
inline GeluErrors gelu_errors(std::vector<float> xs, const char* device = "cpu") {
  const int64_t n = static_cast<int64_t>(xs.size());
  const Tensor in = from_blob(xs.data(), {n}, kFloat).to(device);
  const Tensor y = gelu(in).to(kCPU), g = gelu_backward(ones({n}, in.options()), in).to(kCPU);
  const float* py = y.data_ptr<float>();
  const float* pg = g.data_ptr<float>();
  auto ulp = [](long double r) {
    return std::exp2(std::floor(std::log2(std::max<double>(std::fabs(double(r)), 1.2e-38))) - 23);
  };
  GeluErrors r;
  for (int64_t i = 0; i < n; ++i) {
    const long double x = xs[i], cdf = 0.5L * std::erfc(-x / std::sqrt(2.0L));
    const long double pdf = std::exp(-0.5L * x * x) / std::sqrt(2 * 3.14159265358979323846L);
    const long double ref = x * cdf;
    if (std::fabs(double(ref)) > 1e-37) {
      const double e = std::fabs(double(py[i] - ref)) / ulp(ref);
      if (e > r.worst) r.worst = e, r.at = xs[i];
    }
    const long double scale = cdf + std::fabs(double(x * pdf));
    if (scale > 1e-30) {
      const double e = std::fabs(double(pg[i] - (cdf + x * pdf))) / ulp(scale);
      if (e > r.worst_grad) r.worst_grad = e, r.at_grad = xs[i];
    }
  }
  return r;
}

}  // namespace xten::testing
