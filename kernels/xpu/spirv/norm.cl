// norm: layer_norm and group_norm forward, and the backward of batch_norm and layer_norm, in
// opmath, as kernels/cpu/norm.cpp computes them (Note [Normalization forward]; docs/autograd.md,
// "Fused backward kernels"). The statistics are recomputed from the input
// (training) or come from the running ones; weight, running statistics and the weight and bias
// gradients are opmath arrays (the host converts them). Host side: kernels/xpu/ops/norm.cpp.
#include "common.h"

// A work-group's sum of v (each work-item's share), returned to every work-item.
#define GROUP_SUM(T, scratch, l, v, result)                                                        \
  scratch[l] = (v);                                                                                \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  TREE(PLUS, scratch, l)                                                                           \
  result = scratch[0];                                                                             \
  barrier(CLK_LOCAL_MEM_FENCE);

// A row's mean and 1 / sqrt(var + eps) (two passes over its n elements, element j at x[AT(j)]),
// to every work-item.
#define ROW_STATS_AT(T, scratch, l, x, AT, n, eps, mean, rstd)                                     \
  {                                                                                                \
    T##_m acc = 0, var;                                                                            \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) acc += T##_load(x, AT(j));                       \
    GROUP_SUM(T, scratch, l, acc, mean)                                                            \
    mean /= n;                                                                                     \
    acc = 0;                                                                                       \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                                \
      const T##_m d = T##_load(x, AT(j)) - mean;                                                   \
      acc += d * d;                                                                                \
    }                                                                                              \
    GROUP_SUM(T, scratch, l, acc, var)                                                             \
    rstd = 1 / sqrt(var / n + eps);                                                                \
  }
// Note [Short rows]: a work-group per row leaves most of its 256 work-items idle on a short row
// and pays its barriers and trees per row; for rows of at most 128 elements (a small
// transformer's width) layer_norm and its backward give each work-item a whole row instead,
// the same formulas in one work-item's order (a GPT step with rows of 64 on the 2-core VM: the
// forwards 8.8 -> 1.9 ms, the backwards' rows 16.2 -> 2.2 ms). ROW_STATS_SERIAL is ROW_STATS
// for one work-item.
#define ROW_STATS_SERIAL(T, x, base, n, eps, mean, rstd)                                           \
  {                                                                                                \
    T##_m acc = 0;                                                                                 \
    for (long j = 0; j < n; ++j) acc += T##_load(x, base + j);                                     \
    mean = acc / n;                                                                                \
    acc = 0;                                                                                       \
    for (long j = 0; j < n; ++j) {                                                                 \
      const T##_m d = T##_load(x, base + j) - mean;                                                \
      acc += d * d;                                                                                \
    }                                                                                              \
    rstd = 1 / sqrt(acc / n + eps);                                                                \
  }
// The same over the contiguous row x[base, base + n).
#define ROW_AT(j) (base + (j))
#define ROW_STATS(T, scratch, l, x, base, n, eps, mean, rstd)                                      \
  ROW_STATS_AT(T, scratch, l, x, ROW_AT, n, eps, mean, rstd)

