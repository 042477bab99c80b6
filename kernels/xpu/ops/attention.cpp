// XPU flash attention, forward and backward (spirv/attention.cl), with the CPU kernels' checks
// (kernels/common/attention.h). The operands are made contiguous [B, H, L, E] first; the output
// and the gradients are contiguous too (the CPU's output is heads-last: the values are the same).
// The scalar kernels' opmath accumulators are a global scratch row per work-item; the vector
// kernels (the usual head sizes) keep them in registers.
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/attention.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// The largest head size the kernels' local tiles take (4 rows of 1024).
constexpr int64_t kMaxHeadDim = 1024;

struct MaskArgs {
  const void* data;
  int32_t kind;
  int64_t s[4];
  int32_t causal;
};

MaskArgs mask_args(const AttentionShape& g, const std::optional<Tensor>& m, bool causal,
                   const Tensor& fallback) {
  MaskArgs a{fallback.data_ptr(), static_cast<int32_t>(g.mask), {0, 0, 0, 0}, causal ? 1 : 0};
  if (g.mask != AttentionShape::kNone) a.data = m->data_ptr();
  for (int d = 0; d < 4; ++d) a.s[d] = g.mask_strides[d];
  return a;
}

void check_head_dims(const char* op, const AttentionShape& g) {
  XTEN_CHECK(g.head_dim <= kMaxHeadDim && g.value_dim <= kMaxHeadDim, NotImplementedError, op,
             "the XPU kernel takes head sizes up to {}, but got query/key {} and value {}",
             kMaxHeadDim, g.head_dim, g.value_dim);
}

// Note [Attention rows in vector registers] (attention.cl): the kernels that keep rows in
// float16 registers take head sizes that are multiples of 16 up to 64, in the 16/32-bit floats;
// they need no global scratch rows.
bool vector_rows(const AttentionShape& g, ScalarType t) {
  auto fits = [](int64_t e) { return e >= 16 && e <= 64 && e % 16 == 0; };
  return t != kDouble && fits(g.head_dim) && fits(g.value_dim);
}

std::string kernel_name(const char* base, bool vec, ScalarType t) {
  return std::string(base) + (vec ? "vec_" : "") + dtype_tag(t);
}

uint64_t tiles(int64_t rows) {
  return static_cast<uint64_t>((rows + kGroupSize - 1) / kGroupSize);
}

TensorPair flash_attention_kernel(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const std::optional<Tensor>& attn_mask, bool is_causal,
                                  double scale) {
  const char* op = "_scaled_dot_product_flash_attention";
  const AttentionShape g = flash_attention_meta(op, query, key, value, attn_mask, is_causal);
  visit_dtype<dtypes::kFloating>(op, query.dtype(), [](auto) {});
  check_head_dims(op, g);
  const ScalarType t = query.dtype(), acc_t = attention_acc_dtype(t);
  const Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
  Tensor out = empty({g.batch, g.heads, g.q_len, g.value_dim}, t, q.device());
  Tensor lse = empty({g.batch, g.heads, g.q_len}, acc_t, q.device());
  const int64_t rows = g.batch * g.heads;
  if (rows == 0 || g.q_len == 0) return {out, lse};
  const bool vec = vector_rows(g, t);
  const Tensor acc = empty({vec ? 0 : rows * g.q_len, g.value_dim}, acc_t, q.device());
  const MaskArgs m = mask_args(g, attn_mask, is_causal, q);
  Kernel& kern = get_kernel(device_of(q), op, family_for("attention", {t}),
                            kernel_name("attention_forward_", vec, t));
  visit_dtype<dtypes::kFloating>(op, t, [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    launch_groups(stream_of(q), kern, rows * tiles(g.q_len), out.data_ptr(), lse.data_ptr(),
                  acc.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(), m.data, m.kind, m.s[0],
                  m.s[1], m.s[2], m.s[3], m.causal, g.heads, g.kv_heads, g.q_len, g.kv_len,
                  g.head_dim, g.value_dim, out.stride(0), out.stride(1), out.stride(2),
                  static_cast<M>(scale));
  });
  return {out, lse};
}

