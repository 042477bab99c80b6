#include <xten/nn/init.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::nn::init {
namespace {

// Fills t (in place, unrecorded) with `values`, made in float32 or float64 on t's device.
Tensor& fill_from(Tensor& t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

ScalarType draw_dtype(const Tensor& t) {
  return t.dtype() == kDouble ? kDouble : kFloat;
}

void check_floating(const char* op, const Tensor& t) {
  XTEN_CHECK(t.defined() && is_floating_type(t.dtype()), TypeError, op,
             "expected a floating tensor, but got {}",
             t.defined() ? to_string(t.dtype()) : "an undefined tensor");
}

int64_t fan(const Tensor& t, const std::string& mode, const char* op) {
  XTEN_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, op,
             "mode must be 'fan_in' or 'fan_out', but got '{}'", mode);
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return mode == "fan_in" ? in : out;
}

}  // namespace

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  XTEN_CHECK(t.dim() >= 2, ValueError, "calculate_fan_in_and_fan_out",
             "fan in and fan out need a tensor of at least 2 dims, but got shape {}", t.sizes());
  int64_t field = 1;
  for (int64_t d = 2; d < t.dim(); ++d) field *= t.size(d);
  return {t.size(1) * field, t.size(0) * field};
}

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "identity" || nl == "sigmoid" || nl.rfind("conv", 0) == 0) return 1.0;
  if (nl == "tanh") return 5.0 / 3;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nl == "selu") return 3.0 / 4;
  XTEN_FAIL(ValueError, "calculate_gain", "unsupported nonlinearity '{}'", nl);
}

Tensor& uniform_(Tensor& t, double a, double b) {
  check_floating("uniform_", t);
  XTEN_CHECK(a <= b, ValueError, "uniform_", "expected a <= b, but got a={} and b={}", a, b);
  return fill_from(t, rand(t.sizes(), TensorOptions(draw_dtype(t), t.device())) * (b - a) + a);
}

Tensor& normal_(Tensor& t, double mean, double std) {
  check_floating("normal_", t);
  XTEN_CHECK(std >= 0, ValueError, "normal_", "std must be non-negative, but got {}", std);
  return fill_from(t, randn(t.sizes(), TensorOptions(draw_dtype(t), t.device())) * std + mean);
}

Tensor& constant_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}
Tensor& zeros_(Tensor& t) {
  return constant_(t, 0);
}
Tensor& ones_(Tensor& t) {
  return constant_(t, 1);
}

Tensor& kaiming_uniform_(Tensor& t, double a, const std::string& mode,
                         const std::string& nonlinearity) {
  const double bound =
      calculate_gain(nonlinearity, a) * std::sqrt(3.0 / fan(t, mode, "kaiming_uniform_"));
  return uniform_(t, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& t, double a, const std::string& mode,
                        const std::string& nonlinearity) {
  return normal_(t, 0,
                 calculate_gain(nonlinearity, a) / std::sqrt(fan(t, mode, "kaiming_normal_")));
}

Tensor& xavier_uniform_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(t, -bound, bound);
}

Tensor& xavier_normal_(Tensor& t, double gain) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

Tensor& trunc_normal_(Tensor& t, double mean, double std, double a, double b) {
  check_floating("trunc_normal_", t);
  XTEN_CHECK(a < b && std > 0, ValueError, "trunc_normal_",
             "expected a < b and std > 0, but got a={}, b={}, std={}", a, b, std);
  // Rejection: redraw the values outside [a, b] until none is left (each round keeps at least
  // the mass of [a, b], so few rounds are needed for any sensible range).
  const TensorOptions o(draw_dtype(t), t.device());
  Tensor x = randn(t.sizes(), o) * std + mean;
  for (int round = 0; round < 1000; ++round) {
    const Tensor outside = logical_or(x<a, x> b);
    if (!outside.any().item<bool>()) break;
    x = where(outside, randn(t.sizes(), o) * std + mean, x);
  }
  return fill_from(t, clamp(x, a, b));
}

namespace {

// Thin Householder QR of the m x n row-major matrix a (m >= n): returns Q (m x n, row-major)
// with each column multiplied by the sign of R's diagonal entry (so the factorization is the
// one with a positive diagonal, what makes Q uniformly distributed for a Gaussian a).
std::vector<double> orthonormal_columns(std::vector<double> a, int64_t m, int64_t n) {
  std::vector<std::vector<double>> reflectors(static_cast<size_t>(n));
  std::vector<double> sign(static_cast<size_t>(n), 1.0);
  for (int64_t k = 0; k < n; ++k) {
    double norm = 0;
    for (int64_t i = k; i < m; ++i) norm += a[i * n + k] * a[i * n + k];
    norm = std::sqrt(norm);
    std::vector<double>& v = reflectors[static_cast<size_t>(k)];
    if (norm == 0) continue;  // a zero column (probability 0): no reflection, R's entry 0
    const double alpha = a[k * n + k] > 0 ? -norm : norm;  // R's diagonal entry
    sign[static_cast<size_t>(k)] = alpha < 0 ? -1.0 : 1.0;
    v.assign(static_cast<size_t>(m - k), 0.0);
    for (int64_t i = k; i < m; ++i) v[i - k] = a[i * n + k];
    v[0] -= alpha;
    double vn = 0;
    for (double x : v) vn += x * x;
    vn = std::sqrt(vn);
    for (double& x : v) x /= vn;
    for (int64_t j = k; j < n; ++j) {  // a[k:, j] -= 2 v (v . a[k:, j])
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * a[i * n + j];
      for (int64_t i = k; i < m; ++i) a[i * n + j] -= 2 * dot * v[i - k];
    }
  }
  // Q = H_0 ... H_{n-1} applied to the first n columns of the identity, last reflector first.
  std::vector<double> q(static_cast<size_t>(m * n), 0.0);
  for (int64_t j = 0; j < n; ++j) q[j * n + j] = 1;
  for (int64_t k = n - 1; k >= 0; --k) {
    const std::vector<double>& v = reflectors[static_cast<size_t>(k)];
    if (v.empty()) continue;
    for (int64_t j = 0; j < n; ++j) {
      double dot = 0;
      for (int64_t i = k; i < m; ++i) dot += v[i - k] * q[i * n + j];
      for (int64_t i = k; i < m; ++i) q[i * n + j] -= 2 * dot * v[i - k];
    }
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) q[i * n + j] *= sign[static_cast<size_t>(j)];
  return q;
}

}  // namespace

Tensor& orthogonal_(Tensor& t, double gain) {
  check_floating("orthogonal_", t);
  XTEN_CHECK(t.dim() >= 2, ValueError, "orthogonal_",
             "only tensors with 2 or more dimensions are supported, but got shape {}", t.sizes());
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // The tall orientation: m >= n; a wide t gets the transpose's orthonormal columns as rows.
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  const Tensor draw = randn({m, n}, kDouble).contiguous();
  const double* p = static_cast<const double*>(draw.data_ptr());
  std::vector<double> q =
      orthonormal_columns(std::vector<double>(p, p + m * n), m, n);
  Tensor qt = empty({m, n}, kDouble);
  std::copy(q.begin(), q.end(), static_cast<double*>(qt.data_ptr()));
  if (wide) qt = qt.t();
  return fill_from(t, (qt.contiguous() * gain).view(t.sizes()).to(t.device(), draw_dtype(t)));
}

}  // namespace xten::nn::init
