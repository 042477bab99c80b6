// bench_gpt's measurements through libtorch's C++ API: scaled_dot_product_attention (PyTorch's
// CPU flash kernel) forward + backward, and the same GPT (models::GPT's layers: token and
// position embeddings, pre-norm blocks of causal self-attention and a 4x gelu MLP, final norm,
// an untied output projection) trained with AdamW and gradient clipping. Not built by CMake.
// Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_gpt.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_gpt
// Run: ./libtorch_gpt THREADS [attention|train ...]
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <torch/torch.h>

#include "block_timing.h"

namespace nn = torch::nn;

namespace {

struct BlockImpl : nn::Module {
  BlockImpl(int64_t c, int64_t heads) : heads(heads) {
    ln_1 = register_module("ln_1", nn::LayerNorm(nn::LayerNormOptions({c})));
    c_attn = register_module("c_attn", nn::Linear(c, 3 * c));
    attn_proj = register_module("attn_proj", nn::Linear(c, c));
    ln_2 = register_module("ln_2", nn::LayerNorm(nn::LayerNormOptions({c})));
    c_fc = register_module("c_fc", nn::Linear(c, 4 * c));
    c_proj = register_module("c_proj", nn::Linear(4 * c, c));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), c = x.size(2);
    auto qkv = c_attn(ln_1(x)).split(c, 2);
    auto heads_of = [&](const torch::Tensor& z) {
      return z.view({b, t, heads, c / heads}).transpose(1, 2);
    };
    auto y = at::scaled_dot_product_attention(heads_of(qkv[0]), heads_of(qkv[1]), heads_of(qkv[2]),
                                              {}, 0.0, true);
    auto a = x + attn_proj(y.transpose(1, 2).contiguous().view({b, t, c}));
    return a + c_proj(torch::gelu(c_fc(ln_2(a))));
  }
  int64_t heads;
  nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  nn::Linear c_attn{nullptr}, attn_proj{nullptr}, c_fc{nullptr}, c_proj{nullptr};
};
TORCH_MODULE(Block);

struct GPTImpl : nn::Module {
  GPTImpl(int64_t vocab, int64_t block, int64_t layers, int64_t heads, int64_t c) {
    wte = register_module("wte", nn::Embedding(vocab, c));
    wpe = register_module("wpe", nn::Embedding(block, c));
    h = register_module("h", nn::ModuleList());
    for (int64_t i = 0; i < layers; ++i) h->push_back(Block(c, heads));
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c})));
    lm_head = register_module("lm_head", nn::Linear(c, vocab));
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    auto x = wte(idx) + wpe(torch::arange(idx.size(1)));
    for (auto& m : *h) x = m->as<BlockImpl>()->forward(x);
    return lm_head(ln_f(x));
  }
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::ModuleList h{nullptr};
  nn::LayerNorm ln_f{nullptr};
  nn::Linear lm_head{nullptr};
};
TORCH_MODULE(GPT);

void attention(int threads) {
  for (int64_t len : {1024, 4096})
    for (auto dt : {torch::kFloat, torch::kBFloat16}) {
      torch::manual_seed(0);
      auto q = torch::randn({8, 8, len, 64}).to(dt).requires_grad_();
      auto k = torch::randn({8, 8, len, 64}).to(dt).requires_grad_();
      auto v = torch::randn({8, 8, len, 64}).to(dt).requires_grad_();
      auto g = torch::randn({8, 8, len, 64}).to(dt);
      auto step = [&] {
        auto o = at::scaled_dot_product_attention(q, k, v, {}, 0.0, true);
        torch::autograd::grad({o}, {q, k, v}, {g});
      };
      const double s = median_seconds(step, 1, len > 1024 ? 2 : 5);
      std::printf("libtorch attention fwd+bwd L=%lld %s causal, %d threads: median %.2f ms\n",
                  (long long)len, dt == torch::kFloat ? "float32" : "bfloat16", threads, s * 1e3);
      std::fflush(stdout);
    }
}

void train(int threads) {
  torch::manual_seed(0);
  GPT gpt(113, 128, 4, 4, 256);
  torch::optim::AdamW opt(gpt->parameters(),
                          torch::optim::AdamWOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1));
  auto x = torch::randint(113, {32, 128}), y = torch::randint(113, {32, 128});
  auto step = [&] {
    opt.zero_grad();
    auto logits = gpt->forward(x);
    torch::nn::functional::cross_entropy(logits.view({-1, 113}), y.view({-1})).backward();
    torch::nn::utils::clip_grad_norm_(gpt->parameters(), 1.0);
    opt.step();
  };
  const double s = median_seconds(step, 3, threads == 1 ? 5 : 20);
  std::printf(
      "libtorch gpt train step (4x4x256, block 128, batch 32), %d threads: median %.2f "
      "ms, %.0f tokens/s\n",
      threads, s * 1e3, 32 * 128 / s);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(threads);
  auto wanted = [&](const char* what) {
    if (argc <= 2) return true;
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], what) == 0) return true;
    return false;
  };
  if (wanted("attention")) attention(threads);
  if (wanted("train")) train(threads);
  return 0;
}
