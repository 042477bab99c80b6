// GPT (models/gpt.h; docs/nn.md, "GPT").
#include <xten/models/gpt.h>

#include <cmath>
#include <limits>

#include <xten/autograd/grad_mode.h>
#include <xten/nn/init.h>

namespace xten::models {
namespace {

const char* kOp = "GPT";

nn::LinearOptions linear(const GPTConfig& c, int64_t in, int64_t out) {
  return nn::LinearOptions(in, out).bias(c.bias());
}

}  // namespace

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GPTConfig& c)
    : Module("CausalSelfAttention"), n_head(c.n_head()), dropout(c.dropout()) {
  c_attn = register_module("c_attn", nn::Linear(linear(c, c.n_embd(), 3 * c.n_embd())));
  c_proj = register_module("c_proj", nn::Linear(linear(c, c.n_embd(), c.n_embd())));
  resid_dropout = register_module("resid_dropout", nn::Dropout(c.dropout()));
}

Tensor CausalSelfAttentionImpl::forward(const Tensor& x, KVCache* cache, size_t layer) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), hd = c / n_head;
  // split, not three narrows: its derivative is one cat (autograd/derivatives/view.cpp).
  const std::vector<Tensor> qkv = c_attn(x).split(c, 2);
  auto heads = [&](int64_t i) {  // [B, H, T, hd], a view of the projection
    return qkv[static_cast<size_t>(i)].reshape({b, t, n_head, hd}).transpose(1, 2);
  };
  const Tensor q = heads(0);
  Tensor k = heads(1), v = heads(2);
  bool causal = true;
  if (cache) {
    Tensor& ck = cache->keys[layer];
    Tensor& cv = cache->values[layer];
    const int64_t past = cache->length;
    ck.narrow(2, past, t).copy_(k);
    cv.narrow(2, past, t).copy_(v);
    k = ck.narrow(2, 0, past + t);
    v = cv.narrow(2, 0, past + t);
    // One new token attends to every cached one; a prompt fills an empty cache causally.
    XTEN_CHECK(past == 0 || t == 1, ValueError, kOp,
               "a cache with {} positions takes one new token at a time, but got {}", past, t);
    causal = past == 0;
  }
  const double p = is_training() ? dropout : 0.0;
  const Tensor y = scaled_dot_product_attention(q, k, v, std::nullopt, p, causal && t > 1);
  return resid_dropout(c_proj(y.transpose(1, 2).reshape({b, t, c})));
}

BlockImpl::BlockImpl(const GPTConfig& c) : Module("Block") {
  auto norm = [&] { return nn::LayerNorm(nn::LayerNormOptions({c.n_embd()}).bias(c.bias())); };
  ln_1 = register_module("ln_1", norm());
  attn = register_module("attn", CausalSelfAttention(c));
  ln_2 = register_module("ln_2", norm());
  c_fc = register_module("c_fc", nn::Linear(linear(c, c.n_embd(), 4 * c.n_embd())));
  c_proj = register_module("c_proj", nn::Linear(linear(c, 4 * c.n_embd(), c.n_embd())));
  mlp_dropout = register_module("mlp_dropout", nn::Dropout(c.dropout()));
}

Tensor BlockImpl::forward(const Tensor& x, KVCache* cache, size_t layer) {
  const Tensor a = x + attn->forward(ln_1(x), cache, layer);
  return a + mlp_dropout(c_proj(gelu(c_fc(ln_2(a)))));
}

GPTImpl::GPTImpl(const GPTConfig& c) : Module("GPT"), config(c) {
  XTEN_CHECK(c.vocab_size() > 0 && c.block_size() > 0 && c.n_layer() >= 0 && c.n_head() > 0 &&
                 c.n_embd() > 0 && c.n_embd() % c.n_head() == 0,
             ValueError, kOp,
             "expected positive vocab_size ({}), block_size ({}), n_head ({}) and n_embd ({}), "
             "n_embd divisible by n_head, and n_layer ({}) >= 0",
             c.vocab_size(), c.block_size(), c.n_head(), c.n_embd(), c.n_layer());
  wte = register_module("wte", nn::Embedding(c.vocab_size(), c.n_embd()));
  wpe = register_module("wpe", nn::Embedding(c.block_size(), c.n_embd()));
  drop = register_module("drop", nn::Dropout(c.dropout()));
  h = register_module("h", nn::ModuleList());
  for (int64_t i = 0; i < c.n_layer(); ++i) h->push_back(Block(c));
  ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.n_embd()}).bias(c.bias())));
  if (!c.tie_embeddings())
    lm_head = register_module("lm_head", nn::Linear(linear(c, c.n_embd(), c.vocab_size())));
  // GPT-2's initialization.
  NoGradGuard no_grad;
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer()));
  for (auto& [name, p] : named_parameters()) {
    const bool bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    if (name.rfind("ln_", 0) == 0 || name.find(".ln_") != std::string::npos) continue;
    if (bias) {
      nn::init::zeros_(p);
    } else {
      const bool residual =
          name.size() >= 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0;
      nn::init::normal_(p, 0.0, residual ? residual_std : 0.02);
    }
  }
}

