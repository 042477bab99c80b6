// optim: each optimizer's update against the formula worked step by step in double on scalars
// (torch.optim's documented algorithm), parameter groups, zero_grad, state dicts, errors, and
// training a small network with nn + optim.
#include <cmath>

#include "multi_tensor_checks.h"
#include "test_util.h"

#include <xten/amp/grad_scaler.h>
#include <xten/nn/modules.h>
#include <xten/optim/lr_scheduler.h>
#include <xten/optim/optimizer.h>

using namespace xten;
using namespace xten::testing;

namespace {

// Runs `steps` updates of the loss sum(p^3) / 3 (gradient p^2) from p0 and returns p's values.
template <class Opt>
std::vector<double> run(Opt& opt, Tensor& p, int steps) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    (p * p * p / 3).sum().backward();
    opt.step();
  }
  Tensor c = p.detach().to(kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

const std::vector<double> kStart{1.0, -0.5, 2.0};

void expect_values(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
}

}  // namespace

TEST(Optim, SGDMatchesTheFormula) {
  for (bool nesterov : {false, true}) {
    for (bool maximize : {false, true}) {
      Tensor p = tensor(kStart, kDouble).requires_grad_();
      optim::SGD opt(
          {p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(nesterov).maximize(
                   maximize));
      std::vector<double> want;
      for (double x : kStart) {
        double buf = 0;
        for (int t = 0; t < 4; ++t) {
          double g = x * x;
          if (maximize) g = -g;
          g += 0.01 * x;
          buf = t == 0 ? g : 0.9 * buf + g;
          x -= 0.1 * (nesterov ? g + 0.9 * buf : buf);
        }
        want.push_back(x);
      }
      SCOPED_TRACE(nesterov ? "nesterov" : "plain");
      expect_values(run(opt, p, 4), want);
    }
  }
  // dampening
  Tensor p = tensor(kStart, kDouble).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.05).momentum(0.5).dampening(0.3));
  std::vector<double> want;
  for (double x : kStart) {
    double buf = 0;
    for (int t = 0; t < 3; ++t) {
      const double g = x * x;
      buf = t == 0 ? g : 0.5 * buf + 0.7 * g;
      x -= 0.05 * buf;
    }
    want.push_back(x);
  }
  expect_values(run(opt, p, 3), want);
}

TEST(Optim, AdamAdamWAndAmsgradMatchTheFormula) {
  for (int variant = 0; variant < 3; ++variant) {  // Adam, AdamW, Adam amsgrad
    Tensor p = tensor(kStart, kDouble).requires_grad_();
    const double lr = 0.01, b1 = 0.8, b2 = 0.9, eps = 1e-6, wd = 0.1;
    auto o = optim::AdamOptions(lr).betas({b1, b2}).eps(eps).weight_decay(wd).amsgrad(variant == 2);
    std::unique_ptr<optim::Adam> opt =
        variant == 1 ? std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, o)
                     : std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
    std::vector<double> want;
    for (double x : kStart) {
      double m = 0, v = 0, vmax = 0;
      for (int t = 1; t <= 5; ++t) {
        double g = x * x;
        if (variant == 1) {
          x *= 1 - lr * wd;
        } else {
          g += wd * x;
        }
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        vmax = std::max(vmax, v);
        const double denom =
            std::sqrt(variant == 2 ? vmax : v) / std::sqrt(1 - std::pow(b2, t)) + eps;
        x -= lr / (1 - std::pow(b1, t)) * m / denom;
      }
      want.push_back(x);
    }
    SCOPED_TRACE(variant);
    expect_values(run(*opt, p, 5), want);
  }
}

