// Autocast on CPU (autocast/): state and guards, every op of the CPU lists against the op run on
// manually cast inputs, ops in no list, eligibility, the cast cache, threads.
#include <set>
#include <thread>

#include "autocast_loop.h"
#include "test_util.h"

using namespace xten;
using namespace xten::testing;
using autocast::AutocastGuard;
using autocast::CastPolicy;

namespace {

TEST(AutocastState, DefaultsGuardsNestingAndErrors) {
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  EXPECT_FALSE(autocast::is_autocast_enabled(kXPU));
  EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
  EXPECT_EQ(autocast::get_autocast_dtype(kXPU), kHalf);
  {
    AutocastGuard outer(kCPU);
    EXPECT_TRUE(autocast::is_autocast_enabled(kCPU));
    EXPECT_FALSE(autocast::is_autocast_enabled(kXPU));
    {
      AutocastGuard inner(kCPU, kHalf);
      EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kHalf);
      {
        AutocastGuard off(kCPU, std::nullopt, /*enabled=*/false);
        EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
        EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kHalf);
        EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kFloat);  // disabled: input dtypes
      }
      EXPECT_TRUE(autocast::is_autocast_enabled(kCPU));
      EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kHalf);
    }
    EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kBFloat16);
  }
  EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
  EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kFloat);
  autocast::set_autocast_enabled(kCPU, true);
  EXPECT_TRUE(autocast::is_autocast_enabled(kCPU));
  autocast::set_autocast_enabled(kCPU, false);
  EXPECT_THROW_MSG(autocast::set_autocast_dtype(kCPU, kFloat), ValueError,
                   "[autocast] the autocast dtype must be float16 or bfloat16, but got Float");
  EXPECT_THROW_MSG(AutocastGuard(kXPU, kDouble), ValueError, "but got Double");
  EXPECT_EQ(autocast::get_autocast_dtype(kXPU), kHalf);  // a refused guard changes nothing
  EXPECT_FALSE(autocast::is_autocast_enabled(kXPU));
}

TEST(AutocastState, IsThreadLocal) {
  AutocastGuard amp(kCPU, kHalf);
  std::thread([] {
    EXPECT_FALSE(autocast::is_autocast_enabled(kCPU));
    EXPECT_EQ(autocast::get_autocast_dtype(kCPU), kBFloat16);
    EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kFloat);
  }).join();
  EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kHalf);
}

// One call of an op: its floating inputs (float32 unless the case says otherwise) and how to
// call it on them. The test runs it under autocast and on inputs cast by hand.
struct Case {
  std::string op;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> call;
};

