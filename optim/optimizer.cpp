#include <xten/optim/optimizer.h>

#include <cmath>
#include <optional>

#include <fmt/format.h>

#include <xten/autograd/grad_mode.h>
#include <xten/compile/host_guard.h>
#include <xten/dispatch/ops.h>

namespace xten::optim {

void Optimizer::zero_grad(bool set_to_none) {
  nn::zero_grads(all_params(), set_to_none);
}

void Optimizer::step_unless(const Tensor& found_inf) {
  if (found_inf.item<float>() == 0) step();
}

std::vector<Tensor> Optimizer::all_params() const {
  std::vector<Tensor> r;
  for (size_t g = 0; g < num_param_groups(); ++g)
    for (const Tensor& p : params(g)) r.push_back(p);
  return r;
}

const std::vector<double>& Optimizer::initial_lrs() {
  if (initial_lrs_.size() != num_param_groups()) {
    for (size_t g = initial_lrs_.size(); g < num_param_groups(); ++g) initial_lrs_.push_back(lr(g));
  }
  return initial_lrs_;
}

Optimizer::ParamState& Optimizer::state_of(const Tensor& p) {
  return state_[p.impl()];
}

nn::NamedTensors Optimizer::state_dict() const {
  nn::NamedTensors r;
  const std::vector<Tensor> ps = all_params();
  for (size_t i = 0; i < ps.size(); ++i) {
    auto it = state_.find(ps[i].impl());
    if (it == state_.end()) continue;
    for (const auto& [name, t] : it->second) r.emplace_back(fmt::format("state.{}.{}", i, name), t);
  }
  for (size_t g = 0; g < num_param_groups(); ++g)
    r.emplace_back(fmt::format("param_groups.{}.lr", g), full({}, lr(g), kDouble));
  return r;
}

void Optimizer::load_state_dict(const nn::NamedTensors& state) {
  const std::vector<Tensor> ps = all_params();
  std::map<const TensorImpl*, ParamState> loaded;
  for (const auto& [key, t] : state) {
    size_t index = 0;
    char name[128] = {0};
    if (std::sscanf(key.c_str(), "state.%zu.%127s", &index, name) == 2) {
      XTEN_CHECK(index < ps.size(), ValueError, "load_state_dict",
                 "'{}' names parameter {}, but the optimizer has {} parameters", key, index,
                 ps.size());
      const std::string n(name);
      XTEN_CHECK(n == "step" || t.sizes() == ps[index].sizes(), ValueError, "load_state_dict",
                 "'{}' has shape {}, but parameter {} has shape {}", key, t.sizes(), index,
                 ps[index].sizes());
      loaded[ps[index].impl()][n] =
          n == "step" ? t.to(kDouble).clone() : t.to(ps[index].device(), ps[index].dtype()).clone();
      continue;
    }
    size_t group = 0;
    if (std::sscanf(key.c_str(), "param_groups.%zu.lr", &group) == 1) {
      XTEN_CHECK(group < num_param_groups(), ValueError, "load_state_dict",
                 "'{}' names group {}, but the optimizer has {} groups", key, group,
                 num_param_groups());
      set_lr(group, t.item<double>());
      continue;
    }
    XTEN_FAIL(ValueError, "load_state_dict", "unexpected key '{}'", key);
  }
  state_ = std::move(loaded);
}

namespace {

// The gradient as the update reads it: negated for maximize, plus weight_decay * p.
Tensor update_grad(const Tensor& p, bool maximize, double weight_decay) {
  Tensor g = maximize ? -p.grad() : p.grad();
  if (weight_decay != 0) g = g + p.detach() * weight_decay;
  return g;
}

// The step count of a parameter's state, incremented (a 0-d float64 tensor on the CPU, as
// PyTorch keeps it) by 1, or by `by` (GradScaler's step: 1 - found_inf). The multi-tensor steps
// hand the tensors to their kernels, which read the counts: no value comes back to the host, so
// a compiled step has no graph break.
Tensor& increment_step(std::map<std::string, Tensor>& s, const Tensor& by = {}) {
  Tensor& step = s["step"];
  if (!step.defined()) step = zeros({}, kDouble, Device("cpu"));
  if (by.defined()) {
    step.add_(by);
  } else {
    step.add_(1);
  }
  return step;
}

// GradScaler's flag in a multi-tensor step (Optimizer::step_unless; docs/optim.md,
// "GradScaler"). The kernels skip themselves where it is set; the per-tensor loop's ops cannot,
// so where a parameter with a gradient takes the loop (`on_host(options, p)`) the flag is read
// back here, once: then a set flag skips the whole step (returns true) and a clear one leaves a
// plain step (found_inf becomes null).
template <class Groups, class OnHost>
bool skip_on_host(const Groups& groups, const Tensor*& found_inf, OnHost on_host) {
  if (!found_inf) return false;
  for (const auto& group : groups)
    for (const Tensor& p : group.params)
      if (p.grad().defined() && on_host(group.options, p)) {
        const bool skip = found_inf->item<float>() != 0;
        found_inf = nullptr;
        return skip;
      }
  return false;
}
// The flag on a batch's device, for its kernel.
std::optional<Tensor> flag_on(const Tensor* found_inf, Device device) {
  if (!found_inf) return std::nullopt;
  return found_inf->to(device);
}
// What a step count grows by under the flag: 1 - found_inf, a 0-d float64 CPU tensor.
Tensor step_increment(const Tensor* found_inf) {
  if (!found_inf) return {};
  return full({}, 1.0, kDouble) - found_inf->to(Device("cpu")).to(kDouble).view({});
}
double next_step(std::map<std::string, Tensor>& s) {
  return increment_step(s).item<double>();
}

// A compiled training step (docs/compile.md, "Training steps") has a group's options in its
// graph as constants. While it is captured: the lr of each multi-tensor call is bound to the
// group's lr (read before every run: a per-step schedule costs nothing), and a guard compares the
// other options (and lr too, where a parameter took the per-tensor loop, whose ops carry it) with
// each later call's, so that a change recompiles the step instead of being ignored. `values`
// returns the options; the group is found again by its index (groups are only added).
template <class Groups, class Values>
void guard_options(Groups* groups, size_t index, bool with_lr, Values values) {
  if (!compiler::is_capturing()) return;
  auto all = [values, with_lr](const auto& o) {
    std::vector<double> v = values(o);
    if (with_lr) v.push_back(o.lr());
    return v;
  };
  compiler::guard_host_values([groups, index, all, now = all((*groups)[index].options)] {
    return index < groups->size() && all((*groups)[index].options) == now;
  });
}
template <class Groups>
void bind_lr(Groups* groups, size_t index, const char* op) {
  if (!compiler::is_capturing()) return;
  compiler::bind_float_argument(op, "lr",
                                [groups, index] { return (*groups)[index].options.lr(); });
}

// The order a parameter's elements lie in when it is dense: contiguous, or channels-last (a
// channels-last model's 4-d weights); none for other strides.
std::optional<MemoryFormat> dense_format(const Tensor& t) {
  if (t.is_contiguous()) return MemoryFormat::Contiguous;
  if (t.is_contiguous(MemoryFormat::ChannelsLast)) return MemoryFormat::ChannelsLast;
  return std::nullopt;
}

// Whether a parameter can go to a multi-tensor op: dense, floating, its gradient of its dtype
// and device and dense in the same order (the kernels walk memory in order). The others take
// the per-tensor loop.
bool fusable(const Tensor& p) {
  const Tensor& g = p.grad();
  const std::optional<MemoryFormat> f = dense_format(p);
  return is_floating_type(p.dtype()) && f && g.is_contiguous(*f) && g.dtype() == p.dtype() &&
         g.device() == p.device();
}

// Whether a parameter with a gradient takes the per-tensor loop under a group's options.
template <class Options>
bool takes_loop(const Options& o, const Tensor& p) {
  return !o.foreach() || !fusable(p);
}

// A state tensor in its parameter's layout: made so (zeros_like and empty_like make contiguous
// tensors), or converted once where a loaded state dict brought another layout.
Tensor& in_layout_of(Tensor& state, const Tensor& p) {
  const MemoryFormat f = *dense_format(p);
  if (state.defined() && !state.is_contiguous(f)) state = state.contiguous(f);
  return state;
}

// The parameters of one multi-tensor call, with their gradients and state tensors.
struct Batch {
  Device device;
  bool first = false;  // SGD: the momentum buffers start now
  std::vector<Tensor> params, grads, a, b, c;
  std::vector<Tensor> steps;  // Adam: the parameters' step counts
};
Batch& batch_for(std::vector<Batch>& batches, Device device, bool first) {
  for (Batch& b : batches)
    if (b.device == device && b.first == first) return b;
  batches.push_back(Batch{device, first});
  return batches.back();
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : OptimizerOf(std::move(params), std::move(options)) {
  const SGDOptions& o = defaults_;
  XTEN_CHECK(o.lr() >= 0 && o.momentum() >= 0 && o.weight_decay() >= 0, ValueError, "SGD",
             "lr, momentum and weight_decay must be non-negative, but got {}, {}, {}", o.lr(),
             o.momentum(), o.weight_decay());
  XTEN_CHECK(!o.nesterov() || (o.momentum() > 0 && o.dampening() == 0), ValueError, "SGD",
             "Nesterov momentum requires a momentum and zero dampening");
}

void SGD::update(const Tensor* found_inf) {
  NoGradGuard no_grad;
  // A skipped first step leaves no buffer to start from: with the flag, new buffers are zeros
  // and take the later steps' formula, momentum * 0 + (1 - dampening) * g, which is the first
  // step's g only without dampening; with dampening the flag is read on the host.
  auto on_host = [this](const SGDOptions& o, const Tensor& p) {
    if (takes_loop(o, p)) return true;
    auto it = state_.find(p.impl());
    const bool has_buffer = it != state_.end() && it->second.count("momentum_buffer");
    return o.momentum() != 0 && o.dampening() != 0 && !has_buffer;
  };
  if (skip_on_host(groups_, found_inf, on_host)) return;
  for (ParamGroup& group : groups_) {
    const SGDOptions& o = group.options;
    const size_t gi = static_cast<size_t>(&group - groups_.data());
    bool looped = false;  // a parameter took the per-tensor loop
    std::vector<Batch> batches;
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      if (o.foreach() && fusable(p)) {
        bool first = false;
        Tensor buf;
        if (o.momentum() != 0) {
          Tensor& b = state_of(p)["momentum_buffer"];
          first = !b.defined() && !found_inf;
          if (!b.defined()) b = found_inf ? zeros_like(p) : empty_like(p);
          buf = in_layout_of(b, p);
        }
        Batch& batch = batch_for(batches, p.device(), first);
        batch.params.push_back(p);
        batch.grads.push_back(p.grad());
        if (buf.defined()) batch.a.push_back(buf);
        continue;
      }
      looped = true;
      Tensor g = update_grad(p, o.maximize(), o.weight_decay());
      if (o.momentum() != 0) {
        Tensor& buf = state_of(p)["momentum_buffer"];
        if (!buf.defined()) {
          buf = g.clone();
        } else {
          buf.mul_(o.momentum()).add_(g, 1 - o.dampening());
        }
        g = o.nesterov() ? g + buf * o.momentum() : buf;
      }
      p.sub_(g, o.lr());
    }
    guard_options(&groups_, gi, looped, [](const SGDOptions& o) {
      return std::vector<double>{o.momentum(), o.dampening(), o.weight_decay(), o.nesterov() * 1.0,
                                 o.maximize() * 1.0};
    });
    for (const Batch& b : batches) {
      bind_lr(&groups_, gi, "xten::_fused_sgd_");
      _fused_sgd_(b.params, b.grads, b.a, o.weight_decay(), o.momentum(), o.lr(), o.dampening(),
                  o.nesterov(), o.maximize(), b.first, flag_on(found_inf, b.device));
    }
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::move(params), std::move(options), false) {}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled)
    : OptimizerOf(std::move(params), std::move(options)), decoupled_weight_decay_(decoupled) {
  const AdamOptions& o = defaults_;
  XTEN_CHECK(o.lr() >= 0 && o.eps() >= 0 && o.weight_decay() >= 0, ValueError, "Adam",
             "lr, eps and weight_decay must be non-negative, but got {}, {}, {}", o.lr(), o.eps(),
             o.weight_decay());
  XTEN_CHECK(
      o.betas().first >= 0 && o.betas().first < 1 && o.betas().second >= 0 && o.betas().second < 1,
      ValueError, "Adam", "betas must be in [0, 1), but got ({}, {})", o.betas().first,
      o.betas().second);
}

void Adam::update(const Tensor* found_inf) {
  NoGradGuard no_grad;
  if (skip_on_host(groups_, found_inf, takes_loop<AdamOptions>)) return;
  const Tensor increment = step_increment(found_inf);
  for (ParamGroup& group : groups_) {
    const AdamOptions& o = group.options;
    const double b1 = o.betas().first, b2 = o.betas().second;
    const size_t gi = static_cast<size_t>(&group - groups_.data());
    bool looped = false;
    std::vector<Batch> batches;
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      if (o.foreach() && fusable(p)) {
        auto& s = state_of(p);
        const Tensor& t = increment_step(s, increment);
        for (const char* name : {"exp_avg", "exp_avg_sq"})
          if (!s[name].defined()) s[name] = zeros_like(p);
        if (o.amsgrad() && !s["max_exp_avg_sq"].defined()) s["max_exp_avg_sq"] = zeros_like(p);
        for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"}) {
          auto it = s.find(name);
          if (it != s.end()) in_layout_of(it->second, p);
        }
        Batch& batch = batch_for(batches, p.device(), false);
        batch.params.push_back(p);
        batch.grads.push_back(p.grad());
        batch.a.push_back(s["exp_avg"]);
        batch.b.push_back(s["exp_avg_sq"]);
        if (o.amsgrad()) batch.c.push_back(s["max_exp_avg_sq"]);
        batch.steps.push_back(t);
        continue;
      }
      looped = true;
      Tensor g = update_grad(p, o.maximize(), decoupled_weight_decay_ ? 0 : o.weight_decay());
      if (decoupled_weight_decay_ && o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
      auto& s = state_of(p);
      const double t = next_step(s);
      Tensor& m = s["exp_avg"];
      Tensor& v = s["exp_avg_sq"];
      if (!m.defined()) {
        m = zeros_like(p);
        v = zeros_like(p);
      }
      m.mul_(b1).add_(g, 1 - b1);
      v.mul_(b2).add_(g * g, 1 - b2);
      Tensor denom_src = v;
      if (o.amsgrad()) {
        Tensor& vmax = s["max_exp_avg_sq"];
        vmax = vmax.defined() ? maximum(vmax, v) : v.clone();
        denom_src = vmax;
      }
      const double bias1 = 1 - std::pow(b1, t), bias2 = 1 - std::pow(b2, t);
      const Tensor denom = sqrt(denom_src) / std::sqrt(bias2) + o.eps();
      p.sub_(m / denom, o.lr() / bias1);
    }
    guard_options(&groups_, gi, looped, [](const AdamOptions& o) {
      return std::vector<double>{o.betas().first,  o.betas().second,  o.eps(),
                                 o.weight_decay(), o.amsgrad() * 1.0, o.maximize() * 1.0};
    });
    for (Batch& b : batches) {
      bind_lr(&groups_, gi, "xten::_fused_adam_");
      _fused_adam_(b.params, b.grads, b.a, b.b, b.c, stack(b.steps), o.lr(), b1, b2,
                   o.weight_decay(), o.eps(), o.amsgrad(), o.maximize(), decoupled_weight_decay_,
                   flag_on(found_inf, b.device));
    }
  }
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : OptimizerOf(std::move(params), std::move(options)) {
  const RMSpropOptions& o = defaults_;
  XTEN_CHECK(
      o.lr() >= 0 && o.eps() >= 0 && o.alpha() >= 0 && o.momentum() >= 0 && o.weight_decay() >= 0,
      ValueError, "RMSprop", "lr, eps, alpha, momentum and weight_decay must be non-negative");
}

void RMSprop::update(const Tensor* found_inf) {
  NoGradGuard no_grad;
  if (skip_on_host(groups_, found_inf, takes_loop<RMSpropOptions>)) return;
  const Tensor increment = step_increment(found_inf);
  for (ParamGroup& group : groups_) {
    const RMSpropOptions& o = group.options;
    const size_t gi = static_cast<size_t>(&group - groups_.data());
    bool looped = false;
    std::vector<Batch> batches;
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      if (o.foreach() && fusable(p)) {
        auto& s = state_of(p);
        increment_step(s, increment);
        if (!s["square_avg"].defined()) s["square_avg"] = zeros_like(p);
        if (o.centered() && !s["grad_avg"].defined()) s["grad_avg"] = zeros_like(p);
        if (o.momentum() > 0 && !s["momentum_buffer"].defined())
          s["momentum_buffer"] = zeros_like(p);
        for (const char* name : {"square_avg", "grad_avg", "momentum_buffer"}) {
          auto it = s.find(name);
          if (it != s.end()) in_layout_of(it->second, p);
        }
        Batch& batch = batch_for(batches, p.device(), false);
        batch.params.push_back(p);
        batch.grads.push_back(p.grad());
        batch.a.push_back(s["square_avg"]);
        if (o.centered()) batch.b.push_back(s["grad_avg"]);
        if (o.momentum() > 0) batch.c.push_back(s["momentum_buffer"]);
        continue;
      }
      looped = true;
      Tensor g = update_grad(p, o.maximize(), o.weight_decay());
      auto& s = state_of(p);
      next_step(s);
      Tensor& sq = s["square_avg"];
      if (!sq.defined()) sq = zeros_like(p);
      sq.mul_(o.alpha()).add_(g * g, 1 - o.alpha());
      Tensor avg;
      if (o.centered()) {
        Tensor& ga = s["grad_avg"];
        if (!ga.defined()) ga = zeros_like(p);
        ga.mul_(o.alpha()).add_(g, 1 - o.alpha());
        avg = sqrt(sq - ga * ga) + o.eps();
      } else {
        avg = sqrt(sq) + o.eps();
      }
      if (o.momentum() > 0) {
        Tensor& buf = s["momentum_buffer"];
        if (!buf.defined()) buf = zeros_like(p);
        buf.mul_(o.momentum()).add_(g / avg);
        p.sub_(buf, o.lr());
      } else {
        p.sub_(g / avg, o.lr());
      }
    }
    guard_options(&groups_, gi, looped, [](const RMSpropOptions& o) {
      return std::vector<double>{o.alpha(),          o.eps(),
                                 o.weight_decay(),   o.momentum(),
                                 o.centered() * 1.0, o.maximize() * 1.0};
    });
    for (const Batch& b : batches) {
      bind_lr(&groups_, gi, "xten::_fused_rmsprop_");
      _fused_rmsprop_(b.params, b.grads, b.a, b.b, b.c, o.lr(), o.alpha(), o.eps(),
                      o.weight_decay(), o.momentum(), o.centered(), o.maximize(),
                      flag_on(found_inf, b.device));
    }
  }
}

}  // namespace xten::optim
