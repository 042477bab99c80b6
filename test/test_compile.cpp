// xten::compile (docs/compile.md): capture, guards and recompiles, graph breaks, the passes, the
// fused CPU loops, and compiled programs against eager ones. Built twice: test_compile on CPU,
// test_compile_xpu (XTEN_COMPILE_XPU) on the XPU, where fused groups are generated OpenCL C kernels
// (compile/xpu_codegen.cpp), their SPIR-V cached in the build tree.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include <xten/compile/compile.h>
#include <xten/compile/host_guard.h>
#include <xten/models/gpt.h>
#include <xten/models/resnet.h>
#include <xten/nn/modules.h>
#include <xten/nn/utils.h>
#include <xten/profiler/profiler.h>
#include <xten/xten.h>

#include "op_db.h"
#include "test_util.h"
#ifdef XTEN_COMPILE_XPU
#include "xpu_test_env.h"
#endif

namespace xten {
namespace {
using testing::allclose;
using testing::same_bytes;

#ifdef XTEN_COMPILE_XPU
#define COMPILE_SUITE CompileXpu
const bool kEnv = testing::set_xpu_test_env("1G") &&
                  setenv("XTEN_COMPILE_CACHE_DIR", XTEN_TEST_CACHE_DIR "/compile", 0) == 0;
const Device kDev("xpu");
#else
#define COMPILE_SUITE Compile
const Device kDev("cpu");
#endif
constexpr bool kFuses = true;

Tensor randn_on(std::vector<int64_t> shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape, TensorOptions(kFloat)).to(kDev);
}

Tensor chain(const Tensor& x, const Tensor& b) {
  return layer_norm(x * sigmoid(x) + b, {x.size(-1)});
}

TEST(COMPILE_SUITE, PointwiseChainIsOneFusedGroupAndEqualsEager) {
  NoGradGuard no_grad;
  const Tensor x = randn_on({64, 256}, 1), b = randn_on({256}, 2);
  auto f = compile(chain);
  const Tensor eager = chain(x, b);
  const Tensor first = f(x, b);   // captured (the program ran eagerly)
  const Tensor second = f(x, b);  // the compiled graph
  EXPECT_TRUE(same_bytes(first, eager));
  // The pointwise part computes with the eager kernels' functors (bit for bit); layer_norm's
  // row epilogue sums in another order (and in double): within float32 rounding.
  EXPECT_TRUE(allclose(second, eager, 1e-5, 1e-5));
  const CompileStats& s = f.stats();
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.compiled_calls, 1);
  EXPECT_EQ(s.fused_groups, kFuses ? 1 : 0);
  if (kFuses) {
    EXPECT_EQ(s.nodes_after, 1);
    EXPECT_NE(f.graph_string().find("fused_sigmoid_mul_add_layer_norm"), std::string::npos)
        << f.graph_string();
  }
}

TEST(COMPILE_SUITE, LayerNormRowEpilogueWithAffineAndAlone) {
  NoGradGuard no_grad;
  const Tensor x = randn_on({37, 1500}, 40), w = randn_on({1500}, 41), b = randn_on({1500}, 42);
  auto affine = [&](const Tensor& in) { return layer_norm(tanh(in) * 3, {1500}, w, b, 1e-3); };
  auto alone = [&](const Tensor& in) { return layer_norm(in, {1500}); };
  // The value before the norm is also returned: the group stores it on the way.
  auto both = [&](const Tensor& in) {
    const Tensor h = exp(in.clamp(-3.0, 3.0));
    return std::make_tuple(layer_norm(h, {1500}), h);
  };
  auto f = compile(affine);
  auto g = compile(alone);
  auto h = compile(both);
  for (int call = 0; call < 2; ++call) {
    EXPECT_TRUE(allclose(f(x), affine(x), 1e-5, 1e-5));
    EXPECT_TRUE(allclose(g(x), alone(x), 1e-5, 1e-5));
    const auto [y, hx] = h(x);
    const auto [ey, ehx] = both(x);
    EXPECT_TRUE(allclose(y, ey, 1e-5, 1e-5));
    // The program runs over whole 64-byte lines around each row, as eager runs over the whole
    // tensor; but eager splits a tensor this size between threads at an element that need not
    // start a line, and the few elements after the split take exp's scalar form there: within
    // exp's ulp bound (bit for bit on one thread; docs/compile.md "Exactness").
    EXPECT_TRUE(allclose(hx, ehx, 1e-6, 0));
    if (get_num_threads() == 1) {
      EXPECT_TRUE(same_bytes(hx, ehx));
    }
  }
  EXPECT_EQ(g.stats().fused_groups, kFuses ? 1 : 0);
  EXPECT_EQ(h.stats().fused_groups, kFuses ? 1 : 0);
}

TEST(COMPILE_SUITE, SoftmaxAndLogSoftmaxEndAFusedGroupBitForBit) {
  NoGradGuard no_grad;
  const Tensor x = randn_on({37, 100}, 43), mask = randn_on({100}, 44);
  auto attn = [&](const Tensor& in) { return softmax(in * 0.125 + mask, -1); };
  auto logp = [&](const Tensor& in) { return log_softmax(tanh(in) * 4, 1); };
  auto f = compile(attn);
  auto g = compile(logp);
  for (int call = 0; call < 2; ++call) {
    // The row epilogue computes as the eager kernel, on a row where eager's would be.
    EXPECT_TRUE(same_bytes(f(x), attn(x)));
    EXPECT_TRUE(same_bytes(g(x), logp(x)));
  }
  if (kDev.type() == kCPU) {  // (on the XPU softmax stays its eager kernel after the group)
    EXPECT_EQ(f.stats().fused_groups, 1);
    EXPECT_EQ(f.stats().nodes_after, 1);
    EXPECT_NE(f.graph_string().find("fused_mul_add_softmax"), std::string::npos);
    EXPECT_NE(g.graph_string().find("fused_tanh_mul_log_softmax"), std::string::npos);
  }
}

// sum and mean over the last dim end a fused group too (CPU): one value per row, the sum
// kernel's pairwise lanes, so bit for bit; keepdim either way, rows of any length.
TEST(COMPILE_SUITE, SumAndMeanEndAFusedGroupBitForBit) {
  NoGradGuard no_grad;
  const Tensor x = randn_on({37, 1000}, 45), b = randn_on({1000}, 46);
  auto sq = [&](const Tensor& in) { return (in * in + b).sum({-1}); };
  auto mean_keep = [&](const Tensor& in) { return sigmoid(in - b).mean({1}, true); };
  auto f = compile(sq);
  auto g = compile(mean_keep);
  for (int call = 0; call < 2; ++call) {
    EXPECT_TRUE(same_bytes(f(x), sq(x)));
    EXPECT_TRUE(same_bytes(g(x), mean_keep(x)));
  }
  EXPECT_EQ(g(x).sizes(), (std::vector<int64_t>{37, 1}));
  const Tensor odd = randn_on({5, 3, 77}, 47), ob = randn_on({77}, 48);
  auto h = compile([&](const Tensor& in) { return (in * ob).sum({2}); });
  EXPECT_TRUE(same_bytes(h(odd), (odd * ob).sum({2})));
  if (kDev.type() == kCPU) {  // (on the XPU the reduction stays its eager kernel after the group)
    EXPECT_EQ(f.stats().fused_groups, 1);
    EXPECT_EQ(f.stats().nodes_after, 1);
    EXPECT_NE(f.graph_string().find("fused_mul_add_sum"), std::string::npos) << f.graph_string();
    EXPECT_NE(g.graph_string().find("fused_sub_sigmoid_mean"), std::string::npos);
  }
  // Over another dim, or all of them: the group ends before the reduction.
  auto cols = compile([&](const Tensor& in) { return (in * in).sum({0}); });
  EXPECT_TRUE(same_bytes(cols(x), (x * x).sum({0})));
  EXPECT_EQ(cols.graph_string().find("fused"), std::string::npos);
}

TEST(COMPILE_SUITE, GraphDumpNamesOpsShapesAndDtypes) {
  NoGradGuard no_grad;
  auto f = compile([](const Tensor& x) { return relu(x.sum(1) * 2); },
                   CompileOptions().backend("eager"));
  const Tensor x = randn_on({3, 5}, 3);
  f(x);
  const std::string g = f.graph_string();
  EXPECT_NE(g.find("%0 = input 0 : f32[3, 5]"), std::string::npos) << g;
  EXPECT_NE(g.find("sum.dim_IntList(%0, [1], False, None) : f32[3]"), std::string::npos) << g;
  EXPECT_NE(g.find("relu("), std::string::npos) << g;
  EXPECT_NE(g.find("return (%"), std::string::npos) << g;
}

TEST(COMPILE_SUITE, NewShapeOrDtypeRecompilesAndCounts) {
  NoGradGuard no_grad;
  auto f = compile([](const Tensor& x) { return exp(x) * x + 1; });
  for (int rep = 0; rep < 2; ++rep) {
    for (int64_t n : {4, 5}) {
      const Tensor x = randn_on({n, 3}, static_cast<uint64_t>(n));
      EXPECT_TRUE(same_bytes(f(x), exp(x) * x + 1));
    }
  }
  EXPECT_EQ(f.stats().captures, 2);
  EXPECT_EQ(f.stats().recompiles, 1);
  EXPECT_EQ(f.stats().compiled_calls, 2);
  const Tensor d = randn_on({4, 3}, 7).to(kDouble);
  EXPECT_TRUE(same_bytes(f(d), exp(d) * d + 1));
  EXPECT_TRUE(same_bytes(f(d), exp(d) * d + 1));
  EXPECT_EQ(f.stats().recompiles, 2);
  // A non-contiguous input has other strides: a signature of its own. (Eager exp walks it in its
  // memory order, in runs too short for Eigen's vector form; the fused loop takes the vector
  // form: values within exp's documented ulp, docs/compile.md "Exactness".)
  const Tensor t = randn_on({3, 4}, 8).t();
  EXPECT_TRUE(same_bytes(f(t), exp(t) * t + 1));
  EXPECT_TRUE(allclose(f(t), exp(t) * t + 1, 1e-6, 0));
  EXPECT_EQ(f.stats().recompiles, 3);
  // Another thread count (what convolution steps are built for).
  const int threads = get_num_threads();
  set_num_threads(threads == 1 ? 2 : 1);
  const Tensor x = randn_on({4, 3}, 4);
  EXPECT_TRUE(same_bytes(f(x), exp(x) * x + 1));
  set_num_threads(threads);
  EXPECT_EQ(f.stats().recompiles, 4);
}

