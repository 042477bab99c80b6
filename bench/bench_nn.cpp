// The MLP training step through nn and optim (issue: nn/optim; the step itself: mlp_step.h).
// libtorch's C++ front end doing the same, with the same timing: bench/reference/libtorch_nn.cpp;
// both in one process, in alternating blocks: bench/reference/interleaved_nn.cpp. Figures:
// bench/README.md.
// Run: build/bench/bench_nn [THREADS...]   (default: 1 and all threads)
//
// Timing: reference/block_timing.h, shared with libtorch_nn (the mean over all steps and the
// median of the blocks' means).
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "mlp_step.h"
#include "reference/block_timing.h"

namespace {

void mlp_step(int threads) {
  const BlockTimes bt = time_in_blocks(xten_mlp_step(threads));
  std::printf("xten nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              bt.mean_us, bt.median_us);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  for (int t : threads) {
    if (t < 1) {
      std::fprintf(stderr, "bench_nn: thread counts must be positive, got %d\n", t);
      return 2;
    }
    mlp_step(t);
  }
}
