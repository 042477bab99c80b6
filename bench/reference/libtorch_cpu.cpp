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

namespace {

template <class F>
double ms_per_call(F f, int n) {
  for (int i = 0; i < n / 5 + 1; ++i) f();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
         n;
}

// torchvision's ResNet-18, written with torch::nn (torchvision has no C++ models here).
struct BasicBlockImpl : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr};
  torch::nn::BatchNorm2d b1{nullptr}, b2{nullptr};
  torch::nn::Sequential down{nullptr};
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    using namespace torch::nn;
    c1 = register_module("c1", Conv2d(Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    b1 = register_module("b1", BatchNorm2d(out));
    c2 = register_module("c2", Conv2d(Conv2dOptions(out, out, 3).padding(1).bias(false)));
    b2 = register_module("b2", BatchNorm2d(out));
    if (stride != 1 || in != out)
      down = register_module("down", Sequential(Conv2d(Conv2dOptions(in, out, 1).stride(stride).bias(false)),
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
    stem = register_module("stem", Conv2d(Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn = register_module("bn", BatchNorm2d(64));
    layers = register_module("layers", Sequential(BasicBlock(64, 64, 1), BasicBlock(64, 64, 1),
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

void mm_rate(const char* label, int64_t n, torch::Dtype dt) {
  auto a = torch::randn({n, n}).to(dt), b = torch::randn({n, n}).to(dt);
  const double ms = ms_per_call([&] { auto c = torch::mm(a, b); }, n >= 2048 ? 5 : 20);
  std::printf("%s: %.0f GFLOP/s\n", label, 2.0 * n * n * n / ms / 1e6);
}

void conv_rates(const char* dtname, torch::Dtype dt) {
  auto x = torch::randn({8, 64, 56, 56}).to(dt), w = (torch::randn({64, 64, 3, 3}) * 0.05).to(dt);
  const double flops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  double ms;
  {
    torch::NoGradGuard ng;
    ms = ms_per_call([&] { auto y = torch::conv2d(x, w, {}, 1, 1); }, 5);
  }
  std::printf("conv2d %s forward: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  auto xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
  auto g = torch::randn({8, 64, 56, 56}).to(dt);
  {
    auto y = torch::conv2d(xg, w, {}, 1, 1);
    ms = ms_per_call([&] { torch::autograd::grad({y}, {xg}, {g}, true); }, 5);
    std::printf("conv2d %s backward-data: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  }
  {
    auto y = torch::conv2d(x, wg, {}, 1, 1);
    ms = ms_per_call([&] { torch::autograd::grad({y}, {wg}, {g}, true); }, 5);
    std::printf("conv2d %s backward-weights: %.0f GFLOP/s\n", dtname, flops / ms / 1e6);
  }
}

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

void memory_bound() {
  const int64_t n = 16 << 20;
  auto x = torch::ones({n}), y = torch::ones({n});
  double ms = ms_per_call([&] { auto z = x + y; }, 30);
  std::printf("add 16M f32 allocating: %.0f GB/s\n", 3.0 * n * 4 / ms / 1e6);
  ms = ms_per_call([&] { auto z = x.sum(); }, 30);
  std::printf("sum 16M f32: %.0f GB/s\n", 1.0 * n * 4 / ms / 1e6);
  auto s = torch::randn({4096, 4096});
  ms = ms_per_call([&] { auto z = torch::softmax(s, 1); }, 10);
  std::printf("softmax 4096x4096 f32: %.2f ms\n", ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  at::set_num_threads(threads);
  std::printf("libtorch %s, %d threads, capability %s\n", TORCH_VERSION,
              threads, at::get_cpu_capability().c_str());
  mm_rate("mm f32 1024", 1024, torch::kFloat);
  mm_rate("mm f32 2048", 2048, torch::kFloat);
  mm_rate("mm bf16 1024", 1024, torch::kBFloat16);
  conv_rates("f32", torch::kFloat);
  conv_rates("bf16", torch::kBFloat16);
  resnet18_rate("f32", torch::kFloat);
  resnet18_rate("bf16", torch::kBFloat16);
  resnet18_autocast_rate();
  memory_bound();
  return 0;
}
