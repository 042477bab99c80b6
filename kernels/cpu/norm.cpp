// Normalization on CPU: layer_norm and group_norm forward in one pass over rows (Note
// [Normalization forward]); batch_norm_backward and layer_norm_backward as fused loops
// over the input, its gradient and the recomputed statistics (docs/autograd.md, "Fused backward
// kernels"): batch_norm one task per channel (the sums over its rows accumulated in double),
// layer_norm one task per row and then one per block of columns for the weight and bias
// gradients. float16 and bfloat16 are computed in float.
#include <cmath>
#include <memory>
#include <vector>

#include <Eigen/Core>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

// A contiguous copy in the type the loops run in (float or double), or null if absent.
Tensor opmath_copy(const std::optional<Tensor>& t, ScalarType m) {
  return t && t->defined() ? t->to(m).contiguous() : Tensor();
}
template <class T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.data_ptr()) : nullptr;
}

// Calls f(TypeTag<float or double>) for the loops' type m.
template <class F>
void visit_opmath(ScalarType m, F&& f) {
  if (m == kDouble) {
    f(TypeTag<double>{});
  } else {
    f(TypeTag<float>{});
  }
}

template <class T>
void batch_norm_backward_loop(const NormMeta& m, const T* x, const T* g, const T* w, const T* rm,
                              const T* rv, bool training, double eps, T* dx, T* dw, T* db) {
  const int64_t n = m.outer, ch = m.channels, in = m.inner;
  const double count = static_cast<double>(n * in);
  parallel_for(ch, grain_for(4 * n * in), [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      auto at = [&](int64_t i) { return (i * ch + c) * in; };
      double mean = 0, rstd = 0;
      if (training) {
        double s = 0, v = 0;
        for (int64_t i = 0; i < n; ++i) s += ECMap<T>(x + at(i), in).sum();
        mean = count > 0 ? s / count : 0;
        for (int64_t i = 0; i < n; ++i)
          v += (ECMap<T>(x + at(i), in) - static_cast<T>(mean)).square().sum();
        rstd = 1 / std::sqrt((count > 0 ? v / count : 0) + eps);
      } else {
        mean = rm[c];
        rstd = 1 / std::sqrt(static_cast<double>(rv[c]) + eps);
      }
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < n; ++i) {
        const auto gi = ECMap<T>(g + at(i), in);
        sg += gi.sum();
        sgx += (gi * (ECMap<T>(x + at(i), in) - static_cast<T>(mean))).sum();
      }
      dw[c] = static_cast<T>(sgx * rstd);
      db[c] = static_cast<T>(sg);
      // dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training, w rstd g in evaluation.
      const T k = static_cast<T>((w ? w[c] : 1) * rstd), r = static_cast<T>(rstd);
      const T mg = training && count > 0 ? static_cast<T>(sg / count) : T(0);
      const T mgx = training && count > 0 ? static_cast<T>(sgx * rstd / count) : T(0);
      for (int64_t i = 0; i < n; ++i)
        EMap<T>(dx + at(i), in) = k * (ECMap<T>(g + at(i), in) - mg -
                                       (ECMap<T>(x + at(i), in) - static_cast<T>(mean)) * r * mgx);
    }
  });
}

