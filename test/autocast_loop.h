#pragma once
// The training loop of Note [Cast cache] (docs/autocast.md), shared by the CPU and XPU autocast
// tests: a Linear trained by SGD under autocast, once with one scope around the whole loop (the
// cast cache lives across optimizer steps) and once with a scope per step (a fresh cache each
// time). A cached cast is valid only for the version of the parameter it was made from, so both
// loops must give the same losses and weights, bit for bit.
#include <optional>
#include <vector>

#include <xten/xten.h>

#include "test_util.h"

namespace xten::testing {

struct AutocastLoopResult {
  std::vector<Tensor> losses;   // per step, on the CPU
  std::vector<Tensor> weights;  // the final parameters, on the CPU
};

// `steps` steps on `device` under autocast `dtype`; with a GradScaler when `scaled`. Two forwards
// and backwards per step (gradient accumulation) when `accumulate`: the second reuses the casts
// of the first, whose graph the first backward has freed.
inline AutocastLoopResult autocast_loop(Device device, ScalarType dtype, bool one_scope,
                                        bool scaled, bool accumulate, int steps = 4) {
  manual_seed(3);
  nn::Linear lin(4, 3);
  lin->to(device);
  const Tensor x = randn({8, 4}).to(device), y = randint(0, 3, {8}).to(device);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256).enabled(scaled));
  AutocastLoopResult r;
  std::optional<autocast::AutocastGuard> outer;
  if (one_scope) outer.emplace(device.type(), dtype);
  for (int i = 0; i < steps; ++i) {
    std::optional<autocast::AutocastGuard> inner;
    if (!one_scope) inner.emplace(device.type(), dtype);
    opt.zero_grad();
    Tensor loss;
    for (int pass = 0; pass < (accumulate ? 2 : 1); ++pass) {
      loss = cross_entropy(lin->forward(x), y);
      scaler.scale(loss).backward();
    }
    scaler.step(opt);
    scaler.update();
    r.losses.push_back(loss.detach().to("cpu"));
  }
  for (const Tensor& p : lin->parameters()) r.weights.push_back(p.detach().to("cpu"));
  return r;
}

// Both loops, with and without gradient accumulation: the same losses and weights, bit for bit,
// and losses that move (a stale cast would repeat step 0's loss).
inline void expect_one_scope_computes_a_scope_per_step(Device device, ScalarType dtype,
                                                       bool scaled) {
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate ? "two backwards per step" : "one backward per step");
    const auto one = autocast_loop(device, dtype, true, scaled, accumulate);
    const auto per_step = autocast_loop(device, dtype, false, scaled, accumulate);
    for (size_t i = 0; i < one.losses.size(); ++i)
      EXPECT_TRUE(same_bytes(one.losses[i], per_step.losses[i]))
          << "step " << i << ": " << one.losses[i].item<float>() << " vs "
          << per_step.losses[i].item<float>();
    for (size_t i = 0; i < one.weights.size(); ++i)
      EXPECT_TRUE(same_bytes(one.weights[i], per_step.weights[i])) << "parameter " << i;
    EXPECT_NE(one.losses[0].item<float>(), one.losses[1].item<float>());
  }
}

}  // namespace xten::testing
