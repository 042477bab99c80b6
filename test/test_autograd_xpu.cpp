// Autograd on the XPU: every op of the op database gives the CPU's gradients (float32, the
// parity suite's tolerances), a graph that crosses devices, and training trajectories that
// follow the CPU's.
#include "autograd_training.h"
#include "op_db.h"
#include "test_util.h"
#include "xpu_test_env.h"

namespace xten {
namespace {

using testing::allclose;
using testing::op_db;
using testing::OpInfo;

const bool kEnv = testing::set_xpu_test_env("1G");

class XpuOpGrad : public ::testing::TestWithParam<OpInfo> {};

// The gradients of sum(fn(inputs) * v) for a fixed random v, on `device`.
std::vector<Tensor> grads_on(const OpInfo& op, Device device) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < op.shapes.size(); ++i)
    in.push_back(
        testing::sample(op.shapes[i], op.domain, kFloat, 1 + i).to(device).requires_grad_());
  Tensor out = op.fn(in);
  manual_seed(99);
  Tensor v = randn(out.sizes()).to(device);
  std::vector<Tensor> g = autograd::grad({(out * v).sum()}, in, {}, std::nullopt, false, true);
  for (size_t i = 0; i < g.size(); ++i)
    if (g[i].defined()) {
      EXPECT_EQ(g[i].device().type(), device.type()) << op.name << " input " << i;
      EXPECT_EQ(g[i].dtype(), kFloat) << op.name << " input " << i;
    }
  return g;
}

TEST_P(XpuOpGrad, MatchesTheCpu) {
  const OpInfo& op = GetParam();
  const std::vector<Tensor> cpu = grads_on(op, Device("cpu"));
  const std::vector<Tensor> xpu = grads_on(op, Device("xpu"));
  ASSERT_EQ(cpu.size(), xpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(cpu[i].defined(), xpu[i].defined()) << op.name << " input " << i;
    if (cpu[i].defined()) {
      EXPECT_TRUE(allclose(xpu[i], cpu[i], 1e-4, 1e-5)) << op.name << " input " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OpDb, XpuOpGrad, ::testing::ValuesIn(op_db()),
                         [](const auto& info) { return info.param.name; });

TEST(AutogradXpu, AGraphAcrossDevices) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();  // CPU leaf
  Tensor on_xpu = (a * 2).to("xpu");
  EXPECT_TRUE(on_xpu.requires_grad());
  Tensor back = (on_xpu.exp() * on_xpu).to("cpu").to(kDouble);
  back.sum().backward();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_cpu());
  EXPECT_EQ(a.grad().dtype(), kFloat);
  // d/da (2a e^{2a}) = 2 e^{2a} (1 + 2a)
  const Tensor expect = exp(a.detach() * 2) * (a.detach() * 2 + 1) * 2;
  EXPECT_TRUE(allclose(a.grad(), expect, 1e-5, 1e-5));
  // An XPU leaf gets an XPU gradient.
  Tensor w = ones({4}, TensorOptions().device(Device("xpu"))).requires_grad_();
  (w * w).sum().backward();
  EXPECT_TRUE(w.grad().is_xpu());
  EXPECT_TRUE(allclose(w.grad(), full({4}, 2.0)));
}

TEST(AutogradXpu, AutocastFloat16GradientsComeBackInFloat32) {
  Tensor w = randn({4, 3}).to("xpu").requires_grad_();
  Tensor x = randn({2, 3}).to("xpu");
  Tensor y;
  {
    autocast::AutocastGuard guard(DeviceType::XPU);
    y = linear(x, w);
  }
  EXPECT_EQ(y.dtype(), kHalf);
  y.to(kFloat).sum().backward();
  EXPECT_EQ(w.grad().dtype(), kFloat);
  EXPECT_TRUE(w.grad().is_xpu());
  EXPECT_TRUE(allclose(w.grad(), x.sum({0}).unsqueeze(0).expand({4, 3}), 4e-3, 4e-3));
}

TEST(AutogradXpu, MlpTrajectoryFollowsTheCpu) {
  std::vector<double> cpu, xpu;
  testing::train_mlp(Device("cpu"), 100, &cpu);
  testing::train_mlp(Device("xpu"), 100, &xpu);
  ASSERT_EQ(cpu.size(), xpu.size());
  for (size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(xpu[i], cpu[i], 1e-4 * std::max(1.0, std::abs(cpu[i]))) << "step " << i;
  EXPECT_LT(xpu.back(), 0.25 * xpu.front());
}

TEST(AutogradXpu, SmallCnnTrajectoryFollowsTheCpu) {
  std::vector<double> cpu, xpu;
  testing::train_small_cnn(Device("cpu"), 100, &cpu);
  testing::train_small_cnn(Device("xpu"), 100, &xpu);
  for (size_t i = 0; i < cpu.size(); ++i)
    ASSERT_NEAR(xpu[i], cpu[i], 1e-3 * std::max(1.0, std::abs(cpu[i]))) << "step " << i;
  EXPECT_LT(xpu.back(), 0.5 * xpu.front());
}

}  // namespace
}  // namespace xten
