#include <xten/optim/lr_scheduler.h>

#include <algorithm>
#include <cmath>

#include <xten/dispatch/ops.h>

namespace xten::optim {

LRScheduler::LRScheduler(Optimizer& optimizer)
    : optimizer_(optimizer), base_lrs_(optimizer.initial_lrs()) {}

void LRScheduler::apply(int64_t epoch) {
  last_epoch_ = epoch;
  last_lr_.clear();
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    last_lr_.push_back(lr_at(epoch, base_lrs_[g]));
    optimizer_.set_lr(g, last_lr_.back());
  }
}

void LRScheduler::step() {
  apply(last_epoch_ + 1);
}

nn::NamedTensors LRScheduler::state_dict() const {
  return {{"last_epoch", full({}, last_epoch_, kLong)},
          {"base_lrs", tensor(base_lrs_, TensorOptions(kDouble))}};
}

void LRScheduler::load_state_dict(const nn::NamedTensors& state) {
  for (const auto& [key, t] : state) {
    if (key == "last_epoch") {
      last_epoch_ = t.item<int64_t>();
    } else if (key == "base_lrs") {
      XTEN_CHECK(t.numel() == static_cast<int64_t>(base_lrs_.size()), ValueError, "load_state_dict",
                 "base_lrs has {} values, but the optimizer has {} groups", t.numel(),
                 base_lrs_.size());
      const Tensor c = t.to(kDouble).contiguous();
      base_lrs_.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    } else {
      XTEN_FAIL(ValueError, "load_state_dict", "unexpected key '{}' for a scheduler", key);
    }
  }
  apply(last_epoch_);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  XTEN_CHECK(step_size > 0, ValueError, "StepLR", "step_size must be positive, but got {}",
             step_size);
  start();
}
double StepLR::lr_at(int64_t epoch, double base) const {
  return base * std::pow(gamma_, static_cast<double>(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  XTEN_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), ValueError, "MultiStepLR",
             "milestones must be increasing");
  start();
}
double MultiStepLR::lr_at(int64_t epoch, double base) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base * std::pow(gamma_, static_cast<double>(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  start();
}
double ExponentialLR::lr_at(int64_t epoch, double base) const {
  return base * std::pow(gamma_, static_cast<double>(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  XTEN_CHECK(T_max > 0, ValueError, "CosineAnnealingLR", "T_max must be positive, but got {}",
             T_max);
  start();
}
double CosineAnnealingLR::lr_at(int64_t epoch, double base) const {
  const double pi = std::acos(-1.0);
  return eta_min_ +
         (base - eta_min_) *
             (1 + std::cos(pi * static_cast<double>(epoch) / static_cast<double>(t_max_))) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer), start_(start_factor), end_(end_factor), total_(total_iters) {
  XTEN_CHECK(start_factor > 0 && start_factor <= 1 && end_factor >= 0 && end_factor <= 1 &&
                 total_iters > 0,
             ValueError, "LinearLR",
             "expected 0 < start_factor <= 1, 0 <= end_factor <= 1 and total_iters > 0, but got "
             "{}, {} and {}",
             start_factor, end_factor, total_iters);
  start();
}
double LinearLR::lr_at(int64_t epoch, double base) const {
  const double t = static_cast<double>(std::min(epoch, total_)) / static_cast<double>(total_);
  return base * (start_ + (end_ - start_) * t);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options)
    : LRScheduler(optimizer), o_(std::move(options)) {
  XTEN_CHECK(o_.total_steps() > 0, ValueError, "OneCycleLR",
             "total_steps must be positive, but got {}", o_.total_steps());
  XTEN_CHECK(o_.pct_start() >= 0 && o_.pct_start() <= 1, ValueError, "OneCycleLR",
             "pct_start must be in [0, 1], but got {}", o_.pct_start());
  XTEN_CHECK(o_.anneal_strategy() == "cos" || o_.anneal_strategy() == "linear", ValueError,
             "OneCycleLR", "anneal_strategy must be 'cos' or 'linear', but got '{}'",
             o_.anneal_strategy());
  XTEN_CHECK(!o_.cycle_momentum(), NotImplementedError, "OneCycleLR",
             "momentum cycling is not implemented (cycle_momentum must be false)");
  start();
}

double OneCycleLR::lr_at(int64_t step, double) const {
  XTEN_CHECK(step <= o_.total_steps(), ValueError, "OneCycleLR",
             "Tried to step {} times. The specified number of total steps is {}", step,
             o_.total_steps());
  const double initial = o_.max_lr() / o_.div_factor(), min_lr = initial / o_.final_div_factor();
  const double up = o_.pct_start() * static_cast<double>(o_.total_steps()) - 1;
  const double last = static_cast<double>(o_.total_steps()) - 1;
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  const std::vector<Phase> phases =
      o_.three_phase()
          ? std::vector<Phase>{{up, initial, o_.max_lr()},
                               {2 * up, o_.max_lr(), initial},
                               {last, initial, min_lr}}
          : std::vector<Phase>{{up, initial, o_.max_lr()}, {last, o_.max_lr(), min_lr}};
  const double pi = std::acos(-1.0);
  double start_step = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const Phase& p = phases[i];
    if (static_cast<double>(step) <= p.end_step || i + 1 == phases.size()) {
      const double pct = (static_cast<double>(step) - start_step) / (p.end_step - start_step);
      return o_.anneal_strategy() == "cos"
                 ? p.end_lr + (p.start_lr - p.end_lr) / 2 * (std::cos(pi * pct) + 1)
                 : (p.end_lr - p.start_lr) * pct + p.start_lr;
    }
    start_step = p.end_step;
  }
  return min_lr;
}

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer),
      schedulers_(std::move(schedulers)),
      milestones_(std::move(milestones)) {
  XTEN_CHECK(!schedulers_.empty() && milestones_.size() + 1 == schedulers_.size(), ValueError,
             "SequentialLR", "expected one milestone fewer than schedulers, but got {} and {}",
             milestones_.size(), schedulers_.size());
  for (const auto& s : schedulers_)
    XTEN_CHECK(&s->optimizer_ == &optimizer, ValueError, "SequentialLR",
               "every scheduler must belong to the same optimizer");
  last_epoch_ = 0;
  schedulers_[0]->apply(0);
  last_lr_ = schedulers_[0]->get_last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = static_cast<size_t>(
      std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) {
    s.apply(0);
  } else {
    s.step();
  }
  last_lr_ = s.get_last_lr();
}

void SequentialLR::load_state_dict(const nn::NamedTensors& state) {
  int64_t epoch = 0;
  for (const auto& [key, t] : state) {
    XTEN_CHECK(key == "last_epoch" || key == "base_lrs", ValueError, "load_state_dict",
               "unexpected key '{}' for a scheduler", key);
    if (key == "last_epoch") epoch = t.item<int64_t>();
  }
  last_epoch_ = 0;
  schedulers_[0]->apply(0);
  for (int64_t e = 0; e < epoch; ++e) step();
  if (epoch == 0) last_lr_ = schedulers_[0]->get_last_lr();
}

double SequentialLR::lr_at(int64_t, double base) const {
  return base;  // never called: step() delegates
}

}  // namespace xten::optim
