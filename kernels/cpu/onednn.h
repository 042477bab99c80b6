#pragma once
// oneDNN primitives for the CPU kernels of kernels/cpu/linalg.cpp and conv.cpp
// (docs/cpu_kernels.md). Each returns false, computing nothing, where oneDNN does not support the
// case (a dtype, or an instruction set the machine lacks); the caller then runs its Eigen path.
// Tensors are CPU tensors of one dtype (float32, bfloat16 or float16), checked by the callers.
#include <array>
#include <memory>
#include <optional>
#include <vector>

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

// conv2d of the 4-D input g.input4-shaped `x` by the weight (contiguous or channels-last) into
// out [n, o, ho, wo], plus the bias (float32) if given. x and out are contiguous, or with
// `nhwc` both channels-last (the primitive then reads and writes NHWC: no reorder).
bool conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
            const Tensor& out, bool nhwc);

// conv_transpose2d likewise (contiguous weight [c, o / groups, kh, kw], (h, w) the input's
// size), output_padding as given to the op.
bool conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvGeometry& g,
                      IntArrayRef output_padding, const Tensor& out, bool nhwc);

// The weight gradient of conv2d: x (the input) and grad_output [n, o, ho, wo], contiguous or
// with `nhwc` both channels-last, into grad_weight [o, c / groups, kh, kw] (contiguous or
// channels-last).
bool conv2d_backward_weight(const Tensor& grad_output, const Tensor& x, const ConvGeometry& g,
                            const Tensor& grad_weight, bool nhwc);

// int8 products of quantization/ (docs/quantization.md, "Kernels"): x's integers (uint8 or int8
// storage of a quantized dtype) less x_zero_point, times the int8 weight w, accumulated in int32;
// then per output channel times scales[o] (one scale: all channels; the caller folds in x's,
// w's and out's scales), plus the float32 bias (undefined: none), relu if asked, plus
// out_zero_point, rounded and saturated into out's integers (or float32 for a float32 out).
// conv2d: x and out NCHW, or with `nhwc` both channels-last; w [o, c / groups, kh, kw]
// contiguous or channels-last. linear: x [n, k] with rows or columns dense, w [o, k], out [n, o]
// contiguous.
bool quantized_conv2d(const Tensor& x, int32_t x_zero_point, const Tensor& w, const Tensor& bias,
                      const std::vector<float>& scales, int32_t out_zero_point, bool relu,
                      const ConvGeometry& g, const Tensor& out, bool nhwc);
bool quantized_linear(const Tensor& x, int32_t x_zero_point, const Tensor& w, const Tensor& bias,
                      const std::vector<float>& scales, int32_t out_zero_point, bool relu,
                      const Tensor& out);

// Note [Tile products]: a product of small tiles that a kernel runs many times from its own
// parallel tasks (flash attention, kernels/cpu/attention.cpp): c[m, n] (float32, row-major,
// leading dimension ldc) = a[m, k] @ b[k, n], or += with `accumulate`; a and b of `dtype` with
// the element strides given ({row, column}; one of them 1). float32 runs dnnl_sgemm on the
// calling thread; bfloat16 and float16 a one-thread matmul primitive, built once per shape and
// run without the cache's look-up, each thread keeping its stream, scratchpad and the memory
// objects of its last 16 shapes (TileThreadState in onednn.cpp). Empty (false) where oneDNN takes
// the case only with its reference code or not at all (bfloat16 below AVX-512, float16 without
// AVX512-FP16, XTEN_CPU_CAPABILITY capping the ISA, or a dnnl_sgemm that does not compute): the
// caller then multiplies with Eigen in float.
class TileProduct {
 public:
  TileProduct() = default;
  static TileProduct make(ScalarType dtype, int64_t m, int64_t n, int64_t k,
                          std::array<int64_t, 2> a_strides, std::array<int64_t, 2> b_strides,
                          int64_t ldc, bool accumulate);
  explicit operator bool() const { return impl_ != nullptr; }
  void run(const void* a, const void* b, float* c) const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

// The oneDNN steps of a compiled inference graph (compile/passes.cpp, plan_convolutions;
// docs/compile.md, "Convolutions"): a convolution as a forward_inference primitive with its
// weights reordered into oneDNN's format once, the bias, and optionally a residual add (oneDNN's
// sum post-op: the output buffer holds the other operand first) and relu (an eltwise post-op),
// in one primitive; or a max pooling between such convolutions. Activations may stay in oneDNN's
// own layout between steps: a *blocked* tensor is a byte tensor holding a value in the dst
// layout of the InferenceStep that made it.
class InferenceStep {
 public:
  // A convolution; null where oneDNN declines. x: float32 or bfloat16 (the weight's dtype too);
  // weight [o, c / groups, kh, kw] and bias (any float dtype, or undefined) are read now and kept
  // reordered. Built for the team get_num_threads() gives now (Note [oneDNN threads]).
  static std::shared_ptr<const InferenceStep> make(const ConvGeometry& g, ScalarType dtype,
                                                   const Tensor& weight, const Tensor& bias,
                                                   bool sum, bool relu);
  // max_pool2d without indices over g (o = c; kh, kw the window; dilation 1), reading its input
  // in the layout `src_from` makes (plain NCHW if null); its output keeps that layout. Null
  // where oneDNN declines.
  static std::shared_ptr<const InferenceStep> max_pool(const ConvGeometry& g, ScalarType dtype,
                                                       const InferenceStep* src_from);
  // src: a contiguous NCHW tensor, or blocked by `src_from`; other (with sum): likewise by
  // `other_from`. The result: blocked if `blocked_out`, else a contiguous NCHW tensor.
  Tensor run(const Tensor& src, const InferenceStep* src_from, const Tensor& other,
             const InferenceStep* other_from, bool blocked_out) const;
  // "onednn conv 64x64x3x3 stride 1 pad 1 +bias +relu", for the graph dump.
  std::string describe() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace xten::cpu::onednn
