// The MLP training step through nn and optim (issue: nn/optim): nn::Sequential(Linear(784,
// 256), ReLU, Linear(256, 10)), CrossEntropyLoss, optim::SGD with momentum; zero_grad, forward,
// backward, step, on 1 and all threads. libtorch's C++ front end doing the same:
// bench/reference/libtorch_nn.cpp. Figures: bench/README.md.
#include <thread>

#include "bench_util.h"

#include <xten/nn/modules.h>
#include <xten/optim/optimizer.h>

using namespace xten;

namespace {

void BM_nn_mlp_step(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  manual_seed(0);
  nn::Sequential model(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  nn::CrossEntropyLoss loss_fn;
  const Tensor x = randn({64, 784}), target = randint(10, {64});
  for (auto _ : s) {
    opt.zero_grad();
    Tensor loss = loss_fn(model(x), target);
    loss.backward();
    opt.step();
  }
}
BENCHMARK(BM_nn_mlp_step)
    ->Arg(1)
    ->Arg(static_cast<int>(std::thread::hardware_concurrency()))
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
