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

// GradScaler's scale update (_amp_update_scale_): one work-item.
#ifndef XTEN_F64
KERNEL amp_update_scale(global float* scale, global int* tracker, global const float* found_inf,
                        float growth, float backoff, int interval) {
  if (get_global_id(0) != 0) return;
  if (found_inf[0] != 0) {
    scale[0] = scale[0] * backoff;
    tracker[0] = 0;
  } else if (tracker[0] + 1 >= interval) {
    const float grown = scale[0] * growth;
    if (isfinite(grown)) scale[0] = grown;
    tracker[0] = 0;
  } else {
    tracker[0] += 1;
  }
}
#endif

// The fused steps change nothing where GradScaler's found_inf (when given: skip_given) is not 0.
#define SKIPPED_STEP (skip_given && skip[0] != 0)

// A per-chunk scalar kept in a long of the table: a float's bits, or a double's in the f64
// module.
#define TABLE_SCALAR_f16(x) as_float((int)(x))
#define TABLE_SCALAR_bf16(x) as_float((int)(x))
#define TABLE_SCALAR_f32(x) as_float((int)(x))
#define TABLE_SCALAR_f64(x) as_double(x)

// The SGD step of optim::SGD, as kernels/cpu/optim.cpp computes it: table rows of five longs
// (parameter, gradient, momentum buffer, first element, length). damp is 1 - dampening.
#define FUSED_SGD(T, unused)                                                                       \
  KERNEL fused_sgd_##T(global const long* chunks, T##_m wd, T##_m mom, T##_m damp, T##_m lr,        \
                       int use_momentum, int nesterov, int maximize, int first,                    \
                       global const float* skip, int skip_given) {                                 \
    if (SKIPPED_STEP) return;                                                                      \
    const long c = get_group_id(0);                                                                \
    global T##_t* p = (global T##_t*)chunks[5 * c];                                                \
    global const T##_t* g = (global const T##_t*)chunks[5 * c + 1];                                \
    global T##_t* buf = (global T##_t*)chunks[5 * c + 2];                                          \
    const long begin = chunks[5 * c + 3], end = begin + chunks[5 * c + 4];                         \
    for (long i = begin + (long)get_local_id(0); i < end; i += XTEN_GROUP_SIZE) {                  \
      T##_m d = T##_load(g, i);                                                                    \
      if (maximize) d = -d;                                                                        \
      if (wd != 0) d = d + T##_load(p, i) * wd;                                                    \
      if (use_momentum) {                                                                          \
        const T##_m b = first ? d : T##_load(buf, i) * mom + damp * d;                             \
        T##_store(buf, i, b);                                                                      \
        d = nesterov ? d + T##_load(buf, i) * mom : T##_load(buf, i);                              \
      }                                                                                            \
      T##_store(p, i, T##_load(p, i) - lr * d);                                                    \
    }                                                                                              \
  }
XTEN_FLOAT_DTYPES(FUSED_SGD, )

