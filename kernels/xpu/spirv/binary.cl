// binary: arithmetic, maximum/minimum and comparisons over a strided (broadcast) iteration
// space, in the compute dtype's opmath, as kernels/cpu/binary.cpp computes them. Integer
// arithmetic wraps (two's complement) like the CPU's. Host side: kernels/xpu/ops/binary.cpp.
#include "common.h"

// NAME_T_1d: the same op over one dim with a stride per operand (contiguous, or a broadcast
// scalar with stride 0): no long8 geometry, which PoCL vectorizes across work-items.
#define BINARY_HEAD_1D(NAME, T, OUT_T)                                                       \
  KERNEL NAME##_##T##_1d(global OUT_T* out, global const T##_t* a, global const T##_t* b,    \
                         T##_m alpha, long n, long so, long sa, long sb) {                   \
    ELEMENTS(i, n) {                                                                         \
    const long oo = i * so, oa = i * sa, ob = i * sb;                                        \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                    \
    (void)alpha;
#define BINARY_HEAD_ND(NAME, T, OUT_T)                                                          \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, global const T##_t* b,         \
                    T##_m alpha, long n, int ndim, long8 sizes, long8 so, long8 sa, long8 sb) { \
    ELEMENTS(i, n) {                                                                         \
    long oo, oa, ob;                                                                         \
    strided_offsets3(i, ndim, sizes, so, sa, sb, &oo, &oa, &ob);                             \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                    \
    (void)alpha;

// Float kinds: plain IEEE arithmetic (no contraction: -ffp-contract=off at build).
#define FLOAT_ARITH(T, HEAD)                                                                \
  HEAD(add, T, T##_t) T##_store(out, oo, x + alpha * y); }}                             \
  HEAD(mul, T, T##_t) T##_store(out, oo, x * y); }}                                     \
  HEAD(div, T, T##_t) T##_store(out, oo, x / y); }}                                     \
  HEAD(maximum, T, T##_t) T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x > y ? x : y)); }} \
  HEAD(minimum, T, T##_t) T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x < y ? x : y)); }}

// Integer kinds: wrapping add and mul through the unsigned twin.
#define INT_ARITH(T, HEAD)                                                                  \
  HEAD(add, T, T##_t) T##_store(out, oo, (T##_m)((T##_u)x + (T##_u)alpha * (T##_u)y)); }} \
  HEAD(mul, T, T##_t) T##_store(out, oo, (T##_m)((T##_u)x * (T##_u)y)); }}             \
  HEAD(maximum, T, T##_t) T##_store(out, oo, x > y ? x : y); }}                         \
  HEAD(minimum, T, T##_t) T##_store(out, oo, x < y ? x : y); }}

// bool: add is or (alpha must be a bool), mul is and.
#define BOOL_ARITH(T, HEAD)                                                                 \
  HEAD(add, T, T##_t) T##_store(out, oo, (uchar)((x | (alpha & y)) != 0)); }}           \
  HEAD(mul, T, T##_t) T##_store(out, oo, (uchar)((x & y) != 0)); }}                     \
  HEAD(maximum, T, T##_t) T##_store(out, oo, x > y ? x : y); }}                         \
  HEAD(minimum, T, T##_t) T##_store(out, oo, x < y ? x : y); }}

// Comparisons: bool out.
#define COMPARE(T, HEAD)                                                                    \
  HEAD(eq, T, uchar) out[oo] = x == y; }}                                               \
  HEAD(ne, T, uchar) out[oo] = x != y; }}                                               \
  HEAD(lt, T, uchar) out[oo] = x < y; }}                                                \
  HEAD(le, T, uchar) out[oo] = x <= y; }}                                               \
  HEAD(gt, T, uchar) out[oo] = x > y; }}                                                \
  HEAD(ge, T, uchar) out[oo] = x >= y; }}

#define ALL_BINARY(HEAD_)                 \
  XTEN_FLOAT_DTYPES(FLOAT_ARITH, HEAD_)   \
  XTEN_INT_DTYPES_HERE(INT_ARITH, HEAD_)  \
  XTEN_BOOL_HERE(BOOL_ARITH, HEAD_)       \
  XTEN_FLOAT_DTYPES(COMPARE, HEAD_)       \
  XTEN_INT_DTYPES_HERE(COMPARE, HEAD_)    \
  XTEN_BOOL_HERE(COMPARE, HEAD_)
ALL_BINARY(BINARY_HEAD_ND)
ALL_BINARY(BINARY_HEAD_1D)
