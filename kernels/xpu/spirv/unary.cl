// unary: pointwise functions over a strided iteration space, in opmath, as
// kernels/cpu/unary.cpp computes them. Host side: kernels/xpu/ops/unary.cpp.
#include "common.h"

#define UNARY_HEAD(NAME, T)                                                                  \
  KERNEL NAME##_##T(global T##_t* out, global const T##_t* a, long n, int ndim, long8 sizes, \
                    long8 so, long8 sa) {                                                    \
    const long i = get_global_id(0);                                                         \
    if (i >= n) return;                                                                      \
    long oo, oa;                                                                             \
    strided_offsets(i, ndim, sizes, so, sa, &oo, &oa);                                       \
    const T##_m x = T##_load(a, oa);

#define ONE(T) ((T##_m)1)
// Floating functions (integer inputs are converted to float32 by the host first).
#define FLOAT_UNARY(T, unused)                                                      \
  UNARY_HEAD(exp, T) T##_store(out, oo, exp(x)); }                                  \
  UNARY_HEAD(exp2, T) T##_store(out, oo, exp2(x)); }                                \
  UNARY_HEAD(log, T) T##_store(out, oo, log(x)); }                                  \
  UNARY_HEAD(log2, T) T##_store(out, oo, log2(x)); }                                \
  UNARY_HEAD(log10, T) T##_store(out, oo, log10(x)); }                              \
  UNARY_HEAD(log1p, T) T##_store(out, oo, log1p(x)); }                              \
  UNARY_HEAD(expm1, T) T##_store(out, oo, expm1(x)); }                              \
  UNARY_HEAD(sqrt, T) T##_store(out, oo, sqrt(x)); }                                \
  UNARY_HEAD(rsqrt, T) T##_store(out, oo, ONE(T) / sqrt(x)); }                      \
  UNARY_HEAD(reciprocal, T) T##_store(out, oo, ONE(T) / x); }                       \
  UNARY_HEAD(sin, T) T##_store(out, oo, sin(x)); }                                  \
  UNARY_HEAD(cos, T) T##_store(out, oo, cos(x)); }                                  \
  UNARY_HEAD(tan, T) T##_store(out, oo, tan(x)); }                                  \
  UNARY_HEAD(tanh, T) T##_store(out, oo, tanh(x)); }                                \
  UNARY_HEAD(sigmoid, T) T##_store(out, oo, ONE(T) / (ONE(T) + exp(-x))); }         \
  UNARY_HEAD(silu, T) T##_store(out, oo, x / (ONE(T) + exp(-x))); }                 \
  UNARY_HEAD(erf, T) T##_store(out, oo, erf(x)); }                                  \
  UNARY_HEAD(neg, T) T##_store(out, oo, -x); }                                      \
  UNARY_HEAD(abs, T) T##_store(out, oo, x < 0 ? -x : x); }                          \
  UNARY_HEAD(relu, T) T##_store(out, oo, x > 0 ? x : (T##_m)0); }

// Integers: negation and abs wrap (-INT_MIN == INT_MIN) like the CPU's.
#define INT_UNARY(T, unused)                                                        \
  UNARY_HEAD(neg, T) T##_store(out, oo, (T##_m)(-(T##_u)x)); }                      \
  UNARY_HEAD(abs, T) T##_store(out, oo, x < 0 ? (T##_m)(-(T##_u)x) : x); }          \
  UNARY_HEAD(relu, T) T##_store(out, oo, x > 0 ? x : (T##_m)0); }

XTEN_FLOAT_DTYPES(FLOAT_UNARY, _)
XTEN_INT_DTYPES_HERE(INT_UNARY, _)