// Note [Channels-last batch norm backward]: an NHWC batch is a [rows = N*H*W, C] matrix, so
// the per-channel sums are column sums: threads take ranges of rows and sum every channel in
// double (the parts added in order), and dx is one pass over the rows. The plane loop above
// would need a reorder of the input and of the gradient in and of the result out, and its
// NCHW result made the relu backward after it walk two layouts. (Written with ops instead, a
// ResNet-18 step spent 1.7x the time of its NCHW twin.)
template <class T>
void batch_norm_backward_nhwc(int64_t rows, int64_t ch, const T* x, const T* g, const T* w,
                              const T* rm, const T* rv, bool training, double eps, T* dx, T* dw,
                              T* db) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), rows / 64));
  const double count = static_cast<double>(rows);
  std::vector<double> acc(static_cast<size_t>(parts * ch)), acc2(acc.size());
  // acc[c], acc2[c] = the sums over all rows of what add_row(row, acc, acc2) adds per row.
  auto column_sums = [&](const auto& add_row) {
    std::fill(acc.begin(), acc.end(), 0.0);
    std::fill(acc2.begin(), acc2.end(), 0.0);
    parallel_for(parts, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q)
        for (int64_t r = rows * q / parts; r < rows * (q + 1) / parts; ++r)
          add_row(r, acc.data() + q * ch, acc2.data() + q * ch);
    });
    for (int64_t q = 1; q < parts; ++q)
      for (int64_t c = 0; c < ch; ++c) {
        acc[c] += acc[q * ch + c];
        acc2[c] += acc2[q * ch + c];
      }
  };
  std::vector<double> mean(static_cast<size_t>(ch)), rstd(mean.size());
  if (training) {
    column_sums([&](int64_t r, double* a, double*) {
      const T* xr = x + r * ch;
      for (int64_t c = 0; c < ch; ++c) a[c] += static_cast<double>(xr[c]);
    });
    for (int64_t c = 0; c < ch; ++c) mean[c] = count > 0 ? acc[c] / count : 0;
    column_sums([&](int64_t r, double* a, double*) {
      const T* xr = x + r * ch;
      for (int64_t c = 0; c < ch; ++c) {
        const double d = static_cast<double>(xr[c]) - mean[c];
        a[c] += d * d;
      }
    });
    for (int64_t c = 0; c < ch; ++c)
      rstd[c] = 1 / std::sqrt((count > 0 ? acc[c] / count : 0) + eps);
  } else {
    for (int64_t c = 0; c < ch; ++c) {
      mean[c] = rm[c];
      rstd[c] = 1 / std::sqrt(static_cast<double>(rv[c]) + eps);
    }
  }
  column_sums([&](int64_t r, double* a, double* a2) {
    const T *xr = x + r * ch, *gr = g + r * ch;
    for (int64_t c = 0; c < ch; ++c) {
      const double gv = static_cast<double>(gr[c]);
      a[c] += gv;
      a2[c] += gv * (static_cast<double>(xr[c]) - mean[c]);
    }
  });
  // dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training, w rstd g in evaluation.
  std::vector<T> k(static_cast<size_t>(ch)), mu(k.size()), rmg(k.size()), mg(k.size());
  for (int64_t c = 0; c < ch; ++c) {
    dw[c] = static_cast<T>(acc2[c] * rstd[c]);
    db[c] = static_cast<T>(acc[c]);
    k[c] = static_cast<T>((w ? w[c] : 1) * rstd[c]);
    mu[c] = static_cast<T>(mean[c]);
    mg[c] = training && count > 0 ? static_cast<T>(acc[c] / count) : T(0);
    // rstd * mean(g xhat) = rstd^2 * sum(g (x - mean)) / count
    rmg[c] = training && count > 0 ? static_cast<T>(acc2[c] * rstd[c] * rstd[c] / count) : T(0);
  }
  parallel_for(rows, grain_for(4 * ch), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T *xr = x + r * ch, *gr = g + r * ch;
      T* out = dx + r * ch;
      for (int64_t c = 0; c < ch; ++c) out[c] = k[c] * (gr[c] - mg[c] - (xr[c] - mu[c]) * rmg[c]);
    }
  });
}