TEST(COMPILE_SUITE, PastTheCacheLimitRunsEagerly) {
  NoGradGuard no_grad;
  auto f = compile([](const Tensor& x) { return x * 2; }, CompileOptions().cache_limit(2));
  for (int64_t n = 1; n <= 4; ++n) {
    const Tensor x = randn_on({n}, static_cast<uint64_t>(n));
    EXPECT_TRUE(same_bytes(f(x), x * 2));
  }
  EXPECT_EQ(f.stats().captures, 2);
  EXPECT_EQ(f.stats().eager_calls, 2);
  EXPECT_EQ(f.stats().last_eager_reason, "cache limit reached");
}

TEST(COMPILE_SUITE, ItemIsAGraphBreakAndFullgraphNamesIt) {
  NoGradGuard no_grad;
  auto prog = [](const Tensor& x) {
    const double m = x.max().item<double>();  // a value read back to the host
    return m > 0 ? x * 2 : x * 3;
  };
  auto f = compile(prog);
  const Tensor x = randn_on({8}, 4);
  EXPECT_TRUE(same_bytes(f(x), prog(x)));  // captured
  EXPECT_TRUE(same_bytes(f(x), prog(x)));  // replayed: the same path, compiled segments
  EXPECT_EQ(f.stats().last_eager_reason, "");
  // The other branch: the replay leaves the captured path at `x * 3` and finishes eagerly.
  EXPECT_TRUE(same_bytes(f(-x.abs()), prog(-x.abs())));
  EXPECT_NE(f.stats().last_eager_reason.find("left the captured path"), std::string::npos)
      << f.stats().last_eager_reason;
  EXPECT_EQ(f.stats().graph_breaks, 1);
  EXPECT_EQ(f.stats().last_break, "item");
  EXPECT_EQ(f.stats().captures, 1);
  EXPECT_EQ(f.stats().compiled_calls, 2);
  EXPECT_EQ(f.stats().eager_calls, 0);
  auto strict = compile(prog, CompileOptions().fullgraph(true));
  EXPECT_THROW_MSG(strict(x), ValueError, "[compile] graph break at 'item' with fullgraph=true");
}

// Note [Replay] in compile/segments.cpp: the graph is split at each break; the segments are
// optimized and fused, and a later call runs the program again against them.
TEST(COMPILE_SUITE, GraphBreaksSplitTheGraphIntoCompiledSegments) {
  NoGradGuard no_grad;
  auto prog = [](const Tensor& x, const Tensor& b) {
    const Tensor h = layer_norm(x * sigmoid(x) + b, {x.size(-1)});  // segment 0: one fused group
    const Tensor kept = h * 0.5;                    // held across the break, read after it
    const double s = h.abs().sum().item<double>();  // the break
    const Tensor y = tanh(kept) * s - exp(-kept);   // segment 1: s is a constant of the graph
    return std::make_tuple(y, kept);
  };
  auto f = compile(prog);
  const Tensor x = randn_on({32, 64}, 6), b = randn_on({64}, 7);
  f(x, b);
  for (int call = 0; call < 2; ++call) {
    const auto [y, kept] = f(x, b);
    const auto [ey, ekept] = prog(x, b);
    // (y is tanh(kept) * s with s ~ 2e3: kept's float32 rounding, times s)
    EXPECT_TRUE(allclose(y, ey, 1e-5, 1e-3));
    EXPECT_TRUE(allclose(kept, ekept, 1e-5, 1e-5));
  }
  const CompileStats& st = f.stats();
  EXPECT_EQ(st.compiled_calls, 2);
  EXPECT_EQ(st.last_eager_reason, "");
  EXPECT_GE(st.fused_groups, 2);  // one per segment
  const std::string g = f.graph_string();
  EXPECT_NE(g.find("# segment 0"), std::string::npos) << g;
  EXPECT_NE(g.find("then graph break at 'item'"), std::string::npos) << g;
  EXPECT_NE(g.find("# segment 1"), std::string::npos) << g;
  EXPECT_NE(g.find("fused_sigmoid_mul_add_layer_norm"), std::string::npos) << g;
  // Other values: another item() value, another constant: the second segment's call leaves the
  // captured path there and finishes eagerly, with the eager results.
  const Tensor x2 = randn_on({32, 64}, 8);
  const auto [y2, kept2] = f(x2, b);
  const auto [ey2, ekept2] = prog(x2, b);
  EXPECT_TRUE(allclose(y2, ey2, 1e-5, 1e-3));
  EXPECT_TRUE(allclose(kept2, ekept2, 1e-5, 1e-5));
  EXPECT_NE(f.stats().last_eager_reason.find("another argument"), std::string::npos)
      << f.stats().last_eager_reason;
}

TEST(COMPILE_SUITE, InPlaceWritesAndBreaksKeepTheirOrder) {
  NoGradGuard no_grad;
  // An in-place write before the break, a read of the written input after it, a break inside
  // a loop, and a break that ends the program early on some calls.
  auto prog = [](Tensor x) {
    x.mul_(2).add_(1);
    Tensor acc = x * 0;
    for (int i = 0; i < 3; ++i) {
      acc = acc + relu(x - i);
      if (acc.max().item<double>() > 1e6) return acc;  // never on these inputs
    }
    return acc * x;
  };
  auto f = compile(prog);
  const Tensor x0 = randn_on({5, 6}, 9);
  Tensor a = x0.clone(), b = x0.clone();
  for (int call = 0; call < 3; ++call) {
    const Tensor got = f(a), want = prog(b);
    EXPECT_TRUE(same_bytes(got, want)) << call;
    EXPECT_TRUE(same_bytes(a, b)) << call;  // the input written once per call
  }
  EXPECT_EQ(f.stats().compiled_calls, 2);
  EXPECT_EQ(f.stats().last_eager_reason, "");
  // Early return on a large input: fewer ops than captured, finished eagerly.
  Tensor big = x0.clone() * 1e7, big2 = big.clone();
  EXPECT_TRUE(same_bytes(f(big), prog(big2)));
  EXPECT_TRUE(same_bytes(big, big2));
  EXPECT_NE(f.stats().last_eager_reason.find("left the captured path"), std::string::npos);
}

TEST(COMPILE_SUITE, PrintingIsAGraphBreakThatSeesTheValues) {
  NoGradGuard no_grad;
  std::vector<std::string> printed;
  auto prog = [&](const Tensor& x) {
    const Tensor h = exp(x) * 2;
    std::ostringstream os;
    os << h.sum(0);  // the replay must print computed values, not a placeholder's
    printed.push_back(os.str());
    return h + 1;
  };
  auto f = compile(prog);
  const Tensor x = randn_on({4, 3}, 12);
  for (int call = 0; call < 3; ++call) EXPECT_TRUE(same_bytes(f(x), prog(x)));
  ASSERT_EQ(printed.size(), 6u);
  for (size_t i = 1; i < printed.size(); ++i) EXPECT_EQ(printed[i], printed[0]);
  EXPECT_EQ(f.stats().last_break, "print");
  EXPECT_EQ(f.stats().compiled_calls, 2);
  EXPECT_EQ(f.stats().last_eager_reason, "");
}

TEST(COMPILE_SUITE, NonzeroIsAGraphBreak) {
  NoGradGuard no_grad;
  auto prog = [](const Tensor& x) {
    const Tensor idx = nonzero(x > 0);  // runs eagerly between the segments
    return std::make_tuple(idx * 2, exp(x) + 1);
  };
  auto f = compile(prog);
  const Tensor x = randn_on({16}, 5);
  for (int call = 0; call < 3; ++call) {
    const auto [i, e] = f(x);
    const auto [ei, ee] = prog(x);
    EXPECT_TRUE(same_bytes(i, ei));
    EXPECT_TRUE(same_bytes(e, ee));
  }
  // Other values: nonzero's result has another shape; the segment after it is compiled for
  // the captured shape, so the call leaves the path there (eager, right results).
  const Tensor y = randn_on({16}, 6);
  const auto [i2, e2] = f(y);
  const auto [ei2, ee2] = prog(y);
  EXPECT_TRUE(same_bytes(i2, ei2));
  EXPECT_TRUE(same_bytes(e2, ee2));
  EXPECT_NE(f.stats().last_eager_reason.find("'nonzero' gave i64["), std::string::npos)
      << f.stats().last_eager_reason;
  EXPECT_EQ(f.stats().last_break, "nonzero");
  EXPECT_EQ(f.stats().compiled_calls, 3);
  auto strict = compile(prog, CompileOptions().fullgraph(true));
  EXPECT_THROW_MSG(strict(x), ValueError, "graph break at 'nonzero'");
}

TEST(COMPILE_SUITE, ACompiledProgramInsideAnotherIsPartOfItsGraph) {
  NoGradGuard no_grad;
  auto inner = compile([](const Tensor& x) { return tanh(x) * 2; });
  auto outer_fn = [&](const Tensor& x) {
    const Tensor h = inner(x + 1);  // inner is compiled already (below), and called inside
    const double s = h.sum().item<double>();  // a break: the outer program is replayed too
    return h * (s > 0 ? 1.0 : -1.0);
  };
  const Tensor warm = randn_on({4, 5}, 31);
  inner(warm);
  inner(warm);
  auto outer = compile(outer_fn);
  for (uint64_t seed = 32; seed < 36; ++seed) {
    const Tensor x = randn_on({4, 5}, seed);  // new values, the same signature
    EXPECT_TRUE(same_bytes(outer(x), outer_fn(x))) << seed;
  }
  EXPECT_EQ(outer.stats().captures, 1);
  EXPECT_NE(outer.graph_string().find("tanh("), std::string::npos) << outer.graph_string();
}

TEST(COMPILE_SUITE, BadOptionsAreErrors) {
  auto id = [](const Tensor& x) { return x; };
  EXPECT_THROW_MSG(compile(id, CompileOptions().backend("triton")), ValueError,
                   "backend must be \"inductor\" or \"eager\", but got \"triton\"");
  EXPECT_THROW_MSG(compile(id, CompileOptions().mode("max-autotune")), ValueError,
                   "mode must be \"default\" or \"reduce-overhead\"");
  EXPECT_THROW_MSG(compile(id, CompileOptions().dynamic(true)), NotImplementedError,
                   "dynamic=true");
  EXPECT_THROW_MSG(compile(id, CompileOptions().cache_limit(0)), ValueError, "cache_limit");
}

