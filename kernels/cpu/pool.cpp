// Pooling on CPU over the last two dims of a 3-D or 4-D input: max_pool2d (with indices),
// avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d; and upsample_bilinear2d, which reads
// windows of two by two. Indices are flat positions in the input's H x W plane, as PyTorch's.
// Every (image, channel) plane is independent: planes are split across threads.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>
#include <xten/kernels/cpu/lane_sum.h>

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

bool is_channels_last_4d(const Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

// Note [Channels-last max pool]: an NHWC batch pools each image's [H, W] grid of C-vectors: per
// output position, the window's C-vectors are visited in PyTorch's order (rows, then columns)
// and merged lane by lane with Note [Max pool in two passes]'s rule (the first NaN, else the
// first maximum), so values and indices are those of the NCHW kernel, without the reorder of
// the input, the result and the indices that the plane kernel needs (ResNet-18's pool under
// autocast, batch 16: 58 of the step's ~500 ms on one VM thread were those copies). The
// backward adds each gradient at its index in the image's [H, W, C] buffer, outputs in order:
// the same additions in the same order as the plane kernel's.
template <class T>
void max_pool2d_nhwc(const T* x, T* y, int64_t* ind, int64_t n, int64_t c, int64_t h, int64_t wd,
                     const Window& w) {
  using M = opmath_t<T>;
  constexpr bool kWiden = !std::is_same_v<T, M>;
  const int64_t ho = w.ho, wo = w.wo, row_len = wd * c;
  parallel_for(n * ho, grain_for(wo * w.kh * w.kw * c), [&](int64_t b, int64_t e) {
    // The window's input rows (16-bit ones widened once per output row), and per channel the
    // best value so far and its position (int32: lanes as wide as the values').
    std::vector<M> rows(kWiden ? static_cast<size_t>(w.kh * row_len) : 0);
    std::vector<const M*> row_at(static_cast<size_t>(w.kh));
    std::vector<M> best(static_cast<size_t>(c));
    std::vector<int32_t> at(static_cast<size_t>(c));
    M* __restrict bp = best.data();
    int32_t* __restrict ap = at.data();
    for (int64_t row = b; row < e; ++row) {
      const int64_t img = row / ho, oy = row % ho;
      const T* xi = x + img * h * row_len;
      for (int64_t i = 0; i < w.kh; ++i) {
        const int64_t iy = oy * w.sh - w.ph + i * w.dh;
        row_at[i] = nullptr;
        if (iy < 0 || iy >= h) continue;
        if constexpr (kWiden) {
          widen_n(xi + iy * row_len, rows.data() + i * row_len, row_len);
          row_at[i] = rows.data() + i * row_len;
        } else {
          row_at[i] = xi + iy * row_len;
        }
      }
      for (int64_t ox = 0; ox < wo; ++ox) {
        bool first = true;
        for (int64_t i = 0; i < w.kh; ++i) {
          if (!row_at[i]) continue;
          const int64_t iy = oy * w.sh - w.ph + i * w.dh;
          for (int64_t j = 0; j < w.kw; ++j) {
            const int64_t ix = ox * w.sw - w.pw + j * w.dw;
            if (ix < 0 || ix >= wd) continue;
            const int32_t pos = static_cast<int32_t>(iy * wd + ix);
            const M* __restrict v = row_at[i] + ix * c;
            if (first) {
              for (int64_t ch = 0; ch < c; ++ch) bp[ch] = v[ch], ap[ch] = pos;
              first = false;
              continue;
            }
            for (int64_t ch = 0; ch < c; ++ch) {
              const M vv = v[ch], bb = bp[ch];
              const bool take = (bb == bb) & ((vv > bb) | (vv != vv));  // NaN sticks
              bp[ch] = branchless_select(take, vv, bb);
              ap[ch] = branchless_select(take, pos, ap[ch]);
            }
          }
        }
        T* yo = y + (row * wo + ox) * c;
        int64_t* io = ind + (row * wo + ox) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          if (first) {  // a window without an element (not reachable from the checks)
            io[ch] = -1;
            yo[ch] = cast_value<T>(-std::numeric_limits<M>::infinity());
            continue;
          }
          io[ch] = ap[ch];
          yo[ch] = xi[ap[ch] * c + ch];  // the element itself (its sign of zero, its NaN)
        }
      }
    }
  });
}

