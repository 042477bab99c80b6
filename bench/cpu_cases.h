#pragma once
// bench_cpu's products, convolutions, memory-bound ops and ResNet-18 inference through xten, as
// one list (cpu_case.h):
// bench_cpu times it alone, reference/interleaved_cpu.cpp beside libtorch's list
// (reference/libtorch_cpu_cases.h, the same cases in the same order).
#include <string>
#include <vector>

#include <xten/xten.h>

#include "cpu_case.h"

inline std::vector<CpuCase> xten_cpu_cases() {
  using namespace xten;
  manual_seed(0);
  std::vector<CpuCase> out;
  auto mm_case = [&](const char* name, int64_t n, ScalarType dt) {
    const Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
    out.push_back(
        {name, 2.0 * n * n * n, CpuCase::kFlops, n >= 2048 ? 5 : 20, [a, b] { (void)mm(a, b); }});
  };
  mm_case("mm f32 1024", 1024, kFloat);
  mm_case("mm f32 2048", 2048, kFloat);
  mm_case("mm bf16 1024", 1024, kBFloat16);
  const double conv = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  for (ScalarType dt : {kFloat, kBFloat16}) {
    const std::string d = dt == kFloat ? "f32" : "bf16";
    const Tensor x = randn({8, 64, 56, 56}).to(dt), w = (randn({64, 64, 3, 3}) * 0.05).to(dt);
    const Tensor g = randn({8, 64, 56, 56}).to(dt);
    out.push_back({"conv2d " + d + " forward", conv, CpuCase::kFlops, 5, [x, w] {
                     NoGradGuard ng;
                     (void)conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
                   }});
    const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
    const Tensor yx = conv2d(xg, w, std::nullopt, {1, 1}, {1, 1});
    const Tensor yw = conv2d(x, wg, std::nullopt, {1, 1}, {1, 1});
    out.push_back({"conv2d " + d + " backward-data", conv, CpuCase::kFlops, 5,
                   [=] { (void)autograd::grad({yx}, {xg}, {g}, true); }});
    out.push_back({"conv2d " + d + " backward-weights", conv, CpuCase::kFlops, 5,
                   [=] { (void)autograd::grad({yw}, {wg}, {g}, true); }});
  }
  const int64_t n = 16 << 20;
  const Tensor x = ones({n}), y = ones({n});
  out.push_back(
      {"add 16M f32 allocating", 3.0 * n * 4, CpuCase::kBytes, 30, [x, y] { (void)(x + y); }});
  out.push_back({"sum 16M f32", 4.0 * n, CpuCase::kBytes, 30, [x] { (void)x.sum(); }});
  const Tensor s = randn({4096, 4096});
  out.push_back(
      {"softmax 4096x4096 f32", 0, CpuCase::kMilliseconds, 10, [s] { (void)softmax(s, 1); }});
  for (ScalarType dt : {kFloat, kBFloat16}) {
    manual_seed(0);
    auto net = models::resnet18();
    net->eval();
    net->to(dt);
    const Tensor images = randn({8, 3, 224, 224}).to(dt);
    out.push_back({std::string("resnet18 ") + (dt == kFloat ? "f32" : "bf16") + " forward batch 8",
                   8, CpuCase::kMilliseconds, 5, [net, images] {
                     InferenceMode im;
                     (void)net->forward(images);
                   }});
  }
  return out;
}
