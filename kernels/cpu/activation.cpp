// Activations on CPU: softmax and log_softmax and their backward (one pass per row, vectorized
// by Eigen, over the input itself when the dim is innermost and contiguous, else over a
// contiguous copy with the dim innermost). The parameterized pointwise activations (leaky_relu,
// elu, softplus, hardswish) are in activation_pointwise.cpp; composite ones (hardtanh, prelu,
// dropout) in kernels/composite/activation.cpp.
#include <cmath>

#include <Eigen/Core>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

// `t` as `dtype` with dim `d` innermost and contiguous: the rows the softmax kernels run over.
// The common case (a contiguous input of that dtype reduced over its last dim) is `t` itself,
// with no dispatched conversion, transpose or copy (the [64, 10] log_softmax backward of the
// MLP's loss: 2.9 -> 2.0 us on the 2-core VM).
Tensor rows_over(const Tensor& t, int64_t d, ScalarType dtype) {
  if (t.dtype() == dtype && d == t.dim() - 1 && t.is_contiguous()) return t;
  return t.to(dtype).transpose(d, -1).contiguous();
}

// The inverse of rows_over's transpose for a result computed over rows.
Tensor from_rows(const Tensor& rows, int64_t d) {
  return d == rows.dim() - 1 ? rows : rows.transpose(d, -1).contiguous();
}

template <bool kLog>
Tensor softmax_impl(const char* op, const Tensor& self, int64_t dim,
                    std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = softmax_dtype(op, self, dtype);
  if (self.dim() == 0) return softmax_impl<kLog>(op, self.reshape({1}), 0, dtype).reshape({});
  const int64_t d = wrap_dim(op, dim, self.dim());
  const Tensor rows_in = rows_over(self, d, out_dtype);
  Tensor out = empty_tensor(rows_in.sizes(), out_dtype, self.device());
  const int64_t n = rows_in.size(-1);
  const int64_t rows = n ? rows_in.numel() / n : 0;
  visit_dtype<dtypes::kFloating>(op, out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(rows_in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    // One exp per element: softmax = exp(x - max) / sum, log_softmax = (x - max) - log(sum)
    // (unary_functors.h, shared with the compiler's fused rows).
    auto row = [](const auto& x, auto&& y) {
      if (kLog)
        log_softmax_into(x, y);
      else
        softmax_into(x, y);
    };
    parallel_for(rows, grain_for(n), [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, M>) {  // float/double: straight from and into the tensors
        for (int64_t r = b; r < e; ++r) row(ECMap<M>(src + r * n, n), EMap<M>(dst + r * n, n));
      } else {  // 16-bit floats: through a float row
        EArray<M> x(n), y(n);
        for (int64_t r = b; r < e; ++r) {
          widen_n(src + r * n, x.data(), n);  // vectorized both ways (loops.h)
          row(x, y);
          narrow_n(y.data(), dst + r * n, n);
        }
      }
    });
  });
  return from_rows(out, d);
}

Tensor softmax_kernel(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<false>("softmax", self, dim, dtype);
}
Tensor log_softmax_kernel(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return softmax_impl<true>("log_softmax", self, dim, dtype);
}

// Their backward over rows of y and g (the dim innermost, as the forward):
// softmax dx = y * (g - sum(g * y)), log_softmax dx = g - exp(y) * sum(g).
template <bool kLog>
Tensor softmax_backward_impl(const char* op, const Tensor& grad_output, const Tensor& output,
                             int64_t dim, ScalarType input_dtype) {
  const int64_t d = softmax_backward_meta(op, grad_output, output, dim, input_dtype);
  if (output.dim() == 0)
    return softmax_backward_impl<kLog>(op, grad_output.reshape({1}), output.reshape({1}), 0,
                                       input_dtype)
        .reshape({});
  const ScalarType t = promote_types(grad_output.dtype(), output.dtype());
  const Tensor gr = rows_over(grad_output, d, t);
  const Tensor yr = rows_over(output, d, t);
  Tensor out = empty_tensor(yr.sizes(), t, output.device());
  const int64_t n = yr.size(-1);
  const int64_t rows = n ? yr.numel() / n : 0;
  visit_dtype<dtypes::kFloating>(op, t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* gp = static_cast<const T*>(gr.data_ptr());
    const T* yp = static_cast<const T*>(yr.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    auto row = [](const auto& g, const auto& y, auto&& dx) {
      if (kLog) {
        using M = typename std::decay_t<decltype(y)>::Scalar;
        if constexpr (has_edge<ExpOp, M>::value) {
          // One pass where no element of y is an edge of the vector exp (log_softmax's outputs
          // are <= 0, so only those below -87 are, and NaN); else exp_into's two passes. The
          // check reads y, not a copy of it (on one VM thread at the avx2 level, [2048, 2048]:
          // 3.1 -> 2.2 ms).
          if (!any_edge(ExpOp{}, y.data(), y.size()))
            dx = g - ExpOp{}.vec(y) * g.sum();
          else
            exp_into(y, dx), dx = g - dx * g.sum();
        } else {  // one pass
          dx = g - ExpOp{}.vec(y) * g.sum();
        }
      } else {
        dx = y * (g - (g * y).sum());
      }
    };
    parallel_for(rows, grain_for(n), [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<T, M>) {
        for (int64_t r = b; r < e; ++r)
          row(ECMap<M>(gp + r * n, n), ECMap<M>(yp + r * n, n), EMap<M>(dst + r * n, n));
      } else {  // 16-bit floats: through float rows
        EArray<M> g(n), y(n), dx(n);
        for (int64_t r = b; r < e; ++r) {
          widen_n(gp + r * n, g.data(), n);
          widen_n(yp + r * n, y.data(), n);
          row(g, y, dx);
          narrow_n(dx.data(), dst + r * n, n);
        }
      }
    });
  });
  const Tensor dx = from_rows(out, d);
  return dx.dtype() == input_dtype ? dx : dx.to(input_dtype);  // dx is contiguous
}

}  // namespace

XTEN_CPU_KERNELS(activation, m) {
  m.impl("softmax", softmax_kernel);
  m.impl("log_softmax", log_softmax_kernel);
  m.impl("_softmax_backward_data",
         [](const Tensor& g, const Tensor& y, int64_t dim, ScalarType input_dtype) {
           return softmax_backward_impl<false>("_softmax_backward_data", g, y, dim, input_dtype);
         });
  m.impl("_log_softmax_backward_data",
         [](const Tensor& g, const Tensor& y, int64_t dim, ScalarType input_dtype) {
           return softmax_backward_impl<true>("_log_softmax_backward_data", g, y, dim, input_dtype);
         });
}

}  // namespace xten::cpu
