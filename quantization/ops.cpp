// The quantized ops' declarations and front ends (quantization/ops.h).
#include <xten/quantization/ops.h>

#include <xten/autograd/derivative.h>
#include <xten/dispatch/library.h>

namespace xten {
namespace {

using QuantizePerTensor = Tensor(const Tensor&, double, int64_t, ScalarType);
using QuantizePerChannel = Tensor(const Tensor&, const Tensor&, const Tensor&, int64_t, ScalarType);
using Unary = Tensor(const Tensor&);
using Conv2d = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                      IntArrayRef, IntArrayRef, int64_t, double, int64_t, bool);
using Linear = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, double, int64_t,
                      bool);
using LinearDynamic = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, bool);
using Add = Tensor(const Tensor&, const Tensor&, double, int64_t, bool);

template <class Sig>
TypedOperatorHandle<Sig> handle(const char* name) {
  return Dispatcher::singleton().find(name).typed<Sig>();
}

}  // namespace

LIBRARY(quantized, m) {
  m.def<QuantizePerTensor>(
      "quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor");
  m.def<QuantizePerChannel>(
      "quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType "
      "dtype) -> Tensor");
  m.def<Unary>("dequantize(Tensor self) -> Tensor");
  m.def<Unary>("int_repr(Tensor self) -> Tensor");
  m.def<Conv2d>(
      "conv2d(Tensor qx, Tensor qweight, Tensor? bias, int[2] stride, int[2] padding, int[2] "
      "dilation, int groups, float output_scale, int output_zero_point, bool relu) -> Tensor");
  m.def<Linear>(
      "linear(Tensor qx, Tensor qweight, Tensor? bias, float output_scale, int output_zero_point, "
      "bool relu) -> Tensor");
  m.def<LinearDynamic>(
      "linear_dynamic(Tensor x, Tensor qweight, Tensor? bias, bool relu) -> Tensor");
  m.def<Add>("add(Tensor qa, Tensor qb, float scale, int zero_point, bool relu) -> Tensor");
}

// Quantized computation is inference only (as in PyTorch): the results never require grad, also
// from a float input that does (quantize_per_tensor, linear_dynamic).
LIBRARY_IMPL(quantized, Autograd, m) {
  autograd::Derivatives d(m);
  d.nondifferentiable({"quantize_per_tensor", "quantize_per_channel", "dequantize", "int_repr",
                       "conv2d", "linear", "linear_dynamic", "add"});
}

Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, ScalarType dtype) {
  static const auto op = handle<QuantizePerTensor>("quantized::quantize_per_tensor");
  return op.call(self, scale, zero_point, dtype);
}
Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points,
                            int64_t axis, ScalarType dtype) {
  static const auto op = handle<QuantizePerChannel>("quantized::quantize_per_channel");
  const int64_t a = axis < 0 ? axis + self.dim() : axis;
  return op.call(self, scales, zero_points, a, dtype);
}
Tensor dequantize(const Tensor& self) {
  return self.dequantize();
}

namespace quantized {

Tensor conv2d(const Tensor& qx, const Tensor& qweight, const std::optional<Tensor>& bias,
              IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
              double output_scale, int64_t output_zero_point, bool relu) {
  static const auto op = handle<Conv2d>("quantized::conv2d");
  return op.call(qx, qweight, bias, stride, padding, dilation, groups, output_scale,
                 output_zero_point, relu);
}
Tensor linear(const Tensor& qx, const Tensor& qweight, const std::optional<Tensor>& bias,
              double output_scale, int64_t output_zero_point, bool relu) {
  static const auto op = handle<Linear>("quantized::linear");
  return op.call(qx, qweight, bias, output_scale, output_zero_point, relu);
}
Tensor linear_dynamic(const Tensor& x, const Tensor& qweight, const std::optional<Tensor>& bias,
                      bool relu) {
  static const auto op = handle<LinearDynamic>("quantized::linear_dynamic");
  return op.call(x, qweight, bias, relu);
}
Tensor add(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point, bool relu) {
  static const auto op = handle<Add>("quantized::add");
  return op.call(qa, qb, scale, zero_point, relu);
}

}  // namespace quantized
}  // namespace xten
