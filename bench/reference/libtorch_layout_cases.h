#pragma once
// The channels-last list (../layout_cases.h) through libtorch: the same cases in the same order,
// with torchvision's ResNet-50 written in torch::nn here and ResNet-18 from
// libtorch_cpu_cases.h. libtorch's C++ Module::to takes no memory format: the 4-d parameters
// are laid out channels-last one by one, as Python's model.to(memory_format=...) does.
#include <string>
#include <vector>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "libtorch_cpu_cases.h"

// torchvision's Bottleneck (v1.5: the stride on the 3x3) and ResNet-50.
struct BottleneckImpl : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr}, c3{nullptr};
  torch::nn::BatchNorm2d b1{nullptr}, b2{nullptr}, b3{nullptr};
  torch::nn::Sequential down{nullptr};
  BottleneckImpl(int64_t in, int64_t planes, int64_t stride) {
    using namespace torch::nn;
    c1 = register_module("c1", Conv2d(Conv2dOptions(in, planes, 1).bias(false)));
    b1 = register_module("b1", BatchNorm2d(planes));
    c2 = register_module(
        "c2", Conv2d(Conv2dOptions(planes, planes, 3).stride(stride).padding(1).bias(false)));
    b2 = register_module("b2", BatchNorm2d(planes));
    c3 = register_module("c3", Conv2d(Conv2dOptions(planes, planes * 4, 1).bias(false)));
    b3 = register_module("b3", BatchNorm2d(planes * 4));
    if (stride != 1 || in != planes * 4)
      down = register_module(
          "down", Sequential(Conv2d(Conv2dOptions(in, planes * 4, 1).stride(stride).bias(false)),
                             BatchNorm2d(planes * 4)));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(b1(c1(x)));
    y = torch::relu(b2(c2(y)));
    y = b3(c3(y));
    return torch::relu(y + (down ? down->forward(x) : x));
  }
};
TORCH_MODULE(Bottleneck);

struct ResNet50Impl : torch::nn::Module {
  torch::nn::Conv2d stem{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Sequential layers{nullptr};
  torch::nn::Linear fc{nullptr};
  ResNet50Impl() {
    using namespace torch::nn;
    stem =
        register_module("stem", Conv2d(Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn = register_module("bn", BatchNorm2d(64));
    Sequential seq;
    int64_t in = 64;
    const int64_t blocks[4] = {3, 4, 6, 3}, planes[4] = {64, 128, 256, 512};
    for (int s = 0; s < 4; ++s)
      for (int64_t b = 0; b < blocks[s]; ++b) {
        seq->push_back(Bottleneck(in, planes[s], b == 0 && s > 0 ? 2 : 1));
        in = planes[s] * 4;
      }
    layers = register_module("layers", seq);
    fc = register_module("fc", Linear(2048, 1000));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(bn(stem(x))), 3, 2, 1);
    x = layers->forward(x);
    return fc(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
};
TORCH_MODULE(ResNet50);

inline void to_channels_last(torch::nn::Module& m) {
  torch::NoGradGuard ng;
  for (auto& p : m.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
}

inline std::vector<CpuCase> libtorch_layout_cases() {
  std::vector<CpuCase> out;
  for (auto dt : {torch::kFloat, torch::kBFloat16})
    for (bool cl : {false, true}) {
      torch::manual_seed(0);
      ResNet50 net;
      net->eval();
      net->to(dt);
      auto images = torch::randn({32, 3, 224, 224}).to(dt);
      if (cl) {
        to_channels_last(*net);
        images = images.contiguous(torch::MemoryFormat::ChannelsLast);
      }
      out.push_back({std::string("resnet50 ") + (dt == torch::kFloat ? "f32" : "bf16") + " b32 " +
                         (cl ? "nhwc" : "nchw"),
                     32, CpuCase::kMilliseconds, 3, [net, images]() mutable {
                       c10::InferenceMode im;
                       auto y = net->forward(images);
                     }});
    }
  for (bool amp : {false, true})
    for (bool cl : {false, true}) {
      torch::manual_seed(0);
      ResNet18 net;
      if (cl) to_channels_last(*net);
      auto opt = std::make_shared<torch::optim::SGD>(net->parameters(),
                                                     torch::optim::SGDOptions(0.01).momentum(0.9));
      auto images = torch::randn({16, 3, 224, 224});
      if (cl) images = images.contiguous(torch::MemoryFormat::ChannelsLast);
      auto labels = torch::randint(1000, {16});
      out.push_back({std::string("resnet18 train ") + (amp ? "amp-bf16" : "f32") + " b16 " +
                         (cl ? "nhwc" : "nchw"),
                     16, CpuCase::kMilliseconds, 3, [net, opt, images, labels, amp]() mutable {
                       opt->zero_grad();
                       at::autocast::set_autocast_enabled(at::kCPU, amp);
                       at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
                       auto loss =
                           torch::nn::functional::cross_entropy(net->forward(images), labels);
                       at::autocast::set_autocast_enabled(at::kCPU, false);
                       at::autocast::clear_cache();
                       loss.backward();
                       opt->step();
                     }});
    }
  return out;
}
