// libtorch's side of interleaved_nn.cpp, in a translation unit of its own (libtorch's headers
// and xten's never meet).
#include <functional>

#include "libtorch_mlp_step.h"

extern "C" std::function<void()> make_libtorch_mlp_step(int threads) {
  return libtorch_mlp_step(threads);
}
