// quantized: the XPU's int8 kernels (docs/quantization.md "On the XPU"), one work-item per
// output element, with the CPU's formulas (kernels/cpu/quantized.cpp): quantize and dequantize
// (per tensor, or per channel as [outer, channels, inner]), relu, add, max and adaptive average
// pooling over NCHW planes, and the integer products of conv2d (NHWC) and linear: the input's
// integers less its zero point times the int8 weight, summed in int32, then
// (sum + bias) * scale[o] in float, relu, plus the output zero point, rounded half to even and
// saturated. Activations are u8 (quint8) or i8 (qint8); weights are always i8.
// Host side: kernels/xpu/ops/quantized.cpp.
#include "common.h"

#ifndef XTEN_F64

// v clamped to [lo, hi], then rounded half to even (rint, in the default rounding mode).
static inline int round_clamped(float v, float lo, float hi) {
  return (int)rint(fmin(fmax(v, lo), hi));
}

// Integer division of s by c > 0 rounded half to even (the CPU rounds the double quotient;
// the same integer for any window the int64 sums can hold).
static inline long round_div_even(long s, long c) {
  long q = s / c, r = s % c;
  if (r < 0) q -= 1, r += c;  // floor
  if (2 * r > c || (2 * r == c && (q & 1))) ++q;
  return q;
}

#define Q_QUANTIZE(T, unused)                                                                  \
  KERNEL quantize_##T(global T##_t* out, global const float* in,                             \
                      global const float* inv_scales, global const long* zero_points,         \
                      long channels, long inner, float qmin, float qmax, long n) {           \
    ELEMENTS(i, n) {                                                                         \
      const long c = (i / inner) % channels;                                                 \
      const int z = (int)zero_points[c];                                                          \
      const float r = in[i] * inv_scales[c];                                                 \
      out[i] = r != r ? (T##_t)z : (T##_t)(round_clamped(r, qmin - z, qmax - z) + z);        \
    }                                                                                        \
  }

#define Q_DEQUANTIZE(T, unused)                                                                \
  KERNEL dequantize_##T(global float* out, global const T##_t* in, global const float* scales, \
                        global const long* zero_points, long channels, long inner, long n) {  \
    ELEMENTS(i, n) {                                                                         \
      const long c = (i / inner) % channels;                                                 \
      out[i] = (float)((int)in[i] - (int)zero_points[c]) * scales[c];                             \
    }                                                                                        \
  }

#define Q_RELU(T, unused)                                                                      \
  KERNEL qrelu_##T(global T##_t* out, global const T##_t* in, int zero_point, long n) {      \
    ELEMENTS(i, n) {                                                                         \
      const int v = in[i];                                                                   \
      out[i] = (T##_t)(v > zero_point ? v : zero_point);                                     \
    }                                                                                        \
  }

// q = clamp(a * ka + b * kb + c, lo, hi) rounded (kernels/common/quantized.h, AddParams).
#define Q_ADD(T, unused)                                                                       \
  KERNEL qadd_##T(global T##_t* out, global const T##_t* a, global const T##_t* b, float ka,  \
                  float kb, float c, float lo, float hi, long n) {                           \
    ELEMENTS(i, n) {                                                                         \
      const float v = (float)a[i] * ka + (float)b[i] * kb + c;                               \
      out[i] = (T##_t)round_clamped(v, lo, hi);                                              \
    }                                                                                        \
  }

#define Q_MAX_POOL(T, LOWEST)                                                                  \
  KERNEL qmax_pool2d_##T(global T##_t* out, global const T##_t* in, long h, long w, long ho,  \
                         long wo, long kh, long kw, long sh, long sw, long ph, long pw,       \
                         long dh, long dw, long n) {                                         \
    ELEMENTS(e, n) {                                                                         \
      const long ox = e % wo, oy = (e / wo) % ho, pl = e / (wo * ho);                        \
      global const T##_t* x = in + pl * h * w;                                               \
      T##_t best = LOWEST;                                                                   \
      for (long i = 0; i < kh; ++i) {                                                        \
        const long iy = oy * sh - ph + i * dh;                                               \
        if (iy < 0 || iy >= h) continue;                                                     \
        for (long j = 0; j < kw; ++j) {                                                      \
          const long ix = ox * sw - pw + j * dw;                                             \
          if (ix < 0 || ix >= w) continue;                                                   \
          const T##_t v = x[iy * w + ix];                                                    \
          best = v > best ? v : best;                                                        \
        }                                                                                    \
      }                                                                                      \
      out[e] = best;                                                                         \
    }                                                                                        \
  }

