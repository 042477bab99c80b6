#pragma once
// The weight gradient of a convolution written with conv2d (kernels/composite/conv.cpp): the
// composite of conv2d_backward_weight, which the CPU (where oneDNN declines) and XPU kernels
// call too, and the transposed case autograd uses directly.
#include <xten/core/tensor.h>

namespace xten {

// Per group, a convolution over the batch of x (channels as batch) with g as the weight, stride
// and dilation swapped, cut to the kernel's size. transposed: the weight gradient of
// conv_transpose2d(x, w) with g its output's gradient.
Tensor conv_weight_grad_by_convolution(const Tensor& g, const Tensor& x, IntArrayRef w_sizes,
                                       IntArrayRef stride, IntArrayRef padding,
                                       IntArrayRef dilation, int64_t groups, bool transposed);

}  // namespace xten
