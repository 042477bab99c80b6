// Derivatives of pooling (kernels/cpu/pool.cpp) over the last two dims of a 3-D or 4-D input:
// max pooling sends each gradient to the element its index names, average pooling spreads it over
// its window (max_pool2d_with_indices_backward and avg_pool2d_backward: fused kernels on the CPU,
// avg_pool2d_backward's on the XPU too, composites in kernels/composite/pool.cpp); the adaptive
// pools and upsampling are linear maps written with ops here.
#include <cmath>

#include <xten/autograd/derivatives/common.h>
#include <xten/dispatch/op_handles.h>
#include <xten/kernels/common/window.h>

namespace xten::autograd {
namespace {

// A stand-in for the forward's input where a backward op reads only its sizes, dtype and device
// (max_pool2d_with_indices_backward, avg_pool2d_backward): one zero expanded, no memory, so the
// node keeps no copy of the input.
Tensor shape_only(const TensorMeta& m) {
  return zeros({}, m.dtype, m.device).expand(m.sizes);
}

// The input's gradient in the input's layout: the kernels see only shape_only's strides, so a
// channels-last input's gradient would come back NCHW and make every pointwise op of the
// backward after it walk two layouts (docs/memory_format.md, "Gradients").
Tensor in_layout_of(const Tensor& grad, const TensorMeta& m) {
  if (grad.dim() != 4) return grad;
  // (a kernel that saw a channels-last gradient may have answered in that layout)
  return grad.contiguous(m.memory_format == MemoryFormat::ChannelsLast ? MemoryFormat::ChannelsLast
                                                                       : MemoryFormat::Contiguous);
}

// (out, in): row o averages the inputs of adaptive window o.
Tensor adaptive_matrix(int64_t out, int64_t in, const Tensor& like) {
  std::vector<double> a(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t s = adaptive_start(o, in, out), e = adaptive_end(o, in, out);
    for (int64_t i = s; i < e; ++i) a[o * in + i] = 1.0 / static_cast<double>(e - s);
  }
  return tensor(a, IntArrayRef({out, in}), TensorOptions(like.dtype())).to(like.device());
}

// (out, in): row o holds the bilinear weights of output o (Note [Bilinear taps]), computed in
// the forward kernel's opmath type.
template <class M>
std::vector<double> bilinear_weights(int64_t out, int64_t in, bool align_corners) {
  std::vector<double> a(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const LinearTap<M> t = linear_tap<M>(o, in, out, align_corners);
    a[o * in + t.i0] += 1.0 - static_cast<double>(t.l);
    a[o * in + t.i1] += static_cast<double>(t.l);
  }
  return a;
}

Tensor bilinear_matrix(int64_t out, int64_t in, bool align_corners, const Tensor& like) {
  const std::vector<double> a = like.dtype() == kDouble
                                    ? bilinear_weights<double>(out, in, align_corners)
                                    : bilinear_weights<float>(out, in, align_corners);
  return tensor(a, IntArrayRef({out, in}), TensorOptions(like.dtype())).to(like.device());
}

// dx = mh^T g mw per plane, for the separable linear maps out = mh x mw^T below. An NHWC gradient
// is read as [N, Ho, Wo, C] matrices: mw^T times each [Wo, C] block, then mh^T times each
// image's [Ho, W*C] rows, giving the NHWC input gradient with no reorder (docs/memory_format.md).
Tensor separable_grad(const Tensor& g, const Tensor& mh, const Tensor& mw) {
  if (g.suggest_memory_format() != MemoryFormat::ChannelsLast) return matmul(matmul(mh.t(), g), mw);
  const int64_t n = g.size(0), ch = g.size(1), ho = g.size(2), h = mh.size(1), w = mw.size(1);
  const Tensor cols = matmul(mw.t(), g.permute({0, 2, 3, 1}));  // [N, Ho, W, C]
  return matmul(mh.t(), cols.reshape({n, ho, w * ch})).view({n, h, w, ch}).permute({0, 3, 1, 2});
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // max_pool2d_with_indices(self, kernel_size, stride, padding, dilation, ceil_mode)
  d.def("max_pool2d_with_indices",
        [](const GradContext& c) -> variable_list {
          return {in_layout_of(max_pool2d_with_indices_backward(
                                   c.grad(0), shape_only(c.input_meta(0)), c.arg<IntArrayRef>(1),
                                   c.arg<IntArrayRef>(2), c.arg<IntArrayRef>(3),
                                   c.arg<IntArrayRef>(4), c.arg<bool>(5), c.result(1)),
                               c.input_meta(0))};
        })
      .saves_result()
      .saves_only({});
  d.def("adaptive_max_pool2d",
        [](const GradContext& c) -> variable_list {
          return {in_layout_of(max_pool_input_grad(c.grad(0), c.result(1), c.input_sizes(0)),
                               c.input_meta(0))};
        })
      .saves_result()
      .saves_only({});
  // avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
  d.def("avg_pool2d", [](const GradContext& c) -> variable_list {
     return {in_layout_of(
         avg_pool2d_backward(c.grad(), shape_only(c.input_meta(0)), c.arg<IntArrayRef>(1),
                             c.arg<IntArrayRef>(2), c.arg<IntArrayRef>(3), c.arg<bool>(4),
                             c.arg<bool>(5), c.arg<std::optional<int64_t>>(6)),
         c.input_meta(0))};
   }).saves_only({});
  // Where the output size divides the input's (1 x 1, ResNet's head), the windows tile the input:
  // avg_pool2d's backward with kernel = stride = in / out (the batched products below took 13 ms
  // for [32, 512, 7, 7] -> 1 x 1 on one thread of the VM). Otherwise separable: out = A_h x A_w^T
  // per plane, so dx = A_h^T g A_w.
  d.def("adaptive_avg_pool2d", [](const GradContext& c) -> variable_list {
     const IntArrayRef xs = c.input_sizes(0);
     const Tensor& g = c.grad();
     const int64_t h = xs[xs.size() - 2], w = xs[xs.size() - 1], ho = g.size(-2), wo = g.size(-1);
     if (h % ho == 0 && w % wo == 0) {
       const int64_t k[2] = {h / ho, w / wo};
       return {in_layout_of(
           avg_pool2d_backward(g, shape_only(c.input_meta(0)), IntArrayRef(k, 2), IntArrayRef(k, 2),
                               IntArrayRef({0, 0}), false, true, std::nullopt),
           c.input_meta(0))};
     }
     const Tensor ah = adaptive_matrix(g.size(-2), xs[xs.size() - 2], g);
     const Tensor aw = adaptive_matrix(g.size(-1), xs[xs.size() - 1], g);
     return {in_layout_of(separable_grad(g, ah, aw), c.input_meta(0))};
   }).saves_only({});
  // Linear and separable like adaptive_avg_pool2d: out = B_h x B_w^T, dx = B_h^T g B_w.
  d.def("upsample_bilinear2d", [](const GradContext& c) -> variable_list {
     const IntArrayRef xs = c.input_sizes(0);
     const Tensor& g = c.grad();
     const bool align_corners = c.arg<bool>(2);
     const Tensor bh = bilinear_matrix(g.size(-2), xs[2], align_corners, g);
     const Tensor bw = bilinear_matrix(g.size(-1), xs[3], align_corners, g);
     return {in_layout_of(separable_grad(g, bh, bw), c.input_meta(0))};
   }).saves_only({});
}

}  // namespace xten::autograd
