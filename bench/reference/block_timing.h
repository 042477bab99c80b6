#pragma once
// The step timing that bench_nn and libtorch_nn share, so that both programs measure the same
// way (bench/README.md, "bench_nn"): 50 steps of warm-up, then 15 blocks of 100 steps; the mean
// over all 1,500 steps and the median of the blocks' means. The host these figures come from is
// shared: a stall of a few ms hits one block of either program, which moves the mean and not the
// median. Standard C++ only: libtorch_nn.cpp is built by hand, outside CMake.
#include <algorithm>
#include <chrono>
#include <vector>

struct BlockTimes {
  double mean_us;
  double median_us;  // of the blocks' means
};

template <class Step>
BlockTimes time_in_blocks(Step&& step) {
  constexpr int kWarmup = 50, kBlocks = 15, kSteps = 100;
  for (int i = 0; i < kWarmup; ++i) step();
  std::vector<double> blocks;
  double total = 0;
  for (int b = 0; b < kBlocks; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSteps; ++i) step();
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    blocks.push_back(us / kSteps);
    total += us;
  }
  std::sort(blocks.begin(), blocks.end());
  return {total / (kBlocks * kSteps), blocks[blocks.size() / 2]};
}
