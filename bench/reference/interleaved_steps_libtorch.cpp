// libtorch's side of interleaved_steps.cpp (libtorch_step_cases.h), in a translation unit of its
// own.
#include <torch/torch.h>

#include "libtorch_step_cases.h"

extern "C" void set_libtorch_threads(int threads) {
  at::set_num_threads(threads);
}

extern "C" std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_step_cases();
}
