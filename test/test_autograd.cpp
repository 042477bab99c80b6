// Autograd on the CPU: every op of the op database gradchecked in float64 (contiguous and
// non-contiguous inputs; broadcast entries in the database), second derivatives, the API and
// its errors, views and in-place, the registry of derivatives, and training by hand.
#include <thread>

#include "autograd_training.h"
#include "grad_edges.h"
#include "op_db.h"
#include "test_util.h"

#include <xten/autograd/autograd_meta.h>
#include <xten/autograd/gradcheck.h>

namespace xten {
namespace {

using testing::allclose;
using testing::Domain;
using testing::op_db;
using testing::OpInfo;

std::vector<Tensor> make_inputs(const OpInfo& op, bool contiguous, uint64_t seed = 1) {
  std::vector<Tensor> in;
  for (size_t i = 0; i < op.shapes.size(); ++i) {
    std::vector<int64_t> shape = op.shapes[i];
    Tensor t;
    if (contiguous || shape.empty()) {
      t = testing::sample(shape, op.domain, kDouble, seed + i);
    } else {
      // Every other element of a tensor twice as long in the last dim: strided, not contiguous.
      shape.back() *= 2;
      t = testing::sample(shape, op.domain, kDouble, seed + i).slice(-1, 0, std::nullopt, 2);
    }
    in.push_back(t.requires_grad_());
  }
  return in;
}

class OpGrad : public ::testing::TestWithParam<OpInfo> {};

TEST_P(OpGrad, Gradcheck) {
  const OpInfo& op = GetParam();
  for (bool contiguous : {true, false}) {
    SCOPED_TRACE(contiguous ? "contiguous" : "non-contiguous");
    const std::vector<Tensor> in = make_inputs(op, contiguous);
    if (!contiguous) {
      ASSERT_FALSE(in[0].is_contiguous());
    }
    try {
      autograd::gradcheck(op.fn, in);
    } catch (const Error& e) {
      ADD_FAILURE() << op.name << ": " << e.what();
    }
  }
}

class OpGradGrad : public ::testing::TestWithParam<OpInfo> {};

std::vector<OpInfo> second_order_ops() {
  std::vector<OpInfo> r;
  for (const OpInfo& op : op_db())
    if (op.second_order) r.push_back(op);
  return r;
}

TEST_P(OpGradGrad, Gradgradcheck) {
  const OpInfo& op = GetParam();
  const std::vector<Tensor> in = make_inputs(op, true, 11);
  try {
    autograd::gradgradcheck(op.fn, in);
  } catch (const Error& e) {
    ADD_FAILURE() << op.name << ": " << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(OpDb, OpGrad, ::testing::ValuesIn(op_db()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(OpDb, OpGradGrad, ::testing::ValuesIn(second_order_ops()),
                         [](const auto& info) { return info.param.name; });

TEST(AutogradRegistry, EveryOpIsDifferentiableOrDeclaredNot) {
  // Each op's AutogradCPU entry is a derivative (or a declared non-differentiable op) on the
  // Autograd key, or its CompositeImplicit decomposition: never the fallback that raises.
  std::vector<std::string> missing;
  for (const std::string& name : Dispatcher::singleton().op_names()) {
    if (name.rfind("xten::", 0) != 0) continue;
    const std::string table = dump_dispatch_table(name);
    const bool ok = table.find("AutogradCPU  Autograd kernel") != std::string::npos ||
                    table.find("AutogradCPU  CompositeImplicit kernel") != std::string::npos;
    if (!ok) missing.push_back(name);
  }
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

TEST(AutogradRegistry, AnOpWithoutADerivativeRaisesAtBackward) {
  Library def(Library::Kind::Def, "test", std::nullopt, __FILE__, __LINE__);
  def.def("twice(Tensor self) -> Tensor");
  Library cpu(Library::Kind::Impl, "test", DispatchKey::CPU, __FILE__, __LINE__);
  cpu.impl("twice", [](const Tensor& t) -> Tensor {
    ExcludeDispatchKeyGuard g(kAutogradKeys);
    return t * 2;
  });
  const auto op = Dispatcher::singleton().find("test::twice").typed<Tensor(const Tensor&)>();
  Tensor x = ones({2}).requires_grad_();
  Tensor y = op.call(x);
  ASSERT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "TwiceBackward");
  EXPECT_THROW_MSG(y.sum().backward(), NotImplementedError,
                   "the derivative of 'twice' is not implemented");
  EXPECT_FALSE(op.call(ones({2})).requires_grad());
}

// A leaf's first gradient is kept without a copy when nothing else can see it, also where it
// is a view (a transposed weight's gradient is computed in the weight's layout); a gradient the
// caller can see is copied.
TEST(AutogradApi, AGradientNothingElseSeesIsKeptAndOneTheCallerHoldsIsCopied) {
  manual_seed(5);
  const Tensor w = randn({16, 24}).requires_grad_(), x = randn({8, 24});
  const Tensor loss = linear(x, w).sum();
  profiler::Profiler prof{profiler::ProfilerOptions()};
  prof.start();
  loss.backward();
  prof.stop();
  int accumulations = 0;
  for (const auto& acc : prof.events()) {
    if (acc.name != "AccumulateGrad") continue;
    ++accumulations;
    for (const auto& e : prof.events())
      EXPECT_FALSE(e.name == "xten::clone" && e.thread == acc.thread &&
                   e.start_ns >= acc.start_ns && e.end_ns <= acc.end_ns)
          << "AccumulateGrad copied the gradient";
  }
  EXPECT_EQ(accumulations, 1);
  const Tensor expect = x.sum({0}, true).expand({16, 24});
  EXPECT_TRUE(allclose(w.grad(), expect, 1e-5, 1e-5));
  EXPECT_TRUE(w.grad().is_contiguous());
  EXPECT_EQ(w.grad().impl()->view_base(), nullptr);
  linear(x, w).sum().backward();  // accumulates into it
  EXPECT_TRUE(allclose(w.grad(), expect * 2, 1e-5, 1e-5));

  const Tensor a = randn({5, 3}).requires_grad_();
  Tensor held = randn({3, 5});
  (a * 1).backward(held.t());  // the gradient is a view of the caller's tensor
  const Tensor before = held.t().clone();
  held.fill_(7);
  EXPECT_TRUE(allclose(a.grad(), before, 0, 0));
}

TEST(AutogradApi, LeavesGradAndAccumulation) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  EXPECT_TRUE(a.requires_grad());
  EXPECT_TRUE(a.is_leaf());
  EXPECT_EQ(a.grad_fn(), nullptr);
  EXPECT_FALSE(a.grad().defined());
  Tensor y = (a * a).sum();
  EXPECT_FALSE(y.is_leaf());
  EXPECT_EQ(y.grad_fn()->name(), "SumBackward");
  EXPECT_EQ((a * a).grad_fn()->name(), "MulBackward");
  y.backward();
  EXPECT_TRUE(allclose(a.grad(), tensor({2.0f, 4.0f, 6.0f})));
  (a * 3).sum().backward();  // accumulates
  EXPECT_TRUE(allclose(a.grad(), tensor({5.0f, 7.0f, 9.0f})));
  a.grad() = Tensor();  // settable
  (a * 3).sum().backward();
  EXPECT_TRUE(allclose(a.grad(), tensor({3.0f, 3.0f, 3.0f})));
  EXPECT_FALSE(a.grad().requires_grad());
  // Ops on tensors that need no gradient record nothing.
  Tensor c = ones({3}) * 2;
  EXPECT_FALSE(c.requires_grad());
  EXPECT_EQ(c.grad_fn(), nullptr);
  EXPECT_FALSE((a > 1).requires_grad());     // comparisons are not differentiable
  EXPECT_FALSE(a.argmax().requires_grad());  // nor are indices
  EXPECT_FALSE(std::get<1>(a.max(0)).requires_grad());
  EXPECT_TRUE(std::get<0>(a.max(0)).requires_grad());
}

TEST(AutogradApi, RequiresGradErrors) {
  EXPECT_THROW_MSG(arange(3).requires_grad_(), TypeError,
                   "only Tensors of floating point dtype can require gradients");
  Tensor a = ones({2}).requires_grad_();
  Tensor b = a * 2;
  EXPECT_THROW_MSG(b.requires_grad_(false), ValueError,
                   "you can only change requires_grad flags of leaf variables");
  a.requires_grad_(false);
  EXPECT_FALSE(a.requires_grad());
  EXPECT_FALSE((a * 2).requires_grad());
  EXPECT_TRUE(ones({2}, TensorOptions().requires_grad(true)).requires_grad());
}

TEST(AutogradApi, BackwardErrors) {
  Tensor a = ones({2, 2}).requires_grad_();
  Tensor y = a * 2;
  EXPECT_THROW_MSG(y.backward(), ValueError,
                   "grad can be implicitly created only for scalar outputs");
  EXPECT_THROW_MSG(y.backward(ones({3})), ValueError, "Mismatch in shape");
  Tensor s = (a.exp() * 2).sum();
  s.backward();
  EXPECT_THROW_MSG(s.backward(), ValueError, "Trying to backward through the graph a second time");
  Tensor r = (a.exp()).sum();
  r.backward({}, /*retain_graph=*/true);
  r.backward();  // retained: a second backward works
  EXPECT_THROW_MSG(ones({2}).sum().backward(), ValueError,
                   "does not require grad and does not have a grad_fn");
}

TEST(AutogradApi, GradFunction) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor w = tensor({3.0, 4.0}).requires_grad_();
  Tensor unused = tensor({1.0}).requires_grad_();
  Tensor y = (x * w).sum();
  auto g = autograd::grad({y}, {x, w}, {}, true);
  EXPECT_TRUE(allclose(g[0], tensor({3.0f, 4.0f})));
  EXPECT_TRUE(allclose(g[1], tensor({1.0f, 2.0f})));
  EXPECT_FALSE(x.grad().defined());  // grad() returns, it does not accumulate
  EXPECT_THROW_MSG(autograd::grad({y}, {unused}, {}, true), ValueError,
                   "appears to not have been used in the graph");
  auto g2 = autograd::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_TRUE(g2[0].defined());
  EXPECT_FALSE(g2[1].defined());
  // Gradient of a non-leaf.
  Tensor h = x * w;
  Tensor z = (h * h).sum();
  auto gh = autograd::grad({z}, {h});
  EXPECT_TRUE(allclose(gh[0], (h * 2).detach()));
  // The gradient stops at a non-leaf: the node that made it does not run (compile's joint
  // capture relies on it: Note [Joint capture]).
  Tensor m = tensor({1.0, 2.0});
  auto boom = std::make_shared<autograd::ErrorNode>("BoomBackward", "the node ran");
  autograd::set_history(m, boom, 0);
  auto gm = autograd::grad({(m * m).sum()}, {m});
  EXPECT_TRUE(allclose(gm[0], m.detach() * 2));
  EXPECT_THROW_MSG((m * m).sum().backward(), NotImplementedError, "the node ran");
}

TEST(AutogradApi, RetainGradHooksAndDetach) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor h = x * 3;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  int calls = 0;
  h.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 10;
  });
  const int64_t leaf_hook = x.register_hook([&](const Tensor& g) { return g + 1; });
  (h * h).sum().backward();
  EXPECT_EQ(calls, 1);
  // h's gradient 2h = [6, 12], times 10 by the hook; then x gets 3 * that, plus 1 (leaf hook).
  EXPECT_TRUE(allclose(x.grad(), tensor({181.0f, 361.0f})));
  EXPECT_TRUE(h.grad().defined());
  x.remove_hook(leaf_hook);
  x.grad() = Tensor();
  (x * 2).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), tensor({2.0f, 2.0f})));

  Tensor d = h.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.data_ptr(), h.data_ptr());
  Tensor e = x * 2;
  e.detach_();
  EXPECT_FALSE(e.requires_grad());
  EXPECT_THROW_MSG(ones({1}).retain_grad(), ValueError, "can't retain_grad");
}

