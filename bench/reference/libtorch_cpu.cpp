// bench_cpu's measurements through libtorch's C++ API (same lines, same sizes), for a
// side-by-side figure on one machine with the same thread count. Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_cpu.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_cpu
// Run: ./libtorch_cpu THREADS
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <ATen/Version.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "libtorch_cpu_cases.h"

namespace {

// torchvision's ResNet-18, written with torch::nn (torchvision has no C++ models here).
struct BasicBlockImpl : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::BatchNorm2d b1{nullptr}, b2{nullptr};
  torch::nn::Sequential down{nullptr};
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    using namespace torch::nn;
    c1 = register_module("c1",
                         Conv2d(Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    b1 = register_module("b1", BatchNorm2d(out));
    c2 = register_module("c2", Conv2d(Conv2dOptions(out, out, 3).padding(1).bias(false)));
    b2 = register_module("b2", BatchNorm2d(out));
    if (stride != 1 || in != out)
      down = register_module(
          "down", Sequential(Conv2d(Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                             BatchNorm2d(out)));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(b1(c1(x)));
    y = b2(c2(y));
    return torch::relu(y + (down ? down->forward(x) : x));
  }
};
TORCH_MODULE(BasicBlock);

struct ResNet18Impl : torch::nn::Module {
  torch::nn::Conv2d stem{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Sequential layers{nullptr};
  torch::nn::Linear fc{nullptr};
  ResNet18Impl() {
    using namespace torch::nn;
    stem =
        register_module("stem", Conv2d(Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn = register_module("bn", BatchNorm2d(64));
    layers =
        register_module("layers", Sequential(BasicBlock(64, 64, 1), BasicBlock(64, 64, 1),
                                             BasicBlock(64, 128, 2), BasicBlock(128, 128, 1),
                                             BasicBlock(128, 256, 2), BasicBlock(256, 256, 1),
                                             BasicBlock(256, 512, 2), BasicBlock(512, 512, 1)));
    fc = register_module("fc", Linear(512, 1000));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(bn(stem(x))), 3, 2, 1);
    x = layers->forward(x);
    return fc(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
};
TORCH_MODULE(ResNet18);

void resnet18_rate(const char* dtname, torch::Dtype dt) {
  torch::manual_seed(0);
  ResNet18 net;
  net->eval();
  net->to(dt);
  auto images = torch::randn({8, 3, 224, 224}).to(dt);
  c10::InferenceMode im;
  const double ms = ms_per_call([&] { auto y = net->forward(images); }, 5);
  std::printf("resnet18 %s forward batch 8: %.1f ms (%.0f images/s)\n", dtname, ms, 8e3 / ms);
}

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
  resnet18_rate("f32", torch::kFloat);
  resnet18_rate("bf16", torch::kBFloat16);
  resnet18_autocast_rate();
  return 0;
}
