#pragma once
// bench_nn's MLP step (bench/mlp_step.h) through libtorch's C++ front end: the same layers,
// loss, optimizer and batch shape. For libtorch_nn.cpp and interleaved_nn_libtorch.cpp, built by
// hand outside CMake.
#include <functional>
#include <memory>

#include <torch/torch.h>

// Sets libtorch's threads and returns the step (model, optimizer and batch owned by it).
inline std::function<void()> libtorch_mlp_step(int threads) {
  at::set_num_threads(threads);
  torch::manual_seed(0);
  struct State {
    torch::nn::Sequential model{torch::nn::Linear(784, 256), torch::nn::ReLU(),
                                torch::nn::Linear(256, 10)};
    torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)};
    torch::nn::CrossEntropyLoss loss_fn;
    torch::Tensor x = torch::randn({64, 784}), target = torch::randint(10, {64});
  };
  auto s = std::make_shared<State>();
  return [s] {
    s->opt.zero_grad();
    torch::Tensor loss = s->loss_fn(s->model->forward(s->x), s->target);
    loss.backward();
    s->opt.step();
  };
}
