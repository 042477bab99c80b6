// pool: max_pool2d, avg_pool2d (and its backward), adaptive_avg_pool2d, adaptive_max_pool2d,
// upsample_bilinear2d over contiguous [planes, h, w] inputs (c == 0) or channels-last [n, h, w, c] ones (c > 0,
// results channels-last too; POOL_CELL in common.h), one work-item per output element,
// computing in opmath in the order kernels/cpu/pool.cpp does (so results match it bit for bit,
// NaN handling included).
// Indices are flat positions in the input plane. Host side: kernels/xpu/ops/pool.cpp.
#include "common.h"

#define MAX_POOL(T, unused)                                                                     \
  KERNEL max_pool2d_##T(global T##_t* out, global long* idx, global const T##_t* in, long h,    \
                        long w, long ho, long wo, long kh, long kw, long sh, long sw, long ph,  \
                        long pw, long dh, long dw, long c, long n) {                           \
    ELEMENTS(e, n) {                                                                           \
      POOL_CELL(T)                                                                             \
      T##_m best = -INFINITY;                                                                  \
      long at = -1;                                                                            \
      for (long i = 0; i < kh; ++i) {                                                          \
        const long iy = oy * sh - ph + i * dh;                                                 \
        if (iy < 0 || iy >= h) continue;                                                       \
        for (long j = 0; j < kw; ++j) {                                                        \
          const long ix = ox * sw - pw + j * dw;                                               \
          if (ix < 0 || ix >= w) continue;                                                     \
          const T##_m v = T##_load(x, (iy * w + ix) * st);                                     \
          if (at < 0 || v > best || v != v) {                                                  \
            best = v;                                                                          \
            at = iy * w + ix;                                                                  \
            if (v != v) i = kh, j = kw; /* NaN wins, as in PyTorch */                          \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
      T##_store(out, e, best);                                                                 \
      idx[e] = at;                                                                             \
    }                                                                                          \
  }

// divisor: 0 for none given; then the window clipped to the padded input (count_include_pad)
// or to the input.
#define AVG_POOL(T, unused)                                                                     \
  KERNEL avg_pool2d_##T(global T##_t* out, global const T##_t* in, long h, long w, long ho,     \
                        long wo, long kh, long kw, long sh, long sw, long ph, long pw,          \
                        int count_include_pad, long divisor, long c, long n) {                 \
    ELEMENTS(e, n) {                                                                           \
      POOL_CELL(T)                                                                             \
      long y0 = oy * sh - ph, x0 = ox * sw - pw;                                               \
      long y1 = min(y0 + kh, h + ph), x1 = min(x0 + kw, w + pw);                               \
      const long padded_count = (y1 - y0) * (x1 - x0);                                         \
      y0 = max(y0, 0L), x0 = max(x0, 0L);                                                      \
      y1 = min(y1, h), x1 = min(x1, w);                                                        \
      T##_m sum = 0;                                                                           \
      for (long iy = y0; iy < y1; ++iy)                                                        \
        for (long ix = x0; ix < x1; ++ix) sum += T##_load(x, (iy * w + ix) * st);              \
      const long d = divisor ? divisor : count_include_pad ? padded_count                       \
                                                           : (y1 - y0) * (x1 - x0);             \
      T##_store(out, e, sum / (T##_m)d);                                                       \
    }                                                                                          \
  }

// avg_pool2d's input gradient, one work-item per input element (c as in POOL_CELL: 0 for planes,
// the channel count for channels-last): the sum, over the output cells whose window (clipped to
// the input, as avg_pool_cell in kernels/common/window.h) holds the element, rows then columns,
// of the cell's gradient over its divisor (cells wholly in the padding skipped), in opmath: the
// CPU kernel's order and values.
#define AVG_POOL_BACKWARD(T, unused)                                                            \
  KERNEL avg_pool2d_backward_##T(global T##_t* dx, global const T##_t* g, long h, long w,       \
                                 long ho, long wo, long kh, long kw, long sh, long sw, long ph, \
                                 long pw, int count_include_pad, long divisor, long c,          \
                                 long n) {                                                     \
    ELEMENTS(e, n) {                                                                           \
      long ix, iy, st;                                                                         \
      global const T##_t* gp;                                                                  \
      if (c > 0) {                                                                             \
        const long r = e / c;                                                                  \
        ix = r % w, iy = (r / w) % h, st = c;                                                  \
        gp = g + (r / (w * h)) * ho * wo * c + (e - r * c);                                    \
      } else {                                                                                 \
        ix = e % w, iy = (e / w) % h, st = 1;                                                  \
        gp = g + (e / (w * h)) * ho * wo;                                                      \
      }                                                                                        \
      const long ay = iy + ph - kh + 1, ax = ix + pw - kw + 1;                                 \
      const long oy0 = ay > 0 ? (ay + sh - 1) / sh : 0, oy1 = min(ho - 1, (iy + ph) / sh);     \
      const long ox0 = ax > 0 ? (ax + sw - 1) / sw : 0, ox1 = min(wo - 1, (ix + pw) / sw);     \
      T##_m acc = 0;                                                                           \
      for (long oy = oy0; oy <= oy1; ++oy) {                                                   \
        long y0 = oy * sh - ph, y1 = min(y0 + kh, h + ph);                                     \
        const long rows_padded = y1 - y0;                                                      \
        y0 = max(y0, 0L), y1 = min(y1, h);                                                     \
        if (iy < y0 || iy >= y1) continue;                                                     \
        for (long ox = ox0; ox <= ox1; ++ox) {                                                 \
          long x0 = ox * sw - pw, x1 = min(x0 + kw, w + pw);                                   \
          const long cols_padded = x1 - x0;                                                    \
          x0 = max(x0, 0L), x1 = min(x1, w);                                                   \
          if (ix < x0 || ix >= x1) continue;                                                   \
          const long d = divisor             ? divisor                                         \
                         : count_include_pad ? rows_padded * cols_padded                       \
                                             : (y1 - y0) * (x1 - x0);                          \
          if (d == 0) continue;                                                                \
          acc += T##_load(gp, (oy * wo + ox) * st) / (T##_m)d;                                 \
        }                                                                                      \
      }                                                                                        \
      T##_store(dx, e, acc);                                                                   \
    }                                                                                          \
  }

#define ADAPTIVE_AVG_POOL(T, unused)                                                            \
  KERNEL adaptive_avg_pool2d_##T(global T##_t* out, global const T##_t* in, long h, long w,     \
                                 long ho, long wo, long c, long n) {                           \
    ELEMENTS(e, n) {                                                                           \
      ADAPTIVE_WINDOW(T)                                                                       \
      T##_m sum = 0;                                                                           \
      for (long iy = y0; iy < y1; ++iy)                                                        \
        for (long ix = x0; ix < x1; ++ix) sum += T##_load(x, (iy * w + ix) * st);              \
      T##_store(out, e, sum / (T##_m)((y1 - y0) * (x1 - x0)));                                 \
    }                                                                                          \
  }