TEST(Optim, RMSpropMatchesTheFormula) {
  for (bool centered : {false, true}) {
    Tensor p = tensor(kStart, kDouble).requires_grad_();
    optim::RMSprop opt(
        {p},
        optim::RMSpropOptions(0.01).alpha(0.9).momentum(0.5).centered(centered).weight_decay(0.05));
    std::vector<double> want;
    for (double x : kStart) {
      double s = 0, a = 0, buf = 0;
      for (int t = 0; t < 4; ++t) {
        const double g = x * x + 0.05 * x;
        s = 0.9 * s + 0.1 * g * g;
        a = 0.9 * a + 0.1 * g;
        const double avg = std::sqrt(centered ? s - a * a : s) + 1e-8;
        buf = 0.5 * buf + g / avg;
        x -= 0.01 * buf;
      }
      want.push_back(x);
    }
    SCOPED_TRACE(centered);
    expect_values(run(opt, p, 4), want);
  }
}

TEST(Optim, GroupsZeroGradAndStateDict) {
  Tensor a = tensor({1.0, 2.0}, kDouble).requires_grad_();
  Tensor b = tensor({3.0}, kDouble).requires_grad_();
  optim::SGD opt({a}, optim::SGDOptions(0.1).momentum(0.9));
  opt.add_param_group({b}, optim::SGDOptions(0.5));
  EXPECT_EQ(opt.num_param_groups(), 2u);
  EXPECT_EQ(opt.lr(1), 0.5);
  (a.sum() + b.sum()).backward();
  opt.step();
  EXPECT_NEAR(b.item<double>(), 3.0 - 0.5, 1e-15);
  EXPECT_NEAR(a.select(0, 0).item<double>(), 1.0 - 0.1, 1e-15);
  opt.zero_grad(false);
  EXPECT_EQ(a.grad().sum().item<double>(), 0);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());

  // Saving after 2 steps and loading into a fresh optimizer continues exactly.
  auto train = [](Tensor& p, optim::Optimizer& o, int steps) {
    for (int i = 0; i < steps; ++i) {
      o.zero_grad();
      (p * p).sum().backward();
      o.step();
    }
  };
  Tensor p1 = tensor({1.0, -2.0}, kDouble).requires_grad_();
  optim::Adam full({p1}, optim::AdamOptions(0.1));
  train(p1, full, 4);
  Tensor p2 = tensor({1.0, -2.0}, kDouble).requires_grad_();
  optim::Adam first({p2}, optim::AdamOptions(0.1));
  train(p2, first, 2);
  const nn::NamedTensors saved = first.state_dict();
  std::vector<std::string> keys;
  for (auto& [k, t] : saved) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq", "state.0.step",
                                            "param_groups.0.lr"}));
  optim::Adam second({p2}, optim::AdamOptions(0.5));
  second.load_state_dict(saved);
  EXPECT_EQ(second.lr(0), 0.1);
  train(p2, second, 2);
  EXPECT_TRUE(allclose(p2, p1, 0, 0));
  nn::NamedTensors bad = saved;
  bad[0].first = "state.7.exp_avg";
  EXPECT_THROW_MSG(second.load_state_dict(bad), ValueError, "names parameter 7");
  bad = saved;
  bad[0].second = zeros({3}, kDouble);
  EXPECT_THROW_MSG(second.load_state_dict(bad), ValueError, "has shape (3)");
  bad = saved;
  bad.emplace_back("momentum", zeros({}));
  EXPECT_THROW_MSG(second.load_state_dict(bad), ValueError, "unexpected key 'momentum'");
}

TEST(Optim, Errors) {
  Tensor p = ones({2}).requires_grad_();
  EXPECT_THROW_MSG(optim::SGD({p}, optim::SGDOptions(-1)), ValueError, "must be non-negative");
  EXPECT_THROW_MSG(optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)), ValueError,
                   "Nesterov momentum requires a momentum");
  EXPECT_THROW_MSG(optim::Adam({p}, optim::AdamOptions(0.1).betas({1.0, 0.9})), ValueError,
                   "betas must be in [0, 1)");
  Tensor not_leaf = p * 2;
  EXPECT_THROW_MSG(optim::SGD({not_leaf}, optim::SGDOptions(0.1)), ValueError,
                   "can only optimize defined leaf tensors");
}

