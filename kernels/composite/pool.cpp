// Pooling written with other ops (valid on every backend): max_pool2d, and the backward of max
// and average pooling, which a backward with create_graph runs, and the XPU max pooling's (the
// CPU has fused kernels for both, kernels/cpu/pool.cpp, the XPU for average pooling,
// kernels/xpu/ops/pool.cpp). Max pooling's reads and writes NHWC for an NHWC gradient.
#include <algorithm>
#include <vector>

#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/window.h>

namespace xten {
namespace {

// The values of max_pool2d_with_indices: one kernel per backend serves both ops.
Tensor max_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode));
}

// Each gradient added at its index in its plane (the indices are flat positions in H x W), an
// NHWC gradient as it lies (max_pool_input_grad, kernels/common/window.h).
Tensor max_pool2d_with_indices_backward_kernel(const Tensor& grad, const Tensor& self,
                                               IntArrayRef kernel, IntArrayRef stride,
                                               IntArrayRef padding, IntArrayRef dilation,
                                               bool ceil_mode, const Tensor& indices) {
  pool2d_backward_meta("max_pool2d_with_indices_backward", grad, self, kernel, stride, padding,
                       dilation, ceil_mode, &indices);  // the checks
  return in_layout_of(max_pool_input_grad(grad, indices, self.sizes()), self);
}

// The gradient of a sum over windows of `w`: each output cell's value spread back over its
// window.
Tensor window_sum_grad(const Tensor& g, const Planes& p, const Window& w) {
  const int64_t ho = w.ho, wo = w.wo;
  if (w.kh == w.sh && w.kw == w.sw && w.ph == 0 && w.pw == 0) {
    // Windows that tile the input (2x2 stride 2, ...): every input element is in at most one
    // window, so its gradient is that window's value, repeated over the window by one copy;
    // ceil_mode's windows past the input are cut, rows and columns no window reads are zero.
    const Tensor tiled = g.reshape({p.planes, ho, 1, wo, 1})
                             .expand({p.planes, ho, w.kh, wo, w.kw})
                             .reshape({p.planes, ho * w.kh, wo * w.kw});
    const Tensor cut =
        tiled.narrow(1, 0, std::min(ho * w.kh, p.h)).narrow(2, 0, std::min(wo * w.kw, p.w));
    return pad(cut, {0, p.w - cut.size(2), 0, p.h - cut.size(1)});
  }
  // A transposed convolution with a window of ones, one channel per plane.
  const Tensor planes = g.reshape({p.planes, 1, ho, wo});
  const Tensor ones_window = ones({1, 1, w.kh, w.kw}, g.dtype(), g.device());
  const int64_t in[2] = {p.h, p.w}, out[2] = {ho, wo}, k[2] = {w.kh, w.kw}, s[2] = {w.sh, w.sw},
                pd[2] = {w.ph, w.pw};
  int64_t out_pad[2];
  for (int i = 0; i < 2; ++i) {
    const int64_t full = (out[i] - 1) * s[i] - 2 * pd[i] + k[i];
    out_pad[i] = std::max<int64_t>(0, std::min(in[i] - full, s[i] - 1));
  }
  Tensor r = ops::conv_transpose2d::handle().call(planes, ones_window, std::nullopt,
                                                  IntArrayRef(s, 2), IntArrayRef(pd, 2),
                                                  IntArrayRef(out_pad, 2), 1, IntArrayRef({1, 1}));
  // ceil_mode windows may reach past the input: cut; a short result is padded with zeros.
  if (r.size(2) > p.h) r = r.narrow(2, 0, p.h);
  if (r.size(3) > p.w) r = r.narrow(3, 0, p.w);
  if (r.size(2) < p.h || r.size(3) < p.w) r = pad(r, {0, p.w - r.size(3), 0, p.h - r.size(2)});
  return r.reshape({p.planes, p.h, p.w});
}

// grad over each cell's divisor (the forward's rule, computed on the host), then spread back.
Tensor avg_pool2d_backward_kernel(const Tensor& grad, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  const PoolBackwardMeta m =
      avg_pool2d_backward_meta(grad, self, kernel, stride, padding, ceil_mode, divisor_override);
  const Planes& p = m.p;
  const Window& w = m.w;
  std::vector<double> inv(static_cast<size_t>(w.ho * w.wo));
  for (int64_t oy = 0; oy < w.ho; ++oy)
    for (int64_t ox = 0; ox < w.wo; ++ox) {
      const int64_t div = avg_pool_cell(p, w, oy, ox, count_include_pad, divisor_override).divisor;
      inv[oy * w.wo + ox] = div > 0 ? 1.0 / static_cast<double>(div) : 0.0;
    }
  const Tensor scale =
      tensor(inv, IntArrayRef({w.ho, w.wo}), TensorOptions(grad.dtype())).to(grad.device());
  return in_layout_of(window_sum_grad(grad * scale, p, w).view(self.sizes()), self);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("max_pool2d", max_pool2d_kernel);
  m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward_kernel);
  m.impl("avg_pool2d_backward", avg_pool2d_backward_kernel);
}

}  // namespace xten
