// The MLP training step through nn and optim (issue: nn/optim): nn::Sequential(Linear(784,
// 256), ReLU, Linear(256, 10)), CrossEntropyLoss, optim::SGD with momentum; zero_grad, forward,
// backward, step. libtorch's C++ front end doing the same, with the same timing:
// bench/reference/libtorch_nn.cpp. Figures: bench/README.md.
// Run: build/bench/bench_nn [THREADS...]   (default: 1 and all threads)
//
// Timing: reference/block_timing.h, shared with libtorch_nn (the mean over all steps and the
// median of the blocks' means).
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <xten/nn/modules.h>
#include <xten/optim/optimizer.h>
#include <xten/xten.h>

#include "reference/block_timing.h"

using namespace xten;

namespace {

void mlp_step(int threads) {
  set_num_threads(threads);
  manual_seed(0);
  nn::Sequential model(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  nn::CrossEntropyLoss loss_fn;
  const Tensor x = randn({64, 784}), target = randint(10, {64});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = loss_fn(model(x), target);
    loss.backward();
    opt.step();
  };
  const BlockTimes bt = time_in_blocks(step);
  std::printf("xten nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              bt.mean_us, bt.median_us);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  for (int t : threads) {
    if (t < 1) {
      std::fprintf(stderr, "bench_nn: thread counts must be positive, got %d\n", t);
      return 2;
    }
    mlp_step(t);
  }
}
