// XPU int8 kernels (quantized.cl; docs/quantization.md "On the XPU"): quantize / dequantize,
// conv2d and linear as integer products, linear_dynamic, add, relu, max_pool2d and
// adaptive_avg_pool2d, with the CPU kernels' checks (kernels/common/quantized.h), layouts and
// formulas. quint8 and qint8 only: qint32 raises NotImplementedError here.
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/quantized.h>
#include <xten/kernels/common/window.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

void check_8bit(const char* op, ScalarType dtype) {
  XTEN_CHECK(dtype == kQUInt8 || dtype == kQInt8, NotImplementedError, op,
             "the XPU's quantized kernels take quint8 and qint8, not {}", dtype_name(dtype));
}

// The kernel `name`_u8 / _i8 for the integers of quantized dtype `dtype`.
Kernel& q_kernel(const Tensor& on, const char* op, const char* name, ScalarType dtype) {
  check_8bit(op, dtype);
  return get_kernel(device_of(on), op, "quantized",
                    std::string(name) + "_" + dtype_tag(underlying_type(dtype)));
}

// Small per-channel parameters, uploaded to the tensor's device.
template <class T>
Tensor on_device(const std::vector<T>& v, const Tensor& like) {
  return tensor(v).to(like.device());
}
Tensor on_device_or_dummy(const Tensor& cpu, const Tensor& like) {
  return cpu.defined() ? cpu.to(like.device()) : empty({1}, kFloat, like.device());
}

// The per-channel walk of a quantizer over a contiguous tensor: (channels, inner), the scales
// (or their inverses) as float and the zero points.
struct ChannelParams {
  int64_t channels = 1, inner = 1;
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
};
ChannelParams channel_params(const Quantizer& q, IntArrayRef sizes, bool inverse) {
  ChannelParams p;
  auto add = [&](double s, int64_t z) {
    p.scales.push_back(inverse ? 1.0f / static_cast<float>(s) : static_cast<float>(s));
    p.zero_points.push_back(z);
  };
  if (!q.per_channel()) {
    add(q.scale, q.zero_point);
    return p;
  }
  p.channels = sizes[static_cast<size_t>(q.axis)];
  for (size_t d = static_cast<size_t>(q.axis) + 1; d < sizes.size(); ++d) p.inner *= sizes[d];
  for (int64_t c = 0; c < p.channels; ++c)
    add(q.scales[static_cast<size_t>(c)], q.zero_points[static_cast<size_t>(c)]);
  return p;
}

Tensor quantize_into(const char* op, const Tensor& self, std::shared_ptr<const Quantizer> q,
                     MemoryFormat fmt) {
  check_float_input(op, self);
  check_8bit(op, q->dtype);
  const Tensor x = self.contiguous(fmt).to(kFloat);
  Tensor out = new_quantized(self.sizes(), q, self.device(), fmt);
  // A channels-last per-tensor walk has no channel: (channels, inner) = (1, 1).
  const ChannelParams p = channel_params(*q, self.sizes(), /*inverse=*/true);
  const Tensor s = on_device(p.scales, x), z = on_device(p.zero_points, x);
  launch(stream_of(x), q_kernel(x, op, "quantize", q->dtype), x.numel(), out.data_ptr(),
         x.data_ptr(), s.data_ptr(), z.data_ptr(), p.channels, p.inner,
         static_cast<float>(quant_min(q->dtype)), static_cast<float>(quant_max(q->dtype)),
         x.numel());
  return out;
}

Tensor quantize_per_tensor_kernel(const Tensor& self, double scale, int64_t zero_point,
                                  ScalarType dtype) {
  constexpr const char* op = "quantize_per_tensor";
  auto q = Quantizer::per_tensor(op, dtype, scale, zero_point);
  return quantize_into(op, self, q, self.suggest_memory_format());
}

Tensor quantize_per_channel_kernel(const Tensor& self, const Tensor& scales,
                                   const Tensor& zero_points, int64_t axis, ScalarType dtype) {
  constexpr const char* op = "quantize_per_channel";
  auto q = per_channel_quantizer(op, self, scales, zero_points, axis, dtype);
  return quantize_into(op, self, q, MemoryFormat::Contiguous);
}

Tensor dequantize_kernel(const Tensor& self) {
  constexpr const char* op = "dequantize";
  const Quantizer& q = quantizer_of(self);
  const MemoryFormat fmt = quantized_format(self);
  const Tensor ints = int_alias(self).contiguous(fmt);
  Tensor out =
      empty_tensor(self.sizes(), strides_for_format(op, self.sizes(), fmt), kFloat, self.device());
  const ChannelParams p = channel_params(q, self.sizes(), /*inverse=*/false);
  const Tensor s = on_device(p.scales, self), z = on_device(p.zero_points, self);
  launch(stream_of(self), q_kernel(self, op, "dequantize", self.dtype()), ints.numel(),
         out.data_ptr(), ints.data_ptr(), s.data_ptr(), z.data_ptr(), p.channels, p.inner,
         ints.numel());
  return out;
}

