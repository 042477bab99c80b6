#include <xten/nn/init.h>

#include <cmath>

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

}  // namespace xten::nn::init
