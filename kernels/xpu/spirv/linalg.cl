// linalg: batched matrix products out[b] = a[b] @ b[b]: 64x64 output tiles per work-group of
// 256 (4x4 per work-item) staged through local memory, for operands of any strides; and 8 x 32
// row strips per work-item on vector accumulators where B's and out's rows are contiguous (Note
// [Row strips] below). Accumulates in float for the 16/32-bit floats, double for float64,
// wrapping int64 for integers (the CPU's results modulo the dtype). Host side:
// kernels/xpu/ops/linalg.cpp.
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

// Note [Row strips]: where B and out have unit column stride (the usual case), a work-item
// computes an 8 x 32 block of one product in sixteen float16 accumulators: per step along k,
// two 16-wide loads of B's row, eight loads of A (each broadcast), sixteen vector multiply-adds.
// No local memory and no barrier, so PoCL keeps each work-item's k loop in vector registers;
// the tiled kernel above ran as scalar code there. [512, 1024] @ [1024, 1024] on the 2-core VM:
// 9 GFLOPS tiled, 28 with 8 x 16 blocks, 42 with 8 x 32, 34 with 12 x 32 (docs/xpu_kernels.md).
// Work-items are ordered with the row block fastest, so those running together share B's
// 32-column panel in cache. Each output accumulates in k order with separate multiply and add,
// as in the tiled kernel, so both give the same bits. Rows past n read row n - 1 and are not
// stored; a last block narrower than 32 columns loads B element by element.
#define STRIP_ROWS(X, T) X(0, T) X(1, T) X(2, T) X(3, T) X(4, T) X(5, T) X(6, T) X(7, T)
#define STRIP_ROW_OFFSET(r, T) const long ro##r = min(row0 + r, n - 1) * san;
#define STRIP_ZERO(r, T) float16 lo##r = (float16)(0.0f), hi##r = (float16)(0.0f);
#define STRIP_STEP(r, T)                                                                        \
  {                                                                                             \
    const float16 av = (float16)((float)T##_load(ab, ro##r + ak));                              \
    lo##r = lo##r + av * blo;                                                                   \
    hi##r = hi##r + av * bhi;                                                                   \
  }
#define STRIP_STORE(r, T)                                                                       \
  if (row0 + r < n) {                                                                           \
    float row[32];                                                                              \
    vstore16(lo##r, 0, row);                                                                    \
    vstore16(hi##r, 1, row);                                                                    \
    global T##_t* o = out + bt * sob + (row0 + r) * son + col0;                                 \
    for (int c = 0; c < cols; ++c) T##_store(o, c, CONV_##T(row[c]));                           \
  }
#define BMM_STRIP(T, unused)                                                                    \
  KERNEL bmm_strip_##T(global T##_t* out, global const T##_t* a, global const T##_t* b, long n, \
                       long k, long m, long blocks_n, long blocks_m, long sab, long san,        \
                       long sak, long sbb, long sbk, long sob, long son, long total) {          \
    ELEMENTS(w, total) {                                                                        \
      const long per_batch = blocks_n * blocks_m;                                               \
      const long bt = w / per_batch, rem = w - bt * per_batch;                                  \
      const long cb = rem / blocks_n, rb = rem - cb * blocks_n;                                 \
      const long row0 = rb * 8, col0 = cb * 32;                                                 \
      global const T##_t* ab = a + bt * sab;                                                    \
      global const T##_t* bb = b + bt * sbb + col0;                                             \
      STRIP_ROWS(STRIP_ROW_OFFSET, T)                                                           \
      STRIP_ROWS(STRIP_ZERO, T)                                                                 \
      const int cols = (int)min(32L, m - col0);                                                 \
      if (cols == 32) {                                                                         \
        for (long kk = 0; kk < k; ++kk) {                                                       \
          const float16 blo = T##_load16(bb + kk * sbk), bhi = T##_load16(bb + kk * sbk + 16);  \
          const long ak = kk * sak;                                                             \
          STRIP_ROWS(STRIP_STEP, T)                                                             \
        }                                                                                       \
      } else {                                                                                  \
        for (long kk = 0; kk < k; ++kk) {                                                       \
          float row[32];                                                                        \
          for (int c = 0; c < 32; ++c) row[c] = c < cols ? (float)T##_load(bb, kk * sbk + c) : 0.0f; \
          const float16 blo = vload16(0, row), bhi = vload16(1, row);                           \
          const long ak = kk * sak;                                                             \
          STRIP_ROWS(STRIP_STEP, T)                                                             \
        }                                                                                       \
      }                                                                                         \
      STRIP_ROWS(STRIP_STORE, T)                                                                \
    }                                                                                           \
  }
#ifndef XTEN_F64
BMM_STRIP(f32, _)
BMM_STRIP(bf16, _)
BMM_STRIP(f16, _)
#endif
