#pragma once
// Checks of the multi-tensor ops (docs/optim.md, "One kernel for many tensors") that run on
// every device: test_optim.cpp calls them on the CPU, test_nn_xpu.cpp on the XPU.
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <xten/optim/optimizer.h>
#include <xten/xten.h>

#include "test_util.h"

namespace xten::testing {

inline std::string describe_diff(const Tensor& got, const Tensor& want, const Tensor& orig) {
  if (got.numel() == 0 || got.sizes() != want.sizes()) return "";
  const Tensor bad = logical_not(eq(got, want)).to(kLong);
  const int64_t n = bad.sum().item<int64_t>();
  if (n == 0) return "";
  const int64_t i = bad.argmax().item<int64_t>();
  return fmt::format("{} differ, first at {}: got {} want {} orig {}", n, i,
                     got.select(0, i).item<double>(), want.select(0, i).item<double>(),
                     orig.select(0, i).item<double>());
}

// Same shape, dtype and values (no NaN among them).
inline bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         (a.numel() == 0 || eq(a, b).all().item<bool>());
}

// _amp_foreach_non_finite_check_and_unscale_ on `device` over tensors of `dtypes`, sizes that
// cross both backends' chunk sizes (4,096 on the XPU, 65,536 on the CPU): every value equals
// the value times inv_scale rounded once to its dtype; found_inf rises only for inf or NaN,
// wherever they are, and is never cleared; every tensor's version is bumped.
inline void check_amp_unscale(Device device, const std::vector<ScalarType>& dtypes) {
  manual_seed(3);
  const float inv = 1.0f / 64;
  const std::vector<int64_t> sizes = {0, 1, 1000, 4097, 70000};
  std::vector<Tensor> list, before;
  for (ScalarType t : dtypes)
    for (int64_t n : sizes) {
      list.push_back((randn({n}) * 100).to(device, t));
      before.push_back(list.back().to("cpu").clone());  // on the CPU, to() is no copy
    }
  std::vector<uint32_t> versions;
  for (const Tensor& t : list) versions.push_back(t._version());
  const Tensor found = zeros({1}, kFloat, device), inv_t = full({1}, inv, TensorOptions(kFloat, device));
  _amp_foreach_non_finite_check_and_unscale_(list, found, inv_t);
  EXPECT_EQ(found.item<float>(), 0.f);
  for (size_t i = 0; i < list.size(); ++i) {
    const ScalarType t = list[i].dtype();
    const ScalarType m = t == kDouble ? kDouble : kFloat;
    const Tensor want = (before[i].to(m) * inv).to(t);
    const Tensor got = list[i].to("cpu");
    EXPECT_TRUE(same_values(got, want)) << to_string(t) << " " << list[i].numel() << " " << describe_diff(got, want, before[i]);
    EXPECT_GT(list[i]._version(), versions[i]) << "written: version bumped";
  }
  // One inf in the second XPU chunk of a tensor, one NaN at the end of another dtype's.
  Tensor a = list[3], b = list.back();
  a.narrow(0, 4096, 1).fill_(std::numeric_limits<float>::infinity());
  b.narrow(0, b.numel() - 1, 1).fill_(std::numeric_limits<float>::quiet_NaN());
  const Tensor a0 = a.to("cpu").clone();
  _amp_foreach_non_finite_check_and_unscale_({a}, found, inv_t);
  EXPECT_EQ(found.item<float>(), 1.f) << "an inf";
  EXPECT_TRUE(same_values(a.to("cpu").narrow(0, 0, 10), (a0.narrow(0, 0, 10).to(kFloat) * inv).to(a.dtype())))
      << "still unscaled";
  const Tensor found2 = zeros({1}, kFloat, device);
  _amp_foreach_non_finite_check_and_unscale_({list[1], b}, found2, inv_t);
  EXPECT_EQ(found2.item<float>(), 1.f) << "a NaN";
  _amp_foreach_non_finite_check_and_unscale_({list[1]}, found2, inv_t);
  EXPECT_EQ(found2.item<float>(), 1.f) << "never cleared by the op";
  _amp_foreach_non_finite_check_and_unscale_({}, found2, inv_t);  // nothing to do

  // Bad input: the same errors on every device.
  const char* op = "[_amp_foreach_non_finite_check_and_unscale_]";
  const Tensor x = ones({4}, kFloat, device);
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x}, zeros({1}, kDouble, device),
                                                              inv_t),
                   ValueError, std::string(op) + " found_inf must be a one-element float32 tensor");
  EXPECT_THROW_MSG(
      _amp_foreach_non_finite_check_and_unscale_({x}, found, ones({2}, kFloat, device)), ValueError,
      "inv_scale must be a one-element float32 tensor, got float32 of shape (2)");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, ones({2, 3}, kFloat, device).t()},
                                                              found, inv_t),
                   ValueError,
                   "self[1] is neither contiguous nor channels-last (sizes (3, 2), strides (1, 3))");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({ones({3}, kLong, device)}, found, inv_t),
                   NotImplementedError, "self[0] has dtype Long: only floating dtypes");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, x.narrow(0, 1, 2)}, found, inv_t),
                   ValueError, "two tensors of self share memory");
  EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x, Tensor()}, found, inv_t),
                   ValueError, "self[1] is an undefined tensor");
  if (device.type() != kCPU) {
    EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({ones({2})}, found, inv_t),
                     DeviceError, "self[0] is on cpu, expected " + x.device().str());
    EXPECT_THROW_MSG(_amp_foreach_non_finite_check_and_unscale_({x}, found, inv_t.to("cpu")),
                     DeviceError, "found_inf is on " + x.device().str() + " and inv_scale on cpu");
  }
}

