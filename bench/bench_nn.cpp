// The MLP training step through nn and optim (issue: nn/optim): nn::Sequential(Linear(784,
// 256), ReLU, Linear(256, 10)), CrossEntropyLoss, optim::SGD with momentum; zero_grad, forward,
// backward, step. libtorch's C++ front end doing the same, with the same timing:
// bench/reference/libtorch_nn.cpp. Figures: bench/README.md.
// Run: build/bench/bench_nn [THREADS...]   (default: 1 and all threads)
//
// Timing: 50 steps of warm-up, then 15 blocks of 100 steps. Printed: the mean over all 1,500
// steps and the median of the 15 blocks' means. The host these figures come from is shared: a
// stall of a few ms hits one block of either program, which moves the mean and not the median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <xten/nn/modules.h>
#include <xten/optim/optimizer.h>
#include <xten/xten.h>

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
  for (int i = 0; i < 50; ++i) step();
  std::vector<double> blocks;
  double total = 0;
  for (int b = 0; b < 15; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; ++i) step();
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    blocks.push_back(us / 100);
    total += us;
  }
  std::sort(blocks.begin(), blocks.end());
  std::printf("xten nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              total / 1500, blocks[blocks.size() / 2]);
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
