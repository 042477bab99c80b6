// The CPU's two paths for matrix products and convolutions (core/cpu_backend.h): which one runs,
// and that oneDNN's results agree with Eigen's on shapes that stress oneDNN's blocking (odd
// channels, depthwise, 1x1, large batch, zero-size, transposed and batched operands), in
// float32 and bfloat16, forward and backward. test_cpu_linalg and test_cpu_conv also run
// whole on each path (test/CMakeLists.txt).
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include <sys/syscall.h>
#include <unistd.h>

#include "test_util.h"

#include <xten/core/cpu_backend.h>

using namespace xten;
using namespace xten::testing;

namespace {

// Restores the process's choice after a test.
class GemmChoice {
 public:
  GemmChoice() : saved_(cpu_gemm()) {}
  ~GemmChoice() { set_cpu_gemm(saved_); }

 private:
  CpuGemm saved_;
};

template <class F>
auto on(CpuGemm backend, F&& f) {
  set_cpu_gemm(backend);
  return f();
}

double tol_for(ScalarType t) {
  return t == kBFloat16 || t == kHalf ? 2e-2 : 2e-4;
}

// A NaN at (row, col) of x makes that row of _linear_relu(x, w, bias) NaN, which the relu keeps;
// the rows after it hold no NaN and nothing negative.
void expect_nan_row_kept_by_relu(const Tensor& x, const Tensor& w, const Tensor& bias, int64_t row,
                                 int64_t col) {
  const Tensor xn = x.clone();
  xn.select(0, row).select(0, col).fill_(std::numeric_limits<float>::quiet_NaN());
  const Tensor r = _linear_relu(xn, w, bias);
  const Tensor after = r.narrow(0, row + 1, r.size(0) - row - 1);
  EXPECT_TRUE(isnan(r.select(0, row)).all().item<bool>());
  EXPECT_FALSE(isnan(after).any().item<bool>());
  EXPECT_TRUE(ge(after, 0).all().item<bool>());
}

}  // namespace

TEST(CpuGemm, TheChosenPathRuns) {
  GemmChoice keep;
  const Tensor a = randn({16, 8}), b = randn({8, 4});
  auto ran = [&](CpuGemm backend, ScalarType t) {
    set_cpu_gemm(backend);
    const CpuGemmCounts before = cpu_gemm_counts();
    mm(a.to(t), b.to(t));
    conv2d(randn({1, 2, 5, 5}).to(t), randn({3, 2, 3, 3}).to(t));
    const CpuGemmCounts after = cpu_gemm_counts();
    return std::make_pair(after.onednn - before.onednn, after.eigen - before.eigen);
  };
  EXPECT_EQ(ran(CpuGemm::OneDnn, kFloat), std::make_pair(int64_t{2}, int64_t{0}));
  EXPECT_EQ(ran(CpuGemm::Eigen, kFloat), std::make_pair(int64_t{0}, int64_t{2}));
  // oneDNN has no float64: Eigen runs it whatever the choice.
  EXPECT_EQ(ran(CpuGemm::OneDnn, kDouble), std::make_pair(int64_t{0}, int64_t{2}));
  EXPECT_STREQ(to_string(CpuGemm::OneDnn), "onednn");
}

