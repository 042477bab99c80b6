// Shapes and checks of the flash attention kernels (kernels/common/attention.h).
#include <xten/kernels/common/attention.h>

#include <xten/core/error.h>
#include <xten/core/meta.h>
#include <xten/dispatch/ops.h>

namespace xten {

ScalarType attention_acc_dtype(ScalarType t) {
  return t == kDouble ? kDouble : kFloat;
}

Tensor empty_heads_last(int64_t batch, int64_t heads, int64_t rows, int64_t cols, ScalarType dtype,
                        Device device) {
  return empty_tensor({batch, rows, heads, cols}, dtype, device).permute({0, 2, 1, 3});
}

void check_attention_dtypes(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  XTEN_CHECK(is_floating_type(q.dtype()), NotImplementedError, op, "not implemented for dtype {}",
             to_string(q.dtype()));
  XTEN_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), TypeError, op,
             "expected query, key and value to have the same dtype, but got {}, {} and {}",
             to_string(q.dtype()), to_string(k.dtype()), to_string(v.dtype()));
}

AttentionShape flash_attention_meta(const char* op, const Tensor& q, const Tensor& k,
                                    const Tensor& v, const std::optional<Tensor>& attn_mask,
                                    bool is_causal) {
  XTEN_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, ValueError, op,
             "expected 4-d query, key and value [batch, heads, length, features], but got "
             "query {}, key {}, value {}",
             q.sizes(), k.sizes(), v.sizes());
  check_attention_dtypes(op, q, k, v);
  check_same_device(op, {&q, &k, &v});
  AttentionShape s;
  s.batch = q.size(0);
  s.heads = q.size(1);
  s.q_len = q.size(2);
  s.head_dim = q.size(3);
  s.kv_heads = k.size(1);
  s.kv_len = k.size(2);
  s.value_dim = v.size(3);
  XTEN_CHECK(k.size(0) == s.batch && v.size(0) == s.batch && v.size(1) == s.kv_heads &&
                 v.size(2) == s.kv_len && k.size(3) == s.head_dim,
             ValueError, op,
             "key {} and value {} do not fit query {}: expected key [{}, Hk, S, {}] and value "
             "[{}, Hk, S, Ev]",
             k.sizes(), v.sizes(), q.sizes(), s.batch, s.head_dim, s.batch);
  XTEN_CHECK(s.kv_heads > 0 ? s.heads % s.kv_heads == 0 : s.heads == 0, ValueError, op,
             "the query's {} heads are not a multiple of the key's {}", s.heads, s.kv_heads);
  if (attn_mask && attn_mask->defined()) {
    const Tensor& m = *attn_mask;
    XTEN_CHECK(!is_causal, ValueError, op,
               "an explicit attn_mask cannot be combined with is_causal=true");
    XTEN_CHECK(m.dtype() == kBool || m.dtype() == q.dtype(), TypeError, op,
               "expected attn_mask of dtype Bool or the query's dtype {}, but got {}",
               to_string(q.dtype()), to_string(m.dtype()));
    check_same_device(op, {&q, &m});
    const int64_t full[4] = {s.batch, s.heads, s.q_len, s.kv_len};
    XTEN_CHECK(m.dim() <= 4, ValueError, op,
               "attn_mask {} does not broadcast to [batch, heads, L, S] = [{}, {}, {}, {}]",
               m.sizes(), full[0], full[1], full[2], full[3]);
    for (int64_t d = 0; d < 4; ++d) {
      const int64_t md = d - (4 - m.dim());
      if (md < 0) continue;
      XTEN_CHECK(m.size(md) == full[d] || m.size(md) == 1, ValueError, op,
                 "attn_mask {} does not broadcast to [batch, heads, L, S] = [{}, {}, {}, {}]",
                 m.sizes(), full[0], full[1], full[2], full[3]);
      s.mask_strides[d] = m.size(md) == 1 ? 0 : m.stride(md);
    }
    s.mask = m.dtype() == kBool ? AttentionShape::kBool : AttentionShape::kAdditive;
  }
  return s;
}

AttentionShape flash_attention_backward_meta(const char* op, const Tensor& grad_out,
                                             const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& out, const Tensor& lse,
                                             const std::optional<Tensor>& attn_mask,
                                             bool is_causal) {
  const AttentionShape s = flash_attention_meta(op, q, k, v, attn_mask, is_causal);
  const std::vector<int64_t> out_shape{s.batch, s.heads, s.q_len, s.value_dim};
  XTEN_CHECK(grad_out.sizes() == IntArrayRef(out_shape) && out.sizes() == IntArrayRef(out_shape),
             ValueError, op, "expected grad_out and out of shape {}, but got {} and {}",
             IntArrayRef(out_shape), grad_out.sizes(), out.sizes());
  XTEN_CHECK(grad_out.dtype() == q.dtype() && out.dtype() == q.dtype(), TypeError, op,
             "expected grad_out and out of the query's dtype {}, but got {} and {}",
             to_string(q.dtype()), to_string(grad_out.dtype()), to_string(out.dtype()));
  const std::vector<int64_t> lse_shape{s.batch, s.heads, s.q_len};
  const ScalarType acc = attention_acc_dtype(q.dtype());
  XTEN_CHECK(lse.sizes() == IntArrayRef(lse_shape) && lse.dtype() == acc, ValueError, op,
             "expected logsumexp {} of dtype {}, but got {} of dtype {}", IntArrayRef(lse_shape),
             to_string(acc), lse.sizes(), to_string(lse.dtype()));
  check_same_device(op, {&q, &grad_out, &out, &lse});
  return s;
}

}  // namespace xten