// Note [Channels-last average pools]: avg_pool2d and adaptive_avg_pool2d of an NHWC batch sum
// each window's C-vectors (rows, then columns, as the plane kernels order them) into one
// accumulator vector per output position, and avg_pool2d's backward adds each output's C-vector
// over its divisor into the window of the image's [H, W, C] gradient (float16 and bfloat16 in a
// float buffer, narrowed once), tasks split over images and blocks of channels. No reorder of
// the input, the result or the gradient. The plane kernels' global pooling sums lane by lane
// (another order), so results may differ from theirs in the last bits.
template <class T, class CellAt>
void avg_pool_nhwc(const T* x, T* y, int64_t n, int64_t c, int64_t h, int64_t wd, int64_t ho,
                   int64_t wo, int64_t work, const CellAt& cell_at) {
  using M = opmath_t<T>;
  parallel_for(n * ho, grain_for(wo * work * c), [&](int64_t b, int64_t e) {
    std::vector<M> acc(static_cast<size_t>(c));
    M* __restrict a = acc.data();
    for (int64_t row = b; row < e; ++row) {
      const int64_t img = row / ho, oy = row % ho;
      for (int64_t ox = 0; ox < wo; ++ox) {
        const AvgCell cl = cell_at(oy, ox);
        std::fill(a, a + c, M(0));
        for (int64_t iy = cl.y0; iy < cl.y1; ++iy)
          for (int64_t ix = cl.x0; ix < cl.x1; ++ix) {
            const T* __restrict v = x + ((img * h + iy) * wd + ix) * c;
            for (int64_t ch = 0; ch < c; ++ch) a[ch] += static_cast<M>(v[ch]);
          }
        const M d = static_cast<M>(cl.divisor);
        T* __restrict o = y + (row * wo + ox) * c;
        for (int64_t ch = 0; ch < c; ++ch) o[ch] = cast_value<T>(a[ch] / d);
      }
    }
  });
}

// The NHWC result of a pooling of `input` to [N, C, ho, wo].
Tensor nhwc_result(const char* op, const Tensor& input, int64_t ho, int64_t wo) {
  const DimVector shape{input.size(0), input.size(1), ho, wo};
  return empty_tensor(shape, strides_for_format(op, shape, MemoryFormat::ChannelsLast),
                      input.dtype(), input.device());
}

