#pragma once
// optim: optimizers over parameter groups (docs/optim.md), with libtorch's names:
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Each update is PyTorch's formula (torch.optim's single-tensor path), run under NoGradGuard
// with xten ops, so it runs on the parameters' device (CPU or XPU).
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <xten/core/tensor.h>
#include <xten/nn/module.h>

namespace xten::optim {

// What every optimizer offers schedulers, GradScaler and users: its groups' parameters and
// learning rates, zero_grad, step, and its state as named tensors.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // GradScaler's step: step() unless `found_inf` (a one-element float32 tensor) is not 0. Here
  // the flag is read back to the host first; SGD, Adam and RMSprop hand it to their multi-tensor
  // kernels instead, which read it on the device and change nothing when it is set (docs/optim.md,
  // "GradScaler"), so a compiled training step keeps GradScaler in its graph.
  virtual void step_unless(const Tensor& found_inf);
  // Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  virtual size_t num_param_groups() const = 0;
  virtual const std::vector<Tensor>& params(size_t group) const = 0;
  virtual double lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  // Every parameter, group by group: a parameter's index here names its state.
  std::vector<Tensor> all_params() const;

  // The per-parameter state ("state.<index>.<name>", e.g. "state.3.momentum_buffer", and
  // "state.<index>.step" as a 0-d tensor) and each group's lr ("param_groups.<g>.lr", 0-d
  // float64), as PyTorch's state_dict lays them out.
  nn::NamedTensors state_dict() const;
  // Takes state back; the groups must hold as many parameters, with the same shapes.
  void load_state_dict(const nn::NamedTensors& state);

  // Each group's lr before any scheduler changed it (PyTorch's group["initial_lr"]): recorded by
  // the first scheduler made on this optimizer, the base of every scheduler's formula.
  const std::vector<double>& initial_lrs();

 protected:
  // A parameter's named state tensors (created on its first step).
  using ParamState = std::map<std::string, Tensor>;
  ParamState& state_of(const Tensor& p);
  std::map<const TensorImpl*, ParamState> state_;
  std::vector<double> initial_lrs_;
};

// The groups and their options, shared by the optimizers below.
template <class Options>
class OptimizerOf : public Optimizer {
 public:
  struct ParamGroup {
    std::vector<Tensor> params;
    Options options;
  };
  OptimizerOf(std::vector<Tensor> params, Options defaults) : defaults_(std::move(defaults)) {
    add_param_group(std::move(params), defaults_);
  }
  // A group with its own options.
  void add_param_group(std::vector<Tensor> params, Options options) {
    for (const Tensor& p : params)
      XTEN_CHECK(p.defined() && p.is_leaf(), ValueError, "optimizer",
                 "can only optimize defined leaf tensors");
    groups_.push_back({std::move(params), std::move(options)});
  }
  size_t num_param_groups() const override { return groups_.size(); }
  const std::vector<Tensor>& params(size_t g) const override { return groups_.at(g).params; }
  double lr(size_t g) const override { return groups_.at(g).options.lr(); }
  void set_lr(size_t g, double lr) override { groups_.at(g).options.lr(lr); }
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const Options& defaults() const { return defaults_; }

 protected:
  std::vector<ParamGroup> groups_;
  Options defaults_;
};

struct SGDOptions {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT
  XTEN_ARG(double, lr) = 0;
  XTEN_ARG(double, momentum) = 0;
  XTEN_ARG(double, dampening) = 0;
  XTEN_ARG(double, weight_decay) = 0;
  XTEN_ARG(bool, nesterov) = false;
  XTEN_ARG(bool, maximize) = false;
  // The multi-tensor step (docs/optim.md): one _fused_sgd_ call per device for the group's
  // dense parameters; false: the per-tensor loop (the reference it is tested against).
  XTEN_ARG(bool, foreach) = true;
};
// g = grad (negated if maximize) + weight_decay * p; with momentum, buf = g on the first step,
// then momentum * buf + (1 - dampening) * g, and g = nesterov ? g + momentum * buf : buf;
// p -= lr * g.
class SGD : public OptimizerOf<SGDOptions> {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override { update(nullptr); }
  void step_unless(const Tensor& found_inf) override { update(&found_inf); }

 private:
  void update(const Tensor* found_inf);
};

using Betas = std::pair<double, double>;
struct AdamOptions {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT
  XTEN_ARG(double, lr) = 1e-3;
  XTEN_ARG(Betas, betas) = Betas(0.9, 0.999);
  XTEN_ARG(double, eps) = 1e-8;
  XTEN_ARG(double, weight_decay) = 0;
  XTEN_ARG(bool, amsgrad) = false;
  XTEN_ARG(bool, maximize) = false;
  // The multi-tensor step: one _fused_adam_ call per device; false: the per-tensor loop.
  XTEN_ARG(bool, foreach) = true;
};
// PyTorch's Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2 (amsgrad: v_max = max(v_max,
// v) is used), p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); weight decay adds
// weight_decay * p to g (Adam) or scales p by 1 - lr * weight_decay first (AdamW).
class Adam : public OptimizerOf<AdamOptions> {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  void step() override { update(nullptr); }
  void step_unless(const Tensor& found_inf) override { update(&found_inf); }

 protected:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled);
  bool decoupled_weight_decay_ = false;

 private:
  void update(const Tensor* found_inf);
};
// AdamW: Adam with decoupled weight decay (default 1e-2, as PyTorch).
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options = AdamOptions().weight_decay(1e-2))
      : Adam(std::move(params), std::move(options), true) {}
};

struct RMSpropOptions {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT
  XTEN_ARG(double, lr) = 1e-2;
  XTEN_ARG(double, alpha) = 0.99;
  XTEN_ARG(double, eps) = 1e-8;
  XTEN_ARG(double, weight_decay) = 0;
  XTEN_ARG(double, momentum) = 0;
  XTEN_ARG(bool, centered) = false;
  XTEN_ARG(bool, maximize) = false;
  // The multi-tensor step: one _fused_rmsprop_ call per device; false: the per-tensor loop.
  XTEN_ARG(bool, foreach) = true;
};
// s = alpha s + (1 - alpha) g^2; centered: a = alpha a + (1 - alpha) g, avg = sqrt(s - a^2) +
// eps, else sqrt(s) + eps; momentum: buf = momentum buf + g / avg, p -= lr buf; else
// p -= lr g / avg.
class RMSprop : public OptimizerOf<RMSpropOptions> {
 public:
  RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});
  void step() override { update(nullptr); }
  void step_unless(const Tensor& found_inf) override { update(&found_inf); }

 private:
  void update(const Tensor* found_inf);
};

}  // namespace xten::optim