// The largest |a - b| / (1 + |b|) over all elements, in double.
inline double max_rel_diff(const Tensor& a, const Tensor& b) {
  const Tensor x = a.to("cpu").to(kDouble), y = b.to("cpu").to(kDouble);
  return x.numel() == 0 ? 0.0 : ((x - y).abs() / (y.abs() + 1)).max().item<double>();
}

// The multi-tensor steps (foreach, the default) against the per-tensor loop (foreach(false))
// on `device`: the same parameters (sizes across both backends' chunks, every dtype of
// `dtypes`, one non-contiguous parameter that takes the per-tensor loop, one without a
// gradient on odd steps), the same gradients, five steps; parameters and every state tensor
// agree within `tol` (relative to 1 + |value|) after each step.
template <class MakeOpt>
void check_foreach_matches_per_tensor(Device device, const std::vector<ScalarType>& dtypes,
                                      double tol, MakeOpt make_opt, const std::string& what) {
  manual_seed(5);
  std::vector<Tensor> init;
  for (ScalarType t : dtypes)
    for (int64_t n : {1, 300, 4097, 70000}) init.push_back(randn({n}).to(device, t));
  // A channels-last weight with channels-last gradients: multi-tensor too (memory order), its
  // state made channels-last.
  const size_t cl = init.size();
  init.push_back(randn({4, 3, 5, 5}).to(device).contiguous(MemoryFormat::ChannelsLast));
  init.push_back(randn({6, 5}).to(device).t());  // non-contiguous: the per-tensor loop
  auto params_like = [&] {
    std::vector<Tensor> ps;
    for (const Tensor& t : init) ps.push_back(t.clone().requires_grad_());
    ps[cl] = init[cl].clone().contiguous(MemoryFormat::ChannelsLast).requires_grad_();
    Tensor strided = empty({6, 5}, TensorOptions(init.back().dtype(), device)).t();
    strided.copy_(init.back());
    ps.back() = strided.requires_grad_();
    return ps;
  };
  std::vector<Tensor> fused = params_like(), loop = params_like();
  ASSERT_FALSE(fused.back().is_contiguous());
  ASSERT_TRUE(!fused[cl].is_contiguous() &&
              fused[cl].is_contiguous(MemoryFormat::ChannelsLast));
  auto opt_f = make_opt(fused, true), opt_l = make_opt(loop, false);
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < init.size(); ++i) {
      const bool skip = i == 1 && step % 2 == 1;  // no gradient this step
      Tensor g = skip ? Tensor() : (randn(init[i].sizes()) * 0.1).to(device, init[i].dtype());
      if (i == cl) g = g.contiguous(MemoryFormat::ChannelsLast);
      fused[i].grad() = g.defined() ? g.clone() : Tensor();
      loop[i].grad() = g.defined() ? g.clone() : Tensor();
    }
    opt_f.step();
    opt_l.step();
    for (size_t i = 0; i < init.size(); ++i)
      ASSERT_LE(max_rel_diff(fused[i].detach(), loop[i].detach()), tol)
          << what << " step " << step << " param " << i << " " << to_string(init[i].dtype());
    const auto sf = opt_f.state_dict(), sl = opt_l.state_dict();
    ASSERT_EQ(sf.size(), sl.size()) << what;
    for (size_t k = 0; k < sf.size(); ++k) {
      ASSERT_EQ(sf[k].first, sl[k].first);
      ASSERT_LE(max_rel_diff(sf[k].second, sl[k].second), tol) << what << " " << sf[k].first;
    }
  }
}

