// Pooling on CPU over the last two dims of a 3-D or 4-D input: max_pool2d (with indices),
// avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d; and upsample_bilinear2d, which reads
// windows of two by two. Indices are flat positions in the input's H x W plane, as PyTorch's.
// Every (image, channel) plane is independent: planes are split across threads.
#include <cmath>
#include <limits>
#include <vector>

#include <xten/kernels/cpu/capability.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/window.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

template <class F>
void for_each_plane(int64_t planes, int64_t work, const F& f) {
  parallel_for(planes, grain_for(work), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& input, IntArrayRef kernel,
                                                          IntArrayRef stride, IntArrayRef padding,
                                                          IntArrayRef dilation, bool ceil_mode) {
  const PoolMeta m = max_pool2d_meta(input, kernel, stride, padding, dilation, ceil_mode);
  const Planes& p = m.p;
  const Window& w = m.w;
  const Tensor &in = m.in, &out = m.out, &idx = m.indices;
  visit_dtype<dtypes::kFloating>("max_pool2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    int64_t* ind = static_cast<int64_t*>(idx.data_ptr());
    // Locals: the stores through dst and ind could otherwise alias the geometry's fields.
    const int64_t h = p.h, wd = p.w, ho = w.ho, wo = w.wo, kh = w.kh, kw = w.kw;
    const int64_t sh = w.sh, sw = w.sw, ph = w.ph, pw = w.pw, dh = w.dh, dw = w.dw;
    for_each_plane(p.planes, ho * wo * kh * kw, [&](int64_t pl) {
      const T* x = src + pl * h * wd;
      std::vector<M> best(wo);
      for (int64_t oy = 0; oy < ho; ++oy) {
        // A row of outputs at once, window offset by window offset (in the order a single
        // output visits them): the inner loop over the row is branch-free selects, which
        // random data cannot mispredict.
        int64_t* at = ind + (pl * ho + oy) * wo;
        std::fill(best.begin(), best.end(), -std::numeric_limits<M>::infinity());
        std::fill(at, at + wo, int64_t(-1));
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t iy = oy * sh - ph + i * dh;
          if (iy < 0 || iy >= h) continue;
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t c = j * dw - pw;  // ix = ox * sw + c, valid in [0, wd)
            const int64_t lo = c >= 0 ? 0 : (-c + sw - 1) / sw;
            const int64_t hi = wd - 1 - c < 0 ? 0 : std::min(wo, (wd - 1 - c) / sw + 1);
            const int64_t base = iy * wd + c;
            for (int64_t ox = lo; ox < hi; ++ox) {
              const M v = static_cast<M>(x[base + ox * sw]), b = best[ox];
              // The first element, a larger one or a NaN is taken, until a NaN is held (NaN
              // wins, as in PyTorch). Bitwise | and & keep the compiler from branching.
              const bool take = (at[ox] < 0) | (((v > b) | (v != v)) & (b == b));
              best[ox] = branchless_select(take, v, b);
              at[ox] = branchless_select(take, base + ox * sw, at[ox]);
            }
          }
        }
        T* out_row = dst + (pl * ho + oy) * wo;
        for (int64_t ox = 0; ox < wo; ++ox) out_row[ox] = cast_value<T>(best[ox]);
      }
    });
  });
  return {out, idx};
}

Tensor avg_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  const PoolMeta m = avg_pool2d_meta(input, kernel, stride, padding, ceil_mode, divisor_override);
  const Planes& p = m.p;
  const Window& w = m.w;
  const Tensor &in = m.in, &out = m.out;
  visit_dtype<dtypes::kFloating>("avg_pool2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    for_each_plane(p.planes, w.ho * w.wo * w.kh * w.kw, [&](int64_t pl) {
      const T* x = src + pl * p.h * p.w;
      for (int64_t oy = 0; oy < w.ho; ++oy)
        for (int64_t ox = 0; ox < w.wo; ++ox) {
          // The window, clipped to the padded input (for the divisor) and to the input (for the
          // sum).
          int64_t y0 = oy * w.sh - w.ph, x0 = ox * w.sw - w.pw;
          int64_t y1 = std::min(y0 + w.kh, p.h + w.ph), x1 = std::min(x0 + w.kw, p.w + w.pw);
          const int64_t padded_count = (y1 - y0) * (x1 - x0);
          y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
          y1 = std::min(y1, p.h), x1 = std::min(x1, p.w);
          M sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += static_cast<M>(x[iy * p.w + ix]);
          const int64_t divisor = divisor_override    ? *divisor_override
                                  : count_include_pad ? padded_count
                                                      : (y1 - y0) * (x1 - x0);
          dst[(pl * w.ho + oy) * w.wo + ox] = cast_value<T>(sum / static_cast<M>(divisor));
        }
    });
  });
  return out;
}