TEST(Optim, TrainsASmallNetwork) {
  manual_seed(7);
  nn::Sequential model(nn::Linear(2, 16), nn::Tanh(), nn::Linear(16, 2));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  nn::CrossEntropyLoss loss_fn;
  Tensor x = randn({64, 2});
  Tensor y = (x.select(1, 0) * x.select(1, 1) > 0).to(kLong);  // XOR-like quadrants
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = loss_fn(model(x), y);
    loss.backward();
    opt.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5) << first << " -> " << last;
}

namespace {

// The lr after each of `epochs` steps (the first value is the one set at construction).
std::vector<double> lrs(optim::LRScheduler& s, optim::Optimizer& o, int epochs) {
  std::vector<double> r{o.lr(0)};
  for (int e = 0; e < epochs; ++e) {
    s.step();
    r.push_back(o.lr(0));
    EXPECT_EQ(s.get_last_lr()[0], o.lr(0));
  }
  return r;
}

void expect_lrs(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "epoch " << i;
}

}  // namespace

TEST(LRScheduler, ClosedFormsLikePyTorch) {
  const double pi = std::acos(-1.0);
  auto fresh = [] { return optim::SGD({ones({1}).requires_grad_()}, optim::SGDOptions(0.1)); };
  {
    optim::SGD o = fresh();
    optim::StepLR s(o, 2, 0.5);
    expect_lrs(lrs(s, o, 5), {0.1, 0.1, 0.05, 0.05, 0.025, 0.025});
  }
  {
    optim::SGD o = fresh();
    optim::MultiStepLR s(o, {1, 3}, 0.1);
    expect_lrs(lrs(s, o, 4), {0.1, 0.01, 0.01, 0.001, 0.001});
  }
  {
    optim::SGD o = fresh();
    optim::ExponentialLR s(o, 0.9);
    expect_lrs(lrs(s, o, 3), {0.1, 0.09, 0.081, 0.0729});
  }
  {
    optim::SGD o = fresh();
    optim::CosineAnnealingLR s(o, 4, 0.01);
    std::vector<double> want;
    for (int e = 0; e <= 4; ++e) want.push_back(0.01 + 0.09 * (1 + std::cos(pi * e / 4)) / 2);
    expect_lrs(lrs(s, o, 4), want);
  }
  {
    optim::SGD o = fresh();
    optim::LinearLR s(o, 0.5, 1.0, 2);
    expect_lrs(lrs(s, o, 3), {0.05, 0.075, 0.1, 0.1});
  }
  {
    optim::SGD o = fresh();
    optim::OneCycleLR s(o, optim::OneCycleLROptions(1.0, 10));
    const std::vector<double> got = lrs(s, o, 9);
    EXPECT_NEAR(got[0], 0.04, 1e-12);             // max_lr / div_factor
    EXPECT_NEAR(got[2], 1.0, 1e-12);              // the peak at pct_start * total - 1 = 2
    EXPECT_NEAR(got[1], 0.04 + 0.96 / 2, 1e-12);  // half way up, by cosine
    EXPECT_NEAR(got[9], 0.04 / 1e4, 1e-12);       // the floor at the last step
    s.step();  // step total_steps is still allowed, as in PyTorch; the next one is not
    EXPECT_THROW_MSG(s.step(), ValueError, "Tried to step 11 times");
  }
  {
    optim::SGD o = fresh();
    auto warm = std::make_shared<optim::LinearLR>(o, 0.5, 1.0, 2);
    auto decay = std::make_shared<optim::ExponentialLR>(o, 0.9);
    optim::SequentialLR s(o, {warm, decay}, {2});
    expect_lrs(lrs(s, o, 4), {0.05, 0.075, 0.1, 0.09, 0.081});
    // state dict: a new schedule resumes where the saved one was
    const nn::NamedTensors saved = s.state_dict();
    optim::SGD o2 = fresh();
    auto warm2 = std::make_shared<optim::LinearLR>(o2, 0.5, 1.0, 2);
    auto decay2 = std::make_shared<optim::ExponentialLR>(o2, 0.9);
    optim::SequentialLR s2(o2, {warm2, decay2}, {2});
    s2.load_state_dict(saved);
    EXPECT_NEAR(o2.lr(0), 0.081, 1e-12);
    s2.step();
    EXPECT_NEAR(o2.lr(0), 0.0729, 1e-12);
  }
  {
    optim::SGD o = fresh();
    optim::StepLR s(o, 1, 0.5);
    s.step();
    s.step();
    optim::SGD o2 = fresh();
    optim::StepLR s2(o2, 1, 0.5);
    s2.load_state_dict(s.state_dict());
    EXPECT_EQ(s2.last_epoch(), 2);
    EXPECT_NEAR(o2.lr(0), 0.025, 1e-12);
  }
  optim::SGD o = fresh();
  EXPECT_THROW_MSG(optim::StepLR(o, 0), ValueError, "step_size must be positive");
  EXPECT_THROW_MSG(optim::OneCycleLR(o, optim::OneCycleLROptions(1, 10).cycle_momentum(true)),
                   NotImplementedError, "momentum cycling is not implemented");
}

