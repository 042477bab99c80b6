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

// One task per channel over its n runs of `in` values. float16 and bfloat16 runs are widened
// once into buffers of the task (the channel's plane, in cache for the passes) and dx narrowed
// into its output (Note [Layer norm backward in the input's dtype] says why).
template <class T, class M>
void batch_norm_backward_loop(const NormMeta& m, const T* x, const T* g, const M* w, const M* rm,
                              const M* rv, bool training, double eps, T* dx, M* dw, M* db) {
  constexpr bool kWiden = !std::is_same_v<T, M>;
  const int64_t n = m.outer, ch = m.channels, in = m.inner;
  const double count = static_cast<double>(n * in);
  parallel_for(ch, grain_for(4 * n * in), [&](int64_t b, int64_t e) {
    std::vector<M> bx(kWiden ? static_cast<size_t>(n * in) : 0), bg(bx.size()), bd(bx.size());
    for (int64_t c = b; c < e; ++c) {
      auto at = [&](int64_t i) { return (i * ch + c) * in; };
      // Run i of x, g and dx: in place for M inputs, else the buffers'.
      const M *xs = nullptr, *gs = nullptr;
      int64_t stride = ch * in;
      if constexpr (kWiden) {
        for (int64_t i = 0; i < n; ++i) {
          widen_n(x + at(i), bx.data() + i * in, in);
          widen_n(g + at(i), bg.data() + i * in, in);
        }
        xs = bx.data(), gs = bg.data(), stride = in;
      } else {
        xs = x + c * in, gs = g + c * in;
      }
      auto xrun = [&](int64_t i) { return ECMap<M>(xs + i * stride, in); };
      auto grun = [&](int64_t i) { return ECMap<M>(gs + i * stride, in); };
      double mean = 0, rstd = 0;
      if (training) {
        double s = 0, v = 0;
        for (int64_t i = 0; i < n; ++i) s += xrun(i).sum();
        mean = count > 0 ? s / count : 0;
        for (int64_t i = 0; i < n; ++i) v += (xrun(i) - static_cast<M>(mean)).square().sum();
        rstd = 1 / std::sqrt((count > 0 ? v / count : 0) + eps);
      } else {
        mean = rm[c];
        rstd = 1 / std::sqrt(static_cast<double>(rv[c]) + eps);
      }
      double sg = 0, sgx = 0;
      for (int64_t i = 0; i < n; ++i) {
        sg += grun(i).sum();
        sgx += (grun(i) * (xrun(i) - static_cast<M>(mean))).sum();
      }
      dw[c] = static_cast<M>(sgx * rstd);
      db[c] = static_cast<M>(sg);
      // dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training, w rstd g in evaluation.
      const M k = static_cast<M>((w ? w[c] : 1) * rstd), r = static_cast<M>(rstd);
      const M mg = training && count > 0 ? static_cast<M>(sg / count) : M(0);
      const M mgx = training && count > 0 ? static_cast<M>(sgx * rstd / count) : M(0);
      for (int64_t i = 0; i < n; ++i) {
        const auto d = k * (grun(i) - mg - (xrun(i) - static_cast<M>(mean)) * r * mgx);
        if constexpr (kWiden) {
          EMap<M>(bd.data(), in) = d;
          narrow_n(bd.data(), dx + at(i), in);
        } else {
          EMap<M>(dx + at(i), in) = d;
        }
      }
    }
  });
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

// Per-column sums of a [rows, ch] matrix (an NHWC batch, or [N, C]), K sums per column:
// add_row(r, s) adds row r's terms to s[k * ch + c], s of type M. Rows are summed in parts of
// kRowsPerPart (a task each, in M: vectorized across columns, 16 floats a step at the avx512
// level), the parts then added in order in double, so the sums do not depend on the thread
// count.
template <int K, class M, class AddRow>
std::vector<double> column_sums(int64_t rows, int64_t ch, const AddRow& add_row) {
  constexpr int64_t kRowsPerPart = 256;
  const int64_t parts = std::max<int64_t>(1, (rows + kRowsPerPart - 1) / kRowsPerPart);
  const int64_t width = K * ch;
  std::vector<double> part(static_cast<size_t>(parts * width));
  parallel_for(parts, 1, [&](int64_t b, int64_t e) {
    std::vector<M> acc(static_cast<size_t>(width));
    for (int64_t q = b; q < e; ++q) {
      std::fill(acc.begin(), acc.end(), M(0));
      for (int64_t r = q * kRowsPerPart; r < std::min(rows, (q + 1) * kRowsPerPart); ++r)
        add_row(r, acc.data());
      std::copy(acc.begin(), acc.end(), part.begin() + q * width);
    }
  });
  for (int64_t q = 1; q < parts; ++q)
    for (int64_t i = 0; i < width; ++i)
      part[static_cast<size_t>(i)] += part[static_cast<size_t>(q * width + i)];
  part.resize(static_cast<size_t>(width));
  return part;
}

// Note [Batch norm statistics]: batch_norm's mean and biased variance per channel in one pass
// over the input (norms::batch_norm_stats; the composite took three: a mean, then a variance
// that computes its own mean). Each channel's values are summed less a shift, the channel's
// first value, as sums of x - shift and of (x - shift)^2: var = E[(x - s)^2] - E[x - s]^2 loses
// little to cancellation when s is near the mean. NCHW: one task per channel, each contiguous
// run of the plane summed in M (vectorized) and the runs added in double. Channels-last (and
// [N, C]): column sums (column_sums: in M per part of rows, the parts in double). 16-bit inputs
// are widened as they are read. An empty input gives NaN statistics (0 / 0), as the composite.
// The mean's offset from the shift, mean(d), and the biased variance mean(d^2) - mean(d)^2, from
// the sums of d = x - shift and of d^2 over count values. Cancellation can leave the variance
// slightly below 0: 0 then; NaN stays NaN (no values, or a NaN among them).
template <class S>
std::pair<S, S> shifted_moments(S sum, S sum_sq, S count) {
  const S m = sum / count, v = sum_sq / count - m * m;
  return {m, v < 0 ? S(0) : v};
}

// How batch_norm's statistics and affine map walk an input: NCHW planes of `inner` values, or
// (channels-last, and [N, C]) rows of C values (`columns`); x is the input contiguous for that
// walk.
struct BatchNormWalk {
  Tensor x;
  int64_t channels, inner;
  bool columns;
};
BatchNormWalk batch_norm_walk(const Tensor& input) {
  const int64_t ch = input.size(1);
  const int64_t in = input.numel() / std::max<int64_t>(1, input.size(0) * ch);
  const bool columns =
      in == 1 || (input.dim() == 4 && input.suggest_memory_format() == MemoryFormat::ChannelsLast);
  return {columns && in != 1 ? input.contiguous(MemoryFormat::ChannelsLast) : input.contiguous(),
          ch, in, columns};
}

template <class T, class M>
void batch_norm_stats_planes(int64_t n, int64_t ch, int64_t in, const T* x, M* mean, M* var) {
  const double count = static_cast<double>(n * in);
  parallel_for(ch, grain_for(2 * n * in), [&](int64_t b, int64_t e) {
    std::vector<M> buf(std::is_same_v<T, M> ? 0 : static_cast<size_t>(in));
    for (int64_t c = b; c < e; ++c) {
      const M shift = n > 0 && in > 0 ? static_cast<M>(x[c * in]) : M(0);
      double s = 0, q = 0;
      for (int64_t i = 0; i < n; ++i) {
        const auto d = ECMap<M>(as_opmath(x + (i * ch + c) * in, in, buf), in) - shift;
        s += static_cast<double>(d.sum());
        q += static_cast<double>(d.square().sum());
      }
      const auto [m, v] = shifted_moments(s, q, count);
      mean[c] = static_cast<M>(m + static_cast<double>(shift));
      var[c] = static_cast<M>(v);
    }
  });
}

// The column sums of d = x - shift and of d^2 over a [rows, ch] matrix, shift[c] the column's
// first value (0 with no rows): s[c] and s[ch + c].
template <class T, class M>
std::vector<double> shifted_column_sums(int64_t rows, int64_t ch, const T* x,
                                        std::vector<M>& shift) {
  shift.assign(static_cast<size_t>(ch), M(0));
  for (int64_t c = 0; c < ch && rows > 0; ++c) shift[c] = static_cast<M>(x[c]);
  const M* sh = shift.data();
  return column_sums<2, M>(rows, ch, [&](int64_t r, M* __restrict a) {
    const T* xr = x + r * ch;
    for (int64_t c = 0; c < ch; ++c) {
      const M d = static_cast<M>(xr[c]) - sh[c];
      a[c] += d;
      a[ch + c] += d * d;
    }
  });
}

template <class T, class M>
void batch_norm_stats_columns(int64_t rows, int64_t ch, const T* x, M* mean, M* var) {
  const double count = static_cast<double>(rows);
  std::vector<M> shift;
  const std::vector<double> s = shifted_column_sums<T, M>(rows, ch, x, shift);
  for (int64_t c = 0; c < ch; ++c) {
    const auto [m, v] = shifted_moments(s[c], s[ch + c], count);
    mean[c] = static_cast<M>(m + static_cast<double>(shift[c]));
    var[c] = static_cast<M>(v);
  }
}

TensorPair batch_norm_stats_kernel(const Tensor& input) {
  constexpr const char* op = "batch_norm_stats";
  const BatchNormWalk walk = batch_norm_walk(input);
  const Tensor& x = walk.x;
  const int64_t ch = walk.channels;
  const ScalarType mt = input.dtype() == kDouble ? kDouble : kFloat;
  Tensor mean = empty_tensor({ch}, mt, input.device()),
         var = empty_tensor({ch}, mt, input.device());
  visit_norm_dtype(op, input.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    const T* px = static_cast<const T*>(x.data_ptr());
    M *pm = static_cast<M*>(mean.data_ptr()), *pv = static_cast<M*>(var.data_ptr());
    if (walk.columns) {
      batch_norm_stats_columns<T, M>(x.numel() / std::max<int64_t>(ch, 1), ch, px, pm, pv);
    } else {
      batch_norm_stats_planes<T, M>(input.size(0), ch, walk.inner, px, pm, pv);
    }
  });
  return {mean, var};
}

