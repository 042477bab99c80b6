// activation: softmax and log_softmax (and their backward) over contiguous rows (the host puts
// the dim innermost), one work-group of 256 per row: a local-memory max, a local-memory sum of exp(x - max), then
// the outputs, all in opmath, as kernels/cpu/activation.cpp computes them. Host side:
// kernels/xpu/ops/activation.cpp.
#include "common.h"

// Whether a dtype's storage holds its opmath values exactly.
#define EXACT_f16 0
#define EXACT_bf16 0
#define EXACT_f32 1
#define EXACT_f64 1

// NaN-propagating max, like Eigen's maxCoeff on the CPU for NaN-free rows.
#define MAXF(a, b) ((a) != (a) ? (a) : ((b) > (a) || (b) != (b)) ? (b) : (a))

// The NaN-propagating maximum m of x[0, n), to every work-item of the group (scratch: local).
#define ROW_MAX(T, scratch, l, x, n, m)                                                            \
  T##_m m = -INFINITY;                                                                             \
  for (long j = l; j < n; j += XTEN_GROUP_SIZE) m = MAXF(m, T##_load(x, j));                       \
  scratch[l] = m;                                                                                  \
  barrier(CLK_LOCAL_MEM_FENCE);                                                                    \
  TREE(MAXF, scratch, l)                                                                           \
  m = scratch[0];                                                                                  \
  barrier(CLK_LOCAL_MEM_FENCE);

#define SOFTMAX(T, unused)                                                                         \
  KERNEL softmax_##T(global T##_t* out, global const T##_t* in, long n, int take_log) {            \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long row = get_group_id(0);                                                              \
    const int l = (int)get_local_id(0);                                                            \
    global const T##_t* x = in + row * n;                                                          \
    global T##_t* y = out + row * n;                                                               \
    ROW_MAX(T, scratch, l, x, n, m)                                                                \
    /* Where the output holds opmath exactly (float32, float64), softmax keeps exp(x - max) */   \
    /* there for the last pass: one exp per element instead of two (PoCL's exp is most of the */ \
    /* kernel's time), the same values; each work-item rereads only what it wrote. */             \
    const bool keep = !take_log && EXACT_##T;                                                      \
    T##_m s = 0;                                                                                   \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                                \
      const T##_m e = exp(T##_load(x, j) - m);                                                     \
      s += e;                                                                                      \
      if (keep) T##_store(y, j, e);                                                                \
    }                                                                                              \
    scratch[l] = s;                                                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    TREE(PLUS, scratch, l)                                                                         \
    s = scratch[0];                                                                                \
    const T##_m log_s = log(s); /* (x - max) - log(sum), as the CPU */                             \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                                \
      if (keep) {                                                                                  \
        T##_store(y, j, T##_load(y, j) / s);                                                       \
      } else {                                                                                     \
        const T##_m v = T##_load(x, j) - m;                                                        \
        T##_store(y, j, take_log ? v - log_s : exp(v) / s);                                        \
      }                                                                                            \
    }                                                                                              \
  }

XTEN_FLOAT_DTYPES(SOFTMAX, _)

// Their backward over rows of the output y and its gradient g (same layout as the forward):
// softmax y * (g - sum(g * y)), log_softmax g - exp(y) * sum(g), as kernels/cpu/activation.cpp.
#define SOFTMAX_BACKWARD(T, unused)                                                                \
  KERNEL softmax_backward_##T(global T##_t* out, global const T##_t* g, global const T##_t* y,     \
                              long n, int take_log) {                                              \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long base = get_group_id(0) * n;                                                         \
    const int l = (int)get_local_id(0);                                                            \
    T##_m s = 0;                                                                                   \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE)                                                  \
      s += take_log ? T##_load(g, base + j) : T##_load(g, base + j) * T##_load(y, base + j);       \
    scratch[l] = s;                                                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    TREE(PLUS, scratch, l)                                                                         \
    s = scratch[0];                                                                                \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                                \
      const T##_m gv = T##_load(g, base + j), yv = T##_load(y, base + j);                          \
      T##_store(out, base + j, take_log ? gv - exp(yv) * s : yv * (gv - s));                       \
    }                                                                                              \
  }

XTEN_FLOAT_DTYPES(SOFTMAX_BACKWARD, _)

// Pointwise activations with up to three parameters p0..p2 (in opmath), strided and one-dim
// variants, through the host's elementwise path; formulas as kernels/cpu/activation.cpp.
// The output is the input's dtype: common.h's parameter heads with OUT_T = T's storage type.
#define ACT_HEAD_ND(NAME, T, ...) PARAM_HEAD_ND(NAME, T, T##_t, __VA_ARGS__)
#define ACT_HEAD_1D(NAME, T, ...) PARAM_HEAD_1D(NAME, T, T##_t, __VA_ARGS__)

#define ACTIVATIONS(T, HEAD)                                                                       \
  HEAD(leaky_relu, T, T##_store(out, oo, x > 0 ? x : x * p0);)                                     \
  HEAD(elu, T, T##_store(out, oo, x > 0 ? p1 * x : p1 * p0 * expm1(x * p2));)                      \
  HEAD(softplus, T, T##_store(out, oo, x * p0 > p1 ? x : log1p(exp(x * p0)) / p0);)                \
  HEAD(hardswish, T, {                                                                             \
    const T##_m lo = (x + 3 < 0) ? (T##_m)0 : x + 3;                                               \
    const T##_m c = (6 < lo) ? (T##_m)6 : lo;                                                      \
    T##_store(out, oo, x * c / 6); })

XTEN_FLOAT_DTYPES(ACTIVATIONS, ACT_HEAD_ND)
XTEN_FLOAT_DTYPES(ACTIVATIONS, ACT_HEAD_1D)

// logsumexp over contiguous rows (the host lays them out as the reductions do): one work-group
// per row, the row's maximum m, then log(sum(exp(x - m))) + m, with an infinite m taken out as
// 0 (all -inf gives -inf, a +inf gives inf, NaN stays), as the composite and the CPU give. One
// launch instead of the composite's seven.
#define LOGSUMEXP(T, unused)                                                                       \
  KERNEL logsumexp_##T(global T##_t* out, global const T##_t* in, long n) {                        \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                          \
    const long row = get_group_id(0);                                                              \
    const int l = (int)get_local_id(0);                                                            \
    global const T##_t* x = in + row * n;                                                          \
    ROW_MAX(T, scratch, l, x, n, m)                                                                \
    const T##_m shift = isinf(m) ? (T##_m)0 : m;                                                   \
    T##_m s = 0;                                                                                   \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) s += exp(T##_load(x, j) - shift);                \
    scratch[l] = s;                                                                                \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
    TREE(PLUS, scratch, l)                                                                         \
    if (l == 0) T##_store(out, row, log(scratch[0]) + shift);                                      \
  }

XTEN_FLOAT_DTYPES(LOGSUMEXP, _)
