#pragma once
// The flash attention kernels' shapes and checks, shared by every backend so that the same bad
// input gives the same error on each (docs/attention.md).
#include <optional>
#include <tuple>

#include <xten/core/tensor.h>

namespace xten {

// [B, H, L, E] queries, [B, Hk, S, E] keys, [B, Hk, S, Ev] values (H a multiple of Hk), and a
// mask of kind kNone, kBool (true attends) or kAdditive (the query's dtype), read through
// `mask_strides` over [B, H, L, S] (zero along broadcast dims).
struct AttentionShape {
  enum MaskKind { kNone, kBool, kAdditive };
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0, value_dim = 0;
  MaskKind mask = kNone;
  int64_t mask_strides[4] = {0, 0, 0, 0};
  // The key/value head of query head h.
  int64_t kv_head(int64_t h) const { return h / (heads / kv_heads); }
};

// Query, key and value of one floating dtype (NotImplementedError for another dtype,
// TypeError for a mix), as every attention op checks them.
void check_attention_dtypes(const char* op, const Tensor& query, const Tensor& key,
                            const Tensor& value);

// _scaled_dot_product_flash_attention's checks: 4-d float query, key and value of one dtype and
// device with matching batch, head and length sizes; a mask broadcastable to [B, H, L, S], bool
// or of the query's dtype, on the same device; not both a mask and is_causal.
AttentionShape flash_attention_meta(const char* op, const Tensor& query, const Tensor& key,
                                    const Tensor& value, const std::optional<Tensor>& attn_mask,
                                    bool is_causal);

// The backward's extra checks: grad_out and out [B, H, L, Ev] of the query's dtype, logsumexp
// [B, H, L] in the accumulation dtype (float32, float64 for float64).
AttentionShape flash_attention_backward_meta(const char* op, const Tensor& grad_out,
                                             const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& out,
                                             const Tensor& logsumexp,
                                             const std::optional<Tensor>& attn_mask,
                                             bool is_causal);

// The dtype the kernels accumulate in and keep logsumexp in: float64 for float64, else float32.
ScalarType attention_acc_dtype(ScalarType t);

// A fresh [B, rows, H, cols] tensor seen as [B, H, rows, cols]: the layout of the output and the
// gradients (the heads of one position side by side, as a module's [B, L, H * E] projection
// lays them out, so that merging the heads back is a view).
Tensor empty_heads_last(int64_t batch, int64_t heads, int64_t rows, int64_t cols, ScalarType dtype,
                        Device device);

namespace detail {
// The flash kernels' backward written with other ops (kernels/composite/attention.cpp), with the
// term of a gradient of logsumexp: what the derivative uses when one flowed (second derivatives).
std::tuple<Tensor, Tensor, Tensor> flash_attention_backward_with_lse(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& out, const Tensor& logsumexp, const std::optional<Tensor>& attn_mask,
    bool is_causal, double scale, const Tensor& grad_logsumexp);
}  // namespace detail

}  // namespace xten
