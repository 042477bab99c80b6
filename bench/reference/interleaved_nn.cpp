// bench_nn's MLP step and libtorch's in one process, in alternating blocks (bench/README.md,
// "bench_nn"): the host's speed drifts by 1.3-1.7x between runs a few seconds apart, so two
// programs run in turns compare different moments; blocks of a few ms each, taken in turns,
// compare the same ones. For each thread count: both steps built (each library's threads set to
// that count), 50 steps of warm-up each, then kPairs pairs of blocks, the pair's order
// alternating; a block is kSettle untimed steps and kSteps timed ones. Prints both libraries'
// median block and the median, lowest and highest of the pairs' ratios (libtorch's time over
// xten's: above 1, xten is faster); then the same with xten's step compiled whole
// (docs/compile.md, "Training steps") against libtorch's eager step. Build and run:
// compare_interleaved.sh nn.
// In one process both libraries run on one OpenMP runtime: the libtorch side (a shared object
// loaded with RTLD_LOCAL, interleaved.h) binds its OpenMP calls to the runtime already loaded,
// Debian's (through libxten), so libtorch here is not quite the libtorch of libtorch_nn
// (bench/README.md says what that changed).
#include <functional>
#include <vector>

#include "../mlp_step.h"
#include "interleaved.h"

std::function<void()> make_libtorch_mlp_step(int threads) {  // interleaved_nn_libtorch.cpp
  return libtorch_function<std::function<void()>(int)>("make_libtorch_mlp_step")(threads);
}

namespace {

constexpr int kWarmup = 50, kPairs = 15, kSettle = 20, kSteps = 100;

// Microseconds per step over a block.
double block_us(const std::function<void()>& step) {
  for (int i = 0; i < kSettle; ++i) step();
  return seconds_per_call(step, kSteps) * 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_nn", argc, argv);
  if (threads.empty()) return 2;
  for (int t : threads) {
    for (bool compiled : {false, true}) {
      const std::function<void()> xten = xten_mlp_step(t, compiled),
                                  torch = make_libtorch_mlp_step(t);
      for (int i = 0; i < kWarmup; ++i) xten();
      for (int i = 0; i < kWarmup; ++i) torch();
      const Pairs p = run_pairs(
          kPairs, [&] { return block_us(xten); }, [&] { return block_us(torch); });
      std::printf(
          "%snn MLP step, %d threads, %d pairs of blocks: xten median %.1f us, libtorch median "
          "%.1f us; libtorch / xten per pair: ",
          compiled ? "compiled " : "", t, kPairs, median(p.xten), median(p.libtorch));
      print_ratios(p);
    }
  }
}
