// The CPU-speed goals (issue "CPU at full speed"): the machine's peak FMA rate, then the list of
// cpu_cases.h (matrix products, convolution forward and both backwards, the memory-bound ops,
// ResNet-18 inference), then ResNet-18 under autocast, at a given thread count.
// bench/reference/libtorch_cpu.cpp prints the same lines through libtorch; run both in one command
// on one machine (bench/README.md, "bench_cpu"). Run: build/bench/bench_cpu THREADS
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <xten/xten.h>

#include "cpu_cases.h"

using namespace xten;

namespace {

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
  std::printf("peak FMA f32 (%s, %d threads): %.0f GFLOP/s\n", avx512 ? "avx512" : "avx2", threads,
              flops / s / 1e9);
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

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  set_num_threads(threads);
  std::printf("xten, %d threads, %s\n", threads, cpu_backend_summary().c_str());
  peak_fma(threads);
  print_cases(xten_cpu_cases());
  resnet18_autocast_rate();
  return 0;
}
