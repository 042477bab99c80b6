#pragma once
// The shapes of convolution and pooling, computed and checked once for every backend: the
// CPU and XPU kernels of conv2d, conv_transpose2d and the pooling ops take their geometry
// from here, so that both see the same sizes and raise the same errors.
#include <algorithm>
#include <optional>

#include <xten/core/tensor.h>

namespace xten {

// One convolution (or transposed convolution) over a batch of NCHW images.
struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // output channels, kernel
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t ho, wo;  // output spatial size
  bool unbatched;  // the input was 3-D (one image)
  Tensor input4;   // the input as 4-D (a view)
  // A 1x1 kernel with stride 1 and no padding: the input itself is the column matrix.
  bool pointwise() const { return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0; }
};

// conv2d's checks and shapes. weight: [o, c / groups, kh, kw].
ConvGeometry conv2d_geometry(const Tensor& input, const Tensor& weight,
                             const std::optional<Tensor>& bias, IntArrayRef stride,
                             IntArrayRef padding, IntArrayRef dilation, int64_t groups);
// conv_transpose2d's checks and shapes. weight: [c, o / groups, kh, kw]; (h, w) is the
// input's and (ho, wo) the output's size.
ConvGeometry conv_transpose2d_geometry(const Tensor& input, const Tensor& weight,
                                       const std::optional<Tensor>& bias, IntArrayRef stride,
                                       IntArrayRef padding, IntArrayRef output_padding,
                                       int64_t groups, IntArrayRef dilation);

// The float dtype a convolution computes in (Half/BFloat16 in float).
ScalarType conv_compute_dtype(ScalarType t);
// A convolution's result [n, o, ho, wo] in the compute dtype -> plus the bias, unbatched
// again for a 3-D input, in the input's dtype.
Tensor conv_finish(Tensor out, const std::optional<Tensor>& bias, const ConvGeometry& g,
                   ScalarType dtype);

// Pooling's view of a 3-D or 4-D floating (or quantized) input: independent H x W planes.
struct Planes {
  int64_t planes, h, w;
  DimVector lead;                                 // the dims before (h, w)
  DimVector shape(int64_t ho, int64_t wo) const;  // lead + (ho, wo)
};
Planes planes_of(const char* op, const Tensor& input);

// A pooling window: kernel, stride, padding, dilation and the output size.
struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, ho, wo;
};
Window window_args(const char* op, const Planes& p, IntArrayRef kernel, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode);
void check_divisor_override(std::optional<int64_t> divisor_override, const char* op = "avg_pool2d");

// avg_pool2d's output cell (oy, ox): its window clipped to the input, [y0, y1) x [x0, x1), and
// its divisor (divisor_override, else the window's size clipped to the padded input with
// count_include_pad, or to the input without). One rule for the forward and backward kernels.
struct AvgCell {
  int64_t y0, y1, x0, x1, divisor;
};
inline AvgCell avg_pool_cell(const Planes& p, const Window& w, int64_t oy, int64_t ox,
                             bool count_include_pad, std::optional<int64_t> divisor_override) {
  AvgCell c;
  c.y0 = oy * w.sh - w.ph, c.x0 = ox * w.sw - w.pw;
  c.y1 = std::min(c.y0 + w.kh, p.h + w.ph), c.x1 = std::min(c.x0 + w.kw, p.w + w.pw);
  const int64_t padded = (c.y1 - c.y0) * (c.x1 - c.x0);
  c.y0 = std::max<int64_t>(c.y0, 0), c.x0 = std::max<int64_t>(c.x0, 0);
  c.y1 = std::min(c.y1, p.h), c.x1 = std::min(c.x1, p.w);
  c.divisor = divisor_override    ? *divisor_override
              : count_include_pad ? padded
                                  : (c.y1 - c.y0) * (c.x1 - c.x0);
  return c;
}

// Adaptive pooling: output cell i covers [start, end) = [floor(i*in/out), ceil((i+1)*in/out)).
inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) {
  return (i * in) / out;
}
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}
void check_adaptive_output_size(const char* op, IntArrayRef output_size);

