// Autograd on the XPU: every op of the op database gives the CPU's gradients (float32, the
// parity suite's tolerances), a graph that crosses devices, and training trajectories that
// follow the CPU's.
#include "autograd_training.h"
#include "grad_edges.h"
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

// The fused backward ops' XPU kernels against the CPU's, in every floating dtype, in training
// and evaluation, with and without weight, on shapes whose rows span several work-item strides.
TEST(FusedBackwardXpu, KernelsMatchTheCpu) {
  for (const char* op : {"_softmax_backward_data", "_log_softmax_backward_data",
                         "batch_norm_backward", "layer_norm_backward"}) {
    const std::string table = dump_dispatch_table(std::string("xten::") + op);
    EXPECT_NE(table.find("  XPU          kernel from"), std::string::npos) << table;
  }
  manual_seed(6);
  const Device xpu("xpu");
  auto same = [](const Tensor& on_xpu, const Tensor& cpu, double tol) {
    EXPECT_EQ(on_xpu.device().type(), kXPU);
    EXPECT_EQ(on_xpu.dtype(), cpu.dtype());
    return allclose(on_xpu.to("cpu"), cpu, tol, tol);
  };
  for (ScalarType dt : {kFloat, kDouble, kHalf, kBFloat16}) {
    SCOPED_TRACE(to_string(dt));
    const double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-4 : 2e-2;
    const Tensor x = randn({3, 5, 7, 90}).to(dt), g = randn({3, 5, 7, 90}).to(dt);
    const Tensor xx = x.to(xpu), gx = g.to(xpu);
    for (int64_t dim : {1, 3}) {
      const Tensor y = softmax(x, dim), ly = log_softmax(x, dim);
      EXPECT_TRUE(same(_softmax_backward_data(gx, y.to(xpu), dim, dt),
                       _softmax_backward_data(g, y, dim, dt), tol));
      EXPECT_TRUE(same(_log_softmax_backward_data(gx, ly.to(xpu), dim, dt),
                       _log_softmax_backward_data(g, ly, dim, dt), tol));
    }
    const Tensor w = randn({5}), rm = randn({5}), rv = rand({5}) + 0.5;
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const auto wc = affine ? std::optional<Tensor>(w) : std::nullopt;
        const auto wx = affine ? std::optional<Tensor>(w.to(xpu)) : std::nullopt;
        Tensor c[3], d[3];
        std::tie(c[0], c[1], c[2]) = batch_norm_backward(g, x, wc, rm, rv, training);
        std::tie(d[0], d[1], d[2]) =
            batch_norm_backward(gx, xx, wx, rm.to(xpu), rv.to(xpu), training);
        for (int i = 0; i < 3; ++i)
          EXPECT_TRUE(same(d[i], c[i], tol * (i ? 10 : 1))) << training << affine << i;
      }
    }
    for (bool affine : {true, false}) {
      const Tensor lw = randn({7, 90}).to(dt);
      const auto wc = affine ? std::optional<Tensor>(lw) : std::nullopt;
      const auto wx = affine ? std::optional<Tensor>(lw.to(xpu)) : std::nullopt;
      Tensor c[3], d[3];
      std::tie(c[0], c[1], c[2]) = layer_norm_backward(g, x, {7, 90}, wc);
      std::tie(d[0], d[1], d[2]) = layer_norm_backward(gx, xx, {7, 90}, wx);
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(same(d[i], c[i], tol * (i ? 10 : 1))) << affine << i;
    }
  }
  // Empty batches: no launch, zero weight and bias gradients.
  Tensor d[3];
  std::tie(d[0], d[1], d[2]) = layer_norm_backward(zeros({0, 4}, kFloat, xpu),
                                                   zeros({0, 4}, kFloat, xpu), {4}, std::nullopt);
  EXPECT_EQ(d[0].numel(), 0);
  EXPECT_EQ(d[1].to("cpu").abs().sum().item<float>(), 0);
}

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

// The CPU's reference gradients at the edges, on the XPU (test/grad_edges.h).
TEST(AutogradXpu, GradientsAtTheEdgesMatchPyTorch) {
  testing::grad_edges::check_all(Device("xpu"));
}

}  // namespace
}  // namespace xten