TEST(COMPILE_SUITE, EveryOpOfTheDatabaseAloneEqualsEager) {
  NoGradGuard no_grad;
  int checked = 0;
  for (const testing::OpInfo& op : testing::op_db()) {
    std::vector<Tensor> xs;
    for (size_t i = 0; i < op.shapes.size(); ++i)
      xs.push_back(testing::sample(op.shapes[i], op.domain, kFloat, 10 + i).to(kDev));
    auto f = compile(op.fn);
    manual_seed(99);
    const Tensor eager = op.fn(xs);
    for (int call = 0; call < 2; ++call) {
      manual_seed(99);  // ops that draw (dropout) draw the same numbers
      const std::vector<Tensor> got = f(xs);
      ASSERT_EQ(got.size(), 1u) << op.name;
      // layer_norm's row epilogue reduces in its own order: within float32 rounding; the rest
      // is bit for bit.
      if (kFuses && op.name.find("layer_norm") != std::string::npos)
        EXPECT_TRUE(allclose(got[0], eager, 1e-5, 1e-5)) << op.name << " call " << call;
      else
        EXPECT_TRUE(same_bytes(got[0], eager)) << op.name << " call " << call;
    }
    EXPECT_EQ(f.stats().captures, 1) << op.name;
    if (op.name == "dropout") {
      EXPECT_EQ(f.stats().last_break, "manual_seed");
    }
    checked += f.stats().compiled_calls == 1;
  }
  EXPECT_GT(checked, 100);
}

// Note [Graph fuzzer]: random programs of pointwise ops over broadcast shapes, with reductions,
// views and casts between them, compiled against eager. XTEN_COMPILE_FUZZ_CASES sets how many
// (CI: 1,500 on CPU, 300 on XPU, where each case compiles a kernel module; by hand: more); a
// failure prints the seed, and XTEN_COMPILE_FUZZ_SEED=<seed> replays
// that one case.
struct FuzzProgram {
  uint64_t seed;
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    std::mt19937_64 rng(seed);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    std::vector<Tensor> pool = in;
    const int steps = 3 + static_cast<int>(rng() % 10);
    for (int s = 0; s < steps; ++s) {
      const Tensor& a = pool[pick(pool.size())];
      const Tensor& b = pool[pick(pool.size())];
      Tensor r;
      switch (rng() % 16) {
        case 0:
          r = a + b;
          break;
        case 1:
          r = a - b * 0.5;
          break;
        case 2:
          r = a * b;
          break;
        case 3:
          r = a / (b.abs() + 1);
          break;
        case 4:
          r = maximum(a, b);
          break;
        case 5:
          r = sigmoid(a);
          break;
        case 6:
          r = tanh(a);
          break;
        case 7:
          r = exp(a.clamp(-5.0, 5.0));
          break;
        case 8:
          r = relu(a) - silu(b);
          break;
        case 9:
          r = gelu(a, rng() % 2 ? "tanh" : "none");
          break;
        case 10:
          r = sqrt(a.abs()) + rsqrt(b.abs() + 1);
          break;
        case 11:
          r = a.dim() < 2 ? a.sum() : rng() % 2 ? a.sum(-1, true) : a.mean({-1}, true);
          break;  // a reduction (over the last dim: a group's row epilogue on CPU)
        case 12:
          r = a.dim() > 1 ? a.transpose(0, 1).contiguous().transpose(0, 1) * 1.5 : a * 1.5;
          break;  // views, and a strided operand
        case 13:
          r = a.to(kDouble).to(kFloat) + 1;
          break;  // casts
        case 14:
          r = softmax(a.dim() > 0 ? a : a.reshape({1}), -1);
          break;
        default:
          r = add(a, b, 2.0).neg();
          break;
      }
      pool.push_back(r);
    }
    return {pool.back(), pool[pool.size() / 2]};
  }
};

TEST(COMPILE_SUITE, GraphFuzzerCompiledEqualsEager) {
  NoGradGuard no_grad;
  const char* env_cases = std::getenv("XTEN_COMPILE_FUZZ_CASES");
  const char* env_seed = std::getenv("XTEN_COMPILE_FUZZ_SEED");
#ifdef XTEN_COMPILE_XPU
  // Each compiles a kernel module (~0.25 s on the 2-core VM; 0.6 s in CI beside another test):
  // 120 in the suite, more by hand with XTEN_COMPILE_FUZZ_CASES (docs/testing.md).
  const int default_cases = 120;
#else
  const int default_cases = 1500;
#endif
  const int cases = env_seed ? 1 : env_cases ? std::atoi(env_cases) : default_cases;
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{6, 7}, {7}}, {{2, 3, 4}, {3, 1}}, {{5}, {1}}, {{33, 40}, {33, 1}}, {{1100}, {1100}}};
  int fused = 0;
  for (int c = 0; c < cases; ++c) {
    const uint64_t seed = env_seed ? std::strtoull(env_seed, nullptr, 10) : 1000 + c;
    FuzzProgram prog{seed, shapes[seed % shapes.size()]};
    std::vector<Tensor> xs;
    for (size_t i = 0; i < prog.input_shapes.size(); ++i)
      xs.push_back(randn_on(prog.input_shapes[i], seed * 7 + i));
    auto f = compile(prog);
    const std::vector<Tensor> eager = prog(xs);
    f(xs);
    const std::vector<Tensor> got = f(xs);
    for (size_t o = 0; o < got.size(); ++o)
      ASSERT_TRUE(same_bytes(got[o], eager[o]))
          << "replay: XTEN_COMPILE_FUZZ_SEED=" << seed << " ./test_compile "
          << "--gtest_filter=*.GraphFuzzerCompiledEqualsEager\n"
          << f.graph_string();
    fused += f.stats().fused_groups > 0;
  }
  if (kFuses && cases >= 100) {
    EXPECT_GT(fused, cases / 4);
  }
}

TEST(COMPILE_SUITE, MlpAndSmallCnnEqualEager) {
  NoGradGuard no_grad;
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
  mlp->to(kDev);
  const Tensor x = randn_on({64, 784}, 11);
  for (bool freeze : {false, true}) {
    auto f = compile(mlp, CompileOptions().freeze(freeze));
    const Tensor eager = mlp(x);
    f(x);
    EXPECT_TRUE(allclose(f(x), eager, 1e-5, 1e-6)) << "freeze " << freeze;
    EXPECT_EQ(f.stats().compiled_calls, 1);
  }
  models::SmallCNN cnn(10);
  cnn->to(kDev);
  cnn->eval();
  const Tensor img = randn_on({8, 1, 28, 28}, 12);
  auto g = compile(cnn, CompileOptions().freeze(true));
  const Tensor eager = cnn(img);
  g(img);
  EXPECT_TRUE(allclose(g(img), eager, 1e-5, 1e-6));
  // The module's training flag is a guard: train() recompiles.
  cnn->train();
  manual_seed(5);
  const Tensor train_eager = cnn(img);
  manual_seed(5);
  EXPECT_TRUE(allclose(g(img), train_eager, 1e-5, 1e-6));
  EXPECT_EQ(g.stats().recompiles, 1);
}

// ResNet-18 for small images, seeded, on the test's device, in evaluation mode.
models::ResNet small_resnet18() {
  manual_seed(0);
  auto model = models::resnet18_small_input(10, 3);
  model->to(kDev);
  model->eval();
  return model;
}

TEST(COMPILE_SUITE, ResNet18EqualsEager) {
  NoGradGuard no_grad;
  auto model = small_resnet18();
  const Tensor x = randn_on({2, 3, 32, 32}, 13);
  auto f = compile(model, CompileOptions().freeze(true));
  const Tensor eager = model(x);
  f(x);
  EXPECT_TRUE(allclose(f(x), eager, 1e-4, 1e-5));
}

#ifndef XTEN_COMPILE_XPU
// ResNet-50 (bottlenecks, 1x1 convolutions, the 7x7 stem and its max pooling as steps) at a
// small input, on CPU: the XPU suite runs ResNet-18 (its kernels on PoCL would take minutes).
TEST(COMPILE_SUITE, ResNet50EqualsEager) {
  NoGradGuard no_grad;
  manual_seed(0);
  auto model = models::resnet50(10);
  model->eval();
  const Tensor x = randn_on({1, 3, 64, 64}, 14);
  auto f = compile(model, CompileOptions().freeze(true));
  const Tensor eager = model(x);
  f(x);
  EXPECT_TRUE(allclose(f(x), eager, 1e-4, 1e-5));
  if (cpu_gemm() == CpuGemm::OneDnn) {
    EXPECT_NE(f.graph_string().find("onednn max_pool 3x3 stride 2 pad 1, input blocked by conv 0"),
              std::string::npos);
  }
}
#endif

TEST(COMPILE_SUITE, FrozenBatchNormFoldsIntoTheConvolution) {
  NoGradGuard no_grad;
  manual_seed(0);
  nn::Conv2d conv(nn::Conv2dOptions(3, 8, 3).padding(1));
  nn::BatchNorm2d bn(8);
  bn->to(kDev);
  conv->to(kDev);
  // Statistics that are not the identity: a few training-mode passes.
  for (uint64_t s = 0; s < 3; ++s) bn(randn_on({4, 8, 5, 5}, 30 + s) * 2 + 1);
  bn->eval();
  auto prog = [&](const Tensor& x) { return relu(bn(conv(x))); };
  const Tensor x = randn_on({2, 3, 9, 9}, 17);
  auto f = compile(prog, CompileOptions().freeze(true));
  f(x);
  EXPECT_TRUE(allclose(f(x), prog(x), 1e-5, 1e-5));
  const std::string g = f.graph_string();
  EXPECT_EQ(g.find("mul.Tensor"), std::string::npos) << g;  // batch norm's scale: in the weight
  EXPECT_EQ(g.find("add.Tensor"), std::string::npos) << g;  // its shift: in the bias
  // Under autocast the convolution computes in 16 bits and batch norm in float32 between two
  // casts: the casts fold away too, the weight rounded once to 16 bits.
  {
    const ScalarType low = kDev.type() == kCPU ? kBFloat16 : kHalf;
    autocast::AutocastGuard ac(kDev.type(), low);
    auto f16 = compile(prog, CompileOptions().freeze(true));
    f16(x);
    const Tensor got = f16(x), want = prog(x);
    EXPECT_EQ(got.dtype(), low);
    EXPECT_TRUE(allclose(got, want, 2e-2, 2e-2));
    const std::string g16 = f16.graph_string();
    EXPECT_EQ(g16.find("mul.Tensor"), std::string::npos) << g16;
    EXPECT_EQ(g16.find("to("), g16.rfind("to(")) << g16;  // the input's cast alone
  }
  // Without freeze the statistics are read at run time: nothing folds.
  auto live = compile(prog);
  live(x);
  EXPECT_TRUE(allclose(live(x), prog(x), 1e-5, 1e-5));
  EXPECT_NE(live.graph_string().find("mul.Tensor"), std::string::npos);
}