TEST(Optim, MultiTensorStepsMatchThePerTensorLoopOnTheCpu) {
  // float32 and float64 to rounding; float16 and bfloat16 within their precision (the loop
  // rounds g*g and m/denom to the dtype as tensors, the fused step keeps them in float).
  check_fused_optimizers(Device("cpu"), {kFloat, kDouble}, 1e-6);
  check_fused_optimizers(Device("cpu"), {kHalf, kBFloat16}, 2e-2);
  check_fused_step_errors(Device("cpu"));
}

TEST(GradScaler, FlaggedStepsChangeNothingAndTheScaleUpdatesOnItsDevice) {
  check_skipped_steps(Device("cpu"));
  check_amp_update_scale(Device("cpu"));
  // A step count of 0 (a skipped first step) with a clear flag: the CPU kernel refuses it.
  const Tensor p = ones({4}), g = ones({4}), m = zeros({4}), v = zeros({4});
  EXPECT_THROW_MSG(_fused_adam_({p}, {g}, {m}, {v}, {}, zeros({1}, kDouble), 1e-3, 0.9, 0.999, 0,
                                1e-8, false, false, false, zeros({1})),
                   ValueError,
                   "[_fused_adam_] state_steps[0] is 0 and the step is not skipped (found_inf is "
                   "0): steps count from 1");
}

// Note [Rows to threads]: on a team, the CPU's multi-tensor steps cut each large matrix at the
// team's owned_rows and deal the other tensors' chunks to the threads with the least work. The
// partition must not change a value: SGD, Adam and the unscale over a mix of cut and dealt
// tensors equal the plain chunked loop's bit for bit (three threads: uneven rows).
TEST(Optim, MultiTensorStepsCutByOwnedRowsEqualPlainChunks) {
  const int saved = get_num_threads();
  set_num_threads(3);
  manual_seed(9);
  const std::vector<std::vector<int64_t>> shapes{{100, 300}, {7, 5000}, {300}, {5, 10}, {2, 9000}};
  std::vector<Tensor> init, grads;
  for (const auto& s : shapes) {
    init.push_back(randn(s));
    grads.push_back(randn(s));
  }
  auto copies = [](const std::vector<Tensor>& v) {
    std::vector<Tensor> out;
    for (const Tensor& t : v) out.push_back(t.clone());
    return out;
  };
  auto zeros_like_all = [&] {
    std::vector<Tensor> out;
    for (const Tensor& t : init) out.push_back(zeros_like(t));
    return out;
  };
  auto run = [&](bool by_rows) {
    set_owned_rows(by_rows);
    std::vector<Tensor> p = copies(init), g = copies(grads), buf = zeros_like_all();
    std::vector<Tensor> q = copies(init), m = zeros_like_all(), v = zeros_like_all();
    Tensor steps = zeros({static_cast<int64_t>(shapes.size())}, kDouble);
    for (int step = 0; step < 3; ++step) {
      _fused_sgd_(p, g, buf, 1e-4, 0.9, 0.1, 0, true, false, step == 0);
      steps.add_(1);
      _fused_adam_(q, g, m, v, {}, steps, 1e-3, 0.9, 0.999, 1e-2, 1e-8, false, false, true);
    }
    const Tensor found = zeros({1});
    _amp_foreach_non_finite_check_and_unscale_(g, found, full({1}, 0.25f));
    set_owned_rows(true);
    std::vector<Tensor> all = p;
    for (auto* list : {&buf, &q, &m, &v, &g}) all.insert(all.end(), list->begin(), list->end());
    return all;
  };
  const std::vector<Tensor> by_rows = run(true), plain = run(false);
  ASSERT_EQ(by_rows.size(), plain.size());
  for (size_t i = 0; i < by_rows.size(); ++i)
    EXPECT_TRUE(same_values(by_rows[i], plain[i]))
        << "tensor " << i << " of shape " << by_rows[i].sizes();
  set_num_threads(saved);
}