// batch_norm over an [n, channels, inner] input: one work-group per channel c, its elements
// k = i * inner + j (batch i, position j) at i * channels * inner + c * inner + j.
#define BATCH_NORM_BACKWARD(T, unused)                                                             \
  KERNEL batch_norm_backward_##T(global T##_t* dx, global T##_m* dw, global T##_m* db,             \
                                 global const T##_t* g, global const T##_t* x,                     \
                                 global const T##_m* w, global const T##_m* rm,                    \
                                 global const T##_m* rv, long n, long channels, long inner,        \
                                 int training, int has_weight, T##_m eps) {                        \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long c = get_group_id(0), count = n * inner;                                             \
    const int l = (int)get_local_id(0);                                                            \
    T##_m mean, rstd, acc;                                                                         \
    if (training) {                                                                                \
      acc = 0;                                                                                     \
      for (long k = l; k < count; k += XTEN_GROUP_SIZE)                                            \
        acc += T##_load(x, (k / inner) * channels * inner + c * inner + k % inner);                \
      GROUP_SUM(T, scratch, l, acc, mean)                                                          \
      mean = count > 0 ? mean / count : 0;                                                         \
      acc = 0;                                                                                     \
      for (long k = l; k < count; k += XTEN_GROUP_SIZE) {                                          \
        const T##_m d = T##_load(x, (k / inner) * channels * inner + c * inner + k % inner) - mean;\
        acc += d * d;                                                                              \
      }                                                                                            \
      T##_m var;                                                                                   \
      GROUP_SUM(T, scratch, l, acc, var)                                                           \
      rstd = 1 / sqrt((count > 0 ? var / count : 0) + eps);                                       \
    } else {                                                                                       \
      mean = rm[c];                                                                                \
      rstd = 1 / sqrt(rv[c] + eps);                                                                \
    }                                                                                              \
    T##_m sg_part = 0, sgx_part = 0;                                                               \
    for (long k = l; k < count; k += XTEN_GROUP_SIZE) {                                            \
      const long at = (k / inner) * channels * inner + c * inner + k % inner;                      \
      const T##_m gv = T##_load(g, at);                                                            \
      sg_part += gv;                                                                               \
      sgx_part += gv * (T##_load(x, at) - mean);                                                   \
    }                                                                                              \
    T##_m sg, sgx;                                                                                 \
    GROUP_SUM(T, scratch, l, sg_part, sg)                                                          \
    GROUP_SUM(T, scratch, l, sgx_part, sgx)                                                        \
    const T##_m wc = has_weight ? w[c] : (T##_m)1;                                                 \
    if (l == 0) {                                                                                  \
      dw[c] = sgx * rstd;                                                                          \
      db[c] = sg;                                                                                  \
    }                                                                                              \
    /* dx = w rstd (g - mean(g) - xhat mean(g xhat)) in training, w rstd g in evaluation */        \
    const bool stats = training && count > 0;                                                      \
    const T##_m mg = stats ? sg / count : 0, mgx = stats ? sgx * rstd / count : 0;                 \
    for (long k = l; k < count; k += XTEN_GROUP_SIZE) {                                            \
      const long at = (k / inner) * channels * inner + c * inner + k % inner;                      \
      const T##_m xhat = (T##_load(x, at) - mean) * rstd;                                          \
      T##_store(dx, at, wc * rstd * (T##_load(g, at) - mg - xhat * mgx));                          \
    }                                                                                              \
  }

// batch_norm's training statistics (norms::batch_norm_stats) over an [n, channels, inner] input,
// or a channels-last one ([n * inner, channels] rows, `channels_last`): one work-group per
// channel, the mean and the biased variance (two passes, as the backward's).
#define BN_STATS_AT(k)                                                                             \
  (channels_last ? (k) * channels + c : ((k) / inner) * channels * inner + c * inner + (k) % inner)
#define BATCH_NORM_STATS(T, unused)                                                                \
  KERNEL batch_norm_stats_##T(global T##_m* mean_out, global T##_m* var_out,                       \
                              global const T##_t* x, long n, long channels, long inner,            \
                              int channels_last) {                                                 \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long c = get_group_id(0), count = n * inner;                                             \
    const int l = (int)get_local_id(0);                                                            \
    T##_m acc = 0, mean, var;                                                                      \
    for (long k = l; k < count; k += XTEN_GROUP_SIZE) acc += T##_load(x, BN_STATS_AT(k));          \
    GROUP_SUM(T, scratch, l, acc, mean)                                                            \
    mean /= count; /* 0 / 0: NaN statistics for an empty input, as the composite's */             \
    acc = 0;                                                                                       \
    for (long k = l; k < count; k += XTEN_GROUP_SIZE) {                                            \
      const T##_m d = T##_load(x, BN_STATS_AT(k)) - mean;                                          \
      acc += d * d;                                                                                \
    }                                                                                              \
    GROUP_SUM(T, scratch, l, acc, var)                                                             \
    if (l == 0) {                                                                                  \
      mean_out[c] = mean;                                                                          \
      var_out[c] = var / count;                                                                    \
    }                                                                                              \
  }

// batch_norm's y = x * scale[c] + shift[c] (the CPU's order), one work-item per element; element
// i's channel is (i / inner) % channels (inner 1 for a channels-last input).
#define BATCH_NORM_APPLY(T, unused)                                                                \
  KERNEL batch_norm_apply_##T(global T##_t* y, global const T##_t* x,                              \
                              global const T##_m* scale, global const T##_m* shift,                \
                              long channels, long inner, long total) {                             \
    ELEMENTS(i, total) {                                                                           \
      const long c = (i / inner) % channels;                                                       \
      T##_store(y, i, T##_load(x, i) * scale[c] + shift[c]);                                       \
    }                                                                                              \
  }