// Convolution steps (docs/compile.md, "Convolutions"): with freeze, each CPU convolution is one
// oneDNN inference primitive that takes the residual add and relu after it, and activations
// only convolutions read stay in oneDNN's layout.
TEST(COMPILE_SUITE, ConvolutionStepsTakeAddAndReluAndKeepTheirLayout) {
  NoGradGuard no_grad;
  auto model = small_resnet18();
  const Tensor x = randn_on({2, 3, 16, 16}, 21);
  auto f = compile(model, CompileOptions().freeze(true));
  f(x);
  EXPECT_TRUE(allclose(f(x), model(x), 1e-4, 1e-5));
  const std::string g = f.graph_string();
  // CPU, where oneDNN is the library for convolutions (XTEN_CPU_GEMM=eigen runs none).
  const bool cpu = kDev.type() == kCPU, steps = cpu && cpu_gemm() == CpuGemm::OneDnn;
  EXPECT_EQ(g.find("+bias +sum +relu, input blocked by conv") != std::string::npos, steps) << g;
  EXPECT_EQ(g.find("output blocked") != std::string::npos, steps) << g;
  // The network's first convolution reads the input as it is; the last one's result goes on
  // to pooling (NCHW): neither is blocked on that side.
  EXPECT_EQ(g.find("# conv 0: onednn conv 64x3x3x3 stride 1 pad 1 +bias +relu, output blocked") !=
                std::string::npos,
            steps)
      << g;
  if (steps) {
    EXPECT_LT(f.stats().nodes_after, 30);
  }
  // A profiler shows the steps by what they took in.
  profiler::Profiler prof;
  prof.start();
  f(x);
  prof.stop();
  bool step = false;
  for (const auto& e : prof.key_averages().rows) step = step || e.name == "fused_conv2d_add_relu";
  EXPECT_EQ(step, steps);
  // A convolution whose result the program returns, and one whose input is a strided view.
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3).padding(1));
  conv->to(kDev);
  auto prog = [&](const Tensor& in) {
    const Tensor a = conv(in.transpose(2, 3));
    return std::make_tuple(relu(a), conv(relu(a).narrow(1, 0, 3)) + a);
  };
  auto h = compile(prog, CompileOptions().freeze(true));
  h(x);
  const auto [r1, r2] = h(x);
  const auto [e1, e2] = prog(x);
  EXPECT_TRUE(allclose(r1, e1, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(r2, e2, 1e-5, 1e-5));
  // Without freeze the weights are read at run time: no steps.
  auto live = compile(model);
  live(x);
  EXPECT_EQ(live.graph_string().find("# conv"), std::string::npos);
  // Under autocast bfloat16 (CPU): the steps run in bfloat16, within the autocast result's
  // distance from float32.
  if (cpu) {
    autocast::AutocastGuard ac(kCPU, kBFloat16);
    auto b = compile(model, CompileOptions().freeze(true));
    b(x);
    const Tensor got = b(x).to(kFloat), want = model(x).to(kFloat);
    // Where oneDNN takes bfloat16 convolutions (not on every CPU: then eager runs its Eigen
    // path, and the compiled graph keeps the plain conv2d nodes).
    const int64_t onednn_before = cpu_gemm_counts().onednn;
    conv2d(x.to(kBFloat16), randn_on({4, 3, 3, 3}, 22).to(kBFloat16));
    const bool onednn_bf16 = cpu_gemm_counts().onednn > onednn_before;
    const Tensor f32 = [&] {
      autocast::AutocastGuard off(kCPU, kBFloat16, false);
      return model(x);
    }();
    const double own = (want - f32).abs().max().item<double>();
    EXPECT_LE((got - want).abs().max().item<double>(), 2 * own + 1e-2);
    EXPECT_EQ(b.graph_string().find("# conv") != std::string::npos, onednn_bf16);
  }
}

// A max pooling between convolutions (ResNet's stem) is a step too when nothing reads its
// indices: it reads the convolution's blocked result and leaves its own blocked for the next.
TEST(COMPILE_SUITE, MaxPoolingBetweenConvolutionsStaysBlocked) {
  NoGradGuard no_grad;
  manual_seed(0);
  nn::Conv2d stem(nn::Conv2dOptions(3, 16, 3).padding(1)),
      next(nn::Conv2dOptions(16, 16, 3).padding(1));
  stem->to(kDev);
  next->to(kDev);
  auto prog = [&](const Tensor& x) {
    const Tensor p = max_pool2d(relu(stem(x)), {3, 3}, {2, 2}, {1, 1});
    return relu(next(p) + p);
  };
  const Tensor x = randn_on({2, 3, 15, 15}, 23);
  auto f = compile(prog, CompileOptions().freeze(true));
  f(x);
  EXPECT_TRUE(allclose(f(x), prog(x), 1e-5, 1e-5));
  const std::string g = f.graph_string();
  const bool steps = kDev.type() == kCPU && cpu_gemm() == CpuGemm::OneDnn;
  EXPECT_EQ(g.find("onednn max_pool 3x3 stride 2 pad 1, input blocked by conv 0, output blocked") !=
                std::string::npos,
            steps)
      << g;
  // Its indices returned: the pooling stays the op it was.
  auto with_indices = [&](const Tensor& in) {
    return max_pool2d_with_indices(relu(stem(in)), {3, 3}, {2, 2}, {1, 1});
  };
  auto h = compile(with_indices, CompileOptions().freeze(true));
  h(x);
  const auto [v, i] = h(x);
  const auto [ev, ei] = with_indices(x);
  EXPECT_TRUE(allclose(v, ev, 1e-5, 1e-5));
  EXPECT_EQ((i != ei).sum().item<int64_t>(), 0);
  EXPECT_EQ(h.graph_string().find("onednn max_pool"), std::string::npos) << h.graph_string();
}

