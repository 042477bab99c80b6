// bench_cpu's products, convolutions and sum against libtorch's in one process, in alternating
// blocks (as interleaved_nn.cpp does for the MLP step, and for the same reason: the host's speed
// drifts between programs run in turns; bench/README.md, "bench_cpu"). For each thread count
// and case: one call of each library to warm up and size the blocks (about 30 ms of calls), then
// kPairs pairs of blocks, the pair's order alternating, each block one untimed call and the
// timed ones. Prints both libraries' median rate and the median, lowest and highest of the
// pairs' ratios (xten's rate over libtorch's: above 1, xten is faster). Both libraries share
// one OpenMP runtime in one process (interleaved_nn.cpp). Build and run: compare_cpu_interleaved.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "interleaved_cpu_case.h"

void set_libtorch_threads(int threads);       // interleaved_cpu_libtorch.cpp
std::vector<CpuCase> libtorch_cpu_cases();  // the same cases, the same order

namespace {

constexpr int kPairs = 9;

std::vector<CpuCase> xten_cpu_cases() {
  using namespace xten;
  manual_seed(0);
  std::vector<CpuCase> out;
  auto mm_case = [&](const char* name, int64_t n, ScalarType dt) {
    const Tensor a = randn({n, n}).to(dt), b = randn({n, n}).to(dt);
    out.push_back({name, 2.0 * n * n * n, false, [a, b] { (void)mm(a, b); }});
  };
  mm_case("mm f32 1024", 1024, kFloat);
  mm_case("mm f32 2048", 2048, kFloat);
  mm_case("mm bf16 1024", 1024, kBFloat16);
  const double conv = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
  for (ScalarType dt : {kFloat, kBFloat16}) {
    const std::string d = dt == kFloat ? "f32" : "bf16";
    const Tensor x = randn({8, 64, 56, 56}).to(dt), w = (randn({64, 64, 3, 3}) * 0.05).to(dt);
    const Tensor g = randn({8, 64, 56, 56}).to(dt);
    out.push_back({"conv2d " + d + " forward", conv, false, [x, w] {
                     NoGradGuard ng;
                     (void)conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
                   }});
    const Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
    const Tensor yx = conv2d(xg, w, std::nullopt, {1, 1}, {1, 1});
    const Tensor yw = conv2d(x, wg, std::nullopt, {1, 1}, {1, 1});
    out.push_back({"conv2d " + d + " backward-data", conv, false,
                   [=] { (void)autograd::grad({yx}, {xg}, {g}, true); }});
    out.push_back({"conv2d " + d + " backward-weights", conv, false,
                   [=] { (void)autograd::grad({yw}, {wg}, {g}, true); }});
  }
  const Tensor s = ones({16 << 20});
  out.push_back({"sum 16M f32", 4.0 * (16 << 20), true, [s] { (void)s.sum(); }});
  return out;
}

double seconds(const std::function<void()>& f, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1};
  for (int t : threads) {
    if (t < 1) {
      std::fprintf(stderr, "interleaved_cpu: thread counts must be positive, got %d\n", t);
      return 2;
    }
    xten::set_num_threads(t);
    set_libtorch_threads(t);
    const std::vector<CpuCase> xs = xten_cpu_cases(), ls = libtorch_cpu_cases();
    for (size_t c = 0; c < xs.size() && c < ls.size(); ++c) {
      const CpuCase &x = xs[c], &l = ls[c];
      const double first = std::max(seconds(x.call, 1), seconds(l.call, 1));
      const int n = std::max(1, static_cast<int>(0.03 / first));
      std::vector<double> xr, lr, ratios;
      for (int p = 0; p < kPairs; ++p) {
        double xt, lt;
        auto block = [&](const CpuCase& k) {
          k.call();
          return seconds(k.call, n);
        };
        if (p % 2 == 0) {
          xt = block(x);
          lt = block(l);
        } else {
          lt = block(l);
          xt = block(x);
        }
        xr.push_back(x.work / xt / 1e9);
        lr.push_back(l.work / lt / 1e9);
        ratios.push_back(lt / xt);
      }
      std::printf("%-28s %2d threads: xten %7.0f, libtorch %7.0f %s; xten / libtorch per pair: "
                  "median %.2f, lowest %.2f, highest %.2f\n",
                  x.name.c_str(), t, median(xr), median(lr), x.bytes ? "GB/s" : "GFLOP/s",
                  median(ratios), *std::min_element(ratios.begin(), ratios.end()),
                  *std::max_element(ratios.begin(), ratios.end()));
    }
  }
}
