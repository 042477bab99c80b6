// bench_cpu's products, convolutions and sum against libtorch's in one process, in alternating
// blocks (as interleaved_nn.cpp does for the MLP step, and for the same reason: the host's speed
// drifts between programs run in turns; bench/README.md, "bench_cpu"). For each thread count
// and case: one call of each library to warm up and size the blocks (about 30 ms of calls), then
// kPairs pairs of blocks, the pair's order alternating, each block one untimed call and the
// timed ones. Prints both libraries' median rate and the median, lowest and highest of the
// pairs' ratios (xten's rate over libtorch's: above 1, xten is faster). Both libraries share
// one OpenMP runtime in one process (interleaved_nn.cpp). Build and run: compare_interleaved.sh cpu.
#include <algorithm>
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "interleaved.h"
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

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_cpu", argc, argv);
  if (threads.empty()) return 2;
  for (int t : threads) {
    xten::set_num_threads(t);
    set_libtorch_threads(t);
    const std::vector<CpuCase> xs = xten_cpu_cases(), ls = libtorch_cpu_cases();
    for (size_t c = 0; c < xs.size() && c < ls.size(); ++c) {
      const CpuCase &x = xs[c], &l = ls[c];
      const double first = std::max(seconds_per_call(x.call, 1), seconds_per_call(l.call, 1));
      const int n = std::max(1, static_cast<int>(0.03 / first));
      auto block = [n](const CpuCase& k) {
        k.call();
        return seconds_per_call(k.call, n);
      };
      const Pairs p = run_pairs(kPairs, [&] { return block(x); }, [&] { return block(l); });
      auto rate = [](const CpuCase& k, double s) { return k.work / s / 1e9; };
      std::printf("%-28s %2d threads: xten %7.0f, libtorch %7.0f %s; xten / libtorch per pair: ",
                  x.name.c_str(), t, rate(x, median(p.xten)), rate(l, median(p.libtorch)),
                  x.bytes ? "GB/s" : "GFLOP/s");
      print_ratios(p);
    }
  }
}
