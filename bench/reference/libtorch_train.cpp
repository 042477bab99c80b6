// bench_train's small-CNN training step through libtorch's C++ front end, for a side-by-side
// figure on one machine (same threads). Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_train.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_train
// Run: ./libtorch_train THREADS [STEPS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>

namespace nn = torch::nn;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  at::set_num_threads(threads);
  torch::manual_seed(0);
  // models::SmallCNN's layers.
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false)),
                       nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2),
                       nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)),
                       nn::BatchNorm2d(64), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                       nn::Dropout(0.25), nn::Linear(64 * 7 * 7, 32), nn::ReLU(),
                       nn::Linear(32, 10));
  torch::optim::SGD opt(model->parameters(),
                        torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4));
  const int64_t batch = 64;
  const torch::Tensor x = torch::randn({batch, 1, 28, 28}), target = torch::randint(10, {batch});
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), target);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 20; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("libtorch SmallCNN training, %d threads: %.0f images/s (%.2f ms/step)\n", threads,
              steps * batch / s, 1e3 * s / steps);
}
