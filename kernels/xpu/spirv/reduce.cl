// reduce: row reductions. The host lays the input out as `outer` contiguous rows of `inner`
// elements in the output dtype (kernels/common/reduce_rows.h). Pass 1 (reduce_<op>_<t>): one
// work-group of 256 per (row, chunk) accumulates its chunk in the accumulator type and tree-
// reduces it in local memory into partial[row * chunks + chunk]. Pass 2
// (reduce_<op>_finish_<t>): one work-item per row combines its chunks, divides for mean, and
// stores in the output dtype. No sub-groups: the tree is over local memory only.
#include "common.h"

// Accumulator types: float for the 16/32-bit floats, double for float64, int64 (wrapping
// through ulong) for integers and bool, as kernels/cpu/reduce.cpp.
typedef long b8_acc;
typedef long u8_acc;
typedef long i8_acc;
typedef long i16_acc;
typedef long i32_acc;
typedef long i64_acc;
typedef float f16_acc;
typedef float bf16_acc;
typedef float f32_acc;
#ifdef XTEN_F64
typedef double f64_acc;
#endif

#define IS_INT_b8 1
#define IS_INT_u8 1
#define IS_INT_i8 1
#define IS_INT_i16 1
#define IS_INT_i32 1
#define IS_INT_i64 1
#define IS_INT_f16 0
#define IS_INT_bf16 0
#define IS_INT_f32 0
#define IS_INT_f64 0

// Wrapping addition/multiplication for integer accumulators, plain for floats.
#define ADD(T, a, b) (IS_INT_##T ? (T##_acc)((ulong)(a) + (ulong)(b)) : (a) + (b))
#define MUL(T, a, b) (IS_INT_##T ? (T##_acc)((ulong)(a) * (ulong)(b)) : (a) * (b))
// NaN-propagating max/min (integers never see NaN).
#define MAXV(a, b) ((a) != (a) ? (a) : ((b) != (b) || (b) > (a)) ? (b) : (a))
#define MINV(a, b) ((a) != (a) ? (a) : ((b) != (b) || (b) < (a)) ? (b) : (a))

// Each element enters as MAP(x) (the identity but for the norms' sums of squares and of
// magnitudes); the tree and pass 2 combine as the op.
#define PASS1(OP, T, INIT, COMBINE) PASS1_MAP(OP, T, INIT, COMBINE, IDENTITY)
#define IDENTITY(x) (x)
#define SQUARE(x) ((x) * (x))
#define PASS1_MAP(OP, T, INIT, COMBINE, MAP)                                                      \
  KERNEL reduce_##OP##_##T(global T##_acc* partial, global const T##_t* in, long inner,          \
                           long chunk, long chunks) {                                             \
    local T##_acc scratch[XTEN_GROUP_SIZE];                                                       \
    const long g = get_group_id(0);                                                               \
    const int l = (int)get_local_id(0);                                                           \
    const long row = g / chunks, c = g - row * chunks;                                            \
    const long lo = c * chunk, hi = min(inner, lo + chunk);                                       \
    global const T##_t* p = in + row * inner;                                                     \
    T##_acc acc = INIT;                                                                           \
    for (long j = lo + l; j < hi; j += XTEN_GROUP_SIZE) {                                         \
      const T##_acc x = (T##_acc)T##_load(p, j);                                                  \
      acc = COMBINE(acc, MAP(x));                                                                 \
    }                                                                                             \
    scratch[l] = acc;                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    for (int s = XTEN_GROUP_SIZE / 2; s > 0; s >>= 1) {                                           \
      if (l < s) scratch[l] = COMBINE(scratch[l], scratch[l + s]);                                \
      barrier(CLK_LOCAL_MEM_FENCE);                                                               \
    }                                                                                             \
    if (l == 0) partial[g] = scratch[0];                                                          \
  }

#define PASS2(OP, T, INIT, COMBINE)                                                               \
  KERNEL reduce_##OP##_finish_##T(global T##_t* out, global const T##_acc* partial, long outer,  \
                                  long chunks, T##_acc divisor) {                                 \
    ELEMENTS(i, outer) {                                                                          \
      T##_acc acc = INIT;                                                                         \
      for (long c = 0; c < chunks; ++c) acc = COMBINE(acc, partial[i * chunks + c]);              \
      if (!IS_INT_##T && divisor != (T##_acc)1) acc = acc / divisor;                              \
      T##_store(out, i, CONV_##T(acc));                                                           \
    }                                                                                             \
  }

