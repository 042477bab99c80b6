// Derivatives of conv2d and conv_transpose2d (kernels/cpu/conv.cpp): each is the other's
// backward-input; conv2d's backward-weight is the dispatched conv2d_backward_weight (oneDNN on
// the CPU), conv_transpose2d's a convolution of the gradient with the input; all run on the
// tensors' device (conv1d and the padding
// strings are composites over conv2d).
#include <xten/autograd/derivatives/common.h>
#include <xten/dispatch/op_handles.h>

namespace xten::autograd {
namespace {

Tensor conv2d_raw(const Tensor& in, const Tensor& w, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, int64_t groups) {
  return ops::conv2d::handle().call(in, w, std::nullopt, stride, padding, dilation, groups);
}

// The gradients of conv2d(input, weight, bias, stride, padding, dilation, groups) or, if
// `transposed`, conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
// dilation). An unbatched (C, H, W) input is a batch of one.
variable_list conv_grads(const GradContext& c, bool transposed) {
  const bool unbatched = c.input(0).dim() == 3;
  const Tensor x = unbatched ? c.input(0).unsqueeze(0) : c.input(0), w = c.input(1);
  const Tensor g = unbatched ? c.grad().unsqueeze(0) : c.grad();
  const IntArrayRef stride = c.arg<IntArrayRef>(3), padding = c.arg<IntArrayRef>(4),
                    dilation = c.arg<IntArrayRef>(transposed ? 7 : 5);
  const int64_t groups = c.arg<int64_t>(6);
  variable_list r(3);
  if (c.needs_grad(0)) {
    if (transposed) {
      r[0] = conv2d_raw(g, w, stride, padding, dilation, groups);
    } else {
      int64_t out_pad[2];  // the rows and columns the forward's stride left unused
      for (int i = 0; i < 2; ++i)
        out_pad[i] = x.size(2 + i) - ((g.size(2 + i) - 1) * stride[i] - 2 * padding[i] +
                                      dilation[i] * (w.size(2 + i) - 1) + 1);
      r[0] = ops::conv_transpose2d::handle().call(g, w, std::nullopt, stride, padding,
                                                  IntArrayRef(out_pad, 2), groups, dilation);
    }
    if (unbatched) r[0] = r[0].squeeze(0);
  }
  if (c.needs_grad(1)) {
    r[1] = conv2d_backward_weight(g, x, w.sizes(), stride, padding, dilation, groups, transposed);
    // In the weight's layout (docs/memory_format.md, "Gradients"): a reorder of the weight-sized
    // result, where the kernel computed it contiguous.
    if (w.suggest_memory_format() == MemoryFormat::ChannelsLast)
      r[1] = r[1].contiguous(MemoryFormat::ChannelsLast);
  }
  if (c.needs_grad(2)) r[2] = g.sum({0, 2, 3});
  return r;
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("conv2d", [](const GradContext& c) { return conv_grads(c, false); });
  d.def("conv_transpose2d", [](const GradContext& c) { return conv_grads(c, true); });
}

}  // namespace xten::autograd