// Note [Pooling meta]: what a pooling op settles before any backend computes: its checks,
// its geometry, the contiguous input and its outputs, allocated on the input's device. A
// backend's pooling kernel is the meta step and then its compute step (structured-kernel
// style), so the backends share every shape, dtype rule and error.
// A meta called with `nhwc` true lays out a channels-last 4-d input's `in`, `out` and `indices`
// NHWC, and sets `c` to the channel count (the XPU kernels' argument); otherwise all three are
// contiguous and `c` is 0.
struct PoolMeta {
  Planes p;
  Window w;        // adaptive pooling: only ho and wo are set
  Tensor in;       // the input, contiguous (or channels-last: above)
  Tensor out;      // p.shape(ho, wo), the input's dtype
  Tensor indices;  // max pooling: int64 flat positions in the input's H x W plane
  int64_t c = 0;   // channels interleaved in `in` and `out` (NHWC), or 0 for planes
};
// Note [Channels-last convolution]: as in PyTorch, a convolution whose input or weight is
// channels-last (a 4-d input, NHWC strides) computes and returns channels-last
// (docs/memory_format.md).
bool channels_last_conv(const Tensor& input, const Tensor& weight);

// Note [Pooling layouts]: for a channels-last input, pooling and upsampling hand their results
// (values, indices, an input's gradient) back channels-last, the layout PyTorch gives
// (docs/memory_format.md). The forwards of max_pool2d, avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d and upsample_bilinear2d read NHWC as it lies on both devices (the CPU's
// Notes [Channels-last max pool] and [Channels-last average pools], kernels/cpu/pool.cpp; the
// XPU's pool.cl, POOL_CELL), and so do the CPU's pool backwards; the others compute on NCHW
// planes, a reorder on either side.
Tensor in_layout_of(const Tensor& result, const Tensor& input);

// Max pooling's input gradient, written with ops (any backend, differentiable): each value of
// `grad` added at the flat position in its H x W plane that `indices` (grad's shape) names, for
// an input of `input_sizes`. An NHWC gradient is added as [N, Ho*Wo, C] rows into [N, H*W, C]
// ones, the channels-last result, with no reorder; otherwise plane by plane.
Tensor max_pool_input_grad(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes);

PoolMeta max_pool2d_meta(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                         bool nhwc = false);
PoolMeta avg_pool2d_meta(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode,
                         std::optional<int64_t> divisor_override, bool nhwc = false);
// The backward of max_pool2d_with_indices (`indices` given) and avg_pool2d (null): self's planes
// and the forward's window, after checking that grad_output has the forward's output shape and
// self's dtype and device, and the indices that shape and int64. Only self's metadata is read.
struct PoolBackwardMeta {
  Planes p;
  Window w;
};
PoolBackwardMeta pool2d_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self,
                                      IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                                      IntArrayRef dilation, bool ceil_mode, const Tensor* indices);
// avg_pool2d_backward's: the above and the divisor_override check.
PoolBackwardMeta avg_pool2d_backward_meta(const Tensor& grad_output, const Tensor& self,
                                          IntArrayRef kernel, IntArrayRef stride,
                                          IntArrayRef padding, bool ceil_mode,
                                          std::optional<int64_t> divisor_override);
// adaptive_avg_pool2d (with_indices false) and adaptive_max_pool2d (true).
PoolMeta adaptive_pool2d_meta(const char* op, const Tensor& input, IntArrayRef output_size,
                              bool with_indices, bool nhwc = false);
// upsample_bilinear2d: a 4-D input, output_size (ho, wo) in w.
PoolMeta upsample_bilinear2d_meta(const Tensor& input, IntArrayRef output_size, bool nhwc = false);

// Note [Bilinear taps]: output index o of `out` along a dim of `in` reads inputs i0 and
// i1 = min(i0 + 1, in - 1) with weights 1 - l and l, from PyTorch's source index:
// o * (in - 1) / (out - 1) with align_corners (0 when out == 1), else
// (o + 0.5) * in / out - 0.5 clamped at 0. Computed in the kernel's opmath type M; pool.cl
// repeats it for the XPU kernels, so both devices read the same taps.
template <class M>
struct LinearTap {
  int64_t i0, i1;
  M l;
};
template <class M>
LinearTap<M> linear_tap(int64_t o, int64_t in, int64_t out, bool align_corners) {
  M src;
  if (align_corners) {
    src = out > 1 ? static_cast<M>(o) * (static_cast<M>(in - 1) / static_cast<M>(out - 1)) : M(0);
  } else {
    src = (static_cast<M>(o) + M(0.5)) * (static_cast<M>(in) / static_cast<M>(out)) - M(0.5);
    if (src < 0) src = 0;
  }
  const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
  return {i0, std::min(i0 + 1, in - 1), src - static_cast<M>(i0)};
}

}  // namespace xten
