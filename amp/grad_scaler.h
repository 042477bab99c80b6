#pragma once
// amp::GradScaler (PyTorch's torch.amp.GradScaler, docs/optim.md): scales the loss so that
// float16 gradients do not underflow, unscales them before the step, skips steps whose gradients
// hold inf or NaN, and adapts the scale. The scale and the found-inf flags are float32 tensors on
// the gradients' device: no float64 anywhere, so it runs on devices without fp64.
//
//   amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.step(optimizer);   // unscale_, then step unless a gradient is not finite
//   scaler.update();          // halve the scale after a skip, double it after growth_interval
#include <map>

#include <xten/optim/optimizer.h>

namespace xten::amp {

struct GradScalerOptions {
  XTEN_ARG(double, init_scale) = 65536.0;
  XTEN_ARG(double, growth_factor) = 2.0;
  XTEN_ARG(double, backoff_factor) = 0.5;
  XTEN_ARG(int64_t, growth_interval) = 2000;
  XTEN_ARG(bool, enabled) = true;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});
  // outputs * scale (outputs unchanged when disabled).
  Tensor scale(const Tensor& outputs);
  // Divides the optimizer's gradients by the scale in place and records whether any is inf or
  // NaN. Once per optimizer between updates (PyTorch's error otherwise).
  void unscale_(optim::Optimizer& optimizer);
  // unscale_ (if not done), then optimizer.step() unless a gradient was not finite. Returns
  // whether the step ran.
  bool step(optim::Optimizer& optimizer);
  // Adapts the scale: backoff after a skipped step (and the growth count restarts), growth after
  // growth_interval steps in a row without one.
  void update();
  double get_scale() const;
  bool is_enabled() const { return options_.enabled(); }
  // {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}.
  nn::NamedTensors state_dict() const;
  void load_state_dict(const nn::NamedTensors& state);

 private:
  void lazy_init(const Device& device);
  struct PerOptimizer {
    bool unscaled = false, stepped = false;
    Tensor found_inf;  // float32, 1 if a gradient was not finite
  };
  GradScalerOptions options_;
  Tensor scale_;  // float32, 1 element, on the first scaled output's device
  int64_t growth_tracker_ = 0;
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace xten::amp
