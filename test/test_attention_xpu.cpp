// scaled_dot_product_attention on the XPU (spirv/attention.cl): the flash kernels against the
// CPU's in every dtype on shapes that span several work-groups and local tiles, with masks,
// causal and grouped heads, forward and backward; gradcheck in float64 on the device; multinomial
// from the device's generator (docs/attention.md).
#include "test_util.h"
#include "xpu_test_env.h"

#include <xten/autograd/gradcheck.h>
#include <xten/kernels/xpu/runtime/xpu.h>
#include <xten/profiler/profiler.h>

using namespace xten;
using namespace xten::testing;
namespace prof = xten::profiler;

namespace {

const bool kEnv = set_xpu_test_env("1G");
const Device kXpu("xpu");

Tensor dev(const std::vector<Tensor>& x, size_t i) {
  return x[i].to(kXpu);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return (a.to("cpu").to(kDouble) - b.to("cpu").to(kDouble)).abs().max().item<double>();
}

// The documented tolerance of the XPU kernel against the CPU's (docs/attention.md): both
// accumulate in opmath, in different orders.
double tolerance(ScalarType t) {
  return t == kDouble ? 1e-10 : t == kFloat ? 1e-4 : t == kBFloat16 ? 5e-2 : 1e-2;
}

}  // namespace

// Head sizes 40 and 24 (values) take the scalar kernels; 64 and 32 the vector ones (Note
// [Attention rows in vector registers]), which have no float64 form.
TEST(AttentionXpu, FlashKernelsMatchTheCpu) {
  ASSERT_TRUE(kEnv);
  manual_seed(1);
  for (const auto& [e, ev] : {std::pair<int64_t, int64_t>{40, 24}, {64, 32}})
    for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
      if (t == kDouble && e == 64) continue;
      for (int form = 0; form < 4; ++form) {  // plain, causal, bool mask, additive mask
        SCOPED_TRACE(std::string(to_string(t)) + " form " + std::to_string(form) + " head " +
                     std::to_string(e));
        // 300 queries and 270 keys: two work-groups of each.
        const Tensor q = randn({2, 4, 300, e}).to(t), k = randn({2, 2, 270, e}).to(t),
                     v = randn({2, 2, 270, ev}).to(t), g = randn({2, 4, 300, ev}).to(t);
        std::optional<Tensor> m;
        if (form == 2) m = rand({2, 1, 300, 270}) > 0.4;
        if (form == 3) m = randn({300, 270}).to(t);
        const bool causal = form == 1;
        auto [o, lse] = _scaled_dot_product_flash_attention(q, k, v, m, causal, 0.2);
        std::optional<Tensor> mx;
        if (m) mx = m->to(kXpu);
        auto [ox, lsex] = _scaled_dot_product_flash_attention(q.to(kXpu), k.to(kXpu), v.to(kXpu),
                                                              mx, causal, 0.2);
        EXPECT_EQ(ox.device().type(), kXPU);
        EXPECT_LT(max_abs_diff(ox, o), tolerance(t));
        EXPECT_LT(max_abs_diff(lsex, lse), tolerance(t));
        auto [dq, dk, dv] =
            _scaled_dot_product_flash_attention_backward(g, q, k, v, o, lse, m, causal, 0.2);
        auto [dqx, dkx, dvx] = _scaled_dot_product_flash_attention_backward(
            g.to(kXpu), q.to(kXpu), k.to(kXpu), v.to(kXpu), ox, lsex, mx, causal, 0.2);
        const double scale = t == kFloat || t == kDouble ? 1 : 4;  // gradients sum 300 terms
        EXPECT_LT(max_abs_diff(dqx, dq), scale * tolerance(t));
        EXPECT_LT(max_abs_diff(dkx, dk), scale * tolerance(t));
        EXPECT_LT(max_abs_diff(dvx, dv), scale * tolerance(t));
      }
    }
}

