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
#include <algorithm>
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "../cpu_cases.h"
#include "interleaved.h"

void set_libtorch_threads(int threads);    // interleaved_cpu_libtorch.cpp
std::vector<CpuCase> cases_of_libtorch();  // libtorch_cpu_cases(): the same cases, same order

constexpr int kPairs = 9;

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_cpu", argc, argv);
  if (threads.empty()) return 2;
  for (int t : threads) {
    xten::set_num_threads(t);
    set_libtorch_threads(t);
    const std::vector<CpuCase> xs = xten_cpu_cases(), ls = cases_of_libtorch();
    for (size_t c = 0; c < xs.size() && c < ls.size(); ++c) {
      const CpuCase &x = xs[c], &l = ls[c];
      const double first = std::max(seconds_per_call(x.call, 1), seconds_per_call(l.call, 1));
      const int n = std::max(1, static_cast<int>(0.03 / first));
      auto block = [n](const CpuCase& k) {
        k.call();
        return seconds_per_call(k.call, n);
      };
      const Pairs p = run_pairs(
          kPairs, [&] { return block(x); }, [&] { return block(l); });
      std::printf(
          "%-30s %2d threads: xten %s, libtorch %s; xten / libtorch per pair: ", x.name.c_str(), t,
          x.figure(median(p.xten) * 1e3).c_str(), l.figure(median(p.libtorch) * 1e3).c_str());
      print_ratios(p);
    }
  }
}
