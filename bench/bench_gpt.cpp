// The transformer goals (bench/README.md, "bench_gpt"): scaled_dot_product_attention forward +
// backward (batch 8, 8 heads, head size 64, causal; lengths 1,024 and 4,096; float32 and
// bfloat16), a GPT training step of examples/gpt's reference configuration (tokens/s), and
// generation at 512 tokens of context with and without the key/value cache. Its libtorch twin is
// bench/reference/libtorch_gpt.cpp (same lines, "libtorch" for "xten"); compare_gpt.sh runs both.
// Usage: bench_gpt THREADS [attention|train|generate ...] (default: all)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <xten/xten.h>

#include "reference/block_timing.h"

using namespace xten;

namespace {

void attention(int threads) {
  for (int64_t len : {1024, 4096})
    for (ScalarType dt : {kFloat, kBFloat16}) {
      manual_seed(0);
      const Tensor q = randn({8, 8, len, 64}).to(dt).requires_grad_();
      const Tensor k = randn({8, 8, len, 64}).to(dt).requires_grad_();
      const Tensor v = randn({8, 8, len, 64}).to(dt).requires_grad_();
      const Tensor g = randn({8, 8, len, 64}).to(dt);
      auto step = [&] {
        const Tensor o = scaled_dot_product_attention(q, k, v, std::nullopt, 0.0, true);
        autograd::grad({o}, {q, k, v}, {g});
      };
      const double s = median_seconds(step, 1, len > 1024 ? 2 : 5);
      std::printf("xten attention fwd+bwd L=%lld %s causal, %d threads: median %.2f ms\n",
                  (long long)len, dt == kFloat ? "float32" : "bfloat16", threads, s * 1e3);
      std::fflush(stdout);
    }
}

// examples/gpt's reference configuration (3,250,289 parameters; vocabulary 113).
models::GPT reference_gpt(int64_t block) {
  return models::GPT(
      models::GPTConfig(113).block_size(block).n_layer(4).n_head(4).n_embd(256).tie_embeddings(
          false));
}

void train(int threads) {
  manual_seed(0);
  models::GPT gpt = reference_gpt(128);
  optim::AdamW opt(gpt->parameters(),
                   optim::AdamOptions(1e-3).betas({0.9, 0.99}).weight_decay(0.1));
  const std::vector<Tensor> params = gpt->parameters();
  const Tensor x = randint(113, {32, 128}), y = randint(113, {32, 128});
  auto step = [&] {
    opt.zero_grad();
    gpt->loss(x, y).backward();
    nn::utils::clip_grad_norm_(params, 1.0);
    opt.step();
  };
  const double s = median_seconds(step, 3, threads == 1 ? 5 : 20);
  if (std::getenv("XTEN_BENCH_PROFILE")) {  // the op table of three steps
    profiler::Profiler prof{profiler::ProfilerOptions()};
    prof.start();
    for (int i = 0; i < 3; ++i) step();
    prof.stop();
    std::printf("%s\n", prof.key_averages().table(25).c_str());
  }
  std::printf(
      "xten gpt train step (4x4x256, block 128, batch 32), %d threads: median %.2f ms, "
      "%.0f tokens/s\n",
      threads, s * 1e3, 32 * 128 / s);
  std::fflush(stdout);
  // The same step compiled whole (docs/compile.md, "Training steps"): clipping in its two-step
  // form, which reads nothing back.
  auto compiled = compile([&](const Tensor& xb, const Tensor& yb) {
    opt.zero_grad();
    Tensor loss = gpt->loss(xb, yb);
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(p.grad());
    nn::utils::clip_grads_with_norm_(params, 1.0, nn::utils::get_total_norm(grads));
    opt.step();
    return loss;
  });
  const double c = median_seconds([&] { compiled(x, y); }, 3, threads == 1 ? 5 : 20);
  std::printf(
      "xten gpt train step compiled, %d threads: median %.2f ms, %.0f tokens/s (%.2fx eager; "
      "%lld calls ran the graph)\n",
      threads, c * 1e3, 32 * 128 / c, s / c,
      static_cast<long long>(compiled.stats().compiled_calls));
  std::fflush(stdout);
}

void generate(int threads) {
  manual_seed(0);
  models::GPT gpt = reference_gpt(1024);
  gpt->eval();
  const Tensor prompt = randint(113, {1, 512});
  const int64_t n = 32;
  const double cached = median_seconds([&] { gpt->generate(prompt, n, 1.0, 0, true); }, 1, 3);
  const double full = median_seconds([&] { gpt->generate(prompt, n, 1.0, 0, false); }, 1, 3);
  std::printf(
      "xten gpt generate at 512 context, %d threads: cached %.2f ms/token, uncached %.2f "
      "ms/token, %.1fx\n",
      threads, cached / n * 1e3, full / n * 1e3, full / cached);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  set_num_threads(threads);
  auto wanted = [&](const char* what) {
    if (argc <= 2) return true;
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], what) == 0) return true;
    return false;
  };
  if (wanted("attention")) attention(threads);
  if (wanted("train")) train(threads);
  if (wanted("generate")) generate(threads);
  return 0;
}