// What oneDNN takes follows the instruction set it runs at (oneDNN 2.6: float32 everywhere,
// bfloat16 from avx512_core, float16 only with AVX512-FP16, which 2.6 has no level for), so a
// machine or an emulated cap (DNNL_MAX_CPU_ISA, XTEN_CPU_CAPABILITY) that should take bfloat16
// cannot silently lose it; and a dtype it does not take runs on Eigen.
TEST(CpuGemm, WhatOneDnnTakesFollowsItsIsa) {
  GemmChoice keep;
  set_cpu_gemm(CpuGemm::OneDnn);
  const std::string isa = onednn_cpu_isa();
  SCOPED_TRACE("oneDNN at " + isa);
  EXPECT_NE(cpu_backend_summary().find("oneDNN (" + isa + ")"), std::string::npos)
      << cpu_backend_summary();
  const bool avx512 = isa.rfind("avx512_core", 0) == 0;
  EXPECT_TRUE(onednn_takes(kFloat));
  EXPECT_EQ(onednn_takes(kBFloat16), avx512);
  EXPECT_FALSE(onednn_takes(kDouble));
  EXPECT_FALSE(onednn_takes(kInt));
  // A forced level caps oneDNN too, unless oneDNN's own variable says otherwise.
  if (cpu_capability_forced() && !std::getenv("DNNL_MAX_CPU_ISA") &&
      !std::getenv("ONEDNN_MAX_CPU_ISA")) {
    if (cpu_capability() == CpuCapability::Default) {
      EXPECT_EQ(isa, "sse41");
    }
    if (cpu_capability() == CpuCapability::Avx2) {
      EXPECT_EQ(isa, "avx2");
    }
  }
  for (ScalarType t : {kFloat, kBFloat16, kHalf}) {
    const Tensor a = randn({16, 8}).to(t), b = randn({8, 4}).to(t);
    const CpuGemmCounts before = cpu_gemm_counts();
    const Tensor y = mm(a, b);
    const CpuGemmCounts after = cpu_gemm_counts();
    EXPECT_EQ(after.onednn - before.onednn, onednn_takes(t) ? 1 : 0) << to_string(t);
    EXPECT_EQ(after.eigen - before.eigen, onednn_takes(t) ? 0 : 1) << to_string(t);
    EXPECT_TRUE(
        allclose(y.to(kFloat), mm(a.to(kDouble), b.to(kDouble)).to(kFloat), tol_for(t), tol_for(t)))
        << to_string(t);
  }
}

TEST(CpuGemm, MatmulAgreesWithEigen) {
  GemmChoice keep;
  manual_seed(70);
  for (ScalarType t : {kFloat, kBFloat16}) {
    SCOPED_TRACE(to_string(t));
    const double tol = tol_for(t);
    std::vector<std::pair<Tensor, Tensor>> cases{
        {randn({33, 17}), randn({17, 65})},          // odd sizes
        {randn({17, 33}).t(), randn({65, 17}).t()},  // column-major operands
        {randn({7, 5, 9}), randn({7, 9, 3})},        // a batch
        {randn({5, 9}), randn({4, 9, 6})},           // matmul broadcasting the batch
        {randn({1, 300}), randn({300, 1})},          // a dot product
        {randn({0, 4}), randn({4, 3})},              // zero rows
        {randn({3, 0}), randn({0, 5})},              // k = 0: zeros
        {randn({64, 784}), randn({256, 784}).t()},   // linear's product
        {randn({6, 8, 10}).transpose(1, 2), randn({6, 8, 3})},
    };
    for (auto& [a0, b0] : cases) {
      const Tensor a = a0.to(t), b = b0.to(t);
      const Tensor fast = on(CpuGemm::OneDnn, [&] { return matmul(a, b); });
      const Tensor ref = on(CpuGemm::Eigen, [&] { return matmul(a, b); });
      EXPECT_EQ(fast.sizes(), ref.sizes());
      EXPECT_EQ(fast.dtype(), t);
      EXPECT_TRUE(allclose(fast, ref, tol, tol)) << a.sizes() << " @ " << b.sizes();
    }
    const Tensor in = randn({5, 7}).to(t), w = randn({3, 7}).to(t), bias = randn({3}).to(t);
    EXPECT_TRUE(allclose(on(CpuGemm::OneDnn, [&] { return linear(in, w, bias); }),
                         on(CpuGemm::Eigen, [&] { return linear(in, w, bias); }), tol, tol));
  }
}