Tensor relu_kernel(const Tensor& self) {
  check_per_tensor("relu", self, "the input");
  const MemoryFormat fmt = self.suggest_memory_format();
  const Tensor in = int_alias(self).contiguous(fmt);
  Tensor out = new_quantized(self.sizes(), self.impl()->quantizer(), self.device(), fmt);
  launch(stream_of(self), q_kernel(self, "relu", "qrelu", self.dtype()), in.numel(), out.data_ptr(),
         in.data_ptr(), static_cast<int32_t>(quantizer_of(self).zero_point), in.numel());
  return out;
}

Tensor relu__kernel(const Tensor& self) {
  int_alias(self).copy_(int_alias(relu_kernel(self)));
  return self;
}

Tensor add_kernel(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point, bool relu) {
  constexpr const char* op = "quantized::add";
  check_add_operands(op, qa, qb);
  auto q = Quantizer::per_tensor(op, qa.dtype(), scale, zero_point);
  const MemoryFormat fmt = qa.suggest_memory_format();
  const Tensor a = int_alias(qa).contiguous(fmt), b = int_alias(qb).contiguous(fmt);
  Tensor out = new_quantized(qa.sizes(), q, qa.device(), fmt);
  const AddParams k = add_params(qa, qb, scale, zero_point, relu);
  launch(stream_of(a), q_kernel(a, op, "qadd", qa.dtype()), a.numel(), out.data_ptr(), a.data_ptr(),
         b.data_ptr(), k.ka, k.kb, k.c, k.lo, k.hi, a.numel());
  return out;
}

// A pooling result computed over NCHW planes, given the input's layout (as the CPU's).
Tensor in_input_layout(const Tensor& out, const Tensor& self) {
  if (out.dim() != 4 || self.suggest_memory_format() != MemoryFormat::ChannelsLast) return out;
  Tensor r =
      new_quantized(out.sizes(), out.impl()->quantizer(), out.device(), MemoryFormat::ChannelsLast);
  int_alias(r).copy_(int_alias(out));
  return r;
}

Tensor max_pool2d_kernel(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  check_per_tensor(op, self, "the input");
  const Planes p = planes_of(op, self);
  const Window w = window_args(op, p, kernel_size, stride, padding, dilation, ceil_mode);
  const Tensor in = int_alias(self).contiguous();
  Tensor out = new_quantized(p.shape(w.ho, w.wo), self.impl()->quantizer(), self.device());
  launch(stream_of(in), q_kernel(in, op, "qmax_pool2d", self.dtype()), out.numel(), out.data_ptr(),
         in.data_ptr(), p.h, p.w, w.ho, w.wo, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, w.dh, w.dw,
         out.numel());
  return in_input_layout(out, self);
}

Tensor adaptive_avg_pool2d_kernel(const Tensor& self, IntArrayRef output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_per_tensor(op, self, "the input");
  check_adaptive_output_size(op, output_size);
  const Planes p = planes_of(op, self);
  const int64_t ho = output_size[0], wo = output_size[1];
  const Tensor in = int_alias(self).contiguous();
  Tensor out = new_quantized(p.shape(ho, wo), self.impl()->quantizer(), self.device());
  launch(stream_of(in), q_kernel(in, op, "qadaptive_avg_pool2d", self.dtype()), out.numel(),
         out.data_ptr(), in.data_ptr(), p.h, p.w, ho, wo, out.numel());
  return in_input_layout(out, self);
}

// The output's clamp range: [qmin, qmax], from the zero point up with relu.
std::pair<float, float> out_range(ScalarType dtype, int64_t zero_point, bool relu) {
  return {static_cast<float>(relu ? std::max(zero_point, quant_min(dtype)) : quant_min(dtype)),
          static_cast<float>(quant_max(dtype))};
}

Tensor conv2d_kernel(const Tensor& qx, const Tensor& qw, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                     double output_scale, int64_t output_zero_point, bool relu) {
  constexpr const char* op = "quantized::conv2d";
  check_activation(op, qx);
  const std::vector<double> ws = weight_scales(op, qw);
  const ConvGeometry g = conv2d_geometry(qx, qw, bias, stride, padding, dilation, groups);
  const Tensor b = on_device_or_dummy(accumulator_bias(op, bias, qx, ws), qx);
  const Tensor scales = on_device(product_scales(qx, ws, output_scale), qx);
  // NHWC in and out (as the CPU's), the weight as [o, kh, kw, c / groups].
  const Tensor x = int_alias(g.input4).contiguous(MemoryFormat::ChannelsLast);
  const Tensor w = int_alias(qw).permute({0, 2, 3, 1}).contiguous();
  auto q = Quantizer::per_tensor(op, qx.dtype(), output_scale, output_zero_point);
  Tensor out = new_quantized({g.n, g.o, g.ho, g.wo}, q, qx.device(), MemoryFormat::ChannelsLast);
  const auto [lo, hi] = out_range(qx.dtype(), output_zero_point, relu);
  const int64_t cg = g.c / g.groups, og = g.o / g.groups;
  launch(stream_of(x), q_kernel(x, op, "qconv2d", qx.dtype()), out.numel(), out.data_ptr(),
         x.data_ptr(), w.data_ptr(), b.data_ptr(), static_cast<int32_t>(bias ? 1 : 0),
         scales.data_ptr(), g.h, g.w, g.c, g.o, cg, og, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh,
         g.dw, g.ho, g.wo, static_cast<int32_t>(quantizer_of(qx).zero_point),
         static_cast<float>(output_zero_point), lo, hi, out.numel());
  return g.unbatched ? out.squeeze(0) : out;
}

