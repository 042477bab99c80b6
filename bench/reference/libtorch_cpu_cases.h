#pragma once
// bench_cpu's list (../cpu_case.h) through libtorch: the same cases as xten_cpu_cases()
// (../cpu_cases.h), in the same order; read by libtorch_cpu.cpp and interleaved_cpu_libtorch.cpp.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "../cpu_case.h"

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
  return out;
}
