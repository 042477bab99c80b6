// A short program of random XPU ops that leaves its work in flight and exits: the child that
// test_xpu_exit.cpp runs many times (docs/xpu_runtime.md, Note [Exit with work in flight]).
//
//   xpu_exit_child SEED [--autocast] [--exit] [--thread] [--sync]
//
// It runs a seeded sequence of ops on xpu:0, reading no result, then leaves main by `return`
// (default) or `std::exit(0)` (--exit), without synchronizing unless --sync. --autocast runs
// the sequence under autocast float16; --thread leaves a second thread launching work while
// the process exits. A crash, a hang or a non-zero status is the failure the parent looks for.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <xten/xten.h>

namespace {

using xten::Tensor;

// One step of the sequence: a random op on random small shapes, on the XPU.
void random_op(std::mt19937& rng, const xten::Device& dev) {
  auto dim = [&](int lo, int hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const auto opts = xten::TensorOptions().device(dev);
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0: {
      Tensor a = xten::randn({dim(1, 64), dim(1, 64)}, opts);
      (void)xten::relu(a + a * 2.0);
      break;
    }
    case 1: {
      const int64_t k = dim(1, 32);
      (void)xten::matmul(xten::randn({dim(1, 32), k}, opts), xten::randn({k, dim(1, 32)}, opts));
      break;
    }
    case 2:
      (void)xten::softmax(xten::randn({dim(1, 16), dim(1, 100)}, opts), 1);
      break;
    case 3: {
      const int64_t c = dim(1, 4);
      (void)xten::conv2d(xten::randn({2, c, dim(3, 12), dim(3, 12)}, opts),
                         xten::randn({dim(1, 8), c, 3, 3}, opts));
      break;
    }
    case 4:
      (void)xten::randn({dim(1, 1000)}, opts).sum();
      break;
    case 5:
      (void)xten::sigmoid(xten::randn({dim(1, 500)}, opts)).exp();
      break;
    case 6:
      (void)xten::max_pool2d(xten::randn({1, dim(1, 3), dim(2, 16), dim(2, 16)}, opts), {2, 2});
      break;
    case 7: {
      const int64_t n = dim(1, 64);
      (void)xten::layer_norm(xten::randn({dim(1, 8), n}, opts), {n});
      break;
    }
    case 8:
      (void)xten::randn({dim(1, 300)}, xten::TensorOptions()).to(dev);
      break;
    default:
      (void)xten::randn({dim(1, 20), dim(1, 20)}, opts).transpose(0, 1).contiguous();
      break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SEED [--autocast] [--exit] [--thread] [--sync]\n", argv[0]);
    return 2;
  }
  const unsigned seed = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
  bool autocast = false, via_exit = false, thread = false, sync = false;
  for (int i = 2; i < argc; ++i) {
    autocast |= std::strcmp(argv[i], "--autocast") == 0;
    via_exit |= std::strcmp(argv[i], "--exit") == 0;
    thread |= std::strcmp(argv[i], "--thread") == 0;
    sync |= std::strcmp(argv[i], "--sync") == 0;
  }
  xten::manual_seed(seed);
  const xten::Device dev("xpu:0");
  std::mt19937 rng(seed);
  if (thread) {
    // Launches work until the process ends; the exit path must cope with it.
    std::thread([dev, seed] {
      std::mt19937 trng(seed + 1);
      for (;;) random_op(trng, dev);
    }).detach();
  }
  {
    std::optional<xten::autocast::AutocastGuard> amp;
    if (autocast) amp.emplace(xten::kXPU, xten::kHalf);
    const int steps = std::uniform_int_distribution<int>(5, 40)(rng);
    for (int i = 0; i < steps; ++i) random_op(rng, dev);
  }
  if (sync) xten::xpu::synchronize();
  if (via_exit) std::exit(0);
  return 0;
}
