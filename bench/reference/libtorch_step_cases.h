#pragma once
// ../step_cases.h through libtorch's C++ front end: the same models, batches and SGD with
// momentum, eagerly; each step listed three times (once per xten way), in the same order.
#include <string>
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "libtorch_cpu_cases.h"

inline std::vector<CpuCase> libtorch_step_cases() {
  namespace nn = torch::nn;
  std::vector<CpuCase> out;
  auto add = [&](const std::string& name, int64_t images, auto make_model, torch::Tensor x,
                 torch::Tensor y, bool amp) {
    for (const char* way : {"eager", "compiled step", "compiled model"}) {
      torch::manual_seed(0);
      auto model = make_model();
      model->train();
      auto opt = std::make_shared<torch::optim::SGD>(model->parameters(),
                                                     torch::optim::SGDOptions(0.01).momentum(0.9));
      out.push_back({name + " " + way, static_cast<double>(images), CpuCase::kMilliseconds, 5,
                     [model, opt, x, y, amp]() mutable {
                       opt->zero_grad();
                       at::autocast::set_autocast_enabled(at::kCPU, amp);
                       at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
                       auto loss = nn::functional::cross_entropy(model->forward(x), y);
                       at::autocast::set_autocast_enabled(at::kCPU, false);
                       at::autocast::clear_cache();
                       loss.backward();
                       opt->step();
                     }});
    }
  };
  add(
      "mlp b64", 0,
      [] { return nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10)); },
      torch::randn({64, 784}), torch::randint(10, {64}), false);
  // models::SmallCNN's layers (dropout 0.25 before the first linear).
  add(
      "smallcnn b128", 128,
      [] {
        return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false)),
                              nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2),
                              nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)),
                              nn::BatchNorm2d(64), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                              nn::Dropout(0.25), nn::Linear(64 * 7 * 7, 32), nn::ReLU(),
                              nn::Linear(32, 10));
      },
      torch::randn({128, 1, 28, 28}), torch::randint(10, {128}), false);
  for (bool amp : {false, true})
    add(
        std::string("resnet18 b8 ") + (amp ? "amp-bf16" : "f32"), 8, [] { return ResNet18(); },
        torch::randn({8, 3, 224, 224}), torch::randint(1000, {8}), amp);
  return out;
}