// x [..., k] by w [o, k] into out2d [rows, o]: quantized, or float32 (out_scale 1) for dynamic.
void linear_into(const char* op, const Tensor& qx, const Tensor& qw,
                 const std::optional<Tensor>& bias, bool relu, const Tensor& out2d,
                 double out_scale, int64_t out_zp) {
  check_linear_operands(op, qx, qw);
  const std::vector<double> ws = weight_scales(op, qw);
  const Tensor b = on_device_or_dummy(accumulator_bias(op, bias, qx, ws), qx);
  const Tensor scales = on_device(product_scales(qx, ws, out_scale), qx);
  const Tensor x = int_alias(qx).reshape({-1, qx.size(-1)}).contiguous();
  const Tensor w = int_alias(qw).contiguous();
  const int64_t k = qw.size(1), o = qw.size(0), n = out2d.numel();
  const int32_t has_bias = bias ? 1 : 0, xz = static_cast<int32_t>(quantizer_of(qx).zero_point);
  if (out2d.is_quantized()) {
    const auto [lo, hi] = out_range(out2d.dtype(), out_zp, relu);
    launch(stream_of(x), q_kernel(x, op, "qlinear", qx.dtype()), n, out2d.data_ptr(), x.data_ptr(),
           w.data_ptr(), b.data_ptr(), has_bias, scales.data_ptr(), k, o, xz,
           static_cast<float>(out_zp), lo, hi, n);
  } else {
    launch(stream_of(x), q_kernel(x, op, "qlinear_f32", qx.dtype()), n, out2d.data_ptr(),
           x.data_ptr(), w.data_ptr(), b.data_ptr(), has_bias, scales.data_ptr(), k, o, xz,
           static_cast<int32_t>(relu ? 1 : 0), n);
  }
}

Tensor linear_kernel(const Tensor& qx, const Tensor& qw, const std::optional<Tensor>& bias,
                     double output_scale, int64_t output_zero_point, bool relu) {
  constexpr const char* op = "quantized::linear";
  check_activation(op, qx);
  check_linear_operands(op, qx, qw);
  auto q = Quantizer::per_tensor(op, qx.dtype(), output_scale, output_zero_point);
  Tensor out = new_quantized(linear_rows(qx, qw), q, qx.device());
  linear_into(op, qx, qw, bias, relu, out, output_scale, output_zero_point);
  return out.view(linear_shape(qx, qw));
}

// Dynamic quantization (as the CPU's): x quantized per call from its own range, which holds 0.
Tensor linear_dynamic_kernel(const Tensor& x, const Tensor& qw, const std::optional<Tensor>& bias,
                             bool relu) {
  constexpr const char* op = "quantized::linear_dynamic";
  check_float_input(op, x);
  check_linear_operands(op, x, qw);
  const Tensor xf = x.to(kFloat).contiguous();
  const float lo = xf.numel() ? std::min(0.0f, xf.min().item<float>()) : 0.0f;
  const float hi = xf.numel() ? std::max(0.0f, xf.max().item<float>()) : 0.0f;
  const DynamicParams d = dynamic_params(lo, hi);
  const Tensor qx = quantize_per_tensor_kernel(xf, d.scale, d.zero_point, kQUInt8);
  Tensor out = empty_tensor(linear_rows(x, qw), kFloat, x.device());
  linear_into(op, qx, qw, bias, relu, out, 1.0, 0);
  return out.view(linear_shape(x, qw));
}

}  // namespace

LIBRARY_IMPL(quantized, XPU, m) {
  m.impl("quantize_per_tensor", quantize_per_tensor_kernel);
  m.impl("quantize_per_channel", quantize_per_channel_kernel);
}

LIBRARY_IMPL(quantized, QuantizedXPU, m) {
  m.impl("dequantize", dequantize_kernel);
  m.impl("conv2d", conv2d_kernel);
  m.impl("linear", linear_kernel);
  m.impl("linear_dynamic", linear_dynamic_kernel);
  m.impl("add", add_kernel);
}

LIBRARY_IMPL(xten, QuantizedXPU, m) {
  m.impl("relu", relu_kernel);
  m.impl("relu_", relu__kernel);
  m.impl("max_pool2d", max_pool2d_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
}

}  // namespace xten::xpu
