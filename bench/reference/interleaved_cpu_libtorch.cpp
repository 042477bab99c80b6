// libtorch's side of interleaved_cpu.cpp (the same cases as xten's, in the same order, as
// libtorch_cpu.cpp measures them), in a translation unit of its own.
#include <torch/torch.h>

#include "interleaved_cpu_case.h"

void set_libtorch_threads(int threads) {
  at::set_num_threads(threads);
}

std::vector<CpuCase> libtorch_cpu_cases() {
  torch::manual_seed(0);
  std::vector<CpuCase> out;
  auto mm = [&](const char* name, int64_t n, torch::Dtype dt) {
    auto a = torch::randn({n, n}).to(dt), b = torch::randn({n, n}).to(dt);
    out.push_back({name, 2.0 * n * n * n, false, [a, b] { auto c = torch::mm(a, b); }});
  };
  mm("mm f32 1024", 1024, torch::kFloat);
  mm("mm f32 2048", 2048, torch::kFloat);
  mm("mm bf16 1024", 1024, torch::kBFloat16);
  const double conv = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  for (auto dt : {torch::kFloat, torch::kBFloat16}) {
    const std::string d = dt == torch::kFloat ? "f32" : "bf16";
    auto x = torch::randn({8, 64, 56, 56}).to(dt), w = (torch::randn({64, 64, 3, 3}) * 0.05).to(dt);
    auto g = torch::randn({8, 64, 56, 56}).to(dt);
    out.push_back({"conv2d " + d + " forward", conv, false, [x, w] {
                     torch::NoGradGuard ng;
                     auto y = torch::conv2d(x, w, {}, 1, 1);
                   }});
    auto xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
    auto yx = torch::conv2d(xg, w, {}, 1, 1), yw = torch::conv2d(x, wg, {}, 1, 1);
    out.push_back({"conv2d " + d + " backward-data", conv, false,
                   [=] { auto r = torch::autograd::grad({yx}, {xg}, {g}, true); }});
    out.push_back({"conv2d " + d + " backward-weights", conv, false,
                   [=] { auto r = torch::autograd::grad({yw}, {wg}, {g}, true); }});
  }
  auto s = torch::ones({16 << 20});
  out.push_back({"sum 16M f32", 4.0 * (16 << 20), true, [s] { auto z = s.sum(); }});
  return out;
}
