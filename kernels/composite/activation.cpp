// Activations written with other ops (valid on every backend).
#include <cmath>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>

namespace xten {
namespace {

Tensor hardtanh_kernel(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  XTEN_CHECK(min_val.to<double>() <= max_val.to<double>(), ValueError, "hardtanh",
             "min_val ({}) must not exceed max_val ({})", min_val.to_string(), max_val.to_string());
  return clamp(self, min_val, max_val);
}

// weight: one value, or one per channel (dim 1 of the input).
Tensor prelu_kernel(const Tensor& self, const Tensor& weight) {
  XTEN_CHECK(weight.dim() <= 1, ValueError, "prelu", "weight must be 0-D or 1-D, but got {}-D",
             weight.dim());
  const int64_t channels = self.dim() >= 2 ? self.size(1) : 1;
  XTEN_CHECK(weight.numel() == 1 || weight.numel() == channels, ValueError, "prelu",
             "weight has {} values, but the input has {} channels (dim 1); give 1 or {}",
             weight.numel(), channels, channels);
  Tensor w = weight.reshape({-1});
  if (w.numel() > 1) {
    DimVector shape(static_cast<size_t>(self.dim()), 1);
    shape[1] = channels;
    w = w.view(shape);
  }
  return where(self > 0, self, self * w);
}

// Zeroes each element with probability p (from the default generator) and scales the
// kept ones by 1 / (1 - p); the identity when not training.
Tensor dropout_kernel(const Tensor& self, double p, bool train) {
  XTEN_CHECK(p >= 0 && p <= 1, ValueError, "dropout", "probability must be in [0, 1], but got {}",
             p);
  if (!train || p == 0) return self;
  if (p == 1) return zeros_like(self);
  const Tensor keep = rand(self.sizes(), TensorOptions(kFloat).device(self.device())) >= p;
  return self * keep * (1.0 / (1.0 - p));
}

// The backward of softmax and log_softmax written with ops: the CPU and XPU have fused kernels,
// so this runs where autograd records it (a backward with create_graph) and on other backends.
Tensor softmax_backward_data_kernel(const Tensor& g, const Tensor& y, int64_t dim,
                                    ScalarType input_dtype) {
  const int64_t d = softmax_backward_meta("_softmax_backward_data", g, y, dim, input_dtype);
  return (y * (g - (g * y).sum({d}, true))).to(input_dtype);
}
Tensor threshold_backward_kernel(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  check_threshold_backward(grad, self);
  return where(self <= threshold, zeros({}, grad.options()), grad);
}

// gelu's derivative written with ops (the exact form: Phi(x) + x phi(x)).
Tensor gelu_backward_kernel(const Tensor& g, const Tensor& x, const std::string& approximate) {
  check_gelu_backward(g, x, approximate);
  constexpr double kPi = 3.141592653589793238463;
  if (approximate == "tanh") {
    const double beta = std::sqrt(2.0 / kPi), kappa = 0.044715;
    const Tensor inner_tanh = tanh((x + x * x * x * kappa) * beta);
    const Tensor left = x * 0.5, right = inner_tanh + 1;
    const Tensor d_right =
        left * (1 - inner_tanh * inner_tanh) * ((x * x * (3 * kappa) + 1) * beta);
    return g * (right * 0.5 + d_right);
  }
  const Tensor cdf = (erf(x * (1 / std::sqrt(2.0))) + 1) * 0.5;
  const Tensor pdf = exp(x * x * -0.5) * (1 / std::sqrt(2 * kPi));
  return g * (cdf + x * pdf);
}

// sigmoid's, tanh's and silu's derivatives written with ops (the formulas autograd used before
// the fused kernels).
Tensor sigmoid_backward_kernel(const Tensor& g, const Tensor& y) {
  check_pointwise_backward("sigmoid_backward", g, y, "output");
  return g * y * (1 - y);
}
Tensor tanh_backward_kernel(const Tensor& g, const Tensor& y) {
  check_pointwise_backward("tanh_backward", g, y, "output");
  return g * (1 - y * y);
}
Tensor silu_backward_kernel(const Tensor& g, const Tensor& x) {
  check_pointwise_backward("silu_backward", g, x);
  const Tensor s = sigmoid(x);
  return g * s * (x * (1 - s) + 1);
}

// leaky_relu's, elu's, softplus's and hardswish's derivatives written with ops (the formulas
// autograd used before the CPU kernels, kernels/cpu/activation_pointwise.cpp).
Tensor leaky_relu_backward_kernel(const Tensor& g, const Tensor& self, const Scalar& slope,
                                  bool self_is_result) {
  check_leaky_relu_backward(g, self, slope, self_is_result);
  return where(self > 0, g, g * slope);
}
// x <= 0 picks the exponential side, so NaN takes the linear one and passes the gradient
// (PyTorch's elu_backward); from the result y: input_scale (y + alpha scale) there.
Tensor elu_backward_kernel(const Tensor& g, const Scalar& alpha, const Scalar& scale,
                           const Scalar& input_scale, bool is_result, const Tensor& y_or_x) {
  check_pointwise_backward("elu_backward", g, y_or_x, "self_or_result");
  const double a = alpha.to<double>(), s = scale.to<double>(), is = input_scale.to<double>();
  const Tensor neg = is_result ? g * ((y_or_x + a * s) * is) : g * exp(y_or_x * is) * (a * s * is);
  return where(y_or_x <= 0, neg, g * s);
}
Tensor softplus_backward_kernel(const Tensor& g, const Tensor& self, const Scalar& beta,
                                const Scalar& threshold) {
  check_pointwise_backward("softplus_backward", g, self);
  check_softplus_beta(beta);
  const Tensor bx = self * beta;
  return where(bx > threshold, g, g * sigmoid(bx));
}
// PyTorch 2.11's bounds: 0 at x = -3, the identity's 1 at x = 3 and at NaN.
Tensor hardswish_backward_kernel(const Tensor& g, const Tensor& self) {
  check_pointwise_backward("hardswish_backward", g, self);
  return where(self <= -3, zeros({}, g.dtype(), g.device()),
               where(self < 3, g * (self / 3 + 0.5), g));
}

Tensor log_softmax_backward_data_kernel(const Tensor& g, const Tensor& y, int64_t dim,
                                        ScalarType input_dtype) {
  const int64_t d = softmax_backward_meta("_log_softmax_backward_data", g, y, dim, input_dtype);
  return (g - exp(y) * g.sum({d}, true)).to(input_dtype);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("_softmax_backward_data", softmax_backward_data_kernel);
  m.impl("_log_softmax_backward_data", log_softmax_backward_data_kernel);
  m.impl("threshold_backward", threshold_backward_kernel);
  m.impl("gelu_backward", gelu_backward_kernel);
  m.impl("sigmoid_backward", sigmoid_backward_kernel);
  m.impl("tanh_backward", tanh_backward_kernel);
  m.impl("silu_backward", silu_backward_kernel);
  m.impl("leaky_relu_backward", leaky_relu_backward_kernel);
  m.impl("elu_backward", elu_backward_kernel);
  m.impl("softplus_backward", softplus_backward_kernel);
  m.impl("hardswish_backward", hardswish_backward_kernel);
  m.impl("hardtanh", hardtanh_kernel);
  m.impl("prelu", prelu_kernel);
  m.impl("dropout", dropout_kernel);
}

}  // namespace xten
