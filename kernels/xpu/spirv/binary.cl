// binary: arithmetic, maximum/minimum and comparisons over a strided (broadcast) iteration
// space, in the compute dtype's opmath, as kernels/cpu/binary.cpp computes them. Integer
// arithmetic wraps (two's complement) like the CPU's. Host side: kernels/xpu/ops/binary.cpp.
#include "common.h"

// NAME_T_1d: the same op over one dim with a stride per operand (contiguous, or a broadcast
// scalar with stride 0): no long8 geometry, which PoCL vectorizes across work-items.
#define BINARY_HEAD_1D(NAME, T, OUT_T, ...)                                                        \
  KERNEL NAME##_##T##_1d(global OUT_T* out, global const T##_t* a, global const T##_t* b,          \
                         T##_m alpha, long n, long so, long sa, long sb) {                         \
    ELEMENTS(i, n) {                                                                               \
    const long oo = i * so, oa = i * sa, ob = i * sb;                                              \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                          \
    (void)alpha;                                                                                   \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }
#define BINARY_HEAD_ND(NAME, T, OUT_T, ...)                                                        \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, global const T##_t* b,               \
                    T##_m alpha, long n, int ndim, long8 sizes, long8 so, long8 sa, long8 sb) {    \
    ELEMENTS(i, n) {                                                                               \
    long oo, oa, ob;                                                                               \
    strided_offsets3(i, ndim, sizes, so, sa, sb, &oo, &oa, &ob);                                   \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                          \
    (void)alpha;                                                                                   \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }

// Float kinds: plain IEEE arithmetic (no contraction: -ffp-contract=off at build).
#define FLOAT_ARITH(T, HEAD)                                                                       \
  HEAD(add, T, T##_t, T##_store(out, oo, x + alpha * y);)                                          \
  HEAD(mul, T, T##_t, T##_store(out, oo, x * y);)                                                  \
  HEAD(div, T, T##_t, T##_store(out, oo, x / y);)                                                  \
  HEAD(maximum, T, T##_t, T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x > y ? x : y));)      \
  HEAD(minimum, T, T##_t, T##_store(out, oo, isnan(x) ? x : isnan(y) ? y : (x < y ? x : y));)

// Integer kinds: wrapping add and mul through the unsigned twin.
#define INT_ARITH(T, HEAD)                                                                         \
  HEAD(add, T, T##_t, T##_store(out, oo, (T##_m)((T##_u)x + (T##_u)alpha * (T##_u)y));)            \
  HEAD(mul, T, T##_t, T##_store(out, oo, (T##_m)((T##_u)x * (T##_u)y));)                           \
  HEAD(maximum, T, T##_t, T##_store(out, oo, x > y ? x : y);)                                      \
  HEAD(minimum, T, T##_t, T##_store(out, oo, x < y ? x : y);)

// bool: add is or (alpha must be a bool), mul is and.
#define BOOL_ARITH(T, HEAD)                                                                        \
  HEAD(add, T, T##_t, T##_store(out, oo, (uchar)((x | (alpha & y)) != 0));)                        \
  HEAD(mul, T, T##_t, T##_store(out, oo, (uchar)((x & y) != 0));)                                  \
  HEAD(maximum, T, T##_t, T##_store(out, oo, x > y ? x : y);)                                      \
  HEAD(minimum, T, T##_t, T##_store(out, oo, x < y ? x : y);)

// Comparisons: bool out.
#define COMPARE(T, HEAD)                                                                           \
  HEAD(eq, T, uchar, out[oo] = x == y;)                                                            \
  HEAD(ne, T, uchar, out[oo] = x != y;)                                                            \
  HEAD(lt, T, uchar, out[oo] = x < y;)                                                             \
  HEAD(le, T, uchar, out[oo] = x <= y;)                                                            \
  HEAD(gt, T, uchar, out[oo] = x > y;)                                                             \
  HEAD(ge, T, uchar, out[oo] = x >= y;)

#define ALL_BINARY(HEAD_)                                                                          \
  XTEN_FLOAT_DTYPES(FLOAT_ARITH, HEAD_)                                                            \
  XTEN_INT_DTYPES_HERE(INT_ARITH, HEAD_)                                                           \
  XTEN_BOOL_HERE(BOOL_ARITH, HEAD_)                                                                \
  XTEN_FLOAT_DTYPES(COMPARE, HEAD_)                                                                \
  XTEN_INT_DTYPES_HERE(COMPARE, HEAD_)                                                             \
  XTEN_BOOL_HERE(COMPARE, HEAD_)
ALL_BINARY(BINARY_HEAD_ND)
ALL_BINARY(BINARY_HEAD_1D)

// ---- division with rounding, remainder, fmod; pow, atan2 ------------------------------------
// Heads with an error flag in place of alpha: integer division by zero stores 0 and sets
// *err, and the host raises the CPU's error after the launch.
#define BINARY_ERR_HEAD_1D(NAME, T, OUT_T, ...)                                                    \
  KERNEL NAME##_##T##_1d(global OUT_T* out, global const T##_t* a, global const T##_t* b,          \
                         global int* err, long n, long so, long sa, long sb) {                     \
    ELEMENTS(i, n) {                                                                               \
    const long oo = i * so, oa = i * sa, ob = i * sb;                                              \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                          \
    (void)err;                                                                                     \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }
#define BINARY_ERR_HEAD_ND(NAME, T, OUT_T, ...)                                                    \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, global const T##_t* b,               \
                    global int* err, long n, int ndim, long8 sizes, long8 so, long8 sa,            \
                    long8 sb) {                                                                    \
    ELEMENTS(i, n) {                                                                               \
    long oo, oa, ob;                                                                               \
    strided_offsets3(i, ndim, sizes, so, sa, sb, &oo, &oa, &ob);                                   \
    const T##_m x = T##_load(a, oa), y = T##_load(b, ob);                                          \
    (void)err;                                                                                     \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }

// Python's floor division of floats, as kernels/cpu/binary.cpp: exact through fmod, then
// rounded to the nearest integer.
#define DEFINE_DIV_FLOOR(M)                                                                        \
  OVL static inline M div_floor(M a, M b) {                                                        \
    if (b == 0) return a / b;                                                                      \
    const M mod = fmod(a, b);                                                                      \
    M div = (a - mod) / b;                                                                         \
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;                                              \
    if (div == 0) return copysign((M)0, a / b);                                                    \
    M fl = floor(div);                                                                             \
    if (div - fl > (M)0.5) fl += 1;                                                                \
    return fl;                                                                                     \
  }
DEFINE_DIV_FLOOR(float)
#ifdef XTEN_F64
DEFINE_DIV_FLOOR(double)
#endif

#define FLOAT_DIVISION(T, HEAD)                                                                    \
  HEAD(div_trunc, T, T##_t, T##_store(out, oo, trunc(x / y));)                                     \
  HEAD(div_floor, T, T##_t, T##_store(out, oo, div_floor(x, y));)                                  \
  HEAD(remainder, T, T##_t,                                                                        \
    T##_m r = fmod(x, y);                                                                          \
    if (r != 0 && ((r < 0) != (y < 0))) r += y;                                                    \
    T##_store(out, oo, r);)                                                                        \
  HEAD(fmod, T, T##_t, T##_store(out, oo, fmod(x, y));)

// Integer quotient and remainder truncated toward zero; x / -1 wraps (INT_MIN / -1 ==
// INT_MIN) and x % -1 is 0, as on the CPU. A zero divisor flags the error. MINUS_ONE is false
// for uint8, whose (uchar)-1 is 255, an ordinary divisor.
#define MINUS_ONE(T) (y < (T##_m)0 && y == (T##_m)-1)
#define INT_QUOT(T) (MINUS_ONE(T) ? (T##_m)(-(T##_u)x) : (T##_m)(x / y))
#define INT_MOD(T) (MINUS_ONE(T) ? (T##_m)0 : (T##_m)(x % y))
#define ZERO_DIVISOR(T)                                                                            \
  if (y == 0) {                                                                                    \
    *err = 1;                                                                                      \
    T##_store(out, oo, 0);                                                                         \
    return;                                                                                        \
  }
#define INT_DIVISION(T, HEAD)                                                                      \
  HEAD(div_trunc, T, T##_t, ZERO_DIVISOR(T) T##_store(out, oo, INT_QUOT(T));)                      \
  HEAD(div_floor, T, T##_t, ZERO_DIVISOR(T)                                                        \
    const T##_m q = INT_QUOT(T);                                                                   \
    const bool adjust = INT_MOD(T) != 0 && ((x < 0) != (y < 0));                                   \
    T##_store(out, oo, adjust ? (T##_m)((T##_u)q - (T##_u)1) : q);)                                \
  HEAD(remainder, T, T##_t, ZERO_DIVISOR(T)                                                        \
    T##_m r = INT_MOD(T);                                                                          \
    if (r != 0 && ((r < 0) != (y < 0))) r = (T##_m)((T##_u)r + (T##_u)y);                          \
    T##_store(out, oo, r);)                                                                        \
  HEAD(fmod, T, T##_t, ZERO_DIVISOR(T) T##_store(out, oo, INT_MOD(T));)

#define ALL_DIVISION(HEAD_)                                                                        \
  XTEN_FLOAT_DTYPES(FLOAT_DIVISION, HEAD_)                                                         \
  XTEN_INT_DTYPES_HERE(INT_DIVISION, HEAD_)
ALL_DIVISION(BINARY_ERR_HEAD_ND)
ALL_DIVISION(BINARY_ERR_HEAD_1D)

// pow (a plain head: it raises nothing). Integer pow squares and multiplies, wrapping;
// negative exponents give 1, -1 or 0 as on the CPU.
#define FLOAT_POWERS(T, HEAD)                                                                      \
  HEAD(pow, T, T##_t, T##_store(out, oo, pow(x, y));)
// Note [Float binary functions] (dispatch/ops.h): one line per FLOAT2 op of the op table,
// named as the op; the host runs it in the op's meta dtype (integers in float32).
#define FLOAT_BINARY_FUNCTIONS(T, HEAD)                                                            \
  HEAD(atan2, T, T##_t, T##_store(out, oo, atan2(x, y));)                                          \
  HEAD(hypot, T, T##_t, T##_store(out, oo, hypot(x, y));)
#define INT_POWERS(T, HEAD)                                                                        \
  HEAD(pow, T, T##_t,                                                                              \
    T##_m result;                                                                                  \
    if (y < 0) {                                                                                   \
      result = x == 1 ? 1 : x == (T##_m)-1 ? ((y & 1) ? (T##_m)-1 : 1) : 0;                        \
    } else { /* square and multiply, wrapping */                                                   \
      T##_u r = 1, base = (T##_u)x;                                                                \
      for (T##_m e = y; e > 0; e >>= 1) {                                                          \
        if (e & 1) r *= base;                                                                      \
        base *= base;                                                                              \
      }                                                                                            \
      result = (T##_m)r;                                                                           \
    }                                                                                              \
    T##_store(out, oo, result);)
// The pointwise backwards of the activations, one kernel each instead of their composites'
// three to nine launches (kernels/composite/activation.cpp, kept for other devices): x is the
// incoming gradient, y the forward's input (threshold, gelu, silu) or output (sigmoid, tanh),
// in opmath, rounded once. gelu's exact form: Phi(y) + y phi(y); its tanh form: with t = tanh(u),
// u = sqrt(2 / pi) (y + 0.044715 y^3), (1 + t) / 2 + y (1 - t^2) du/dy / 2.
#define FLOAT_ACTIVATION_BACKWARDS(T, HEAD)                                                        \
  HEAD(gelu_backward_erf, T, T##_t,                                                                \
    T##_store(out, oo, x * (normal_cdf(y) + y * normal_pdf(y)));) /* common.h */                  \
  HEAD(gelu_backward_tanh, T, T##_t,                                                               \
    const T##_m beta = (T##_m)0.79788456080286535588, kappa = (T##_m)0.044715;                     \
    const T##_m t = tanh(beta * (y + kappa * y * y * y));                                          \
    const T##_m du = beta * (ONE(T) + (T##_m)3 * kappa * y * y);                                   \
    const T##_m d = (T##_m)0.5 * (ONE(T) + t) + (T##_m)0.5 * y * (ONE(T) - t * t) * du;            \
    T##_store(out, oo, x * (isinf(y) ? (T##_m)NAN : d));) /* PyTorch's NaN at the infinities */     \
  /* relu's (threshold_backward, alpha the threshold): a NaN y passes the gradient */            \
  HEAD(threshold_backward, T, T##_t, T##_store(out, oo, y <= alpha ? (T##_m)0 : x);)              \
  HEAD(sigmoid_backward, T, T##_t, T##_store(out, oo, x * y * (ONE(T) - y));)                      \
  HEAD(tanh_backward, T, T##_t, T##_store(out, oo, x * (ONE(T) - y * y));)                         \
  HEAD(silu_backward, T, T##_t,                                                                    \
    const T##_m s = ONE(T) / (ONE(T) + exp(-y));                                                   \
    T##_store(out, oo, x * s * (ONE(T) + y * (ONE(T) - s)));)
#define ALL_POWERS(HEAD_)                                                                          \
  XTEN_FLOAT_DTYPES(FLOAT_POWERS, HEAD_)                                                           \
  XTEN_FLOAT_DTYPES(FLOAT_BINARY_FUNCTIONS, HEAD_)                                                 \
  XTEN_FLOAT_DTYPES(FLOAT_ACTIVATION_BACKWARDS, HEAD_)                                             \
  XTEN_INT_DTYPES_HERE(INT_POWERS, HEAD_)
ALL_POWERS(BINARY_HEAD_ND)
ALL_POWERS(BINARY_HEAD_1D)

// ---- logical (bool out) and bitwise ops ------------------------------------------------------
#define LOGICAL(T, HEAD)                                                                           \
  HEAD(logical_and, T, uchar, out[oo] = x != 0 && y != 0;)                                         \
  HEAD(logical_or, T, uchar, out[oo] = x != 0 || y != 0;)                                          \
  HEAD(logical_xor, T, uchar, out[oo] = (x != 0) != (y != 0);)
#define BITWISE(T, HEAD)                                                                           \
  HEAD(bitwise_and, T, T##_t, T##_store(out, oo, (T##_m)(x & y));)                                 \
  HEAD(bitwise_or, T, T##_t, T##_store(out, oo, (T##_m)(x | y));)                                  \
  HEAD(bitwise_xor, T, T##_t, T##_store(out, oo, (T##_m)(x ^ y));)

#define ALL_LOGICAL(HEAD_)                                                                         \
  XTEN_FLOAT_DTYPES(LOGICAL, HEAD_)                                                                \
  XTEN_INT_DTYPES_HERE(LOGICAL, HEAD_)                                                             \
  XTEN_BOOL_HERE(LOGICAL, HEAD_)                                                                   \
  XTEN_INT_DTYPES_HERE(BITWISE, HEAD_)                                                             \
  XTEN_BOOL_HERE(BITWISE, HEAD_)
ALL_LOGICAL(BINARY_HEAD_ND)
ALL_LOGICAL(BINARY_HEAD_1D)

// ---- where and lerp: three inputs p, q, r (p of type P_T) -----------------------------------
#define TERNARY_HEAD_1D(NAME, T, P_T, ...)                                                         \
  KERNEL NAME##_##T##_1d(global T##_t* out, global const P_T* p, global const T##_t* q,            \
                         global const T##_t* r, long n, long so, long sp, long sq, long sr) {      \
    ELEMENTS(i, n) {                                                                               \
    const long oo = i * so, op = i * sp, oq = i * sq, orr = i * sr;                                \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }
#define TERNARY_HEAD_ND(NAME, T, P_T, ...)                                                         \
  KERNEL NAME##_##T(global T##_t* out, global const P_T* p, global const T##_t* q,                 \
                    global const T##_t* r, long n, int ndim, long8 sizes, long8 so,                \
                    long8 sp, long8 sq, long8 sr) {                                                \
    ELEMENTS(i, n) {                                                                               \
    long oo, op, oq, orr;                                                                          \
    strided_offsets4(i, ndim, sizes, so, sp, sq, sr, &oo, &op, &oq, &orr);                         \
    __VA_ARGS__                                                                                    \
  }                                                                                                \
  }

#define WHERE(T, HEAD)                                                                             \
  HEAD(where, T, uchar, T##_store(out, oo, p[op] ? T##_load(q, oq) : T##_load(r, orr));)
// PyTorch's two forms, each one fused multiply-add (as the CPU): weight 0 gives start and
// weight 1 gives end exactly.
#define LERP(T, HEAD)                                                                              \
  HEAD(lerp, T, T##_t,                                                                             \
    const T##_m s = T##_load(p, op), e = T##_load(q, oq), w = T##_load(r, orr);                    \
    T##_store(out, oo, fabs(w) < (T##_m)0.5 ? fma(w, e - s, s) : fma(w - (T##_m)1, e - s, e));)

#define ALL_TERNARY(HEAD_)                                                                         \
  XTEN_FLOAT_DTYPES(WHERE, HEAD_)                                                                  \
  XTEN_INT_DTYPES_HERE(WHERE, HEAD_)                                                               \
  XTEN_BOOL_HERE(WHERE, HEAD_)                                                                     \
  XTEN_FLOAT_DTYPES(LERP, HEAD_)
ALL_TERNARY(TERNARY_HEAD_ND)
ALL_TERNARY(TERNARY_HEAD_1D)