TensorTriple flash_attention_backward_kernel(const Tensor& grad_out, const Tensor& query,
                                             const Tensor& key, const Tensor& value,
                                             const Tensor& out, const Tensor& logsumexp,
                                             const std::optional<Tensor>& attn_mask, bool is_causal,
                                             double scale) {
  const char* op = "_scaled_dot_product_flash_attention_backward";
  const AttentionShape g = flash_attention_backward_meta(op, grad_out, query, key, value, out,
                                                         logsumexp, attn_mask, is_causal);
  visit_dtype<dtypes::kFloating>(op, query.dtype(), [](auto) {});
  check_head_dims(op, g);
  const ScalarType t = query.dtype(), acc_t = attention_acc_dtype(t);
  const Tensor q = query.contiguous(), k = key.contiguous(), v = value.contiguous();
  const Tensor go = grad_out.contiguous(), o = out.contiguous(), lse = logsumexp.contiguous();
  const Device dev = q.device();
  Tensor dq = empty(q.sizes(), t, dev), dk = empty(k.sizes(), t, dev),
         dv = empty(v.sizes(), t, dev);
  const int64_t rows = g.batch * g.heads, kv_rows = g.batch * g.kv_heads;
  if (g.q_len == 0 || g.kv_len == 0) {  // nothing attended: every gradient is 0
    return {dq.zero_(), dk.zero_(), dv.zero_()};
  }
  if (rows == 0) return {dq, dk, dv};
  const bool vec = vector_rows(g, t);
  const int64_t scratch = vec ? 0 : 1;  // rows of scratch per row of the operands
  Tensor dsum = empty({rows * g.q_len}, acc_t, dev);
  Tensor acc_q = empty({scratch * rows * g.q_len, g.head_dim}, acc_t, dev);
  Tensor acc_k = empty({scratch * kv_rows * g.kv_len, g.head_dim}, acc_t, dev);
  Tensor acc_v = empty({scratch * kv_rows * g.kv_len, g.value_dim}, acc_t, dev);
  const MaskArgs m = mask_args(g, attn_mask, is_causal, q);
  const int d = device_of(q);
  Kernel& kq =
      get_kernel(d, op, family_for("attention", {t}), kernel_name("attention_backward_q_", vec, t));
  Kernel& kkv = get_kernel(d, op, family_for("attention", {t}),
                           kernel_name("attention_backward_kv_", vec, t));
  visit_dtype<dtypes::kFloating>(op, t, [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    const M sc = static_cast<M>(scale);
    launch_groups(stream_of(q), kq, rows * tiles(g.q_len), dq.data_ptr(), dsum.data_ptr(),
                  acc_q.data_ptr(), go.data_ptr(), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                  o.data_ptr(), lse.data_ptr(), m.data, m.kind, m.s[0], m.s[1], m.s[2], m.s[3],
                  m.causal, g.heads, g.kv_heads, g.q_len, g.kv_len, g.head_dim, g.value_dim, sc);
    launch_groups(stream_of(q), kkv, kv_rows * tiles(g.kv_len), dk.data_ptr(), dv.data_ptr(),
                  acc_k.data_ptr(), acc_v.data_ptr(), go.data_ptr(), q.data_ptr(), k.data_ptr(),
                  v.data_ptr(), lse.data_ptr(), dsum.data_ptr(), m.data, m.kind, m.s[0], m.s[1],
                  m.s[2], m.s[3], m.causal, g.heads, g.kv_heads, g.q_len, g.kv_len, g.head_dim,
                  g.value_dim, sc);
  });
  return {dq, dk, dv};
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("_scaled_dot_product_flash_attention", flash_attention_kernel);
  m.impl("_scaled_dot_product_flash_attention_backward", flash_attention_backward_kernel);
}

}  // namespace xten::xpu
