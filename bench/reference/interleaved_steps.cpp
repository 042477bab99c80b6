// Graph mode II's training steps (../step_cases.h: eager, compiled whole, the model compiled in
// an eager loop) against libtorch's eager steps (libtorch_step_cases.h) in one process, in
// alternating blocks (compare_case_lists, interleaved.h), 3 pairs per case. Build and run:
// compare_interleaved.sh steps (bench/README.md, "Compiled training steps against libtorch").
#include <vector>

#include <xten/core/parallel.h>
#include <xten/xten.h>

#include "../step_cases.h"
#include "interleaved.h"

// interleaved_steps_libtorch.cpp: libtorch_step_cases(), the same cases in the same order.
void set_libtorch_threads(int threads) {
  libtorch_threads() = threads;
  restore_libtorch_threads();
}
std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_function<std::vector<CpuCase>()>("cases_of_libtorch")();
}

int main(int argc, char** argv) {
  const std::vector<int> threads = thread_counts("interleaved_steps", argc, argv);
  if (threads.empty()) return 2;
  compare_case_lists<CpuCase>(
      threads, 3,
      [](int t) {
        xten::set_num_threads(t);
        set_libtorch_threads(t);
      },
      xten_step_cases, cases_of_libtorch);
}