#define Q_ADAPTIVE_AVG_POOL(T, unused)                                                         \
  KERNEL qadaptive_avg_pool2d_##T(global T##_t* out, global const T##_t* in, long h, long w,  \
                                  long ho, long wo, long n) {                                \
    ELEMENTS(e, n) {                                                                         \
      const long c = 0; /* planes (POOL_CELL) */                                             \
      ADAPTIVE_WINDOW(T)                                                                     \
      long sum = 0;                                                                          \
      for (long iy = y0; iy < y1; ++iy)                                                      \
        for (long ix = x0; ix < x1; ++ix) sum += x[iy * w + ix];                             \
      out[e] = (T##_t)round_div_even(sum, (y1 - y0) * (x1 - x0));                            \
    }                                                                                        \
  }

// (sum + bias[o]) * scale[o]: the product of output channel o in the output's real units over
// its scale.
static inline float requantize(int acc, global const float* bias, int has_bias,
                               global const float* scales, long o) {
  float v = (float)acc;
  if (has_bias) v += bias[o];
  return v * scales[o];
}

// sum over j < k of (x[j] - zp) * w[j] in int32: 16 at a time in int16 vectors (PoCL keeps them
// in vector registers; the integer sums are exact, so the order changes nothing), the rest one
// by one.
#define Q_DOT(T)                                                                               \
  static inline int qdot_##T(global const T##_t* x, global const char* w, long k, int zp) {    \
    int16 acc = (int16)(0);                                                                  \
    long j = 0;                                                                              \
    for (; j + 16 <= k; j += 16)                                                             \
      acc += (convert_int16(vload16(0, x + j)) - zp) * convert_int16(vload16(0, w + j));     \
    const int8 a8 = acc.lo + acc.hi;                                                         \
    const int4 a4 = a8.lo + a8.hi;                                                           \
    const int2 a2 = a4.lo + a4.hi;                                                           \
    int s = a2.x + a2.y;                                                                     \
    for (; j < k; ++j) s += ((int)x[j] - zp) * (int)w[j];                                    \
    return s;                                                                                \
  }

// Input x NHWC [n, h, w, c], weight [o, kh, kw, c / groups] (i8), output NHWC [n, ho, wo, o].
// A padded position adds nothing (the input there is its zero point).
#define Q_CONV2D(T, unused)                                                                    \
  KERNEL qconv2d_##T(global T##_t* out, global const T##_t* x, global const char* wt,         \
                     global const float* bias, int has_bias, global const float* scales,     \
                     long h, long w, long c, long o, long cg, long og, long kh, long kw,     \
                     long sh, long sw, long ph, long pw, long dh, long dw, long ho, long wo, \
                     int x_zero_point, float out_zero_point, float lo, float hi, long n) {   \
    ELEMENTS(e, n) {                                                                         \
      const long oc = e % o, ox = (e / o) % wo, oy = (e / (o * wo)) % ho;                    \
      const long img = e / (o * wo * ho), c0 = (oc / og) * cg;                               \
      int acc = 0;                                                                           \
      for (long i = 0; i < kh; ++i) {                                                        \
        const long iy = oy * sh - ph + i * dh;                                               \
        if (iy < 0 || iy >= h) continue;                                                     \
        for (long j = 0; j < kw; ++j) {                                                      \
          const long ix = ox * sw - pw + j * dw;                                             \
          if (ix < 0 || ix >= w) continue;                                                   \
          global const T##_t* xp = x + ((img * h + iy) * w + ix) * c + c0;                   \
          global const char* wp = wt + ((oc * kh + i) * kw + j) * cg;                        \
          acc += qdot_##T(xp, wp, cg, x_zero_point);                                         \
        }                                                                                    \
      }                                                                                      \
      const float v = requantize(acc, bias, has_bias, scales, oc);                           \
      out[e] = (T##_t)round_clamped(v + out_zero_point, lo, hi);                             \
    }                                                                                        \
  }

// x [m, k] by the i8 weight [o, k] into out [m, o]: quantized (qlinear), or float32 with relu
// as max(v, 0) (qlinear_f32, dynamic quantization).
#define Q_LINEAR_SUM(T)                                                                        \
  const long r = e / o, oc = e % o;                                                          \
  global const T##_t* xp = x + r * k;                                                        \
  global const char* wp = wt + oc * k;                                                       \
  int acc = 0;                                                                               \
  acc += qdot_##T(xp, wp, k, x_zero_point);                                                  \
  const float v = requantize(acc, bias, has_bias, scales, oc);
#define Q_LINEAR(T, unused)                                                                    \
  KERNEL qlinear_##T(global T##_t* out, global const T##_t* x, global const char* wt,         \
                     global const float* bias, int has_bias, global const float* scales,     \
                     long k, long o, int x_zero_point, float out_zero_point, float lo,       \
                     float hi, long n) {                                                     \
    ELEMENTS(e, n) {                                                                         \
      Q_LINEAR_SUM(T)                                                                        \
      out[e] = (T##_t)round_clamped(v + out_zero_point, lo, hi);                             \
    }                                                                                        \
  }                                                                                          \
  KERNEL qlinear_f32_##T(global float* out, global const T##_t* x, global const char* wt,     \
                         global const float* bias, int has_bias, global const float* scales, \
                         long k, long o, int x_zero_point, int relu, long n) {               \
    ELEMENTS(e, n) {                                                                         \
      Q_LINEAR_SUM(T)                                                                        \
      out[e] = relu ? fmax(v, 0.0f) : v;                                                     \
    }                                                                                        \
  }

#define Q_ACTIVATION_DTYPES(X) X(u8, 0) X(i8, -128)
Q_ACTIVATION_DTYPES(Q_QUANTIZE)
Q_ACTIVATION_DTYPES(Q_DEQUANTIZE)
Q_ACTIVATION_DTYPES(Q_RELU)
Q_ACTIVATION_DTYPES(Q_ADD)
Q_ACTIVATION_DTYPES(Q_MAX_POOL)
Q_ACTIVATION_DTYPES(Q_ADAPTIVE_AVG_POOL)
#define Q_DOT_DTYPES(T, unused) Q_DOT(T)
Q_ACTIVATION_DTYPES(Q_DOT_DTYPES)
Q_ACTIVATION_DTYPES(Q_CONV2D)
Q_ACTIVATION_DTYPES(Q_LINEAR)

#endif  // XTEN_F64