// Note [Channels-last batch norm backward]: an NHWC batch is a [rows = N*H*W, C] matrix, so
// the per-channel sums are column sums, all four in one pass over x and g (column_sums): of
// x - s and (x - s)^2 for the statistics (s a shift, as in Note [Batch norm statistics]), of g,
// and of g (x - s), from which sum(g (x - mean)) = sum(g (x - s)) - (mean - s) sum(g). Then dx
// is one pass over the rows. The plane loop above would need a reorder of the input and of the
// gradient in and of the result out, and its NCHW result made the relu backward after it walk
// two layouts. (Written with ops instead, a ResNet-18 step spent 1.7x the time of its NCHW
// twin; with one pass per sum, 1.8x the plane loop's time.)
template <class T, class M>
void batch_norm_backward_nhwc(int64_t rows, int64_t ch, const T* x, const T* g, const M* w,
                              const M* rm, const M* rv, bool training, double eps, T* dx, M* dw,
                              M* db) {
  const double count = static_cast<double>(rows);
  // The shift: the column's first value in training, the running mean in evaluation.
  std::vector<M> shift(static_cast<size_t>(ch));
  for (int64_t c = 0; c < ch; ++c)
    shift[c] = training ? (rows > 0 ? static_cast<M>(x[c]) : M(0)) : rm[c];
  const M* sh = shift.data();
  const std::vector<double> s = column_sums<4, M>(rows, ch, [&](int64_t r, M* __restrict a) {
    const T *xr = x + r * ch, *gr = g + r * ch;
    for (int64_t c = 0; c < ch; ++c) {
      const M d = static_cast<M>(xr[c]) - sh[c], gv = static_cast<M>(gr[c]);
      a[c] += d;
      a[ch + c] += d * d;
      a[2 * ch + c] += gv;
      a[3 * ch + c] += gv * d;
    }
  });
  // dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training, w rstd g in evaluation.
  std::vector<M> k(static_cast<size_t>(ch)), mu(k.size()), rmg(k.size()), mg(k.size());
  for (int64_t c = 0; c < ch; ++c) {
    double mean = static_cast<double>(shift[c]), rstd = 0, sg = s[2 * ch + c], sgx = s[3 * ch + c];
    if (training) {
      const auto [m, v] =
          count > 0 ? shifted_moments(s[c], s[ch + c], count) : std::pair<double, double>(0, 0);
      mean += m;
      rstd = 1 / std::sqrt(v + eps);
      sgx -= m * sg;  // sum g (x - mean)
    } else {
      rstd = 1 / std::sqrt(static_cast<double>(rv[c]) + eps);
    }
    dw[c] = static_cast<M>(sgx * rstd);
    db[c] = static_cast<M>(sg);
    k[c] = static_cast<M>((w ? w[c] : 1) * rstd);
    mu[c] = static_cast<M>(mean);
    mg[c] = training && count > 0 ? static_cast<M>(sg / count) : M(0);
    // rstd * mean(g xhat) = rstd^2 * sum(g (x - mean)) / count
    rmg[c] = training && count > 0 ? static_cast<M>(sgx * rstd * rstd / count) : M(0);
  }
  parallel_for(rows, grain_for(4 * ch), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T *xr = x + r * ch, *gr = g + r * ch;
      T* out = dx + r * ch;
      for (int64_t c = 0; c < ch; ++c)
        out[c] = static_cast<T>(
            k[c] * (static_cast<M>(gr[c]) - mg[c] - (static_cast<M>(xr[c]) - mu[c]) * rmg[c]));
    }
  });
}

