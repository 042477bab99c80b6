#pragma once
// What the CPU and XPU quantized kernels share (kernels/cpu/quantized.cpp,
// kernels/xpu/ops/quantized.cpp; docs/quantization.md): the checks, with the same messages on
// both devices, the parameters the kernels compute with, and the tensors' plumbing. The
// device-neutral kernels (clone, contiguous, copy_, to, int_repr: copies of the integers) are
// registered for both Quantized keys in kernels/common/quantized.cpp.
#include <memory>
#include <optional>
#include <vector>

#include <xten/core/quantizer.h>
#include <xten/core/tensor.h>

namespace xten {

// A fresh quantized tensor on `device` in format `fmt`.
Tensor new_quantized(IntArrayRef sizes, std::shared_ptr<const Quantizer> q, Device device,
                     MemoryFormat fmt = MemoryFormat::Contiguous);
// The integers of a quantized tensor as a plain tensor over the same memory.
Tensor int_alias(const Tensor& q);
inline const Quantizer& quantizer_of(const Tensor& t) {
  return *t.impl()->quantizer();
}
// The layout a kernel gives its result: the input's (per tensor), contiguous (per channel).
MemoryFormat quantized_format(const Tensor& t);

void check_float_input(const char* op, const Tensor& self);
void check_per_tensor(const char* op, const Tensor& t, const char* what);
// quint8 or qint8 per tensor: the activations conv2d, linear and add take.
void check_activation(const char* op, const Tensor& x);
// quantize_per_channel's checks; the quantizer of the result.
std::shared_ptr<const Quantizer> per_channel_quantizer(const char* op, const Tensor& self,
                                                       const Tensor& scales,
                                                       const Tensor& zero_points, int64_t axis,
                                                       ScalarType dtype);

// A weight's scale per output channel: qint8, symmetric, per tensor or per channel along axis 0.
std::vector<double> weight_scales(const char* op, const Tensor& w);
// input scale * weight scale[o] / output scale: what multiplies the int32 sum of channel o.
std::vector<float> product_scales(const Tensor& x, const std::vector<double>& w_scales,
                                  double out_scale);
// The bias in the units of the int32 sums (bias[o] / (input scale * weight scale[o])), a float32
// CPU tensor, or undefined without a bias. The bias must be 1-D floating point on x's device.
Tensor accumulator_bias(const char* op, const std::optional<Tensor>& bias, const Tensor& x,
                        const std::vector<double>& w_scales);
// linear's operand checks ([..., in] by [out, in]), its result's shape, and the [rows, out]
// matrix the kernels compute it as.
void check_linear_operands(const char* op, const Tensor& qx, const Tensor& qw);
DimVector linear_shape(const Tensor& x, const Tensor& w);
DimVector linear_rows(const Tensor& x, const Tensor& w);
// quantized::add's operand checks: one dtype, per tensor, one shape.
void check_add_operands(const char* op, const Tensor& qa, const Tensor& qb);

// quantized::add computes q = clamp(a * ka + b * kb + c, lo, hi) rounded half to even.
struct AddParams {
  float ka, kb, c, lo, hi;
};
AddParams add_params(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point,
                     bool relu);

// linear_dynamic's per-call parameters of an input whose values lie in [lo, hi]: uint8 over
// [0, 127] (docs/quantization.md "Saturation"), a range that holds 0.
struct DynamicParams {
  double scale;
  int64_t zero_point;
};
DynamicParams dynamic_params(float lo, float hi);

}  // namespace xten
