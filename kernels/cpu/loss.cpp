// nll_loss and nll_loss_backward on the CPU: one pass over the targets (the backward a second,
// which writes the gradient's rows on the threads; the composites in kernels/composite/loss.cpp
// take about twenty ops: docs/autograd.md, "Fused backward kernels");
// mse_loss and mse_loss_backward in one pass over the input and target.
// The input is read as [outer, classes, inner] (N, C and the spatial dims; [C] is 1 x C x 1).
#include <cstdlib>
#include <cstring>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/lane_sum.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

struct Targets {
  int64_t outer, classes, inner;
  const int64_t* t;  // outer * inner class indices
  int64_t ignore_index;
};

Targets targets_of(const Tensor& input, const Tensor& target, int64_t ignore_index) {
  Targets r{1, input.size(input.dim() == 1 ? 0 : 1), 1, target.data_ptr<int64_t>(), ignore_index};
  if (input.dim() > 1) r.outer = input.size(0);
  for (int64_t d = 2; d < input.dim(); ++d) r.inner *= input.size(d);
  return r;
}

// Raises the IndexError for a target out of range, named as the composite names it: the smallest
// target if one is negative, else the largest. Called once a pass has found one.
[[noreturn]] void raise_bad_target(const char* op, const Targets& r) {
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (int64_t i = 0; i < r.outer * r.inner; ++i) {
    if (r.t[i] == r.ignore_index) continue;
    lo = any ? std::min(lo, r.t[i]) : r.t[i];
    hi = any ? std::max(hi, r.t[i]) : r.t[i];
    any = true;
  }
  XTEN_CHECK(false, IndexError, op, "target {} is out of bounds for {} classes", lo < 0 ? lo : hi,
             r.classes);
  std::abort();  // not reached
}

// f(i, offset of the target's class in the input, w[target], lane) for each target not ignored,
// and the sum of those weights; a target out of range raises after the pass (f does not see it).
// `lane` (i mod 4, a compile-time constant: the loop is unrolled by four) lets f keep four
// partial sums in registers: one chain of double adds, 4 cycles each, was a quarter of
// nll_loss's time, and sums indexed by a run-time lane lived on the stack, a store and a load
// per target (the reads of the input are L2 hits in a training loop; the loop is the cost).
template <bool kFlat, bool kWeighted, class M, class F>
double for_each_target_as(const char* op, const Targets& r, const M* w, F& f) {
  double total0 = 0, total1 = 0, total2 = 0, total3 = 0;
  bool bad = false;
  const uint64_t classes = static_cast<uint64_t>(r.classes);
  const int64_t n = r.outer * r.inner;
  auto one = [&](int64_t i, auto lane, double& total) {
    const int64_t c = r.t[i];
    if (c == r.ignore_index) return;
    // A branch, not a select of a safe class: the read's address then waits on nothing but c
    // (Note [Indices read as they are] in index.cpp); out of range is rare and raises.
    if (static_cast<uint64_t>(c) >= classes) {
      bad = true;
      return;
    }
    const int64_t at =
        kFlat ? i * r.classes + c : ((i / r.inner) * r.classes + c) * r.inner + i % r.inner;
    const M wi = kWeighted ? w[c] : M(1);
    f(i, at, wi, lane);
    total += static_cast<double>(wi);
  };
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    one(i, std::integral_constant<int, 0>{}, total0);
    one(i + 1, std::integral_constant<int, 1>{}, total1);
    one(i + 2, std::integral_constant<int, 2>{}, total2);
    one(i + 3, std::integral_constant<int, 3>{}, total3);
  }
  for (; i < n; ++i) one(i, std::integral_constant<int, 0>{}, total0);
  if (bad) raise_bad_target(op, r);
  return (total0 + total1) + (total2 + total3);
}

// The loop above for each of the four cases of [N, C] or spatial input, with weights or
// without: each a loop without those tests (they were a third of nll_loss's time).
template <class M, class F>
double for_each_target(const char* op, const Targets& r, const M* w, F&& f) {
  if (r.inner == 1)
    return w ? for_each_target_as<true, true>(op, r, w, f)
             : for_each_target_as<true, false>(op, r, w, f);
  return w ? for_each_target_as<false, true>(op, r, w, f)
           : for_each_target_as<false, false>(op, r, w, f);
}