TensorTriple batch_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& running_mean,
                                        const std::optional<Tensor>& running_var, bool training,
                                        double eps) {
  const NormMeta m =
      batch_norm_backward_meta(grad_output, input, weight, running_mean, running_var, training);
  const ScalarType t = input.dtype() == kDouble ? kDouble : kFloat;
  // Note [Channels-last batch norm backward]
  const bool nhwc = input.dim() == 4 && input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  if (nhwc) {
    const MemoryFormat cl = MemoryFormat::ChannelsLast;
    const Tensor x = input.to(t).contiguous(cl), g = grad_output.to(t).contiguous(cl);
    const Tensor w = opmath_copy(weight, t);
    const Tensor rm = training ? Tensor() : opmath_copy(running_mean, t);
    const Tensor rv = training ? Tensor() : opmath_copy(running_var, t);
    Tensor dx = empty_tensor(x.sizes(), x.strides(), t, x.device());
    Tensor dw = empty_tensor({m.channels}, t, x.device()),
           db = empty_tensor({m.channels}, t, x.device());
    visit_opmath(t, [&](auto tag) {
      using T = typename decltype(tag)::type;
      batch_norm_backward_nhwc<T>(x.numel() / std::max<int64_t>(m.channels, 1), m.channels,
                                  ptr_or_null<T>(x), ptr_or_null<T>(g), ptr_or_null<T>(w),
                                  ptr_or_null<T>(rm), ptr_or_null<T>(rv), training, eps,
                                  static_cast<T*>(dx.data_ptr()), static_cast<T*>(dw.data_ptr()),
                                  static_cast<T*>(db.data_ptr()));
    });
    return norm_backward_results(input, weight, dx, dw, db);
  }
  const Tensor x = input.to(t).contiguous(), g = grad_output.to(t).contiguous();
  const Tensor w = opmath_copy(weight, t);
  const Tensor rm = training ? Tensor() : opmath_copy(running_mean, t);
  const Tensor rv = training ? Tensor() : opmath_copy(running_var, t);
  Tensor dx = empty_tensor(x.sizes(), t, x.device());
  Tensor dw = empty_tensor({m.channels}, t, x.device()),
         db = empty_tensor({m.channels}, t, x.device());
  visit_opmath(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    batch_norm_backward_loop<T>(m, ptr_or_null<T>(x), ptr_or_null<T>(g), ptr_or_null<T>(w),
                                ptr_or_null<T>(rm), ptr_or_null<T>(rv), training, eps,
                                static_cast<T*>(dx.data_ptr()), static_cast<T*>(dw.data_ptr()),
                                static_cast<T*>(db.data_ptr()));
  });
  return norm_backward_results(input, weight, dx, dw, db);
}

// Calls f(TypeTag<T>, TypeTag<M>) for a floating input dtype and the type its statistics use.
template <class F>
void visit_norm_dtype(const char* op, ScalarType t, F&& f) {
  visit_dtype<dtypes::kFloating>(op, t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    f(tag, TypeTag<opmath_t<T>>{});
  });
}

// n values of T as M: `p` itself when T is M, else widened into `buf` (at least n long).
template <class M, class T>
const M* as_opmath(const T* p, int64_t n, std::vector<M>& buf) {
  if constexpr (std::is_same_v<T, M>) {
    return p;
  } else {
    widen_n(p, buf.data(), n);
    return buf.data();
  }
}

