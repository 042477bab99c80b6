// bench_nn's MLP step through libtorch's C++ front end, for a side-by-side figure on one
// machine (same threads). Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_nn.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_nn
// Run: ./libtorch_nn THREADS
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>

#include "block_timing.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(threads);
  torch::manual_seed(0);
  torch::nn::Sequential model(torch::nn::Linear(784, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  torch::nn::CrossEntropyLoss loss_fn;
  const torch::Tensor x = torch::randn({64, 784}), target = torch::randint(10, {64});
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss = loss_fn(model->forward(x), target);
    loss.backward();
    opt.step();
  };
  const BlockTimes bt = time_in_blocks(step);  // as bench_nn's (block_timing.h)
  std::printf("libtorch nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              bt.mean_us, bt.median_us);
}
