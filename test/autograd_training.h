#pragma once
// Training by hand-written SGD, shared by the CPU and XPU autograd tests: a two-layer MLP and a
// small CNN (conv, batch norm, relu, max pool, linear, cross entropy). Data and initial weights
// are made on the CPU from a seed and moved, so every device starts from the same numbers.
#include <vector>

#include <xten/xten.h>

namespace xten::testing {

inline void sgd_step(const std::vector<Tensor*>& params, double lr) {
  NoGradGuard no_grad;
  for (Tensor* p : params) p->sub_(p->grad() * lr);
}

inline void zero_grads(const std::vector<Tensor*>& params) {
  for (Tensor* p : params) p->grad() = Tensor();
}

inline Tensor param(const Tensor& cpu_value, Device device) {
  return cpu_value.to(device).requires_grad_();
}

// Losses of `steps` steps of a 20 -> 32 -> 2 MLP on 64 points.
inline void train_mlp(Device device, int steps, std::vector<double>* losses) {
  manual_seed(0);
  Tensor x = randn({64, 20}).to(device);
  Tensor target = (x.narrow(1, 0, 5).sum({1}) > 0).to(kLong);
  Tensor w1 = param(randn({32, 20}) * 0.2, device), b1 = param(zeros({32}), device);
  Tensor w2 = param(randn({2, 32}) * 0.2, device), b2 = param(zeros({2}), device);
  const std::vector<Tensor*> params{&w1, &b1, &w2, &b2};
  for (int step = 0; step < steps; ++step) {
    Tensor loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), target);
    zero_grads(params);
    loss.backward();
    sgd_step(params, 0.5);
    losses->push_back(loss.item<double>());
  }
}

// Losses of `steps` steps of conv 3x3 (4 channels) -> batch norm -> relu -> max pool -> linear.
inline void train_small_cnn(Device device, int steps, std::vector<double>* losses) {
  manual_seed(1);
  Tensor x = randn({16, 1, 8, 8}).to(device);
  Tensor target = (x.mean({1, 2, 3}) > 0).to(kLong);
  Tensor cw = param(randn({4, 1, 3, 3}) * 0.3, device), cb = param(zeros({4}), device);
  Tensor gamma = param(ones({4}), device), beta = param(zeros({4}), device);
  Tensor fw = param(randn({2, 64}) * 0.2, device), fb = param(zeros({2}), device);
  const std::vector<Tensor*> params{&cw, &cb, &gamma, &beta, &fw, &fb};
  for (int step = 0; step < steps; ++step) {
    Tensor h = conv2d(x, cw, cb, {1, 1}, {1, 1});
    h = relu(batch_norm(h, gamma, beta, std::nullopt, std::nullopt, true));
    h = max_pool2d(h, {2, 2}).flatten(1);  // 4 channels x 4 x 4
    Tensor loss = cross_entropy(linear(h, fw, fb), target);
    zero_grads(params);
    loss.backward();
    sgd_step(params, 0.1);
    losses->push_back(loss.item<double>());
  }
}

}  // namespace xten::testing
