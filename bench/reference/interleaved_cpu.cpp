// bench_cpu's list (products, convolutions, memory-bound ops, ResNet-18 inference:
// ../cpu_cases.h) against libtorch's (libtorch_cpu_cases.h) in one process, in alternating
// blocks, as interleaved_nn.cpp does for the MLP step and for the same reason: the host's speed
// drifts between programs run in turns (bench/README.md, "bench_cpu"). For each thread count and
// case: one call of each library to warm up and size the blocks (about 30 ms of calls, at least
// one), then kPairs pairs of blocks, the pair's order alternating, each block one untimed call
// and the timed ones. Prints both libraries' median figure and the median, lowest and highest of
// the pairs' ratios (xten's rate over libtorch's: above 1, xten is faster). Both libraries share
// one OpenMP runtime in one process (interleaved_nn.cpp). Build and run:
// compare_interleaved.sh cpu.
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "../cpu_cases.h"
#include "interleaved.h"

// interleaved_cpu_libtorch.cpp: libtorch_cpu_cases(), the same cases in the same order.
void set_libtorch_threads(int threads) {
  libtorch_threads() = threads;
  restore_libtorch_threads();
}
std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_function<std::vector<CpuCase>()>("cases_of_libtorch")();
}

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_cpu", argc, argv);
  if (threads.empty()) return 2;
  compare_case_lists<CpuCase>(
      threads, 9,
      [](int t) {
        xten::set_num_threads(t);
        set_libtorch_threads(t);
      },
      xten_cpu_cases, cases_of_libtorch);
}