TEST(AutogradApi, GradModes) {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = x * 2;
    EXPECT_FALSE(y.requires_grad());
    {
      AutoGradMode on(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  {
    InferenceMode inference;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(AutogradInPlace, VersionCounterErrors) {
  Tensor a = ones({3}).requires_grad_();
  EXPECT_THROW_MSG(a.mul_(2), ValueError,
                   "a leaf Variable that requires grad is being used in an in-place operation");
  EXPECT_THROW_MSG(a.view({3}).mul_(2), ValueError, "a view of a leaf Variable");
  Tensor y = a.exp();
  Tensor z = y * 1;
  y.add_(1);  // exp saved its output
  EXPECT_GT(y._version(), 0u);
  EXPECT_THROW_MSG(
      (y * 1).sum().backward(), ValueError,
      "one of the variables needed for gradient computation has been modified by an inplace "
      "operation: [Float (3)], which is the output of ExpBackward, is at version 1; expected "
      "version 0 instead");
  // An input saved by mul, written through a view that shares its version counter.
  Tensor b = ones({2, 2});
  Tensor p = a.narrow(0, 0, 2) * b.select(0, 0);
  const uint32_t saved = b._version();
  b.select(0, 0).fill_(3);
  EXPECT_GT(b._version(), saved);
  EXPECT_THROW_MSG(p.sum().backward(), ValueError, "which is an input of MulBackward");
  // Under no_grad too (an optimizer's update), versions move.
  Tensor w = ones({2}).requires_grad_();
  {
    NoGradGuard g;
    w.sub_(ones({2}));
  }
  EXPECT_GT(w._version(), 0u);
}

TEST(AutogradInPlace, ViewOfANonLeafRebasesItsBase) {
  Tensor a = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor x = a * 1;
  x.select(0, 0).mul_(2);
  EXPECT_EQ(x.grad_fn()->name(), "CopySlices");
  x.sum().backward();
  EXPECT_TRUE(allclose(a.grad(), tensor({2.0f, 1.0f, 1.0f})));
  // A view taken before the write sees the new history too.
  Tensor b = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor base = b * 1;
  Tensor v = base.narrow(0, 2, 2);
  base.narrow(0, 1, 2).mul_(base.narrow(0, 0, 2).detach() * 0 + 5);
  (v * v).sum().backward();
  // v = [5 * b2, b3]: d/db2 = 2 * 25 * b2 = 150, d/db3 = 2 * b3 = 8.
  EXPECT_TRUE(allclose(b.grad(), tensor({0.0f, 0.0f, 150.0f, 8.0f})));
  // Writing a view of a tensor outside the graph brings it in.
  Tensor c = tensor({1.0, 2.0}).requires_grad_();
  Tensor z = zeros({2, 2});
  z.select(0, 1).copy_(c * c);
  EXPECT_TRUE(z.requires_grad());
  z.sum().backward();
  EXPECT_TRUE(allclose(c.grad(), tensor({2.0f, 4.0f})));
}

// split, split_with_sizes, chunk and unbind: one node whose gradient is the outputs' gradients
// side by side, zeros for an output nothing differentiated; writing an output in place still
// reaches the input.
TEST(AutogradViews, SplitAndUnbindGiveOneNodeAndZerosForUnusedOutputs) {
  const Tensor x = arange(30, TensorOptions(kDouble)).view({5, 6}).requires_grad_();
  const std::vector<Tensor> parts = x.split(2, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].grad_fn()->name(), "SplitBackward");
  EXPECT_EQ(parts[0].grad_fn().get(), parts[2].grad_fn().get());
  ((parts[0] * 2).sum() + (parts[2] * 3).sum()).backward();  // parts[1] unused
  EXPECT_TRUE(allclose(x.grad(), tensor({2.0, 2.0, 0.0, 0.0, 3.0, 3.0}).expand({5, 6})));

  const Tensor y = randn({4, 6}, kDouble).requires_grad_();
  const std::vector<Tensor> sized = y.split({2, 0, 4}, 1);
  EXPECT_EQ(sized[0].grad_fn()->name(), "SplitWithSizesBackward");
  const std::vector<Tensor> chunks = y.chunk(3, 0);  // through split: sizes 2, 2
  EXPECT_EQ(chunks[1].grad_fn()->name(), "SplitBackward");
  (sized[2].sum() + (chunks[1] * 5).sum()).backward();
  Tensor want = zeros({4, 6}, kDouble);
  want.narrow(1, 2, 4).fill_(1.0);
  want.narrow(0, 2, 2).add_(5.0);
  EXPECT_TRUE(allclose(y.grad(), want));

  const Tensor z = randn({3, 2}, kDouble).requires_grad_();
  const std::vector<Tensor> rows = z.unbind(0);
  EXPECT_EQ(rows[0].grad_fn()->name(), "UnbindBackward");
  (rows[1] * 4).sum().backward();
  EXPECT_TRUE(allclose(z.grad(), tensor({0.0, 0.0, 4.0, 4.0, 0.0, 0.0}).view({3, 2})));

  const Tensor a = ones({2, 6}, kDouble).requires_grad_();
  Tensor base = a * 1;
  std::vector<Tensor> halves = base.split(3, 1);
  halves[1].mul_(2);
  EXPECT_EQ(base.grad_fn()->name(), "CopySlices");
  (base.sum() + halves[0].sum()).backward();
  EXPECT_TRUE(allclose(a.grad(), tensor({2.0, 2.0, 2.0, 2.0, 2.0, 2.0}).expand({2, 6})));
}

// batch_norm and layer_norm have closed-form derivatives: they must equal the gradient of the
// decomposition, written here with the ops it is made of.
TEST(NormFormulas, MatchTheDecompositionsGradient) {
  manual_seed(3);
  Tensor x = randn({4, 3, 5, 2}, kDouble).requires_grad_();
  Tensor w = randn({3}, kDouble).requires_grad_(), b = randn({3}, kDouble).requires_grad_();
  Tensor v = randn({4, 3, 5, 2}, kDouble);
  auto grads = [&](const Tensor& y) { return autograd::grad({(y * v).sum()}, {x, w, b}); };
  const std::vector<int64_t> dims{0, 2, 3};
  const std::vector<int64_t> shape{1, 3, 1, 1};
  // training: batch statistics
  auto fused = grads(batch_norm(x, w, b, std::nullopt, std::nullopt, true, 0.1, 1e-5));
  Tensor ref_y =
      (x - x.mean(dims, true)) * rsqrt(x.var(dims, 0, true) + 1e-5) * w.view(shape) + b.view(shape);
  auto ref = grads(ref_y);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(allclose(fused[i], ref[i], 1e-10, 1e-10)) << i;
  // evaluation: running statistics (which get no gradient)
  Tensor rm = randn({3}, kDouble), rv = rand({3}, kDouble) + 0.5;
  fused = grads(batch_norm(x, w, b, rm, rv, false, 0.1, 1e-5));
  ref = grads((x - rm.view(shape)) * rsqrt(rv.view(shape) + 1e-5) * w.view(shape) + b.view(shape));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(allclose(fused[i], ref[i], 1e-10, 1e-10)) << i;
  // layer_norm over the last two dims
  Tensor lw = randn({5, 2}, kDouble).requires_grad_(), lb = randn({5, 2}, kDouble).requires_grad_();
  auto lgrads = [&](const Tensor& y) { return autograd::grad({(y * v).sum()}, {x, lw, lb}); };
  fused = lgrads(layer_norm(x, {5, 2}, lw, lb, 1e-5));
  ref = lgrads((x - x.mean({2, 3}, true)) * rsqrt(x.var({2, 3}, 0, true) + 1e-5) * lw + lb);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(allclose(fused[i], ref[i], 1e-10, 1e-10)) << i;
  // float16 inputs: statistics in float32, gradients back in float16
  Tensor xh = x.detach().to(kHalf).requires_grad_();
  Tensor yh = layer_norm(xh, {5, 2});
  Tensor gh = autograd::grad({(yh.to(kFloat) * v.to(kFloat)).sum()}, {xh})[0];
  EXPECT_EQ(gh.dtype(), kHalf);
  Tensor xf = x.detach().to(kFloat).requires_grad_();
  Tensor gf = autograd::grad({(layer_norm(xf, {5, 2}) * v.to(kFloat)).sum()}, {xf})[0];
  EXPECT_TRUE(allclose(gh, gf, 1e-2, 1e-2));
}

TEST(NormFormulas, LogSoftmaxAndCrossEntropyMatchTheDecompositionsGradient) {
  manual_seed(4);
  Tensor x = randn({6, 7}, kDouble).requires_grad_();
  Tensor v = randn({6, 7}, kDouble);
  auto dx = [&](const Tensor& y) { return autograd::grad({(y * v).sum()}, {x})[0]; };
  for (int64_t dim : {0, 1}) {
    const Tensor m = x.amax({dim}, true).detach();
    const Tensor ref_log = (x - m) - log(exp(x - m).sum({dim}, true));
    EXPECT_TRUE(allclose(dx(log_softmax(x, dim)), dx(ref_log), 1e-12, 1e-12)) << dim;
    const Tensor ref_soft = exp(x - m) / exp(x - m).sum({dim}, true);
    EXPECT_TRUE(allclose(dx(softmax(x, dim)), dx(ref_soft), 1e-12, 1e-12)) << dim;
  }
  const Tensor target = tensor({1, 6, 0, 3, 3, 2});
  const Tensor ce = autograd::grad({cross_entropy(x, target)}, {x})[0];
  const Tensor m = x.amax({1}, true).detach();
  const Tensor logp = (x - m) - log(exp(x - m).sum({1}, true));
  const Tensor ref = autograd::grad({-logp.gather(1, target.unsqueeze(1)).mean()}, {x})[0];
  EXPECT_TRUE(allclose(ce, ref, 1e-12, 1e-12));
}

// The fused backward ops have CPU kernels; their composites (kernels/composite) run where
// autograd records them (inputs in the graph, as in a backward with create_graph): both agree.
TEST(FusedBackward, CpuKernelsMatchTheirComposites) {
  for (const char* op : {"_softmax_backward_data", "_log_softmax_backward_data",
                         "batch_norm_backward", "layer_norm_backward"}) {
    const std::string table = dump_dispatch_table(std::string("xten::") + op);
    EXPECT_NE(table.find("  CPU          kernel from"), std::string::npos) << table;
    EXPECT_NE(table.find("AutogradCPU  CompositeImplicit kernel"), std::string::npos) << table;
  }
  manual_seed(5);
  for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16}) {
    SCOPED_TRACE(to_string(dt));
    const double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-5 : 2e-2;
    // `in_graph` makes the call take the autograd key, where the composite runs.
    const Tensor x = randn({4, 3, 5, 2}).to(dt), g = randn({4, 3, 5, 2}).to(dt);
    const Tensor gg = g.detach().requires_grad_();
    for (int64_t dim : {1, 3}) {
      const Tensor y = softmax(x, dim), ly = log_softmax(x, dim);
      EXPECT_TRUE(allclose(_softmax_backward_data(g, y, dim, dt),
                           _softmax_backward_data(gg, y, dim, dt).detach(), tol, tol));
      EXPECT_TRUE(allclose(_log_softmax_backward_data(g, ly, dim, dt),
                           _log_softmax_backward_data(gg, ly, dim, dt).detach(), tol, tol));
    }
    const Tensor w = randn({3}).to(dt), rm = randn({3}).to(dt), rv = rand({3}).to(dt) + 0.5;
    for (bool training : {true, false}) {
      for (bool affine : {true, false}) {
        const auto wt = affine ? std::optional<Tensor>(w) : std::nullopt;
        auto fused = batch_norm_backward(g, x, wt, rm, rv, training);
        auto comp = batch_norm_backward(gg, x, wt, rm, rv, training);
        EXPECT_TRUE(allclose(std::get<0>(fused), std::get<0>(comp).detach(), tol, tol));
        EXPECT_TRUE(allclose(std::get<1>(fused), std::get<1>(comp).detach(), tol, tol * 10));
        EXPECT_TRUE(allclose(std::get<2>(fused), std::get<2>(comp).detach(), tol, tol * 10));
        EXPECT_EQ(std::get<0>(fused).dtype(), dt);
      }
    }
    const Tensor lw = randn({5, 2}).to(dt);
    for (bool affine : {true, false}) {
      const auto wt = affine ? std::optional<Tensor>(lw) : std::nullopt;
      Tensor fused[3], comp[3];
      std::tie(fused[0], fused[1], fused[2]) = layer_norm_backward(g, x, {5, 2}, wt);
      std::tie(comp[0], comp[1], comp[2]) = layer_norm_backward(gg, x, {5, 2}, wt);
      for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(allclose(fused[i], comp[i].detach(), tol, tol * 10)) << i;
      // A float32 gradient for a lower-precision input (the kernel then runs in float).
      if (dt == kHalf || dt == kBFloat16) {
        std::tie(fused[0], fused[1], fused[2]) = layer_norm_backward(g.to(kFloat), x, {5, 2}, wt);
        std::tie(comp[0], comp[1], comp[2]) = layer_norm_backward(gg.to(kFloat), x, {5, 2}, wt);
        for (int i = 0; i < 3; ++i)
          EXPECT_TRUE(allclose(fused[i], comp[i].detach(), tol, tol * 10)) << "mixed " << i;
        EXPECT_EQ(fused[0].dtype(), dt);
      }
    }
  }
}

// max_pool2d_with_indices_backward, avg_pool2d_backward and mse_loss_backward (Note [Pooling
// backward], kernels/cpu/loss.cpp) against their composites, every float dtype, over windows that
// tile, overlap, pad, dilate and (ceil_mode) reach past the input, 3-D and 4-D; and the
// derivatives of max_pool2d, avg_pool2d and mse_loss use them (one node, no saved input).
TEST(FusedBackward, PoolingAndMseLossKernelsMatchTheirComposites) {
  for (const char* op :
       {"max_pool2d_with_indices_backward", "avg_pool2d_backward", "mse_loss_backward"}) {
    const std::string table = dump_dispatch_table(std::string("xten::") + op);
    EXPECT_NE(table.find("  CPU          kernel from"), std::string::npos) << table;
    EXPECT_NE(table.find("AutogradCPU  CompositeImplicit kernel"), std::string::npos) << table;
  }
  struct Win {
    std::vector<int64_t> k, s, p, d;
    bool ceil;
  };
  const std::vector<Win> wins = {{{2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
                                 {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                                 {{3, 2}, {2, 1}, {1, 0}, {1, 1}, true},
                                 {{2, 3}, {3, 2}, {0, 1}, {2, 1}, true}};
  manual_seed(6);
  for (ScalarType dt : {kDouble, kFloat, kHalf, kBFloat16}) {
    SCOPED_TRACE(to_string(dt));
    const double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-5 : 2e-2;
    for (const auto& shape : std::vector<std::vector<int64_t>>{{2, 3, 9, 11}, {3, 7, 8}}) {
      const Tensor x = randn(shape).to(dt);
      for (const Win& w : wins) {
        auto [y, ind] = max_pool2d_with_indices(x, w.k, w.s, w.p, w.d, w.ceil);
        const Tensor g = randn(y.sizes()).to(dt), gg = g.detach().requires_grad_();
        const Tensor fused =
            max_pool2d_with_indices_backward(g, x, w.k, w.s, w.p, w.d, w.ceil, ind);
        const Tensor comp =
            max_pool2d_with_indices_backward(gg, x, w.k, w.s, w.p, w.d, w.ceil, ind).detach();
        ASSERT_EQ(fused.sizes(), x.sizes());
        EXPECT_EQ(fused.dtype(), dt);
        EXPECT_TRUE(allclose(fused, comp, tol, tol))
            << IntArrayRef(w.k) << IntArrayRef(w.s) << w.ceil;
        if (w.d[0] != 1 || w.d[1] != 1) continue;  // avg_pool2d has no dilation
        for (bool include_pad : {true, false}) {
          for (std::optional<int64_t> div : {std::optional<int64_t>(), std::optional<int64_t>(5)}) {
            const Tensor ya = avg_pool2d(x, w.k, w.s, w.p, w.ceil, include_pad, div);
            const Tensor ga = randn(ya.sizes()).to(dt), gga = ga.detach().requires_grad_();
            const Tensor fa = avg_pool2d_backward(ga, x, w.k, w.s, w.p, w.ceil, include_pad, div);
            const Tensor ca =
                avg_pool2d_backward(gga, x, w.k, w.s, w.p, w.ceil, include_pad, div).detach();
            ASSERT_EQ(fa.sizes(), x.sizes());
            EXPECT_TRUE(allclose(fa, ca, tol, tol))
                << IntArrayRef(w.k) << IntArrayRef(w.s) << include_pad;
          }
        }
      }
    }
    // The sums: a max pooling gradient moves each gradient to one element.
    const Tensor x = randn({2, 3, 10, 10}).to(dt);
    auto [y, ind] = max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1});
    const Tensor g = ones(y.sizes(), dt, Device("cpu"));
    EXPECT_NEAR(max_pool2d_with_indices_backward(g, x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false, ind)
                    .to(kDouble)
                    .sum()
                    .item<double>(),
                static_cast<double>(y.numel()), 1e-9);
    // mse_loss_backward: each reduction, broadcast target, non-contiguous input.
    const Tensor a = randn({6, 5}).to(dt).t(), b = randn({6, 5}).to(dt).t(),
                 row = randn({6}).to(dt);
    for (const char* red : {"mean", "sum", "none"}) {
      for (const Tensor& t : {b, row}) {
        const Tensor go = std::string(red) == "none" ? randn({5, 6}).to(dt) : randn({}).to(dt);
        const Tensor fused = mse_loss_backward(go, a, t, red);
        const Tensor comp = mse_loss_backward(go.detach().requires_grad_(), a, t, red).detach();
        ASSERT_EQ(fused.sizes(), comp.sizes());
        EXPECT_EQ(fused.dtype(), dt);
        EXPECT_TRUE(allclose(fused, comp, tol, tol)) << red;
      }
    }
  }
  // The forward ops' derivatives: one node each, the same gradient as the composite formula.
  const Tensor x = randn({2, 3, 8, 8}, kDouble).requires_grad_(), t = randn({2, 3, 8, 8}, kDouble);
  const Tensor y = max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
  const Tensor gy = randn(y.sizes(), kDouble);
  const Tensor dx = autograd::grad({(y * gy).sum()}, {x})[0];
  auto [y2, ind] = max_pool2d_with_indices(x.detach(), {3, 3}, {2, 2}, {1, 1});
  EXPECT_TRUE(allclose(dx,
                       zeros({6, 64}, kDouble, Device("cpu"))
                           .scatter_add(1, ind.reshape({6, -1}), gy.reshape({6, -1}))
                           .view(x.sizes()),
                       1e-12, 1e-12));
  const Tensor l = mse_loss(x, t);
  EXPECT_EQ(l.grad_fn()->name(), "MseLossBackward");
  EXPECT_TRUE(
      allclose(autograd::grad({l}, {x})[0], (x.detach() - t) * (2.0 / x.numel()), 1e-12, 1e-12));
}

TEST(FusedBackward, BadArgumentsRaise) {
  const Tensor x = randn({4, 3}), g = randn({4, 3});
  EXPECT_THROW_MSG(_log_softmax_backward_data(randn({4, 2}), x, 1, kFloat), ValueError,
                   "[_log_softmax_backward_data] grad_output of shape (4, 2) does not match");
  EXPECT_THROW_MSG(_softmax_backward_data(g, x, 2, kFloat), IndexError, "_softmax_backward_data");
  EXPECT_THROW_MSG(_softmax_backward_data(g, x, 1, kLong), NotImplementedError,
                   "[_softmax_backward_data] not implemented for dtype Long");
  EXPECT_THROW_MSG(batch_norm_backward(g, x, randn({4}), std::nullopt, std::nullopt, true),
                   ValueError, "[batch_norm_backward] weight must have shape (3), but got (4)");
  EXPECT_THROW_MSG(batch_norm_backward(g, x, std::nullopt, std::nullopt, std::nullopt, false),
                   ValueError, "running_mean and running_var must be given");
  EXPECT_THROW_MSG(
      batch_norm_backward(g, randn({4}), std::nullopt, std::nullopt, std::nullopt, true),
      ValueError, "[batch_norm_backward] expected an input of at least 2 dims");
  EXPECT_THROW_MSG(layer_norm_backward(g, x, {4}, std::nullopt), ValueError,
                   "[layer_norm_backward] normalized_shape (4) must match the last dims");
  EXPECT_THROW_MSG(layer_norm_backward(g.to(kLong), x.to(kLong), {3}, std::nullopt),
                   NotImplementedError, "[layer_norm_backward] not implemented for dtypes Long");
  const Tensor img = randn({2, 3, 8, 8}), gi = randn({2, 3, 4, 4});
  const Tensor ind = std::get<1>(max_pool2d_with_indices(img, {2, 2}));
  EXPECT_THROW_MSG(
      max_pool2d_with_indices_backward(gi, img, {2, 2}, {2, 2}, {0}, {1}, false,
                                       ind.clone().fill_(64)),
      IndexError,
      "[max_pool2d_with_indices_backward] index 64 is out of range for an input plane of 8 x 8");
  EXPECT_THROW_MSG(
      max_pool2d_with_indices_backward(gi, img, {3, 3}, {2, 2}, {0}, {1}, false, ind), ValueError,
      "[max_pool2d_with_indices_backward] grad_output must have the forward's output shape (2, "
      "3, 3, 3), but got (2, 3, 4, 4)");
  EXPECT_THROW_MSG(
      max_pool2d_with_indices_backward(gi, img, {2, 2}, {2, 2}, {0}, {1}, false, ind.to(kInt)),
      TypeError, "[max_pool2d_with_indices_backward] indices must be int64, but got Int");
  EXPECT_THROW_MSG(
      avg_pool2d_backward(gi.to(kDouble), img, {2, 2}, {2, 2}, {0}, false, true, std::nullopt),
      TypeError, "[avg_pool2d_backward] grad_output and self must have one dtype");
  EXPECT_THROW_MSG(avg_pool2d_backward(gi, img, {2, 2}, {2, 2}, {0}, false, true, 0), ValueError,
                   "avg_pool2d_backward");
  EXPECT_THROW_MSG(avg_pool2d_backward(gi.to(kLong), img.to(kLong), {2, 2}, {2, 2}, {0}, false,
                                       true, std::nullopt),
                   NotImplementedError, "[avg_pool2d_backward] not implemented for dtype Long");
  EXPECT_THROW_MSG(mse_loss_backward(randn({}), x, x, "avg"), ValueError,
                   "[mse_loss_backward] reduction must be 'none', 'mean' or 'sum', but got 'avg'");
  EXPECT_THROW_MSG(mse_loss_backward(randn({}), x, randn({5}), "mean"), ValueError,
                   "mse_loss_backward");
  EXPECT_THROW_MSG(mse_loss_backward(randn({}), x.to(kLong), x, "mean"), NotImplementedError,
                   "[mse_loss_backward] not implemented for input dtype Long");
}

TEST(NormFormulas, RunningStatisticsStayOutOfTheGraph) {
  Tensor x = randn({8, 3}).requires_grad_();
  Tensor rm = zeros({3}), rv = ones({3});
  for (int step = 0; step < 3; ++step) batch_norm(x * 2, {}, {}, rm, rv, true).sum().backward();
  EXPECT_FALSE(rm.requires_grad());
  EXPECT_FALSE(rv.requires_grad());
  EXPECT_EQ(rm.grad_fn(), nullptr);
  EXPECT_GT(rm.abs().sum().item<float>(), 0);
}

TEST(AutogradHigherOrder, SecondDerivativeAndGradientPenalty) {
  Tensor x = tensor({1.0, -2.0, 0.5}, kDouble).requires_grad_();
  Tensor y = (x * x * x).sum();
  auto g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(g[0].requires_grad());
  auto gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_TRUE(allclose(gg[0], x.detach() * 6));
  // Second derivative of a small network, and a gradient penalty that trains through it.
  manual_seed(0);
  Tensor w1 = randn({3, 4}, kDouble).requires_grad_();
  Tensor w2 = randn({1, 3}, kDouble).requires_grad_();
  Tensor in = randn({5, 4}, kDouble).requires_grad_();
  auto net = [&](const std::vector<Tensor>& v) {
    return linear(tanh(linear(v[0], v[1])), v[2]).sum();
  };
  EXPECT_TRUE(autograd::gradgradcheck(net, {in, w1, w2}));
  Tensor out = net({in, w1, w2});
  Tensor gin = autograd::grad({out}, {in}, {}, std::nullopt, true)[0];
  Tensor penalty = (gin.norm(2, {1}) - 1).pow(2).mean();
  penalty.backward();
  ASSERT_TRUE(w1.grad().defined());
  EXPECT_GT(w1.grad().abs().sum().item<double>(), 0);
  EXPECT_TRUE(autograd::gradcheck(
      [&](const std::vector<Tensor>& v) {
        Tensor o = net({in, v[0], w2});
        Tensor gi = autograd::grad({o}, {in}, {}, std::nullopt, true)[0];
        return (gi.norm(2, {1}) - 1).pow(2).mean();
      },
      {w1}));
}

TEST(AutogradEngine, SharedSubexpressionsAndThreads) {
  Tensor x = tensor({2.0}).requires_grad_();
  Tensor s = x * x;  // used twice: its gradient is summed before it runs
  Tensor y = s * s + s.exp();
  y.backward();
  const double xv = 2, sv = 4;
  EXPECT_NEAR(x.grad().item<double>(), (2 * sv + std::exp(sv)) * 2 * xv, 1e-3);
  // Independent backward calls on several threads.
  std::vector<std::thread> threads;
  std::vector<double> results(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &results] {
      Tensor a = full({16}, static_cast<double>(t), kDouble).requires_grad_();
      for (int i = 0; i < 20; ++i) {
        a.grad() = Tensor();
        ((a * a).sum() * 0.5).backward();
      }
      results[t] = a.grad().sum().item<double>();
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(results[t], 16.0 * t);
  // One shared leaf, accumulated from several threads at once.
  Tensor shared = zeros({4}, kDouble).requires_grad_();
  threads.clear();
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&shared] {
      for (int i = 0; i < 25; ++i) (shared * 1).sum().backward();
    });
  for (auto& th : threads) th.join();
  EXPECT_TRUE(allclose(shared.grad(), full({4}, 100.0, kDouble)));
}

TEST(AutogradEngine, AutocastCastsFlowBackInTheOriginalDtype) {
  Tensor w = randn({4, 3}).requires_grad_();
  Tensor x = randn({2, 3});
  Tensor y;
  {
    autocast::AutocastGuard guard(DeviceType::CPU, kBFloat16);
    y = linear(x, w);
  }
  EXPECT_EQ(y.dtype(), kBFloat16);
  y.to(kFloat).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat);
  // d/dw sum(x w^T) = column sums of x, within bfloat16 rounding.
  EXPECT_TRUE(allclose(w.grad(), x.sum({0}).unsqueeze(0).expand({4, 3}), 2e-2, 2e-2));
}