// SGD over `dtypes`; Adam, Adam with amsgrad, AdamW and RMSprop over the same without float16:
// its second moment (1e-3 g^2) falls below float16's range, to 0 or one subnormal step depending on the
// order of roundings (the loop rounds g^2 to float16 first, the fused step does not), and a
// zero moment against one step changes the update by orders of magnitude, so the two paths are
// not comparable element by element there (bfloat16 has float32's range).
inline void check_fused_optimizers(Device device, const std::vector<ScalarType>& dtypes,
                                   double tol) {
  std::vector<ScalarType> adam_dtypes;
  for (ScalarType t : dtypes)
    if (t != kHalf) adam_dtypes.push_back(t);
  using optim::AdamOptions;
  using optim::SGDOptions;
  for (const auto& [name, o] : std::vector<std::pair<std::string, SGDOptions>>{
           {"sgd", SGDOptions(0.1)},
           {"sgd momentum", SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-2)},
           {"sgd nesterov maximize", SGDOptions(0.05).momentum(0.8).nesterov(true).maximize(true)}})
    check_foreach_matches_per_tensor(
        device, dtypes, tol,
        [o = o](std::vector<Tensor> ps, bool f) {
          return optim::SGD(std::move(ps), SGDOptions(o).foreach(f));
        },
        name);
  for (const auto& [name, o] : std::vector<std::pair<std::string, AdamOptions>>{
           {"adam", AdamOptions(1e-2)},
           {"adam wd amsgrad maximize",
            AdamOptions(1e-2).weight_decay(0.1).amsgrad(true).maximize(true)}}) {
    check_foreach_matches_per_tensor(
        device, adam_dtypes, tol,
        [o = o](std::vector<Tensor> ps, bool f) {
          return optim::Adam(std::move(ps), AdamOptions(o).foreach(f));
        },
        name);
    check_foreach_matches_per_tensor(
        device, adam_dtypes, tol,
        [o = o](std::vector<Tensor> ps, bool f) {
          return optim::AdamW(std::move(ps), AdamOptions(o).weight_decay(0.05).foreach(f));
        },
        "adamw " + name);
  }
  // RMSprop in float32 and float64 only: its step divides g by sqrt(E[g^2]) (up to 1 /
  // sqrt(1 - alpha) = 10 times g's relative error) and its first step is lr / sqrt(1 - alpha)
  // times the sign of g + weight_decay p, so bfloat16's rounding differences between the two
  // orders of operations grow past any tolerance tied to its precision.
  std::vector<ScalarType> wide_dtypes;
  for (ScalarType t : adam_dtypes)
    if (t != kBFloat16) wide_dtypes.push_back(t);
  using optim::RMSpropOptions;
  for (const auto& [name, o, ts] :
       std::vector<std::tuple<std::string, RMSpropOptions, std::vector<ScalarType>>>{
           {"rmsprop", RMSpropOptions(1e-2), wide_dtypes},
           {"rmsprop momentum wd maximize",
            RMSpropOptions(1e-2).momentum(0.5).weight_decay(0.1).maximize(true), wide_dtypes},
           {"rmsprop centered momentum wd",
            RMSpropOptions(1e-2).centered(true).momentum(0.5).weight_decay(0.1), wide_dtypes}})
    if (!ts.empty())
      check_foreach_matches_per_tensor(
          device, ts, tol,
          [o = o](std::vector<Tensor> ps, bool f) {
            return optim::RMSprop(std::move(ps), RMSpropOptions(o).foreach(f));
          },
        name);
}