// Note [sgemm on one thread] (kernels/cpu/onednn.cpp): large float32 products on one thread
// run dnnl_sgemm; each operand row- or column-major, with and without padding between rows.
TEST(CpuGemm, LargeProductsOnOneThreadEveryLayout) {
  GemmChoice keep;
  set_cpu_gemm(CpuGemm::OneDnn);
  const int saved = get_num_threads();
  set_num_threads(1);
  manual_seed(71);
  const Tensor a = randn({520, 530}), b = randn({530, 540});
  const std::vector<std::pair<Tensor, Tensor>> cases{
      {a, b},
      {a.t().contiguous().t(), b},                       // column-major a
      {a, b.t().contiguous().t()},                       // column-major b
      {a.t().contiguous().t(), b.t().contiguous().t()},  // both
      {randn({520, 600}).narrow(1, 0, 530), b},          // rows 600 apart
      {a, randn({540, 560}).narrow(1, 0, 530).t()},      // columns 560 apart
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [x, y] = cases[i];
    const Tensor want = mm(x.to(kDouble), y.to(kDouble)).to(kFloat);
    const CpuGemmCounts before = cpu_gemm_counts();
    const Tensor got = mm(x, y);
    EXPECT_EQ(cpu_gemm_counts().onednn - before.onednn, 1) << "case " << i;
    EXPECT_EQ(cpu_gemm_counts().sgemm - before.sgemm, 1) << "case " << i;
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-3))
        << "case " << i << ": " << x.strides() << " @ " << y.strides();
  }
  set_num_threads(saved);
}

// Note [sgemm on one thread]: a float32 product under 1 MFLOP runs as one dnnl_sgemm, on one
// thread and on a team alike, in every layout sgemm reads, the bias and relu of linear and
// _linear_relu in one pass after it (relu keeps NaN); a 16-bit one, an empty one and a batch of
// two do not, and every result equals the float64 product's within float32 rounding.
TEST(CpuGemm, SmallProductsRunAsOneSgemmEveryLayout) {
  GemmChoice keep;
  set_cpu_gemm(CpuGemm::OneDnn);
  const int saved = get_num_threads();
  manual_seed(74);
  const Tensor a = randn({37, 29}), b = randn({29, 11}), w = randn({11, 29}), bias = randn({11});
  auto dbl = [](const Tensor& t) { return t.to(kDouble); };
  struct Case {
    std::string name;
    std::function<Tensor()> run;
    std::function<Tensor()> want;
    int sgemm;
  };
  const std::vector<Case> cases{
      {"row-major both", [&] { return mm(a, b); }, [&] { return mm(dbl(a), dbl(b)); }, 1},
      {"column-major a", [&] { return mm(a.t().contiguous().t(), b); },
       [&] { return mm(dbl(a), dbl(b)); }, 1},
      {"column-major b", [&] { return mm(a, b.t().contiguous().t()); },
       [&] { return mm(dbl(a), dbl(b)); }, 1},
      {"rows 40 apart",
       [&] {
         return mm(randn({37, 40}).narrow(1, 0, 29).copy_(a), b);
       },
       [&] { return mm(dbl(a), dbl(b)); }, 1},
      {"a vector", [&] { return mv(a, b.select(1, 3)); },
       [&] { return mv(dbl(a), dbl(b).select(1, 3)); }, 1},
      {"linear + bias", [&] { return linear(a, w, bias); },
       [&] { return linear(dbl(a), dbl(w), dbl(bias)); }, 1},
      {"linear + relu, bias", [&] { return _linear_relu(a, w, bias); },
       [&] { return relu(linear(dbl(a), dbl(w), dbl(bias))); }, 1},
      {"linear + relu", [&] { return _linear_relu(a, w, std::nullopt); },
       [&] { return relu(linear(dbl(a), dbl(w), std::nullopt)); }, 1},
      {"bfloat16", [&] { return mm(a.to(kBFloat16), b.to(kBFloat16)).to(kFloat); },
       [&] { return mm(dbl(a.to(kBFloat16)), dbl(b.to(kBFloat16))); }, 0},
      {"batch of two",
       [&] {
         return bmm(stack({a, a}), stack({b, b}));
       },
       [&] {
         return bmm(stack({dbl(a), dbl(a)}), stack({dbl(b), dbl(b)}));
       },
       0},
      {"k = 0", [&] { return mm(a.narrow(1, 0, 0), b.narrow(0, 0, 0)); },
       [&] {
         return zeros({37, 11}, kDouble);
       },
       0},
  };
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (const Case& c : cases) {
      const CpuGemmCounts before = cpu_gemm_counts();
      const Tensor got = c.run();
      EXPECT_EQ(cpu_gemm_counts().sgemm - before.sgemm, c.sgemm) << c.name << ", " << threads;
      const double tol = c.name == "bfloat16" ? 2e-2 : 1e-4;
      EXPECT_TRUE(allclose(got, c.want().to(kFloat), tol, tol)) << c.name << ", " << threads;
    }
  }
  expect_nan_row_kept_by_relu(a, w, bias, 4, 2);
  set_num_threads(saved);
}