Tensor GPTImpl::run(const Tensor& idx, KVCache* cache) {
  XTEN_CHECK(idx.dim() == 2 && idx.dtype() == kLong, ValueError, kOp,
             "expected token indices [batch, length] of dtype Long, but got {} of dtype {}",
             idx.sizes(), to_string(idx.dtype()));
  const int64_t past = cache ? cache->length : 0, t = idx.size(1);
  XTEN_CHECK(past + t <= config.block_size(), ValueError, kOp,
             "{} positions exceed the block size {}", past + t, config.block_size());
  const Tensor pos = arange(past, past + t, 1, TensorOptions(kLong).device(idx.device()));
  Tensor x = drop(wte(idx) + wpe(pos));
  for (size_t i = 0; i < h->size(); ++i)
    x = std::static_pointer_cast<BlockImpl>((*h)[i])->forward(x, cache, i);
  x = ln_f(x);
  if (cache) cache->length += t;
  return lm_head.is_empty() ? linear(x, wte->weight) : lm_head(x);
}

Tensor GPTImpl::forward(const Tensor& idx) {
  return run(idx, nullptr);
}

Tensor GPTImpl::forward_cached(const Tensor& idx, KVCache& cache) {
  if (cache.keys.size() != h->size() || cache.length == 0) {
    const int64_t hd = config.n_embd() / config.n_head();
    const TensorOptions o = TensorOptions(wte->weight.dtype()).device(idx.device());
    cache.keys.assign(h->size(), Tensor());
    cache.values.assign(h->size(), Tensor());
    for (size_t i = 0; i < h->size(); ++i) {
      cache.keys[i] = empty({idx.size(0), config.n_head(), config.block_size(), hd}, o);
      cache.values[i] = empty({idx.size(0), config.n_head(), config.block_size(), hd}, o);
    }
    cache.length = 0;
  }
  return run(idx, &cache);
}

Tensor GPTImpl::loss(const Tensor& idx, const Tensor& targets) {
  const Tensor logits = forward(idx);
  return cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

Tensor GPTImpl::generate(const Tensor& idx, int64_t max_new_tokens, double temperature,
                         int64_t top_k, bool use_cache) {
  XTEN_CHECK(max_new_tokens >= 0 && temperature >= 0 && top_k >= 0, ValueError, kOp,
             "generate needs max_new_tokens >= 0, temperature >= 0 and top_k >= 0, but got {}, "
             "{} and {}",
             max_new_tokens, temperature, top_k);
  NoGradGuard no_grad;
  Tensor out = idx;
  KVCache cache;
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    const int64_t len = out.size(1);
    Tensor logits;
    if (use_cache && len <= config.block_size()) {
      logits = cache.length == 0 ? forward_cached(out, cache)
                                 : forward_cached(out.narrow(1, len - 1, 1), cache);
    } else {
      const int64_t keep = std::min(len, config.block_size());
      logits = forward(out.narrow(1, len - keep, keep));
    }
    logits = logits.select(1, logits.size(1) - 1).to(kFloat);  // [B, vocab]
    Tensor next;
    if (temperature == 0) {
      next = logits.argmax(-1, true);
    } else {
      logits = logits / temperature;
      if (top_k > 0 && top_k < logits.size(-1)) {
        const Tensor kth = std::get<0>(logits.topk(top_k, -1)).narrow(1, top_k - 1, 1);
        logits = logits.masked_fill(logits < kth, -std::numeric_limits<double>::infinity());
      }
      next = softmax(logits, -1).multinomial(1);
    }
    out = cat({out, next}, 1);
  }
  return out;
}

int64_t GPTImpl::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

}  // namespace xten::models
