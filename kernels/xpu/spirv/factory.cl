// factory: arange, linspace and the random factories. The random ones follow docs/random.md exactly
// (the same Philox words and mapping as kernels/cpu/factory.cpp). Host side:
// kernels/xpu/ops/factory.cpp.
#include "common.h"

// Philox 4x32-10 words for element `index` of the op that drew `offset` under `seed`.
static inline uint4 philox_words(ulong seed, ulong offset, ulong index) {
  uint c0 = (uint)index, c1 = (uint)(index >> 32), c2 = (uint)offset, c3 = (uint)(offset >> 32);
  uint k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    const ulong p0 = (ulong)0xD2511F53u * c0;
    const ulong p1 = (ulong)0xCD9E8D57u * c2;
    const uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0, n1 = (uint)p1;
    const uint n2 = (uint)(p0 >> 32) ^ c3 ^ k1, n3 = (uint)p0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return (uint4)(c0, c1, c2, c3);
}

// arange with integral arguments: start + i * step in (wrapping) int64.
#define ARANGE_INT(D, unused)                                                             \
  KERNEL arange_int_##D(global D##_t* out, long n, long start, long step) {               \
    ELEMENTS(i, n) D##_store(out, i, CONV_##D((long)((ulong)start + (ulong)i * (ulong)step))); \
  }
// arange with floating arguments, accumulated as the CPU does (double) in the f64 module,
// or in float where the device has no fp64 (docs/xpu_kernels.md).
#ifdef XTEN_F64
#define ACC double
#define ARANGE_ACC acc64
#else
#define ACC float
#define ARANGE_ACC acc32
#endif
#define ARANGE_FLOAT_(D, NAME)                                                            \
  KERNEL arange_##NAME##_##D(global D##_t* out, long n, ACC start, ACC step) {                   \
    ELEMENTS(i, n) D##_store(out, i, CONV_##D(start + (ACC)i * step));                    \
  }
#define ARANGE_FLOAT(D, NAME) ARANGE_FLOAT_(D, NAME)
// linspace from both ends (the last value is `end` exactly), in ACC as arange.
#define LINSPACE_(D, NAME)                                                                 \
  KERNEL linspace_##NAME##_##D(global D##_t* out, long n, ACC start, ACC end, ACC step,    \
                               long mid) {                                                 \
    ELEMENTS(i, n)                                                                         \
    D##_store(out, i, CONV_##D(i < mid ? start + step * (ACC)i : end - step * (ACC)(n - 1 - i))); \
  }
#define LINSPACE(D, NAME) LINSPACE_(D, NAME)

#define RAND_FLOAT(D, unused)                                                              \
  KERNEL rand_##D(global D##_t* out, long n, ulong seed, ulong offset) {                   \
    ELEMENTS(i, n) D##_store(out, i, UNIFORM_##D(philox_words(seed, offset, (ulong)i)));   \
  }                                                                                        \
  KERNEL randn_##D(global D##_t* out, long n, ulong seed, ulong offset) {                  \
    ELEMENTS(i, n) D##_store(out, i, NORMAL_##D(philox_words(seed, offset, (ulong)i)));    \
  }
#define UNIFORM_f32(r) ((float)((r).x >> 8) * 0x1.0p-24f)
#define UNIFORM_f16(r) ((float)((r).x >> 21) * 0x1.0p-11f)
#define UNIFORM_bf16(r) ((float)((r).x >> 24) * 0x1.0p-8f)
#define UNIFORM_f64(r) ((double)((((ulong)(r).x << 32) | (r).y) >> 11) * 0x1.0p-53)
// randn's float mapping is the CPU's, compiled from the same file (Note [Box-Muller in float
// arithmetic]): the same bits on both devices.
#define BM_FN static inline
#define BM_U32 uint
#define BM_I32 int
#define BM_AS_UINT(f) as_uint(f)
#define BM_AS_FLOAT(u) as_float(u)
#define BM_SQRT(x) sqrt(x)
#include "../../common/box_muller.inc"
static inline float normal_float(uint4 r) {
  return box_muller_float(r.x, r.y);
}
#define NORMAL_f32(r) normal_float(r)
#define NORMAL_f16(r) normal_float(r)
#define NORMAL_bf16(r) normal_float(r)

#define RANDINT(D, unused)                                                                 \
  KERNEL randint_##D(global D##_t* out, long n, ulong seed, ulong offset, long low,        \
                     ulong range) {                                                        \
    ELEMENTS(i, n) {                                                                       \
      const uint4 r = philox_words(seed, offset, (ulong)i);                                \
      const ulong v = (((ulong)r.x << 32) | r.y) % range;                                  \
      D##_store(out, i, CONV_##D((long)((ulong)low + v)));                                 \
    }                                                                                      \
  }

#define XTEN_INT_AND_NARROW_FLOAT(X, ...)                                                 \
  X(u8, __VA_ARGS__) X(i8, __VA_ARGS__) X(i16, __VA_ARGS__) X(i32, __VA_ARGS__)          \
  X(i64, __VA_ARGS__) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__) X(f32, __VA_ARGS__)

#ifndef XTEN_F64
XTEN_INT_AND_NARROW_FLOAT(ARANGE_INT, _)
XTEN_INT_AND_NARROW_FLOAT(ARANGE_FLOAT, ARANGE_ACC)
XTEN_INT_AND_NARROW_FLOAT(LINSPACE, ARANGE_ACC)
RAND_FLOAT(f16, _)
RAND_FLOAT(bf16, _)
RAND_FLOAT(f32, _)
XTEN_INT_AND_NARROW_FLOAT(RANDINT, _)
#else
static inline double normal_double(uint4 r) {
  const double u1 = ((double)((((ulong)r.x << 32) | r.y) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = (double)((((ulong)r.z << 32) | r.w) >> 11) * 0x1.0p-53;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
#define NORMAL_f64(r) normal_double(r)
ARANGE_INT(f64, _)
XTEN_INT_AND_NARROW_FLOAT(ARANGE_FLOAT, ARANGE_ACC)
ARANGE_FLOAT(f64, ARANGE_ACC)
XTEN_INT_AND_NARROW_FLOAT(LINSPACE, ARANGE_ACC)
LINSPACE(f64, ARANGE_ACC)
RAND_FLOAT(f64, _)
RANDINT(f64, _)
#endif