// linear then relu becomes one _linear_relu (the bias and relu as the product's post-ops),
// unless something else reads the linear's result.
TEST(COMPILE_SUITE, LinearThenReluIsOneOp) {
  NoGradGuard no_grad;
  manual_seed(0);
  nn::Linear a(16, 32), b(32, 8);
  a->to(kDev);
  b->to(kDev);
  auto mlp = [&](const Tensor& x) { return b(relu(a(x))); };
  const Tensor x = randn_on({5, 16}, 24);
  auto f = compile(mlp);
  f(x);
  EXPECT_TRUE(allclose(f(x), mlp(x), 1e-5, 1e-6));
  const std::string g = f.graph_string();
  EXPECT_NE(g.find("_linear_relu("), std::string::npos) << g;
  EXPECT_EQ(g.find("= relu("), std::string::npos) << g;
  // A NaN reaching the relu stays NaN, as eager relu keeps it.
  const Tensor with_nan = x.clone();
  with_nan.narrow(0, 1, 1).fill_(NAN);
  EXPECT_EQ(isnan(f(with_nan)).sum().item<int64_t>(), isnan(mlp(with_nan)).sum().item<int64_t>());
  // The linear's result also returned: two ops.
  auto both = [&](const Tensor& in) {
    const Tensor h = a(in);
    return std::make_tuple(h, relu(h));
  };
  auto h = compile(both);
  h(x);
  const auto [h1, h2] = h(x);
  const auto [e1, e2] = both(x);
  EXPECT_TRUE(allclose(h1, e1, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(h2, e2, 1e-5, 1e-6));
  EXPECT_EQ(h.graph_string().find("_linear_relu"), std::string::npos) << h.graph_string();
}

TEST(COMPILE_SUITE, ParametersAreReadAtRunTimeUnlessFrozen) {
  NoGradGuard no_grad;
  manual_seed(0);
  nn::Linear lin(4, 3);
  lin->to(kDev);
  const Tensor x = randn_on({2, 4}, 14);
  auto live = compile(lin);
  auto frozen = compile(lin, CompileOptions().freeze(true));
  live(x);
  frozen(x);
  lin->weight.mul_(2);  // an optimizer step would do the same
  EXPECT_TRUE(same_bytes(live(x), lin(x)));
  EXPECT_EQ(live.stats().recompiles, 0);
  EXPECT_TRUE(same_bytes(frozen(x), lin(x)));  // the version guard missed: recompiled
  EXPECT_EQ(frozen.stats().recompiles, 1);
}

// A compiled forward used in an eager training loop (docs/compile.md, "A compiled forward in an
// eager training loop"): its results come back with a generated backward as their grad_fn.
TEST(COMPILE_SUITE, ACompiledForwardRunsItsGeneratedBackward) {
  manual_seed(0);
  nn::Linear lin(4, 3);
  lin->to(kDev);
  auto f = compile([lin](const Tensor& x) { return relu(lin(x)) * x.narrow(1, 0, 3); });
  const Tensor x0 = randn_on({5, 4}, 15);
  const Tensor w = randn_on({5, 3}, 16);
  // Eager reference.
  const Tensor xe = x0.clone().requires_grad_();
  (relu(lin(xe)) * xe.narrow(1, 0, 3) * w).sum().backward();
  const Tensor gw = lin->weight.grad().clone(), gb = lin->bias.grad().clone(),
               gx = xe.grad().clone();
  for (int call = 0; call < 3; ++call) {
    lin->zero_grad();
    const Tensor x = x0.clone().requires_grad_();
    const Tensor y = f(x);
    ASSERT_TRUE(y.requires_grad());
    if (call > 0) {
      EXPECT_EQ(y.grad_fn()->name(), "CompiledFunctionBackward");
    }
    (y * w).sum().backward();
    EXPECT_TRUE(allclose(lin->weight.grad(), gw, 1e-5, 1e-6)) << "call " << call;
    EXPECT_TRUE(allclose(lin->bias.grad(), gb, 1e-5, 1e-6)) << "call " << call;
    EXPECT_TRUE(allclose(x.grad(), gx, 1e-5, 1e-6)) << "call " << call;
  }
  EXPECT_EQ(f.stats().captures, 1);
  EXPECT_EQ(f.stats().compiled_calls, 2);
  EXPECT_EQ(f.stats().eager_calls, 0) << f.stats().last_eager_reason;
  EXPECT_NE(f.graph_string().find("# backward"), std::string::npos);

  // A non-leaf input: the gradient flows on into the eager history that made it.
  const Tensor a = x0.clone().requires_grad_(), ae = x0.clone().requires_grad_();
  (f(a * 2.0) * w).sum().backward();
  const Tensor xe2 = ae * 2.0;
  (relu(lin(xe2)) * xe2.narrow(1, 0, 3) * w).sum().backward();
  EXPECT_TRUE(allclose(a.grad(), ae.grad(), 1e-5, 1e-6));

  // Under no_grad the same program is another signature: a forward graph alone.
  {
    NoGradGuard no_grad;
    f(x0);
    const Tensor y = f(x0);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(allclose(y, relu(lin(x0)) * x0.narrow(1, 0, 3), 1e-5, 1e-6));
  }
  // A frozen parameter is a guard: the program recompiles, and the weight gets no gradient.
  lin->weight.requires_grad_(false);
  lin->weight.grad() = Tensor();
  lin->bias.grad() = Tensor();
  const int64_t captures = f.stats().captures;
  for (int call = 0; call < 2; ++call) (f(x0) * w).sum().backward();
  EXPECT_EQ(f.stats().captures, captures + 1);
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_TRUE(allclose(lin->bias.grad(), gb * 2.0, 1e-5, 1e-6));
  lin->weight.requires_grad_(true);
}

// Graphs over channels-last tensors (docs/memory_format.md): every result, and with a generated
// backward every gradient, has the strides the eager program gives it (an empty_like captured
// as an empty and an as_strided view of it; pointwise, reductions and pooling following their
// inputs).
TEST(COMPILE_SUITE, ChannelsLastProgramsKeepTheirLayouts) {
  constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;
  const Tensor x = randn_on({2, 3, 12, 12}, 31).contiguous(kCL);
  const Tensor w = randn_on({8, 3, 3, 3}, 32).contiguous(kCL).requires_grad_();
  auto program = [w](const Tensor& t) {
    const Tensor y = relu(conv2d(t, w, {}, {1, 1}, {1, 1}));
    const Tensor z = y * 2.0 + y.sum({1}, true);
    return std::make_tuple(z, max_pool2d(z, {2, 2}), avg_pool2d(z, {3, 3}, {2, 2}, {1, 1}),
                           z.amax({2}, true), y.clone());
  };
  auto f = compile(program);
  const auto want = program(x);
  const std::vector<Tensor> wants = {std::get<0>(want), std::get<1>(want), std::get<2>(want),
                                     std::get<3>(want), std::get<4>(want)};
  Tensor want_grad;
  {
    (std::get<1>(want).sum() + std::get<2>(want).sum()).backward();
    want_grad = w.grad().clone();
  }
  for (int call = 0; call < 3; ++call) {
    w.grad() = Tensor();
    const auto got = f(x);
    const std::vector<Tensor> gots = {std::get<0>(got), std::get<1>(got), std::get<2>(got),
                                      std::get<3>(got), std::get<4>(got)};
    for (size_t i = 0; i < gots.size(); ++i) {
      EXPECT_EQ(gots[i].strides(), wants[i].strides()) << "result " << i << ", call " << call;
      EXPECT_TRUE(allclose(gots[i], wants[i].detach(), 1e-5, 1e-6)) << "result " << i;
    }
    (std::get<1>(got).sum() + std::get<2>(got).sum()).backward();
    EXPECT_EQ(w.grad().strides(), want_grad.strides()) << "call " << call;
    EXPECT_TRUE(allclose(w.grad(), want_grad, 1e-5, 1e-6)) << "call " << call;
  }
  EXPECT_EQ(f.stats().compiled_calls, 2) << f.stats().last_eager_reason;
}

// Note [Recomputed pointwise values]: the GELU's result, which the second linear's weight
// gradient reads, is computed again in the backward from the first linear's result (saved for
// the GELU's own gradient) instead of being saved.
TEST(COMPILE_SUITE, ACompiledForwardRecomputesCheapPointwiseValuesInTheBackward) {
  manual_seed(0);
  nn::Linear l1(8, 16), l2(16, 4);
  l1->to(kDev);
  l2->to(kDev);
  auto program = [l1, l2](const Tensor& x) { return l2(gelu(l1(x)) * 2.0); };
  auto f = compile(program);
  const Tensor x = randn_on({5, 8}, 19), w = randn_on({5, 4}, 20);
  auto grads = [&] {
    std::vector<Tensor> g;
    for (const Tensor& p : {l1->weight, l1->bias, l2->weight, l2->bias})
      g.push_back(p.grad().clone());
    l1->zero_grad();
    l2->zero_grad();
    return g;
  };
  (program(x) * w).sum().backward();
  const std::vector<Tensor> want = grads();
  for (int call = 0; call < 3; ++call) {
    (f(x) * w).sum().backward();
    const std::vector<Tensor> got = grads();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(allclose(got[i], want[i], 1e-5, 1e-6)) << "call " << call << ", gradient " << i;
  }
  const std::string g = f.graph_string();
  EXPECT_NE(g.find("2 recomputed in it"), std::string::npos) << g;
  const std::string backward = g.substr(g.find("# backward"));
  EXPECT_NE(backward.find("gelu("), std::string::npos) << g;
}

TEST(COMPILE_SUITE, ACompiledForwardsBackwardChecksWhatEagerChecks) {
  Tensor w = randn_on({6}, 17).requires_grad_();
  // exp's backward reads its result, which is also the program's result.
  // sin's backward reads the parameter itself.
  auto f =
      compile([w](const Tensor& x) { return std::make_tuple(exp(x * w), x * 3.0, sin(w) * 1.0); });
  const Tensor x = randn_on({6}, 18);
  for (int call = 0; call < 3; ++call) {
    w.grad() = Tensor();
    auto [y, z, s] = f(x);
    // A result whose gradient does not flow (s) gets zeros; retain_graph keeps the saved values.
    y.sum().backward({}, /*retain_graph=*/true);
    y.sum().backward();
    EXPECT_TRUE(allclose(w.grad(), (exp(x * w) * x * 2.0).detach(), 1e-5, 1e-6)) << call;
    EXPECT_FALSE(z.requires_grad());
    if (call == 0) continue;
    // A second backward without retain_graph.
    try {
      y.sum().backward();
      ADD_FAILURE() << "a second backward ran";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("a second time"), std::string::npos) << e.what();
    }
    // The saved result changed in place before the backward.
    auto [y2, z2, s2] = f(x);
    y2.mul_(2.0);
    try {
      y2.sum().backward();
      ADD_FAILURE() << "the backward read a value changed in place";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("modified by an inplace operation"), std::string::npos)
          << e.what();
    }
    // A parameter changed in place between the forward and the backward.
    auto [y3, z3, s3] = f(x);
    const Tensor w_before = w.detach().clone();
    {
      NoGradGuard no_grad;
      w.add_(1.0);
    }
    EXPECT_THROW((y3.sum() + s3.sum()).backward(), ValueError);
    {
      NoGradGuard no_grad;
      w.copy_(w_before);
    }
    // create_graph: the generated backward makes no graph of its own.
    auto [y4, z4, s4] = f(x);
    try {
      autograd::grad({y4.sum()}, {w}, {}, std::nullopt, /*create_graph=*/true);
      ADD_FAILURE() << "create_graph ran";
    } catch (const NotImplementedError& e) {
      EXPECT_NE(std::string(e.what()).find("create_graph"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(f.stats().compiled_calls, 8);
}

// The samples of `op` on the test's device, requiring grad, and fixed weights w for the loss
// sum(op(x) * w); none when the op's result is not floating.
std::optional<std::pair<std::vector<Tensor>, Tensor>> derivative_samples(
    const testing::OpInfo& op) {
  std::vector<Tensor> xs;
  for (size_t i = 0; i < op.shapes.size(); ++i)
    xs.push_back(
        testing::sample(op.shapes[i], op.domain, kFloat, 10 + i).to(kDev).requires_grad_());
  NoGradGuard no_grad;
  manual_seed(99);
  const Tensor y = op.fn(xs);
  if (!is_floating_type(y.dtype())) return std::nullopt;
  return std::make_pair(
      xs, testing::sample(y.sizes().vec(), testing::Domain::NonZero, kFloat, 7).to(kDev));
}

// Every derivative of the op database through a compiled backward: a program that runs the op and
// the backward of sum(op(x) * w) for fixed weights w, returning the inputs' gradients, compiled
// (a training step: warm-up, capture, then the graph) against the same program run eagerly.
TEST(COMPILE_SUITE, EveryDerivativeOfTheDatabaseThroughACompiledBackwardEqualsEager) {
  int compiled = 0;
  std::vector<std::string> eager;
  for (const testing::OpInfo& op : testing::op_db()) {
    auto sample = derivative_samples(op);
    if (!sample) continue;
    std::vector<Tensor>& xs = sample->first;
    const Tensor& w = sample->second;
    auto program = [&op, &w](const std::vector<Tensor>& in) {
      nn::zero_grads(in, true);
      (op.fn(in) * w).sum().backward();
      std::vector<Tensor> grads;
      for (const Tensor& x : in)
        if (x.grad().defined()) grads.push_back(x.grad());
      return grads;
    };
    manual_seed(99);
    const std::vector<Tensor> expected = program(xs);
    auto f = compile(program);
    for (int call = 0; call < 3; ++call) {
      manual_seed(99);
      const std::vector<Tensor> got = f(xs);
      ASSERT_EQ(got.size(), expected.size()) << op.name;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_TRUE(allclose(got[i], expected[i], 1e-5, 1e-6))
            << op.name << ": the gradient of input " << i << ", call " << call;
        EXPECT_TRUE(allclose(xs[i].grad(), expected[i], 1e-5, 1e-6))
            << op.name << ": grad() of input " << i << ", call " << call;
      }
    }
    if (f.stats().compiled_calls == 1)
      ++compiled;
    else
      eager.push_back(op.name);
  }
  EXPECT_GT(compiled, 100);
  // Only the programs with a graph break run eagerly: dropout's fn reseeds, and masked_select's
  // result has a shape that depends on values. Checks of values (index bounds, class targets)
  // are nodes (Note [Checks as ops]), and no backward formula reads a value back.
  EXPECT_EQ(eager, (std::vector<std::string>{"dropout", "masked_select"}));
}

// The same through a compiled forward and its generated backward: the program is the op alone,
// and backward() runs outside the compiled call.
TEST(COMPILE_SUITE, EveryDerivativeOfTheDatabaseThroughAGeneratedBackwardEqualsEager) {
  int compiled = 0;
  std::vector<std::string> eager;
  for (const testing::OpInfo& op : testing::op_db()) {
    auto sample = derivative_samples(op);
    if (!sample) continue;
    std::vector<Tensor>& xs = sample->first;
    const Tensor& w = sample->second;
    auto grads_of = [&](const Tensor& y) {
      nn::zero_grads(xs, true);
      (y * w).sum().backward();
      std::vector<Tensor> grads;
      for (const Tensor& x : xs) grads.push_back(x.grad());
      return grads;
    };
    manual_seed(99);
    const std::vector<Tensor> expected = grads_of(op.fn(xs));
    auto f = compile([&op](const std::vector<Tensor>& in) { return op.fn(in); });
    for (int call = 0; call < 3; ++call) {
      manual_seed(99);
      const std::vector<Tensor> got = grads_of(f(xs).at(0));
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].defined(), expected[i].defined()) << op.name << ", input " << i;
        if (got[i].defined()) {
          EXPECT_TRUE(allclose(got[i], expected[i], 1e-5, 1e-6))
              << op.name << ": the gradient of input " << i << ", call " << call;
        }
      }
    }
    if (f.stats().compiled_calls == 2)
      ++compiled;
    else
      eager.push_back(op.name);
  }
  EXPECT_GT(compiled, 100);
  EXPECT_EQ(eager, (std::vector<std::string>{"dropout", "masked_select"}));
}