TensorTriple batch_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& running_mean,
                                        const std::optional<Tensor>& running_var, bool training,
                                        double eps) {
  constexpr const char* op = "batch_norm_backward";
  const NormMeta m =
      batch_norm_backward_meta(grad_output, input, weight, running_mean, running_var, training);
  const ScalarType mt = input.dtype() == kDouble ? kDouble : kFloat;
  // Note [Channels-last batch norm backward]
  const bool nhwc = input.dim() == 4 && input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  const MemoryFormat fmt = nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  const Tensor x = input.contiguous(fmt), g = grad_output.to(input.dtype()).contiguous(fmt);
  const Tensor w = opmath_copy(weight, mt);
  const Tensor rm = training ? Tensor() : opmath_copy(running_mean, mt);
  const Tensor rv = training ? Tensor() : opmath_copy(running_var, mt);
  Tensor dx = empty_tensor(x.sizes(), x.strides(), x.dtype(), x.device());
  Tensor dw = empty_tensor({m.channels}, mt, x.device()),
         db = empty_tensor({m.channels}, mt, x.device());
  visit_norm_dtype(op, x.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    const T *px = static_cast<const T*>(x.data_ptr()), *pg = static_cast<const T*>(g.data_ptr());
    T* pdx = static_cast<T*>(dx.data_ptr());
    M *pdw = static_cast<M*>(dw.data_ptr()), *pdb = static_cast<M*>(db.data_ptr());
    if (nhwc) {
      batch_norm_backward_nhwc<T, M>(x.numel() / std::max<int64_t>(m.channels, 1), m.channels, px,
                                     pg, ptr_or_null<M>(w), ptr_or_null<M>(rm), ptr_or_null<M>(rv),
                                     training, eps, pdx, pdw, pdb);
    } else {
      batch_norm_backward_loop<T, M>(m, px, pg, ptr_or_null<M>(w), ptr_or_null<M>(rm),
                                     ptr_or_null<M>(rv), training, eps, pdx, pdw, pdb);
    }
  });
  return norm_backward_results(input, weight, dx, dw, db);
}