// An NHWC input pooled or resampled to output_size (adaptive pools, upsampling): the checked
// geometry, the input channels-last, and the result.
struct NhwcResize {
  Planes p;
  int64_t n = 0, c = 0, ho = 0, wo = 0;
  Tensor x, out;
};
NhwcResize nhwc_resize(const char* op, const Tensor& input, IntArrayRef output_size) {
  check_adaptive_output_size(op, output_size);
  NhwcResize r;
  r.p = planes_of(op, input);
  r.n = input.size(0), r.c = input.size(1), r.ho = output_size[0], r.wo = output_size[1];
  r.x = input.contiguous(MemoryFormat::ChannelsLast);
  r.out = nhwc_result(op, input, r.ho, r.wo);
  return r;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_kernel(const Tensor& input, IntArrayRef kernel,
                                                          IntArrayRef stride, IntArrayRef padding,
                                                          IntArrayRef dilation, bool ceil_mode) {
  // Note [Channels-last max pool] (its positions are int32: a plane of 2^31 elements or more
  // takes the plane kernel).
  if (is_channels_last_4d(input) &&
      input.size(2) * input.size(3) <= std::numeric_limits<int32_t>::max()) {
    const Planes p = planes_of("max_pool2d", input);
    const Window w = window_args("max_pool2d", p, kernel, stride, padding, dilation, ceil_mode);
    const MemoryFormat cl = MemoryFormat::ChannelsLast;
    const Tensor x = input.contiguous(cl);
    const int64_t n = input.size(0), c = input.size(1);
    const DimVector shape = p.shape(w.ho, w.wo);
    Tensor out = empty_tensor(shape, strides_for_format("max_pool2d", shape, cl), input.dtype(),
                              input.device());
    Tensor idx = empty_tensor(shape, out.strides(), kLong, input.device());
    visit_dtype<dtypes::kFloating>("max_pool2d", input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      max_pool2d_nhwc<T>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()),
                         static_cast<int64_t*>(idx.data_ptr()), n, c, p.h, p.w, w);
    });
    return {out, idx};
  }
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
    // Note [Max pool in two passes]: the result is, per window, the first NaN, else the first
    // element equal to the window's maximum, in the order of PyTorch's loop (rows, then columns
    // in a row); its value is that element's (so -0.0 and 0.0 keep the first one's sign). Per
    // output row, a vertical pass keeps for each input column the best element over the
    // window's rows and its row (contiguous, branch-free: it vectorizes); then per window
    // column j the candidates of all outputs are one contiguous run of a stride phase of those
    // columns, merged branch-free: a NaN beats a number, then the larger value, then the
    // smaller row (on ties the earlier column stays). Padding columns are -inf with row
    // kNoRow, which any element beats. A window-by-window loop tracking each candidate's index
    // took 47 ms for ResNet-18's pool (batch 8) on one thread of the 16-core host, the first
    // form of this one (a scalar search per window) 51.
    constexpr int32_t kNoRow = std::numeric_limits<int32_t>::max();
    const int64_t padded = std::max(wd + 2 * pw, (wo - 1) * sw + (kw - 1) * dw + 1);
    const int64_t phase_len = (padded + sw - 1) / sw;
    for_each_plane(p.planes, ho * wo * kh * kw, [&](int64_t pl) {
      const T* x = src + pl * h * wd;
      std::vector<M> colv(static_cast<size_t>(padded)), pv(static_cast<size_t>(sw * phase_len));
      std::vector<int32_t> colr(static_cast<size_t>(padded)), pr(pv.size());
      std::vector<M> bv(static_cast<size_t>(wo));
      std::vector<int32_t> br(static_cast<size_t>(wo)), bc(static_cast<size_t>(wo));
      for (int64_t oy = 0; oy < ho; ++oy) {
        std::fill(colv.begin(), colv.end(), -std::numeric_limits<M>::infinity());
        std::fill(colr.begin(), colr.end(), kNoRow);
        M* cv = colv.data() + pw;
        int32_t* cr = colr.data() + pw;
        bool first = true;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t iy = oy * sh - ph + i * dh;
          if (iy < 0 || iy >= h) continue;
          const T* row = x + iy * wd;
          const int32_t r = static_cast<int32_t>(iy);
          if (first) {
            for (int64_t ix = 0; ix < wd; ++ix) cv[ix] = static_cast<M>(row[ix]);
            std::fill(cr, cr + wd, r);
            first = false;
            continue;
          }
          for (int64_t ix = 0; ix < wd; ++ix) {
            const M v = static_cast<M>(row[ix]), b = cv[ix];
            const bool take = (b == b) & ((v > b) | (v != v));  // NaN sticks; ties keep the row
            cv[ix] = branchless_select(take, v, b);
            cr[ix] = branchless_select(take, r, cr[ix]);
          }
        }
        // Stride phases: phase q holds padded columns q, q + sw, q + 2 sw, ...
        for (int64_t q = 0; q < sw; ++q)
          for (int64_t k = 0; k < phase_len; ++k) {
            const int64_t c = k * sw + q;
            pv[static_cast<size_t>(q * phase_len + k)] =
                c < padded ? colv[c] : -std::numeric_limits<M>::infinity();
            pr[static_cast<size_t>(q * phase_len + k)] = c < padded ? colr[c] : kNoRow;
          }
        for (int64_t j = 0; j < kw; ++j) {
          // Output ox reads padded column ox * sw + j * dw.
          const int64_t d = j * dw, q = d % sw, base = d / sw;
          const M* v = pv.data() + q * phase_len + base;
          const int32_t* r = pr.data() + q * phase_len + base;
          const int32_t col = static_cast<int32_t>(d);
          if (j == 0) {
            for (int64_t ox = 0; ox < wo; ++ox) {
              bv[ox] = v[ox];
              br[ox] = r[ox];
              bc[ox] = static_cast<int32_t>(ox * sw) + col;
            }
            continue;
          }
          for (int64_t ox = 0; ox < wo; ++ox) {
            const M c = v[ox], b = bv[ox];
            const int32_t cr2 = r[ox], b_r = br[ox];
            const bool cn = c != c, bn = b != b;
            const bool take =
                (cn & (!bn | (cr2 < b_r))) | (!cn & !bn & ((c > b) | ((c == b) & (cr2 < b_r))));
            bv[ox] = branchless_select(take, c, b);
            br[ox] = branchless_select(take, cr2, b_r);
            bc[ox] = branchless_select(take, static_cast<int32_t>(ox * sw) + col, bc[ox]);
          }
        }
        int64_t* at = ind + (pl * ho + oy) * wo;
        T* out_row = dst + (pl * ho + oy) * wo;
        for (int64_t ox = 0; ox < wo; ++ox) {
          if (br[ox] == kNoRow) {  // a window without an element (not reachable from the checks)
            at[ox] = -1;
            out_row[ox] = cast_value<T>(-std::numeric_limits<M>::infinity());
            continue;
          }
          const int64_t flat = static_cast<int64_t>(br[ox]) * wd + (bc[ox] - pw);
          at[ox] = flat;
          out_row[ox] = x[flat];
        }
      }
    });
  });
  return {in_layout_of(out, input), in_layout_of(idx, input)};
}