// Compiled training steps (docs/compile.md, "Training steps"): zero_grad, forward, loss,
// backward and the optimizer's step captured as one graph.
using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

struct TrainRun {
  std::vector<Tensor> losses;
  nn::NamedTensors params, grads, state, buffers;
  CompileStats stats;
};

// `steps` steps of a seeded MLP (or, with `cnn`, SmallCNN with batch norm and dropout) on fixed
// batches, eagerly or compiled; `before` runs before each step (changing the optimizer's options).
using BeforeStep = std::function<void(optim::Optimizer&, int)>;
// With `compile_forward`, the step runs eagerly and calls the model compiled alone (a forward
// with a generated backward: docs/compile.md, "A compiled forward in an eager training loop");
// the stats are then the compiled model's.
TrainRun train(const MakeOptimizer& make, int steps, bool compiled, bool set_to_none = true,
               bool cnn = false, const BeforeStep& before = nullptr, bool amp = false,
               bool compile_forward = false, bool resnet = false) {
  manual_seed(0);
  std::shared_ptr<nn::Module> model;
  std::function<Tensor(const Tensor&)> forward;
  std::function<CompileStats()> forward_stats;
  auto take = [&](auto m) {
    model = m.ptr();
    if (!compile_forward) {
      forward = [m](const Tensor& x) { return m(x); };
      return;
    }
    auto f = compile(m);
    forward = [f](const Tensor& x) mutable { return f(x); };
    forward_stats = [f] { return f.stats(); };
  };
  if (resnet)
    take(models::resnet18_small_input(10, 1));
  else if (cnn)
    take(models::SmallCNN(10));
  else
    take(nn::Sequential(nn::Linear(32, 64), nn::ReLU(), nn::Dropout(0.1), nn::Linear(64, 10)));
  model->to(kDev);
  model->train();
  std::unique_ptr<optim::Optimizer> opt = make(model->parameters());
  const Tensor x = resnet ? randn_on({4, 1, 28, 28}, 21)
                   : cnn  ? randn_on({8, 1, 28, 28}, 21)
                          : randn_on({16, 32}, 21);
  manual_seed(22);
  const Tensor y = randint(0, 10, {x.size(0)}).to(kDev);
  auto step = [&](const Tensor& xb, const Tensor& yb) {
    opt->zero_grad(set_to_none);
    Tensor loss;
    {
      std::optional<autocast::AutocastGuard> ac;
      if (amp) ac.emplace(kDev.type(), kDev.type() == kCPU ? kBFloat16 : kHalf);
      loss = cross_entropy(forward(xb), yb);
    }
    loss.backward();
    opt->step();
    return loss;
  };
  auto compiled_step = compile(step);
  TrainRun r;
  manual_seed(23);  // the dropout masks: the same draws in both runs
  for (int i = 0; i < steps; ++i) {
    if (before) before(*opt, i);
    const Tensor xb = x * (1.0 + 0.01 * i);
    r.losses.push_back(compiled ? compiled_step(xb, y) : step(xb, y));
  }
  r.params = model->named_parameters();
  r.buffers = model->named_buffers();
  for (const auto& [name, p] : r.params) r.grads.emplace_back(name, p.grad());
  r.state = opt->state_dict();
  r.stats = compile_forward ? forward_stats() : compiled_step.stats();
  return r;
}

void expect_same_training(const TrainRun& eager, const TrainRun& compiled,
                          const std::string& what) {
  ASSERT_EQ(eager.losses.size(), compiled.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_TRUE(allclose(compiled.losses[i], eager.losses[i].detach(), 1e-5, 1e-7))
        << what << ": the loss of step " << i;
  auto same = [&](const nn::NamedTensors& a, const nn::NamedTensors& b, const char* kind) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].first, b[i].first);
      ASSERT_EQ(a[i].second.defined(), b[i].second.defined()) << what << ": " << a[i].first;
      if (a[i].second.defined()) {
        EXPECT_TRUE(allclose(b[i].second, a[i].second, 1e-5, 1e-7))
            << what << ": " << kind << " " << a[i].first;
      }
    }
  };
  same(eager.params, compiled.params, "parameter");
  same(eager.grads, compiled.grads, "gradient");
  same(eager.state, compiled.state, "optimizer state");
  same(eager.buffers, compiled.buffers, "buffer");
}

TEST(COMPILE_SUITE, TrainingStepsEqualEagerStepsForEveryOptimizer) {
  const std::vector<std::pair<std::string, MakeOptimizer>> optimizers = {
      {"SGD momentum",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9));
       }},
      {"SGD Nesterov, weight decay",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::SGD>(
             ps, optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3));
       }},
      {"Adam",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::Adam>(ps, optim::AdamOptions(1e-3));
       }},
      {"AdamW amsgrad",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::AdamW>(
             ps, optim::AdamOptions(1e-3).weight_decay(1e-2).amsgrad(true));
       }},
      {"RMSprop centered, momentum",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::RMSprop>(
             ps, optim::RMSpropOptions(1e-3).centered(true).momentum(0.5));
       }},
  };
  const int steps = 100;
  for (const auto& [name, make] : optimizers) {
    const TrainRun eager = train(make, steps, false);
    const TrainRun compiled = train(make, steps, true);
    expect_same_training(eager, compiled, name);
    // The first call captures a warm-up (the optimizer makes its state), the second the graph
    // every later call runs.
    EXPECT_EQ(compiled.stats.captures, 2) << name;
    EXPECT_EQ(compiled.stats.recompiles, 0) << name;
    EXPECT_EQ(compiled.stats.compiled_calls, steps - 2) << name;
    EXPECT_EQ(compiled.stats.eager_calls, 0) << name << ": " << compiled.stats.last_eager_reason;
  }
}

// The nn + optim loops of the training-step tests with only the model compiled: the step (loss,
// backward, optimizer) runs eagerly around the compiled forward and its generated backward.
TEST(COMPILE_SUITE, ACompiledModelInAnEagerTrainingLoopEqualsEager) {
  const std::vector<std::pair<std::string, MakeOptimizer>> optimizers = {
      {"SGD momentum",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9));
       }},
      {"AdamW",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::AdamW>(ps, optim::AdamOptions(1e-3).weight_decay(1e-2));
       }},
  };
  const int steps = 100;
  for (const auto& [name, make] : optimizers) {
    const TrainRun eager = train(make, steps, false);
    const TrainRun compiled = train(make, steps, false, true, false, nullptr, false, true);
    expect_same_training(eager, compiled, "MLP, " + name);
    EXPECT_EQ(compiled.stats.captures, 1) << name;
    EXPECT_EQ(compiled.stats.compiled_calls, steps - 1) << name;
  }
  // SmallCNN: batch norm's running statistics are updated by the forward graph, once per call.
  const TrainRun eager = train(optimizers[0].second, 10, false, true, true);
  const TrainRun compiled =
      train(optimizers[0].second, 10, false, true, true, nullptr, false, true);
  expect_same_training(eager, compiled, "SmallCNN");
  EXPECT_EQ(compiled.stats.compiled_calls, 9) << compiled.stats.last_eager_reason;
  // Under autocast.
  const TrainRun eager_amp = train(optimizers[1].second, 20, false, true, false, nullptr, true);
  const TrainRun compiled_amp =
      train(optimizers[1].second, 20, false, true, false, nullptr, true, true);
  expect_same_training(eager_amp, compiled_amp, "MLP under autocast");
  EXPECT_EQ(compiled_amp.stats.compiled_calls, 19);
}

#ifndef XTEN_COMPILE_XPU
// ResNet-18 (small input) trained both ways, on CPU: the XPU's kernels on PoCL would take
// minutes. Batch norm's running statistics are compared too.
TEST(COMPILE_SUITE, ResNet18TrainingCompiledBothWaysEqualsEager) {
  const MakeOptimizer sgd = [](std::vector<Tensor> ps) {
    return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9));
  };
  const int steps = 6;
  const TrainRun eager = train(sgd, steps, false, true, false, nullptr, false, false, true);
  const TrainRun step = train(sgd, steps, true, true, false, nullptr, false, false, true);
  const TrainRun model = train(sgd, steps, false, true, false, nullptr, false, true, true);
  expect_same_training(eager, step, "ResNet-18, the step compiled");
  expect_same_training(eager, model, "ResNet-18, the model compiled");
  EXPECT_EQ(step.stats.compiled_calls, steps - 2);
  EXPECT_EQ(model.stats.compiled_calls, steps - 1);
}
#endif

TEST(COMPILE_SUITE, TrainingStepsZeroingGradientsInPlaceAndSmallCnnEqualEager) {
  const MakeOptimizer sgd = [](std::vector<Tensor> ps) {
    return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9));
  };
  expect_same_training(train(sgd, 30, false, false), train(sgd, 30, true, false),
                       "zero_grad(set_to_none=false)");
  const TrainRun eager = train(sgd, 10, false, true, true);
  const TrainRun compiled = train(sgd, 10, true, true, true);
  expect_same_training(eager, compiled, "SmallCNN");
  EXPECT_EQ(compiled.stats.compiled_calls, 8);
}

TEST(COMPILE_SUITE, TrainingStepsUnderAutocastEqualEager) {
  // bfloat16 on CPU, float16 on the XPU (no GradScaler: its inf check is a graph break); the
  // casts of the weights are captured as the ops they are, once per step.
  const MakeOptimizer adamw = [](std::vector<Tensor> ps) {
    return std::make_unique<optim::AdamW>(ps, optim::AdamOptions(1e-3).weight_decay(1e-2));
  };
  const TrainRun eager = train(adamw, 30, false, true, false, nullptr, true);
  const TrainRun compiled = train(adamw, 30, true, true, false, nullptr, true);
  expect_same_training(eager, compiled, "MLP under autocast");
  EXPECT_EQ(compiled.stats.compiled_calls, 28);
  const TrainRun eager_cnn = train(adamw, 6, false, true, true, nullptr, true);
  const TrainRun compiled_cnn = train(adamw, 6, true, true, true, nullptr, true);
  expect_same_training(eager_cnn, compiled_cnn, "SmallCNN under autocast");
  EXPECT_EQ(compiled_cnn.stats.compiled_calls, 4);
}

