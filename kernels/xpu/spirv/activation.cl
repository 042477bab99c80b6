// activation: softmax and log_softmax over contiguous rows (the host puts the dim innermost),
// one work-group of 256 per row: a local-memory max, a local-memory sum of exp(x - max), then
// the outputs, all in opmath, as kernels/cpu/activation.cpp computes them. Host side:
// kernels/xpu/ops/activation.cpp.
#include "common.h"

#define TREE(OP, scratch, l)                                        \
  for (int s = XTEN_GROUP_SIZE / 2; s > 0; s >>= 1) {               \
    if ((l) < s) scratch[l] = OP(scratch[l], scratch[(l) + s]);     \
    barrier(CLK_LOCAL_MEM_FENCE);                                   \
  }
#define PLUS(a, b) ((a) + (b))
// NaN-propagating max, like Eigen's maxCoeff on the CPU for NaN-free rows.
#define MAXF(a, b) ((a) != (a) ? (a) : ((b) > (a) || (b) != (b)) ? (b) : (a))

#define SOFTMAX(T, unused)                                                                  \
  KERNEL softmax_##T(global T##_t* out, global const T##_t* in, long n, int take_log) {      \
    local T##_m scratch[XTEN_GROUP_SIZE];                                                   \
    const long row = get_group_id(0);                                                       \
    const int l = (int)get_local_id(0);                                                     \
    global const T##_t* x = in + row * n;                                                   \
    global T##_t* y = out + row * n;                                                        \
    T##_m m = -INFINITY;                                                                    \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) m = MAXF(m, T##_load(x, j));              \
    scratch[l] = m;                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    TREE(MAXF, scratch, l)                                                                  \
    m = scratch[0];                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    T##_m s = 0;                                                                            \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) s += exp(T##_load(x, j) - m);             \
    scratch[l] = s;                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                           \
    TREE(PLUS, scratch, l)                                                                  \
    s = scratch[0];                                                                         \
    const T##_m shift = m + log(s);                                                         \
    for (long j = l; j < n; j += XTEN_GROUP_SIZE) {                                         \
      const T##_m v = T##_load(x, j);                                                       \
      T##_store(y, j, take_log ? v - shift : exp(v - m) / s);                               \
    }                                                                                       \
  }

XTEN_FLOAT_DTYPES(SOFTMAX, _)