// batch_norm's CPU kernel: the statistics and the per-channel scale and shift as the composite
// computes them (batch_norm_scale_shift, kernels/common/op_checks.h), then y = x * scale + shift
// in one pass in the input's dtype and layout, 16-bit values widened and the result rounded once
// (the composite converts to float and back: two passes more). Graph capture records the
// composite instead (compile/capture.cpp).
Tensor batch_norm_kernel(const Tensor& input, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean,
                         const std::optional<Tensor>& running_var, bool training, double momentum,
                         double eps) {
  constexpr const char* op = "batch_norm";
  const auto [scale, shift] = batch_norm_scale_shift(input, weight, bias, running_mean, running_var,
                                                     training, momentum, eps);
  const BatchNormWalk walk = batch_norm_walk(input);
  const Tensor& x = walk.x;
  const int64_t ch = walk.channels, in = walk.inner, n = input.size(0);
  Tensor y = empty_tensor(x.sizes(), x.strides(), x.dtype(), x.device());
  const Tensor sc = scale.contiguous(), sh = shift.contiguous();
  visit_norm_dtype(op, x.dtype(), [&](auto tag, auto mtag) {
    using T = typename decltype(tag)::type;
    using M = typename decltype(mtag)::type;
    constexpr bool kWiden = !std::is_same_v<T, M>;
    const T* px = static_cast<const T*>(x.data_ptr());
    T* py = static_cast<T*>(y.data_ptr());
    const M *ps = static_cast<const M*>(sc.data_ptr()), *pt = static_cast<const M*>(sh.data_ptr());
    if (walk.columns) {
      parallel_for(x.numel() / std::max<int64_t>(ch, 1), grain_for(2 * ch),
                   [&](int64_t b, int64_t e) {
                     for (int64_t r = b; r < e; ++r) {
                       const T* xr = px + r * ch;
                       T* yr = py + r * ch;
                       for (int64_t c = 0; c < ch; ++c)
                         yr[c] = static_cast<T>(static_cast<M>(xr[c]) * ps[c] + pt[c]);
                     }
                   });
      return;
    }
    parallel_for(n * ch, grain_for(2 * in), [&](int64_t b, int64_t e) {
      std::vector<M> buf(kWiden ? static_cast<size_t>(in) : 0);
      for (int64_t p = b; p < e; ++p) {
        const int64_t c = p % ch;
        const auto v = ECMap<M>(as_opmath(px + p * in, in, buf), in) * ps[c] + pt[c];
        if constexpr (kWiden) {
          EMap<M>(buf.data(), in) = v;
          narrow_n(buf.data(), py + p * in, in);
        } else {
          EMap<M>(py + p * in, in) = v;
        }
      }
    });
  });
  return y;
}

