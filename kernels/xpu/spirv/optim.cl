// optim: the multi-tensor ops of the optimizers and GradScaler (docs/optim.md, "One kernel for
// many tensors"). The host cuts every tensor of a dtype into chunks and passes a table of them,
// three longs per chunk: the tensor's address, the chunk's first element and its length. One
// work-group per chunk, so one launch covers every tensor of the dtype. Host side:
// kernels/xpu/ops/optim.cpp.
#include "common.h"

// GradScaler's unscale: every value times inv_scale[0]; found_inf[0] = 1 if any value (as it
// came) is inf or NaN. Work-groups that find one all write the same 1.
#define AMP_UNSCALE(T, unused)                                                                     \
  KERNEL amp_unscale_##T(global const long* chunks, global float* found_inf,                       \
                         global const float* inv_scale) {                                          \
    const long c = get_group_id(0);                                                                \
    global T##_t* p = (global T##_t*)chunks[3 * c];                                                \
    const long begin = chunks[3 * c + 1], end = begin + chunks[3 * c + 2];                         \
    const T##_m inv = (T##_m)inv_scale[0];                                                         \
    int bad = 0;                                                                                   \
    for (long i = begin + (long)get_local_id(0); i < end; i += XTEN_GROUP_SIZE) {                  \
      const T##_m v = T##_load(p, i);                                                              \
      bad |= !isfinite(v);                                                                         \
      T##_store(p, i, v * inv);                                                                    \
    }                                                                                              \
    if (bad) found_inf[0] = 1.0f;                                                                  \
  }
XTEN_FLOAT_DTYPES(AMP_UNSCALE, )
