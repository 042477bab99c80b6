// bench_sweep through xten alone (bench/README.md, "bench_sweep"): milliseconds per call of each
// case of sweep_cases.h at the thread counts given (default 1 and all). The comparison with
// libtorch, in one process and alternating blocks, is reference/interleaved_sweep.cpp
// (compare_interleaved.sh sweep).
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <xten/core/parallel.h>

#include "reference/block_timing.h"
#include "sweep_xten.h"

int main(int argc, char** argv) {
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  for (int t : threads) {
    xten::set_num_threads(t);
    for (const SweepCase& c : xten_sweep_cases()) {
      const double first = seconds_per_call(c.call, 1);
      const int n = std::max(1, static_cast<int>(0.05 / first));
      std::printf("%-52s %2d threads: %9.3f ms\n", c.name.c_str(), t,
                  seconds_per_call(c.call, n) * 1e3);
    }
  }
}
