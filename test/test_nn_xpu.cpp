// nn and optim on the XPU: a module moved with to("xpu") keeps its parameter handles, computes
// what the CPU computes, and every optimizer's steps on the XPU follow the CPU's.
#include "multi_tensor_checks.h"
#include "test_util.h"
#include "xpu_test_env.h"

#include <xten/amp/grad_scaler.h>
#include <xten/nn/modules.h>
#include <xten/nn/utils.h>
#include <xten/optim/optimizer.h>
#include <xten/serialize/serialize.h>

using namespace xten;
using namespace xten::testing;

namespace {

const bool kEnv = set_xpu_test_env("1G");

// No convolution bias before the batch norm (as ResNets): its gradient is zero up to rounding,
// which Adam and RMSprop would turn into full steps of either sign.
nn::Sequential make_model() {
  manual_seed(11);
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 4, 3).padding(1).bias(false)),
                        nn::BatchNorm2d(4), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                        nn::Linear(4 * 3 * 3, 5));
}

}  // namespace

TEST(NnXpu, ModuleToXpuKeepsHandlesAndMatchesTheCpu) {
  nn::Sequential cpu = make_model(), xpu = make_model();
  Tensor w = xpu->parameters()[0];
  xpu->to("xpu");
  EXPECT_EQ(w.device().type(), kXPU);  // the same handle, moved
  EXPECT_TRUE(w.requires_grad());
  for (const auto& t : xpu->state_dict()) EXPECT_EQ(t.second.device().type(), kXPU) << t.first;
  Tensor x = randn({3, 1, 6, 6});
  Tensor yc = cpu(x), yx = xpu(x.to("xpu"));
  EXPECT_TRUE(allclose(yx.to("cpu"), yc, 1e-4, 1e-5));
  // running statistics moved on the XPU as on the CPU
  auto bn_x = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>((*xpu)[1]);
  auto bn_c = std::dynamic_pointer_cast<nn::BatchNorm2dImpl>((*cpu)[1]);
  EXPECT_TRUE(allclose(bn_x->running_var.to("cpu"), bn_c->running_var, 1e-5, 1e-6));
  EXPECT_EQ(bn_x->num_batches_tracked.to("cpu").item<int64_t>(), 1);
  xpu->to("cpu");
  EXPECT_EQ(w.device().type(), kCPU);
}

TEST(NnXpu, OptimizersFollowTheCpu) {
  auto make = [](int which, const std::vector<Tensor>& ps) -> std::unique_ptr<optim::Optimizer> {
    switch (which) {
      case 0:
        return std::make_unique<optim::SGD>(ps,
                                            optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
      case 1:
        return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.01).amsgrad(true));
      case 2:
        return std::make_unique<optim::AdamW>(ps);
      default:
        return std::make_unique<optim::RMSprop>(
            ps, optim::RMSpropOptions(0.01).centered(true).momentum(0.5));
    }
  };
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(which);
    nn::Sequential cpu = make_model(), xpu = make_model();
    xpu->to("xpu");
    auto oc = make(which, cpu->parameters()), ox = make(which, xpu->parameters());
    nn::CrossEntropyLoss loss_fn;
    manual_seed(12);
    Tensor x = randn({4, 1, 6, 6}), y = tensor({0, 4, 2, 1});
    for (int step = 0; step < 3; ++step) {
      oc->zero_grad();
      ox->zero_grad();
      loss_fn(cpu(x), y).backward();
      loss_fn(xpu(x.to("xpu")), y.to("xpu")).backward();
      oc->step();
      ox->step();
    }
    auto pc = cpu->parameters(), px = xpu->parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_EQ(px[i].device().type(), kXPU);
      EXPECT_TRUE(allclose(px[i].to("cpu"), pc[i], 1e-3, 1e-4)) << i;
    }
  }
}

