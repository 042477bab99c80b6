// Attention and transformer layers (nn/transformer.h; docs/nn.md, "Transformers").
#include <xten/nn/transformer.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <xten/autograd/grad_mode.h>
#include <xten/nn/init.h>

namespace xten::nn {
namespace {

std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

// A PyTorch-style mask as an additive one in `dtype`: a boolean mask's true entries (positions
// that may not attend) become -inf.
Tensor additive(const Tensor& mask, ScalarType dtype) {
  if (mask.dtype() != kBool) return mask.to(dtype);
  return zeros(mask.sizes(), TensorOptions(dtype).device(mask.device()))
      .masked_fill(mask, -std::numeric_limits<double>::infinity());
}

Tensor activate(const std::string& activation, const Tensor& x) {
  return activation == "gelu" ? gelu(x) : relu(x);
}

void check_layer_options(const char* name, const TransformerEncoderLayerOptions& o) {
  XTEN_CHECK(o.activation() == "relu" || o.activation() == "gelu", ValueError, name,
             "activation must be \"relu\" or \"gelu\", but got \"{}\"", o.activation());
}

MultiheadAttentionOptions attention_options(const TransformerEncoderLayerOptions& o) {
  return MultiheadAttentionOptions(o.d_model(), o.nhead())
      .dropout(o.dropout())
      .bias(o.bias())
      .batch_first(o.batch_first());
}

LayerNormOptions norm_options(const TransformerEncoderLayerOptions& o) {
  return LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps()).bias(o.bias());
}

// Makes every layer of `layers` start from the first one's values, as PyTorch's deep copies do.
void copy_first_layer(ModuleList& layers) {
  if (layers->size() < 2) return;
  const NamedTensors first = (*layers)[0]->state_dict();
  for (size_t i = 1; i < layers->size(); ++i) (*layers)[i]->load_state_dict(first);
}

}  // namespace