// layer_norm over [rows, n] (n = the normalized elements): one work-group per row computes the
// row's statistics (kept in mean_out and rstd_out for the next kernel) and its input gradient.
// layer_norm_backward's per-element steps: the sums of g w and g w xhat, then dx.
#define LN_BACKWARD_SUMS(T, j)                                                                     \
  {                                                                                                \
    const T##_m gw = T##_load(g, base + (j)) * (has_weight ? w[j] : (T##_m)1);                     \
    a_part += gw;                                                                                  \
    b_part += gw * (T##_load(x, base + (j)) - mean) * rstd;                                        \
  }
#define LN_BACKWARD_DX(T, j)                                                                       \
  {                                                                                                \
    const T##_m gw = T##_load(g, base + (j)) * (has_weight ? w[j] : (T##_m)1);                     \
    const T##_m xhat = (T##_load(x, base + (j)) - mean) * rstd;                                    \
    T##_store(dx, base + (j), rstd * (gw - a / n - xhat * (b / n)));                               \
  }
// layer_norm_backward_rows_<t>: the same with a work-item per row (Note [Short rows]).
#define LAYER_NORM_BACKWARD(T, unused)                                                             \
  KERNEL layer_norm_backward_##T(global T##_t* dx, global T##_m* mean_out, global T##_m* rstd_out, \
                                 global const T##_t* g, global const T##_t* x,                     \
                                 global const T##_m* w, long n, int has_weight, T##_m eps) {       \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long row = get_group_id(0), base = row * n;                                              \
    const int l = (int)get_local_id(0);                                                            \
    T##_m mean, rstd;                                                                              \
    ROW_STATS(T, scratch, l, x, base, n, eps, mean, rstd)                                          \
    T##_m a_part = 0, b_part = 0;                                                                  \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) LN_BACKWARD_SUMS(T, j)                           \
    T##_m a, b;                                                                                    \
    GROUP_SUM(T, scratch, l, a_part, a)                                                            \
    GROUP_SUM(T, scratch, l, b_part, b)                                                            \
    if (l == 0) {                                                                                  \
      mean_out[row] = mean;                                                                        \
      rstd_out[row] = rstd;                                                                        \
    }                                                                                              \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) LN_BACKWARD_DX(T, j)                             \
  }                                                                                                \
  KERNEL layer_norm_backward_rows_##T(global T##_t* dx, global T##_m* mean_out,                    \
                                      global T##_m* rstd_out, global const T##_t* g,               \
                                      global const T##_t* x, global const T##_m* w, long n,        \
                                      int has_weight, T##_m eps, long rows) {                      \
    ELEMENTS(row, rows) {                                                                          \
      const long base = row * n;                                                                   \
      T##_m mean, rstd;                                                                            \
      ROW_STATS_SERIAL(T, x, base, n, eps, mean, rstd)                                             \
      T##_m a_part = 0, b_part = 0;                                                                \
      for (long j = 0; j < n; ++j) LN_BACKWARD_SUMS(T, j)                                          \
      const T##_m a = a_part, b = b_part;                                                          \
      mean_out[row] = mean;                                                                        \
      rstd_out[row] = rstd;                                                                        \
      for (long j = 0; j < n; ++j) LN_BACKWARD_DX(T, j)                                            \
    }                                                                                              \
  }

// Its weight and bias gradients as column sums over the rows (as reduce.cl's reduce_sum_cols):
// one work-item per (part of `per` rows, normalized element j), consecutive work-items on
// consecutive j (PoCL runs them as vector lanes), then one per j adding its parts in order. A
// work-item per j walking every row ran on n / 256 work-groups with a strided walk each: [4096,
// 768] took 70-190 ms on the 2-core VM.
#define LAYER_NORM_BACKWARD_AFFINE(T, unused)                                                      \
  KERNEL layer_norm_backward_affine_##T(global T##_m* pw, global T##_m* pb, global const T##_t* g, \
                                        global const T##_t* x, global const T##_m* mean,           \
                                        global const T##_m* rstd, long rows, long n, long per,     \
                                        long total) {                                              \
    ELEMENTS(e, total) {                                                                           \
      const long j = e % n, r0 = (e / n) * per, r1 = min(rows, r0 + per);                          \
      T##_m sw = 0, sb = 0;                                                                        \
      for (long r = r0; r < r1; ++r) {                                                             \
        const T##_m gv = T##_load(g, r * n + j);                                                   \
        sw += gv * (T##_load(x, r * n + j) - mean[r]) * rstd[r];                                   \
        sb += gv;                                                                                  \
      }                                                                                            \
      pw[e] = sw;                                                                                  \
      pb[e] = sb;                                                                                  \
    }                                                                                              \
  }                                                                                                \
  KERNEL layer_norm_backward_affine_finish_##T(global T##_m* dw, global T##_m* db,                 \
                                               global const T##_m* pw, global const T##_m* pb,     \
                                               long n, long parts) {                               \
    ELEMENTS(j, n) {                                                                               \
      T##_m sw = 0, sb = 0;                                                                        \
      for (long q = 0; q < parts; ++q) {                                                           \
        sw += pw[q * n + j];                                                                       \
        sb += pb[q * n + j];                                                                       \
      }                                                                                            \
      dw[j] = sw;                                                                                  \
      db[j] = sb;                                                                                  \
    }                                                                                              \
  }