Tensor avg_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override) {
  if (is_channels_last_4d(input)) {  // Note [Channels-last average pools]
    const Planes p = planes_of("avg_pool2d", input);
    const Window w = window_args("avg_pool2d", p, kernel, stride, padding, {}, ceil_mode);
    check_divisor_override(divisor_override);
    const Tensor x = input.contiguous(MemoryFormat::ChannelsLast);
    Tensor out = nhwc_result("avg_pool2d", input, w.ho, w.wo);
    visit_dtype<dtypes::kFloating>("avg_pool2d", input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      avg_pool_nhwc(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()),
                    input.size(0), input.size(1), p.h, p.w, w.ho, w.wo, w.kh * w.kw,
                    [&](int64_t oy, int64_t ox) {
                      return avg_pool_cell(p, w, oy, ox, count_include_pad, divisor_override);
                    });
    });
    return out;
  }
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
          const AvgCell c = avg_pool_cell(p, w, oy, ox, count_include_pad, divisor_override);
          M sum = 0;
          for (int64_t iy = c.y0; iy < c.y1; ++iy)
            for (int64_t ix = c.x0; ix < c.x1; ++ix) sum += static_cast<M>(x[iy * p.w + ix]);
          dst[(pl * w.ho + oy) * w.wo + ox] = cast_value<T>(sum / static_cast<M>(c.divisor));
        }
    });
  });
  return in_layout_of(out, input);
}

// Note [Pooling backward]: the input gradient of a plane is built in one buffer that the plane's
// task zeroes and adds into: max pooling adds each gradient at its index, average pooling each
// cell's gradient over its divisor to the cell's window. float32 and float64 add in the output;
// float16 and bfloat16 in a float buffer per task, narrowed once at the end (a 3x3 stride-2
// window overlaps its neighbours, so one input element may take several additions). Written as
// ops (zeros, scatter_add; a transposed convolution with a window of ones) they took 2-3x
// libtorch's time; the composites in kernels/composite/pool.cpp remain for the XPU and for a
// backward with create_graph.
template <class T, class F>
void plane_backward(const Tensor& out, int64_t planes, int64_t hw, int64_t work, const F& fill) {
  using M = opmath_t<T>;
  T* dst = static_cast<T*>(out.data_ptr());
  for_each_plane(planes, work, [&](int64_t pl) {
    T* gi = dst + pl * hw;
    if constexpr (std::is_same_v<T, M>) {
      std::fill(gi, gi + hw, T(0));
      fill(pl, gi);
    } else {
      thread_local std::vector<M> acc;
      acc.assign(static_cast<size_t>(hw), M(0));
      fill(pl, acc.data());
      narrow_n(acc.data(), gi, hw);
    }
  });
}

// The first index outside [0, h * w) in the NCHW order of the outputs (plane, then position), as
// the plane kernel names it.
[[noreturn]] void raise_bad_pool_index(const char* op, int64_t index, const Planes& p) {
  XTEN_FAIL(IndexError, op, "index {} is out of range for an input plane of {} x {} ({} elements)",
            index, p.h, p.w, p.h * p.w);
}

// Note [Channels-last max pool]: the backward.
Tensor max_pool2d_backward_nhwc(const char* op, const Tensor& grad, const Tensor& self,
                                const Tensor& indices, const PoolBackwardMeta& m) {
  const MemoryFormat cl = MemoryFormat::ChannelsLast;
  const Tensor g = grad.contiguous(cl), ind = indices.contiguous(cl);
  Tensor out = empty_tensor(self.sizes(), strides_for_format(op, self.sizes(), cl), self.dtype(),
                            self.device());
  const int64_t n = self.size(0), c = self.size(1), hw = m.p.h * m.p.w, per = m.w.ho * m.w.wo;
  const int64_t* idx = static_cast<const int64_t*>(ind.data_ptr());
  const int64_t none = n * c * per;
  std::atomic<int64_t> first_bad{none};  // in NCHW order: (image * c + channel) * per + k
  visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* go = static_cast<const T*>(g.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    parallel_for(n, grain_for(hw * c + per * c), [&](int64_t b, int64_t e) {
      std::vector<M> buf(std::is_same_v<T, M> ? 0 : static_cast<size_t>(hw * c));
      for (int64_t img = b; img < e; ++img) {
        M* gi = nullptr;
        if constexpr (std::is_same_v<T, M>) {
          gi = dst + img * hw * c;
        } else {
          gi = buf.data();
        }
        std::fill(gi, gi + hw * c, M(0));
        for (int64_t k = 0; k < per; ++k) {
          const T* gr = go + (img * per + k) * c;
          const int64_t* ir = idx + (img * per + k) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            const int64_t i = ir[ch];
            if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(hw)) {
              const int64_t at = (img * c + ch) * per + k;
              int64_t seen = first_bad.load();
              while (at < seen && !first_bad.compare_exchange_weak(seen, at)) {
              }
              continue;
            }
            gi[i * c + ch] += static_cast<M>(gr[ch]);
          }
        }
        if constexpr (!std::is_same_v<T, M>) narrow_n(gi, dst + img * hw * c, hw * c);
      }
    });
  });
  if (first_bad.load() != none) {
    const int64_t at = first_bad.load(), img = at / (c * per), ch = at / per % c, k = at % per;
    raise_bad_pool_index(op, idx[(img * per + k) * c + ch], m.p);
  }
  return out;
}

