// unary: pointwise functions over a strided iteration space, in opmath, as
// kernels/cpu/unary.cpp computes them. Host side: kernels/xpu/ops/unary.cpp.
#include "common.h"

// NAME_T_1d: one dim with a stride per operand (PoCL vectorizes it; see binary.cl).
#define UNARY_HEAD_1D(NAME, T)                                                               \
  KERNEL NAME##_##T##_1d(global T##_t* out, global const T##_t* a, long n, long so, long sa) { \
    ELEMENTS(i, n) {                                                                         \
    const long oo = i * so, oa = i * sa;                                                     \
    const T##_m x = T##_load(a, oa);
#define UNARY_HEAD_ND(NAME, T)                                                                  \
  KERNEL NAME##_##T(global T##_t* out, global const T##_t* a, long n, int ndim, long8 sizes, \
                    long8 so, long8 sa) {                                                    \
    ELEMENTS(i, n) {                                                                         \
    long oo, oa;                                                                             \
    strided_offsets(i, ndim, sizes, so, sa, &oo, &oa);                                       \
    const T##_m x = T##_load(a, oa);

#define ONE(T) ((T##_m)1)
// Floating functions (integer inputs are converted to float32 by the host first).
#define FLOAT_UNARY(T, HEAD)                                                      \
  HEAD(exp, T) T##_store(out, oo, exp(x)); }}                                  \
  HEAD(exp2, T) T##_store(out, oo, exp2(x)); }}                                \
  HEAD(log, T) T##_store(out, oo, log(x)); }}                                  \
  HEAD(log2, T) T##_store(out, oo, log2(x)); }}                                \
  HEAD(log10, T) T##_store(out, oo, log10(x)); }}                              \
  HEAD(log1p, T) T##_store(out, oo, log1p(x)); }}                              \
  HEAD(expm1, T) T##_store(out, oo, expm1(x)); }}                              \
  HEAD(sqrt, T) T##_store(out, oo, sqrt(x)); }}                                \
  HEAD(rsqrt, T) T##_store(out, oo, ONE(T) / sqrt(x)); }}                      \
  HEAD(reciprocal, T) T##_store(out, oo, ONE(T) / x); }}                       \
  HEAD(sin, T) T##_store(out, oo, sin(x)); }}                                  \
  HEAD(cos, T) T##_store(out, oo, cos(x)); }}                                  \
  HEAD(tan, T) T##_store(out, oo, tan(x)); }}                                  \
  HEAD(tanh, T) T##_store(out, oo, tanh(x)); }}                                \
  HEAD(sigmoid, T) T##_store(out, oo, ONE(T) / (ONE(T) + exp(-x))); }}         \
  HEAD(silu, T) T##_store(out, oo, x / (ONE(T) + exp(-x))); }}                 \
  HEAD(erf, T) T##_store(out, oo, erf(x)); }}                                  \
  HEAD(neg, T) T##_store(out, oo, -x); }}                                      \
  HEAD(abs, T) T##_store(out, oo, x < 0 ? -x : x); }}                          \
  HEAD(relu, T) T##_store(out, oo, x > 0 ? x : (T##_m)0); }}

// Integers: negation and abs wrap (-INT_MIN == INT_MIN) like the CPU's.
#define INT_UNARY(T, HEAD)                                                        \
  HEAD(neg, T) T##_store(out, oo, (T##_m)(-(T##_u)x)); }}                      \
  HEAD(abs, T) T##_store(out, oo, x < 0 ? (T##_m)(-(T##_u)x) : x); }}          \
  HEAD(relu, T) T##_store(out, oo, x > 0 ? x : (T##_m)0); }}

XTEN_FLOAT_DTYPES(FLOAT_UNARY, UNARY_HEAD_ND)
XTEN_INT_DTYPES_HERE(INT_UNARY, UNARY_HEAD_ND)
XTEN_FLOAT_DTYPES(FLOAT_UNARY, UNARY_HEAD_1D)
XTEN_INT_DTYPES_HERE(INT_UNARY, UNARY_HEAD_1D)
