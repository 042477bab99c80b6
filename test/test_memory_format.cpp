// Memory formats on the CPU (docs/memory_format.md): the API (is_contiguous, suggest, contiguous,
// clone, to, empty and the *_like factories, Module::to), pointwise results in their operands'
// layout, channels-last convolutions through oneDNN's NHWC path, and the op database run with
// channels-last inputs.
#include "memory_format_checks.h"

namespace xten {
namespace {

using testing::allclose;
constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

TEST(MemoryFormat, EmptyChannelsLastHasNhwcStrides) {
  const Tensor t = empty({2, 3, 4, 5}, TensorOptions().memory_format(kCL));
  EXPECT_EQ(t.strides(), IntArrayRef({60, 1, 15, 3}));
  EXPECT_TRUE(t.is_contiguous(kCL));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.is_contiguous(MemoryFormat::Contiguous) == t.is_contiguous());
  EXPECT_EQ(t.suggest_memory_format(), kCL);
  const Tensor plain = empty({2, 3, 4, 5});
  EXPECT_FALSE(plain.is_contiguous(kCL));
  EXPECT_EQ(plain.suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(MemoryFormat, SizeOneDimsMakeBothLayoutsTrue) {
  // [N, C, 1, 1] is dense in both orders: PyTorch calls it contiguous in both and suggests NCHW.
  const Tensor t = empty({4, 8, 1, 1});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.is_contiguous(kCL));
  EXPECT_EQ(t.suggest_memory_format(), MemoryFormat::Contiguous);
  // A single channel: NHWC strides are NCHW's.
  const Tensor one = empty({2, 1, 3, 3}, TensorOptions().memory_format(kCL));
  EXPECT_TRUE(one.is_contiguous());
}

TEST(MemoryFormat, SliceOfChannelsLastStillSuggestsIt) {
  const Tensor t = randn({2, 6, 4, 4}).contiguous(kCL);
  const Tensor part = t.narrow(1, 1, 3);
  EXPECT_FALSE(part.is_contiguous(kCL));
  EXPECT_EQ(part.suggest_memory_format(), kCL);
  EXPECT_EQ(randn({2, 6, 4, 4}).narrow(1, 1, 3).suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(MemoryFormat, ContiguousConvertsBothWaysAndKeepsValues) {
  const Tensor x = randn({2, 3, 4, 5});
  const Tensor cl = x.contiguous(kCL);
  EXPECT_TRUE(cl.is_contiguous(kCL));
  EXPECT_TRUE(testing::same_bytes(cl.contiguous(), x));
  EXPECT_TRUE(cl.contiguous().is_contiguous());
  EXPECT_TRUE(cl.contiguous(kCL).is_same(cl));  // already so: no copy
  EXPECT_TRUE(x.contiguous(MemoryFormat::Contiguous).is_same(x));
  // The data really is NHWC: element (n, c, h, w) at ((n * H + h) * W + w) * C + c.
  const float* p = cl.data_ptr<float>();
  EXPECT_EQ(p[((1 * 4 + 2) * 5 + 3) * 3 + 1],
            x.contiguous().data_ptr<float>()[((1 * 3 + 1) * 4 + 2) * 5 + 3]);
}

TEST(MemoryFormat, CloneAndToPreserveChannelsLast) {
  const Tensor cl = randn({2, 3, 4, 5}).contiguous(kCL);
  EXPECT_TRUE(cl.clone().is_contiguous(kCL));
  EXPECT_TRUE(cl.clone(MemoryFormat::Contiguous).is_contiguous());
  EXPECT_TRUE(cl.to(kDouble).is_contiguous(kCL));
  EXPECT_TRUE(cl.to(kBFloat16).is_contiguous(kCL));
  EXPECT_TRUE(cl.to(MemoryFormat::Contiguous).is_contiguous());
  EXPECT_TRUE(cl.to(kCL).is_same(cl));
  EXPECT_FALSE(cl.to(kCL, /*copy=*/true).is_same(cl));
  EXPECT_TRUE(
      cl.to(TensorOptions(kDouble).memory_format(MemoryFormat::Contiguous)).is_contiguous());
  EXPECT_TRUE(allclose(cl.to(kDouble), cl.contiguous().to(kDouble)));
  EXPECT_TRUE(empty_like(cl).is_contiguous(kCL));
  EXPECT_TRUE(zeros_like(cl).is_contiguous(kCL));
  EXPECT_EQ(zeros_like(cl).abs().sum().item<float>(), 0.0f);
  EXPECT_TRUE(
      ones_like(cl, TensorOptions().memory_format(MemoryFormat::Contiguous)).is_contiguous());
  EXPECT_EQ(full_like(cl, 2.5).sum().item<float>(), 2.5f * 120);
}

// Note [Preserved layout]: a transposed, permuted or sliced tensor's copies keep its dims'
// order, densely (PyTorch's preserve_format); a named format and contiguous tensors are as before.
TEST(MemoryFormat, CopiesOfPermutedTensorsKeepTheirOrder) {
  const Tensor t = randn({5, 7}).t();                          // strides (1, 7)
  const Tensor p = randn({2, 3, 4, 5}).permute({0, 2, 3, 1});  // an NHWC-like 4-d order
  const Tensor s = randn({6, 8}).t().narrow(0, 1, 5);          // a slice of a transpose
  const Tensor b = randn({3, 1, 4}).permute({2, 1, 0});        // a size-1 dim inside
  for (const Tensor& x : {t, p, s, b}) {
    SCOPED_TRACE(to_string(x.sizes()) + " strides " + to_string(x.strides()));
    const DimVector want = dense_strides(x.sizes(), pointwise_dim_order(x.sizes(), {&x}));
    EXPECT_EQ(x.clone().strides(), IntArrayRef(want));
    EXPECT_EQ(x.to(kDouble).strides(), IntArrayRef(want));
    EXPECT_EQ(x.to(kBFloat16).strides(), IntArrayRef(want));
    EXPECT_EQ(empty_like(x).strides(), IntArrayRef(want));
    EXPECT_EQ(zeros_like(x).strides(), IntArrayRef(want));
    EXPECT_EQ(full_like(x, 1.5, TensorOptions(kDouble)).strides(), IntArrayRef(want));
    EXPECT_TRUE(testing::same_bytes(x.clone().contiguous(), x.contiguous()));
    EXPECT_TRUE(allclose(x.to(kDouble), x.contiguous().to(kDouble)));
    EXPECT_EQ(full_like(x, 1.5).sum().item<float>(), 1.5f * static_cast<float>(x.numel()));
    EXPECT_TRUE(x.clone(MemoryFormat::Contiguous).is_contiguous());
    EXPECT_TRUE(
        empty_like(x, TensorOptions().memory_format(MemoryFormat::Contiguous)).is_contiguous());
    EXPECT_TRUE(ones_like(x, TensorOptions().requires_grad(true)).requires_grad());
  }
  EXPECT_EQ(t.clone().strides(), IntArrayRef({1, 7}));  // PyTorch's for x.t().clone()
  EXPECT_TRUE(randn({4, 3}).clone().is_contiguous());
  EXPECT_TRUE(randn({4, 3}).expand({2, 4, 3}).clone().is_contiguous());
}

TEST(MemoryFormat, ContiguousIsDifferentiable) {
  const Tensor x = randn({2, 3, 4, 5}).requires_grad_();
  const Tensor w = randn({2, 3, 4, 5});
  (x.contiguous(kCL) * w).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), w));
  EXPECT_TRUE(x.grad().is_contiguous());  // Note [Gradient layout]: the leaf's layout
}

TEST(MemoryFormat, BadRequestsNameTheOpAndValues) {
  const Tensor x3 = randn({3, 4, 5});
  EXPECT_THROW_MSG(x3.contiguous(kCL), ValueError, "channels_last needs a 4-d tensor");
  EXPECT_THROW_MSG(x3.contiguous(kCL), ValueError, "(3, 4, 5)");
  EXPECT_THROW_MSG(empty({2, 3}, TensorOptions().memory_format(kCL)), ValueError,
                   "[empty] channels_last needs a 4-d tensor");
  EXPECT_THROW_MSG(empty({2, 3}, TensorOptions().memory_format(MemoryFormat::Preserve)), ValueError,
                   "use empty_like");
  EXPECT_THROW_MSG(x3.contiguous(MemoryFormat::Preserve), ValueError, "[contiguous]");
  EXPECT_THROW_MSG((void)x3.is_contiguous(MemoryFormat::Preserve), ValueError, "[is_contiguous]");
  EXPECT_FALSE(x3.is_contiguous(kCL));
  EXPECT_EQ(x3.suggest_memory_format(), MemoryFormat::Contiguous);
}

TEST(MemoryFormat, PointwiseResultsTakeTheirOperandsLayout) {
  testing::check_pointwise_layouts(Device("cpu"));
}

TEST(MemoryFormat, ConvolutionComputesChannelsLastWithoutLosingIt) {
  manual_seed(3);
  const Tensor x = randn({2, 8, 9, 7}), w = randn({16, 8, 3, 3}), b = randn({16});
  const Tensor want = conv2d(x, w, b, {2, 1}, {1, 1});
  for (bool input_cl : {false, true})
    for (bool weight_cl : {false, true}) {
      if (!input_cl && !weight_cl) continue;
      const Tensor xi = input_cl ? x.contiguous(kCL) : x;
      const Tensor wi = weight_cl ? w.contiguous(kCL) : w;
      const Tensor got = conv2d(xi, wi, b, {2, 1}, {1, 1});
      EXPECT_TRUE(got.is_contiguous(kCL)) << input_cl << weight_cl;
      EXPECT_TRUE(allclose(got, want, 1e-4, 1e-4)) << input_cl << weight_cl;
    }
  // Grouped and transposed.
  const Tensor wg = randn({8, 2, 3, 3});
  EXPECT_TRUE(allclose(conv2d(x.contiguous(kCL), wg, {}, {1, 1}, {1, 1}, {1, 1}, 4),
                       conv2d(x, wg, {}, {1, 1}, {1, 1}, {1, 1}, 4), 1e-4, 1e-4));
  const Tensor wt = randn({8, 4, 3, 3});
  const Tensor t = conv_transpose2d(x.contiguous(kCL), wt, {}, {2, 2}, {1, 1});
  EXPECT_TRUE(t.is_contiguous(kCL));
  EXPECT_TRUE(allclose(t, conv_transpose2d(x, wt, {}, {2, 2}, {1, 1}), 1e-4, 1e-4));
}

TEST(MemoryFormat, ConvolutionGradientsKeepTheLeavesLayouts) {
  manual_seed(4);
  const Tensor x0 = randn({2, 4, 6, 6}), w0 = randn({6, 4, 3, 3}), v = randn({2, 6, 6, 6});
  auto run = [&](bool cl) {
    Tensor x = (cl ? x0.contiguous(kCL) : x0.clone()).requires_grad_();
    Tensor w = (cl ? w0.contiguous(kCL) : w0.clone()).requires_grad_();
    (conv2d(x, w, {}, {1, 1}, {1, 1}) * v).sum().backward();
    return std::make_pair(x, w);
  };
  const auto [x, w] = run(false);
  const auto [xc, wc] = run(true);
  EXPECT_TRUE(xc.grad().is_contiguous(kCL));
  EXPECT_TRUE(wc.grad().is_contiguous(kCL));
  EXPECT_TRUE(x.grad().is_contiguous());
  EXPECT_TRUE(allclose(xc.grad(), x.grad(), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(wc.grad(), w.grad(), 1e-4, 1e-4));
}

TEST(MemoryFormat, ModuleToChannelsLastLaysOutFourDimParameters) {
  manual_seed(5);
  nn::Conv2d conv(nn::Conv2dOptions(3, 8, 3).padding(1));
  nn::Linear fc(8, 4);
  const Tensor x = randn({2, 3, 8, 8});
  const Tensor want = conv->forward(x);
  const Tensor weight = conv->weight;
  conv->to(kCL);
  EXPECT_TRUE(conv->weight.is_contiguous(kCL));
  EXPECT_TRUE(conv->weight.is_same(weight));  // in place: an optimizer's handle stays valid
  EXPECT_TRUE(conv->bias.is_contiguous());
  const Tensor got = conv->forward(x.contiguous(kCL));
  EXPECT_TRUE(got.is_contiguous(kCL));
  EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5));
  fc->to(kCL);  // 2-d parameters are left as they are
  EXPECT_TRUE(fc->weight.is_contiguous());
  EXPECT_THROW_MSG(conv->to(MemoryFormat::Preserve), ValueError, "preserve_format");
}