// A training step with GradScaler compiled whole (docs/compile.md, "Training steps"): the flag
// goes from the unscale kernel to the optimizer's kernels and the scale update on the device, so
// no value comes back to the host. 60 steps of the MLP (under autocast with `amp`); the inputs of
// steps 1 (the captured call), 7 and 30 are made infinite, so their gradients are not finite and
// the step is skipped in both runs. The scale starts at 2^10 and grows after 8 good steps.
struct ScaledRun {
  TrainRun run;
  nn::NamedTensors scaler;
};
ScaledRun train_scaled(const MakeOptimizer& make, bool compiled, bool amp) {
  manual_seed(0);
  auto model = nn::Sequential(nn::Linear(32, 64), nn::ReLU(), nn::Dropout(0.1), nn::Linear(64, 10));
  model->to(kDev);
  model->train();
  std::unique_ptr<optim::Optimizer> opt = make(model->parameters());
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale(1024).growth_interval(8));
  const Tensor x = randn_on({16, 32}, 21);
  manual_seed(22);
  const Tensor y = randint(0, 10, {16}).to(kDev);
  auto step = [&](const Tensor& xb, const Tensor& yb) {
    opt->zero_grad();
    Tensor loss;
    {
      std::optional<autocast::AutocastGuard> ac;
      if (amp) ac.emplace(kDev.type(), kDev.type() == kCPU ? kBFloat16 : kHalf);
      loss = cross_entropy(model(xb), yb);
    }
    scaler.scale(loss).backward();
    scaler.step(*opt);
    scaler.update();
    return loss;
  };
  auto compiled_step = compile(step);
  ScaledRun r;
  manual_seed(23);
  for (int i = 0; i < 60; ++i) {
    const bool bad = i == 1 || i == 7 || i == 30;
    const Tensor xb = x * (bad ? std::numeric_limits<double>::infinity() : 1.0 + 0.01 * i);
    r.run.losses.push_back(compiled ? compiled_step(xb, y) : step(xb, y));
  }
  r.run.params = model->named_parameters();
  for (const auto& [name, p] : r.run.params) r.run.grads.emplace_back(name, p.grad());
  r.run.state = opt->state_dict();
  r.run.stats = compiled_step.stats();
  r.scaler = scaler.state_dict();
  return r;
}

TEST(COMPILE_SUITE, TrainingStepsWithGradScalerCompileWholeAndSkipInfSteps) {
  const std::vector<std::tuple<std::string, MakeOptimizer, bool>> cases = {
      {"SGD momentum",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9));
       },
       false},
      {"AdamW under autocast",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::AdamW>(ps, optim::AdamOptions(1e-3).weight_decay(1e-2));
       },
       true},
      {"RMSprop",
       [](std::vector<Tensor> ps) {
         return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(1e-3).momentum(0.5));
       },
       false},
  };
  for (const auto& [name, make, amp] : cases) {
    ScaledRun eager = train_scaled(make, false, amp);
    ScaledRun compiled = train_scaled(make, true, amp);
    // The skipped steps' losses are NaN in both; the others as in expect_same_training.
    for (size_t i = 0; i < eager.run.losses.size(); ++i) {
      if (i != 1 && i != 7 && i != 30) continue;
      Tensor e = eager.run.losses[i].detach(), c = compiled.run.losses[i];
      EXPECT_TRUE(std::isnan(e.item<float>()) && std::isnan(c.item<float>())) << name << i;
      e.fill_(0);
      c.fill_(0);
    }
    expect_same_training(eager.run, compiled.run, name + " with GradScaler");
    // The scale: 1024, halved at steps 1, 7 and 30, doubled after steps 15, 23, 38, 46 and 54
    // (the eighth good step in a row): 1024 / 8 * 32. The growth count: 5 good steps since.
    ASSERT_EQ(eager.scaler.size(), compiled.scaler.size());
    for (size_t k = 0; k < eager.scaler.size(); ++k)
      EXPECT_EQ(compiled.scaler[k].second.item<double>(), eager.scaler[k].second.item<double>())
          << name << ": " << eager.scaler[k].first;
    EXPECT_EQ(eager.scaler[0].first, "scale");
    EXPECT_EQ(eager.scaler[0].second.item<double>(), 4096.0) << name;
    EXPECT_EQ(eager.scaler[4].first, "_growth_tracker");
    EXPECT_EQ(eager.scaler[4].second.item<double>(), 5.0) << name;
    EXPECT_EQ(compiled.run.stats.captures, 2) << name;
    EXPECT_EQ(compiled.run.stats.compiled_calls, 58) << name;
    EXPECT_EQ(compiled.run.stats.eager_calls, 0)
        << name << ": " << compiled.run.stats.last_eager_reason;
  }
}

// examples/gpt's step: a small GPT (attention, layer norm, GELU, tied embeddings, dropout),
// AdamW under a cosine schedule (the learning rate changes every step), gradients clipped by
// get_total_norm + clip_grads_with_norm_ (no host read): one graph, equal to eager. Without
// biases: the key projection's bias has a zero gradient in exact arithmetic (softmax ignores a
// constant per row), so Adam turns its rounding noise into steps of the learning rate's size,
// which no tolerance can compare.
// With `compile_forward`, the model's loss is compiled alone (a generated backward) and the step
// runs eagerly around it.
TrainRun train_gpt(int steps, bool compiled, bool compile_forward = false) {
  manual_seed(0);
  models::GPT model(
      models::GPTConfig(40).block_size(16).n_layer(2).n_head(2).n_embd(32).dropout(0.1).bias(
          false));
  model->to(kDev);
  model->train();
  const std::vector<Tensor> params = model->parameters();
  optim::AdamW opt(params, optim::AdamOptions(3e-3).weight_decay(0.1));
  optim::CosineAnnealingLR sched(opt, steps);
  manual_seed(1);
  const Tensor idx = randint(0, 40, {4, 16}).to(kDev), targets = randint(0, 40, {4, 16}).to(kDev);
  auto compiled_loss = compile([&](const Tensor& x, const Tensor& y) { return model->loss(x, y); });
  auto step = [&](const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = compile_forward ? compiled_loss(x, y) : model->loss(x, y);
    loss.backward();
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(p.grad());
    nn::utils::clip_grads_with_norm_(params, 0.5, nn::utils::get_total_norm(grads));
    opt.step();
    return loss;
  };
  auto compiled_step = compile(step);
  TrainRun r;
  manual_seed(2);  // the dropout masks: the same draws in both runs
  for (int i = 0; i < steps; ++i) {
    r.losses.push_back(compiled ? compiled_step(idx, targets) : step(idx, targets));
    sched.step();
  }
  r.params = model->named_parameters();
  r.buffers = model->named_buffers();
  for (const auto& [name, p] : r.params) r.grads.emplace_back(name, p.grad());
  r.state = opt.state_dict();
  r.stats = compile_forward ? compiled_loss.stats() : compiled_step.stats();
  return r;
}

TEST(COMPILE_SUITE, AGptCompiledAloneInAnEagerLoopEqualsEager) {
  const TrainRun eager = train_gpt(12, false);
  const TrainRun compiled = train_gpt(12, false, true);
  expect_same_training(eager, compiled, "GPT, the loss compiled alone");
  EXPECT_EQ(compiled.stats.compiled_calls, 11) << compiled.stats.last_eager_reason;
}

TEST(COMPILE_SUITE, AGptTrainingStepWithClippingEqualsEager) {
  const TrainRun eager = train_gpt(20, false);
  const TrainRun compiled = train_gpt(20, true);
  expect_same_training(eager, compiled, "GPT");
  EXPECT_EQ(compiled.stats.captures, 2);
  EXPECT_EQ(compiled.stats.recompiles, 0);
  EXPECT_EQ(compiled.stats.compiled_calls, 18);
  EXPECT_EQ(compiled.stats.eager_calls, 0) << compiled.stats.last_eager_reason;
}

TEST(COMPILE_SUITE, TheGraphReadsTheLearningRateAndOtherOptionsRecompile) {
  const MakeOptimizer adam = [](std::vector<Tensor> ps) {
    return std::make_unique<optim::Adam>(ps, optim::AdamOptions(1e-2));
  };
  // A schedule that changes lr every step: the lr is bound, read before each run.
  const BeforeStep schedule = [](optim::Optimizer& o, int i) { o.set_lr(0, 1e-2 / (1 + i)); };
  const TrainRun eager = train(adam, 20, false, true, false, schedule);
  const TrainRun compiled = train(adam, 20, true, true, false, schedule);
  expect_same_training(eager, compiled, "lr changed every step");
  EXPECT_EQ(compiled.stats.recompiles, 0);
  EXPECT_EQ(compiled.stats.compiled_calls, 18);
  // Another option (betas) is a guarded constant: a change recompiles (a warm-up, a capture).
  const BeforeStep betas = [](optim::Optimizer& o, int i) {
    if (i == 10) dynamic_cast<optim::Adam&>(o).param_groups()[0].options.betas({0.8, 0.99});
  };
  const TrainRun eager_b = train(adam, 20, false, true, false, betas);
  const TrainRun compiled_b = train(adam, 20, true, true, false, betas);
  expect_same_training(eager_b, compiled_b, "betas changed at step 10");
  EXPECT_EQ(compiled_b.stats.recompiles, 1);
  EXPECT_EQ(compiled_b.stats.captures, 4);
  EXPECT_EQ(compiled_b.stats.compiled_calls, 16);
}

TEST(COMPILE_SUITE, ABoundArgumentOfANodeInAFusedGroupBecomesAGuard) {
  // layer_norm ends a fused group, whose program has eps built in: the binding cannot be set on a
  // node there, so it becomes a guard on the value (a change recompiles).
  NoGradGuard no_grad;
  double eps = 1e-5;
  auto f = compile([&](const Tensor& x) {
    compiler::bind_float_argument("xten::layer_norm", "eps", [&] { return eps; });
    return layer_norm(x * sigmoid(x), {x.size(-1)}, std::nullopt, std::nullopt, eps);
  });
  const Tensor x = randn_on({4, 8}, 3);
  f(x);
  f(x);
  EXPECT_EQ(f.stats().compiled_calls, 1);
  eps = 0.5;
  EXPECT_TRUE(
      allclose(f(x), layer_norm(x * sigmoid(x), {8}, std::nullopt, std::nullopt, 0.5), 1e-5, 1e-6));
  EXPECT_EQ(f.stats().recompiles, 1);
  EXPECT_THROW_MSG(compile([](const Tensor& x) {
                     compiler::bind_float_argument("xten::relu", "eps", [] { return 1.0; });
                     return relu(x);
                   })(x),
                   ValueError, "'xten::relu' has no float argument 'eps' to bind");
}

