#pragma once
// Attention and transformer layers (docs/nn.md, "Transformers"), with libtorch's names, options
// and parameter names, so that a PyTorch state dict's keys match:
//
//   nn::TransformerEncoder enc(nn::TransformerEncoderOptions(
//       nn::TransformerEncoderLayerOptions(256, 4).batch_first(true).norm_first(true), 6));
//   Tensor y = enc(x);                          // x [N, L, 256]
//
// The attention itself is scaled_dot_product_attention (docs/attention.md), whose flash kernel
// runs unless attention weights are asked for (need_weights) or dropout is active.
#include <optional>
#include <string>
#include <tuple>

#include <xten/nn/modules.h>

namespace xten::nn {

// ---- MultiheadAttention -------------------------------------------------------------------------
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads) {}
  XTEN_ARG(int64_t, embed_dim);
  XTEN_ARG(int64_t, num_heads);
  XTEN_ARG(double, dropout) = 0.0;
  XTEN_ARG(bool, bias) = true;
  XTEN_ARG(int64_t, kdim) = 0;  // 0: embed_dim
  XTEN_ARG(int64_t, vdim) = 0;  // 0: embed_dim
  XTEN_ARG(bool, batch_first) = false;
};
// PyTorch's nn.MultiheadAttention: inputs [L, N, E] ([N, L, E] with batch_first; unbatched [L,
// E] too), projections in_proj_weight [3E, E] (or q/k/v_proj_weight when kdim or vdim differ
// from E, xavier_uniform_), in_proj_bias [3E] (zeros), out_proj (Linear E -> E, bias zeros).
// Masks as PyTorch's: attn_mask [L, S] or [N * num_heads, L, S], boolean (true: may NOT attend)
// or additive; key_padding_mask [N, S], boolean (true: ignore that key) or additive.
// Returns (output, weights): weights [N, L, S] averaged over heads (or [N, num_heads, L, S]),
// undefined unless need_weights.
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const std::optional<Tensor>& key_padding_mask = std::nullopt,
                                     bool need_weights = true,
                                     const std::optional<Tensor>& attn_mask = std::nullopt,
                                     bool average_attn_weights = true, bool is_causal = false);
  std::string extra_repr() const override;
  void reset_parameters();
  MultiheadAttentionOptions options;
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias;
  Linear out_proj{nullptr};

 private:
  int64_t kdim() const { return options.kdim() ? options.kdim() : options.embed_dim(); }
  int64_t vdim() const { return options.vdim() ? options.vdim() : options.embed_dim(); }
};
XTEN_MODULE(MultiheadAttention);

// ---- encoder and decoder layers ---------------------------------------------------------------
struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead)
      : d_model_(d_model), nhead_(nhead) {}
  XTEN_ARG(int64_t, d_model);
  XTEN_ARG(int64_t, nhead);
  XTEN_ARG(int64_t, dim_feedforward) = 2048;
  XTEN_ARG(double, dropout) = 0.1;
  XTEN_ARG(std::string, activation) = "relu";  // "relu" or "gelu"
  XTEN_ARG(double, layer_norm_eps) = 1e-5;
  XTEN_ARG(bool, batch_first) = false;
  XTEN_ARG(bool, norm_first) = false;
  XTEN_ARG(bool, bias) = true;
};
using TransformerDecoderLayerOptions = TransformerEncoderLayerOptions;

// Self-attention and a feed-forward block (linear1, activation, dropout, linear2), each with a
// residual connection and a LayerNorm after (post-norm) or before (norm_first).
class TransformerEncoderLayerImpl : public Module {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  Tensor forward(const Tensor& src, const std::optional<Tensor>& src_mask = std::nullopt,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt,
                 bool is_causal = false);
  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
};
XTEN_MODULE(TransformerEncoderLayer);

// Self-attention over the target, attention over the encoder's memory, and a feed-forward
// block, each with a residual connection and a LayerNorm (norm1..norm3).
class TransformerDecoderLayerImpl : public Module {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory,
                 const std::optional<Tensor>& tgt_mask = std::nullopt,
                 const std::optional<Tensor>& memory_mask = std::nullopt,
                 const std::optional<Tensor>& tgt_key_padding_mask = std::nullopt,
                 const std::optional<Tensor>& memory_key_padding_mask = std::nullopt,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
};
XTEN_MODULE(TransformerDecoderLayer);

// ---- stacks -------------------------------------------------------------------------------------
// num_layers copies of one layer (they start equal, as PyTorch's deep copies do) in `layers`,
// and an optional final LayerNorm `norm` (over d_model, the layer's eps).
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayerOptions layer, int64_t num_layers)
      : encoder_layer_(std::move(layer)), num_layers_(num_layers) {}
  XTEN_ARG(TransformerEncoderLayerOptions, encoder_layer);
  XTEN_ARG(int64_t, num_layers);
  XTEN_ARG(bool, final_norm) = false;
};
class TransformerEncoderImpl : public Module {
 public:
  explicit TransformerEncoderImpl(const TransformerEncoderOptions& options);
  Tensor forward(const Tensor& src, const std::optional<Tensor>& mask = std::nullopt,
                 const std::optional<Tensor>& src_key_padding_mask = std::nullopt,
                 bool is_causal = false);
  TransformerEncoderOptions options;
  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};
XTEN_MODULE(TransformerEncoder);

struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayerOptions layer, int64_t num_layers)
      : decoder_layer_(std::move(layer)), num_layers_(num_layers) {}
  XTEN_ARG(TransformerDecoderLayerOptions, decoder_layer);
  XTEN_ARG(int64_t, num_layers);
  XTEN_ARG(bool, final_norm) = false;
};
class TransformerDecoderImpl : public Module {
 public:
  explicit TransformerDecoderImpl(const TransformerDecoderOptions& options);
  Tensor forward(const Tensor& tgt, const Tensor& memory,
                 const std::optional<Tensor>& tgt_mask = std::nullopt,
                 const std::optional<Tensor>& memory_mask = std::nullopt,
                 const std::optional<Tensor>& tgt_key_padding_mask = std::nullopt,
                 const std::optional<Tensor>& memory_key_padding_mask = std::nullopt,
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  TransformerDecoderOptions options;
  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
};
XTEN_MODULE(TransformerDecoder);

// PyTorch's nn.Transformer.generate_square_subsequent_mask: [n, n] float, -inf above the
// diagonal, 0 elsewhere.
Tensor generate_square_subsequent_mask(int64_t n, TensorOptions options = {});

}  // namespace xten::nn