TEST(MemoryFormat, CheckpointsKeepValuesAndTheLoadersLayout) {
  manual_seed(6);
  nn::Conv2d a(nn::Conv2dOptions(3, 4, 3)), b(nn::Conv2dOptions(3, 4, 3));
  a->to(kCL);
  b->to(kCL);
  const std::string path = ::testing::TempDir() + "xten_memory_format.safetensors";
  save(a->state_dict(), path);
  b->load_state_dict(load(path));
  EXPECT_TRUE(b->weight.is_contiguous(kCL));  // the loading model's layout is kept
  EXPECT_TRUE(testing::same_bytes(b->weight, a->weight));
  std::remove(path.c_str());
}

// A channels-last batch's per-channel statistics are column sums of [N*H*W, C], the rows cut
// among threads (kernels/cpu/reduce.cpp); the result equals the float64 sum on every count.
TEST(MemoryFormat, PerChannelSumsOfAChannelsLastBatch) {
  manual_seed(7);
  const Tensor x = randn({8, 16, 32, 32}) + 3;
  const Tensor want = x.to(kDouble).mean({0, 2, 3});
  const int threads = get_num_threads();
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    const Tensor got = x.contiguous(kCL).mean({0, 2, 3});
    EXPECT_TRUE(allclose(got, want, 1e-6, 0)) << t << " threads";
    EXPECT_TRUE(allclose(x.contiguous(kCL).sum({0, 2, 3}, true), x.sum({0, 2, 3}, true), 1e-6, 0))
        << t << " threads";
  }
  set_num_threads(threads);
}

