#include <xten/amp/grad_scaler.h>

#include <algorithm>

#include <xten/autograd/grad_mode.h>
#include <xten/dispatch/ops.h>

namespace xten::amp {

GradScaler::GradScaler(GradScalerOptions options) : options_(std::move(options)) {
  XTEN_CHECK(options_.growth_factor() > 1 && options_.backoff_factor() > 0 &&
                 options_.backoff_factor() < 1 && options_.growth_interval() > 0 &&
                 options_.init_scale() > 0,
             ValueError, "GradScaler",
             "expected growth_factor > 1, 0 < backoff_factor < 1, growth_interval > 0 and "
             "init_scale > 0");
}

ScaledStep::operator bool() const {
  return !found_inf_.defined() || found_inf_.item<float>() == 0;
}

void GradScaler::lazy_init(const Device& device) {
  if (!scale_.defined()) scale_ = full({1}, options_.init_scale(), TensorOptions(kFloat, device));
  if (!growth_tracker_.defined())
    growth_tracker_ = zeros({1}, TensorOptions(kInt, scale_.device()));
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!is_enabled()) return outputs;
  lazy_init(outputs.device());
  // The scale on the outputs' device (a model split over devices multiplies on each).
  const Tensor s = scale_.device() == outputs.device() ? scale_ : scale_.to(outputs.device());
  return outputs * s.to(outputs.dtype() == kDouble ? kDouble : kFloat).view({});
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!is_enabled()) return;
  PerOptimizer& st = per_optimizer_[&optimizer];
  XTEN_CHECK(!st.unscaled, ValueError, "unscale_",
             "unscale_() has already been called on this optimizer since the last update().");
  XTEN_CHECK(!st.stepped, ValueError, "unscale_", "unscale_() is being called after step().");
  XTEN_CHECK(scale_.defined(), ValueError, "unscale_",
             "no scale yet: call scale() on the loss before unscaling");
  NoGradGuard no_grad;
  const Tensor inv = scale_.reciprocal();  // float32, as PyTorch's (never float64)
  // Per device, one multi-tensor call over its gradients (one loop on the CPU, one kernel per
  // dtype on an XPU: docs/optim.md); a gradient that is neither contiguous nor channels-last
  // goes in as a contiguous copy, written back afterwards.
  std::vector<std::pair<Device, std::vector<Tensor>>> per_device;  // in order of first use
  std::vector<std::pair<Tensor, Tensor>> strided;                  // (gradient, its copy)
  for (const Tensor& p : optimizer.all_params()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!g.is_contiguous() && !g.is_contiguous(MemoryFormat::ChannelsLast)) {
      strided.emplace_back(g, g.contiguous());
      g = strided.back().second;
    }
    auto it = std::find_if(per_device.begin(), per_device.end(),
                           [&](const auto& d) { return d.first == g.device(); });
    if (it == per_device.end()) it = per_device.insert(per_device.end(), {g.device(), {}});
    it->second.push_back(g);
  }
  st.found_inf = zeros({1}, kFloat, scale_.device());
  for (auto& [device, grads] : per_device) {
    const Tensor found = zeros({1}, kFloat, device);
    _amp_foreach_non_finite_check_and_unscale_(grads, found, inv.to(device));
    st.found_inf = maximum(st.found_inf, found.to(scale_.device()));
  }
  for (auto& [g, copy] : strided) g.copy_(copy);
  st.unscaled = true;
}

ScaledStep GradScaler::step(optim::Optimizer& optimizer) {
  if (!is_enabled()) {
    optimizer.step();
    return ScaledStep();
  }
  PerOptimizer& st = per_optimizer_[&optimizer];
  XTEN_CHECK(!st.stepped, ValueError, "step",
             "step() has already been called since the last update().");
  if (!st.unscaled) unscale_(optimizer);
  st.stepped = true;
  NoGradGuard no_grad;
  optimizer.step_unless(st.found_inf);
  return ScaledStep(st.found_inf);
}

void GradScaler::update() {
  if (!is_enabled() || !scale_.defined()) return;
  lazy_init(scale_.device());
  NoGradGuard no_grad;
  Tensor found;  // the optimizers' flags summed (no step recorded: a good step)
  for (auto& [opt, st] : per_optimizer_)
    if (st.found_inf.defined()) found = found.defined() ? found + st.found_inf : st.found_inf;
  if (!found.defined()) found = zeros({1}, TensorOptions(kFloat, scale_.device()));
  _amp_update_scale_(scale_, growth_tracker_, found, options_.growth_factor(),
                     options_.backoff_factor(), options_.growth_interval());
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!is_enabled()) return 1.0;
  return scale_.defined() ? scale_.to("cpu").item<float>() : options_.init_scale();
}

nn::NamedTensors GradScaler::state_dict() const {
  if (!is_enabled()) return {};
  return {
      {"scale", full({}, get_scale(), kFloat)},
      {"growth_factor", full({}, options_.growth_factor(), kFloat)},
      {"backoff_factor", full({}, options_.backoff_factor(), kFloat)},
      {"growth_interval", full({}, options_.growth_interval(), kLong)},
      {"_growth_tracker",
       full({}, growth_tracker_.defined() ? growth_tracker_.to("cpu").item<int64_t>() : 0, kLong)}};
}

void GradScaler::load_state_dict(const nn::NamedTensors& state) {
  // PyTorch's rule: a disabled scaler ignores the state; an enabled one needs some.
  if (!is_enabled()) return;
  XTEN_CHECK(!state.empty(), ValueError, "load_state_dict",
             "the source state dict is empty, possibly because it was saved from a disabled "
             "GradScaler");
  for (const auto& [key, t] : state) {
    if (key == "scale") {
      const Device d = scale_.defined() ? scale_.device() : Device("cpu");
      scale_ = full({1}, t.item<double>(), TensorOptions(kFloat, d));
    } else if (key == "growth_factor") {
      options_.growth_factor(t.item<double>());
    } else if (key == "backoff_factor") {
      options_.backoff_factor(t.item<double>());
    } else if (key == "growth_interval") {
      options_.growth_interval(t.item<int64_t>());
    } else if (key == "_growth_tracker") {
      growth_tracker_ = full({1}, t.item<int64_t>(), kInt);
    } else {
      XTEN_FAIL(ValueError, "load_state_dict", "unexpected key '{}' for a GradScaler", key);
    }
  }
  if (scale_.defined() && growth_tracker_.defined())
    growth_tracker_ = growth_tracker_.to(scale_.device());
}

}  // namespace xten::amp
