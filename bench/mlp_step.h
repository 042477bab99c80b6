#pragma once
// The nn + optim MLP training step that bench_nn times and bench/reference/interleaved_nn.cpp
// runs beside libtorch's (bench/README.md, "bench_nn"): nn::Sequential(Linear(784, 256), ReLU,
// Linear(256, 10)), CrossEntropyLoss, optim::SGD with momentum 0.9; zero_grad, forward,
// backward, step on a fixed batch of 64.
#include <functional>
#include <memory>

#include <xten/core/parallel.h>
#include <xten/nn/modules.h>
#include <xten/optim/optimizer.h>
#include <xten/xten.h>

// Sets xten's threads and returns the step (model, optimizer and batch owned by it); `compiled`:
// the step compiled whole (docs/compile.md, "Training steps").
inline std::function<void()> xten_mlp_step(int threads, bool compiled = false) {
  using namespace xten;
  set_num_threads(threads);
  manual_seed(0);
  struct State {
    nn::Sequential model{nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10)};
    optim::SGD opt{model->parameters(), optim::SGDOptions(0.01).momentum(0.9)};
    nn::CrossEntropyLoss loss_fn;
    Tensor x = randn({64, 784}), target = randint(10, {64});
  };
  auto s = std::make_shared<State>();
  auto step = [s](const Tensor& x, const Tensor& target) {
    s->opt.zero_grad();
    Tensor loss = s->loss_fn(s->model(x), target);
    loss.backward();
    s->opt.step();
    return loss;
  };
  if (!compiled) return [s, step] { step(s->x, s->target); };
  auto c = std::make_shared<Compiled<decltype(step)>>(compile(step));
  return [s, c] { (*c)(s->x, s->target); };
}
