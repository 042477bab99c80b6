// Memory formats on the XPU (docs/memory_format.md): pointwise results in their operands'
// layout, host <-> device copies that keep a channels-last layout, the op database run with
// channels-last inputs, as on the CPU (test_memory_format.cpp), and the NHWC kernels of
// convolution, pooling and batch norm's backward, which reorder nothing.
#include <xten/kernels/xpu/runtime/xpu.h>
#include <xten/profiler/profiler.h>

#include "memory_format_checks.h"
#include "xpu_test_env.h"

namespace xten {
namespace {

namespace prof = xten::profiler;

const bool kEnv = testing::set_xpu_test_env("1G");
constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

TEST(MemoryFormatXpu, PointwiseResultsTakeTheirOperandsLayout) {
  testing::check_pointwise_layouts(Device("xpu"));
}

TEST(MemoryFormatXpu, CopiesBetweenHostAndDeviceKeepTheLayout) {
  const Tensor x = randn({2, 3, 4, 5}), x_cl = x.contiguous(kCL);
  const Tensor d = x_cl.to("xpu");
  EXPECT_TRUE(d.is_contiguous(kCL));
  EXPECT_TRUE(testing::same_bytes(d, x));
  const Tensor back = d.to("cpu");
  EXPECT_TRUE(back.is_contiguous(kCL));
  EXPECT_TRUE(testing::same_bytes(back, x));
  // Converting layouts on either side of the copy.
  EXPECT_TRUE(testing::same_bytes(x.to("xpu").contiguous(kCL).to("cpu"), x));
  EXPECT_TRUE(testing::same_bytes(d.contiguous().to("cpu"), x));
  Tensor into = empty({2, 3, 4, 5}, TensorOptions().device(Device("xpu")).memory_format(kCL));
  into.copy_(x);
  EXPECT_TRUE(testing::same_bytes(into, x));
  Tensor host = empty({2, 3, 4, 5}, TensorOptions().memory_format(kCL));
  host.copy_(x.to("xpu"));
  EXPECT_TRUE(testing::same_bytes(host, x));
  // With a dtype change on the way.
  EXPECT_TRUE(testing::same_bytes(x_cl.to(Device("xpu"), kDouble), x.to(kDouble)));
  EXPECT_TRUE(x_cl.to(Device("xpu"), kDouble).is_contiguous(kCL));
}

TEST(MemoryFormatXpu, ReductionResultsFollowTheInputsLayout) {
  testing::check_reduction_layouts(Device("xpu"));
}

// The names of the kernels `f` launches on the XPU.
struct KernelRun {
  std::string name;
  uint64_t work_items;
};

std::vector<KernelRun> kernel_runs(const std::function<void()>& f) {
  prof::Profiler p;
  p.start();
  f();
  xpu::synchronize();
  p.stop();
  std::vector<KernelRun> runs;
  for (const auto& d : p.device_events())
    if (d.kind == "kernel") runs.push_back({d.name, d.global_size});
  return runs;
}

std::vector<std::string> kernels_run(const std::function<void()>& f) {
  std::vector<std::string> names;
  for (const KernelRun& k : kernel_runs(f)) names.push_back(k.name);
  return names;
}

// `f` on channels-last XPU operands runs `expect_kernel` and no strided copy kernel (a reorder of
// an operand or a result; copy.cl's `_1d` kernels copy dense runs, as a clone does), and gives a
// channels-last result. A strided copy of at most `weight_elements` (rounded up to whole
// work-groups of 256) is a weight's transposition for a product (Note [Row strips]), allowed.
void expect_nhwc(const char* what, const std::function<Tensor()>& f,
                 const std::string& expect_kernel, int64_t weight_elements = 0) {
  (void)f();  // builds the kernels outside the profile
  Tensor r;
  const std::vector<KernelRun> runs = kernel_runs([&] { r = f(); });
  const uint64_t weight_items = static_cast<uint64_t>((weight_elements + 255) / 256 * 256);
  bool ran = false;
  for (const auto& [n, items] : runs) {
    const bool dense = n.size() > 3 && n.compare(n.size() - 3, 3, "_1d") == 0;
    EXPECT_FALSE(n.rfind("copy_", 0) == 0 && !dense && items > weight_items)
        << what << " reordered: " << n << " (" << items << " work-items)";
    ran = ran || n.rfind(expect_kernel, 0) == 0;
  }
  EXPECT_TRUE(ran) << what << " did not run " << expect_kernel;
  EXPECT_TRUE(r.is_contiguous(kCL)) << what << ": strides " << to_string(r.strides());
}

TEST(MemoryFormatXpu, ConvolutionsReadAndWriteNhwcAndEqualTheCpu) {
  struct Conv {
    int64_t c, o, k, stride, pad, dil, groups;
  };
  // 3x3, strided, dilated, grouped, depthwise, 1x1 (the input itself as the columns).
  for (const Conv cv :
       {Conv{6, 8, 3, 1, 1, 1, 1}, Conv{6, 4, 3, 2, 1, 1, 2}, Conv{4, 6, 3, 1, 2, 2, 1},
        Conv{4, 4, 3, 1, 1, 1, 4}, Conv{6, 10, 1, 1, 0, 1, 2}}) {
    SCOPED_TRACE(::testing::Message() << "c " << cv.c << " o " << cv.o << " k " << cv.k
                                      << " stride " << cv.stride << " groups " << cv.groups);
    const Tensor x = randn({3, cv.c, 9, 7}), w = randn({cv.o, cv.c / cv.groups, cv.k, cv.k});
    const Tensor b = randn({cv.o});
    const DimVector st{cv.stride, cv.stride}, pd{cv.pad, cv.pad}, dl{cv.dil, cv.dil};
    const Tensor xd = x.to("xpu").contiguous(kCL), wd = w.to("xpu").contiguous(kCL);
    const Tensor bd = b.to("xpu");
    const Tensor y = conv2d(x, w, b, st, IntArrayRef(pd), dl, cv.groups);
    expect_nhwc(
        "conv2d", [&] { return conv2d(xd, wd, bd, st, IntArrayRef(pd), dl, cv.groups); },
        cv.k == 1 ? "bmm_" : "im2col_nhwc_", w.numel());
    EXPECT_TRUE(testing::allclose(conv2d(xd, wd, bd, st, IntArrayRef(pd), dl, cv.groups).to("cpu"),
                                  y, 1e-4, 1e-5));
    // The input gradient (a transposed convolution) and the weight gradient, channels-last.
    const Tensor g = randn(y.sizes()), gd = g.to("xpu").contiguous(kCL);
    const int64_t out_pad = (x.size(2) + 2 * cv.pad - cv.dil * (cv.k - 1) - 1) % cv.stride;
    const DimVector op2{out_pad, (x.size(3) + 2 * cv.pad - cv.dil * (cv.k - 1) - 1) % cv.stride};
    expect_nhwc(
        "conv_transpose2d",
        [&] { return conv_transpose2d(gd, wd, std::nullopt, st, pd, op2, cv.groups, dl); },
        "col2im_nhwc_");
    const Tensor dx = conv_transpose2d(g, w, std::nullopt, st, pd, op2, cv.groups, dl);
    ASSERT_EQ(dx.sizes(), x.sizes());
    EXPECT_TRUE(testing::allclose(
        conv_transpose2d(gd, wd, std::nullopt, st, pd, op2, cv.groups, dl).to("cpu"), dx, 1e-4,
        1e-5));
    expect_nhwc(
        "conv2d_backward_weight",
        [&] { return conv2d_backward_weight(gd, xd, w.sizes(), st, pd, dl, cv.groups); }, "bmm_");
    EXPECT_TRUE(testing::allclose(
        conv2d_backward_weight(gd, xd, w.sizes(), st, pd, dl, cv.groups).to("cpu"),
        conv2d_backward_weight(g, x, w.sizes(), st, pd, dl, cv.groups), 1e-4, 1e-4));
  }
}

// Note [Preserved layout]: moving a transposed or permuted tensor to the XPU and back keeps its
// dims' order and its values.
TEST(MemoryFormatXpu, PermutedTensorsKeepTheirOrderAcrossDevices) {
  for (const Tensor& x : {randn({5, 7}).t(), randn({2, 3, 4, 5}).permute({3, 0, 2, 1})}) {
    const Tensor d = x.to("xpu");
    EXPECT_EQ(d.strides(), x.clone().strides());
    EXPECT_EQ(d.clone().strides(), x.clone().strides());
    const Tensor back = d.to("cpu");
    EXPECT_EQ(back.strides(), x.clone().strides());
    EXPECT_TRUE(testing::same_bytes(back.contiguous(), x.contiguous()));
    EXPECT_TRUE(
        testing::same_bytes(d.to(kDouble).to("cpu").contiguous(), x.to(kDouble).contiguous()));
  }
}

// conv_transpose2d's weight gradient for channels-last activations is conv2d's with the roles
// of the activations swapped (kernels/xpu/ops/conv.cpp): no reorder, the CPU's values. An
// output_padding of the stride or more (dilation 2) does not fit the swap and takes the
// convolution path, with the same values.
TEST(MemoryFormatXpu, TransposedConvolutionWeightGradientsReadNhwc) {
  struct Case {
    int64_t c, o, stride, pad, out_pad, dil, groups;
    bool swapped;
  };
  for (const Case cv : {Case{6, 4, 1, 1, 0, 1, 1, true}, Case{4, 6, 2, 1, 1, 1, 2, true},
                        Case{4, 4, 2, 0, 0, 1, 4, true}, Case{4, 6, 1, 1, 1, 2, 1, false}}) {
    SCOPED_TRACE(::testing::Message() << "c " << cv.c << " o " << cv.o << " stride " << cv.stride
                                      << " out_pad " << cv.out_pad << " groups " << cv.groups);
    const Tensor x = randn({3, cv.c, 5, 6}), w = randn({cv.c, cv.o / cv.groups, 3, 3});
    const DimVector st{cv.stride, cv.stride}, pd{cv.pad, cv.pad}, op{cv.out_pad, cv.out_pad},
        dl{cv.dil, cv.dil};
    const Tensor y = conv_transpose2d(x, w, std::nullopt, st, pd, op, cv.groups, dl);
    const Tensor g = randn(y.sizes());
    const Tensor xd = x.to("xpu").contiguous(kCL), gd = g.to("xpu").contiguous(kCL);
    const Tensor dw = conv2d_backward_weight(g, x, w.sizes(), st, pd, dl, cv.groups, true);
    auto on_xpu = [&] {
      return conv2d_backward_weight(gd, xd, w.sizes(), st, pd, dl, cv.groups, true);
    };
    if (cv.swapped) expect_nhwc("conv_transpose2d weight gradient", on_xpu, "bmm_");
    EXPECT_TRUE(testing::allclose(on_xpu().to("cpu"), dw, 1e-4, 1e-4));
  }
}

// A batch whose columns pass the 64 MiB chunk (7.2 MB an image here: chunks of 8 images), so
// the weight gradient adds the chunks' products, and the forward and input gradient run
// chunk by chunk.
TEST(MemoryFormatXpu, EmptyNhwcBatchesConvolve) {
  const Tensor x = empty({0, 4, 5, 5}, TensorOptions().device(Device("xpu")).memory_format(kCL));
  const Tensor w = randn({6, 4, 3, 3}).to("xpu").contiguous(kCL);
  const Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  EXPECT_EQ(y.sizes(), IntArrayRef({0, 6, 5, 5}));
  const Tensor dw = conv2d_backward_weight(y, x, w.sizes(), {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_TRUE(testing::same_bytes(dw.to("cpu").contiguous(), zeros({6, 4, 3, 3})));
  EXPECT_EQ(conv_transpose2d(y, w, std::nullopt, {1, 1}, {1, 1}).sizes(), x.sizes());
}

TEST(MemoryFormatXpu, ChunkedNhwcConvolutionsEqualTheCpu) {
  const Tensor x = randn({10, 64, 56, 56}), w = randn({64, 64, 3, 3}) * 0.05;
  const Tensor xd = x.to("xpu").contiguous(kCL), wd = w.to("xpu").contiguous(kCL);
  const Tensor y = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  EXPECT_TRUE(
      testing::allclose(conv2d(xd, wd, std::nullopt, {1, 1}, {1, 1}).to("cpu"), y, 1e-4, 1e-4));
  const Tensor g = randn(y.sizes()) * 0.1, gd = g.to("xpu").contiguous(kCL);
  const Tensor dw = conv2d_backward_weight(gd, xd, w.sizes(), {1, 1}, {1, 1}, {1, 1}, 1);
  EXPECT_TRUE(dw.is_contiguous(kCL));
  EXPECT_TRUE(testing::allclose(dw.to("cpu"),
                                conv2d_backward_weight(g, x, w.sizes(), {1, 1}, {1, 1}, {1, 1}, 1),
                                1e-3, 1e-3));
  EXPECT_TRUE(testing::allclose(conv_transpose2d(gd, wd, std::nullopt, {1, 1}, {1, 1}).to("cpu"),
                                conv_transpose2d(g, w, std::nullopt, {1, 1}, {1, 1}), 1e-4, 1e-4));
}

TEST(MemoryFormatXpu, PoolsAndBatchNormBackwardReadNhwcAndEqualThePlaneKernels) {
  Tensor x = randn({2, 5, 9, 8});
  x.view({-1}).narrow(0, 40, 3).copy_(tensor({NAN, INFINITY, -INFINITY}));
  const Tensor xd = x.to("xpu"), xcl = xd.contiguous(kCL);
  const std::vector<std::pair<const char*, std::function<std::vector<Tensor>(const Tensor&)>>> ops =
      {
          {"max_pool2d",
           [](const Tensor& t) {
             auto [v, i] = max_pool2d_with_indices(t, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
             return std::vector<Tensor>{v, i};
           }},
          {"avg_pool2d",
           [](const Tensor& t) {
             return std::vector<Tensor>{avg_pool2d(t, {3, 2}, {2, 1}, {1, 1}, true, false)};
           }},
          {"adaptive_avg_pool2d",
           [](const Tensor& t) {
             return std::vector<Tensor>{adaptive_avg_pool2d(t, {4, 3})};
           }},
          {"adaptive_max_pool2d",
           [](const Tensor& t) {
             auto [v, i] = adaptive_max_pool2d(t, {4, 3});
             return std::vector<Tensor>{v, i};
           }},
          {"upsample_bilinear2d",
           [](const Tensor& t) {
             return std::vector<Tensor>{upsample_bilinear2d(t, {13, 5}, false)};
           }},
      };
  for (const auto& [name, f] : ops) {
    const std::vector<Tensor> plain = f(xd), cl = f(xcl);
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_TRUE(testing::same_bytes(cl[i].to("cpu"), plain[i].to("cpu")))
          << name << " result " << i;
      EXPECT_TRUE(cl[i].is_contiguous(kCL)) << name;
    }
    expect_nhwc(
        name, [&, f = f] { return f(xcl)[0]; }, name);
  }
  // max_pool2d's backward (a composite: a scatter_add of [n, ho*wo, c] rows) keeps NHWC.
  const auto [v, idx] = max_pool2d_with_indices(xcl, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false);
  const Tensor gv = randn(v.sizes()).to("xpu"), gv_cl = gv.contiguous(kCL);
  const Tensor plain_dx = max_pool2d_with_indices_backward(gv, xd, {3, 3}, {2, 2}, {1, 1}, {1, 1},
                                                           false, idx.contiguous());
  expect_nhwc(
      "max_pool2d_with_indices_backward",
      [&] {
        const Tensor dx = max_pool2d_with_indices_backward(gv_cl, xcl, {3, 3}, {2, 2}, {1, 1},
                                                           {1, 1}, false, idx);
        EXPECT_TRUE(testing::allclose(dx.to("cpu"), plain_dx.to("cpu"), 1e-6, 1e-7));
        return dx;
      },
      "scatter_add");
  // batch_norm's backward in training and in eval: the (n*h*w, c) rows as they lie.
  const Tensor w = rand({5}).to("xpu"), rm = randn({5}).to("xpu"), rv = rand({5}).to("xpu") + 0.5;
  const Tensor y = randn({2, 5, 9, 8}).to("xpu"), g = y.contiguous(kCL);
  const Tensor xf = randn({2, 5, 9, 8}).to("xpu"), xfcl = xf.contiguous(kCL);
  for (const bool training : {true, false}) {
    const auto plain = batch_norm_backward(y, xf, w, rm, rv, training, 1e-5);
    const auto cl = batch_norm_backward(g, xfcl, w, rm, rv, training, 1e-5);
    EXPECT_TRUE(
        testing::allclose(std::get<0>(cl).to("cpu"), std::get<0>(plain).to("cpu"), 1e-5, 1e-6));
    EXPECT_TRUE(
        testing::allclose(std::get<1>(cl).to("cpu"), std::get<1>(plain).to("cpu"), 1e-4, 1e-5));
    EXPECT_TRUE(
        testing::allclose(std::get<2>(cl).to("cpu"), std::get<2>(plain).to("cpu"), 1e-4, 1e-5));
    expect_nhwc(
        "batch_norm_backward",
        [&] { return std::get<0>(batch_norm_backward(g, xfcl, w, rm, rv, training, 1e-5)); },
        "batch_norm_backward_");
  }
}

// avg_pool2d_backward's XPU kernel (one work-item per input element, either layout) gives the
// CPU kernel's bits: the same cells, order and divisors, padding, ceil_mode and divisor_override
// included; the NHWC run reorders nothing.
TEST(MemoryFormatXpu, AveragePoolBackwardEqualsTheCpuInBothLayouts) {
  struct Pool {
    int64_t k, s, p;
    bool ceil, include_pad;
    std::optional<int64_t> divisor;
  };
  for (ScalarType t : {kFloat, kBFloat16}) {
    for (const Pool pl : {Pool{3, 2, 1, false, true, std::nullopt},
                          Pool{3, 2, 1, true, false, std::nullopt}, Pool{2, 2, 0, false, true, 3},
                          Pool{3, 1, 1, true, true, std::nullopt}, Pool{4, 3, 2, true, false, 5}}) {
      const std::string what = fmt::format("{} k {} s {} p {} ceil {} include_pad {}", to_string(t),
                                           pl.k, pl.s, pl.p, pl.ceil, pl.include_pad);
      const Tensor x = randn({2, 5, 9, 8}).to(t);
      const Tensor y = avg_pool2d(x, {pl.k, pl.k}, {pl.s, pl.s}, {pl.p, pl.p}, pl.ceil,
                                  pl.include_pad, pl.divisor);
      const Tensor g = randn(y.sizes()).to(t);
      auto backward = [&](const Tensor& gg, const Tensor& xx) {
        return avg_pool2d_backward(gg, xx, {pl.k, pl.k}, {pl.s, pl.s}, {pl.p, pl.p}, pl.ceil,
                                   pl.include_pad, pl.divisor);
      };
      const Tensor expect = backward(g, x);
      const Tensor xd = x.to("xpu"), gd = g.to("xpu");
      EXPECT_TRUE(testing::same_bytes(backward(gd, xd).to("cpu"), expect)) << what;
      const Tensor gcl = gd.contiguous(kCL), xcl = xd.contiguous(kCL);
      EXPECT_TRUE(testing::same_bytes(backward(gcl, xcl).to("cpu").contiguous(), expect)) << what;
      expect_nhwc(
          "avg_pool2d_backward", [&] { return backward(gcl, xcl); }, "avg_pool2d_backward");
    }
  }
}

TEST(MemoryFormatXpu, GroupNormReadsNhwcAndEqualsTheCpu) {
  for (ScalarType t : {kFloat, kBFloat16}) {
    for (const int64_t groups : {1, 3, 12}) {
      const Tensor x = (randn({3, 12, 7, 5}) * 2 + 5).to(t), w = randn({12}), b = randn({12});
      const Tensor xd = x.to("xpu").contiguous(kCL), wd = w.to("xpu"), bd = b.to("xpu");
      const std::string what = fmt::format("{} groups {}", to_string(t), groups);
      expect_nhwc(
          "group_norm", [&] { return group_norm(xd, groups, wd, bd, 1e-5); }, "group_norm_");
      const Tensor y = group_norm(xd, groups, wd, bd, 1e-5).to("cpu");
      const double tol = t == kFloat ? 1e-5 : 2e-2;
      EXPECT_TRUE(
          testing::allclose(y.to(kFloat), group_norm(x, groups, w, b, 1e-5).to(kFloat), tol, tol))
          << what;
      EXPECT_TRUE(testing::allclose(
          y.to(kFloat), group_norm(x.to("xpu"), groups, wd, bd, 1e-5).to("cpu").to(kFloat), tol,
          tol))
          << what << " against the XPU's NCHW kernel";
    }
  }
}

// Sums whose reduced dims lead the input in memory (a broadcast's gradient, a transposed
// matrix's rows, a channels-last batch's per-channel sums) add columns as the input lies
// (reduce_sum_cols), with no transposing copy, and equal the CPU's.
TEST(MemoryFormatXpu, SumsOfLeadingDimsReadTheInputAsItLies) {
  struct Case {
    const char* what;
    Tensor x;
    std::vector<int64_t> dims;
  };
  const Tensor cl = randn({4, 6, 5, 3}).contiguous(kCL);
  for (ScalarType t : {kFloat, kBFloat16, kDouble}) {
    for (const Case& c : {Case{"rows of [300, 70]", randn({300, 70}), {0}},
                          Case{"two leading dims", randn({3, 5, 7}), {0, 1}},
                          Case{"rows of a transposed matrix", randn({70, 300}).t(), {1}},
                          Case{"per-channel sums of NHWC", cl, {0, 2, 3}}}) {
      const std::string what = fmt::format("{} {}", c.what, to_string(t));
      // (`to` lays a transposed matrix out contiguous: transpose after it)
      const bool transposed = c.x.stride(0) == 1 && c.x.dim() == 2;
      const Tensor x = transposed ? c.x.t().to(t).t() : c.x.to(t);
      const Tensor xd = transposed ? c.x.t().to(t).to("xpu").t() : x.to("xpu");
      ASSERT_EQ(xd.strides(), x.strides()) << what;
      const double tol = t == kBFloat16 ? 1e-2 : 1e-5;
      for (const bool keepdim : {false, true}) {
        const Tensor s = xd.sum(c.dims, keepdim), m = xd.mean(c.dims, keepdim);
        EXPECT_TRUE(testing::allclose(s.to("cpu").to(kDouble), x.sum(c.dims, keepdim).to(kDouble),
                                      tol, tol))
            << what;
        EXPECT_TRUE(testing::allclose(m.to("cpu").to(kDouble), x.mean(c.dims, keepdim).to(kDouble),
                                      tol, tol))
            << what;
        EXPECT_EQ(s.strides(), x.sum(c.dims, keepdim).strides()) << what;
      }
      (void)xd.sum(c.dims);
      bool columns = false;
      for (const auto& n : kernels_run([&] { (void)xd.sum(c.dims); })) {
        columns = columns || n.rfind("reduce_sum_cols_", 0) == 0;
        EXPECT_NE(n.rfind("copy_", 0), 0u) << what << ": " << n;
      }
      EXPECT_TRUE(columns) << what;
    }
  }
}

TEST(MemoryFormatXpu, OpDatabaseWithChannelsLastInputs) {
  const std::set<std::string> ran = testing::check_op_db_channels_last(Device("xpu"));
  EXPECT_TRUE(ran.count("conv2d"));
}

}  // namespace
}  // namespace xten
