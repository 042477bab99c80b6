// libtorch's side of interleaved_cpu.cpp (libtorch_cpu_cases.h: the same cases as xten's, in the
// same order), in a translation unit of its own.
#include <torch/torch.h>

#include "libtorch_cpu_cases.h"

extern "C" void set_libtorch_threads(int threads) {
  at::set_num_threads(threads);
}

extern "C" std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_cpu_cases();
}