// Note [Layer norm backward in the input's dtype]: float16 and bfloat16 rows are widened in a
// buffer of the task and dx narrowed straight into its output, instead of converting x and the
// gradient to float tensors first and dx back after (three whole passes more, and float
// temporaries twice the input's size: 0.54-0.62x libtorch at [4096, 768], bench/README.md
// "bench_sweep"). Statistics and the weight's gradients are computed in M (float).
template <class T, class M>
void layer_norm_backward_loop(int64_t rows, int64_t n, const T* x, const T* g, const M* w,
                              double eps, T* dx, M* dw, M* db) {
  constexpr bool kWiden = !std::is_same_v<T, M>;
  const M inv_n = n > 0 ? M(1) / static_cast<M>(n) : M(0);
  // Note [Layer norm weight gradients in one pass]: dw = sum over rows of g xhat and db = sum of
  // g are added while each row is in cache for dx, into one partial sum per part of
  // kRowsPerPart rows; the parts are then added in order. A second pass over x and g by blocks
  // of columns read them from memory again (0.76-0.86x libtorch at [4096, 768], 16 threads).
  // The parts do not depend on the thread count, so neither do the sums.
  constexpr int64_t kRowsPerPart = 32;
  const int64_t parts = (rows + kRowsPerPart - 1) / kRowsPerPart;
  // Not zeroed here: each part's task sets its own.
  const std::unique_ptr<M[]> part_w(new M[static_cast<size_t>(parts * n)]),
      part_b(new M[static_cast<size_t>(parts * n)]);
  parallel_for(parts, grain_for(6 * n * kRowsPerPart), [&](int64_t pb, int64_t pe) {
    EArray<M> gw(n), xhat(n);
    std::vector<M> xb(kWiden ? n : 0), gb(kWiden ? n : 0), dxb(kWiden ? n : 0);
    for (int64_t part = pb; part < pe; ++part) {
      EMap<M> sw(part_w.get() + part * n, n), sb(part_b.get() + part * n, n);
      sw.setZero();
      sb.setZero();
      for (int64_t r = part * kRowsPerPart; r < std::min(rows, (part + 1) * kRowsPerPart); ++r) {
        const auto xr = ECMap<M>(as_opmath(x + r * n, n, xb), n);
        const auto gr = ECMap<M>(as_opmath(g + r * n, n, gb), n);
        const M mu = xr.sum() * inv_n;
        const M rs = static_cast<M>(1 / std::sqrt((xr - mu).square().sum() * inv_n + eps));
        xhat = (xr - mu) * rs;
        if (w) {
          gw = gr * ECMap<M>(w, n);
        } else {
          gw = gr;
        }
        // dx = rstd (gw - mean(gw) - xhat mean(gw xhat))
        const M a = gw.sum() * inv_n, bm = (gw * xhat).sum() * inv_n;
        if constexpr (kWiden) {
          EMap<M>(dxb.data(), n) = rs * (gw - a - xhat * bm);
          narrow_n(dxb.data(), dx + r * n, n);
        } else {
          EMap<M>(dx + r * n, n) = rs * (gw - a - xhat * bm);
        }
        sw += gr * xhat;
        sb += gr;
      }
    }
  });
  // dw and db by blocks of columns, each adding the parts' slices in order: contiguous, vector
  // adds (a column at a time read the parts a row apart, in scalar adds; [4096, 768] on the VM:
  // 2.5-2.8 -> 2.4-2.55 ms on one thread, 1.54-1.62 -> 1.38-1.40 on two).
  parallel_for(n, grain_for(2 * parts), [&](int64_t b, int64_t e) {
    EMap<M> sw(dw + b, e - b), sb(db + b, e - b);
    sw.setZero();
    sb.setZero();
    for (int64_t part = 0; part < parts; ++part) {
      sw += ECMap<M>(part_w.get() + part * n + b, e - b);
      sb += ECMap<M>(part_b.get() + part * n + b, e - b);
    }
  });
}

TensorTriple layer_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        IntArrayRef normalized_shape,
                                        const std::optional<Tensor>& weight, double eps) {
  const NormMeta m = layer_norm_backward_meta(grad_output, input, normalized_shape, weight);
  // Mixed dtypes (a float32 gradient for a bfloat16 input) run in the statistics' dtype.
  const ScalarType t = grad_output.dtype() == input.dtype() ? input.dtype()
                       : input.dtype() == kDouble           ? kDouble
                                                            : kFloat;
  const Tensor x = input.to(t).contiguous(), g = grad_output.to(t).contiguous();
  Tensor dx = empty_tensor(x.sizes(), x.dtype(), x.device());
  Tensor dw, db;
  visit_norm_dtype("layer_norm_backward", x.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    const Tensor w = opmath_copy(weight, scalar_type_of_v<M>);
    dw = empty_tensor(normalized_shape, scalar_type_of_v<M>, x.device());
    db = empty_tensor(normalized_shape, scalar_type_of_v<M>, x.device());
    layer_norm_backward_loop<T, M>(m.outer, m.inner, static_cast<const T*>(x.data_ptr()),
                                   static_cast<const T*>(g.data_ptr()), ptr_or_null<M>(w), eps,
                                   static_cast<T*>(dx.data_ptr()), static_cast<M*>(dw.data_ptr()),
                                   static_cast<M*>(db.data_ptr()));
  });
  return norm_backward_results(input, weight, dx, dw, db);
}