// Note [Layer norm backward rows]: one row of layer_norm's backward in three passes over the
// row (in L1): the sums of x - x0 and (x - x0)^2 (x0 the row's first value; mean and variance as
// in Note [Batch norm statistics]); then, with xhat = (x - mean) rstd and gw = g w, the sums of gw
// and gw xhat, and the part's weight-gradient sums sw += g xhat and sb += g; then
// dx = rstd (gw - mean(gw) - xhat mean(gw xhat)), xhat and gw recomputed. Eigen's expressions
// took one pass per reduction and per temporary (nine): [4096, 768] float32 on one VM thread
// 2.72 -> 2.0 ms (an add of two such tensors, the same traffic: 1.4).
template <class M>
void layer_norm_backward_row(int64_t n, const M* x, const M* g, const M* w, M inv_n, double eps,
                             M* dx, M* sw, M* sb) {
  using namespace Eigen::internal;
  using P = typename packet_traits<M>::type;
  constexpr int64_t L = packet_traits<M>::size;
  const int64_t nv = n / L * L;
  const M x0 = n > 0 ? x[0] : M(0);
  P a1 = pset1<P>(M(0)), a2 = a1;
  const P shift = pset1<P>(x0);
  for (int64_t j = 0; j < nv; j += L) {
    const P d = psub(ploadu<P>(x + j), shift);
    a1 = padd(a1, d);
    a2 = padd(a2, pmul(d, d));
  }
  M s1 = predux(a1), s2 = predux(a2);
  for (int64_t j = nv; j < n; ++j) {
    const M d = x[j] - x0;
    s1 += d;
    s2 += d * d;
  }
  const auto [m1, var] = shifted_moments(s1, s2, static_cast<M>(n));
  const M mu = x0 + m1;
  const M rs = static_cast<M>(1 / std::sqrt(var + eps));
  const P pmu = pset1<P>(mu), prs = pset1<P>(rs);
  P ga = pset1<P>(M(0)), gb = ga;
  for (int64_t j = 0; j < nv; j += L) {
    const P xh = pmul(psub(ploadu<P>(x + j), pmu), prs);
    const P gv = ploadu<P>(g + j);
    const P gw = w ? pmul(gv, ploadu<P>(w + j)) : gv;
    ga = padd(ga, gw);
    gb = padd(gb, pmul(gw, xh));
    pstoreu(sw + j, padd(ploadu<P>(sw + j), pmul(gv, xh)));
    pstoreu(sb + j, padd(ploadu<P>(sb + j), gv));
  }
  M sa = predux(ga), sbm = predux(gb);
  for (int64_t j = nv; j < n; ++j) {
    const M xh = (x[j] - mu) * rs;
    const M gw = w ? g[j] * w[j] : g[j];
    sa += gw;
    sbm += gw * xh;
    sw[j] += g[j] * xh;
    sb[j] += g[j];
  }
  const M a = sa * inv_n, bm = sbm * inv_n;
  const P pa = pset1<P>(a), pbm = pset1<P>(bm);
  for (int64_t j = 0; j < nv; j += L) {
    const P xh = pmul(psub(ploadu<P>(x + j), pmu), prs);
    const P gv = ploadu<P>(g + j);
    const P gw = w ? pmul(gv, ploadu<P>(w + j)) : gv;
    pstoreu(dx + j, pmul(prs, psub(psub(gw, pa), pmul(xh, pbm))));
  }
  for (int64_t j = nv; j < n; ++j) {
    const M xh = (x[j] - mu) * rs;
    const M gw = w ? g[j] * w[j] : g[j];
    dx[j] = rs * ((gw - a) - xh * bm);
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
    std::vector<M> xb(kWiden ? n : 0), gb(kWiden ? n : 0), dxb(kWiden ? n : 0);
    for (int64_t part = pb; part < pe; ++part) {
      M* sw = part_w.get() + part * n;
      M* sb = part_b.get() + part * n;
      std::fill(sw, sw + n, M(0));
      std::fill(sb, sb + n, M(0));
      for (int64_t r = part * kRowsPerPart; r < std::min(rows, (part + 1) * kRowsPerPart); ++r) {
        const M* xr = as_opmath(x + r * n, n, xb);
        const M* gr = as_opmath(g + r * n, n, gb);
        M* out = kWiden ? dxb.data() : reinterpret_cast<M*>(dx + r * n);
        layer_norm_backward_row(n, xr, gr, w, inv_n, eps, out, sw, sb);
        if constexpr (kWiden) narrow_n(dxb.data(), dx + r * n, n);
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

// Note [Channels-last group norm]: an NHWC sample is a [H*W, C] matrix, so its per-channel sums
// of x - s and (x - s)^2 are column sums (column_sums; s the channel's first value, as in Note
// [Batch norm statistics]), combined in double per group of channels: with d_c = s_c - mean,
// sum over the group of (x - mean)^2 = sum_c [q_c + 2 d_c p_c + HW d_c^2] (p_c, q_c the column
// sums). Then y = x * scale[c] + shift[c] is one pass over the sample's rows while they are
// still in cache. No reorder of the input or the result; the plane kernel's sums run in another
// order, so the two agree to rounding. [8, 64, 56, 56], 32 groups, two VM threads: 1.29 ms with
// reorders -> 0.46 with the sums and the map as two passes over the batch -> 0.39 per sample;
// the plane kernel 0.25-0.29 (each (sample, group) row in cache for both of its passes).
template <class T, class M>
void group_norm_nhwc(int64_t n, int64_t ch, int64_t rows, int64_t groups, const T* x, const M* w,
                     const M* b, double eps, T* y) {
  const int64_t per_group = ch / groups;
  const double count = static_cast<double>(rows * per_group);
  std::vector<M> scale(static_cast<size_t>(ch)), shift(scale.size()), first;
  for (int64_t i = 0; i < n; ++i) {
    const T* xi = x + i * rows * ch;
    const std::vector<double> s = shifted_column_sums<T, M>(rows, ch, xi, first);
    for (int64_t g = 0; g < groups; ++g) {
      double total = 0;
      for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c)
        total += s[c] + static_cast<double>(rows) * static_cast<double>(first[c]);
      const double mean = total / count;
      double sq = 0;
      for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
        const double d = static_cast<double>(first[c]) - mean;
        sq += s[ch + c] + 2 * d * s[c] + static_cast<double>(rows) * d * d;
      }
      const double rstd = 1 / std::sqrt(std::max(sq / count, 0.0) + eps);
      for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
        const double k = w ? rstd * static_cast<double>(w[c]) : rstd;
        scale[c] = static_cast<M>(k);
        shift[c] = static_cast<M>((b ? static_cast<double>(b[c]) : 0.0) - mean * k);
      }
    }
    // The sample's rows again, soon after the sums read them (a sample of ResNet's sizes is
    // within the caches; the threads' row ranges are close to, not the same as, the sums').
    const M *k = scale.data(), *t = shift.data();
    T* yi = y + i * rows * ch;
    parallel_for(rows, grain_for(2 * ch), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = xi + r * ch;
        T* yr = yi + r * ch;
        for (int64_t c = 0; c < ch; ++c)
          yr[c] = static_cast<T>(static_cast<M>(xr[c]) * k[c] + t[c]);
      }
    });
  }
}