// GradScaler's flag in the optimizers (Optimizer::step_unless, docs/optim.md "GradScaler") on
// `device`: with flags 1, 0, 1, 0, 0 (a skipped first step) the parameters and state after each
// step that ran equal, bit for bit, a twin optimizer that only steps where the flag is 0: a set
// flag changes nothing (the multi-tensor kernels read it; the per-tensor loop and SGD's dampened
// first step read it on the host), SGD's momentum starts from the first step that ran, and
// Adam's and RMSprop's step counts do not advance on a skip.
inline void check_skipped_steps(Device device) {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  auto sgd = [](optim::SGDOptions o) {
    return Make([o](std::vector<Tensor> ps) { return std::make_unique<optim::SGD>(ps, o); });
  };
  using optim::AdamOptions;
  const std::vector<std::pair<std::string, Make>> makes = {
      {"sgd momentum", sgd(optim::SGDOptions(0.1).momentum(0.9))},
      {"sgd nesterov wd",
       sgd(optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01))},
      {"sgd dampening (host)", sgd(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1))},
      {"sgd per-tensor (host)", sgd(optim::SGDOptions(0.1).momentum(0.9).foreach (false))},
      {"adam", [](std::vector<Tensor> ps) { return std::make_unique<optim::Adam>(ps); }},
      {"adamw amsgrad",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::AdamW>(ps, AdamOptions(1e-2).amsgrad(true));
       }},
      {"rmsprop centered momentum",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::RMSprop>(
             ps, optim::RMSpropOptions(1e-2).centered(true).momentum(0.5));
       }},
  };
  for (const auto& [name, make] : makes) {
    manual_seed(9);
    std::vector<Tensor> a, b;
    for (const auto& [n, t] : std::vector<std::pair<int64_t, ScalarType>>{
             {300, kFloat}, {5000, kFloat}, {700, kBFloat16}}) {
      const Tensor init = randn({n}).to(device, t);
      a.push_back(init.clone().requires_grad_());
      b.push_back(init.clone().requires_grad_());
    }
    auto opt_a = make(a), opt_b = make(b);
    const std::vector<float> flags = {1, 0, 1, 0, 0};
    for (size_t step = 0; step < flags.size(); ++step) {
      for (size_t i = 0; i < a.size(); ++i) {
        const Tensor g = randn(a[i].sizes()).to(device, a[i].dtype());
        a[i].grad() = g.clone();
        b[i].grad() = g.clone();
      }
      opt_a->step_unless(full({1}, flags[step], TensorOptions(kFloat, device)));
      if (flags[step] == 0) opt_b->step();
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_TRUE(same_values(a[i].detach(), b[i].detach()))
            << name << ", step " << step << ", parameter " << i << ":\n"
            << describe_diff(a[i].detach(), b[i].detach(), b[i].detach());
      if (flags[step] != 0) continue;  // a skipped first step leaves state the twin lacks
      const auto sa = opt_a->state_dict(), sb = opt_b->state_dict();
      ASSERT_EQ(sa.size(), sb.size()) << name << ", step " << step;
      for (size_t k = 0; k < sa.size(); ++k) {
        EXPECT_EQ(sa[k].first, sb[k].first) << name;
        EXPECT_TRUE(same_values(sa[k].second.to("cpu"), sb[k].second.to("cpu")))
            << name << ", step " << step << ", " << sa[k].first;
      }
    }
  }
}

// _amp_update_scale_ on `device`: PyTorch's rule, and its argument checks.
inline void check_amp_update_scale(Device device) {
  const TensorOptions f(kFloat, device);
  const Tensor scale = full({1}, 8.0f, f), tracker = zeros({1}, TensorOptions(kInt, device));
  auto run = [&](float found) {
    _amp_update_scale_(scale, tracker, full({1}, found, f), 2.0, 0.25, 3);
    return std::pair<float, int>(scale.to("cpu").item<float>(), tracker.to("cpu").item<int>());
  };
  EXPECT_EQ(run(0), (std::pair<float, int>(8, 1)));
  EXPECT_EQ(run(0), (std::pair<float, int>(8, 2)));
  EXPECT_EQ(run(0), (std::pair<float, int>(16, 0)));  // the third good step in a row grows it
  EXPECT_EQ(run(0), (std::pair<float, int>(16, 1)));
  EXPECT_EQ(run(1), (std::pair<float, int>(4, 0)));  // a skip backs off and restarts the count
  EXPECT_EQ(run(2), (std::pair<float, int>(1, 0)));  // summed flags of several optimizers
  // A growth past float32's range is not taken (the count restarts all the same).
  const float big = 3e38f;
  const Tensor top = full({1}, big, f), t1 = full({1}, 0, TensorOptions(kInt, device));
  _amp_update_scale_(top, t1, zeros({1}, f), 2.0, 0.5, 1);
  EXPECT_EQ(top.to("cpu").item<float>(), big);
  EXPECT_EQ(t1.to("cpu").item<int>(), 0);
  EXPECT_THROW_MSG(_amp_update_scale_(scale, zeros({1}, TensorOptions(kLong, device)),
                                      zeros({1}, f), 2.0, 0.5, 3),
                   ValueError,
                   "[_amp_update_scale_] growth_tracker must be a one-element int32 tensor, got "
                   "int64 of shape (1)");
  EXPECT_THROW_MSG(_amp_update_scale_(scale, tracker, zeros({1}, f), 0.5, 0.5, 3), ValueError,
                   "expected scale_growth_factor > 1, 0 < scale_backoff_factor < 1 and "
                   "growth_interval > 0, got 0.5, 0.5 and 3");
  // The fused steps' flag: one float32 element on the parameters' device.
  const Tensor p = ones({4}, f), g = ones({4}, f);
  EXPECT_THROW_MSG(_fused_sgd_({p}, {g}, {}, 0, 0, 0.1, 0, false, false, false, zeros({2}, f)),
                   ValueError,
                   "[_fused_sgd_] found_inf must be a one-element float32 tensor, got float32 of "
                   "shape (2)");
  if (device.type() != kCPU)
    EXPECT_THROW_MSG(_fused_sgd_({p}, {g}, {}, 0, 0, 0.1, 0, false, false, false, zeros({1})),
                     DeviceError,
                     "[_fused_sgd_] found_inf is on cpu and the parameters on " + p.device().str());
}

