// The same measurements as bench_core, through libtorch's C++ API, for a side-by-side
// figure on one machine. Not built by CMake (it needs a libtorch install). Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_ops.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_ops
#include <chrono>
#include <cstdio>
#include <thread>

#include <torch/torch.h>

template <class F>
double us_per_call(F f, int n) {
  for (int i = 0; i < n / 10; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

int main() {
  torch::NoGradGuard no_grad;
  at::set_num_threads(1);
  torch::Tensor a = torch::ones({1}), b = torch::ones({1});
  std::printf("libtorch tiny add (1 element, output allocated): %.3f us\n",
              us_per_call([&] { auto c = a + b; }, 2000000));
  torch::Tensor m = torch::ones({64, 32});
  std::printf("libtorch view chain t/reshape/narrow:           %.3f us\n",
              us_per_call(
                  [&] {
                    auto c = m.t().reshape({32, 64}).narrow(0, 2, 16);
                  },
                  2000000));
  const int64_t n = 16 << 20;
  torch::Tensor x = torch::ones({n}), y = torch::ones({n});
  for (int threads : {1, static_cast<int>(std::thread::hardware_concurrency())}) {
    at::set_num_threads(threads);
    const double inplace = us_per_call([&] { x.add_(y); }, 50);
    const double alloc = us_per_call([&] { auto z = x + y; }, 50);
    std::printf("libtorch add 16M f32, %2d thread(s): in-place %.2f GB/s, allocating %.2f GB/s\n",
                threads, 3.0 * n * 4 / inplace / 1e3, 3.0 * n * 4 / alloc / 1e3);
  }
  return 0;
}
