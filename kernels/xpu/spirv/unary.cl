// unary: pointwise functions over a strided iteration space, in opmath, as
// kernels/cpu/unary.cpp computes them. Host side: kernels/xpu/ops/unary.cpp.
#include "common.h"

// NAME_T_1d: one dim with a stride per operand (PoCL vectorizes it; see binary.cl).
#define UNARY_HEAD_1D(NAME, T, OUT_T, ...)                                                         \
  KERNEL NAME##_##T##_1d(global OUT_T* out, global const T##_t* a, long n, long so, long sa) {     \
    ELEMENTS(i, n) {                                                                               \
    const long oo = i * so, oa = i * sa;                                                           \
    const T##_m x = T##_load(a, oa);                                                               \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }
#define UNARY_HEAD_ND(NAME, T, OUT_T, ...)                                                         \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, long n, int ndim, long8 sizes,       \
                    long8 so, long8 sa) {                                                          \
    ELEMENTS(i, n) {                                                                               \
    long oo, oa;                                                                                   \
    strided_offsets(i, ndim, sizes, so, sa, &oo, &oa);                                             \
    const T##_m x = T##_load(a, oa);                                                               \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }

// Floating functions (integer inputs are converted to float32 by the host first).
#define FLOAT_UNARY(T, HEAD)                                                                       \
  HEAD(exp, T, T##_t, T##_store(out, oo, exp(x));)                                                 \
  HEAD(exp2, T, T##_t, T##_store(out, oo, exp2(x));)                                               \
  HEAD(log, T, T##_t, T##_store(out, oo, log(x));)                                                 \
  HEAD(log2, T, T##_t, T##_store(out, oo, log2(x));)                                               \
  HEAD(log10, T, T##_t, T##_store(out, oo, log10(x));)                                             \
  HEAD(log1p, T, T##_t, T##_store(out, oo, log1p(x));)                                             \
  HEAD(expm1, T, T##_t, T##_store(out, oo, expm1(x));)                                             \
  HEAD(sqrt, T, T##_t, T##_store(out, oo, sqrt(x));)                                               \
  HEAD(rsqrt, T, T##_t, T##_store(out, oo, ONE(T) / sqrt(x));)                                     \
  HEAD(reciprocal, T, T##_t, T##_store(out, oo, ONE(T) / x);)                                      \
  HEAD(sin, T, T##_t, T##_store(out, oo, sin(x));)                                                 \
  HEAD(cos, T, T##_t, T##_store(out, oo, cos(x));)                                                 \
  HEAD(tan, T, T##_t, T##_store(out, oo, tan(x));)                                                 \
  /* PoCL's tanh gives 1 - 1 ulp past where tanh rounds to +-1 (|x| > 9.02 in float, 18.7 in */  \
  /* double); the CPU and PyTorch give +-1 there (docs/xpu_kernels.md, "Accuracy") */             \
  HEAD(tanh, T, T##_t,                                                                             \
    T##_store(out, oo, fabs(x) > (sizeof(x) == 4 ? (T##_m)9.1 : (T##_m)19.1) ? copysign(ONE(T), x) \
                                                                            : tanh(x));)           \
  HEAD(sigmoid, T, T##_t, T##_store(out, oo, ONE(T) / (ONE(T) + exp(-x)));)                        \
  HEAD(silu, T, T##_t, T##_store(out, oo, x / (ONE(T) + exp(-x)));)                                \
  HEAD(erf, T, T##_t, T##_store(out, oo, erf(x));)                                                 \
  HEAD(neg, T, T##_t, T##_store(out, oo, -x);)                                                     \
  HEAD(abs, T, T##_t, T##_store(out, oo, x < 0 ? -x : x);)                                         \
  HEAD(relu, T, T##_t, T##_store(out, oo, x < 0 ? (T##_m)0 : x);) /* NaN stays NaN */

// Integers: negation and abs wrap (-INT_MIN == INT_MIN) like the CPU's.
#define INT_UNARY(T, HEAD)                                                                         \
  HEAD(neg, T, T##_t, T##_store(out, oo, (T##_m)(-(T##_u)x));)                                     \
  HEAD(abs, T, T##_t, T##_store(out, oo, x < 0 ? (T##_m)(-(T##_u)x) : x);)                         \
  HEAD(relu, T, T##_t, T##_store(out, oo, x > 0 ? x : (T##_m)0);)

// Rounding (floats only: integer inputs are copied by the host), gelu, sign.
#define FLOAT_ROUNDING(T, HEAD)                                                                    \
  HEAD(floor, T, T##_t, T##_store(out, oo, floor(x));)                                             \
  HEAD(ceil, T, T##_t, T##_store(out, oo, ceil(x));)                                               \
  HEAD(round, T, T##_t, T##_store(out, oo, rint(x));) /* half to even */                           \
  HEAD(trunc, T, T##_t, T##_store(out, oo, trunc(x));)                                             \
  /* gelu as on the CPU (kernels/cpu/unary.cpp): the exact form x Phi(x) (common.h; 1 + erf */   \
  /* would cancel for negative x), NaN at +-inf; the tanh form as x / (1 + exp(-2u)), which  */   \
  /* does not cancel for x below about -3 (NaN at -inf, inf at +inf)                          */  \
  HEAD(gelu_erf, T, T##_t, T##_store(out, oo, isinf(x) ? (T##_m)NAN : x * normal_cdf(x));)        \
  HEAD(gelu_tanh, T, T##_t,                                                                        \
    const T##_m inner = (T##_m)0.79788456080286535588 * (x + (T##_m)0.044715 * x * x * x);         \
    T##_store(out, oo, x / (ONE(T) + exp((T##_m)-2 * inner)));)                                    \
  HEAD(sign, T, T##_t, T##_store(out, oo, (T##_m)((x > 0) - (x < 0)));) /* sign(NaN) = 0 */
#define INT_SIGN(T, HEAD) HEAD(sign, T, T##_t, T##_store(out, oo, (T##_m)((x > 0) - (x < 0)));)

// Predicates (bool out) and bitwise not.
#define FLOAT_PREDICATES(T, HEAD)                                                                  \
  HEAD(isnan, T, uchar, out[oo] = x != x;)                                                         \
  HEAD(isinf, T, uchar, out[oo] = isinf(x);)                                                       \
  HEAD(isfinite, T, uchar, out[oo] = isfinite(x);)                                                 \
  HEAD(logical_not, T, uchar, out[oo] = x == 0;)
#define INT_PREDICATES(T, HEAD)                                                                    \
  HEAD(isnan, T, uchar, out[oo] = 0;)                                                              \
  HEAD(isinf, T, uchar, out[oo] = 0;)                                                              \
  HEAD(isfinite, T, uchar, out[oo] = 1;)                                                           \
  HEAD(logical_not, T, uchar, out[oo] = x == 0;)                                                   \
  HEAD(bitwise_not, T, T##_t, T##_store(out, oo, (T##_m)~x);)
// bool: bitwise_not is logical, sign is the identity.
#define BOOL_UNARY(T, HEAD)                                                                        \
  HEAD(isnan, T, uchar, out[oo] = 0;)                                                              \
  HEAD(isinf, T, uchar, out[oo] = 0;)                                                              \
  HEAD(isfinite, T, uchar, out[oo] = 1;)                                                           \
  HEAD(logical_not, T, uchar, out[oo] = x == 0;)                                                   \
  HEAD(bitwise_not, T, T##_t, out[oo] = x == 0;)                                                   \
  HEAD(sign, T, T##_t, out[oo] = x;)

#define ALL_UNARY(HEAD_)                                                                           \
  XTEN_FLOAT_DTYPES(FLOAT_UNARY, HEAD_)                                                            \
  XTEN_INT_DTYPES_HERE(INT_UNARY, HEAD_)                                                           \
  XTEN_FLOAT_DTYPES(FLOAT_ROUNDING, HEAD_)                                                         \
  XTEN_FLOAT_DTYPES(FLOAT_PREDICATES, HEAD_)                                                       \
  XTEN_INT_DTYPES_HERE(INT_PREDICATES, HEAD_)                                                      \
  XTEN_INT_DTYPES_HERE(INT_SIGN, HEAD_)                                                            \
  XTEN_BOOL_HERE(BOOL_UNARY, HEAD_)
ALL_UNARY(UNARY_HEAD_ND)
ALL_UNARY(UNARY_HEAD_1D)


// With up to three parameters p0..p2 in opmath: clamp (p0 lower, p1 upper bound; a missing
// bound is -inf/+inf or the dtype's limit, which clamps nothing) and nan_to_num (p0 for NaN,
// p1 for +inf, p2 for -inf).
// NaN propagates from x, then from a NaN bound, as on the CPU.
#define FLOAT_PARAM(T, HEAD)                                                                       \
  HEAD(clamp, T, T##_t,                                                                            \
    T##_m v = x;                                                                                   \
    if (x == x) {                                                                                  \
      if (p0 != p0) v = p0;                                                                        \
      else if (p1 != p1) v = p1;                                                                   \
      else {                                                                                       \
        if (v < p0) v = p0;                                                                        \
        if (v > p1) v = p1;                                                                        \
      }                                                                                            \
    }                                                                                              \
    T##_store(out, oo, v);)                                                                        \
  HEAD(nan_to_num, T, T##_t,                                                                       \
    T##_store(out, oo, x != x ? p0 : x == INFINITY ? p1 : x == -INFINITY ? p2 : x);)
#define INT_PARAM(T, HEAD)                                                                         \
  HEAD(clamp, T, T##_t,                                                                            \
    T##_m v = x;                                                                                   \
    if (v < p0) v = p0;                                                                            \
    if (v > p1) v = p1;                                                                            \
    T##_store(out, oo, v);)

#define ALL_PARAM(HEAD_)                                                                           \
  XTEN_FLOAT_DTYPES(FLOAT_PARAM, HEAD_)                                                            \
  XTEN_INT_DTYPES_HERE(INT_PARAM, HEAD_)
ALL_PARAM(PARAM_HEAD_ND)
ALL_PARAM(PARAM_HEAD_1D)