#define ADAPTIVE_MAX_POOL(T, unused)                                                            \
  KERNEL adaptive_max_pool2d_##T(global T##_t* out, global long* idx, global const T##_t* in,   \
                                 long h, long w, long ho, long wo, long c, long n) {           \
    ELEMENTS(e, n) {                                                                           \
      ADAPTIVE_WINDOW(T)                                                                       \
      T##_m best = T##_load(x, (y0 * w + x0) * st);                                            \
      long at = y0 * w + x0;                                                                   \
      for (long iy = y0; iy < y1; ++iy)                                                        \
        for (long ix = x0; ix < x1; ++ix) {                                                    \
          const T##_m v = T##_load(x, (iy * w + ix) * st);                                     \
          if ((v > best || v != v) && best == best) { /* NaN wins, as in PyTorch */            \
            best = v;                                                                          \
            at = iy * w + ix;                                                                  \
          }                                                                                    \
        }                                                                                      \
      T##_store(out, e, best);                                                                 \
      idx[e] = at;                                                                             \
    }                                                                                          \
  }

// Note [Bilinear taps] (kernels/common/window.h): the same source index, in opmath.
#define LINEAR_TAP(T, o, in, out, i0, i1, l)                                                    \
  long i0, i1;                                                                                 \
  T##_m l;                                                                                     \
  {                                                                                            \
    T##_m src;                                                                                 \
    if (align_corners) {                                                                       \
      src = out > 1 ? (T##_m)o * ((T##_m)(in - 1) / (T##_m)(out - 1)) : (T##_m)0;              \
    } else {                                                                                   \
      src = ((T##_m)o + (T##_m)0.5) * ((T##_m)in / (T##_m)out) - (T##_m)0.5;                   \
      if (src < 0) src = 0;                                                                    \
    }                                                                                          \
    i0 = min((long)src, in - 1);                                                               \
    i1 = min(i0 + 1, in - 1);                                                                  \
    l = src - (T##_m)i0;                                                                       \
  }

#define UPSAMPLE_BILINEAR(T, unused)                                                            \
  KERNEL upsample_bilinear2d_##T(global T##_t* out, global const T##_t* in, long h, long w,     \
                                 long ho, long wo, int align_corners, long c, long n) {        \
    ELEMENTS(e, n) {                                                                           \
      POOL_CELL(T)                                                                             \
      LINEAR_TAP(T, oy, h, ho, y0, y1, ly)                                                     \
      LINEAR_TAP(T, ox, w, wo, x0, x1, lx)                                                     \
      const T##_m t = ((T##_m)1 - lx) * T##_load(x, (y0 * w + x0) * st) +                      \
                      lx * T##_load(x, (y0 * w + x1) * st);                                    \
      const T##_m b = ((T##_m)1 - lx) * T##_load(x, (y1 * w + x0) * st) +                      \
                      lx * T##_load(x, (y1 * w + x1) * st);                                    \
      T##_store(out, e, ((T##_m)1 - ly) * t + ly * b);                                         \
    }                                                                                          \
  }

XTEN_FLOAT_DTYPES(UPSAMPLE_BILINEAR, _)
XTEN_FLOAT_DTYPES(MAX_POOL, _)
XTEN_FLOAT_DTYPES(AVG_POOL, _)
XTEN_FLOAT_DTYPES(AVG_POOL_BACKWARD, _)
XTEN_FLOAT_DTYPES(ADAPTIVE_AVG_POOL, _)
XTEN_FLOAT_DTYPES(ADAPTIVE_MAX_POOL, _)
