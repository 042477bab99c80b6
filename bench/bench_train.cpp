// Training throughput of the small CNN of examples/train (models::SmallCNN, 119,626 parameters)
// in images/s: forward, cross entropy, backward, SGD (Nesterov momentum, weight decay) on
// batches of 64 random 1x28x28 images, in float32. libtorch's C++ front end doing the same:
// bench/reference/libtorch_train.cpp (run both in one command, same threads). Figures and what
// limits xten: bench/README.md.
//
//   bench_train THREADS [STEPS]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <xten/xten.h>

using namespace xten;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  set_num_threads(threads);
  manual_seed(0);
  models::SmallCNN model(10);
  optim::SGD opt(model->parameters(),
                 optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(5e-4));
  const int64_t batch = 64;
  const Tensor x = randn({batch, 1, 28, 28}), target = randint(10, {batch});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(model(x), target);
    loss.backward();
    opt.step();
    return loss;
  };
  for (int i = 0; i < 20; ++i) step();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("xten SmallCNN training, %d threads: %.0f images/s (%.2f ms/step)\n", threads,
              steps * batch / s, 1e3 * s / steps);
}
