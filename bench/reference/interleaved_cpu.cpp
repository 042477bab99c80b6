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
#include <xten/xten.h>

#include "../cpu_cases.h"
#include "case_list_main.h"

// interleaved_cpu_libtorch.cpp exports the libtorch side: the same cases in the same order.
int main(int argc, char** argv) {
  return compare_with_libtorch_cases("interleaved_cpu", argc, argv, 9, xten_cpu_cases);
}
