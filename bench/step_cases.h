#pragma once
// Graph mode II's training steps (bench/README.md, "Compiled training steps against libtorch"):
// the MLP step (64x784 -> 256 -> 10, SGD momentum), SmallCNN at batch 128 (28x28) and ResNet-18
// at batch 8 (224x224, float32 and autocast bfloat16), each three ways: eager, the step compiled
// whole (docs/compile.md, "Training steps"), and the model alone compiled inside the eager loop
// ("A compiled forward in an eager training loop"). reference/libtorch_step_cases.h lists
// libtorch's eager step once per way, in the same order, so that each way has its own
// interleaved pairs; reference/interleaved_steps.cpp times them.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <xten/compile/compile.h>
#include <xten/models/resnet.h>
#include <xten/xten.h>

#include "cpu_case.h"

inline std::vector<CpuCase> xten_step_cases() {
  using namespace xten;
  using Forward = std::function<Tensor(const Tensor&)>;
  std::vector<CpuCase> out;
  // One model, optimizer and batch per way (the compiled programs keep their own graphs).
  auto add = [&](const std::string& name, int64_t images, auto make_model, Tensor x, Tensor y,
                 bool amp) {
    for (const char* way : {"eager", "compiled step", "compiled model"}) {
      manual_seed(0);
      auto m = make_model();
      std::shared_ptr<nn::Module> module = m.ptr();
      module->train();
      Forward fwd = [m](const Tensor& t) mutable { return m(t); };
      const std::string w = way;
      if (w == "compiled model") fwd = Compiled<Forward>(fwd, {}, module);
      auto opt =
          std::make_shared<optim::SGD>(module->parameters(), optim::SGDOptions(0.01).momentum(0.9));
      auto step = [module, opt, fwd, amp](const Tensor& xb, const Tensor& yb) {
        opt->zero_grad();
        Tensor loss;
        {
          std::optional<autocast::AutocastGuard> guard;
          if (amp) guard.emplace(kCPU, kBFloat16);
          loss = cross_entropy(fwd(xb), yb);
        }
        loss.backward();
        opt->step();
        return loss;
      };
      std::function<void()> call = [step, x, y] { step(x, y); };
      if (w == "compiled step") {
        auto compiled = compile(step);
        call = [compiled, x, y] { compiled(x, y); };
      }
      out.push_back({name + " " + w, static_cast<double>(images), CpuCase::kMilliseconds, 5, call});
    }
  };
  add(
      "mlp b64", 0,
      [] { return nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10)); },
      randn({64, 784}), randint(0, 10, {64}), false);
  add(
      "smallcnn b128", 128, [] { return models::SmallCNN(10); }, randn({128, 1, 28, 28}),
      randint(0, 10, {128}), false);
  for (bool amp : {false, true})
    add(
        std::string("resnet18 b8 ") + (amp ? "amp-bf16" : "f32"), 8,
        [] { return models::resnet18(); }, randn({8, 3, 224, 224}), randint(0, 1000, {8}), amp);
  return out;
}