Tensor group_norm_kernel(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias, double eps) {
  const NormMeta m = group_norm_meta(input, groups, weight, bias);
  if (input.suggest_memory_format() == MemoryFormat::ChannelsLast) {
    // Note [Channels-last group norm]
    const Tensor x = input.contiguous(MemoryFormat::ChannelsLast);
    Tensor y = empty_tensor(x.sizes(), x.strides(), x.dtype(), x.device());
    const int64_t n = x.size(0), ch = x.size(1), rows = x.size(2) * x.size(3);
    visit_norm_dtype("group_norm", input.dtype(), [&](auto tag, auto mtag) {
      using T = typename decltype(tag)::type;
      using M = typename decltype(mtag)::type;
      const Tensor wt = opmath_copy(weight, scalar_type_of_v<M>),
                   bt = opmath_copy(bias, scalar_type_of_v<M>);
      group_norm_nhwc<T, M>(n, ch, rows, groups, static_cast<const T*>(x.data_ptr()),
                            ptr_or_null<M>(wt), ptr_or_null<M>(bt), eps,
                            static_cast<T*>(y.data_ptr()));
    });
    return y;
  }
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
  m.impl("batch_norm", batch_norm_kernel);
  m.impl("norms::batch_norm_stats", batch_norm_stats_kernel);
  m.impl("layer_norm", layer_norm_kernel);
  m.impl("group_norm", group_norm_kernel);
  m.impl("batch_norm_backward", batch_norm_backward_kernel);
  m.impl("layer_norm_backward", layer_norm_backward_kernel);
}

}  // namespace xten::cpu