TEST(CpuGemm, ConvolutionsAgreeWithEigen) {
  GemmChoice keep;
  manual_seed(71);
  struct Case {
    std::vector<int64_t> in, w, stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  const std::vector<Case> cases{
      {{2, 3, 9, 7}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},    // odd channels
      {{2, 6, 8, 8}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6, false},   // depthwise
      {{3, 8, 5, 5}, {16, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},   // 1x1
      {{2, 4, 11, 10}, {6, 2, 3, 2}, {2, 3}, {1, 0}, {2, 1}, 2, true},  // stride, dilation, groups
      {{33, 4, 6, 6}, {8, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false},  // large batch, stride 2
      {{0, 4, 6, 6}, {8, 4, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},    // zero-size batch
  };
  for (ScalarType t : {kFloat, kBFloat16}) {
    SCOPED_TRACE(to_string(t));
    const double tol = tol_for(t) * 5;
    for (const Case& c : cases) {
      const Tensor x = randn(c.in).to(t), w = randn(c.w).to(t), b = randn({c.w[0]}).to(t);
      const auto bias = c.bias ? std::optional<Tensor>(b) : std::nullopt;
      auto run = [&] {
        return conv2d(x, w, bias, c.stride, IntArrayRef(c.padding), c.dilation, c.groups);
      };
      const Tensor fast = on(CpuGemm::OneDnn, run), ref = on(CpuGemm::Eigen, run);
      EXPECT_EQ(fast.sizes(), ref.sizes()) << IntArrayRef(c.in);
      EXPECT_TRUE(allclose(fast, ref, tol, tol)) << IntArrayRef(c.in) << " " << IntArrayRef(c.w);
      // conv_transpose2d with the same weight read as [c_in, c_out / groups, kh, kw]
      const Tensor xt = randn({c.in[0], c.w[0], 4, 5}).to(t);
      const Tensor bt = randn({c.w[1] * c.groups}).to(t);
      for (int64_t op : {0, 1}) {
        if (op >= c.stride[0] && op >= c.dilation[0]) continue;
        const std::vector<int64_t> out_pad{op, 0};
        auto run_t = [&] {
          return conv_transpose2d(xt, w, c.bias ? std::optional<Tensor>(bt) : std::nullopt,
                                  c.stride, c.padding, out_pad, c.groups, c.dilation);
        };
        const Tensor ft = on(CpuGemm::OneDnn, run_t), rt = on(CpuGemm::Eigen, run_t);
        EXPECT_EQ(ft.sizes(), rt.sizes());
        EXPECT_TRUE(allclose(ft, rt, tol, tol))
            << "transposed " << IntArrayRef(c.in) << " op " << op;
      }
    }
  }
}

TEST(CpuGemm, GradientsAgreeWithEigen) {
  GemmChoice keep;
  manual_seed(72);
  const Tensor x0 = randn({4, 6, 10, 10}), w0 = randn({8, 3, 3, 3}), l0 = randn({10, 200});
  auto grads = [&] {
    Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
    Tensor l = l0.clone().requires_grad_();
    Tensor y = conv2d(x, w, std::nullopt, {2, 2}, {1, 1}, {1, 1}, 2);
    Tensor loss = (linear(relu(y).flatten(1), l) * 0.01).pow(2).sum();
    return autograd::grad({loss}, {x, w, l});
  };
  const auto fast = on(CpuGemm::OneDnn, grads), ref = on(CpuGemm::Eigen, grads);
  // The weight gradient is oneDNN's backward-weights primitive, one call.
  const Tensor go = randn({2, 8, 5, 5}), in = randn({2, 6, 10, 10});
  auto weight_grad = [&] {
    return conv2d_backward_weight(go, in, {8, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2);
  };
  set_cpu_gemm(CpuGemm::OneDnn);
  const CpuGemmCounts before = cpu_gemm_counts();
  const Tensor gw = weight_grad();
  EXPECT_EQ(cpu_gemm_counts().onednn - before.onednn, 1);
  EXPECT_TRUE(allclose(gw, on(CpuGemm::Eigen, weight_grad), 1e-4, 1e-4));
  for (size_t i = 0; i < fast.size(); ++i) EXPECT_TRUE(allclose(fast[i], ref[i], 1e-4, 1e-4)) << i;
}

// oneDNN runs on OpenMP like xten's own loops: products inside xten's parallel regions run on
// the calling thread, so the process never holds more threads than xten's count asks for.
int64_t process_threads() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key)
    if (key == "Threads:") {
      int64_t n = 0;
      status >> n;
      return n;
    }
  return -1;
}

// Note [Rows to threads] (core/parallel.cpp): on a team, a float32 product whose largest operand
// is a weight cut by rows (the column-major b of x @ w^T, a weight-gradient out, a row-major a)
// runs as one one-thread sgemm per thread over its owned rows, bias and relu included; other
// products leave the split to oneDNN. Three threads, so the rows do not divide evenly.
TEST(CpuGemm, ProductsCutByOwnedRowsEveryLayout) {
  GemmChoice keep;
  set_cpu_gemm(CpuGemm::OneDnn);
  const int saved = get_num_threads();
  set_num_threads(3);
  manual_seed(72);
  const Tensor x = randn({40, 300});
  const Tensor w = randn({100, 300}), bias = randn({100}), g = randn({40, 100});
  auto dbl = [](const Tensor& t) { return t.to(kDouble); };
  struct Case {
    std::string name;
    std::function<Tensor()> run;
    Tensor want;
    bool cut;
  };
  const std::vector<Case> cases{
      {"linear, bias", [&] { return linear(x, w, bias); }, linear(dbl(x), dbl(w), dbl(bias)), true},
      {"linear + relu, bias", [&] { return _linear_relu(x, w, bias); },
       relu(linear(dbl(x), dbl(w), dbl(bias))), true},
      {"linear + relu", [&] { return _linear_relu(x, w, std::nullopt); },
       relu(linear(dbl(x), dbl(w), std::nullopt)), true},
      {"weight gradient g^T x", [&] { return mm(g.t(), x); }, mm(dbl(g).t(), dbl(x)), true},
      {"row-major a largest", [&] { return mm(w.t().contiguous(), g.t().narrow(1, 0, 20)); },
       mm(dbl(w).t(), dbl(g).t().narrow(1, 0, 20)), true},
      {"column-major a largest", [&] { return mm(w.t(), g.t().narrow(1, 0, 20)); },
       mm(dbl(w).t(), dbl(g).t().narrow(1, 0, 20)), false},
      {"too few rows for 3 threads", [&] { return linear(x, w.narrow(0, 0, 40), std::nullopt); },
       linear(dbl(x), dbl(w).narrow(0, 0, 40), std::nullopt), false},
  };
  for (const Case& c : cases) {
    const CpuGemmCounts before = cpu_gemm_counts();
    const Tensor got = c.run();
    const CpuGemmCounts after = cpu_gemm_counts();
    EXPECT_EQ(after.owned_rows - before.owned_rows, c.cut ? 1 : 0) << c.name;
    EXPECT_EQ(after.onednn - before.onednn, 1) << c.name;
    const Tensor want = c.want.to(kFloat);
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-3)) << c.name;
    set_owned_rows(false);
    const CpuGemmCounts before_off = cpu_gemm_counts();
    const Tensor off = c.run();
    EXPECT_EQ(cpu_gemm_counts().owned_rows, before_off.owned_rows) << c.name << ": switched off";
    set_owned_rows(true);
    EXPECT_TRUE(allclose(got, off, 1e-4, 1e-3)) << c.name;
  }
  expect_nan_row_kept_by_relu(x, w, bias, 5, 7);
  // A shared operand over 1 MiB (each thread would pack it whole): oneDNN splits the work.
  const CpuGemmCounts before = cpu_gemm_counts();
  (void)linear(randn({500, 600}), randn({700, 600}), std::nullopt);
  EXPECT_EQ(cpu_gemm_counts().owned_rows, before.owned_rows);
  set_num_threads(saved);
}

TEST(CpuGemm, NestedParallelRegionsDoNotMultiplyThreads) {
  GemmChoice keep;
  set_cpu_gemm(CpuGemm::OneDnn);
  const int saved = get_num_threads();
  set_num_threads(2);
  const Tensor a = randn({256, 256}), b = randn({256, 256});
  mm(a, b);  // oneDNN's pool up
  const int64_t before = process_threads();
  std::vector<Tensor> out(8);
  parallel_for(8, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = mm(a, b);
  });
  const int64_t after = process_threads();
  EXPECT_LE(after, before) << "threads grew from " << before << " to " << after;
  for (const Tensor& o : out) EXPECT_TRUE(allclose(o, out[0], 0, 0));
  set_num_threads(saved);
}

