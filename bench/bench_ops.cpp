// The CPU op library's goals (issue "CPU op library"): reduction and softmax bandwidth, GEMM
// against raw Eigen, convolution GFLOP/s, and a ResNet basic block. Run: build/bench/bench_ops
// Figures and what limits them: bench/README.md.
#include <string>

#include <Eigen/Core>
#include "bench_util.h"

using namespace xten;

namespace {

using bench::kBig;

void BM_memcpy(benchmark::State& s) {
  bench::memcpy_reference(s, get_num_threads());
}
BENCHMARK(BM_memcpy)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_sum(benchmark::State& s) {
  Tensor a = ones({kBig});
  for (auto _ : s) benchmark::DoNotOptimize(a.sum());
  s.SetBytesProcessed(s.iterations() * kBig * 4);
}
BENCHMARK(BM_sum)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_softmax(benchmark::State& s) {
  Tensor a = randn({4096, 4096});
  for (auto _ : s) benchmark::DoNotOptimize(softmax(a, 1));
  s.SetBytesProcessed(s.iterations() * 4096 * 4096 * 4 * 2);
}
BENCHMARK(BM_softmax)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_eigen_gemm(benchmark::State& s) {
  const int64_t n = s.range(0);
  Eigen::setNbThreads(get_num_threads());
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n), c(n, n);
  for (auto _ : s) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  s.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_eigen_gemm)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(2048)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_mm(benchmark::State& s) {
  const int64_t n = s.range(0);
  const ScalarType t = s.range(1) ? kBFloat16 : kFloat;
  Tensor a = randn({n, n}).to(t), b = randn({n, n}).to(t);
  for (auto _ : s) benchmark::DoNotOptimize(mm(a, b));
  s.counters["GFLOPS"] =
      benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_mm)
    ->Args({256, 0})
    ->Args({1024, 0})
    ->Args({2048, 0})
    ->Args({1024, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_conv2d(benchmark::State& s) {
  Tensor x = randn({8, 64, 56, 56}), w = randn({64, 64, 3, 3});
  for (auto _ : s) benchmark::DoNotOptimize(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}));
  s.counters["GFLOPS"] = benchmark::Counter(2.0 * 8 * 64 * 56 * 56 * 64 * 9,
                                            benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_conv2d)->UseRealTime()->Unit(benchmark::kMillisecond);

// conv-bn-relu-conv-bn + residual + relu, batch norm in evaluation mode (inference).
void BM_resnet_basic_block(benchmark::State& s) {
  Tensor x = randn({8, 64, 56, 56}), w1 = randn({64, 64, 3, 3}) * 0.05,
         w2 = randn({64, 64, 3, 3}) * 0.05;
  Tensor g = ones({64}), b = zeros({64}), rm = zeros({64}), rv = ones({64});
  for (auto _ : s) {
    Tensor y = conv2d(x, w1, std::nullopt, {1, 1}, {1, 1});
    y = relu(batch_norm(y, g, b, rm, rv, false));
    y = batch_norm(conv2d(y, w2, std::nullopt, {1, 1}, {1, 1}), g, b, rm, rv, false);
    benchmark::DoNotOptimize(relu(y + x));
  }
}
BENCHMARK(BM_resnet_basic_block)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  bench::Collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  std::printf("\nGoals (%d threads; ratios against references measured above):\n",
              get_num_threads());
  const std::string mem = "BM_memcpy/real_time";
  if (c.has("BM_sum/real_time") && c.has(mem))
    std::printf("  sum 16M f32: %.2f GB/s read = %.2f x memcpy (%.2f GB/s)   goal >= 0.80\n",
                c.gbps("BM_sum/real_time"), c.gbps("BM_sum/real_time") / c.gbps(mem), c.gbps(mem));
  if (c.has("BM_softmax/real_time"))
    std::printf("  softmax 4096x4096 dim 1: %.2f ms, %.2f GB/s (read + write)\n",
                c.time("BM_softmax/real_time"), c.gbps("BM_softmax/real_time"));
  for (int n : {256, 1024, 2048}) {
    const std::string ours = "BM_mm/" + std::to_string(n) + "/0/real_time";
    const std::string ref = "BM_eigen_gemm/" + std::to_string(n) + "/real_time";
    if (c.has(ours) && c.has(ref))
      std::printf("  mm f32 %4d: %7.1f GFLOP/s = %.2f x raw Eigen GEMM (%.1f)   goal >= 0.90\n", n,
                  c.counter(ours, "GFLOPS") / 1e9,
                  c.counter(ours, "GFLOPS") / c.counter(ref, "GFLOPS"),
                  c.counter(ref, "GFLOPS") / 1e9);
  }
  if (c.has("BM_mm/1024/1/real_time") && c.has("BM_mm/1024/0/real_time"))
    std::printf("  mm bf16 1024: %.1f GFLOP/s = %.2f x mm f32\n",
                c.counter("BM_mm/1024/1/real_time", "GFLOPS") / 1e9,
                c.counter("BM_mm/1024/1/real_time", "GFLOPS") /
                    c.counter("BM_mm/1024/0/real_time", "GFLOPS"));
  if (c.has("BM_conv2d/real_time"))
    std::printf("  conv2d 8x64x56x56, 3x3, 64 out: %.1f ms, %.1f GFLOP/s\n",
                c.time("BM_conv2d/real_time"), c.counter("BM_conv2d/real_time", "GFLOPS") / 1e9);
  if (c.has("BM_resnet_basic_block/real_time"))
    std::printf("  ResNet basic block 8x64x56x56: %.1f ms\n",
                c.time("BM_resnet_basic_block/real_time"));
  return 0;
}
