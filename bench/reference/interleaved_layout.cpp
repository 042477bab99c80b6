// The channels-last list (../layout_cases.h: ResNet-50 inference and ResNet-18 training steps,
// NCHW and NHWC) against libtorch's (libtorch_layout_cases.h) in one process, in alternating
// blocks, as interleaved_cpu.cpp does for bench_cpu's list (compare_case_lists, interleaved.h);
// 3 pairs per case, since one call is up to a second at 1 thread. Build and run:
// compare_interleaved.sh layout (bench/README.md, "Channels last").
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "../layout_cases.h"
#include "interleaved.h"

// interleaved_layout_libtorch.cpp: libtorch_layout_cases(), the same cases in the same order.
void set_libtorch_threads(int threads) {
  libtorch_threads() = threads;
  restore_libtorch_threads();
}
std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_function<std::vector<CpuCase>()>("cases_of_libtorch")();
}

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_layout", argc, argv);
  if (threads.empty()) return 2;
  compare_case_lists<CpuCase>(
      threads, 3,
      [](int t) {
        xten::set_num_threads(t);
        set_libtorch_threads(t);
      },
      xten_layout_cases, cases_of_libtorch);
}