// The fused steps' argument checks, the same on every device.
inline void check_fused_step_errors(Device device) {
  const TensorOptions f(kFloat, device);
  const Tensor p = ones({4}, f), g = ones({4}, f), m = zeros({4}, f), v = zeros({4}, f);
  const Tensor steps = ones({1}, kDouble);
  EXPECT_THROW_MSG(_fused_sgd_({p}, {}, {}, 0, 0, 0.1, 0, false, false, false), ValueError,
                   "[_fused_sgd_] grads has 0 tensors for 1 in self");
  EXPECT_THROW_MSG(_fused_sgd_({p}, {ones({4}, TensorOptions(kHalf, device))}, {}, 0, 0, 0.1, 0,
                               false, false, false),
                   ValueError, "grads[0] is Half of shape (4), self[0] Float of shape (4)");
  EXPECT_THROW_MSG(_fused_sgd_({p}, {g}, {}, 0, 0.9, 0.1, 0, false, false, false), ValueError,
                   "momentum_buffer_list has 0 tensors for 1 in self");
  EXPECT_THROW_MSG(_fused_adam_({p}, {g}, {m}, {v}, {}, steps.to(kFloat), 1e-3, 0.9, 0.999, 0,
                                1e-8, false, false, false),
                   ValueError, "[_fused_adam_] state_steps must be a 1-d float64 CPU tensor of 1 step counts");
  EXPECT_THROW_MSG(_fused_adam_({p}, {g}, {m}, {v}, {}, zeros({1}, kDouble), 1e-3, 0.9, 0.999, 0,
                                1e-8, false, false, false),
                   ValueError, "state_steps[0] is 0: steps count from 1");
  EXPECT_THROW_MSG(_fused_adam_({p}, {g}, {m}, {v}, {}, steps, 1e-3, 0.9, 0.999, 0, 1e-8,
                                /*amsgrad=*/true, false, false),
                   ValueError, "max_exp_avg_sqs has 0 tensors for 1 in self");
  EXPECT_THROW_MSG(_fused_adam_({p, p}, {g, g}, {m, m}, {v, v}, {}, ones({2}, kDouble), 1e-3, 0.9,
                                0.999, 0, 1e-8, false, false, false),
                   ValueError, "two tensors of self share memory");
  // Dense lists in different orders: the kernels walk memory, so they must agree.
  const Tensor w = ones({2, 3, 4, 4}, f).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_THROW_MSG(_fused_sgd_({w}, {ones({2, 3, 4, 4}, f)}, {}, 0, 0, 0.1, 0, false, false, false),
                   ValueError,
                   "[_fused_sgd_] grads[0] has strides (48, 16, 4, 1) and self[0] strides (48, 1, "
                   "12, 3): their elements must lie in the same order");
  if (device.type() != kCPU)
    EXPECT_THROW_MSG(_fused_sgd_({p}, {ones({4})}, {}, 0, 0, 0.1, 0, false, false, false),
                     DeviceError, "grads[0] is on cpu, self[0] on " + p.device().str());
}

}  // namespace xten::testing
