#pragma once
// The channels-last list (bench/README.md, "Channels last"; docs/memory_format.md): ResNet-50
// inference at batch 32 and a ResNet-18 training step at batch 16 (forward, cross entropy,
// backward, SGD with momentum), float32 and bfloat16 (the inference model cast, the training
// step under autocast), each contiguous (NCHW) and channels-last: the model's 4-d parameters
// and the images laid out NHWC. Timed beside libtorch's same list
// (reference/libtorch_layout_cases.h, same order) by reference/interleaved_layout.cpp.
#include <string>
#include <vector>

#include <xten/xten.h>

#include "cpu_case.h"

inline std::vector<CpuCase> xten_layout_cases() {
  using namespace xten;
  std::vector<CpuCase> out;
  for (ScalarType dt : {kFloat, kBFloat16})
    for (bool cl : {false, true}) {
      manual_seed(0);
      auto net = models::resnet50();
      net->eval();
      net->to(dt);
      Tensor images = randn({32, 3, 224, 224}).to(dt);
      if (cl) {
        net->to(MemoryFormat::ChannelsLast);
        images = images.contiguous(MemoryFormat::ChannelsLast);
      }
      out.push_back({std::string("resnet50 ") + (dt == kFloat ? "f32" : "bf16") + " b32 " +
                         (cl ? "nhwc" : "nchw"),
                     32, CpuCase::kMilliseconds, 3, [net, images] {
                       InferenceMode im;
                       (void)net->forward(images);
                     }});
    }
  for (bool amp : {false, true})
    for (bool cl : {false, true}) {
      manual_seed(0);
      auto net = models::resnet18();
      if (cl) net->to(MemoryFormat::ChannelsLast);
      auto opt =
          std::make_shared<optim::SGD>(net->parameters(), optim::SGDOptions(0.01).momentum(0.9));
      Tensor images = randn({16, 3, 224, 224});
      if (cl) images = images.contiguous(MemoryFormat::ChannelsLast);
      const Tensor labels = randint(1000, {16});
      out.push_back({std::string("resnet18 train ") + (amp ? "amp-bf16" : "f32") + " b16 " +
                         (cl ? "nhwc" : "nchw"),
                     16, CpuCase::kMilliseconds, 3, [net, opt, images, labels, amp] {
                       opt->zero_grad();
                       Tensor loss;
                       {
                         std::optional<autocast::AutocastGuard> guard;
                         if (amp) guard.emplace(kCPU, kBFloat16);
                         loss = cross_entropy(net->forward(images), labels);
                       }
                       loss.backward();
                       opt->step();
                     }});
    }
  return out;
}
