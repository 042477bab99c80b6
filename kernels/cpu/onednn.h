#pragma once
// oneDNN primitives for the CPU kernels of kernels/cpu/linalg.cpp and conv.cpp
// (docs/cpu_kernels.md). Each returns false, computing nothing, where oneDNN does not support the
// case (a dtype, or an instruction set the machine lacks); the caller then runs its Eigen path.
// Tensors are CPU tensors of one dtype (float32, bfloat16 or float16), checked by the callers.
#include <optional>

#include <xten/core/tensor.h>
#include <xten/kernels/common/window.h>

namespace xten::cpu::onednn {

// out[B, n, m] = a[B, n, k] @ b[B, k, m]; a and b with any strides, out contiguous.
bool matmul(const Tensor& a, const Tensor& b, const Tensor& out);

// out[n, o] = x[n, i] @ w[o, i]^T (+ bias[o]), then relu if `relu` (keeping NaN, unlike oneDNN's
// relu post-op); x and w with rows or columns dense, the bias (of x's dtype) and out
// contiguous. One primitive adds the bias, or, for a float32 weight cut by rows over the team,
// each thread its part (Note [Rows to threads]).
bool linear(const Tensor& x, const Tensor& w, const Tensor& bias, bool relu, const Tensor& out);

// conv2d of the contiguous 4-D input g.input4-shaped `x` by the contiguous weight into the
// contiguous out [n, o, ho, wo], plus the bias (float32) if given.
bool conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
            const Tensor& out);

// conv_transpose2d likewise (weight [c, o / groups, kh, kw], (h, w) the input's size),
// output_padding as given to the op.
bool conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
                      IntArrayRef output_padding, const Tensor& out);

// The weight gradient of conv2d: contiguous x (the input) and grad_output [n, o, ho, wo] into
// the contiguous grad_weight [o, c / groups, kh, kw].
bool conv2d_backward_weight(const Tensor& grad_output, const Tensor& x, const ConvGeometry& g,
                            const Tensor& grad_weight);

}  // namespace xten::cpu::onednn