Tensor max_pool2d_with_indices_backward_kernel(const Tensor& grad, const Tensor& self,
                                               IntArrayRef kernel, IntArrayRef stride,
                                               IntArrayRef padding, IntArrayRef dilation,
                                               bool ceil_mode, const Tensor& indices) {
  constexpr const char* op = "max_pool2d_with_indices_backward";
  const PoolBackwardMeta m =
      pool2d_backward_meta(op, grad, self, kernel, stride, padding, dilation, ceil_mode, &indices);
  // Autograd passes `self` as its shape alone: the gradient's layout decides then.
  if (is_channels_last_4d(self) || is_channels_last_4d(grad))
    return max_pool2d_backward_nhwc(op, grad, self, indices, m);
  const Tensor g = grad.contiguous(), ind = indices.contiguous();
  const Tensor out = empty(self.sizes(), self.dtype(), self.device());
  const int64_t hw = m.p.h * m.p.w, per = m.w.ho * m.w.wo, total = m.p.planes * per;
  const int64_t* idx = static_cast<const int64_t*>(ind.data_ptr());
  // The first bad index in order is named, as a serial loop would (an index outside the plane
  // would write outside the output).
  std::atomic<int64_t> first_bad{total};
  visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* go = static_cast<const T*>(g.data_ptr());
    plane_backward<T>(out, m.p.planes, hw, hw + per, [&](int64_t pl, auto* gi) {
      const int64_t base = pl * per;
      for (int64_t k = 0; k < per; ++k) {
        const int64_t i = idx[base + k];
        if (static_cast<uint64_t>(i) >= static_cast<uint64_t>(hw)) {
          int64_t seen = first_bad.load();
          while (base + k < seen && !first_bad.compare_exchange_weak(seen, base + k)) {
          }
          return;
        }
        gi[i] += static_cast<std::remove_reference_t<decltype(*gi)>>(go[base + k]);
      }
    });
  });
  if (first_bad.load() != total) raise_bad_pool_index(op, idx[first_bad.load()], m.p);
  return out;
}