// layer_norm over [rows, n]: one work-group per row, its statistics and then
// y = (x - mean) rstd w + b. The composite took seven kernels and three temporaries (115-185x
// the CPU in the XPU sweep, against 7-10x for plain pointwise ops).
// Element j of layer_norm's output: (x - mean) rstd w + b.
#define LAYER_NORM_OUT(T, j)                                                                       \
  {                                                                                                \
    T##_m v = (T##_load(x, base + (j)) - mean) * rstd;                                             \
    if (has_weight) v *= w[j];                                                                     \
    if (has_bias) v += b[j];                                                                       \
    T##_store(y, base + (j), v);                                                                   \
  }
// layer_norm_rows_<t>: the same with a work-item per row (Note [Short rows]).
#define LAYER_NORM(T, unused)                                                                      \
  KERNEL layer_norm_##T(global T##_t* y, global const T##_t* x, global const T##_m* w,             \
                        global const T##_m* b, long n, int has_weight, int has_bias, T##_m eps) {  \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long base = get_group_id(0) * n;                                                         \
    const int l = (int)get_local_id(0);                                                            \
    T##_m mean, rstd;                                                                              \
    ROW_STATS(T, scratch, l, x, base, n, eps, mean, rstd)                                          \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) LAYER_NORM_OUT(T, j)                             \
  }                                                                                                \
  KERNEL layer_norm_rows_##T(global T##_t* y, global const T##_t* x, global const T##_m* w,        \
                             global const T##_m* b, long n, int has_weight, int has_bias,          \
                             T##_m eps, long rows) {                                               \
    ELEMENTS(row, rows) {                                                                          \
      const long base = row * n;                                                                   \
      T##_m mean, rstd;                                                                            \
      ROW_STATS_SERIAL(T, x, base, n, eps, mean, rstd)                                             \
      for (long j = 0; j < n; ++j) LAYER_NORM_OUT(T, j)                                            \
    }                                                                                              \
  }

// group_norm over [N, C, spatial] with G groups: one work-group per (sample, group) row of
// n = (C / G) spatial elements; channel c's elements get y = x scale + shift, scale = rstd w[c],
// shift = b[c] - mean scale (the CPU's form).
// group_norm's element j of row `row` (sample row / groups, group row % groups), at
// x[start + (j / unit) * stride + j % unit], of channel (row % groups) * per_group +
// (j % unit) / cdiv. NCHW: the row's contiguous block (unit n, so j / unit is 0; cdiv spatial).
// Channels-last (Note [Channels-last group norm], kernels/cpu/norm.cpp): pixel j / per_group of
// the sample's [spatial, groups * per_group] rows, channel j % per_group of the group (unit
// per_group, stride the channel count, cdiv 1), read as they lie. (Set by statements, not
// selects: LLVM turns a select of divisions into a `freeze`, which llvm-spirv 15 rejects.)
#define GROUP_AT(j) (start + ((j) / unit) * stride + (j) % unit)
#define GROUP_NORM(T, unused)                                                                      \
  KERNEL group_norm_##T(global T##_t* y, global const T##_t* x, global const T##_m* w,             \
                        global const T##_m* b, long n, long groups, long spatial, int has_weight,  \
                        int has_bias, T##_m eps, int channels_last) {                              \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long row = get_group_id(0), per_group = n / spatial;                                     \
    const int l = (int)get_local_id(0);                                                            \
    long start = row * n, unit = n, stride = 0, cdiv = spatial;                                    \
    if (channels_last) {                                                                           \
      start = (row / groups) * n * groups + (row % groups) * per_group;                            \
      unit = per_group;                                                                            \
      stride = per_group * groups;                                                                 \
      cdiv = 1;                                                                                    \
    }                                                                                              \
    T##_m mean, rstd;                                                                              \
    ROW_STATS_AT(T, scratch, l, x, GROUP_AT, n, eps, mean, rstd)                                   \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                                \
      const long c = (row % groups) * per_group + (j % unit) / cdiv;                               \
      const T##_m scale = has_weight ? rstd * w[c] : rstd;                                         \
      const T##_m shift = (has_bias ? b[c] : (T##_m)0) - mean * scale;                             \
      T##_store(y, GROUP_AT(j), T##_load(x, GROUP_AT(j)) * scale + shift);                         \
    }                                                                                              \
  }

XTEN_FLOAT_DTYPES(LAYER_NORM, _)
XTEN_FLOAT_DTYPES(GROUP_NORM, _)
XTEN_FLOAT_DTYPES(BATCH_NORM_BACKWARD, _)
XTEN_FLOAT_DTYPES(BATCH_NORM_STATS, _)
XTEN_FLOAT_DTYPES(BATCH_NORM_APPLY, _)
XTEN_FLOAT_DTYPES(LAYER_NORM_BACKWARD, _)
XTEN_FLOAT_DTYPES(LAYER_NORM_BACKWARD_AFFINE, _)
