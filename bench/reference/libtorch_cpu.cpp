// bench_cpu's measurements through libtorch's C++ API (same lines, same sizes), for a
// side-by-side figure on one machine with the same thread count. Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_cpu.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_cpu
// Run: ./libtorch_cpu THREADS
#include <cstdio>
#include <cstdlib>

#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "libtorch_cpu_cases.h"

namespace {

// The float32 model under CPU autocast bfloat16.
void resnet18_autocast_rate() {
  torch::manual_seed(0);
  ResNet18 net;
  net->eval();
  auto images = torch::randn({8, 3, 224, 224});
  c10::InferenceMode im;
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const double ms = ms_per_call([&] { auto y = net->forward(images); }, 5);
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  std::printf("resnet18 f32 autocast bf16 forward batch 8: %.1f ms (%.0f images/s)\n", ms,
              8e3 / ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(threads);
  std::printf("libtorch %s, %d threads, capability %s\n", TORCH_VERSION, threads,
              at::get_cpu_capability().c_str());
  print_cases(libtorch_cpu_cases());
  resnet18_autocast_rate();
  return 0;
}
