// linalg: batched matrix products out[b] = a[b] @ b[b], 64x64 output tiles per work-group of
// 256 (4x4 per work-item) staged through local memory; operands may have any strides. Accumulates in float for
// the 16/32-bit floats, double for float64, wrapping int64 for integers (the CPU's results
// modulo the dtype). Host side: kernels/xpu/ops/linalg.cpp.
#include "common.h"

#define TILE 16
#define BLOCK 64

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

// Register blocking: a work-group of 16x16 work-items computes a 64x64 output tile, each
// work-item the 4x4 outputs at rows ty + 16 r and columns tx + 16 c (so that neighbouring
// work-items read neighbouring columns of the B tile). Per step of 16 along k, the A and B
// tiles (64x16 and 16x64) are staged in local memory, each work-item loading 4 of each.
// Products accumulate in k order, as the CPU's loop does for one output.
#define BMM(T, STEP)                                                                              \
  KERNEL bmm_##T(global T##_t* out, global const T##_t* a, global const T##_t* b, long n, long k, \
                 long m, long tiles_n, long tiles_m, long sab, long san, long sak, long sbb,     \
                 long sbk, long sbm, long sob, long son, long som) {                               \
    local T##_gacc ta[TILE][BLOCK + 1];                                                            \
    local T##_gacc tb[TILE][BLOCK + 1];                                                            \
    const long g = get_group_id(0);                                                                \
    const int l = (int)get_local_id(0), ty = l / TILE, tx = l % TILE;                              \
    const long per_batch = tiles_n * tiles_m;                                                      \
    const long bt = g / per_batch, rem = g - bt * per_batch;                                       \
    const long row0 = (rem / tiles_m) * BLOCK, col0 = (rem - (rem / tiles_m) * tiles_m) * BLOCK;   \
    global const T##_t* ab = a + bt * sab;                                                         \
    global const T##_t* bb = b + bt * sbb;                                                         \
    T##_gacc acc[4][4];                                                                            \
    for (int r = 0; r < 4; ++r)                                                                    \
      for (int c = 0; c < 4; ++c) acc[r][c] = 0;                                                   \
    for (long kt = 0; kt < k; kt += TILE) {                                                        \
      for (int q = 0; q < 4; ++q) {                                                                \
        const int e = l + XTEN_GROUP_SIZE * q;                                                     \
        const int ar = e / TILE, ak = e % TILE; /* A tile: row ar, column ak */                    \
        const long gr = row0 + ar, gk = kt + ak;                                                   \
        ta[ak][ar] = (gr < n && gk < k) ? (T##_gacc)T##_load(ab, gr * san + gk * sak) : 0;         \
        const int bk = e / BLOCK, bc = e % BLOCK; /* B tile: row bk, column bc */                  \
        const long hk = kt + bk, hc = col0 + bc;                                                   \
        tb[bk][bc] = (hk < k && hc < m) ? (T##_gacc)T##_load(bb, hk * sbk + hc * sbm) : 0;         \
      }                                                                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
      for (int kk = 0; kk < TILE; ++kk) {                                                          \
        T##_gacc av[4], bv[4];                                                                     \
        for (int r = 0; r < 4; ++r) av[r] = ta[kk][ty + TILE * r];                                 \
        for (int c = 0; c < 4; ++c) bv[c] = tb[kk][tx + TILE * c];                                 \
        for (int r = 0; r < 4; ++r)                                                                \
          for (int c = 0; c < 4; ++c) acc[r][c] = STEP(acc[r][c], av[r], bv[c]);                   \
      }                                                                                            \
      barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    }                                                                                              \
    for (int r = 0; r < 4; ++r)                                                                    \
      for (int c = 0; c < 4; ++c) {                                                                \
        const long row = row0 + ty + TILE * r, col = col0 + tx + TILE * c;                         \
        if (row < n && col < m) T##_store(out, bt * sob + row * son + col * som, CONV_##T(acc[r][c])); \
      }                                                                                            \
  }
#define BMM_FLOAT(T, unused) BMM(T, FMA_FLOAT)
#define BMM_INT(T, unused) BMM(T, FMA_INT)

XTEN_FLOAT_DTYPES(BMM_FLOAT, _)
XTEN_INT_DTYPES_HERE(BMM_INT, _)