Tensor avg_pool2d_backward_kernel(const Tensor& grad, const Tensor& self, IntArrayRef kernel,
                                  IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  constexpr const char* op = "avg_pool2d_backward";
  const PoolBackwardMeta m =
      avg_pool2d_backward_meta(grad, self, kernel, stride, padding, ceil_mode, divisor_override);
  const Planes& p = m.p;
  const Window& w = m.w;
  // Note [Channels-last average pools]: autograd passes `self` as its shape alone, so the
  // gradient's layout decides.
  if (is_channels_last_4d(self) || is_channels_last_4d(grad)) {
    const MemoryFormat cl = MemoryFormat::ChannelsLast;
    const Tensor g = grad.contiguous(cl);
    Tensor out = empty_tensor(self.sizes(), strides_for_format(op, self.sizes(), cl), self.dtype(),
                              self.device());
    const int64_t n = self.size(0), c = self.size(1), hw = p.h * p.w, per = w.ho * w.wo;
    std::vector<AvgCell> cells(static_cast<size_t>(per));
    for (int64_t oy = 0; oy < w.ho; ++oy)
      for (int64_t ox = 0; ox < w.wo; ++ox)
        cells[oy * w.wo + ox] = avg_pool_cell(p, w, oy, ox, count_include_pad, divisor_override);
    constexpr int64_t kBlock = 64;  // channels per task
    const int64_t blocks = (c + kBlock - 1) / kBlock;
    visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      const T* go = static_cast<const T*>(g.data_ptr());
      T* dst = static_cast<T*>(out.data_ptr());
      parallel_for(n * blocks, grain_for((hw + per * w.kh * w.kw) * kBlock),
                   [&](int64_t b, int64_t e) {
                     std::vector<M> buf(static_cast<size_t>(hw * kBlock));
                     for (int64_t task = b; task < e; ++task) {
                       const int64_t img = task / blocks, c0 = task % blocks * kBlock;
                       const int64_t cb = std::min(kBlock, c - c0);
                       M* __restrict gi = buf.data();
                       std::fill(gi, gi + hw * cb, M(0));
                       for (int64_t k = 0; k < per; ++k) {
                         const AvgCell& cl = cells[static_cast<size_t>(k)];
                         if (cl.divisor == 0) continue;  // wholly in the padding: the forward's 0/0
                         const T* __restrict gr = go + (img * per + k) * c + c0;
                         const M d = static_cast<M>(cl.divisor);
                         M v[kBlock];
                         for (int64_t ch = 0; ch < cb; ++ch) v[ch] = static_cast<M>(gr[ch]) / d;
                         for (int64_t iy = cl.y0; iy < cl.y1; ++iy)
                           for (int64_t ix = cl.x0; ix < cl.x1; ++ix) {
                             M* __restrict at = gi + (iy * p.w + ix) * cb;
                             for (int64_t ch = 0; ch < cb; ++ch) at[ch] += v[ch];
                           }
                       }
                       for (int64_t q = 0; q < hw; ++q) {
                         T* __restrict o = dst + (img * hw + q) * c + c0;
                         const M* __restrict src = gi + q * cb;
                         for (int64_t ch = 0; ch < cb; ++ch) o[ch] = cast_value<T>(src[ch]);
                       }
                     }
                   });
    });
    return out;
  }
  const Tensor g = grad.contiguous();
  const Tensor out = empty(self.sizes(), self.dtype(), self.device());
  const int64_t hw = p.h * p.w, per = w.ho * w.wo;
  std::vector<AvgCell> cells(static_cast<size_t>(per));  // the same in every plane
  for (int64_t oy = 0; oy < w.ho; ++oy)
    for (int64_t ox = 0; ox < w.wo; ++ox)
      cells[oy * w.wo + ox] = avg_pool_cell(p, w, oy, ox, count_include_pad, divisor_override);
  visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* go = static_cast<const T*>(g.data_ptr());
    const int64_t width = p.w;
    if (per == 1 && cells[0].divisor != 0 && cells[0].y0 == 0 && cells[0].x0 == 0 &&
        cells[0].y1 == p.h && cells[0].x1 == p.w) {
      // One window over the whole plane (adaptive_avg_pool2d to 1 x 1, ResNet's head): each
      // plane is its gradient over the divisor, written once (the accumulation below zeroes the
      // plane first and adds element by element: 0.47 -> 0.047 ms for [32, 512, 7, 7] on one VM
      // thread).
      T* dst = static_cast<T*>(out.data_ptr());
      const M d = static_cast<M>(cells[0].divisor);
      for_each_plane(p.planes, hw, [&](int64_t pl) {
        std::fill_n(dst + pl * hw, hw, cast_value<T>(static_cast<M>(go[pl]) / d));
      });
      return;
    }
    plane_backward<T>(out, p.planes, hw, hw + per * w.kh * w.kw, [&](int64_t pl, auto* gi) {
      using A = std::remove_reference_t<decltype(*gi)>;
      const T* gp = go + pl * per;
      for (int64_t k = 0; k < per; ++k) {
        const AvgCell& c = cells[k];
        if (c.divisor == 0) continue;  // a window wholly in the padding: the forward's 0/0
        const A v = static_cast<A>(static_cast<M>(gp[k]) / static_cast<M>(c.divisor));
        for (int64_t iy = c.y0; iy < c.y1; ++iy)
          for (int64_t ix = c.x0; ix < c.x1; ++ix) gi[iy * width + ix] += v;
      }
    });
  });
  return in_layout_of(out, self);
}

// Calls cell(plane, o, y0, y1, x0, x1) for every output cell o (flat over all planes) with
// its input window [y0, y1) x [x0, x1); planes are split across threads. The windows' bounds
// (four integer divisions per cell) are computed once, not per plane.
template <class F>
void for_each_adaptive_cell(const Planes& p, int64_t ho, int64_t wo, const F& cell) {
  std::vector<int64_t> ys(static_cast<size_t>(2 * ho)), xs(static_cast<size_t>(2 * wo));
  for (int64_t o = 0; o < ho; ++o)
    ys[2 * o] = adaptive_start(o, p.h, ho), ys[2 * o + 1] = adaptive_end(o, p.h, ho);
  for (int64_t o = 0; o < wo; ++o)
    xs[2 * o] = adaptive_start(o, p.w, wo), xs[2 * o + 1] = adaptive_end(o, p.w, wo);
  for_each_plane(p.planes, p.h * p.w, [&](int64_t pl) {
    for (int64_t oy = 0; oy < ho; ++oy)
      for (int64_t ox = 0; ox < wo; ++ox)
        cell(pl, (pl * ho + oy) * wo + ox, ys[2 * oy], ys[2 * oy + 1], xs[2 * ox], xs[2 * ox + 1]);
  });
}