// The Adam step of optim::Adam (AdamW with decoupled): table rows of nine longs (parameter,
// gradient, exp_avg, exp_avg_sq, max_exp_avg_sq, first element, length, the tensor's step
// size lr / (1 - beta1^t) and sqrt(1 - beta2^t) as TABLE_SCALAR bits).
#define FUSED_ADAM(T, unused)                                                                      \
  KERNEL fused_adam_##T(global const long* chunks, T##_m b1, T##_m b2, T##_m c1, T##_m c2,          \
                        T##_m wd, T##_m decay, T##_m eps, int amsgrad, int maximize,               \
                        int decoupled, global const float* skip, int skip_given) {                 \
    if (SKIPPED_STEP) return;                                                                      \
    const long c = get_group_id(0);                                                                \
    global const long* row = chunks + 9 * c;                                                       \
    global T##_t* p = (global T##_t*)row[0];                                                       \
    global const T##_t* g = (global const T##_t*)row[1];                                           \
    global T##_t* m = (global T##_t*)row[2];                                                       \
    global T##_t* v = (global T##_t*)row[3];                                                       \
    global T##_t* vmax = (global T##_t*)row[4];                                                    \
    const long begin = row[5], end = begin + row[6];                                               \
    const T##_m step_size = TABLE_SCALAR_##T(row[7]), bias2_sqrt = TABLE_SCALAR_##T(row[8]);       \
    for (long i = begin + (long)get_local_id(0); i < end; i += XTEN_GROUP_SIZE) {                  \
      T##_m d = T##_load(g, i);                                                                    \
      if (maximize) d = -d;                                                                        \
      if (wd != 0) {                                                                               \
        if (decoupled) {                                                                           \
          T##_store(p, i, T##_load(p, i) * decay);                                                 \
        } else {                                                                                   \
          d = d + T##_load(p, i) * wd;                                                             \
        }                                                                                          \
      }                                                                                            \
      T##_store(m, i, T##_load(m, i) * b1 + c1 * d);                                               \
      T##_store(v, i, T##_load(v, i) * b2 + c2 * (d * d));                                         \
      T##_m vs = T##_load(v, i);                                                                   \
      if (amsgrad) {                                                                               \
        vs = fmax(T##_load(vmax, i), vs);                                                          \
        T##_store(vmax, i, vs);                                                                    \
      }                                                                                            \
      const T##_m denom = sqrt(vs) / bias2_sqrt + eps;                                             \
      T##_store(p, i, T##_load(p, i) - step_size * (T##_load(m, i) / denom));                      \
    }                                                                                              \
  }
XTEN_FLOAT_DTYPES(FUSED_ADAM, )

// The RMSprop step of optim::RMSprop: table rows of longs (parameter, gradient,
// square_avg, grad_avg or 0, momentum buffer or 0, first element, length: seven). c is 1 - alpha.
#define FUSED_RMSPROP(T, unused)                                                                   \
  KERNEL fused_rmsprop_##T(global const long* chunks, T##_m lr, T##_m alpha, T##_m c, T##_m eps,   \
                           T##_m wd, T##_m mom, int centered, int use_momentum, int maximize,      \
                           global const float* skip, int skip_given) {                             \
    if (SKIPPED_STEP) return;                                                                      \
    const long r = get_group_id(0);                                                                \
    global const long* row = chunks + 7 * r;                                                       \
    global T##_t* p = (global T##_t*)row[0];                                                       \
    global const T##_t* g = (global const T##_t*)row[1];                                           \
    global T##_t* sq = (global T##_t*)row[2];                                                      \
    global T##_t* ga = (global T##_t*)row[3];                                                      \
    global T##_t* buf = (global T##_t*)row[4];                                                     \
    const long begin = row[5], end = begin + row[6];                                               \
    for (long i = begin + (long)get_local_id(0); i < end; i += XTEN_GROUP_SIZE) {                  \
      T##_m d = T##_load(g, i);                                                                    \
      if (maximize) d = -d;                                                                        \
      if (wd != 0) d = d + T##_load(p, i) * wd;                                                    \
      T##_store(sq, i, T##_load(sq, i) * alpha + c * (d * d));                                     \
      T##_m avg;                                                                                   \
      if (centered) {                                                                              \
        T##_store(ga, i, T##_load(ga, i) * alpha + c * d);                                         \
        const T##_m mean = T##_load(ga, i);                                                        \
        avg = sqrt(T##_load(sq, i) - mean * mean) + eps;                                           \
      } else {                                                                                     \
        avg = sqrt(T##_load(sq, i)) + eps;                                                         \
      }                                                                                            \
      if (use_momentum) {                                                                          \
        T##_store(buf, i, T##_load(buf, i) * mom + d / avg);                                       \
        T##_store(p, i, T##_load(p, i) - lr * T##_load(buf, i));                                   \
      } else {                                                                                     \
        T##_store(p, i, T##_load(p, i) - lr * (d / avg));                                         \
      }                                                                                            \
    }                                                                                              \
  }
XTEN_FLOAT_DTYPES(FUSED_RMSPROP, )
