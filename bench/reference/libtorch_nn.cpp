// bench_nn's MLP step through libtorch's C++ front end, for a side-by-side figure on one
// machine (same threads). Not built by CMake. Build with:
//   T=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))')
//   g++ -O2 -std=c++17 libtorch_nn.cpp -I$T/include -I$T/include/torch/csrc/api/include \
//       -L$T/lib -ltorch -ltorch_cpu -lc10 -Wl,-rpath,$T/lib -o libtorch_nn
// Run: ./libtorch_nn THREADS
#include <cstdio>
#include <cstdlib>

#include "block_timing.h"
#include "libtorch_mlp_step.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const BlockTimes bt = time_in_blocks(libtorch_mlp_step(threads));  // as bench_nn's
  std::printf("libtorch nn MLP step, %d threads: mean %.1f us, median of blocks %.1f us\n", threads,
              bt.mean_us, bt.median_us);
}