Tensor adaptive_avg_pool2d_kernel(const Tensor& input, IntArrayRef output_size) {
  if (is_channels_last_4d(input)) {  // Note [Channels-last average pools]
    constexpr const char* op = "adaptive_avg_pool2d";
    const NhwcResize r = nhwc_resize(op, input, output_size);
    const Planes& p = r.p;
    const int64_t ho = r.ho, wo = r.wo;
    const Tensor &x = r.x, &out = r.out;
    visit_dtype<dtypes::kFloating>(op, input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      avg_pool_nhwc(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()),
                    input.size(0), input.size(1), p.h, p.w, ho, wo, (p.h / ho + 1) * (p.w / wo + 1),
                    [&](int64_t oy, int64_t ox) {
                      AvgCell cl;
                      cl.y0 = adaptive_start(oy, p.h, ho), cl.y1 = adaptive_end(oy, p.h, ho);
                      cl.x0 = adaptive_start(ox, p.w, wo), cl.x1 = adaptive_end(ox, p.w, wo);
                      cl.divisor = (cl.y1 - cl.y0) * (cl.x1 - cl.x0);
                      return cl;
                    });
    });
    return out;
  }
  const PoolMeta m = adaptive_pool2d_meta("adaptive_avg_pool2d", input, output_size, false);
  const Planes& p = m.p;
  const int64_t ho = m.w.ho, wo = m.w.wo;
  const Tensor &in = m.in, &out = m.out;
  visit_dtype<dtypes::kFloating>("adaptive_avg_pool2d", input.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(in.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    // float, double, and the 16-bit types lane_sum.h widens in registers.
    constexpr bool kLaneSums = LaneSum<M>::template kLoads<T>;
    if constexpr (kLaneSums) {
      // Global pooling (a ResNet's last): each plane one run, without the per-cell calls
      // ([32, 512, 7, 7], one VM thread: 0.39 -> 0.145 ms; mean over H, W took 0.15).
      if (ho == 1 && wo == 1) {
        const int64_t n = p.h * p.w;
        for_each_plane(p.planes, n, [&](int64_t pl) {
          dst[pl] = cast_value<T>(LaneSum<M>::sum(src + pl * n, n) / static_cast<M>(n));
        });
        return;
      }
    }
    for_each_adaptive_cell(
        p, ho, wo, [&](int64_t pl, int64_t o, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
          const T* x = src + pl * p.h * p.w;
          M sum = 0;
          if constexpr (kLaneSums) {
            if (x0 == 0 && x1 == p.w) {
              // Whole rows (global pooling, a ResNet's last pool): one contiguous run, summed
              // lane by lane (kernels/cpu/lane_sum.h), not one dependent add per element.
              sum = LaneSum<M>::sum(x + y0 * p.w, (y1 - y0) * p.w);
              dst[o] = cast_value<T>(sum / static_cast<M>((y1 - y0) * (x1 - x0)));
              return;
            }
          }
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) sum += static_cast<M>(x[iy * p.w + ix]);
          dst[o] = cast_value<T>(sum / static_cast<M>((y1 - y0) * (x1 - x0)));
        });
  });
  return in_layout_of(out, input);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_kernel(const Tensor& input,
                                                      IntArrayRef output_size) {
  if (is_channels_last_4d(input)) {
    // NHWC: per output cell, the window's C-vectors merged with the plane kernel's rule (NaN
    // wins and sticks, else the first maximum), lane by lane; its values and indices.
    const NhwcResize r = nhwc_resize("adaptive_max_pool2d", input, output_size);
    const Planes& p = r.p;
    const int64_t n = r.n, c = r.c, ho = r.ho, wo = r.wo;
    const Tensor &x = r.x, &out = r.out;
    Tensor idx = empty_tensor(out.sizes(), out.strides(), kLong, input.device());
    visit_dtype<dtypes::kFloating>("adaptive_max_pool2d", input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      const T* src = static_cast<const T*>(x.data_ptr());
      T* dst = static_cast<T*>(out.data_ptr());
      int64_t* ind = static_cast<int64_t*>(idx.data_ptr());
      parallel_for(
          n * ho, grain_for(wo * c * (p.h / ho + 1) * (p.w / wo + 1)), [&](int64_t b, int64_t e) {
            std::vector<M> best(static_cast<size_t>(c));
            std::vector<int64_t> at(static_cast<size_t>(c));
            M* __restrict bp = best.data();
            int64_t* __restrict ap = at.data();
            for (int64_t row = b; row < e; ++row) {
              const int64_t img = row / ho, oy = row % ho;
              const int64_t y0 = adaptive_start(oy, p.h, ho), y1 = adaptive_end(oy, p.h, ho);
              for (int64_t ox = 0; ox < wo; ++ox) {
                const int64_t x0 = adaptive_start(ox, p.w, wo);
                const int64_t x1 = adaptive_end(ox, p.w, wo);
                const T* xi = src + img * p.h * p.w * c;
                for (int64_t ch = 0; ch < c; ++ch)
                  bp[ch] = static_cast<M>(xi[(y0 * p.w + x0) * c + ch]), ap[ch] = y0 * p.w + x0;
                for (int64_t iy = y0; iy < y1; ++iy)
                  for (int64_t ix = x0; ix < x1; ++ix) {
                    const T* __restrict v = xi + (iy * p.w + ix) * c;
                    const int64_t pos = iy * p.w + ix;
                    for (int64_t ch = 0; ch < c; ++ch) {
                      const M vv = static_cast<M>(v[ch]), bb = bp[ch];
                      const bool take = ((vv > bb) | (vv != vv)) & (bb == bb);
                      bp[ch] = branchless_select(take, vv, bb);
                      ap[ch] = branchless_select(take, pos, ap[ch]);
                    }
                  }
                T* __restrict yo = dst + (row * wo + ox) * c;
                int64_t* __restrict io = ind + (row * wo + ox) * c;
                for (int64_t ch = 0; ch < c; ++ch) {
                  yo[ch] = cast_value<T>(bp[ch]);
                  io[ch] = ap[ch];
                }
              }
            }
          });
    });
    return {out, idx};
  }
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
  return {in_layout_of(out, input), in_layout_of(idx, input)};
}

