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
//
// Nothing here reads a value back to the host: the optimizer's kernels read the found-inf flag
// (Optimizer::step_unless) and the scale is updated on its device (_amp_update_scale_), so a
// compiled training step keeps the scaler in its graph (docs/compile.md, "Training steps").
#include <map>

#include <xten/optim/optimizer.h>

namespace xten::amp {

// What GradScaler::step did. As a bool: whether the optimizer's update ran, which reads the
// found-inf flag back to the host (a synchronization, and a graph break inside a compiled step:
// read it after the call, or not at all).
class ScaledStep {
 public:
  explicit ScaledStep(Tensor found_inf = {}) : found_inf_(std::move(found_inf)) {}
  operator bool() const;  // NOLINT: `if (scaler.step(opt))` reads as PyTorch users expect
  // The flag (float32, 1 if a gradient was not finite); undefined for a disabled scaler.
  const Tensor& found_inf() const { return found_inf_; }

 private:
  Tensor found_inf_;
};

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
  // unscale_ (if not done), then optimizer.step_unless(found_inf): the update unless a
  // gradient was not finite. The result converts to whether the step ran (a read back).
  ScaledStep step(optim::Optimizer& optimizer);
  // Adapts the scale on its device (PyTorch's rule): backoff after a skipped step (and the growth
  // count restarts), growth after growth_interval steps in a row without one (kept only if the
  // grown scale is finite).
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
  Tensor scale_;           // float32, 1 element, on the first scaled output's device
  Tensor growth_tracker_;  // int32, 1 element, beside scale_: good steps since the last change
  std::map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace xten::amp
