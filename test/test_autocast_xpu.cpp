// Autocast on XPU: the XPU lists, and each policy's casts observed by test kernels registered
// on the XPU key for ops that have no XPU kernel yet (they record what reaches the backend).
// When the XPU kernels land, these observe the real kernels' inputs instead.
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
      {"baddbmm", CastPolicy::kLowerPrecisionFp},
      {"bmm", CastPolicy::kLowerPrecisionFp},
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

TEST(AutocastXpu, CastCacheReusesTheSameStorage) {
  RecordingKernels k;
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

TEST(AutocastXpu, BinaryCrossEntropyIsBanned) {
  const Tensor p = rand({4}, kXpu), t = rand({4}, kXpu);
  AutocastGuard amp(kXPU);
  EXPECT_THROW_MSG(binary_cross_entropy(p, t), ValueError,
                   "[binary_cross_entropy] is unsafe to autocast");
  EXPECT_THROW_MSG(binary_cross_entropy(p, t), ValueError, "use binary_cross_entropy_with_logits");
}

}  // namespace