Tensor nll_loss_kernel(const Tensor& input, const Tensor& target,
                       const std::optional<Tensor>& weight, const std::string& reduction,
                       int64_t ignore_index) {
  check_nll_loss("nll_loss", input, target, weight, reduction);
  const Tensor x = input.contiguous(), t = target.contiguous();
  const Targets r = targets_of(input, t, ignore_index);
  Tensor out = reduction == "none" ? zeros(target.sizes(), input.options())
                                   : empty_tensor({}, input.dtype(), input.device());
  visit_dtype<dtypes::kFloating>("nll_loss", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const Tensor wm =
        weight && weight->defined() ? weight->to(scalar_type_of_v<M>).contiguous() : Tensor();
    const M* w = wm.defined() ? static_cast<const M*>(wm.data_ptr()) : nullptr;
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    double sum[4] = {0, 0, 0, 0};  // indexed by constants only: registers
    const double total =
        reduction == "none"
            ? for_each_target("nll_loss", r, w,
                              [&](int64_t i, int64_t at, M wi, auto) {
                                op[i] = static_cast<T>(-static_cast<M>(xp[at]) * wi);
                              })
            : for_each_target("nll_loss", r, w, [&](int64_t, int64_t at, M wi, auto lane) {
                sum[decltype(lane)::value] -= static_cast<double>(static_cast<M>(xp[at]) * wi);
              });
    const double all = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    if (reduction == "sum") *op = static_cast<T>(all);
    if (reduction == "mean") *op = static_cast<T>(all / total);  // 0 / 0: NaN, as PyTorch
  });
  return out;
}

Tensor nll_loss_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                const Tensor& target, const std::optional<Tensor>& weight,
                                const std::string& reduction, int64_t ignore_index) {
  check_nll_loss("nll_loss_backward", input, target, weight, reduction);
  check_nll_loss_grad(grad_output, input, target, reduction);
  const Tensor t = target.contiguous();
  const Targets r = targets_of(input, t, ignore_index);
  Tensor grad = empty_tensor(input.sizes(), input.dtype(), input.device());
  visit_dtype<dtypes::kFloating>("nll_loss_backward", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const Tensor wm =
        weight && weight->defined() ? weight->to(scalar_type_of_v<M>).contiguous() : Tensor();
    const M* w = wm.defined() ? static_cast<const M*>(wm.data_ptr()) : nullptr;
    const Tensor g = grad_output.to(scalar_type_of_v<M>).expand(target.sizes()).contiguous();
    const M* gp = static_cast<const M*>(g.data_ptr());
    T* dp = static_cast<T*>(grad.data_ptr());
    // A first pass checks the targets (raising before anything is written) and sums their
    // weights, which 'mean' divides by. Then each thread zeroes its rows of the gradient and
    // writes their targets' entries, so the rows are written once, by one thread: a zeros()
    // over all threads then a scatter on the calling thread wrote every row twice, the
    // scatter's into other cores' caches.
    const double sum = for_each_target("nll_loss_backward", r, w, [](int64_t, int64_t, M, auto) {});
    const M total = static_cast<M>(reduction == "mean" ? sum : 1.0);
    const int64_t block = r.classes * r.inner;  // one row of the [outer, classes, inner] input
    parallel_for(r.outer, grain_for(block), [&](int64_t b, int64_t e) {
      std::memset(static_cast<void*>(dp + b * block), 0,
                  static_cast<size_t>((e - b) * block) * sizeof(T));
      for (int64_t i = b * r.inner; i < e * r.inner; ++i) {
        const int64_t c = r.t[i];
        if (c == r.ignore_index) continue;
        const M wi = w ? w[c] : M(1);
        dp[((i / r.inner) * r.classes + c) * r.inner + i % r.inner] =
            static_cast<T>(-wi * gp[i] / total);
      }
    });
  });
  return grad;
}

// (x - t)^2 summed pairwise (Note [Summation accuracy]): leaves of up to kMseLeaf squares
// written to a buffer and summed lane by lane, leaves combined as halves.
template <class M, class T>
M squared_difference_sum(const T* x, const T* t, int64_t n) {
  constexpr int64_t kMseLeaf = 1024;
  if (n <= kMseLeaf) {
    alignas(64) M sq[kMseLeaf];
    for (int64_t i = 0; i < n; ++i) {
      const M d = static_cast<M>(x[i]) - static_cast<M>(t[i]);
      sq[i] = d * d;
    }
    return LaneSum<M>::sum(sq, n);
  }
  const int64_t half = (n / 2 + 7) / 8 * 8;
  return squared_difference_sum<M>(x, t, half) +
         squared_difference_sum<M>(x + half, t + half, n - half);
}

