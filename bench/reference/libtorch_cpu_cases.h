#pragma once
// bench_cpu's list (../cpu_case.h) through libtorch, with torchvision's ResNet-18 written in
// torch::nn: the same cases as xten_cpu_cases() (../cpu_cases.h), in the same order; read by
// libtorch_cpu.cpp and interleaved_cpu_libtorch.cpp.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "../cpu_case.h"

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

inline std::vector<CpuCase> libtorch_cpu_cases() {
  torch::manual_seed(0);
  std::vector<CpuCase> out;
  auto mm = [&](const char* name, int64_t n, torch::Dtype dt) {
    auto a = torch::randn({n, n}).to(dt), b = torch::randn({n, n}).to(dt);
    out.push_back({name, 2.0 * n * n * n, CpuCase::kFlops, n >= 2048 ? 5 : 20,
                   [a, b] { auto c = torch::mm(a, b); }});
  };
  mm("mm f32 1024", 1024, torch::kFloat);
  mm("mm f32 2048", 2048, torch::kFloat);
  mm("mm bf16 1024", 1024, torch::kBFloat16);
  const double conv = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  for (auto dt : {torch::kFloat, torch::kBFloat16}) {
    const std::string d = dt == torch::kFloat ? "f32" : "bf16";
    auto x = torch::randn({8, 64, 56, 56}).to(dt), w = (torch::randn({64, 64, 3, 3}) * 0.05).to(dt);
    auto g = torch::randn({8, 64, 56, 56}).to(dt);
    out.push_back({"conv2d " + d + " forward", conv, CpuCase::kFlops, 5, [x, w] {
                     torch::NoGradGuard ng;
                     auto y = torch::conv2d(x, w, {}, 1, 1);
                   }});
    auto xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
    auto yx = torch::conv2d(xg, w, {}, 1, 1), yw = torch::conv2d(x, wg, {}, 1, 1);
    out.push_back({"conv2d " + d + " backward-data", conv, CpuCase::kFlops, 5,
                   [=] { auto r = torch::autograd::grad({yx}, {xg}, {g}, true); }});
    out.push_back({"conv2d " + d + " backward-weights", conv, CpuCase::kFlops, 5,
                   [=] { auto r = torch::autograd::grad({yw}, {wg}, {g}, true); }});
  }
  const int64_t n = 16 << 20;
  auto x = torch::ones({n}), y = torch::ones({n});
  out.push_back(
      {"add 16M f32 allocating", 3.0 * n * 4, CpuCase::kBytes, 30, [x, y] { auto z = x + y; }});
  out.push_back({"sum 16M f32", 4.0 * n, CpuCase::kBytes, 30, [x] { auto z = x.sum(); }});
  auto s = torch::randn({4096, 4096});
  out.push_back({"softmax 4096x4096 f32", 0, CpuCase::kMilliseconds, 10,
                 [s] { auto z = torch::softmax(s, 1); }});
  for (auto dt : {torch::kFloat, torch::kBFloat16}) {
    torch::manual_seed(0);
    ResNet18 net;
    net->eval();
    net->to(dt);
    auto images = torch::randn({8, 3, 224, 224}).to(dt);
    out.push_back(
        {std::string("resnet18 ") + (dt == torch::kFloat ? "f32" : "bf16") + " forward batch 8", 8,
         CpuCase::kMilliseconds, 5, [net, images]() mutable {  // forward is not const
           c10::InferenceMode im;
           auto y = net->forward(images);
         }});
  }
  return out;
}
