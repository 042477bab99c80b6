// bench_nn's MLP step and libtorch's in one process, in alternating blocks (bench/README.md,
// "bench_nn"): the host's speed drifts by 1.3-1.7x between runs a few seconds apart, so two
// programs run in turns compare different moments; blocks of a few ms each, taken in turns,
// compare the same ones. For each thread count: both steps built (each library's threads set to
// that count), 50 steps of warm-up each, then kPairs pairs of blocks, the pair's order
// alternating; a block is kSettle untimed steps and kSteps timed ones. Prints both libraries'
// median block and the median, lowest and highest of the pairs' ratios (libtorch's time over
// xten's: above 1, xten is faster). Build and run: compare_nn_interleaved.sh.
// In one process both libraries run on one OpenMP runtime: libtorch's own copy of libgomp is
// loaded, but its symbols bind to the first one loaded, Debian's (through libxten), so libtorch
// here is not quite the libtorch of libtorch_nn (bench/README.md says what that changed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "../mlp_step.h"

std::function<void()> make_libtorch_mlp_step(int threads);  // interleaved_nn_libtorch.cpp

namespace {

constexpr int kWarmup = 50, kPairs = 15, kSettle = 20, kSteps = 100;

double block_us(const std::function<void()>& step) {
  for (int i = 0; i < kSettle; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kSteps; ++i) step();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
             .count() /
         kSteps;
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
      std::fprintf(stderr, "interleaved_nn: thread counts must be positive, got %d\n", t);
      return 2;
    }
    const std::function<void()> xten = xten_mlp_step(t), torch = make_libtorch_mlp_step(t);
    for (int i = 0; i < kWarmup; ++i) xten();
    for (int i = 0; i < kWarmup; ++i) torch();
    std::vector<double> xs, ls, ratios;
    for (int p = 0; p < kPairs; ++p) {
      double x, l;
      if (p % 2 == 0) {
        x = block_us(xten);
        l = block_us(torch);
      } else {
        l = block_us(torch);
        x = block_us(xten);
      }
      xs.push_back(x);
      ls.push_back(l);
      ratios.push_back(l / x);
    }
    std::printf(
        "nn MLP step, %d threads, %d pairs of blocks: xten median %.1f us, libtorch median %.1f "
        "us; libtorch / xten per pair: median %.2f, lowest %.2f, highest %.2f\n",
        t, kPairs, median(xs), median(ls), median(ratios),
        *std::min_element(ratios.begin(), ratios.end()),
        *std::max_element(ratios.begin(), ratios.end()));
  }
}
