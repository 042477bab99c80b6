// What the CPU and XPU quantized kernels share (kernels/common/quantized.h), and the kernels
// that only copy integers, registered for both Quantized keys.
#include <xten/kernels/common/quantized.h>

#include <algorithm>
#include <cmath>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {

Tensor new_quantized(IntArrayRef sizes, std::shared_ptr<const Quantizer> q, Device device,
                     MemoryFormat fmt) {
  Tensor t = empty_tensor(sizes, strides_for_format("quantize", sizes, fmt), q->dtype, device);
  t.impl()->set_quantizer(std::move(q));
  return t;
}

Tensor int_alias(const Tensor& q) {
  return Tensor(std::make_shared<TensorImpl>(q.storage(), underlying_type(q.dtype()), q.sizes(),
                                             q.strides(), q.storage_offset()));
}

MemoryFormat quantized_format(const Tensor& t) {
  return quantizer_of(t).per_channel() ? MemoryFormat::Contiguous : t.suggest_memory_format();
}

void check_float_input(const char* op, const Tensor& self) {
  XTEN_CHECK(self.is_floating_point(), TypeError, op,
             "expects a floating-point tensor, but got dtype {}", dtype_name(self.dtype()));
}

void check_per_tensor(const char* op, const Tensor& t, const char* what) {
  XTEN_CHECK(!quantizer_of(t).per_channel(), NotImplementedError, op,
             "{} must be quantized per tensor, but it is {}", what,
             to_string(quantizer_of(t).scheme));
}

void check_activation(const char* op, const Tensor& x) {
  XTEN_CHECK(x.is_quantized() && (x.dtype() == kQUInt8 || x.dtype() == kQInt8), TypeError, op,
             "the input must be quint8 or qint8, but got {}", dtype_name(x.dtype()));
  check_per_tensor(op, x, "the input");
}

std::shared_ptr<const Quantizer> per_channel_quantizer(const char* op, const Tensor& self,
                                                       const Tensor& scales,
                                                       const Tensor& zero_points, int64_t axis,
                                                       ScalarType dtype) {
  check_float_input(op, self);
  XTEN_CHECK(axis >= 0 && axis < self.dim(), IndexError, op,
             "axis {} is out of range for a tensor of {} dims", axis, self.dim());
  const int64_t channels = self.size(axis);
  XTEN_CHECK(scales.dim() == 1 && scales.numel() == channels && zero_points.dim() == 1 &&
                 zero_points.numel() == channels,
             ValueError, op,
             "scales (shape {}) and zero_points (shape {}) must be 1-D with one value for each of "
             "the {} channels along axis {}",
             scales.sizes(), zero_points.sizes(), channels, axis);
  XTEN_CHECK(!zero_points.is_floating_point(), TypeError, op,
             "zero_points must be integers, but got dtype {}", dtype_name(zero_points.dtype()));
  const Tensor s = scales.to(Device(kCPU), kDouble).contiguous();
  const Tensor z = zero_points.to(Device(kCPU), kLong).contiguous();
  std::vector<double> sv(s.data_ptr<double>(), s.data_ptr<double>() + channels);
  std::vector<int64_t> zv(z.data_ptr<int64_t>(), z.data_ptr<int64_t>() + channels);
  return Quantizer::per_channel(op, dtype, sv, zv, axis);
}

std::vector<double> weight_scales(const char* op, const Tensor& w) {
  XTEN_CHECK(w.is_quantized(), TypeError, op, "the weight must be quantized, but got {}",
             dtype_name(w.dtype()));
  const Quantizer& q = quantizer_of(w);
  XTEN_CHECK(w.dtype() == kQInt8, TypeError, op, "the weight must be qint8, but got {}",
             dtype_name(w.dtype()));
  if (!q.per_channel()) {
    XTEN_CHECK(q.zero_point == 0, NotImplementedError, op,
               "the weight's zero point must be 0 (symmetric), but got {}", q.zero_point);
    return std::vector<double>(static_cast<size_t>(w.size(0)), q.scale);
  }
  XTEN_CHECK(q.axis == 0, NotImplementedError, op,
             "a per-channel weight must be quantized along axis 0 (output channels), but got {}",
             q.axis);
  for (int64_t z : q.zero_points)
    XTEN_CHECK(z == 0, NotImplementedError, op,
               "the weight's zero points must be 0 (symmetric), but got {}", z);
  return q.scales;
}

std::vector<float> product_scales(const Tensor& x, const std::vector<double>& w_scales,
                                  double out_scale) {
  std::vector<float> s;
  for (double ws : w_scales)
    s.push_back(static_cast<float>(quantizer_of(x).scale * ws / out_scale));
  return s;
}

Tensor accumulator_bias(const char* op, const std::optional<Tensor>& bias, const Tensor& x,
                        const std::vector<double>& w_scales) {
  if (!bias) return Tensor();
  const int64_t channels = static_cast<int64_t>(w_scales.size());
  XTEN_CHECK(bias->is_floating_point() && bias->device() == x.device() && bias->dim() == 1 &&
                 bias->numel() == channels,
             ValueError, op,
             "the bias must be a 1-D floating-point tensor of {} values on the input's device "
             "({}), but got {} of shape {} on {}",
             channels, x.device().str(), dtype_name(bias->dtype()), bias->sizes(),
             bias->device().str());
  const Tensor b = bias->to(Device(kCPU), kDouble).contiguous();
  Tensor out = empty_tensor({channels}, kFloat, Device(kCPU));
  const double xs = quantizer_of(x).scale;
  for (int64_t o = 0; o < channels; ++o)
    out.data_ptr<float>()[o] =
        static_cast<float>(b.data_ptr<double>()[o] / (xs * w_scales[static_cast<size_t>(o)]));
  return out;
}

