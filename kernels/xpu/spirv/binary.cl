// binary: arithmetic, maximum/minimum and comparisons over a strided (broadcast) iteration
// space, in the compute dtype's opmath, as kernels/cpu/binary.cpp computes them. Integer
// arithmetic wraps (two's complement) like the CPU's. Host side: kernels/xpu/ops/binary.cpp.
#include "common.h"

#define BINARY_HEAD(NAME, T, OUT_T)                                                          \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, global const T##_t* b,         \
                    T##_m alpha, long n, int ndim, long8 sizes, long8 so, long8 sa, long8 sb) { \
    const long i = get_global_id(0);                                                         \
    if (i >= n) return;                                                                      \
    long oo, oa, ob;                                                                         \
    strided_offsets3(i, ndim, sizes, so, sa, sb, &oo, &oa, &ob);                             \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                    \
    (void)alpha;

// Float kinds: plain IEEE arithmetic (no contraction: -ffp-contract=off at build).
#define FLOAT_ARITH(T, unused)                                                                \
  BINARY_HEAD(add, T, T##_t) T##_store(out, oo, x + alpha * y); }                             \
  BINARY_HEAD(mul, T, T##_t) T##_store(out, oo, x * y); }                                     \
  BINARY_HEAD(div, T, T##_t) T##_store(out, oo, x / y); }                                     \
  BINARY_HEAD(maximum, T, T##_t) T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x > y ? x : y)); } \
  BINARY_HEAD(minimum, T, T##_t) T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x < y ? x : y)); }

// Integer kinds: wrapping add and mul through the unsigned twin.
#define INT_ARITH(T, unused)                                                                  \
  BINARY_HEAD(add, T, T##_t) T##_store(out, oo, (T##_m)((T##_u)x + (T##_u)alpha * (T##_u)y)); } \
  BINARY_HEAD(mul, T, T##_t) T##_store(out, oo, (T##_m)((T##_u)x * (T##_u)y)); }             \
  BINARY_HEAD(maximum, T, T##_t) T##_store(out, oo, x > y ? x : y); }                         \
  BINARY_HEAD(minimum, T, T##_t) T##_store(out, oo, x < y ? x : y); }

// bool: add is or (alpha must be a bool), mul is and.
#define BOOL_ARITH(T, unused)                                                                 \
  BINARY_HEAD(add, T, T##_t) T##_store(out, oo, (uchar)((x | (alpha & y)) != 0)); }           \
  BINARY_HEAD(mul, T, T##_t) T##_store(out, oo, (uchar)((x & y) != 0)); }                     \
  BINARY_HEAD(maximum, T, T##_t) T##_store(out, oo, x > y ? x : y); }                         \
  BINARY_HEAD(minimum, T, T##_t) T##_store(out, oo, x < y ? x : y); }

// Comparisons: bool out.
#define COMPARE(T, unused)                                                                    \
  BINARY_HEAD(eq, T, uchar) out[oo] = x == y; }                                               \
  BINARY_HEAD(ne, T, uchar) out[oo] = x != y; }                                               \
  BINARY_HEAD(lt, T, uchar) out[oo] = x < y; }                                                \
  BINARY_HEAD(le, T, uchar) out[oo] = x <= y; }                                               \
  BINARY_HEAD(gt, T, uchar) out[oo] = x > y; }                                                \
  BINARY_HEAD(ge, T, uchar) out[oo] = x >= y; }

XTEN_FLOAT_DTYPES(FLOAT_ARITH, _)
XTEN_INT_DTYPES_HERE(INT_ARITH, _)
XTEN_BOOL_HERE(BOOL_ARITH, _)
XTEN_FLOAT_DTYPES(COMPARE, _)
XTEN_INT_DTYPES_HERE(COMPARE, _)
XTEN_BOOL_HERE(COMPARE, _)
