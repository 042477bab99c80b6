#pragma once
// Helpers the derivative formulas share (autograd/derivatives/*.cpp). Each is written with xten
// ops, so a formula that uses it stays differentiable for create_graph.
#include <xten/autograd/derivative.h>
#include <xten/dispatch/ops.h>

namespace xten::autograd {

// `grad` where `mask` holds, zero elsewhere.
inline Tensor keep_where(const Tensor& mask, const Tensor& grad) {
  return where(mask, grad, zeros({}, grad.dtype(), grad.device()));
}

// The reduced dims of a reduction over `dims` (empty: all) of a tensor of `ndim` dims, sorted.
std::vector<int64_t> reduced_dims(IntArrayRef dims, int64_t ndim);

// A reduction's gradient (or result) brought back to the input's shape: the reduced dims
// re-inserted (when keepdim was false) and expanded.
Tensor expand_reduced(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef dims, bool keepdim);

// The number of elements a reduction over `dims` combines.
int64_t reduced_count(IntArrayRef input_sizes, IntArrayRef dims);

// The gradient of a slice-like view: zeros of `input_sizes` with `grad` in the region `view_of`
// picks.
template <class ViewOf>
Tensor embed_grad(const Tensor& grad, IntArrayRef input_sizes, ViewOf view_of) {
  Tensor result = zeros(input_sizes, grad.dtype(), grad.device());
  view_of(result).copy_(grad);
  return result;
}

// Reverse cumulative sum along `dim` (sum from each position to the end).
inline Tensor reverse_cumsum(const Tensor& t, int64_t dim) {
  return flip(cumsum(flip(t, {dim}), dim), {dim});
}

}  // namespace xten::autograd