TEST(MemoryFormat, ReductionResultsFollowTheInputsLayout) {
  testing::check_reduction_layouts(Device("cpu"));
}

TEST(MemoryFormat, OpDatabaseWithChannelsLastInputs) {
  const std::set<std::string> ran = testing::check_op_db_channels_last(Device("cpu"));
  for (const std::string& name : testing::channels_last_result_ops())
    EXPECT_TRUE(ran.count(name)) << name << " is not in the op database with a 4-d input";
}

// Note [Channels-last max pool]: the NHWC kernels give the plane kernels' values, indices and
// gradients bit for bit, on windows with NaN, infinities, signed zeros and ties (first NaN,
// else first maximum), with padding, dilation and ceil_mode, in each floating dtype; and they
// name the first bad index in the same order.
TEST(MemoryFormat, ChannelsLastMaxPoolEqualsThePlaneKernel) {
  struct Case {
    std::vector<int64_t> k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {{{3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                                   {{2, 3}, {1, 2}, {0, 1}, {2, 1}, true},
                                   {{3, 2}, {3, 1}, {1, 0}, {1, 2}, true}};
  manual_seed(21);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    // Few distinct values (ties), both zeros, infinities and some NaNs; 19 channels (a tail).
    Tensor x = (randint(-3, 4, {3, 19, 9, 8}).to(kFloat) * 0.5);
    x.view({-1}).narrow(0, 0, 40).copy_(tensor(std::vector<float>(40, -0.0f)));
    x.view({-1}).narrow(0, 100, 3).copy_(tensor({NAN, INFINITY, -INFINITY}));
    x.view({-1}).narrow(0, 1500, 2).copy_(tensor({NAN, NAN}));
    x = x.to(t);
    const Tensor xc = x.contiguous(kCL);
    for (const Case& c : cases) {
      const std::string what = fmt::format(
          "{} k {} s {}", to_string(t), to_string(IntArrayRef(c.k)), to_string(IntArrayRef(c.s)));
      const auto [v, i] = max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
      const auto [vc, ic] = max_pool2d_with_indices(xc, c.k, c.s, c.p, c.d, c.ceil);
      EXPECT_TRUE(vc.is_contiguous(kCL) && ic.is_contiguous(kCL)) << what;
      EXPECT_TRUE(testing::same_bytes(vc.contiguous(), v)) << what;
      EXPECT_TRUE(testing::same_bytes(ic.contiguous(), i)) << what;
      const Tensor g = randn(v.sizes()).to(t);
      const Tensor gi = max_pool2d_with_indices_backward(g, x, c.k, c.s, c.p, c.d, c.ceil, i);
      const Tensor gic =
          max_pool2d_with_indices_backward(g.contiguous(kCL), xc, c.k, c.s, c.p, c.d, c.ceil, ic);
      EXPECT_TRUE(gic.is_contiguous(kCL)) << what;
      EXPECT_TRUE(testing::same_bytes(gic.contiguous(), gi)) << what;
    }
  }
  // Two bad indices: both layouts name the first in (plane, position) order, not the first
  // one the NHWC loop meets.
  const Tensor x = randn({2, 3, 4, 4});
  auto [v, i] = max_pool2d_with_indices(x, {2, 2});
  i.view({-1}).narrow(0, 1 * 4 + 2, 1).fill_(16);  // plane 1 (image 0, channel 1), position 2
  i.view({-1}).narrow(0, 0 * 4 + 3, 1).fill_(-1);  // plane 0, position 3: first in NCHW order
  const Tensor g = ones(v.sizes());
  for (bool cl : {false, true}) {
    EXPECT_THROW_MSG(max_pool2d_with_indices_backward(
                         cl ? g.contiguous(kCL) : g, cl ? x.contiguous(kCL) : x, {2, 2}, {2, 2},
                         {0, 0}, {1, 1}, false, cl ? i.contiguous(kCL) : i),
                     IndexError, "index -1 is out of range for an input plane of 4 x 4");
  }
}

// Note [Channels-last average pools]: the NHWC kernels give the plane kernels' values and
// gradients bit for bit (the same additions in the same order) with padding, ceil_mode,
// count_include_pad and divisor_override in each floating dtype; adaptive pooling too, except
// the global pool, which the plane kernel sums in another order. A gradient given channels-last
// with `self` as autograd passes it (its shape alone) takes the NHWC path too, and autograd's
// gradients come back in each input's layout.
TEST(MemoryFormat, ChannelsLastAveragePoolsEqualThePlaneKernels) {
  struct Case {
    std::vector<int64_t> k, s, p;
    bool ceil, include_pad;
    std::optional<int64_t> divisor;
  };
  const std::vector<Case> cases = {{{3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt},
                                   {{2, 3}, {1, 2}, {0, 1}, true, false, std::nullopt},
                                   {{3, 2}, {3, 1}, {1, 0}, true, true, 5}};
  manual_seed(22);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    const Tensor x = randn({3, 70, 9, 8}).to(t);  // 70 channels: a block of 64 and a tail
    const Tensor xc = x.contiguous(kCL);
    for (const Case& c : cases) {
      const std::string what = fmt::format(
          "{} k {} s {}", to_string(t), to_string(IntArrayRef(c.k)), to_string(IntArrayRef(c.s)));
      const Tensor v = avg_pool2d(x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
      const Tensor vc = avg_pool2d(xc, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
      EXPECT_TRUE(vc.is_contiguous(kCL)) << what;
      EXPECT_TRUE(testing::same_bytes(vc.contiguous(), v)) << what;
      const Tensor g = randn(v.sizes()).to(t);
      const Tensor gi = avg_pool2d_backward(g, x, c.k, c.s, c.p, c.ceil, c.include_pad, c.divisor);
      const Tensor shape_only = zeros({}, t).expand(x.sizes());
      for (const Tensor& self : {xc, shape_only}) {
        const Tensor gic = avg_pool2d_backward(g.contiguous(kCL), self, c.k, c.s, c.p, c.ceil,
                                               c.include_pad, c.divisor);
        EXPECT_TRUE(gic.is_contiguous(kCL)) << what;
        EXPECT_TRUE(testing::same_bytes(gic.contiguous(), gi)) << what;
      }
    }
    for (const std::vector<int64_t>& o :
         {std::vector<int64_t>{4, 3}, std::vector<int64_t>{9, 8}, std::vector<int64_t>{1, 1}}) {
      const Tensor v = adaptive_avg_pool2d(x, o), vc = adaptive_avg_pool2d(xc, o);
      EXPECT_TRUE(vc.is_contiguous(kCL));
      if (o[0] == 1)
        EXPECT_TRUE(allclose(vc.to(kDouble), v.to(kDouble), 1e-2, 1e-6)) << to_string(t);
      else
        EXPECT_TRUE(testing::same_bytes(vc.contiguous(), v)) << to_string(t);
    }
  }
  // Through autograd: each input's gradient in its layout, equal to the plane kernels'.
  const Tensor x = randn({2, 16, 8, 8});
  for (bool cl : {false, true}) {
    const Tensor leaf = (cl ? x.contiguous(kCL) : x.clone()).requires_grad_();
    const Tensor y =
        avg_pool2d(leaf, {3, 3}, {2, 2}, {1, 1}).sum() + adaptive_avg_pool2d(leaf, {2, 2}).sum() +
        std::get<0>(max_pool2d_with_indices(leaf, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false)).sum();
    y.backward();
    EXPECT_TRUE(leaf.grad().is_contiguous(cl ? kCL : MemoryFormat::Contiguous)) << cl;
    const Tensor plain = x.clone().requires_grad_();
    (avg_pool2d(plain, {3, 3}, {2, 2}, {1, 1}).sum() + adaptive_avg_pool2d(plain, {2, 2}).sum() +
     std::get<0>(max_pool2d_with_indices(plain, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false)).sum())
        .backward();
    EXPECT_TRUE(allclose(leaf.grad(), plain.grad(), 1e-6, 1e-7)) << cl;
  }
}

// The NHWC bilinear upsampling and adaptive max pooling give the plane kernels' bits (values,
// indices with NaN and ties; upsampling's NaN where the plane kernel's are) in each floating
// dtype.
TEST(MemoryFormat, ChannelsLastUpsampleAndAdaptiveMaxEqualThePlaneKernels) {
  manual_seed(23);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor x = (randint(-3, 4, {2, 19, 9, 7}).to(kFloat) * 0.5);
    x.view({-1}).narrow(0, 50, 3).copy_(tensor({NAN, INFINITY, -INFINITY}));
    x = x.to(t);
    const Tensor xc = x.contiguous(kCL);
    for (const std::vector<int64_t>& o :
         {std::vector<int64_t>{4, 3}, std::vector<int64_t>{9, 7}, std::vector<int64_t>{5, 11}}) {
      const std::string what = fmt::format("{} to {}", to_string(t), to_string(IntArrayRef(o)));
      const auto [v, i] = adaptive_max_pool2d(x, o);
      const auto [vc, ic] = adaptive_max_pool2d(xc, o);
      EXPECT_TRUE(vc.is_contiguous(kCL) && ic.is_contiguous(kCL)) << what;
      EXPECT_TRUE(testing::same_bytes(vc.contiguous(), v)) << what;
      EXPECT_TRUE(testing::same_bytes(ic.contiguous(), i)) << what;
      for (bool align : {false, true}) {
        const Tensor u = upsample_bilinear2d(x, o, align), uc = upsample_bilinear2d(xc, o, align);
        EXPECT_TRUE(uc.is_contiguous(kCL)) << what;
        // (NaN's sign may differ: the compiler contracts the two loops' products into FMAs
        // differently)
        const Tensor ucc = uc.contiguous();
        EXPECT_TRUE(testing::same_bytes(isnan(ucc), isnan(u))) << what << " align " << align;
        EXPECT_TRUE(testing::same_bytes(where(isnan(ucc), zeros_like(u), ucc),
                                        where(isnan(u), zeros_like(u), u)))
            << what << " align " << align;
      }
    }
  }
}

// The separable backwards of upsampling and adaptive average pooling take an NHWC gradient as
// [N, Ho, Wo, C] matrices: the input gradient equals the NCHW formula's, and it is itself
// differentiable (create_graph): the gradient of <dx, v> with respect to g is the forward map
// of v (the adjoint identity), in float64.
TEST(MemoryFormat, SeparableBackwardsOfChannelsLastGradientsAndTheirAdjoint) {
  manual_seed(31);
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> maps = {
      {"upsample_bilinear2d",
       [](const Tensor& t) {
         return upsample_bilinear2d(t, {13, 5}, false);
       }},
      {"upsample_bilinear2d align_corners",
       [](const Tensor& t) {
         return upsample_bilinear2d(t, {4, 11}, true);
       }},
      {"adaptive_avg_pool2d",
       [](const Tensor& t) {
         return adaptive_avg_pool2d(t, {4, 3});
       }},
  };
  for (const auto& [name, f] : maps) {
    const Tensor x = randn({2, 6, 9, 7}, kDouble).contiguous(kCL).requires_grad_();
    const Tensor y = f(x);
    const Tensor g = randn(y.sizes(), kDouble).contiguous(kCL).requires_grad_();
    const Tensor dx = autograd::grad({y}, {x}, {g}, true, true)[0];
    EXPECT_TRUE(dx.is_contiguous(kCL)) << name << ": strides " << to_string(dx.strides());
    const Tensor xp = x.detach().contiguous().requires_grad_();
    const Tensor plain = autograd::grad({f(xp)}, {xp}, {g.detach().contiguous()})[0];
    EXPECT_TRUE(testing::allclose(dx.detach(), plain, 1e-12, 1e-12)) << name;
    const Tensor v = randn(x.sizes(), kDouble);
    const Tensor dg = autograd::grad({(dx * v).sum()}, {g})[0];
    EXPECT_TRUE(testing::allclose(dg, f(v), 1e-12, 1e-12)) << name << ": the adjoint";
  }
}

// Note [Channels-last group norm]: the CPU kernel on an NHWC batch (no gradient wanted: the
// kernel, not the decomposition autograd differentiates) against the plane kernel, for one,
// some and as many groups as channels, with and without an affine map, values far from 0 (the
// shift), and every floating dtype.
TEST(MemoryFormat, ChannelsLastGroupNormEqualsThePlaneKernel) {
  manual_seed(29);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (const int64_t groups : {1, 3, 12}) {
      for (const double offset : {0.0, 300.0}) {
        const Tensor x = (randn({3, 12, 7, 5}) * 2 + offset).to(t);
        const Tensor w = randn({12}).to(t), b = randn({12}).to(t);
        const std::string what =
            fmt::format("{} groups {} offset {}", to_string(t), groups, offset);
        for (const bool affine : {false, true}) {
          const std::optional<Tensor> wo = affine ? std::optional<Tensor>(w) : std::nullopt;
          const std::optional<Tensor> bo = affine ? std::optional<Tensor>(b) : std::nullopt;
          const Tensor y = group_norm(x, groups, wo, bo, 1e-5);
          const Tensor yc = group_norm(x.contiguous(kCL), groups, wo, bo, 1e-5);
          EXPECT_TRUE(yc.is_contiguous(kCL) && !yc.is_contiguous()) << what;
          // (at 300, float's rounding of x - mean alone is ~1e-5 after normalizing, in either)
          const double tol = t == kFloat || t == kDouble ? (offset > 0 ? 1e-4 : 2e-5) : 2e-2;
          EXPECT_TRUE(testing::allclose(yc.to(kDouble), y.to(kDouble), tol, tol))
              << what << " affine " << affine;
        }
      }
    }
  }
}

}  // namespace
}  // namespace xten
