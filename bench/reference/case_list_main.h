#pragma once
// The xten side of the case-list comparisons (interleaved_cpu.cpp, interleaved_layout.cpp,
// interleaved_steps.cpp): each program's libtorch side is a shared object exporting
// set_libtorch_threads and cases_of_libtorch (interleaved_*_libtorch.cpp), and its main() is
// compare_with_libtorch_cases over its own xten list.
#include <vector>

#include <xten/core/parallel.h>

#include "../cpu_case.h"
#include "interleaved.h"

inline void set_libtorch_threads(int threads) {
  libtorch_threads() = threads;
  restore_libtorch_threads();
}

inline std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_function<std::vector<CpuCase>()>("cases_of_libtorch")();
}

// Both lists at each thread count of the command line, `pairs` pairs of blocks per case
// (compare_case_lists); 2 on a bad command line.
inline int compare_with_libtorch_cases(const char* program, int argc, char** argv, int pairs,
                                       std::vector<CpuCase> (*xten_cases)()) {
  const std::vector<int> threads = thread_counts(program, argc, argv);
  if (threads.empty()) return 2;
  compare_case_lists<CpuCase>(
      threads, pairs,
      [](int t) {
        xten::set_num_threads(t);
        set_libtorch_threads(t);
      },
      xten_cases, cases_of_libtorch);
  return 0;
}