TEST(GradScaler, FusedUnscaleAndCheckOnTheCpu) {
  check_amp_unscale(Device("cpu"), {kFloat, kHalf, kBFloat16, kDouble});
}

TEST(GradScaler, SkipsNonFiniteStepsAndAdaptsTheScale) {
  Tensor p = tensor({1.0f, 2.0f}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024).growth_interval(2));
  EXPECT_EQ(scaler.get_scale(), 1024);
  // a finite step: gradients unscaled exactly (powers of two), the step taken
  Tensor loss = (p * p).sum();
  Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.item<float>(), 1024 * 5);
  scaled.backward();
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(allclose(p.grad(), tensor({2.0f, 4.0f}), 0, 0));
  EXPECT_TRUE(allclose(p, tensor({0.8f, 1.6f}), 1e-7, 0));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024);  // one good step of two
  // an inf in a gradient: the step is skipped and the scale halves
  opt.zero_grad();
  scaler.scale((p * p).sum()).backward();
  p.grad().select(0, 1).fill_(std::numeric_limits<float>::infinity());
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_TRUE(allclose(p, tensor({0.8f, 1.6f}), 1e-7, 0));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512);
  // two good steps in a row: the scale doubles
  for (int i = 0; i < 2; ++i) {
    opt.zero_grad();
    scaler.scale((p * p).sum()).backward();
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
  }
  EXPECT_EQ(scaler.get_scale(), 1024);
  // NaN counts as not finite too
  opt.zero_grad();
  scaler.scale((p * p).sum()).backward();
  p.grad().select(0, 0).fill_(std::nan(""));
  scaler.unscale_(opt);
  EXPECT_THROW_MSG(scaler.unscale_(opt), ValueError,
                   "unscale_() has already been called on this optimizer since the last update()");
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 512);
  // state dict round trip
  amp::GradScaler other;
  other.load_state_dict(scaler.state_dict());
  EXPECT_EQ(other.get_scale(), 512);
  // disabled: a plain step, scale 1
  amp::GradScaler off(amp::GradScalerOptions().enabled(false));
  Tensor l = (p * p).sum();
  EXPECT_TRUE(off.scale(l).is_same(l));
  EXPECT_EQ(off.get_scale(), 1.0);
  // PyTorch's rules: a disabled scaler saves nothing and ignores what it is given; an enabled
  // one refuses an empty state.
  EXPECT_TRUE(off.state_dict().empty());
  off.load_state_dict(scaler.state_dict());
  EXPECT_EQ(off.get_scale(), 1.0);
  EXPECT_THROW_MSG(other.load_state_dict(off.state_dict()), ValueError,
                   "the source state dict is empty, possibly because it was saved from a disabled");
  EXPECT_THROW_MSG(amp::GradScaler(amp::GradScalerOptions().backoff_factor(2)), ValueError,
                   "0 < backoff_factor < 1");
}
