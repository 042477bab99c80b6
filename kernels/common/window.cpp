// Convolution and pooling shapes and checks shared by every backend (window.h).
#include <xten/kernels/common/window.h>

#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

void check_pair(const char* op, const char* what, IntArrayRef v, int64_t min) {
  XTEN_CHECK(v.size() == 2, ValueError, op, "{} must have 2 values, but got {}", what, v);
  XTEN_CHECK(v[0] >= min && v[1] >= min, ValueError, op, "{} must be >= {}, but got {}", what, min,
             v);
}

// The checks both convolutions make; fills the input and kernel fields of g.
ConvGeometry common_conv_args(const char* op, const Tensor& input, const Tensor& weight,
                              const std::optional<Tensor>& bias, IntArrayRef stride,
                              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  XTEN_CHECK(input.dim() == 3 || input.dim() == 4, ValueError, op,
             "expected a 3-D (unbatched) or 4-D (batched) input, but got {}-D with shape {}",
             input.dim(), input.sizes());
  XTEN_CHECK(weight.dim() == 4, ValueError, op, "expected a 4-D weight, but got {}-D with shape {}",
             weight.dim(), weight.sizes());
  // A quantized convolution (kernels/cpu/quantized.cpp) checks its own dtypes (quint8 input,
  // qint8 weight).
  const bool quantized = is_quantized_type(input.dtype()) && is_quantized_type(weight.dtype());
  XTEN_CHECK(input.dtype() == weight.dtype() || quantized, TypeError, op,
             "input ({}) and weight ({}) must have the same dtype", to_string(input.dtype()),
             to_string(weight.dtype()));
  XTEN_CHECK(is_floating_type(input.dtype()) || quantized, NotImplementedError, op,
             "not implemented for dtype {}", to_string(input.dtype()));
  XTEN_CHECK(groups > 0, ValueError, op, "groups must be positive, but got {}", groups);
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  if (bias)
    XTEN_CHECK(bias->dim() == 1, ValueError, op, "bias must be 1-D, but got shape {}",
               bias->sizes());
  check_same_device(op, {&input, &weight, bias ? &*bias : nullptr});
  ConvGeometry g{};
  g.unbatched = input.dim() == 3;
  g.input4 = g.unbatched ? input.unsqueeze(0) : input;
  g.n = g.input4.size(0);
  g.c = g.input4.size(1);
  g.h = g.input4.size(2);
  g.w = g.input4.size(3);
  g.kh = weight.size(2);
  g.kw = weight.size(3);
  g.sh = stride[0];
  g.sw = stride[1];
  g.ph = padding[0];
  g.pw = padding[1];
  g.dh = dilation[0];
  g.dw = dilation[1];
  g.groups = groups;
  return g;
}

void check_bias_size(const char* op, const std::optional<Tensor>& bias, int64_t channels) {
  if (bias)
    XTEN_CHECK(bias->size(0) == channels, ValueError, op,
               "bias has {} values, but there are {} output channels", bias->size(0), channels);
}

// Output size of a window pass; with ceil_mode the last window must start inside the input
// or its left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

ConvGeometry conv2d_geometry(const Tensor& input, const Tensor& weight,
                             const std::optional<Tensor>& bias, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  ConvGeometry g =
      common_conv_args("conv2d", input, weight, bias, stride, padding, dilation, groups);
  g.o = weight.size(0);
  XTEN_CHECK(g.c % groups == 0 && g.o % groups == 0, ValueError, "conv2d",
             "input channels ({}) and output channels ({}) must both be divisible by groups ({})",
             g.c, g.o, groups);
  XTEN_CHECK(
      weight.size(1) * groups == g.c, ValueError, "conv2d",
      "weight of shape {} expects {} input channels (groups={}), but the input has {} (shape {})",
      weight.sizes(), weight.size(1) * groups, groups, g.c, input.sizes());
  check_bias_size("conv2d", bias, g.o);
  XTEN_CHECK(g.h + 2 * g.ph >= g.dh * (g.kh - 1) + 1 && g.w + 2 * g.pw >= g.dw * (g.kw - 1) + 1,
             ValueError, "conv2d",
             "the padded input ({}x{}) is smaller than the dilated kernel ({}x{})", g.h + 2 * g.ph,
             g.w + 2 * g.pw, g.dh * (g.kh - 1) + 1, g.dw * (g.kw - 1) + 1);
  g.ho = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  return g;
}

