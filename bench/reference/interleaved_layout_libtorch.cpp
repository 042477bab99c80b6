// libtorch's side of interleaved_layout.cpp (libtorch_layout_cases.h: the same cases as xten's,
// in the same order), in a translation unit of its own.
#include <torch/torch.h>

#include "libtorch_layout_cases.h"

extern "C" void set_libtorch_threads(int threads) {
  at::set_num_threads(threads);
}

extern "C" std::vector<CpuCase> cases_of_libtorch() {
  return libtorch_layout_cases();
}
