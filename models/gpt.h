#pragma once
// A GPT (decoder-only transformer) in the manner of GPT-2: token and position embeddings,
// pre-norm blocks of causal self-attention and an MLP (4x width, gelu), a final LayerNorm and
// the output projection, tied to the token embedding or its own (docs/nn.md, "GPT").
//
//   auto gpt = xten::models::GPT(xten::models::GPTConfig(113).block_size(128).n_layer(4));
//   Tensor logits = gpt(idx);                       // idx [B, T] Long -> [B, T, vocab]
//   Tensor more = gpt->generate(idx, 200, 0.8, 20);  // sampled with a key/value cache
#include <xten/nn/modules.h>

namespace xten::models {

struct GPTConfig {
  explicit GPTConfig(int64_t vocab_size) : vocab_size_(vocab_size) {}
  XTEN_ARG(int64_t, vocab_size);
  XTEN_ARG(int64_t, block_size) = 128;  // the longest context
  XTEN_ARG(int64_t, n_layer) = 4;
  XTEN_ARG(int64_t, n_head) = 4;
  XTEN_ARG(int64_t, n_embd) = 256;
  XTEN_ARG(double, dropout) = 0.0;
  XTEN_ARG(bool, bias) = true;  // in the Linear and LayerNorm layers
  // The output projection reuses the token embedding (no parameters of its own) or is a Linear
  // n_embd -> vocab_size of its own (with a bias when `bias`).
  XTEN_ARG(bool, tie_embeddings) = true;
};

// Keys and values of every layer for the positions seen so far, so that each new token costs
// one position's work (O(context) attention), not a forward over the whole context.
struct KVCache {
  std::vector<Tensor> keys, values;  // per layer [B, heads, block_size, head size]
  int64_t length = 0;
};

class CausalSelfAttentionImpl : public nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GPTConfig& config);
  // x [B, T, C]. With a cache (layer `layer`), attends to the cached positions too and appends.
  Tensor forward(const Tensor& x, KVCache* cache = nullptr, size_t layer = 0);
  nn::Linear c_attn{nullptr}, c_proj{nullptr};
  nn::Dropout resid_dropout{nullptr};
  int64_t n_head;
  double dropout;
};
XTEN_MODULE(CausalSelfAttention);

class BlockImpl : public nn::Module {
 public:
  explicit BlockImpl(const GPTConfig& config);
  Tensor forward(const Tensor& x, KVCache* cache = nullptr, size_t layer = 0);
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  nn::Linear c_fc{nullptr}, c_proj{nullptr};
  nn::Dropout mlp_dropout{nullptr};
};
XTEN_MODULE(Block);

// Weights start as GPT-2's: N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 n_layer)),
// biases 0, LayerNorms (1, 0).
class GPTImpl : public nn::Module {
 public:
  explicit GPTImpl(const GPTConfig& config);
  // idx [B, T] (T <= block_size) -> logits [B, T, vocab_size].
  Tensor forward(const Tensor& idx);
  // Mean cross-entropy of the logits of idx against targets [B, T].
  Tensor loss(const Tensor& idx, const Tensor& targets);
  // Appends max_new_tokens tokens to idx [B, T], each drawn (multinomial) from the softmax of
  // the last logits over temperature, keeping the top_k largest (0: all); temperature 0 takes
  // the most likely token. With use_cache, keys and values are kept while the context fits the
  // block (beyond it the window slides and every position moves, so each step is a full
  // forward over the last block_size tokens, as without the cache). Runs without grad.
  Tensor generate(const Tensor& idx, int64_t max_new_tokens, double temperature = 1.0,
                  int64_t top_k = 0, bool use_cache = true);
  // Logits [B, T, vocab] of new tokens idx [B, T] after the cache's positions, appending theirs
  // (a cache of cache.length == 0 is filled from scratch).
  Tensor forward_cached(const Tensor& idx, KVCache& cache);
  int64_t num_parameters() const;
  GPTConfig config;
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::Dropout drop{nullptr};
  nn::ModuleList h{nullptr};
  nn::LayerNorm ln_f{nullptr};
  nn::Linear lm_head{nullptr};  // empty when tie_embeddings

 private:
  Tensor run(const Tensor& idx, KVCache* cache);
};
XTEN_MODULE(GPT);

}  // namespace xten::models