TEST(AutogradTraining, MlpLossFalls) {
  std::vector<double> losses;
  testing::train_mlp(Device("cpu"), 100, &losses);
  EXPECT_GT(losses.front(), 0.5);
  EXPECT_LT(losses.back(), 0.25 * losses.front()) << losses.front() << " -> " << losses.back();
}

TEST(AutogradTraining, SmallCnnLossFalls) {
  std::vector<double> losses;
  testing::train_small_cnn(Device("cpu"), 100, &losses);
  EXPECT_LT(losses.back(), 0.5 * losses.front()) << losses.front() << " -> " << losses.back();
}

// avg_pool2d's gradient where the windows tile the input (kernel == stride, no padding: one
// copy instead of a transposed convolution), with leftover rows and columns and ceil_mode's cut
// windows, against the gradient of the same average written with ops (sum over a view).
TEST(Autograd, AvgPoolGradientOfTilingWindows) {
  manual_seed(57);
  for (bool ceil : {false, true}) {
    for (const auto& hw : std::vector<std::pair<int64_t, int64_t>>{{8, 6}, {9, 7}}) {
      const Tensor x = randn({2, 3, hw.first, hw.second}, kDouble).requires_grad_(true);
      const Tensor g = randn(avg_pool2d(x.detach(), {2}, {}, {0}, ceil).sizes(), kDouble);
      const Tensor dx = autograd::grad({avg_pool2d(x, {2}, {}, {0}, ceil)}, {x}, {g})[0];
      // Reference: each input element gets g / (its window's element count) of its window.
      const Tensor want = zeros_like(x.detach());
      for (int64_t oy = 0; oy < g.size(2); ++oy)
        for (int64_t ox = 0; ox < g.size(3); ++ox) {
          const int64_t y1 = std::min(2 * oy + 2, hw.first), x1 = std::min(2 * ox + 2, hw.second);
          const Tensor cell = g.narrow(2, oy, 1).narrow(3, ox, 1) /
                              static_cast<double>((y1 - 2 * oy) * (x1 - 2 * ox));
          Tensor win = want.narrow(2, 2 * oy, y1 - 2 * oy).narrow(3, 2 * ox, x1 - 2 * ox);
          win.copy_(cell.expand(win.sizes()));
        }
      EXPECT_TRUE(allclose(dx, want, 1e-14, 1e-14)) << "ceil " << ceil << " " << hw.first;
    }
  }
}