void check_linear_operands(const char* op, const Tensor& qx, const Tensor& qw) {
  XTEN_CHECK(qw.dim() == 2 && qx.dim() >= 1 && qx.size(-1) == qw.size(1), ValueError, op,
             "input of shape {} and weight of shape {} do not multiply (the weight is [out, in])",
             qx.sizes(), qw.sizes());
  XTEN_CHECK(qx.device() == qw.device(), DeviceError, op, "the input is on {} but the weight on {}",
             qx.device().str(), qw.device().str());
}

DimVector linear_shape(const Tensor& x, const Tensor& w) {
  DimVector s(x.sizes());
  s.back() = w.size(0);
  return s;
}

DimVector linear_rows(const Tensor& x, const Tensor& w) {
  return {x.numel() / std::max<int64_t>(x.size(-1), 1), w.size(0)};
}

void check_add_operands(const char* op, const Tensor& qa, const Tensor& qb) {
  XTEN_CHECK(qa.is_quantized() && qb.is_quantized() && qa.dtype() == qb.dtype(), TypeError, op,
             "expects two quantized tensors of one dtype, but got {} and {}",
             dtype_name(qa.dtype()), dtype_name(qb.dtype()));
  check_per_tensor(op, qa, "self");
  check_per_tensor(op, qb, "other");
  XTEN_CHECK(qa.sizes() == qb.sizes(), NotImplementedError, op,
             "expects operands of one shape (no broadcasting), but got {} and {}", qa.sizes(),
             qb.sizes());
  XTEN_CHECK(qa.device() == qb.device(), DeviceError, op, "the operands are on {} and {}",
             qa.device().str(), qb.device().str());
}

AddParams add_params(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point,
                     bool relu) {
  const Quantizer &A = quantizer_of(qa), &B = quantizer_of(qb);
  return {static_cast<float>(A.scale / scale), static_cast<float>(B.scale / scale),
          static_cast<float>(static_cast<double>(zero_point) - A.zero_point * (A.scale / scale) -
                             B.zero_point * (B.scale / scale)),
          static_cast<float>(relu ? zero_point : quant_min(qa.dtype())),
          static_cast<float>(quant_max(qa.dtype()))};
}

DynamicParams dynamic_params(float lo, float hi) {
  constexpr int64_t qmax = 127;
  const double scale = hi > lo ? static_cast<double>(hi - lo) / qmax : 1.0;
  const int64_t zp = std::min<int64_t>(
      qmax, std::max<int64_t>(0, static_cast<int64_t>(std::nearbyint(-lo / scale))));
  return {scale, zp};
}

namespace {

Tensor int_repr_kernel(const Tensor& self) {
  return int_alias(self).clone();
}

Tensor clone_kernel(const Tensor& self) {
  Tensor out =
      new_quantized(self.sizes(), self.impl()->quantizer(), self.device(), quantized_format(self));
  int_alias(out).copy_(int_alias(self));
  return out;
}

Tensor contiguous_kernel(const Tensor& self) {
  if (self.is_contiguous()) return self;
  Tensor out = new_quantized(self.sizes(), self.impl()->quantizer(), self.device());
  int_alias(out).copy_(int_alias(self));
  return out;
}

// A quantized tensor moves between devices with its quantizer; its dtype does not change.
Tensor to_kernel(const Tensor& self, Device device, ScalarType dtype, bool copy) {
  XTEN_CHECK(dtype == self.dtype(), NotImplementedError, "to",
             "a {} tensor cannot be converted to {}: dequantize() it first",
             dtype_name(self.dtype()), dtype_name(dtype));
  if (device == self.device()) return copy ? clone_kernel(self) : self;
  Tensor out =
      new_quantized(self.sizes(), self.impl()->quantizer(), device, quantized_format(self));
  int_alias(out).copy_(int_alias(self));
  return out;
}

Tensor copy__kernel(const Tensor& self, const Tensor& src) {
  constexpr const char* op = "copy_";
  XTEN_CHECK(
      self.is_quantized() && src.is_quantized() && quantizer_of(self).same_as(quantizer_of(src)),
      NotImplementedError, op,
      "copies into or out of a quantized tensor need the same dtype and quantization "
      "parameters on both sides (got {} and {}); use quantize_per_tensor / dequantize",
      dtype_name(self.dtype()), dtype_name(src.dtype()));
  int_alias(self).copy_(int_alias(src));
  return self;
}

// The same kernels for both devices' Quantized keys.
void register_integer_copies(Library& m) {
  m.impl("quantized::int_repr", int_repr_kernel);
  m.impl("clone", clone_kernel);
  m.impl("contiguous", contiguous_kernel);
  m.impl("to", to_kernel);
  m.impl("copy_", copy__kernel);
}

}  // namespace

LIBRARY_IMPL(xten, QuantizedCPU, m) {
  register_integer_copies(m);
}
LIBRARY_IMPL(xten, QuantizedXPU, m) {
  register_integer_copies(m);
}

}  // namespace xten