// (x - t)^2 elementwise: 'none', and the general case of the reduced forms.
struct SquaredDifferenceOp {
  template <class M>
  M operator()(M x, M t) const {
    return (x - t) * (x - t);
  }
  template <class A>
  auto vec(const A& x, const A& t) const {
    return (x - t).square();
  }
};

// One pass for 'mean' and 'sum' over an input and target of one shape and dtype, contiguous:
// the composite's subtraction, square and mean wrote two tensors of the input's size (0.70-0.72x
// libtorch at 16 threads in the sweep). Threads sum pieces, added in order. Other shapes (the
// target broadcast) square elementwise and reduce with sum/mean.
Tensor mse_loss_kernel(const Tensor& self, const Tensor& target, const std::string& reduction) {
  constexpr const char* op = "mse_loss";
  check_floating_loss(op, self, target);
  check_loss_reduction(op, reduction);
  const bool one_pass = reduction != "none" && self.dtype() == target.dtype() &&
                        self.sizes() == target.sizes() && self.is_contiguous() &&
                        target.is_contiguous() && self.numel() > 0;
  if (!one_pass) {
    Elementwise e(op, Tensor(), {self, target});
    e.prepare();
    const Tensor sq = visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return e.run(make_loop<T, T, T>(SquaredDifferenceOp{}));
    });
    return reduction == "none" ? sq : reduction == "sum" ? sq.sum() : sq.mean();
  }
  Tensor out = empty_tensor({}, self.dtype(), self.device());
  visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* x = static_cast<const T*>(self.data_ptr());
    const T* t = static_cast<const T*>(target.data_ptr());
    const int64_t n = self.numel();
    const int64_t pieces =
        std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), n / kParallelGrain));
    std::vector<M> part(static_cast<size_t>(pieces));
    parallel_for(pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        const int64_t lo = n * q / pieces, hi = n * (q + 1) / pieces;
        part[static_cast<size_t>(q)] = squared_difference_sum<M>(x + lo, t + lo, hi - lo);
      }
    });
    M total = part[0];
    for (int64_t q = 1; q < pieces; ++q) total += part[static_cast<size_t>(q)];
    *static_cast<T*>(out.data_ptr()) =
        static_cast<T>(reduction == "sum" ? total : total / static_cast<M>(n));
  });
  return out;
}

// c (x - t), the gradient of a reduced mse_loss (c = 2 grad, over the count for 'mean').
template <class M>
struct MseGradOp {
  M c;
  M operator()(M x, M t) const { return (x - t) * c; }
  template <class A>
  auto vec(const A& x, const A& t) const {
    return (x - t) * c;
  }
};
// norm (x - t) g, the gradient of an unreduced one.
template <class M>
struct MseGradNoneOp {
  M norm;
  M operator()(M g, M x, M t) const { return (x - t) * norm * g; }
};

// One pass: the composite's subtraction and two products wrote three tensors of the input's size
// (and the gradient of a reduced loss was first expanded to it).
Tensor mse_loss_backward_kernel(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                const std::string& reduction) {
  constexpr const char* op = "mse_loss_backward";
  const double norm = mse_loss_backward_norm(grad_output, self, target, reduction);
  if (reduction != "none" && grad_output.dim() == 0) {
    const double g = grad_output.item<double>();
    Elementwise e(op, Tensor(), {self, target});
    e.prepare();
    return visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      return e.run(make_loop<T, T, T>(MseGradOp<M>{static_cast<M>(norm * g)}));
    });
  }
  Elementwise e(op, Tensor(), {grad_output, self, target});
  e.prepare();
  return visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    return e.run(make_loop<T, T, T, T>(MseGradNoneOp<M>{static_cast<M>(norm)}));
  });
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("nll_loss", nll_loss_kernel);
  m.impl("nll_loss_backward", nll_loss_backward_kernel);
  m.impl("mse_loss", mse_loss_kernel);
  m.impl("mse_loss_backward", mse_loss_backward_kernel);
}

}  // namespace xten::cpu
