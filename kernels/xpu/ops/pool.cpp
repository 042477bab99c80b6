// XPU pooling (pool.cl): max_pool2d (with indices), avg_pool2d and its backward,
// adaptive_avg_pool2d, adaptive_max_pool2d, upsample_bilinear2d, one work-item per output element
// over a contiguous input, or a channels-last one as it lies, with channels-last results (Note
// [Pooling layouts]). Shapes and checks are the CPU's (kernels/common/window.h).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/window.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

Kernel& pool_kernel(const char* op, const char* name, const Tensor& input) {
  return get_kernel(device_of(input), op, family_for("pool", {input.dtype()}),
                    std::string(name) + "_" + dtype_tag(input.dtype()));
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& input, IntArrayRef kernel,
                                                          IntArrayRef stride, IntArrayRef padding,
                                                          IntArrayRef dilation, bool ceil_mode) {
  const PoolMeta m = max_pool2d_meta(input, kernel, stride, padding, dilation, ceil_mode, true);
  const Planes& p = m.p;
  const Window& w = m.w;
  launch(stream_of(m.in), pool_kernel("max_pool2d", "max_pool2d", m.in), m.out.numel(),
         m.out.data_ptr(), m.indices.data_ptr(), m.in.data_ptr(), p.h, p.w, w.ho, w.wo, w.kh, w.kw,
         w.sh, w.sw, w.ph, w.pw, w.dh, w.dw, m.c, m.out.numel());
  return {m.out, m.indices};
}

Tensor avg_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const PoolMeta m =
      avg_pool2d_meta(input, kernel, stride, padding, ceil_mode, divisor_override, true);
  const Planes& p = m.p;
  const Window& w = m.w;
  const int32_t include_pad = count_include_pad ? 1 : 0;
  const int64_t divisor = divisor_override.value_or(0);
  launch(stream_of(m.in), pool_kernel("avg_pool2d", "avg_pool2d", m.in), m.out.numel(),
         m.out.data_ptr(), m.in.data_ptr(), p.h, p.w, w.ho, w.wo, w.kh, w.kw, w.sh, w.sw, w.ph,
         w.pw, include_pad, divisor, m.c, m.out.numel());
  return m.out;
}

// The gradient's layout decides (autograd hands `self` over as its shape alone), as on the CPU.
Tensor avg_pool2d_backward_kernel(const Tensor& grad, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool2d_backward";
  const PoolBackwardMeta m =
      avg_pool2d_backward_meta(grad, self, kernel, stride, padding, ceil_mode, divisor_override);
  XTEN_CHECK(is_floating_type(grad.dtype()), NotImplementedError, op,
             "not implemented for dtype {}", to_string(grad.dtype()));
  const MemoryFormat layout = grad.suggest_memory_format();
  const Tensor g = grad.contiguous(layout);
  Tensor dx = empty_tensor(self.sizes(), strides_for_format(op, self.sizes(), layout), grad.dtype(),
                           grad.device());
  const int64_t c = layout == MemoryFormat::ChannelsLast ? self.size(1) : 0;
  if (dx.numel() == 0) return dx;
  const Window& w = m.w;
  launch(stream_of(g), pool_kernel(op, "avg_pool2d_backward", g), dx.numel(), dx.data_ptr(),
         g.data_ptr(), m.p.h, m.p.w, w.ho, w.wo, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw,
         static_cast<int32_t>(count_include_pad ? 1 : 0), divisor_override.value_or(0), c,
         dx.numel());
  return dx;
}

Tensor adaptive_avg_pool2d_kernel(const Tensor& input, IntArrayRef output_size) {
  const PoolMeta m = adaptive_pool2d_meta("adaptive_avg_pool2d", input, output_size, false, true);
  launch(stream_of(m.in), pool_kernel("adaptive_avg_pool2d", "adaptive_avg_pool2d", m.in),
         m.out.numel(), m.out.data_ptr(), m.in.data_ptr(), m.p.h, m.p.w, m.w.ho, m.w.wo, m.c,
         m.out.numel());
  return m.out;
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_kernel(const Tensor& input,
                                                      IntArrayRef output_size) {
  const PoolMeta m = adaptive_pool2d_meta("adaptive_max_pool2d", input, output_size, true, true);
  launch(stream_of(m.in), pool_kernel("adaptive_max_pool2d", "adaptive_max_pool2d", m.in),
         m.out.numel(), m.out.data_ptr(), m.indices.data_ptr(), m.in.data_ptr(), m.p.h, m.p.w,
         m.w.ho, m.w.wo, m.c, m.out.numel());
  return {m.out, m.indices};
}

Tensor upsample_bilinear2d_kernel(const Tensor& input, IntArrayRef output_size,
                                  bool align_corners) {
  const PoolMeta m = upsample_bilinear2d_meta(input, output_size, true);
  const int32_t align = align_corners ? 1 : 0;
  launch(stream_of(m.in), pool_kernel("upsample_bilinear2d", "upsample_bilinear2d", m.in),
         m.out.numel(), m.out.data_ptr(), m.in.data_ptr(), m.p.h, m.p.w, m.w.ho, m.w.wo, align, m.c,
         m.out.numel());
  return m.out;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("upsample_bilinear2d", upsample_bilinear2d_kernel);
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices_kernel);
  m.impl("avg_pool2d", avg_pool2d_kernel);
  m.impl("avg_pool2d_backward", avg_pool2d_backward_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d_kernel);
}

}  // namespace xten::xpu