Tensor upsample_bilinear2d_kernel(const Tensor& input, IntArrayRef output_size,
                                  bool align_corners) {
  if (is_channels_last_4d(input)) {
    // NHWC: each output position blends four C-vectors with the plane kernel's expression, so
    // the values are its bits; no reorder of the input or the result.
    const NhwcResize r = nhwc_resize("upsample_bilinear2d", input, output_size);
    const Planes& p = r.p;
    const int64_t n = r.n, c = r.c, ho = r.ho, wo = r.wo;
    const Tensor &x = r.x, &out = r.out;
    visit_dtype<dtypes::kFloating>("upsample_bilinear2d", input.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using M = opmath_t<T>;
      std::vector<LinearTap<M>> rows(ho), cols(wo);
      for (int64_t o = 0; o < ho; ++o) rows[o] = linear_tap<M>(o, p.h, ho, align_corners);
      for (int64_t o = 0; o < wo; ++o) cols[o] = linear_tap<M>(o, p.w, wo, align_corners);
      const T* src = static_cast<const T*>(x.data_ptr());
      T* dst = static_cast<T*>(out.data_ptr());
      parallel_for(n * ho, grain_for(4 * wo * c), [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          const int64_t img = row / ho, oy = row % ho;
          const LinearTap<M>& r = rows[oy];
          const T* top = src + (img * p.h + r.i0) * p.w * c;
          const T* bottom = src + (img * p.h + r.i1) * p.w * c;
          for (int64_t ox = 0; ox < wo; ++ox) {
            const LinearTap<M>& cl = cols[ox];
            const T* __restrict t0 = top + cl.i0 * c;
            const T* __restrict t1 = top + cl.i1 * c;
            const T* __restrict b0 = bottom + cl.i0 * c;
            const T* __restrict b1 = bottom + cl.i1 * c;
            T* __restrict y = dst + (row * wo + ox) * c;
            const M cl0 = M(1) - cl.l, cl1 = cl.l, r0 = M(1) - r.l, r1 = r.l;
            for (int64_t ch = 0; ch < c; ++ch) {
              const M t = cl0 * static_cast<M>(t0[ch]) + cl1 * static_cast<M>(t1[ch]);
              const M bo = cl0 * static_cast<M>(b0[ch]) + cl1 * static_cast<M>(b1[ch]);
              y[ch] = cast_value<T>(r0 * t + r1 * bo);
            }
          }
        }
      });
    });
    return out;
  }
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
  return in_layout_of(m.out, input);
}

}  // namespace

XTEN_CPU_KERNELS(pool, m) {
  m.impl("upsample_bilinear2d", upsample_bilinear2d_kernel);
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices_kernel);
  m.impl("avg_pool2d", avg_pool2d_kernel);
  m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward_kernel);
  m.impl("avg_pool2d_backward", avg_pool2d_backward_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d_kernel);
}

}  // namespace xten::cpu