// ---- MultiheadAttention -------------------------------------------------------------------------

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& o)
    : Module("MultiheadAttention"), options(o) {
  const int64_t e = o.embed_dim(), h = o.num_heads();
  XTEN_CHECK(e > 0 && h > 0 && e % h == 0, ValueError, "MultiheadAttention",
             "embed_dim ({}) must be positive and divisible by num_heads ({})", e, h);
  XTEN_CHECK(o.dropout() >= 0 && o.dropout() <= 1, ValueError, "MultiheadAttention",
             "dropout must be in [0, 1], but got {}", o.dropout());
  if (kdim() == e && vdim() == e) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, vdim()}));
  }
  in_proj_bias = register_parameter("in_proj_bias", o.bias() ? empty({3 * e}) : Tensor());
  out_proj = register_module("out_proj", Linear(LinearOptions(e, e).bias(o.bias())));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  for (Tensor* w : {&in_proj_weight, &q_proj_weight, &k_proj_weight, &v_proj_weight})
    if (w->defined()) init::xavier_uniform_(*w);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& key_padding_mask, bool need_weights,
    const std::optional<Tensor>& attn_mask, bool average_attn_weights, bool is_causal) {
  const char* op = "MultiheadAttention";
  const int64_t e = options.embed_dim(), heads = options.num_heads(), hd = e / heads;
  const bool batched = query.dim() == 3;
  XTEN_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() &&
                 value.dim() == query.dim(),
             ValueError, op,
             "expected query, key and value all 3-d (batched) or all 2-d (unbatched), but got "
             "{}, {} and {}",
             query.sizes(), key.sizes(), value.sizes());
  // Batch first internally: [N, L, E] (views).
  auto batch_first = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options.batch_first() ? t : t.transpose(0, 1);
  };
  const Tensor q_in = batch_first(query), k_in = batch_first(key), v_in = batch_first(value);
  const int64_t n = q_in.size(0), l = q_in.size(1), s = k_in.size(1);
  XTEN_CHECK(q_in.size(2) == e && k_in.size(2) == kdim() && v_in.size(2) == vdim() &&
                 k_in.size(0) == n && v_in.size(0) == n && v_in.size(1) == s,
             ValueError, op,
             "query {}, key {} and value {} do not fit embed_dim {}, kdim {}, vdim {} (batch_first="
             "{})",
             query.sizes(), key.sizes(), value.sizes(), e, kdim(), vdim(), options.batch_first());
  auto bias_part = [&](int64_t i) {
    return in_proj_bias.defined() ? std::optional<Tensor>(in_proj_bias.narrow(0, i * e, e))
                                  : std::nullopt;
  };
  Tensor q, k, v;
  if (in_proj_weight.defined() && query.is_same(key) && key.is_same(value)) {
    // Self-attention: one product for the three projections.
    const Tensor qkv = linear(q_in, in_proj_weight, opt(in_proj_bias));
    q = qkv.narrow(2, 0, e);
    k = qkv.narrow(2, e, e);
    v = qkv.narrow(2, 2 * e, e);
  } else {
    auto weight = [&](int64_t i, const Tensor& own) {
      return in_proj_weight.defined() ? in_proj_weight.narrow(0, i * e, e) : own;
    };
    q = linear(q_in, weight(0, q_proj_weight), bias_part(0));
    k = linear(k_in, weight(1, k_proj_weight), bias_part(1));
    v = linear(v_in, weight(2, v_proj_weight), bias_part(2));
  }
  auto split_heads = [&](const Tensor& t, int64_t len) {
    return t.reshape({n, len, heads, hd}).transpose(1, 2);  // [N, H, len, hd]
  };
  q = split_heads(q, l);
  k = split_heads(k, s);
  v = split_heads(v, s);
  // One additive mask [N or 1, H or 1, L, S] from attn_mask and key_padding_mask.
  std::optional<Tensor> mask;
  if (attn_mask && attn_mask->defined()) {
    const Tensor& m = *attn_mask;
    const bool ok = (m.dim() == 2 && m.size(0) == l && m.size(1) == s) ||
                    (m.dim() == 3 && m.size(0) == n * heads && m.size(1) == l && m.size(2) == s);
    XTEN_CHECK(ok, ValueError, op,
               "attn_mask must be [L, S] = [{}, {}] or [N * num_heads, L, S] = [{}, {}, {}], but "
               "got {}",
               l, s, n * heads, l, s, m.sizes());
    const Tensor a = additive(m, q.dtype());
    mask = m.dim() == 2 ? a : a.reshape({n, heads, l, s});
  }
  if (key_padding_mask && key_padding_mask->defined()) {
    const Tensor& m = *key_padding_mask;
    XTEN_CHECK(m.dim() == (batched ? 2 : 1) && m.size(-1) == s && (!batched || m.size(0) == n),
               ValueError, op, "key_padding_mask must be [N, S] = [{}, {}], but got {}", n, s,
               m.sizes());
    const Tensor a = additive(m, q.dtype()).reshape({n, 1, 1, s});
    mask = mask ? *mask + a : a;
  }
  if (mask && is_causal) {  // a causal hint beside other masks: the causal mask joins them
    *mask = *mask + generate_square_subsequent_mask(l, TensorOptions(q.dtype()).device(q.device()))
                        .narrow(1, 0, s);
    is_causal = false;
  }
  const double p = is_training() ? options.dropout() : 0.0;
  Tensor out, weights;
  if (need_weights) {
    std::tie(out, weights) = _scaled_dot_product_attention_math(q, k, v, mask, p, is_causal);
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
  } else {
    out = scaled_dot_product_attention(q, k, v, mask, p, is_causal);
  }
  out = out_proj(out.transpose(1, 2).reshape({n, l, e}));  // heads merged: a view of flash's output
  if (!batched) return {out.squeeze(0), weights};
  return {options.batch_first() ? out : out.transpose(0, 1), weights};
}

std::string MultiheadAttentionImpl::extra_repr() const {
  return fmt::format("embed_dim={}, num_heads={}, dropout={}, batch_first={}", options.embed_dim(),
                     options.num_heads(), options.dropout(),
                     options.batch_first() ? "true" : "false");
}

