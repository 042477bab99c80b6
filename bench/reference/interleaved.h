#pragma once
// What interleaved_nn.cpp and interleaved_cpu.cpp share: xten and libtorch timed in one process,
// in blocks taken in turns (interleaved_nn.cpp says why). Standard C++ only.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "block_timing.h"  // seconds_per_call, median

// The thread counts given as arguments (1 without any); empty, after a message, when one is not
// positive.
inline std::vector<int> thread_counts(const char* program, int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1};
  for (int t : threads)
    if (t < 1) {
      std::fprintf(stderr, "%s: thread counts must be positive, got %d\n", program, t);
      return {};
    }
  return threads;
}

// `pairs` pairs of blocks of xten and libtorch, the pair's order alternating; each block
// returns its seconds per call. The pairs' ratios are libtorch's time over xten's.
struct Pairs {
  std::vector<double> xten, libtorch, ratios;
};
inline Pairs run_pairs(int pairs, const std::function<double()>& xten_block,
                       const std::function<double()>& libtorch_block) {
  Pairs out;
  for (int p = 0; p < pairs; ++p) {
    double x, l;
    if (p % 2 == 0) {
      x = xten_block();
      l = libtorch_block();
    } else {
      l = libtorch_block();
      x = xten_block();
    }
    out.xten.push_back(x);
    out.libtorch.push_back(l);
    out.ratios.push_back(l / x);
  }
  return out;
}

// "median M, lowest L, highest H" of the pairs' ratios.
inline void print_ratios(const Pairs& p) {
  std::printf("median %.2f, lowest %.2f, highest %.2f\n", median(p.ratios),
              *std::min_element(p.ratios.begin(), p.ratios.end()),
              *std::max_element(p.ratios.begin(), p.ratios.end()));
}
