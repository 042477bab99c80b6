// linalg: batched matrix products out[b] = a[b] @ b[b] with 16x16 tiles in local memory. One
// work-group of 256 per output tile; operands may have any strides. Accumulates in float for
// the 16/32-bit floats, double for float64, wrapping int64 for integers (the CPU's results
// modulo the dtype). Host side: kernels/xpu/ops/linalg.cpp.
#include "common.h"

#define TILE 16

typedef long u8_gacc;
typedef long i8_gacc;
typedef long i16_gacc;
typedef long i32_gacc;
typedef long i64_gacc;
typedef float f16_gacc;
typedef float bf16_gacc;
typedef float f32_gacc;
#ifdef XTEN_F64
typedef double f64_gacc;
#endif

#define FMA_FLOAT(acc, x, y) ((acc) + (x) * (y))
#define FMA_INT(acc, x, y) ((long)((ulong)(acc) + (ulong)(x) * (ulong)(y)))

#define BMM(T, STEP)                                                                              \
  KERNEL bmm_##T(global T##_t* out, global const T##_t* a, global const T##_t* b, long n, long k, \
                 long m, long tiles_n, long tiles_m, long sab, long san, long sak, long sbb,     \
                 long sbk, long sbm, long sob, long son, long som) {                               \
    local T##_gacc ta[TILE][TILE + 1];                                                             \
    local T##_gacc tb[TILE][TILE + 1];                                                             \
    const long g = get_group_id(0);                                                                \
    const int l = (int)get_local_id(0), ty = l / TILE, tx = l % TILE;                              \
    const long per_batch = tiles_n * tiles_m;                                                      \
    const long bt = g / per_batch, rem = g - bt * per_batch;                                       \
    const long tr = rem / tiles_m, tc = rem - tr * tiles_m;                                        \
    const long row = tr * TILE + ty, col = tc * TILE + tx;                                         \
    global const T##_t* ab = a + bt * sab;                                                         \
    global const T##_t* bb = b + bt * sbb;                                                         \
    T##_gacc acc = 0;                                                                              \
    for (long kt = 0; kt < k; kt += TILE) {                                                        \
      ta[ty][tx] = (row < n && kt + tx < k) ? (T##_gacc)T##_load(ab, row * san + (kt + tx) * sak) : 0; \
      tb[ty][tx] = (kt + ty < k && col < m) ? (T##_gacc)T##_load(bb, (kt + ty) * sbk + col * sbm) : 0; \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (int kk = 0; kk < TILE; ++kk) acc = STEP(acc, ta[ty][kk], tb[kk][tx]);                   \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    }                                                                                              \
    if (row < n && col < m) T##_store(out, bt * sob + row * son + col * som, CONV_##T(acc));       \
  }
#define BMM_FLOAT(T, unused) BMM(T, FMA_FLOAT)
#define BMM_INT(T, unused) BMM(T, FMA_INT)

XTEN_FLOAT_DTYPES(BMM_FLOAT, _)
XTEN_INT_DTYPES_HERE(BMM_INT, _)
