// Reductions on CPU: sum and mean over any set of dims.
//
// Note [Summation accuracy]
// Sums use pairwise (cascade) summation over contiguous runs: blocks of kLeaf elements are
// summed with 8 independent accumulators, and blocks combine in a binary tree, so the
// rounding error grows with log(n), not n (float32: the sum of 2^24 ones is exactly 2^24).
// Half and BFloat16 accumulate in float, integers in int64.
#include <algorithm>
#include <vector>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include "loops.h"

namespace xten::cpu {
namespace {

constexpr int64_t kLeaf = 128;

// Integer sums wrap on overflow (as PyTorch's); W is the type they add in.
template <class Acc, class T>
Acc pairwise_sum(const T* p, int64_t n) {
  using W = std::conditional_t<std::is_integral_v<Acc>, uint64_t, Acc>;
  if (n <= kLeaf) {
    W acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) acc[k] += static_cast<W>(static_cast<Acc>(p[i + k]));
    W s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; ++i) s += static_cast<W>(static_cast<Acc>(p[i]));
    return static_cast<Acc>(s);
  }
  const int64_t half = (n / 2 + 7) / 8 * 8;
  return static_cast<Acc>(static_cast<W>(pairwise_sum<Acc>(p, half)) +
                          static_cast<W>(pairwise_sum<Acc>(p + half, n - half)));
}

template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;

// Normalized, sorted, distinct reduction dims; empty `dims` means all.
std::vector<int64_t> reduction_dims(const char* op, const Tensor& self, IntArrayRef dims) {
  std::vector<bool> mask(static_cast<size_t>(std::max<int64_t>(self.dim(), 1)), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(op, d, self.dim());
    XTEN_CHECK(!mask[w] || dims.empty(), ValueError, op, "dim {} appears more than once in {}", w,
               dims);
    mask[w] = true;
  }
  std::vector<int64_t> out;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (mask[d]) out.push_back(d);
  return out;
}

// Sums `self` over `dims` into dtype `out_dtype`, dividing by `divisor` (mean: the count).
Tensor sum_impl(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim,
                ScalarType out_dtype, double divisor) {
  const std::vector<int64_t> rdims = reduction_dims(op, self, dims);
  std::vector<bool> reduced(static_cast<size_t>(self.dim()), false);
  for (int64_t d : rdims) reduced[d] = true;
  // Kept dims first, reduced dims last, then contiguous: each output element sums one row.
  DimVector order, out_shape;
  int64_t inner = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (reduced[d]) continue;
    order.push_back(d);
    out_shape.push_back(self.size(d));
  }
  for (int64_t d : rdims) {
    order.push_back(d);
    inner *= self.size(d);
  }
  const Tensor in = permute(self.to(out_dtype), order).contiguous();
  Tensor out = empty_tensor(out_shape, out_dtype, self.device());
  const int64_t outer = out.numel();
  visit_dtype<dtypes::kAll>(op, out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    auto finish = [divisor](Acc v) {
      if constexpr (std::is_integral_v<Acc>)
        return cast_value<T>(v);
      else
        return cast_value<T>(divisor == 1.0 ? v : static_cast<Acc>(v / static_cast<Acc>(divisor)));
    };
    if (outer == 1 && inner >= kParallelGrain) {
      // One long row: each thread sums a contiguous piece; pieces combine in order.
      const int threads = get_num_threads();
      std::vector<Acc> partial(static_cast<size_t>(threads), Acc(0));
      const int64_t piece = (inner + threads - 1) / threads;
      parallel_for(threads, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          const int64_t lo = t * piece, n = std::min(inner, lo + piece) - lo;
          if (n > 0) partial[t] = pairwise_sum<Acc>(src + lo, n);
        }
      });
      dst[0] = finish(pairwise_sum<Acc>(partial.data(), threads));
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(inner, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t i = b; i < e; ++i)
                     dst[i] = finish(pairwise_sum<Acc>(src + i * inner, inner));
                 });
  });
  if (!keepdim) return out;
  DimVector kept(self.sizes());
  for (int64_t d : rdims) kept[d] = 1;
  return out.view(kept);
}

Tensor sum_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                  std::optional<ScalarType> dtype) {
  const ScalarType out = dtype                                  ? *dtype
                         : is_integral_type(self.dtype(), true) ? kLong
                                                                : self.dtype();
  return sum_impl("sum", self, dims, keepdim, out, 1.0);
}

Tensor mean_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const ScalarType out = dtype.value_or(self.dtype());
  XTEN_CHECK(
      is_floating_type(out), TypeError, "mean",
      "could not infer the output dtype: input dtype {} is not floating; pass a floating dtype",
      to_string(out));
  int64_t count = 1;
  for (int64_t d : reduction_dims("mean", self, dims)) count *= self.size(d);
  return sum_impl("mean", self, dims, keepdim, out, static_cast<double>(count));
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("sum.dim_IntList", sum_kernel);
  m.impl("mean.dim", mean_kernel);
}

}  // namespace xten::cpu