// Calls cell(plane, o, y0, y1, x0, x1) for every output cell o (flat over all planes) with
// its input window [y0, y1) x [x0, x1); planes are split across threads.
template <class F>
void for_each_adaptive_cell(const Planes& p, int64_t ho, int64_t wo, const F& cell) {
  for_each_plane(p.planes, p.h * p.w, [&](int64_t pl) {
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox)
        cell(pl, (pl * ho + oy) * wo + ox, adaptive_start(oy, p.h, ho), adaptive_end(oy, p.h, ho),
             adaptive_start(ox, p.w, wo), adaptive_end(ox, p.w, wo));
  });
}

Tensor adaptive_avg_pool2d_kernel(const Tensor& input, IntArrayRef output_size) {
  const PoolMeta m = adaptive_pool2d_meta("adaptive_avg_pool2d", input, output_size, false);
  const Planes& p = m.p;
  const int64_t ho = m.w.ho, wo = m.w.wo;
  const Tensor &in = m.in, &out = m.out;
  visit_dtype<dtypes::kFloating>("adaptive_avg_pool2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    for_each_adaptive_cell(
        p, ho, wo, [&](int64_t pl, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
          const T* x = src + pl * p.h * p.w;
          M sum = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += static_cast<M>(x[iy * p.w + ix]);
          dst[o] = cast_value<T>(sum / static_cast<M>((y1 - y0) * (x1 - x0)));
        });
  });
  return out;
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_kernel(const Tensor& input,
                                                      IntArrayRef output_size) {
  const PoolMeta m = adaptive_pool2d_meta("adaptive_max_pool2d", input, output_size, true);
  const Planes& p = m.p;
  const int64_t ho = m.w.ho, wo = m.w.wo;
  const Tensor &in = m.in, &out = m.out, &idx = m.indices;
  visit_dtype<dtypes::kFloating>("adaptive_max_pool2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    int64_t* ind = static_cast<int64_t*>(idx.data_ptr());
    for_each_adaptive_cell(
        p, ho, wo, [&](int64_t pl, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
          const T* x = src + pl * p.h * p.w;
          M best = static_cast<M>(x[y0 * p.w + x0]);
          int64_t at = y0 * p.w + x0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              const M v = static_cast<M>(x[iy * p.w + ix]);
              if ((v > best || v != v) && best == best) {  // NaN wins, as in PyTorch
                best = v;
                at = iy * p.w + ix;
              }
            }
          dst[o] = cast_value<T>(best);
          ind[o] = at;
        });
  });
  return {out, idx};
}

Tensor upsample_bilinear2d_kernel(const Tensor& input, IntArrayRef output_size,
                                  bool align_corners) {
  const PoolMeta m = upsample_bilinear2d_meta(input, output_size);
  const Planes& p = m.p;
  const int64_t ho = m.w.ho, wo = m.w.wo;
  visit_dtype<dtypes::kFloating>("upsample_bilinear2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    std::vector<LinearTap<M>> rows(ho), cols(wo);
    for (int64_t o = 0; o < ho; ++o) rows[o] = linear_tap<M>(o, p.h, ho, align_corners);
    for (int64_t o = 0; o < wo; ++o) cols[o] = linear_tap<M>(o, p.w, wo, align_corners);
    const T* src = static_cast<const T*>(m.in.data_ptr());
    T* dst = static_cast<T*>(m.out.data_ptr());
    for_each_plane(p.planes, 4 * ho * wo, [&](int64_t pl) {
      const T* x = src + pl * p.h * p.w;
      T* y = dst + pl * ho * wo;
      for (int64_t oy = 0; oy < ho; ++oy) {
        const LinearTap<M>& r = rows[oy];
        const T *top = x + r.i0 * p.w, *bottom = x + r.i1 * p.w;
        for (int64_t ox = 0; ox < wo; ++ox) {
          const LinearTap<M>& c = cols[ox];
          const M t = (M(1) - c.l) * static_cast<M>(top[c.i0]) + c.l * static_cast<M>(top[c.i1]);
          const M b =
              (M(1) - c.l) * static_cast<M>(bottom[c.i0]) + c.l * static_cast<M>(bottom[c.i1]);
          y[oy * wo + ox] = cast_value<T>((M(1) - r.l) * t + r.l * b);
        }
      }
    });
  });
  return m.out;
}

}  // namespace

XTEN_CPU_KERNELS(pool, m) {
  m.impl("upsample_bilinear2d", upsample_bilinear2d_kernel);
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices_kernel);
  m.impl("avg_pool2d", avg_pool2d_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d_kernel);
}

}  // namespace xten::cpu