// ---- forward ----------------------------------------------------------------------------------
// Note [Normalization forward]
// layer_norm and group_norm are one pass over rows: layer_norm's normalized slices, group_norm's
// (sample, group) blocks. A task takes a block of rows; each row is widened to M in a buffer of
// the task (float16, bfloat16), its mean and 1 / sqrt(var + eps) computed in two passes while it
// is in cache (the formulas layer_norm_backward_loop recomputes), then `apply` writes the
// normalized, scaled and shifted row, narrowed back to T. The composites (kernels/composite/
// norm.cpp) made six to eight passes and as many temporaries: 0.17-0.28x libtorch's layer_norm
// (bench/README.md, "bench_sweep").
template <class T, class M, class Apply>
void normalize_rows(const T* x, T* y, int64_t rows, int64_t n, double eps, const Apply& apply) {
  parallel_for(rows, grain_for(4 * n), [&](int64_t b, int64_t e) {
    std::vector<M> in, out;
    if constexpr (!std::is_same_v<T, M>) {
      in.resize(static_cast<size_t>(n));
      out.resize(static_cast<size_t>(n));
    }
    for (int64_t r = b; r < e; ++r) {
      const M* xr = as_opmath(x + r * n, n, in);
      M* yr;
      if constexpr (std::is_same_v<T, M>) {
        yr = y + r * n;
      } else {
        yr = out.data();
      }
      const auto xm = ECMap<M>(xr, n);
      const M mean = xm.sum() / static_cast<M>(n);
      const M var = (xm - mean).square().sum() / static_cast<M>(n);
      apply(r, xr, yr, mean, static_cast<M>(1 / std::sqrt(var + eps)));
      if constexpr (!std::is_same_v<T, M>) narrow_n(yr, y + r * n, n);
    }
  });
}

Tensor layer_norm_kernel(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         double eps) {
  const NormMeta m = layer_norm_meta(input, normalized_shape, weight, bias);
  const Tensor x = input.contiguous();
  Tensor y = empty_tensor(input.sizes(), input.dtype(), input.device());
  if (m.outer == 0) return y;
  visit_norm_dtype("layer_norm", input.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    const Tensor wt = opmath_copy(weight, scalar_type_of_v<M>),
                 bt = opmath_copy(bias, scalar_type_of_v<M>);
    const M* w = ptr_or_null<M>(wt);
    const M* bb = ptr_or_null<M>(bt);
    const int64_t n = m.inner;
    normalize_rows<T, M>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()),
                         m.outer, n, eps, [&](int64_t, const M* xr, M* yr, M mean, M rstd) {
                           const auto xh = (ECMap<M>(xr, n) - mean) * rstd;
                           if (w && bb)
                             EMap<M>(yr, n) = xh * ECMap<M>(w, n) + ECMap<M>(bb, n);
                           else if (w)
                             EMap<M>(yr, n) = xh * ECMap<M>(w, n);
                           else if (bb)
                             EMap<M>(yr, n) = xh + ECMap<M>(bb, n);
                           else
                             EMap<M>(yr, n) = xh;
                         });
  });
  return y;
}

Tensor group_norm_kernel(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias, double eps) {
  const NormMeta m = group_norm_meta(input, groups, weight, bias);
  const Tensor x = input.contiguous();
  Tensor y = empty_tensor(input.sizes(), input.dtype(), input.device());
  if (m.outer * m.channels == 0 || m.inner == 0) return y;
  const int64_t per_group = input.size(1) / groups, spatial = m.inner / per_group;
  visit_norm_dtype("group_norm", input.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    const Tensor wt = opmath_copy(weight, scalar_type_of_v<M>),
                 bt = opmath_copy(bias, scalar_type_of_v<M>);
    const M* w = ptr_or_null<M>(wt);
    const M* bb = ptr_or_null<M>(bt);
    normalize_rows<T, M>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()),
                         m.outer * groups, m.inner, eps,
                         [&](int64_t r, const M* xr, M* yr, M mean, M rstd) {
                           // channel c of the group: y = x * scale + shift, scale = rstd * w[c],
                           // shift = b[c] - mean * scale
                           for (int64_t k = 0; k < per_group; ++k) {
                             const int64_t c = (r % groups) * per_group + k;
                             const M scale = w ? rstd * w[c] : rstd;
                             const M shift = (bb ? bb[c] : M(0)) - mean * scale;
                             EMap<M>(yr + k * spatial, spatial) =
                                 ECMap<M>(xr + k * spatial, spatial) * scale + shift;
                           }
                         });
  });
  return y;
}

}  // namespace

XTEN_CPU_KERNELS(norm, m) {
  m.impl("layer_norm", layer_norm_kernel);
  m.impl("group_norm", group_norm_kernel);
  m.impl("batch_norm_backward", batch_norm_backward_kernel);
  m.impl("layer_norm_backward", layer_norm_backward_kernel);
}

}  // namespace xten::cpu
