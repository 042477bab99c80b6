// bench_nn's MLP step through libtorch's C++ front end, for a side-by-side figure on one
// machine (same threads). Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_nn.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_nn
// Run: ./libtorch_nn THREADS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <torch/torch.h>

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
  for (int i = 0; i < 50; ++i) step();
  // As bench_nn: 15 blocks of 100 steps; the mean over all steps and the median of the blocks'
  // means (a block that a stall of the shared host hit does not move the median).
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
  std::printf("libtorch nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              total / 1500, blocks[blocks.size() / 2]);
}