// The usual head sizes run the vector kernels, the others the scalar ones.
TEST(AttentionXpu, HeadSizesChooseTheirKernels) {
  auto kernels = [](int64_t e) {
    const Tensor q = randn({1, 2, 20, e}).to(kXpu).requires_grad_();
    (void)scaled_dot_product_attention(q, q, q).sum().backward();  // builds the kernels
    prof::Profiler p;
    p.start();
    scaled_dot_product_attention(q, q, q).sum().backward();
    xpu::synchronize();
    p.stop();
    std::string names;
    for (const auto& d : p.device_events())
      if (d.kind == "kernel" && d.name.rfind("attention_", 0) == 0) names += d.name + " ";
    return names;
  };
  EXPECT_EQ(kernels(32),
            "attention_forward_vec_f32 attention_backward_q_vec_f32 "
            "attention_backward_kv_vec_f32 ");
  EXPECT_EQ(kernels(24),
            "attention_forward_f32 attention_backward_q_f32 attention_backward_kv_f32 ");
}

TEST(AttentionXpu, GradcheckOnTheDevice) {
  manual_seed(2);
  // gradcheck perturbs CPU inputs; the function moves them to the device, where the op runs.
  auto in = [](std::vector<int64_t> s) {
    return randn(s, TensorOptions(kDouble)).requires_grad_();
  };
  const Tensor mask = (rand({5, 6}) > 0.3).to(kXpu);
  // A boolean mask with every row attending to something, causal, and grouped heads.
  EXPECT_TRUE(autograd::gradcheck(
      [&](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(
                   dev(x, 0), dev(x, 1), dev(x, 2),
                   mask.logical_or(eye(5, 6, TensorOptions(kBool).device(kXpu))))
            .to("cpu");
      },
      {in({2, 5, 3}), in({2, 6, 3}), in({2, 6, 4})}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(dev(x, 0), dev(x, 1), dev(x, 2), std::nullopt, 0.0,
                                            true, 0.6)
            .to("cpu");
      },
      {in({1, 2, 6, 3}), in({1, 2, 4, 3}), in({1, 2, 4, 3})}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const std::vector<Tensor>& x) {
        return scaled_dot_product_attention(dev(x, 0), dev(x, 1), dev(x, 2), std::nullopt, 0.0,
                                            false, std::nullopt, true)
            .to("cpu");
      },
      {in({1, 4, 3, 3}), in({1, 2, 5, 3}), in({1, 2, 5, 3})}));
}

TEST(AttentionXpu, BadInputsFailAsOnTheCpu) {
  const Tensor q = randn({1, 2, 5, 4}).to(kXpu), k = randn({1, 2, 6, 4}).to(kXpu);
  EXPECT_THROW_MSG(
      _scaled_dot_product_flash_attention(q, k, k, ones({3, 6}, kBool, kXpu), false, 1.0),
      ValueError, "attn_mask (3, 6) does not broadcast");
  EXPECT_THROW_MSG(_scaled_dot_product_flash_attention(q, k.to("cpu"), k, std::nullopt, false, 1.0),
                   Error, "_scaled_dot_product_flash_attention");
  EXPECT_THROW_MSG(_scaled_dot_product_flash_attention(
                       randn({1, 1, 2, 1100}).to(kXpu), randn({1, 1, 2, 1100}).to(kXpu),
                       randn({1, 1, 2, 1100}).to(kXpu), std::nullopt, false, 1.0),
                   NotImplementedError, "the XPU kernel takes head sizes up to 1024");
}

TEST(MultinomialXpu, DrawsOnTheDeviceFollowTheWeights) {
  manual_seed(3);
  const Tensor w = tensor(std::vector<float>{1, 0, 3, 6}).to(kXpu);
  for (bool replacement : {true, false}) {
    const Tensor s = w.unsqueeze(0).expand({20000, 4}).contiguous().multinomial(1, replacement);
    EXPECT_EQ(s.device().type(), kXPU);
    const Tensor counts = one_hot(s.reshape({-1}).to("cpu"), 4).sum({0}).to(kDouble) / 20000;
    EXPECT_NEAR(value_at(counts, {0}), 0.1, 0.01);
    EXPECT_EQ(value_at(counts, {1}), 0.0);
    EXPECT_NEAR(value_at(counts, {3}), 0.6, 0.015);
  }
  const Tensor many = multinomial(w, 30000, true).to("cpu");
  EXPECT_NEAR((many == 3).to(kDouble).mean().item<double>(), 0.6, 0.015);
  EXPECT_THROW_MSG(multinomial(zeros({2, 3}).to(kXpu), 1), ValueError,
                   "a row of weights sums to 0");
}