TEST(NnXpu, FusedUnscaleAndCheckOnTheXpu) {
  check_amp_unscale(Device("xpu"), {kFloat, kHalf, kBFloat16});
  // One launch per dtype, whatever the number of tensors (the profiler counts them).
  std::vector<Tensor> grads;
  for (ScalarType t : {kFloat, kHalf, kFloat, kBFloat16, kHalf, kFloat})
    grads.push_back(ones({5000}, TensorOptions(t, Device("xpu"))));
  const Tensor found = zeros({1}, kFloat, Device("xpu"));
  const Tensor inv = full({1}, 0.5, TensorOptions(kFloat, Device("xpu")));
  profiler::Profiler p(profiler::ProfilerOptions().activities({profiler::ProfilerActivity::XPU}));
  p.start();
  _amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
  p.stop();
  std::map<std::string, int> launches;
  for (const auto& d : p.device_events())
    if (d.kind == "kernel") ++launches[d.name];
  EXPECT_EQ(launches,
            (std::map<std::string, int>{
                {"amp_unscale_bf16", 1}, {"amp_unscale_f16", 1}, {"amp_unscale_f32", 1}}));
  for (const Tensor& g : grads) EXPECT_EQ(g.to("cpu").to(kDouble).sum().item<double>(), 2500.0);
}

TEST(NnXpu, MultiTensorStepsMatchThePerTensorLoopOnTheXpu) {
  check_fused_optimizers(Device("xpu"), {kFloat}, 1e-5);
  check_fused_optimizers(Device("xpu"), {kHalf, kBFloat16}, 2e-2);
  check_fused_step_errors(Device("xpu"));
  // One launch per dtype and step, whatever the number of parameters.
  std::vector<Tensor> ps;
  for (ScalarType t : {kFloat, kHalf, kFloat, kFloat, kHalf}) {
    ps.push_back(ones({3000}, TensorOptions(t, Device("xpu"))).requires_grad_());
    ps.back().grad() = ones_like(ps.back());
  }
  optim::SGD sgd(ps, optim::SGDOptions(0.5).momentum(0.9));
  optim::AdamW adamw(ps, optim::AdamOptions(1e-3));
  profiler::Profiler p(profiler::ProfilerOptions().activities({profiler::ProfilerActivity::XPU}));
  p.start();
  sgd.step();
  adamw.step();
  p.stop();
  std::map<std::string, int> launches;
  for (const auto& d : p.device_events())
    if (d.kind == "kernel") ++launches[d.name];
  EXPECT_EQ(launches, (std::map<std::string, int>{{"fused_adam_f16", 1},
                                                  {"fused_adam_f32", 1},
                                                  {"fused_sgd_f16", 1},
                                                  {"fused_sgd_f32", 1}}));
}

TEST(NnXpu, FlaggedStepsChangeNothingAndTheScaleUpdatesOnTheXpu) {
  check_skipped_steps(Device("xpu"));
  check_amp_update_scale(Device("xpu"));
}

TEST(NnXpu, GradScalerOnTheXpu) {
  Tensor p = tensor({1.0f, 2.0f}).to("xpu").requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(256));
  scaler.scale((p * p).sum()).backward();
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_TRUE(allclose(p.to("cpu"), tensor({0.8f, 1.6f}), 1e-7, 0));
  scaler.update();
  opt.zero_grad();
  scaler.scale((p * p).sum()).backward();
  p.grad().select(0, 0).fill_(std::numeric_limits<float>::infinity());
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 128);
  EXPECT_TRUE(allclose(p.to("cpu"), tensor({0.8f, 1.6f}), 1e-7, 0));
}

TEST(NnXpu, CheckpointsKeepTheDevice) {
  const std::string path = ::testing::TempDir() + "xten_xpu.safetensors";
  const Tensor on_xpu = randn({3, 4}).to("xpu"), on_cpu = arange(5, kLong);
  save(NamedTensorList{{"x", on_xpu}, {"c", on_cpu}}, path);
  const NamedTensorList back = load(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].second.device().type(), kXPU);
  EXPECT_EQ(back[1].second.device().type(), kCPU);
  EXPECT_TRUE(same_bytes(back[0].second.to("cpu"), on_xpu.to("cpu")));
  EXPECT_TRUE(load_metadata(path).empty());  // the device entries are xten's own
  std::remove(path.c_str());
}