// Found by the op fuzzer (seed 73999): avg_pool2d's derivative read kernel_size, stride and
// padding as two values each; the op also takes one value for both dims and empty lists.
TEST(Autograd, AvgPoolGradientTakesTheShortLists) {
  const Tensor x = randn({2, 3, 7, 6}, kDouble);
  const Tensor a = x.clone().requires_grad_(), b = x.clone().requires_grad_();
  avg_pool2d(a, {3}, {2}, {}, true).pow(2).sum().backward();
  avg_pool2d(b, {3, 3}, {2, 2}, {0, 0}, true).pow(2).sum().backward();
  EXPECT_TRUE(testing::same_bytes(a.grad(), b.grad()));
  const Tensor c = x.clone().requires_grad_(), d = x.clone().requires_grad_();
  avg_pool2d(c, {2}, {}, {1}).sum().backward();  // stride: the kernel's
  avg_pool2d(d, {2, 2}, {2, 2}, {1, 1}).sum().backward();
  EXPECT_TRUE(testing::same_bytes(c.grad(), d.grad()));
}

// Found by the op fuzzer (seed 2343618): an index smaller than src leaves src's other elements
// unused, so their gradient is zero (the gather alone had the index's shape).
TEST(Autograd, ScatterSrcGradientWhenTheIndexIsSmaller) {
  const Tensor src = arange(1, 5, 1, kDouble).requires_grad_();
  const Tensor index = tensor(std::vector<int64_t>{2, 0, 2});
  const Tensor w = tensor(std::vector<double>{10, 20, 30, 40});
  (scatter_add(zeros({4}, kDouble), 0, index, src) * w).sum().backward();
  EXPECT_TRUE(
      testing::same_bytes(src.grad(), tensor(std::vector<double>{30, 10, 30, 0}).to(kDouble)));
  const Tensor s2 = arange(1, 7, 1, kDouble).view({2, 3}).requires_grad_();
  (scatter(zeros({2, 3}, kDouble), 1, tensor(std::vector<int64_t>{1}).view({1, 1}), s2) * 5)
      .sum()
      .backward();
  EXPECT_TRUE(testing::same_bytes(
      s2.grad(), tensor(std::vector<double>{5, 0, 0, 0, 0, 0}).to(kDouble).view({2, 3})));
}

// PyTorch's gradients at ties, zeros, bounds, NaN/inf, duplicate indices, padding_idx and
// ignore_index (test/grad_edges.h; docs/autograd.md, "Conventions at the edges").
TEST(Autograd, GradientsAtTheEdgesMatchPyTorch) {
  testing::grad_edges::check_all(Device("cpu"));
}

}  // namespace
}  // namespace xten
