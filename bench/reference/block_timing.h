#pragma once
// The step timing that bench_nn and libtorch_nn share, so that both programs measure the same
// way (bench/README.md, "bench_nn"): 50 steps of warm-up, then 15 blocks of 100 steps; the mean
// over all 1,500 steps and the median of the blocks' means. The host these figures come from is
// shared: a stall of a few ms hits one block of either program, which moves the mean and not the
// median. Standard C++ only: libtorch_nn.cpp is built by hand, outside CMake.
#include <algorithm>
#include <chrono>
#include <vector>

// Seconds per call of `f` over `n` calls.
template <class F>
double seconds_per_call(F&& f, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of `reps` single calls of `f` after `warmup` calls (bench_gpt and libtorch_gpt,
// whose calls take milliseconds to seconds).
template <class F>
double median_seconds(F&& f, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(seconds_per_call(f, 1));
  return median(t);
}

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
    blocks.push_back(seconds_per_call(step, kSteps) * 1e6);
    total += blocks.back();
  }
  return {total / kBlocks, median(blocks)};
}