// The training step these tests compile: zero_grad, cross entropy of `forward`, backward, step.
template <class Forward>
auto training_step(Forward forward, optim::Optimizer& opt) {
  return [forward, &opt](const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss = cross_entropy(forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
}

TEST(COMPILE_SUITE, ACompiledTrainingStepChecksItsTargetsOnEveryRun) {
  // The bounds check of the class targets is a node of the graph (Note [Checks as ops]), not a
  // graph break: a bad target in a later call raises as the eager step would.
  manual_seed(0);
  nn::Linear lin(6, 4);
  lin->to(kDev);
  optim::SGD opt(lin->parameters(), optim::SGDOptions(0.1));
  auto step = compile(training_step(lin, opt));
  const Tensor x = randn_on({3, 6}, 41);
  const Tensor good = tensor(std::vector<int64_t>{0, 3, 1}).to(kDev),
               bad = tensor(std::vector<int64_t>{0, 4, 1}).to(kDev);
  for (int i = 0; i < 3; ++i) step(x, good);
  EXPECT_EQ(step.stats().compiled_calls, 1);
  EXPECT_EQ(step.stats().graph_breaks, 0);
  EXPECT_THROW_MSG(step(x, bad), IndexError, "target 4 is out of bounds for 4 classes");
}

TEST(COMPILE_SUITE, AResumedCompiledRunEqualsAnUninterruptedOne) {
  auto run = [](int first, int second) {
    manual_seed(0);
    nn::Sequential a(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 3));
    a->to(kDev);
    auto opt = std::make_unique<optim::Adam>(a->parameters(), optim::AdamOptions(1e-2));
    const Tensor x = randn_on({4, 8}, 31);
    const Tensor y = randint(0, 3, {4}).to(kDev);
    auto steps = [&](nn::Sequential& m, optim::Optimizer& o, int n) {
      auto step = compile(training_step(m, o));
      for (int i = 0; i < n; ++i) step(x, y);
    };
    steps(a, *opt, first);
    if (second == 0) return a->state_dict();
    // A checkpoint (in memory, as save/load would hand it over), then a new model and optimizer.
    const nn::NamedTensors model_state = a->state_dict(), opt_state = opt->state_dict();
    manual_seed(1);
    nn::Sequential b(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 3));
    b->to(kDev);
    b->load_state_dict(model_state);
    optim::Adam opt_b(b->parameters(), optim::AdamOptions(1e-2));
    opt_b.load_state_dict(opt_state);
    steps(b, opt_b, second);
    return b->state_dict();
  };
  const nn::NamedTensors whole = run(20, 0), resumed = run(10, 10);
  ASSERT_EQ(whole.size(), resumed.size());
  for (size_t i = 0; i < whole.size(); ++i)
    EXPECT_TRUE(allclose(resumed[i].second, whole[i].second, 1e-5, 1e-7)) << whole[i].first;
}

TEST(COMPILE_SUITE, InPlaceOpsOnInputsHappenEveryCall) {
  NoGradGuard no_grad;
  auto f = compile([](Tensor x) {
    x.mul_(2);
    return x + 1;
  });
  Tensor x = ones({3}, TensorOptions(kFloat)).to(kDev);
  f(x);
  const Tensor y = f(x);
  EXPECT_TRUE(same_bytes(x, full({3}, 4.0, TensorOptions(kFloat)).to(kDev)));
  EXPECT_TRUE(same_bytes(y, full({3}, 5.0, TensorOptions(kFloat)).to(kDev)));
}

TEST(COMPILE_SUITE, CommonSubexpressionsAndDeadCodeAreRemoved) {
  NoGradGuard no_grad;
  auto f = compile([](const Tensor& x) {
    Tensor unused = x.sum();  // dead
    return exp(x) + exp(x);   // one exp
  });
  const Tensor x = randn_on({10}, 16);
  f(x);
  EXPECT_TRUE(same_bytes(f(x), exp(x) + exp(x)));
  const std::string g = f.graph_string();
  EXPECT_EQ(g.find("sum"), std::string::npos) << g;
  EXPECT_NE(g.find("exp("), std::string::npos) << g;
  EXPECT_EQ(g.find("exp("), g.rfind("exp(")) << g;
}

TEST(COMPILE_SUITE, ReduceOverheadReusesBuffersAndStaysCorrect) {
  NoGradGuard no_grad;
  auto f = compile([](const Tensor& x) { return (sigmoid(x) * x + 1).sum(1); },
                   CompileOptions().mode("reduce-overhead"));
  for (uint64_t s = 0; s < 4; ++s) {
    const Tensor x = randn_on({16, 32}, 20 + s % 2);
    EXPECT_TRUE(same_bytes(f(x), (sigmoid(x) * x + 1).sum(1)));
  }
}

TEST(COMPILE_SUITE, DebugDirGetsTheGraphsAndPrograms) {
  NoGradGuard no_grad;
  const auto dir = std::filesystem::temp_directory_path() / "xten_compile_debug_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto f = compile(chain, CompileOptions().debug_dir(dir.string()));
  f(randn_on({4, 8}, 1), randn_on({8}, 2));
  auto read = [&](const char* name) {
    std::ifstream in(dir / name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  EXPECT_NE(read("graph_0_captured.txt").find("sigmoid("), std::string::npos);
  EXPECT_NE(read("graph_0_optimized.txt").find("return"), std::string::npos);
  if (kFuses) {
    EXPECT_NE(read("graph_0_fused.txt").find("= sigmoid(r0)"), std::string::npos);
  }
  // The generated source, where there is some (the XPU's kernels).
  const std::string source = read("graph_0_kernels.cl");
  if (kDev.type() == kXPU)
    EXPECT_NE(source.find("// fused_sigmoid_mul_add_layer_norm\nKERNEL"), std::string::npos)
        << source;
  else
    EXPECT_EQ(source, "");
  std::filesystem::remove_all(dir);
}

TEST(COMPILE_SUITE, ProfilerShowsFusedGroupsByName) {
  NoGradGuard no_grad;
  auto f = compile(chain);
  const Tensor x = randn_on({4, 8}, 1), b = randn_on({8}, 2);
  f(x, b);
  profiler::Profiler prof;
  prof.start();
  f(x, b);
  prof.stop();
  bool row = false, kernel = false;
  for (const auto& e : prof.key_averages().rows)
    row = row || e.name == "fused_sigmoid_mul_add_layer_norm";
  for (const auto& e : prof.device_events())
    kernel = kernel || (e.kind == "kernel" && e.name == "fused_sigmoid_mul_add_layer_norm");
  EXPECT_TRUE(row);
  EXPECT_EQ(kernel, kDev.type() == kXPU);  // the generated kernel, under the group's name
}

#ifdef XTEN_COMPILE_XPU
// Sets an environment variable for a scope (and puts back what was there).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A program no other test compiles (its kernel source is its own), run compiled; returns what
// the compiler printed on stderr.
std::string compile_fresh_program(float k, Tensor* got, Tensor* want) {
  auto prog = [k](const Tensor& x) { return layer_norm(tanh(x) * k + x, {x.size(-1)}); };
  const Tensor x = randn_on({16, 300}, 5);
  auto f = compile(prog);
  ::testing::internal::CaptureStderr();
  f(x);
  *got = f(x);
  const std::string err = ::testing::internal::GetCapturedStderr();
  *want = prog(x);
  EXPECT_EQ(f.stats().fused_groups, 1);
  EXPECT_EQ(f.stats().compiled_calls, 1);
  return err;
}

TEST(COMPILE_SUITE, BrokenOrMissingCompilerWarnsAndRunsOpByOp) {
  NoGradGuard no_grad;
  const auto dir = std::filesystem::temp_directory_path() / "xten_compile_broken_cc";
  std::filesystem::remove_all(dir);
  const ScopedEnv cache("XTEN_COMPILE_CACHE_DIR", dir.string());
  Tensor got, want;
  {
    const ScopedEnv cc("XTEN_COMPILE_CLANG", "/bin/false");
    const std::string err = compile_fresh_program(1.25f, &got, &want);
    EXPECT_NE(err.find("could not be built (false exited with status 1)"), std::string::npos)
        << err;
    EXPECT_TRUE(same_bytes(got, want));  // op by op: the eager kernels themselves
  }
  {
    const ScopedEnv cc("XTEN_COMPILE_CLANG", "/nonexistent/clang-15");
    const std::string err = compile_fresh_program(1.5f, &got, &want);
    EXPECT_NE(err.find("cannot run /nonexistent/clang-15"), std::string::npos) << err;
    EXPECT_TRUE(same_bytes(got, want));
  }
  EXPECT_FALSE(std::filesystem::exists(dir) && !std::filesystem::is_empty(dir));
  std::filesystem::remove_all(dir);
}

TEST(COMPILE_SUITE, KernelCacheIsReusedAndACorruptEntryIsRebuilt) {
  NoGradGuard no_grad;
  const auto tmp = std::filesystem::temp_directory_path() / "xten_compile_cache_test";
  const auto dir = tmp / "cache";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  // The compiler through a script that counts its runs.
  const auto counter = tmp / "runs.txt", script = tmp / "clang.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\necho run >> " << counter.string() << "\nexec clang-15 \"$@\"\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const ScopedEnv cache("XTEN_COMPILE_CACHE_DIR", dir.string());
  const ScopedEnv cc("XTEN_COMPILE_CLANG", script.string());
  auto runs = [&] {
    std::ifstream f(counter);
    std::string line;
    int n = 0;
    while (std::getline(f, line)) ++n;
    return n;
  };
  Tensor got, want;
  EXPECT_EQ(compile_fresh_program(1.75f, &got, &want), "");
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5));
  EXPECT_EQ(runs(), 1);
  std::vector<std::filesystem::path> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 1u);
  const auto size = std::filesystem::file_size(entries[0]);
  // A second compile of the same program (as a new process would) runs no compiler.
  EXPECT_EQ(compile_fresh_program(1.75f, &got, &want), "");
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5));
  EXPECT_EQ(runs(), 1);
  {
    // Flip a byte in the middle of the entry: reported, removed, compiled again.
    std::fstream f(entries[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    const char c = static_cast<char>(f.peek());
    f.put(static_cast<char>(c ^ 0x5a));
  }
  const std::string err = compile_fresh_program(1.75f, &got, &want);
  EXPECT_NE(err.find("is corrupt (checksum mismatch)"), std::string::npos) << err;
  EXPECT_EQ(err.find("could not be built"), std::string::npos) << err;
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5));
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(std::filesystem::file_size(entries[0]), size);  // written again, whole
  // A truncated entry likewise.
  std::filesystem::resize_file(entries[0], size / 3);
  EXPECT_NE(compile_fresh_program(1.75f, &got, &want).find("is corrupt"), std::string::npos);
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-5));
  EXPECT_EQ(runs(), 3);
  std::filesystem::remove_all(tmp);
}
#endif

}  // namespace
}  // namespace xten