std::vector<Case> cpu_cases() {
  manual_seed(0);
  auto r = [](std::vector<int64_t> s, ScalarType t = kFloat) { return randn(s).to(t); };
  const Tensor cls = randint(0, 4, {3});
  const Tensor probs = rand({3, 4});
  using V = const std::vector<Tensor>&;
  return {
      {"conv1d",
       {r({2, 3, 8}), r({4, 3, 3}), r({4})},
       [](V v) { return conv1d(v[0], v[1], v[2], {1}, {1}); }},
      {"conv1d.padding",
       {r({2, 3, 8}), r({4, 3, 3})},
       [](V v) { return conv1d(v[0], v[1], std::nullopt, {1}, "same"); }},
      {"conv2d",
       {r({1, 2, 5, 5}), r({3, 2, 3, 3}), r({3})},
       [](V v) {
         return conv2d(v[0], v[1], v[2], {2, 1}, {1, 0});
       }},
      {"conv2d.padding",
       {r({1, 2, 5, 5}), r({3, 2, 3, 3})},
       [](V v) {
         return conv2d(v[0], v[1], std::nullopt, {1, 1}, "same");
       }},
      {"conv_transpose2d",
       {r({1, 2, 4, 4}), r({2, 3, 3, 3}), r({3})},
       [](V v) {
         return conv_transpose2d(v[0], v[1], v[2], {2, 2});
       }},
      {"bmm", {r({2, 3, 4}), r({2, 4, 5})}, [](V v) { return bmm(v[0], v[1]); }},
      {"mm", {r({3, 4}), r({4, 5})}, [](V v) { return mm(v[0], v[1]); }},
      {"baddbmm",
       {r({2, 3, 5}), r({2, 3, 4}), r({2, 4, 5})},
       [](V v) { return baddbmm(v[0], v[1], v[2], 0.5, 2); }},
      {"addmm", {r({5}), r({3, 4}), r({4, 5})}, [](V v) { return addmm(v[0], v[1], v[2]); }},
      {"linear", {r({3, 4}), r({6, 4}), r({6})}, [](V v) { return linear(v[0], v[1], v[2]); }},
      {"_linear_relu",
       {r({3, 4}), r({6, 4}), r({6})},
       [](V v) { return _linear_relu(v[0], v[1], v[2]); }},
      {"matmul", {r({2, 3, 4}), r({4})}, [](V v) { return matmul(v[0], v[1]); }},
      {"prelu", {r({2, 3, 4}), r({3})}, [](V v) { return prelu(v[0], v[1]); }},
      {"scaled_dot_product_attention",
       {r({2, 3, 4}), r({2, 5, 4}), r({2, 5, 4})},
       [](V v) { return scaled_dot_product_attention(v[0], v[1], v[2]); }},
      // fp32: inputs in bfloat16 so that the cast shows
      {"binary_cross_entropy",
       {rand({6}).to(kBFloat16), rand({6}).to(kBFloat16)},
       [](V v) { return binary_cross_entropy(v[0], v[1]); }},
      {"prod.dim_IntList", {r({3, 4}, kBFloat16)}, [](V v) { return prod(v[0], 1); }},
      {"pad",
       {r({1, 2, 4, 4}, kBFloat16)},
       [](V v) {
         return pad(v[0], {1, 1, 2, 0}, "reflect");
       }},
      {"mse_loss",
       {r({5}, kBFloat16), r({5}, kBFloat16)},
       [](V v) { return mse_loss(v[0], v[1]); }},
      {"nll_loss", {r({3, 4}, kBFloat16)}, [cls](V v) { return nll_loss(v[0], cls); }},
      {"smooth_l1_loss",
       {r({5}, kBFloat16), r({5}, kBFloat16)},
       [](V v) { return smooth_l1_loss(v[0], v[1], "sum", 0.5); }},
      {"cross_entropy", {r({3, 4}, kBFloat16)}, [cls](V v) { return cross_entropy(v[0], cls); }},
      {"l1_loss", {r({5}, kBFloat16), r({5}, kBFloat16)}, [](V v) { return l1_loss(v[0], v[1]); }},
      {"huber_loss",
       {r({5}, kBFloat16), r({5}, kBFloat16)},
       [](V v) { return huber_loss(v[0], v[1], "none"); }},
      {"kl_div",
       {r({3, 4}, kBFloat16), probs.to(kBFloat16)},
       [](V v) { return kl_div(v[0], v[1], "batchmean"); }},
      {"binary_cross_entropy_with_logits",
       {r({6}, kBFloat16), rand({6}).to(kBFloat16), r({6}, kBFloat16)},
       [](V v) { return binary_cross_entropy_with_logits(v[0], v[1], std::nullopt, v[2]); }},
      // promote: mixed inputs run in the widest
      {"stack", {r({3}, kBFloat16), r({3}), r({3}, kHalf)}, [](V v) { return stack(v); }},
      {"cat", {r({2}, kBFloat16), r({3}, kBFloat16)}, [](V v) { return cat(v); }},
  };
}

std::vector<Tensor> cast_by_policy(const std::vector<Tensor>& in, CastPolicy p, ScalarType lowp) {
  ScalarType widest = lowp;
  for (const Tensor& t : in) widest = promote_types(widest, t.dtype());
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    const ScalarType to = p == CastPolicy::kLowerPrecisionFp ? lowp
                          : p == CastPolicy::kFp32           ? kFloat
                                                             : widest;
    out.push_back(t.to(to));
  }
  return out;
}

TEST(AutocastCpu, EveryListedOpMatchesTheOpOnInputsCastByHand) {
  const auto cases = cpu_cases();
  std::set<std::string> covered;
  for (const Case& c : cases) {
    const auto policy = autocast::policy_of(kCPU, c.op);
    ASSERT_TRUE(policy.has_value()) << c.op << " is in no CPU list";
    covered.insert(c.op);
    for (ScalarType lowp : {kBFloat16, kHalf}) {
      Tensor actual;
      {
        AutocastGuard amp(kCPU, lowp);
        actual = c.call(c.inputs);
      }
      const Tensor expected = c.call(cast_by_policy(c.inputs, *policy, lowp));
      const ScalarType want = *policy == CastPolicy::kLowerPrecisionFp ? lowp
                              : *policy == CastPolicy::kFp32           ? kFloat
                                                                       : expected.dtype();
      EXPECT_EQ(actual.dtype(), want) << c.op;
      EXPECT_TRUE(same_bytes(actual, expected))
          << c.op << " (" << autocast::to_string(*policy) << ", " << to_string(lowp) << ")";
    }
  }
  // The test covers the whole CPU list.
  for (const auto& [op, p] : autocast::policies(kCPU))
    EXPECT_TRUE(covered.count(op)) << op << " untested";
}

