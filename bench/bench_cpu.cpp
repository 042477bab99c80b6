// The CPU-speed goals (issue "CPU at full speed"): matrix products, convolution forward and both
// backwards, ResNet-18 inference, the memory-bound ops, and the machine's peak FMA rate, at a
// given thread count. bench/reference/libtorch_cpu.cpp prints the same lines through libtorch;
// run both in one command on one machine (bench/README.md, "bench_cpu").
// Run: build/bench/bench_cpu THREADS
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <xten/xten.h>

using namespace xten;

namespace {

// Median-free and simple: the mean over n calls after n / 5 + 1 warm-up calls.
template <class F>
double ms_per_call(F f, int n) {
  for (int i = 0; i < n / 5 + 1; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

// The peak: 12 independent chains of fused multiply-adds on 16-float (AVX-512) or 8-float
// (AVX2) registers, on every thread at once. 2 FLOP per lane per FMA.
__attribute__((target("avx512f"))) double fma_chains_512(int64_t iters) {
  __m512 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(1.0f + k * 1e-3f);
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
  float out[16];
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  _mm512_storeu_ps(out, s);
  return out[0];
}
__attribute__((target("avx2,fma"))) double fma_chains_256(int64_t iters) {
  __m256 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm256_set1_ps(1.0f + k * 1e-3f);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i)
    for (int k = 0; k < 12; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
  float out[8];
  __m256 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, a[k]);
  _mm256_storeu_ps(out, s);
  return out[0];
}

void peak_fma(int threads) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("fma")) {
    std::printf("peak FMA f32: no FMA instructions\n");
    return;
  }
  const int64_t iters = 20'000'000;
  std::vector<std::thread> pool;
  std::vector<double> sink(threads);
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { sink[t] = avx512 ? fma_chains_512(iters) : fma_chains_256(iters); });
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double flops = 2.0 * (avx512 ? 16 : 8) * 12 * static_cast<double>(iters) * threads;
  std::printf("peak FMA f32 (%s, %d threads): %.0f GFLOP/s\n", avx512 ? "avx512" : "avx2",
              threads, flops / s / 1e9);
}

void mm_rate(const char* label, int64_t n, ScalarType dt) {
  const Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
  const double ms = ms_per_call([&] { (void)mm(a, b); }, n >= 2048 ? 5 : 20);
  std::printf("%s: %.0f GFLOP/s\n", label, 2.0 * n * n * n / ms / 1e6);
}

void conv_rates(const char* dtname, ScalarType dt) {
  const Tensor x = randn({8, 64, 56, 56}).to(dt), w = (randn({64, 64, 3, 3}) * 0.05).to(dt);
  const double flops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  double ms;
  {
    NoGradGuard ng;
    ms = ms_per_call([&] { (void)conv2d(x, w, std::nullopt, {1, 1}, {1, 1}); }, 5);
  }
  std::printf("conv2d %s forward: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
  const Tensor g = randn({8, 64, 56, 56}).to(dt);
  {
    const Tensor y = conv2d(xg, w, std::nullopt, {1, 1}, {1, 1});
    ms = ms_per_call([&] { (void)autograd::grad({y}, {xg}, {g}, true); }, 5);
    std::printf("conv2d %s backward-data: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  }
  {
    const Tensor y = conv2d(x, wg, std::nullopt, {1, 1}, {1, 1});
    ms = ms_per_call([&] { (void)autograd::grad({y}, {wg}, {g}, true); }, 5);
    std::printf("conv2d %s backward-weights: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  }
}

void resnet18_rate(const char* dtname, ScalarType dt) {
  manual_seed(0);
  auto net = models::resnet18();
  net->eval();
  net->to(dt);
  const Tensor images = randn({8, 3, 224, 224}).to(dt);
  InferenceMode im;
  const double ms = ms_per_call([&] { (void)net->forward(images); }, 5);
  std::printf("resnet18 %s forward batch 8: %.1f ms (%.0f images/s)\n", dtname, ms, 8e3 / ms);
}

// The float32 model under CPU autocast bfloat16 (what examples/resnet times).
void resnet18_autocast_rate() {
  manual_seed(0);
  auto net = models::resnet18();
  net->eval();
  const Tensor images = randn({8, 3, 224, 224});
  InferenceMode im;
  autocast::AutocastGuard amp(kCPU, kBFloat16);
  const double ms = ms_per_call([&] { (void)net->forward(images); }, 5);
  std::printf("resnet18 f32 autocast bf16 forward batch 8: %.1f ms (%.0f images/s)\n", ms,
              8e3 / ms);
}

void memory_bound() {
  const int64_t n = 16 << 20;
  const Tensor x = ones({n}), y = ones({n});
  double ms = ms_per_call([&] { (void)(x + y); }, 30);
  std::printf("add 16M f32 allocating: %.0f GB/s\n", 3.0 * n * 4 / ms / 1e6);
  ms = ms_per_call([&] { (void)x.sum(); }, 30);
  std::printf("sum 16M f32: %.0f GB/s\n", 1.0 * n * 4 / ms / 1e6);
  const Tensor s = randn({4096, 4096});
  ms = ms_per_call([&] { (void)softmax(s, 1); }, 10);
  std::printf("softmax 4096x4096 f32: %.2f ms\n", ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  set_num_threads(threads);
  std::printf("xten, %d threads, %s\n", threads, cpu_backend_summary().c_str());
  peak_fma(threads);
  mm_rate("mm f32 1024", 1024, kFloat);
  mm_rate("mm f32 2048", 2048, kFloat);
  mm_rate("mm bf16 1024", 1024, kBFloat16);
  conv_rates("f32", kFloat);
  conv_rates("bf16", kBFloat16);
  resnet18_rate("f32", kFloat);
  resnet18_rate("bf16", kBFloat16);
  resnet18_autocast_rate();
  memory_bound();
  return 0;
}
