// Autocast on XPU: the XPU lists; the ops with XPU kernels under autocast against the same
// ops on hand-cast inputs; and each policy's casts observed by test kernels registered on the
// XPU key for composite ops (they record what reaches the backend).
#include "autocast_loop.h"
#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using namespace xten::testing;
using autocast::AutocastGuard;
using autocast::CastPolicy;

namespace {

const bool kEnv = set_xpu_test_env("1G");
const TensorOptions kXpu = TensorOptions().device(Device("xpu"));

// What the last test kernel saw.
std::vector<ScalarType> g_dtypes;
std::vector<const void*> g_ptrs;

bool allclose_cpu(const Tensor& a, const Tensor& b) {
  return (a.to(kCPU).to(kDouble) - b.to(kCPU).to(kDouble)).abs().max().item<double>() <= 1e-4;
}

// Registered on XPU for composite ops of the lists (which get no XPU kernel of their own),
// so that what reaches the backend can be seen.
struct RecordingKernels {
  Library lib{Library::Kind::Impl, "xten", DispatchKey::XPU, __FILE__, __LINE__};
  RecordingKernels() {
    lib.impl("prelu", [](const Tensor& a, const Tensor& b) {  // lower_precision_fp
      g_dtypes = {a.dtype(), b.dtype()};
      g_ptrs = {a.data_ptr(), b.data_ptr()};
      return a;
    });
    lib.impl("l1_loss", [](const Tensor& a, const Tensor& b, const std::string&) {  // fp32
      g_dtypes = {a.dtype(), b.dtype()};
      return a;
    });
    lib.impl("dot", [](const Tensor& a, const Tensor& b) {  // promote
      g_dtypes = {a.dtype(), b.dtype()};
      return a;
    });
  }
};

TEST(AutocastXpu, ListsFollowPyTorch) {
  const std::vector<std::pair<std::string, CastPolicy>> expected = {
      {"conv1d", CastPolicy::kLowerPrecisionFp},
      {"conv1d.padding", CastPolicy::kLowerPrecisionFp},
      {"conv2d", CastPolicy::kLowerPrecisionFp},
      {"conv2d.padding", CastPolicy::kLowerPrecisionFp},
      {"conv_transpose2d", CastPolicy::kLowerPrecisionFp},
      {"prelu", CastPolicy::kLowerPrecisionFp},
      {"addmm", CastPolicy::kLowerPrecisionFp},
      {"matmul", CastPolicy::kLowerPrecisionFp},
      {"mm", CastPolicy::kLowerPrecisionFp},
      {"mv", CastPolicy::kLowerPrecisionFp},
      {"linear", CastPolicy::kLowerPrecisionFp},
      {"_linear_relu", CastPolicy::kLowerPrecisionFp},  // xten's Linear -> ReLU, cast as linear
      {"baddbmm", CastPolicy::kLowerPrecisionFp},
      {"bmm", CastPolicy::kLowerPrecisionFp},
      {"scaled_dot_product_attention", CastPolicy::kLowerPrecisionFp},
      {"exp", CastPolicy::kFp32},
      {"expm1", CastPolicy::kFp32},
      {"log", CastPolicy::kFp32},
      {"log10", CastPolicy::kFp32},
      {"log2", CastPolicy::kFp32},
      {"log1p", CastPolicy::kFp32},
      {"reciprocal", CastPolicy::kFp32},
      {"rsqrt", CastPolicy::kFp32},
      {"tan", CastPolicy::kFp32},
      {"pow.Tensor_Tensor", CastPolicy::kFp32},
      {"softplus", CastPolicy::kFp32},
      {"layer_norm", CastPolicy::kFp32},
      {"group_norm", CastPolicy::kFp32},
      {"nll_loss", CastPolicy::kFp32},
      {"kl_div", CastPolicy::kFp32},
      {"l1_loss", CastPolicy::kFp32},
      {"smooth_l1_loss", CastPolicy::kFp32},
      {"huber_loss", CastPolicy::kFp32},
      {"mse_loss", CastPolicy::kFp32},
      {"binary_cross_entropy_with_logits", CastPolicy::kFp32},
      {"logsumexp", CastPolicy::kFp32},
      {"norm.ScalarOpt_dim", CastPolicy::kFp32},
      {"prod.dim_IntList", CastPolicy::kFp32SetOptDtype},
      {"softmax", CastPolicy::kFp32SetOptDtype},
      {"log_softmax", CastPolicy::kFp32SetOptDtype},
      {"cumprod", CastPolicy::kFp32SetOptDtype},
      {"cumsum", CastPolicy::kFp32SetOptDtype},
      {"sum.dim_IntList", CastPolicy::kFp32SetOptDtype},
      {"addcmul", CastPolicy::kPromote},
      {"atan2", CastPolicy::kPromote},
      {"dot", CastPolicy::kPromote},
      {"index_put_", CastPolicy::kPromote},
      {"scatter_add", CastPolicy::kPromote},
      {"binary_cross_entropy", CastPolicy::kBanned}};
  EXPECT_EQ(autocast::policies(kXPU), expected);
  EXPECT_FALSE(autocast::policy_of(kXPU, "add.Tensor").has_value());
  EXPECT_FALSE(autocast::policy_of(kXPU, "cat").has_value());  // promote on CPU only
}

TEST(AutocastXpu, EachPolicyCastsWhatReachesTheBackend) {
  RecordingKernels k;
  const Tensor a = randn({4, 4}, kXpu), b = randn({4, 4}, kXpu);
  {
    AutocastGuard amp(kXPU);  // float16 by default
    prelu(a, b);
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kHalf, kHalf}));
    EXPECT_EQ(mm(a, b).dtype(), kHalf);  // through the real XPU kernel
    l1_loss(a.to(kHalf), b.to(kHalf), "mean");
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kFloat, kFloat}));
    dot(a.to(kHalf), b);
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kFloat, kFloat}));
    dot(a.to(kHalf), b.to(kHalf));
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kHalf, kHalf}));
    // fp32_set_opt_dtype: no dtype given, so float32 is asked for; the caller's dtype wins.
    EXPECT_EQ(sum(a.to(kHalf)).dtype(), kFloat);
    EXPECT_EQ(sum(a.to(kHalf), {0}, false, kHalf).dtype(), kHalf);
    EXPECT_TRUE(allclose_cpu(sum(a.to(kHalf)), sum(a.to(kHalf).to(kCPU), kFloat)));
    prelu(a.to(kDouble), b.to(kDouble));  // float64 is never cast
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kDouble, kDouble}));
    // CPU tensors are outside an XPU scope.
    EXPECT_EQ(mm(ones({2, 2}), ones({2, 2})).dtype(), kFloat);
  }
  {
    AutocastGuard amp(kXPU, kBFloat16);
    prelu(a, b);
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kBFloat16, kBFloat16}));
  }
  {
    AutocastGuard amp(kCPU);  // XPU tensors are outside a CPU scope
    prelu(a, b);
    EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kFloat, kFloat}));
    EXPECT_EQ(mm(a, b).dtype(), kFloat);
  }
  prelu(a, b);  // no scope
  EXPECT_EQ(g_dtypes, (std::vector<ScalarType>{kFloat, kFloat}));
}