// ---- layers -----------------------------------------------------------------------------------

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& o)
    : Module("TransformerEncoderLayer"), options(o) {
  check_layer_options("TransformerEncoderLayer", o);
  self_attn = register_module("self_attn", MultiheadAttention(attention_options(o)));
  linear1 = register_module("linear1",
                            Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2",
                            Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", LayerNorm(norm_options(o)));
  norm2 = register_module("norm2", LayerNorm(norm_options(o)));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src,
                                            const std::optional<Tensor>& src_mask,
                                            const std::optional<Tensor>& src_key_padding_mask,
                                            bool is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1(
        std::get<0>(self_attn(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout2(linear2(dropout(activate(options.activation(), linear1(x)))));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa(norm1(x));
    return x + ff(norm2(x));
  }
  x = norm1(x + sa(x));
  return norm2(x + ff(x));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& o)
    : Module("TransformerDecoderLayer"), options(o) {
  check_layer_options("TransformerDecoderLayer", o);
  self_attn = register_module("self_attn", MultiheadAttention(attention_options(o)));
  multihead_attn = register_module("multihead_attn", MultiheadAttention(attention_options(o)));
  linear1 = register_module("linear1",
                            Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2",
                            Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias())));
  norm1 = register_module("norm1", LayerNorm(norm_options(o)));
  norm2 = register_module("norm2", LayerNorm(norm_options(o)));
  norm3 = register_module("norm3", LayerNorm(norm_options(o)));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory,
                                            const std::optional<Tensor>& tgt_mask,
                                            const std::optional<Tensor>& memory_mask,
                                            const std::optional<Tensor>& tgt_key_padding_mask,
                                            const std::optional<Tensor>& memory_key_padding_mask,
                                            bool tgt_is_causal, bool memory_is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(
        self_attn(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2(std::get<0>(multihead_attn(x, memory, memory, memory_key_padding_mask, false,
                                               memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout3(linear2(dropout(activate(options.activation(), linear1(x)))));
  };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + sa(norm1(x));
    x = x + mha(norm2(x));
    return x + ff(norm3(x));
  }
  x = norm1(x + sa(x));
  x = norm2(x + mha(x));
  return norm3(x + ff(x));
}

// ---- stacks -----------------------------------------------------------------------------------

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderOptions& o)
    : Module("TransformerEncoder"), options(o) {
  XTEN_CHECK(o.num_layers() >= 0, ValueError, "TransformerEncoder",
             "num_layers must be non-negative, but got {}", o.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < o.num_layers(); ++i)
    layers->push_back(TransformerEncoderLayer(o.encoder_layer()));
  copy_first_layer(layers);
  if (o.final_norm()) norm = register_module("norm", LayerNorm(norm_options(o.encoder_layer())));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const std::optional<Tensor>& mask,
                                       const std::optional<Tensor>& src_key_padding_mask,
                                       bool is_causal) {
  Tensor x = src;
  for (size_t i = 0; i < layers->size(); ++i)
    x = std::static_pointer_cast<TransformerEncoderLayerImpl>((*layers)[i])
            ->forward(x, mask, src_key_padding_mask, is_causal);
  return norm.is_empty() ? x : norm(x);
}

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderOptions& o)
    : Module("TransformerDecoder"), options(o) {
  XTEN_CHECK(o.num_layers() >= 0, ValueError, "TransformerDecoder",
             "num_layers must be non-negative, but got {}", o.num_layers());
  layers = register_module("layers", ModuleList());
  for (int64_t i = 0; i < o.num_layers(); ++i)
    layers->push_back(TransformerDecoderLayer(o.decoder_layer()));
  copy_first_layer(layers);
  if (o.final_norm()) norm = register_module("norm", LayerNorm(norm_options(o.decoder_layer())));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory,
                                       const std::optional<Tensor>& tgt_mask,
                                       const std::optional<Tensor>& memory_mask,
                                       const std::optional<Tensor>& tgt_key_padding_mask,
                                       const std::optional<Tensor>& memory_key_padding_mask,
                                       bool tgt_is_causal, bool memory_is_causal) {
  Tensor x = tgt;
  for (size_t i = 0; i < layers->size(); ++i)
    x = std::static_pointer_cast<TransformerDecoderLayerImpl>((*layers)[i])
            ->forward(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask, tgt_is_causal, memory_is_causal);
  return norm.is_empty() ? x : norm(x);
}

Tensor generate_square_subsequent_mask(int64_t n, TensorOptions options) {
  const Tensor above = ones({n, n}, TensorOptions(kBool).device(options.device())).triu(1);
  return zeros({n, n}, options).masked_fill(above, -std::numeric_limits<double>::infinity());
}

}  // namespace xten::nn