ConvGeometry conv_transpose2d_geometry(const Tensor& input, const Tensor& weight,
                                       const std::optional<Tensor>& bias, IntArrayRef stride,
                                       IntArrayRef padding, IntArrayRef output_padding,
                                       int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose2d";
  ConvGeometry g = common_conv_args(op, input, weight, bias, stride, padding, dilation, groups);
  check_pair(op, "output_padding", output_padding, 0);
  XTEN_CHECK(output_padding[0] < std::max(stride[0], dilation[0]) &&
                 output_padding[1] < std::max(stride[1], dilation[1]),
             ValueError, op,
             "output_padding {} must be smaller than either stride {} or dilation {}",
             output_padding, stride, dilation);
  XTEN_CHECK(weight.size(0) == g.c, ValueError, op,
             "weight of shape {} expects {} input channels, but the input has {} (shape {})",
             weight.sizes(), weight.size(0), g.c, input.sizes());
  XTEN_CHECK(g.c % groups == 0, ValueError, op,
             "input channels ({}) must be divisible by groups ({})", g.c, groups);
  g.o = weight.size(1) * groups;
  g.ho = (g.h - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + output_padding[0] + 1;
  g.wo = (g.w - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + output_padding[1] + 1;
  XTEN_CHECK(g.ho > 0 && g.wo > 0, ValueError, op,
             "the output would be {}x{}: padding {} is too large", g.ho, g.wo, padding);
  check_bias_size(op, bias, g.o);
  return g;
}

ScalarType conv_compute_dtype(ScalarType t) {
  return t == kHalf || t == kBFloat16 ? kFloat : t;
}

Tensor conv_finish(Tensor out, const std::optional<Tensor>& bias, const ConvGeometry& g,
                   ScalarType dtype) {
  if (bias) out = out + bias->to(out.dtype()).view({1, g.o, 1, 1});
  if (g.unbatched) out = out.squeeze(0);
  return out.to(dtype);
}

DimVector Planes::shape(int64_t ho, int64_t wo) const {
  DimVector s(lead);
  s.push_back(ho);
  s.push_back(wo);
  return s;
}

Planes planes_of(const char* op, const Tensor& input) {
  XTEN_CHECK(input.dim() == 3 || input.dim() == 4, ValueError, op,
             "expected a 3-D (unbatched) or 4-D (batched) input, but got shape {}", input.sizes());
  // Quantized inputs reach only the QuantizedCPU pooling kernels (kernels/cpu/quantized.cpp).
  XTEN_CHECK(is_floating_type(input.dtype()) || is_quantized_type(input.dtype()),
             NotImplementedError, op, "not implemented for dtype {}", to_string(input.dtype()));
  Planes p;
  p.h = input.size(-2);
  p.w = input.size(-1);
  p.lead = DimVector(input.sizes().slice(0, input.dim() - 2));
  p.planes = 1;
  for (int64_t s : p.lead) p.planes *= s;
  XTEN_CHECK(p.h > 0 && p.w > 0, ValueError, op,
             "the input's spatial size must be nonzero, but got shape {}", input.sizes());
  return p;
}

Window window_args(const char* op, const Planes& p, IntArrayRef kernel, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  auto two = [&](IntArrayRef v, const char* what, int64_t dflt0,
                 int64_t dflt1) -> std::pair<int64_t, int64_t> {
    XTEN_CHECK(v.size() <= 2, ValueError, op, "{} must have 1 or 2 values, but got {}", what, v);
    if (v.empty()) return {dflt0, dflt1};
    return {v[0], v.size() == 2 ? v[1] : v[0]};
  };
  XTEN_CHECK(!kernel.empty(), ValueError, op, "kernel_size must have 1 or 2 values, but got {}",
             kernel);
  const auto [kh, kw] = two(kernel, "kernel_size", 0, 0);
  const auto [sh, sw] = two(stride, "stride", kh, kw);
  const auto [ph, pw] = two(padding, "padding", 0, 0);
  const auto [dh, dw] = two(dilation, "dilation", 1, 1);
  XTEN_CHECK(kh > 0 && kw > 0 && sh > 0 && sw > 0 && dh > 0 && dw > 0, ValueError, op,
             "kernel_size {}, stride {} and dilation {} must be positive", kernel, stride,
             dilation);
  XTEN_CHECK(ph >= 0 && pw >= 0 && ph <= (dh * (kh - 1) + 1) / 2 && pw <= (dw * (kw - 1) + 1) / 2,
             ValueError, op,
             "padding {} must be non-negative and at most half the (dilated) kernel size {}",
             padding, kernel);
  Window w{kh,
           kw,
           sh,
           sw,
           ph,
           pw,
           dh,
           dw,
           pooled_size(p.h, kh, sh, ph, dh, ceil_mode),
           pooled_size(p.w, kw, sw, pw, dw, ceil_mode)};
  XTEN_CHECK(w.ho > 0 && w.wo > 0, ValueError, op,
             "the output would be {}x{} for an input of {}x{}", w.ho, w.wo, p.h, p.w);
  return w;
}

void check_divisor_override(std::optional<int64_t> divisor_override, const char* op) {
  XTEN_CHECK(!divisor_override || *divisor_override != 0, ValueError, op,
             "divisor_override must be nonzero");
}

void check_adaptive_output_size(const char* op, IntArrayRef output_size) {
  XTEN_CHECK(output_size.size() == 2 && output_size[0] > 0 && output_size[1] > 0, ValueError, op,
             "output_size must be 2 positive values, but got {}", output_size);
}

namespace {
PoolMeta pool_outputs(PoolMeta m, const Tensor& input, bool with_indices, bool nhwc) {
  const DimVector shape = m.p.shape(m.w.ho, m.w.wo);
  if (nhwc && input.suggest_memory_format() == MemoryFormat::ChannelsLast) {
    const DimVector strides = strides_for_format("pooling", shape, MemoryFormat::ChannelsLast);
    m.c = input.size(1);
    m.in = input.contiguous(MemoryFormat::ChannelsLast);
    m.out = empty_tensor(shape, strides, input.dtype(), input.device());
    if (with_indices) m.indices = empty_tensor(shape, strides, kLong, input.device());
    return m;
  }
  m.in = input.contiguous();
  m.out = empty_tensor(shape, input.dtype(), input.device());
  if (with_indices) m.indices = empty_tensor(shape, kLong, input.device());
  return m;
}
}  // namespace

bool channels_last_conv(const Tensor& input, const Tensor& weight) {
  return input.dim() == 4 && weight.dim() == 4 &&
         (input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
          weight.suggest_memory_format() == MemoryFormat::ChannelsLast);
}

Tensor in_layout_of(const Tensor& result, const Tensor& input) {
  if (result.dim() != 4 || input.dim() != 4 ||
      input.suggest_memory_format() != MemoryFormat::ChannelsLast)
    return result;
  return result.contiguous(MemoryFormat::ChannelsLast);
}

Tensor max_pool_input_grad(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes) {
  const int64_t dims = static_cast<int64_t>(input_sizes.size());
  const int64_t h = input_sizes[dims - 2], w = input_sizes[dims - 1];
  const int64_t per_plane = grad.size(-2) * grad.size(-1);
  if (grad.suggest_memory_format() == MemoryFormat::ChannelsLast) {
    const int64_t n = grad.size(0), c = grad.size(1);
    auto rows = [&](const Tensor& t) { return t.permute({0, 2, 3, 1}).reshape({n, per_plane, c}); };
    return zeros({n, h * w, c}, grad.dtype(), grad.device())
        .scatter_add(1, rows(indices), rows(grad))
        .view({n, h, w, c})
        .permute({0, 3, 1, 2});
  }
  const int64_t planes = grad.numel() / std::max<int64_t>(per_plane, 1);
  return zeros({planes, h * w}, grad.dtype(), grad.device())
      .scatter_add(1, indices.reshape({planes, per_plane}), grad.reshape({planes, per_plane}))
      .view(input_sizes);
}

PoolMeta max_pool2d_meta(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool nhwc) {
  PoolMeta m;
  m.p = planes_of("max_pool2d", input);
  m.w = window_args("max_pool2d", m.p, kernel, stride, padding, dilation, ceil_mode);
  return pool_outputs(std::move(m), input, true, nhwc);
}

PoolMeta avg_pool2d_meta(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode,
                         std::optional<int64_t> divisor_override, bool nhwc) {
  PoolMeta m;
  m.p = planes_of("avg_pool2d", input);
  m.w = window_args("avg_pool2d", m.p, kernel, stride, padding, {}, ceil_mode);
  check_divisor_override(divisor_override);
  return pool_outputs(std::move(m), input, false, nhwc);
}

PoolBackwardMeta pool2d_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self,
                                      IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                                      IntArrayRef dilation, bool ceil_mode, const Tensor* indices) {
  PoolBackwardMeta m;
  m.p = planes_of(op, self);
  m.w = window_args(op, m.p, kernel, stride, padding, dilation, ceil_mode);
  const DimVector out = m.p.shape(m.w.ho, m.w.wo);
  XTEN_CHECK(grad_output.sizes() == IntArrayRef(out), ValueError, op,
             "grad_output must have the forward's output shape {}, but got {}", IntArrayRef(out),
             grad_output.sizes());
  XTEN_CHECK(grad_output.dtype() == self.dtype(), TypeError, op,
             "grad_output and self must have one dtype, but got {} and {}",
             to_string(grad_output.dtype()), to_string(self.dtype()));
  XTEN_CHECK(grad_output.device() == self.device(), ValueError, op,
             "grad_output and self must be on one device, but got {} and {}",
             grad_output.device().str(), self.device().str());
  if (indices) {
    XTEN_CHECK(indices->dtype() == kLong, TypeError, op, "indices must be int64, but got {}",
               to_string(indices->dtype()));
    XTEN_CHECK(indices->sizes() == grad_output.sizes(), ValueError, op,
               "indices must have grad_output's shape {}, but got {}", grad_output.sizes(),
               indices->sizes());
    XTEN_CHECK(indices->device() == self.device(), ValueError, op,
               "indices and self must be on one device, but got {} and {}", indices->device().str(),
               self.device().str());
  }
  return m;
}

PoolBackwardMeta avg_pool2d_backward_meta(const Tensor& grad_output, const Tensor& self,
                                          IntArrayRef kernel, IntArrayRef stride,
                                          IntArrayRef padding, bool ceil_mode,
                                          std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool2d_backward";
  PoolBackwardMeta m =
      pool2d_backward_meta(op, grad_output, self, kernel, stride, padding, {}, ceil_mode, nullptr);
  check_divisor_override(divisor_override, op);
  return m;
}

PoolMeta adaptive_pool2d_meta(const char* op, const Tensor& input, IntArrayRef output_size,
                              bool with_indices, bool nhwc) {
  check_adaptive_output_size(op, output_size);
  PoolMeta m;
  m.p = planes_of(op, input);
  m.w = Window{};
  m.w.ho = output_size[0];
  m.w.wo = output_size[1];
  return pool_outputs(std::move(m), input, with_indices, nhwc);
}

PoolMeta upsample_bilinear2d_meta(const Tensor& input, IntArrayRef output_size, bool nhwc) {
  constexpr const char* op = "upsample_bilinear2d";
  XTEN_CHECK(input.dim() == 4, ValueError, op,
             "expected a 4-D input [N, C, H, W], but got shape {}", input.sizes());
  return adaptive_pool2d_meta(op, input, output_size, false, nhwc);
}

}  // namespace xten