TEST(AutocastCpu, PromoteRunsInTheWidestFloatingType) {
  AutocastGuard amp(kCPU);
  EXPECT_EQ(cat({ones({2}, kBFloat16), ones({2}, kBFloat16)}).dtype(), kBFloat16);
  EXPECT_EQ(cat({ones({2}, kBFloat16), ones({2}, kFloat)}).dtype(), kFloat);
  EXPECT_EQ(stack({ones({2}, kBFloat16), ones({2}, kHalf)}).dtype(), kFloat);
  EXPECT_EQ(cat({ones({2}, kFloat), ones({2}, kDouble)}).dtype(), kDouble);  // float64: not cast
  EXPECT_EQ(cat({ones({2}, kInt), ones({2}, kInt)}).dtype(), kInt);
}

TEST(AutocastCpu, OpsInNoListRunInTheirInputDtypes) {
  AutocastGuard amp(kCPU);
  const Tensor f = randn({3, 4}), b = randn({3, 4}).to(kBFloat16);
  EXPECT_EQ(exp(f).dtype(), kFloat);  // fp32 on XPU, in no CPU list
  EXPECT_EQ(exp(b).dtype(), kBFloat16);
  EXPECT_EQ((f + f).dtype(), kFloat);
  EXPECT_EQ(relu(b).dtype(), kBFloat16);
  EXPECT_EQ(softmax(b, 1).dtype(), kBFloat16);
  EXPECT_EQ(sum(b).dtype(), kBFloat16);
  EXPECT_EQ(pad(b, {1, 1}).dtype(), kBFloat16);  // constant padding is in no list
  EXPECT_EQ(pad(b, {1, 1}, "replicate").dtype(), kFloat);
  EXPECT_EQ(std::get<0>(adaptive_max_pool2d(b.view({1, 3, 4}), {2, 2})).dtype(), kBFloat16);
}

TEST(AutocastCpu, OnlyFloatingTensorsOfTheScopesDeviceAreCast) {
  AutocastGuard amp(kCPU);
  const Tensor d = randn({3, 3}, kDouble);
  EXPECT_EQ(mm(d, d).dtype(), kDouble);  // float64 is never cast
  const Tensor i = randint(0, 5, {3, 3});
  EXPECT_EQ(mm(i, i).dtype(), kLong);  // integers are not either
  // Mixed: the float32 operand is cast, the float64 one is not, and the op sees the mix.
  EXPECT_THROW(mm(randn({3, 3}), d), Error);
  // Integer targets of a loss stay integers (nll_loss would reject anything else).
  EXPECT_EQ(nll_loss(log_softmax(randn({3, 4}), 1), randint(0, 4, {3})).dtype(), kFloat);
}

TEST(AutocastCpu, CastCacheReusesParameterCastsWithinTheOutermostScope) {
  const Tensor x = randn({4, 8});
  Tensor w = randn({8, 8});
  w.set_requires_grad(true);
  EXPECT_EQ(autocast::cache_size(), 0u);
  {
    AutocastGuard amp(kCPU);
    const Tensor a = mm(x, w);
    EXPECT_EQ(autocast::cache_size(), 1u);  // w's bfloat16 copy; x requires no grad
    {
      AutocastGuard inner(kCPU);
      const Tensor b = mm(x, w);
      EXPECT_EQ(autocast::cache_size(), 1u);  // reused
      EXPECT_TRUE(same_bytes(a, b));
    }
    EXPECT_EQ(autocast::cache_size(), 1u);  // an inner scope's end keeps it
  }
  EXPECT_EQ(autocast::cache_size(), 0u);  // the outermost's end clears it
  {
    AutocastGuard amp(kCPU);
    mm(x, randn({8, 8}));  // no grad: not cached
    EXPECT_EQ(autocast::cache_size(), 0u);
  }
}

}  // namespace

// Note [Cast cache]: a loop of optimizer steps inside one autocast scope computes what a loop with
// a scope per step computes (the cached bfloat16 weight is made again after each step), and a
// second backward through a cast reused from an earlier iteration works.
TEST(AutocastCpu, CastCacheFollowsOptimizerSteps) {
  expect_one_scope_computes_a_scope_per_step(Device("cpu"), kBFloat16, /*scaled=*/false);
}
