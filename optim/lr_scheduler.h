#pragma once
// Learning-rate schedulers (PyTorch's torch.optim.lr_scheduler, docs/optim.md). A scheduler sets
// every group's lr from the group's base lr (its lr when the scheduler was made) and the epoch
// count, by PyTorch's closed forms; construction applies epoch 0, step() advances one epoch.
#include <memory>
#include <string>
#include <vector>

#include <xten/optim/optimizer.h>

namespace xten::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  // Advances one epoch and sets the groups' lr.
  virtual void step();
  // The lr of each group, as last set.
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  // {"last_epoch", "base_lrs"} as tensors (the base lrs in float64).
  nn::NamedTensors state_dict() const;
  virtual void load_state_dict(const nn::NamedTensors& state);

 protected:
  // The lr of group g at epoch `epoch`, from its base lr.
  virtual double lr_at(int64_t epoch, double base_lr) const = 0;
  // Sets last_epoch and applies it (schedulers made by SequentialLR restart through this).
  void apply(int64_t epoch);
  // Called by subclasses' constructors once their settings are in place (epoch 0).
  void start() { apply(0); }

  Optimizer& optimizer_;
  std::vector<double> base_lrs_, last_lr_;
  int64_t last_epoch_ = -1;
  friend class SequentialLR;
};

// lr = base * gamma ^ floor(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 private:
  double lr_at(int64_t epoch, double base) const override;
  int64_t step_size_;
  double gamma_;
};

// lr = base * gamma ^ (number of milestones <= epoch).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 private:
  double lr_at(int64_t epoch, double base) const override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = base * gamma ^ epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 private:
  double lr_at(int64_t epoch, double base) const override;
  double gamma_;
};

// lr = eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 private:
  double lr_at(int64_t epoch, double base) const override;
  int64_t t_max_;
  double eta_min_;
};

// lr = base * (start + (end - start) * min(epoch, total_iters) / total_iters).
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 private:
  double lr_at(int64_t epoch, double base) const override;
  double start_, end_;
  int64_t total_;
};

// PyTorch's one-cycle policy for the lr (two phases, or three with three_phase): from
// max_lr / div_factor up to max_lr over pct_start of total_steps, then down to
// initial / final_div_factor, annealed by cosine ("cos") or linearly ("linear"). Momentum
// cycling is not implemented (cycle_momentum must stay false).
struct OneCycleLROptions {
  OneCycleLROptions(double max_lr, int64_t total_steps)
      : max_lr_(max_lr), total_steps_(total_steps) {}
  XTEN_ARG(double, max_lr) = 0;
  XTEN_ARG(int64_t, total_steps) = 0;
  XTEN_ARG(double, pct_start) = 0.3;
  XTEN_ARG(std::string, anneal_strategy) = "cos";
  XTEN_ARG(double, div_factor) = 25;
  XTEN_ARG(double, final_div_factor) = 1e4;
  XTEN_ARG(bool, three_phase) = false;
  XTEN_ARG(bool, cycle_momentum) = false;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);

 private:
  double lr_at(int64_t epoch, double base) const override;
  OneCycleLROptions o_;
};

// Runs schedulers one after another: scheduler i from milestone i-1 (restarted at its epoch 0
// there) until milestone i.
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  // Restores last_epoch by replaying the schedule from epoch 0.
  void load_state_dict(const nn::NamedTensors& state) override;

 private:
  double lr_at(int64_t epoch, double base) const override;
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace xten::optim
