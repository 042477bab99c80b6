// XPU pooling (pool.cl): max_pool2d (with indices), avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d, one work-item per output element over a contiguous copy of the input.
// Shapes and checks are the CPU's (kernels/common/window.h).
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
  const Planes p = planes_of("max_pool2d", input);
  const Window w = window_args("max_pool2d", p, kernel, stride, padding, dilation, ceil_mode);
  const Tensor in = input.contiguous();
  Tensor out = empty(p.shape(w.ho, w.wo), input.dtype(), input.device());
  Tensor idx = empty(p.shape(w.ho, w.wo), kLong, input.device());
  launch(stream_of(in), pool_kernel("max_pool2d", "max_pool2d", in), out.numel(), out.data_ptr(),
         idx.data_ptr(), in.data_ptr(), p.h, p.w, w.ho, w.wo, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw,
         w.dh, w.dw, out.numel());
  return {out, idx};
}

Tensor max_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices_kernel(input, kernel, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const Planes p = planes_of("avg_pool2d", input);
  const Window w = window_args("avg_pool2d", p, kernel, stride, padding, {}, ceil_mode);
  check_divisor_override(divisor_override);
  const Tensor in = input.contiguous();
  Tensor out = empty(p.shape(w.ho, w.wo), input.dtype(), input.device());
  const int32_t include_pad = count_include_pad ? 1 : 0;
  const int64_t divisor = divisor_override.value_or(0);
  launch(stream_of(in), pool_kernel("avg_pool2d", "avg_pool2d", in), out.numel(), out.data_ptr(),
         in.data_ptr(), p.h, p.w, w.ho, w.wo, w.kh, w.kw, w.sh, w.sw, w.ph, w.pw, include_pad,
         divisor, out.numel());
  return out;
}

Tensor adaptive_avg_pool2d_kernel(const Tensor& input, IntArrayRef output_size) {
  check_adaptive_output_size("adaptive_avg_pool2d", output_size);
  const Planes p = planes_of("adaptive_avg_pool2d", input);
  const Tensor in = input.contiguous();
  const int64_t ho = output_size[0], wo = output_size[1];
  Tensor out = empty(p.shape(ho, wo), input.dtype(), input.device());
  launch(stream_of(in), pool_kernel("adaptive_avg_pool2d", "adaptive_avg_pool2d", in), out.numel(),
         out.data_ptr(), in.data_ptr(), p.h, p.w, ho, wo, out.numel());
  return out;
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_kernel(const Tensor& input,
                                                      IntArrayRef output_size) {
  check_adaptive_output_size("adaptive_max_pool2d", output_size);
  const Planes p = planes_of("adaptive_max_pool2d", input);
  const Tensor in = input.contiguous();
  const int64_t ho = output_size[0], wo = output_size[1];
  Tensor out = empty(p.shape(ho, wo), input.dtype(), input.device());
  Tensor idx = empty(p.shape(ho, wo), kLong, input.device());
  launch(stream_of(in), pool_kernel("adaptive_max_pool2d", "adaptive_max_pool2d", in), out.numel(),
         out.data_ptr(), idx.data_ptr(), in.data_ptr(), p.h, p.w, ho, wo, out.numel());
  return {out, idx};
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("max_pool2d", max_pool2d_kernel);
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices_kernel);
  m.impl("avg_pool2d", avg_pool2d_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d_kernel);
}

}  // namespace xten::xpu