// Note [One OpenMP team] (core/parallel.cpp): loops of different widths and oneDNN primitives
// of different sizes all run on one OpenMP team, so no thread is ended and created again. The
// threads that run xten's loops are counted by their ids: with teams of changing sizes libgomp
// ended the surplus threads after each smaller region and every larger one ran on new threads.
TEST(CpuThreads, LoopsAndPrimitivesOfEverySizeShareOneTeam) {
  const int saved = get_num_threads();
  set_num_threads(6);
  std::mutex mutex;
  std::set<long> ids;
  auto record = [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mutex);
    ids.insert(static_cast<long>(syscall(SYS_gettid)));
  };
  const Tensor big = randn({128, 128}), small = randn({8, 8});
  for (int i = 0; i < 30; ++i) {
    parallel_for(6, 1, record);                                // 6 workers
    parallel_for(2, 1, record);                                // 2 workers
    parallel_for(3 * kParallelGrain, kParallelGrain, record);  // 3 workers
    (void)mm(big, big);                                        // 4 MFLOP: oneDNN on the whole team
    (void)mm(small, small);                                    // 1 KFLOP: oneDNN on one thread
    (void)(big + 1).sum();                                     // elementwise and reduction loops
  }
  EXPECT_LE(ids.size(), 6u) << ids.size() << " threads ran the loops";
  EXPECT_GE(ids.size(), 2u);
  set_num_threads(saved);
}

// Note [oneDNN threads]: a small product runs oneDNN on one thread through
// omp_set_num_threads; that must not lower the count later kernels use when the user never
// called set_num_threads (it did: the training example then ran most kernels on 1-3 threads).
TEST(CpuGemm, ASmallProductDoesNotLowerTheDefaultThreadCount) {
  const int before = get_num_threads();
  Tensor a = randn({8, 8});
  (void)matmul(a, a);  // 1 KFLOP: oneDNN on one thread
  EXPECT_EQ(get_num_threads(), before);
  Tensor big = randn({256, 256});
  (void)matmul(big, big);
  (void)matmul(a, a);
  EXPECT_EQ(get_num_threads(), before);
}
