// conv: the data movement around convolution's GEMMs (the GEMMs are linalg's bmm). Inputs
// are contiguous NCHW in the compute dtype (float, or double); one work-item per element.
//   im2col: cols[img][(c*kh + i)*kw + j][oy*wo + ox] = x[img][c][oy*sh - ph + i*dh][ox*sw - pw + j*dw]
//           (0 outside the input), for conv2d;
//   col2im: y[img][c][oy][ox] = sum over (i, j) of cols[img][(c*kh + i)*kw + j][iy*w + ix]
//           where oy = iy*sh - ph + i*dh and ox = ix*sw - pw + j*dw, for conv_transpose2d: a
//           gather (no atomics), summing in the CPU's order (i, then j), so results are
//           deterministic.
// Their channels-last twins (Note [Channels-last XPU convolution], kernels/xpu/ops/conv.cpp)
// read and write NHWC, with a group's columns together:
//   im2col_nhwc: cols[(img*ho + oy)*wo + ox][((g*kh + i)*kw + j)*cg + cc]
//                = x[img][oy*sh - ph + i*dh][ox*sw - pw + j*dw][g*cg + cc];
//   col2im_nhwc: y[img][oy][ox][g*cg + cc] = sum over (i, j) of
//                cols[(img*h + iy)*w + ix][((g*kh + i)*kw + j)*cg + cc], (iy, ix) as in col2im.
// Host side: kernels/xpu/ops/conv.cpp.
#include "common.h"

// col2im's taps for output (oy, ox): kernel offsets (i, j), rows then columns, whose input
// position (ty / sh, tx / sw) exists, running `body` for each.
#define FOR_TAPS(body)                                                                          \
  for (long i = 0; i < kh; ++i) {                                                              \
    const long ty = oy + ph - i * dh;                                                          \
    if (ty < 0 || ty % sh != 0 || ty / sh >= h) continue;                                      \
    for (long j = 0; j < kw; ++j) {                                                            \
      const long tx = ox + pw - j * dw;                                                        \
      if (tx < 0 || tx % sw != 0 || tx / sw >= w) continue;                                    \
      body                                                                                     \
    }                                                                                          \
  }

#define IM2COL(T, unused)                                                                       \
  KERNEL im2col_##T(global T##_t* cols, global const T##_t* x, long c, long h, long w, long kh, \
                    long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,      \
                    long wo, long n) {                                                         \
    const long plane = ho * wo, rows = c * kh * kw;                                            \
    ELEMENTS(e, n) {                                                                           \
      const long p = e % plane, r = (e / plane) % rows, img = e / (plane * rows);              \
      const long oy = p / wo, ox = p - oy * wo;                                                \
      const long j = r % kw, i = (r / kw) % kh, ch = r / (kw * kh);                            \
      const long iy = oy * sh - ph + i * dh, ix = ox * sw - pw + j * dw;                       \
      T##_t v = 0;                                                                             \
      if (iy >= 0 && iy < h && ix >= 0 && ix < w) v = x[((img * c + ch) * h + iy) * w + ix];   \
      cols[e] = v;                                                                             \
    }                                                                                          \
  }

#define COL2IM(T, unused)                                                                       \
  KERNEL col2im_##T(global T##_t* y, global const T##_t* cols, long c, long h, long w, long kh, \
                    long kw, long sh, long sw, long ph, long pw, long dh, long dw, long ho,      \
                    long wo, long n) {                                                         \
    const long plane = h * w;                                                                  \
    ELEMENTS(e, n) {                                                                           \
      const long ox = e % wo, oy = (e / wo) % ho, ch = (e / (wo * ho)) % c;                    \
      const long img = e / (wo * ho * c);                                                      \
      global const T##_t* base = cols + (img * c + ch) * kh * kw * plane;                      \
      T##_t acc = 0;                                                                           \
      FOR_TAPS(acc += base[(i * kw + j) * plane + (ty / sh) * w + tx / sw];)                   \
      y[e] = acc;                                                                              \
    }                                                                                          \
  }

#define IM2COL_NHWC(T, unused)                                                                  \
  KERNEL im2col_nhwc_##T(global T##_t* cols, global const T##_t* x, long c, long cg, long h,    \
                         long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, \
                         long dw, long ho, long wo, long n) {                                  \
    const long row = kh * kw * c;                                                              \
    ELEMENTS(e, n) {                                                                           \
      const long r = e % row, p = e / row;                                                     \
      const long cc = r % cg, j = (r / cg) % kw, i = (r / (cg * kw)) % kh;                     \
      const long g = r / (cg * kw * kh);                                                       \
      const long ox = p % wo, oy = (p / wo) % ho, img = p / (wo * ho);                         \
      const long iy = oy * sh - ph + i * dh, ix = ox * sw - pw + j * dw;                       \
      T##_t v = 0;                                                                             \
      if (iy >= 0 && iy < h && ix >= 0 && ix < w)                                              \
        v = x[((img * h + iy) * w + ix) * c + g * cg + cc];                                    \
      cols[e] = v;                                                                             \
    }                                                                                          \
  }

#define COL2IM_NHWC(T, unused)                                                                  \
  KERNEL col2im_nhwc_##T(global T##_t* y, global const T##_t* cols, long c, long cg, long h,    \
                         long w, long kh, long kw, long sh, long sw, long ph, long pw, long dh, \
                         long dw, long ho, long wo, long n) {                                  \
    const long row = kh * kw * c;                                                              \
    ELEMENTS(e, n) {                                                                           \
      const long ch = e % c, ox = (e / c) % wo, oy = (e / (c * wo)) % ho;                      \
      const long img = e / (c * wo * ho), g = ch / cg, cc = ch - g * cg;                       \
      T##_t acc = 0;                                                                           \
      FOR_TAPS(acc += cols[((img * h + ty / sh) * w + tx / sw) * row +                         \
                           ((g * kh + i) * kw + j) * cg + cc];)                                \
      y[e] = acc;                                                                              \
    }                                                                                          \
  }

#ifdef XTEN_F64
IM2COL(f64, _)
COL2IM(f64, _)
IM2COL_NHWC(f64, _)
COL2IM_NHWC(f64, _)
#else
IM2COL(f32, _)
COL2IM(f32, _)
IM2COL_NHWC(f32, _)
COL2IM_NHWC(f32, _)
#endif
