#include <xten/autograd/derivatives/common.h>

#include <algorithm>

#include <xten/core/meta.h>

namespace xten::autograd {

std::vector<int64_t> reduced_dims(IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> r;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) r.push_back(d);
    return r;
  }
  for (int64_t d : dims) r.push_back(wrap_dim("backward", d, std::max<int64_t>(ndim, 1)));
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

Tensor expand_reduced(const Tensor& grad, IntArrayRef input_sizes, IntArrayRef dims, bool keepdim) {
  const int64_t ndim = static_cast<int64_t>(input_sizes.size());
  Tensor g = grad;
  if (!keepdim && ndim > 0)
    for (int64_t d : reduced_dims(dims, ndim)) g = g.unsqueeze(d);
  return g.expand(input_sizes);
}

int64_t reduced_count(IntArrayRef input_sizes, IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(dims, static_cast<int64_t>(input_sizes.size())))
    if (!input_sizes.empty()) n *= input_sizes[d];
  return n;
}

}  // namespace xten::autograd