// The XPU list's ops that have real XPU kernels: under autocast they give exactly what the
// op gives on hand-cast inputs (lower_precision_fp: float16 in; fp32: float32 in;
// fp32_set_opt_dtype: float32 asked for).
TEST(AutocastXpu, RealKernelsMatchTheOpOnHandCastInputs) {
  using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
  struct Op {
    const char* name;
    std::vector<std::vector<int64_t>> shapes;
    ScalarType given, cast;  // inputs given in `given`; under autocast they reach it as `cast`
    Fn fn;
  };
  using V = const std::vector<Tensor>&;
  const std::vector<Op> ops = {
      {"conv2d",
       {{2, 3, 8, 8}, {4, 3, 3, 3}, {4}},
       kFloat,
       kHalf,
       [](V t) {
         return conv2d(t[0], t[1], t[2], {1, 1}, {1, 1});
       }},
      {"conv1d", {{2, 3, 8}, {4, 3, 3}}, kFloat, kHalf, [](V t) { return conv1d(t[0], t[1]); }},
      {"conv_transpose2d",
       {{2, 4, 5, 5}, {4, 3, 3, 3}},
       kFloat,
       kHalf,
       [](V t) {
         return conv_transpose2d(t[0], t[1], std::nullopt, {2, 2});
       }},
      {"mm", {{5, 6}, {6, 7}}, kFloat, kHalf, [](V t) { return mm(t[0], t[1]); }},
      {"bmm", {{2, 5, 6}, {2, 6, 7}}, kFloat, kHalf, [](V t) { return bmm(t[0], t[1]); }},
      {"matmul", {{2, 5, 6}, {6, 7}}, kFloat, kHalf, [](V t) { return matmul(t[0], t[1]); }},
      {"mv", {{5, 6}, {6}}, kFloat, kHalf, [](V t) { return mv(t[0], t[1]); }},
      {"linear",
       {{5, 6}, {7, 6}, {7}},
       kFloat,
       kHalf,
       [](V t) { return linear(t[0], t[1], t[2]); }},
      {"addmm",
       {{5, 7}, {5, 6}, {6, 7}},
       kFloat,
       kHalf,
       [](V t) { return addmm(t[0], t[1], t[2]); }},
      {"baddbmm",
       {{2, 5, 7}, {2, 5, 6}, {2, 6, 7}},
       kFloat,
       kHalf,
       [](V t) { return baddbmm(t[0], t[1], t[2]); }},
      {"exp", {{9}}, kHalf, kFloat, [](V t) { return exp(t[0]); }},
      {"log", {{9}}, kHalf, kFloat, [](V t) { return log(t[0].abs()); }},
      {"rsqrt", {{9}}, kHalf, kFloat, [](V t) { return rsqrt(t[0].abs()); }},
      {"tan", {{9}}, kHalf, kFloat, [](V t) { return tan(t[0]); }},
      {"softplus", {{9}}, kHalf, kFloat, [](V t) { return softplus(t[0]); }},
      {"reciprocal", {{9}}, kHalf, kFloat, [](V t) { return reciprocal(t[0]); }},
      {"softmax", {{3, 9}}, kHalf, kFloat, [](V t) { return softmax(t[0], 1); }},
      {"log_softmax", {{3, 9}}, kHalf, kFloat, [](V t) { return log_softmax(t[0], 1); }},
      {"sum", {{3, 9}}, kHalf, kFloat, [](V t) { return sum(t[0], {1}); }},
      {"prod", {{3, 4}}, kHalf, kFloat, [](V t) { return prod(t[0], 1); }},
  };
  manual_seed(3);
  for (const Op& op : ops) {
    std::vector<Tensor> given, cast;
    for (const auto& shape : op.shapes) {
      given.push_back(randn(shape, kXpu).to(op.given));
      cast.push_back(given.back().to(op.cast));
    }
    Tensor amp_result;
    {
      AutocastGuard amp(kXPU);
      amp_result = op.fn(given);
    }
    const Tensor expected = op.fn(cast);
    EXPECT_EQ(amp_result.device().type(), kXPU) << op.name;
    EXPECT_EQ(amp_result.dtype(), op.cast) << op.name;
    EXPECT_TRUE(same_bytes(amp_result.to(kCPU), expected.to(kCPU))) << op.name;
  }
}