TEST(NnXpu, ATrainingCheckpointRoundTripsOnTheXpu) {
  const std::string path = ::testing::TempDir() + "xten_xpu_checkpoint.safetensors";
  manual_seed(13);
  Tensor x = randn({4, 1, 6, 6}).to("xpu"), y = tensor({0, 4, 2, 1}).to("xpu");
  nn::CrossEntropyLoss loss_fn;
  auto step = [&](nn::Sequential& m, optim::Adam& o) {
    o.zero_grad();
    loss_fn(m(x), y).backward();
    o.step();
  };
  nn::Sequential a = make_model(), b = make_model();
  a->to("xpu");
  b->to("xpu");
  optim::Adam oa(a->parameters(), optim::AdamOptions(0.01)),
      ob(b->parameters(), optim::AdamOptions(0.01));
  for (int i = 0; i < 4; ++i) step(a, oa);
  for (int i = 0; i < 2; ++i) step(b, ob);
  NamedTensorList all = b->state_dict();
  for (auto& e : with_prefix("optimizer.", ob.state_dict())) all.push_back(e);
  save(all, path);
  // a fresh model on the XPU takes the file's tensors, which come back on the XPU
  nn::Sequential c = make_model();
  c->to("xpu");
  optim::Adam oc(c->parameters(), optim::AdamOptions(0.01));
  const NamedTensorList back = load(path);
  NamedTensorList model_part;
  for (const auto& e : back) {
    if (e.first.find("optimizer.") != 0) model_part.push_back(e);
    if (e.first.find("exp_avg") != std::string::npos) {
      EXPECT_EQ(e.second.device().type(), kXPU);
    }
  }
  c->load_state_dict(model_part);
  oc.load_state_dict(under_prefix("optimizer.", back));
  for (int i = 0; i < 2; ++i) step(c, oc);
  const auto pa = a->parameters(), pc = c->parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(allclose(pc[i].to("cpu"), pa[i].to("cpu"), 0, 0)) << i;
  std::remove(path.c_str());
}

// Note [Faults] in docs/xpu_runtime.md: the device's memory cap (1 GiB here) reached in the
// middle of a network's forward gives OutOfMemoryError; the tensors made so far die with the
// call, the allocator's counters return to their earlier values, and the device still works.
TEST(NnXpu, OutOfMemoryInTheMiddleOfAForwardLeavesTheDeviceUsable) {
  const Device dev("xpu:1");
  nn::Sequential net = make_model();
  net->to(dev);
  // Per image: 4 x 6 x 6 floats after the convolution, as many after the norm and the ReLU.
  const Tensor big = randn({1'400'000, 1, 6, 6}, TensorOptions().device(dev));  // 201 MB
  xpu::synchronize(1);
  const auto before = xpu::memory_stats(1);
  const int64_t allocated = before.at("allocated_bytes.current");
  try {
    (void)net(big);
    ADD_FAILURE() << "the forward did not run out of memory";
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("out of memory"), std::string::npos) << what;
    EXPECT_NE(what.find("xpu:1"), std::string::npos) << what;
    // It ran out part way: the memory of the layers before was allocated.
    EXPECT_GT(xpu::max_memory_allocated(1), static_cast<uint64_t>(allocated) + (500u << 20));
  }
  xpu::synchronize(1);
  const auto after = xpu::memory_stats(1);
  EXPECT_EQ(after.at("allocated_bytes.current"), allocated);
  EXPECT_EQ(after.at("active_blocks.current"), before.at("active_blocks.current"));
  // Still usable: a small batch through the same network, as on the CPU.
  nn::Sequential cpu = make_model();
  const Tensor x = randn({2, 1, 6, 6});
  EXPECT_TRUE(allclose(net(x.to(dev)).to("cpu"), cpu(x), 1e-4, 1e-5));
  // And the CPU side never noticed.
  EXPECT_EQ((ones({4}) * 2).sum().item<float>(), 8.f);
}

// Gradient clipping with gradients on the XPU and the CPU: the per-device norms meet on the
// first gradient's device; each gradient is scaled where it lives.
TEST(NnXpu, ClipGradNormAcrossDevices) {
  Tensor a = ones({3}, TensorOptions().device("xpu")).requires_grad_(true);
  Tensor b = ones({4}).requires_grad_(true);
  a.grad() = full({3}, 3.0, TensorOptions().device("xpu"));
  b.grad() = full({4}, -4.0);
  const double total = std::sqrt(27.0 + 64.0);
  EXPECT_NEAR(nn::utils::clip_grad_norm_({a, b}, 2.0), total, 1e-5);
  const double scale = 2.0 / (total + 1e-6);
  EXPECT_EQ(a.grad().device().type(), kXPU);
  EXPECT_TRUE(allclose(a.grad().to("cpu"), full({3}, 3.0 * scale), 1e-6, 1e-7));
  EXPECT_TRUE(allclose(b.grad(), full({4}, -4.0 * scale), 1e-6, 1e-7));
  nn::utils::clip_grad_value_({a}, 0.1);
  EXPECT_TRUE(allclose(a.grad().to("cpu"), full({3}, 0.1), 1e-6, 1e-7));
}