#define SUM_COMBINE(a, b) ADD(T_, a, b)
#define REDUCTIONS(T, unused)                                                                     \
  PASS1(sum, T, (T##_acc)0, SUM_##T) PASS2(sum, T, (T##_acc)0, SUM_##T)                          \
  PASS1(prod, T, (T##_acc)1, PROD_##T) PASS2(prod, T, (T##_acc)1, PROD_##T)                      \
  PASS1(amax, T, LOWEST_##T, MAXV) PASS2(amax, T, LOWEST_##T, MAXV)                              \
  PASS1(amin, T, HIGHEST_##T, MINV) PASS2(amin, T, HIGHEST_##T, MINV)

#define DEFINE_COMBINERS(T, unused)                                                               \
  static inline T##_acc SUM_##T(T##_acc a, T##_acc b) { return ADD(T, a, b); }                   \
  static inline T##_acc PROD_##T(T##_acc a, T##_acc b) { return MUL(T, a, b); }

// Bounds for max/min starts (of the accumulator's range for the dtype's values).
#define LOWEST_b8 0
#define HIGHEST_b8 1
#define LOWEST_u8 0
#define HIGHEST_u8 255
#define LOWEST_i8 (-128)
#define HIGHEST_i8 127
#define LOWEST_i16 (-32768)
#define HIGHEST_i16 32767
#define LOWEST_i32 ((long)INT_MIN)
#define HIGHEST_i32 ((long)INT_MAX)
#define LOWEST_i64 LONG_MIN
#define HIGHEST_i64 LONG_MAX
#define LOWEST_f16 (-INFINITY)
#define HIGHEST_f16 INFINITY
#define LOWEST_bf16 (-INFINITY)
#define HIGHEST_bf16 INFINITY
#define LOWEST_f32 (-INFINITY)
#define HIGHEST_f32 INFINITY
#define LOWEST_f64 (-(double)INFINITY)
#define HIGHEST_f64 ((double)INFINITY)

XTEN_FLOAT_DTYPES(DEFINE_COMBINERS, _)
XTEN_INT_DTYPES_HERE(DEFINE_COMBINERS, _)
XTEN_BOOL_HERE(DEFINE_COMBINERS, _)
XTEN_FLOAT_DTYPES(REDUCTIONS, _)
// The 1- and 2-norms' sums (norm's host takes the root): one pass, not abs / square / sum.
#define NORM_SUMS(T, unused)                                                                      \
  PASS1_MAP(sumsq, T, (T##_acc)0, SUM_##T, SQUARE) PASS2(sumsq, T, (T##_acc)0, SUM_##T)          \
  PASS1_MAP(asum, T, (T##_acc)0, SUM_##T, fabs) PASS2(asum, T, (T##_acc)0, SUM_##T)
XTEN_FLOAT_DTYPES(NORM_SUMS, _)

// ---- sums of the columns of a contiguous [rows, cols] matrix (floating) ----------------------
// The reduced dims lead the input (a broadcast's gradient, a channels-last batch's per-channel
// sums): one work-item per (part of rows_per_part rows, column), consecutive work-items on
// consecutive columns (PoCL runs a work-group's items as vector lanes), the partial sums in
// the accumulator type; then one work-item per column adds its parts in order and divides.
// The row path would need a transposing copy of the whole input first.
#define COLUMN_SUMS(T, unused)                                                                    \
  KERNEL reduce_sum_cols_##T(global T##_acc* partial, global const T##_t* in, long rows,         \
                             long cols, long rows_per_part, long n) {                            \
    ELEMENTS(e, n) {                                                                              \
      const long k = e % cols, r0 = (e / cols) * rows_per_part;                                   \
      const long r1 = min(rows, r0 + rows_per_part);                                              \
      T##_acc acc = 0;                                                                            \
      for (long r = r0; r < r1; ++r) acc += (T##_acc)T##_load(in, r * cols + k);                  \
      partial[e] = acc;                                                                           \
    }                                                                                             \
  }                                                                                               \
  KERNEL reduce_sum_cols_finish_##T(global T##_t* out, global const T##_acc* partial, long cols,  \
                                    long parts, T##_acc divisor) {                                \
    ELEMENTS(k, cols) {                                                                           \
      T##_acc acc = 0;                                                                            \
      for (long q = 0; q < parts; ++q) acc += partial[q * cols + k];                              \
      if (divisor != (T##_acc)1) acc = acc / divisor;                                             \
      T##_store(out, k, CONV_##T(acc));                                                           \
    }                                                                                             \
  }
XTEN_FLOAT_DTYPES(COLUMN_SUMS, _)
XTEN_INT_DTYPES_HERE(REDUCTIONS, _)
XTEN_BOOL_HERE(REDUCTIONS, _)

// ---- value and index of the extreme of each row (max.dim, min.dim, argmax, argmin) ----------
// A work-group per chunk of a row (the host runs a second pass over the chunks' partials for
// long rows): work-item l scans elements l, l + 256, ... keeping the first of the best, then
// a local-memory tree keeps (NaN first, then the larger or smaller value, then the smaller
// index): the CPU's answer (the first NaN, else the first extreme).
#define BETTER(IS_MAX, v, i, bv, bi)                                                              \
  ((bv) != (bv) ? ((v) != (v) && (i) < (bi))                                                      \
   : (v) != (v) ? 1                                                                               \
   : (IS_MAX ? (v) > (bv) : (v) < (bv)) ? 1                                                       \
   : ((v) == (bv) && (i) < (bi)))
// Work-group g covers chunk g % chunks of row g / chunks (elements [c*chunk, c*chunk+chunk)
// of a row of `inner`) and writes its (value, index) to values[g], indices[g]. With has_idx
// the element indices come from in_idx (the second pass, over the first pass's partials).
#define ARG_EXTREME(OP, IS_MAX, T)                                                                \
  KERNEL OP##_index_##T(global T##_t* values, global long* indices, global const T##_t* in,      \
                        global const long* in_idx, int has_idx, long inner, long chunk,          \
                        long chunks) {                                                            \
    local T##_m sv[XTEN_GROUP_SIZE];                                                              \
    local long si[XTEN_GROUP_SIZE];                                                               \
    const long g = get_group_id(0), row = g / chunks, lo = (g - row * chunks) * chunk;            \
    const long hi = min(inner, lo + chunk);                                                       \
    const int l = (int)get_local_id(0);                                                           \
    global const T##_t* p = in + row * inner;                                                     \
    T##_m best = 0;                                                                               \
    long at = LONG_MAX;                                                                           \
    for (long j = lo + l; j < hi; j += XTEN_GROUP_SIZE) {                                         \
      const T##_m v = T##_load(p, j);                                                             \
      const long idx = has_idx ? in_idx[row * inner + j] : j;                                     \
      if (at == LONG_MAX || BETTER(IS_MAX, v, idx, best, at)) {                                   \
        best = v;                                                                                 \
        at = idx;                                                                                 \
      }                                                                                           \
    }                                                                                             \
    sv[l] = best;                                                                                 \
    si[l] = at;                                                                                   \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    for (int s = XTEN_GROUP_SIZE / 2; s > 0; s >>= 1) {                                           \
      if (l < s && si[l + s] != LONG_MAX &&                                                       \
          (si[l] == LONG_MAX || BETTER(IS_MAX, sv[l + s], si[l + s], sv[l], si[l]))) {            \
        sv[l] = sv[l + s];                                                                        \
        si[l] = si[l + s];                                                                        \
      }                                                                                           \
      barrier(CLK_LOCAL_MEM_FENCE);                                                               \
    }                                                                                             \
    if (l == 0) {                                                                                 \
      T##_store(values, g, sv[0]);                                                                \
      indices[g] = si[0];                                                                         \
    }                                                                                             \
  }
#define ARG_EXTREMES(T, unused) ARG_EXTREME(max, 1, T) ARG_EXTREME(min, 0, T)
XTEN_FLOAT_DTYPES(ARG_EXTREMES, _)
XTEN_INT_DTYPES_HERE(ARG_EXTREMES, _)
XTEN_BOOL_HERE(ARG_EXTREMES, _)

// ---- inclusive scans along contiguous rows (cumsum, cumprod) ---------------------------------
// One work-group per row: work-item l scans its block of ceil(n / 256) consecutive elements,
// the block totals get an exclusive prefix in local memory, then each block is scanned again
// from its prefix. Floats accumulate in float (double for float64), integers wrap.
#define SCAN(OP, T, INIT, COMBINE)                                                                \
  KERNEL scan_##OP##_##T(global T##_t* out, global const T##_t* in, long n) {                    \
    local T##_acc totals[XTEN_GROUP_SIZE];                                                        \
    const long row = get_group_id(0);                                                             \
    const int l = (int)get_local_id(0);                                                           \
    const long block = (n + XTEN_GROUP_SIZE - 1) / XTEN_GROUP_SIZE;                               \
    const long lo = min(n, l * block), hi = min(n, lo + block);                                   \
    global const T##_t* p = in + row * n;                                                         \
    global T##_t* q = out + row * n;                                                              \
    T##_acc acc = INIT;                                                                           \
    for (long j = lo; j < hi; ++j) acc = COMBINE(acc, (T##_acc)T##_load(p, j));                   \
    totals[l] = acc;                                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    if (l == 0) {                                                                                 \
      T##_acc run = INIT;                                                                         \
      for (int k = 0; k < XTEN_GROUP_SIZE; ++k) {                                                 \
        const T##_acc t = totals[k];                                                              \
        totals[k] = run;                                                                          \
        run = COMBINE(run, t);                                                                    \
      }                                                                                           \
    }                                                                                             \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                 \
    acc = totals[l];                                                                              \
    for (long j = lo; j < hi; ++j) {                                                              \
      acc = COMBINE(acc, (T##_acc)T##_load(p, j));                                                \
      T##_store(q, j, CONV_##T(acc));                                                             \
    }                                                                                             \
  }
#define SCANS(T, unused) SCAN(sum, T, (T##_acc)0, SUM_##T) SCAN(prod, T, (T##_acc)1, PROD_##T)
XTEN_FLOAT_DTYPES(SCANS, _)
XTEN_INT_DTYPES_HERE(SCANS, _)
