// Autograd's costs (issue "Autograd"): recording per op, an MLP training step (64 x 784 ->
// 256 -> 10, cross entropy, hand-written SGD: forward + backward + update), and conv2d
// 8x64x56x56 3x3 backward beside its forward. Run: build/bench/bench_autograd
// libtorch's side: bench/reference/libtorch_autograd.cpp. Figures: bench/README.md.
#include <thread>

#include "bench_util.h"

using namespace xten;

namespace {

// A 1-element add of tensors that need no gradient: never reaches the autograd layer.
void BM_tiny_add_no_grad(benchmark::State& s) {
  set_num_threads(1);
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : s) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_tiny_add_no_grad);

// The same add recorded: a node with its edges and saved inputs (the graph dies each time).
void BM_tiny_add_recorded(benchmark::State& s) {
  set_num_threads(1);
  Tensor a = ones({1}).requires_grad_(), b = ones({1});
  for (auto _ : s) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_tiny_add_recorded);

// A chain of 10 recorded 1-element ops and its backward.
void BM_tiny_chain_backward(benchmark::State& s) {
  set_num_threads(1);
  Tensor a = ones({1}).requires_grad_();
  for (auto _ : s) {
    Tensor y = a;
    for (int i = 0; i < 10; ++i) y = y * 1.5;
    y.backward();
  }
}
BENCHMARK(BM_tiny_chain_backward);

void BM_mlp_step(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  manual_seed(0);
  Tensor x = randn({64, 784}), target = randint(0, 10, {64});
  Tensor w1 = (randn({256, 784}) * 0.03).requires_grad_(), b1 = zeros({256}).requires_grad_();
  Tensor w2 = (randn({10, 256}) * 0.06).requires_grad_(), b2 = zeros({10}).requires_grad_();
  std::vector<Tensor*> params{&w1, &b1, &w2, &b2};
  for (auto _ : s) {
    Tensor loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), target);
    for (Tensor* p : params) p->grad() = Tensor();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor* p : params) p->sub_(p->grad() * 0.01);
  }
}
BENCHMARK(BM_mlp_step)
    ->Arg(1)
    ->Arg(static_cast<int>(std::thread::hardware_concurrency()))
    ->Unit(benchmark::kMicrosecond);

constexpr double kConvFlops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;  // one direction

void BM_conv2d_forward(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  Tensor x = randn({8, 64, 56, 56}), w = randn({64, 64, 3, 3});
  for (auto _ : s) benchmark::DoNotOptimize(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}));
  s.counters["GFLOP/s"] =
      benchmark::Counter(kConvFlops * s.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_conv2d_forward)
    ->Arg(1)
    ->Arg(static_cast<int>(std::thread::hardware_concurrency()))
    ->Unit(benchmark::kMillisecond);

// Backward-input and backward-weight: twice the forward's flops.
void BM_conv2d_backward(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  Tensor x = randn({8, 64, 56, 56}).requires_grad_(), w = randn({64, 64, 3, 3}).requires_grad_();
  Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  Tensor g = randn(y.sizes());
  for (auto _ : s)
    benchmark::DoNotOptimize(autograd::grad({y}, {x, w}, {g}, /*retain_graph=*/true));
  s.counters["GFLOP/s"] =
      benchmark::Counter(2 * kConvFlops * s.iterations() / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_conv2d_backward)
    ->Arg(1)
    ->Arg(static_cast<int>(std::thread::hardware_concurrency()))
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