TEST(AutocastXpu, CastCacheReusesTheSameStorage) {
  RecordingKernels k;
  // w requires grad, so prelu (a composite) runs at the autograd key, right below autocast:
  // record there what autocast passed down.
  Library below_autocast{Library::Kind::Impl, "xten", DispatchKey::AutogradXPU, __FILE__, __LINE__};
  below_autocast.impl("prelu", [](const Tensor& a, const Tensor& b) {
    g_ptrs = {a.data_ptr(), b.data_ptr()};
    return a;
  });
  const Tensor x = randn({4, 4}, kXpu);
  Tensor w = randn({4, 4}, kXpu);
  w.set_requires_grad(true);
  const void* first = nullptr;
  {
    AutocastGuard amp(kXPU);
    prelu(x, w);
    first = g_ptrs[1];
    prelu(x, w);
    EXPECT_EQ(g_ptrs[1], first);            // the cached float16 copy of w
    EXPECT_EQ(autocast::cache_size(), 1u);  // w only: x requires no grad
  }
  EXPECT_EQ(autocast::cache_size(), 0u);
}

// Note [Cast cache]: one scope around an XPU float16 loop with GradScaler computes what a scope
// per step does, bit for bit (test_autocast.cpp has the CPU's bfloat16 loop).
TEST(AutocastXpu, CastCacheFollowsOptimizerStepsWithGradScaler) {
  expect_one_scope_computes_a_scope_per_step(Device("xpu"), kHalf, /*scaled=*/true);
}

TEST(AutocastXpu, BinaryCrossEntropyIsBanned) {
  const Tensor p = rand({4}, kXpu), t = rand({4}, kXpu);
  AutocastGuard amp(kXPU);
  EXPECT_THROW_MSG(binary_cross_entropy(p, t), ValueError,
                   "[binary_cross_entropy] is unsafe to autocast");
  EXPECT_THROW_MSG(binary_cross_entropy(p, t), ValueError, "use binary_cross_entropy_with_logits");
}

}  // namespace
