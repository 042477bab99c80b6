// bench_autograd's measurements through libtorch's C++ API, for a side-by-side figure on one
// machine (same threads). Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_autograd.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_autograd
// Run: ./libtorch_autograd THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <torch/torch.h>

template <class F>
double us_per_call(F f, int n) {
  for (int i = 0; i < n / 10 + 1; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(1);
  torch::Tensor a = torch::ones({1}), b = torch::ones({1});
  std::printf("libtorch tiny add, no grad:     %.3f us\n", us_per_call([&] { auto c = a + b; }, 1000000));
  torch::Tensor ag = torch::ones({1}, torch::requires_grad());
  std::printf("libtorch tiny add, recorded:    %.3f us\n", us_per_call([&] { auto c = ag + b; }, 1000000));
  std::printf("libtorch 10-op chain + backward: %.3f us\n", us_per_call([&] {
                auto y = ag;
                for (int i = 0; i < 10; ++i) y = y * 1.5;
                y.backward();
              }, 100000));
  at::set_num_threads(threads);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({64, 784}), target = torch::randint(0, 10, {64});
  torch::Tensor w1 = (torch::randn({256, 784}) * 0.03).requires_grad_();
  torch::Tensor b1 = torch::zeros({256}).requires_grad_();
  torch::Tensor w2 = (torch::randn({10, 256}) * 0.06).requires_grad_();
  torch::Tensor b2 = torch::zeros({10}).requires_grad_();
  std::vector<torch::Tensor> params{w1, b1, w2, b2};
  std::printf("libtorch MLP step, %d threads:   %.1f us\n", threads, us_per_call([&] {
                auto h = torch::relu(torch::linear(x, w1, b1));
                auto loss = torch::cross_entropy_loss(torch::linear(h, w2, b2), target);
                for (auto& p : params) p.mutable_grad() = torch::Tensor();
                loss.backward();
                torch::NoGradGuard ng;
                for (auto& p : params) p.sub_(p.grad() * 0.01);
              }, 300));
  torch::Tensor cx = torch::randn({8, 64, 56, 56}, torch::requires_grad());
  torch::Tensor cw = torch::randn({64, 64, 3, 3}, torch::requires_grad());
  const double flops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  double us = us_per_call([&] { torch::NoGradGuard ng; auto y = torch::conv2d(cx, cw, {}, 1, 1); }, 5);
  std::printf("libtorch conv2d forward, %d threads:  %.1f GFLOP/s\n", threads, flops / us / 1e3);
  auto y = torch::conv2d(cx, cw, {}, 1, 1);
  auto g = torch::randn(y.sizes());
  us = us_per_call([&] { torch::autograd::grad({y}, {cx, cw}, {g}, true); }, 5);
  std::printf("libtorch conv2d backward, %d threads: %.1f GFLOP/s\n", threads, 2 * flops / us / 1e3);
}
