// Quantized tensors and the quantized CPU ops (docs/quantization.md). Every op is checked
// against its float computation on the dequantized values, quantized the same way.
#include <gtest/gtest.h>

#include <cmath>

#include <xten/quantization/ops.h>
#include <xten/xten.h>

#include "quantized_checks.h"
#include "test_util.h"

using namespace xten;
using xten::testing::allclose;
using xten::testing::expect_ints_near;
using xten::testing::ints;
using xten::testing::uniform;

namespace {

int64_t reference_quantize(double v, double scale, int64_t zp, int64_t lo, int64_t hi) {
  const float r = std::nearbyint(static_cast<float>(v) * (1.0f / static_cast<float>(scale)));
  return std::min(hi, std::max(lo, static_cast<int64_t>(r) + zp));
}

}  // namespace

TEST(Quantized, PerTensorQuantizeIntReprDequantize) {
  const Tensor x = tensor({-1.0f, -0.04f, 0.0f, 0.05f, 0.15f, 1.234f, 24.0f, 30.0f});
  const Tensor q = quantize_per_tensor(x, 0.1, 10, kQUInt8);
  EXPECT_TRUE(q.is_quantized());
  EXPECT_EQ(q.dtype(), kQUInt8);
  EXPECT_EQ(q.qscheme(), QScheme::PerTensorAffine);
  EXPECT_DOUBLE_EQ(q.q_scale(), 0.1);
  EXPECT_EQ(q.q_zero_point(), 10);
  const std::vector<float> xs = {-1.0f, -0.04f, 0.0f, 0.05f, 0.15f, 1.234f, 24.0f, 30.0f};
  std::vector<int64_t> want;
  for (float v : xs) want.push_back(reference_quantize(v, 0.1, 10, 0, 255));
  EXPECT_EQ(ints(q), want);
  EXPECT_EQ(want.front(), 0);   // -1.0 / 0.1 + 10 = 0
  EXPECT_EQ(want.back(), 255);  // saturated
  EXPECT_EQ(q.int_repr().dtype(), kByte);
  const Tensor d = q.dequantize();
  EXPECT_EQ(d.dtype(), kFloat);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_FLOAT_EQ(d.data_ptr<float>()[i], static_cast<float>(want[i] - 10) * 0.1f);
  // qint8: [-128, 127]; NaN goes to the zero point.
  const Tensor q8 = quantize_per_tensor(tensor({-100.0f, NAN, 100.0f}), 0.5, -3, kQInt8);
  EXPECT_EQ(ints(q8), (std::vector<int64_t>{-128, -3, 127}));
  EXPECT_EQ(q8.int_repr().dtype(), kChar);
  // float64 and bfloat16 inputs quantize as their float32 values.
  EXPECT_EQ(ints(quantize_per_tensor(x.to(kDouble), 0.1, 10, kQUInt8)), want);
  const Tensor q32 = quantize_per_tensor(tensor({1e6f, -2.0f}), 0.001, 0, kQInt32);
  EXPECT_EQ(ints(q32), (std::vector<int64_t>{1000000000, -2000}));
}

TEST(Quantized, PrintsValuesAndParameters) {
  const Tensor q = quantize_per_tensor(tensor({0.0f, 0.5f, 1.0f}), 0.5, 2, kQUInt8);
  EXPECT_EQ(q.toString(),
            "tensor([0.0000, 0.5000, 1.0000], size=(3), dtype=quint8, "
            "quantization_scheme=per_tensor_affine, scale=0.5, zero_point=2)");
  const Tensor w =
      quantize_per_channel(tensor({1.0f, -1.0f, 2.0f, 4.0f}, IntArrayRef({2, 2})),
                           tensor({0.5, 0.25}, TensorOptions(kDouble)), tensor({0, 0}), 0, kQInt8);
  const std::string s = w.toString();
  EXPECT_NE(s.find("quantization_scheme=per_channel_affine"), std::string::npos) << s;
  EXPECT_NE(s.find("axis=0"), std::string::npos) << s;
  EXPECT_NE(s.find("[ 2.,  4.]"), std::string::npos) << s;
}

TEST(Quantized, PerChannel) {
  const Tensor x = uniform({3, 4, 2}, -2, 2, 1);
  for (int64_t axis : {0, 1, 2}) {
    const int64_t c = x.size(axis);
    const Tensor scales = arange(1, c + 1, 1, TensorOptions(kDouble)) * 0.01;
    const Tensor zps = arange(0, c, 1, TensorOptions(kLong)) - 1;
    const Tensor q = quantize_per_channel(x, scales, zps, axis, kQInt8);
    EXPECT_EQ(q.qscheme(), QScheme::PerChannelAffine);
    EXPECT_EQ(q.q_per_channel_axis(), axis);
    EXPECT_TRUE(allclose(q.q_per_channel_scales(), scales, 0, 0));
    EXPECT_TRUE(allclose(q.q_per_channel_zero_points(), zps, 0, 0));
    // Each channel quantized with its own parameters.
    const Tensor d = q.dequantize();
    for (int64_t ch = 0; ch < c; ++ch) {
      const double s = scales.data_ptr<double>()[ch];
      const int64_t z = zps.data_ptr<int64_t>()[ch];
      const Tensor xc = x.select(axis, ch).contiguous();
      const Tensor qc = q.int_repr().select(axis, ch).to(kLong).contiguous();
      for (int64_t i = 0; i < xc.numel(); ++i) {
        const int64_t want = reference_quantize(xc.data_ptr<float>()[i], s, z, -128, 127);
        ASSERT_EQ(qc.data_ptr<int64_t>()[i], want) << "axis " << axis << " channel " << ch;
      }
      EXPECT_TRUE(allclose(d.select(axis, ch), (qc - z).to(kFloat) * s, 1e-6, 1e-6));
    }
  }
  EXPECT_THROW_MSG(quantize_per_channel(x, tensor({0.1, 0.1}, TensorOptions(kDouble)),
                                        tensor({0, 0}), 0, kQInt8),
                   ValueError, "one value for each of the 3 channels along axis 0");
  EXPECT_THROW_MSG(quantize_per_channel(x, tensor({0.1, 0.1, 0.1}, TensorOptions(kDouble)),
                                        tensor({0.0, 0.0, 0.0}), 0, kQInt8),
                   TypeError, "zero_points must be integers");
  const Tensor q = quantize_per_channel(x, tensor({0.1, 0.1, 0.1}, TensorOptions(kDouble)),
                                        tensor({0, 0, 0}), 0, kQInt8);
  EXPECT_THROW_MSG(q.q_scale(), TypeError, "q_scale");
  EXPECT_THROW_MSG(q.transpose(0, 1), NotImplementedError, "per-channel");
}

TEST(Quantized, ClearErrors) {
  const Tensor x = tensor({1.0f, 2.0f});
  const Tensor q = quantize_per_tensor(x, 0.1, 0, kQUInt8);
  // Ops that do not take quantized tensors name themselves.
  EXPECT_THROW_MSG(q + q, NotImplementedError, "add");
  EXPECT_THROW_MSG(q.sum(), NotImplementedError, "sum");
  EXPECT_THROW_MSG(q.exp(), NotImplementedError, "exp");
  EXPECT_THROW_MSG(q.to(kFloat), NotImplementedError, "dequantize() it first");
  EXPECT_THROW_MSG(q.to(Device("xpu"), kFloat), NotImplementedError, "dequantize() it first");
  EXPECT_TRUE(q.to(kQUInt8).is_same(q));
  Tensor mutable_q = q;
  EXPECT_THROW_MSG(mutable_q.requires_grad_(true), TypeError, "requires_grad");
  // Bad parameters and inputs.
  EXPECT_THROW_MSG(quantize_per_tensor(x, 0.0, 0, kQUInt8), ValueError, "scale must be positive");
  EXPECT_THROW_MSG(quantize_per_tensor(x, NAN, 0, kQUInt8), ValueError, "scale must be positive");
  EXPECT_THROW_MSG(quantize_per_tensor(x, 0.1, 256, kQUInt8), ValueError,
                   "zero_point 256 is outside the range [0, 255] of quint8");
  EXPECT_THROW_MSG(quantize_per_tensor(x, 0.1, -129, kQInt8), ValueError, "[-128, 127]");
  EXPECT_THROW_MSG(quantize_per_tensor(x, 0.1, 0, kFloat), TypeError, "quint8, qint8 or qint32");
  EXPECT_THROW_MSG(quantize_per_tensor(tensor({1, 2}), 0.1, 0, kQUInt8), TypeError,
                   "floating-point");
  EXPECT_THROW_MSG(empty({2}, TensorOptions(kQUInt8)), TypeError, "quantize_per_tensor");
  EXPECT_THROW_MSG(x.q_scale(), TypeError, "q_scale");
  EXPECT_THROW_MSG(x.int_repr(), NotImplementedError, "int_repr");
  EXPECT_THROW_MSG(promote_types(kQUInt8, kFloat), TypeError, "quantized");
  EXPECT_THROW_MSG(save(NamedTensorList{{"q", q}}, "/tmp/xten_quantized_never_written.safetensors"),
                   NotImplementedError, "quantized checkpoints are not supported");
  // copy_ between different quantizers.
  Tensor q2 = quantize_per_tensor(x, 0.2, 0, kQUInt8);
  EXPECT_THROW_MSG(q2.copy_(q), NotImplementedError, "quantization parameters");
}

TEST(Quantized, ViewsAndLayouts) {
  const Tensor x = uniform({2, 3, 4, 5}, -1, 1, 2);
  const Tensor q = quantize_per_tensor(x, 0.01, 100, kQUInt8);
  const Tensor d = q.dequantize();
  // Views keep the quantizer and read the same integers.
  const Tensor f = q.flatten(1);
  EXPECT_TRUE(f.is_quantized());
  EXPECT_DOUBLE_EQ(f.q_scale(), 0.01);
  EXPECT_TRUE(allclose(f.dequantize(), d.flatten(1), 0, 0));
  const Tensor t = q.transpose(1, 3);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(allclose(t.dequantize(), d.transpose(1, 3), 0, 0));
  const Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.q_zero_point(), 100);
  EXPECT_TRUE(allclose(c.dequantize(), d.transpose(1, 3), 0, 0));
  EXPECT_TRUE(allclose(q.reshape({6, 20}).dequantize(), d.reshape({6, 20}), 0, 0));
  EXPECT_TRUE(allclose(q.select(1, 2).dequantize(), d.select(1, 2), 0, 0));
  const Tensor k = q.clone();
  EXPECT_FALSE(k.is_same(q));
  EXPECT_EQ(ints(k), ints(q));
  // Channels-last in, channels-last out.
  const Tensor xl = x.contiguous(MemoryFormat::ChannelsLast);
  const Tensor ql = quantize_per_tensor(xl, 0.01, 100, kQUInt8);
  EXPECT_TRUE(ql.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(ints(ql), ints(q));
  EXPECT_TRUE(ql.dequantize().is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(allclose(ql.dequantize(), d, 0, 0));
  EXPECT_TRUE(ql.clone().is_contiguous(MemoryFormat::ChannelsLast));
}

TEST(Quantized, ReluAndPooling) {
  const Tensor x = uniform({2, 3, 9, 7}, -1, 1, 3);
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    const Tensor q = quantize_per_tensor(x.contiguous(fmt), 0.01, 120, kQUInt8);
    const Tensor d = q.dequantize();
    const Tensor r = relu(q);
    EXPECT_EQ(r.q_zero_point(), 120);
    EXPECT_TRUE(allclose(r.dequantize(), relu(d), 0, 0));
    Tensor r2 = q.clone();
    relu_(r2);
    EXPECT_EQ(ints(r2), ints(r));
    const Tensor m = max_pool2d(q, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false);
    EXPECT_TRUE(
        allclose(m.dequantize(), max_pool2d(d, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false), 0, 0));
    EXPECT_EQ(m.suggest_memory_format(), fmt);
    for (auto size : {std::vector<int64_t>{1, 1}, std::vector<int64_t>{4, 3}}) {
      const Tensor a = adaptive_avg_pool2d(q, size);
      EXPECT_EQ(a.q_zero_point(), 120);
      // Within half a step of the float average (the mean of the integers, rounded).
      EXPECT_TRUE(allclose(a.dequantize(), adaptive_avg_pool2d(d, size), 0, 0.005 + 1e-6));
      if (size[0] > 1) {
        EXPECT_EQ(a.suggest_memory_format(), fmt);  // 1x1 is both layouts
      }
    }
  }
}

TEST(Quantized, Add) {
  // 2 x 3 x 7 x 5 = 210 elements: the uint8 kernel's 16-wide steps and its scalar tail.
  const Tensor a = uniform({2, 3, 7, 5}, -1, 1, 4), b = uniform({2, 3, 7, 5}, -2, 0.5, 5);
  for (ScalarType dt : {kQUInt8, kQInt8}) {
    const int64_t shift = dt == kQInt8 ? -128 : 0;
    const Tensor qa = quantize_per_tensor(a, 0.01, 110 + shift, dt);
    const Tensor qb = quantize_per_tensor(b, 0.02, 130 + shift, dt);
    for (bool relu_after : {false, true}) {
      const Tensor out = quantized::add(qa, qb, 0.03, 120 + shift, relu_after);
      EXPECT_DOUBLE_EQ(out.q_scale(), 0.03);
      Tensor sum = qa.dequantize() + qb.dequantize();
      if (relu_after) sum = relu(sum);
      expect_ints_near(out, quantize_per_tensor(sum, 0.03, 120 + shift, dt), 1, "add");
    }
  }
  const Tensor qa = quantize_per_tensor(a, 0.01, 110, kQUInt8);
  EXPECT_THROW_MSG(quantized::add(qa, qa.flatten(), 0.1, 0), NotImplementedError,
                   "no broadcasting");
}

// conv2d and linear against the float computation on the dequantized operands, quantized with
// the output's parameters: at most one step apart (rounding of the int32 sum's scaling).
// Activations stay within [0, 127] of uint8: without VNNI, oneDNN's (and fbgemm's) int8 products
// add pairs of u8 * s8 products in int16, which saturates for larger values
// (docs/quantization.md, "Saturation").
TEST(Quantized, Conv2dMatchesFloat) {
  int seed = 10;
  for (const xten::testing::QuantizedConvCase& c : xten::testing::quantized_conv_cases())
    for (bool per_channel : {false, true})
      for (bool relu_after : {false, true})
        for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
          if (fmt == MemoryFormat::ChannelsLast && c.x.size() != 4) continue;
          const Tensor x = uniform(c.x, -0.2, 1.0, seed++);
          const Tensor w = uniform(c.w, -0.5, 0.5, seed++);
          const Tensor bias = uniform({c.w[0]}, -0.3, 0.3, seed++);
          const Tensor qx = quantize_per_tensor(x.contiguous(fmt), 0.01, 20, kQUInt8);
          Tensor qw;
          if (per_channel) {
            const Tensor s = (w.abs().amax({1, 2, 3}) / 127).to(kDouble);
            qw = quantize_per_channel(w, s, zeros({c.w[0]}, TensorOptions(kLong)), 0, kQInt8);
          } else {
            qw = quantize_per_tensor(w, w.abs().max().item<double>() / 127, 0, kQInt8);
          }
          const Tensor out = quantized::conv2d(qx, qw, bias, c.stride, c.pad, c.dil, c.groups, 0.05,
                                               60, relu_after);
          Tensor ref = conv2d(qx.dequantize(), qw.dequantize(), bias, c.stride, IntArrayRef(c.pad),
                              c.dil, c.groups);
          if (relu_after) ref = relu(ref);
          const std::string what = fmt::format(
              "conv x {} w {} per_channel {} relu {} fmt {}", to_string(IntArrayRef(c.x)),
              to_string(IntArrayRef(c.w)), per_channel, relu_after, static_cast<int>(fmt));
          EXPECT_EQ(out.sizes(), ref.sizes()) << what;
          EXPECT_DOUBLE_EQ(out.q_scale(), 0.05);
          EXPECT_EQ(out.q_zero_point(), 60);
          // Channels-last out for any input, as PyTorch's quantized convolution.
          if (c.x.size() == 4) {
            EXPECT_TRUE(out.is_contiguous(MemoryFormat::ChannelsLast)) << what;
          }
          expect_ints_near(out, quantize_per_tensor(ref, 0.05, 60, kQUInt8), 1, what);
        }
}

TEST(Quantized, LinearMatchesFloat) {
  const Tensor x = uniform({5, 3, 24}, -0.2, 1.0, 30), w = uniform({10, 24}, -0.5, 0.5, 31);
  const Tensor bias = uniform({10}, -0.3, 0.3, 32);
  const Tensor qx = quantize_per_tensor(x, 0.01, 20, kQUInt8);
  const Tensor s = (w.abs().amax({1}) / 127).to(kDouble);
  const Tensor qw = quantize_per_channel(w, s, zeros({10}, TensorOptions(kLong)), 0, kQInt8);
  for (bool relu_after : {false, true}) {
    const Tensor out = quantized::linear(qx, qw, bias, 0.04, 70, relu_after);
    EXPECT_EQ(out.sizes(), IntArrayRef({5, 3, 10}));
    Tensor ref = linear(qx.dequantize(), qw.dequantize(), bias);
    if (relu_after) ref = relu(ref);
    expect_ints_near(out, quantize_per_tensor(ref, 0.04, 70, kQUInt8), 1, "linear");
  }
  EXPECT_THROW_MSG(quantized::linear(qx, qw.dequantize(), bias, 0.1, 0), TypeError,
                   "the weight must be quantized");
  EXPECT_THROW_MSG(quantized::linear(qx, quantize_per_tensor(w, 0.01, 3, kQInt8), bias, 0.1, 0),
                   NotImplementedError, "zero point must be 0");
  EXPECT_THROW_MSG(quantized::linear(qx, qw.transpose(0, 1), bias, 0.1, 0), NotImplementedError,
                   "per-channel");
}

TEST(Quantized, LinearDynamic) {
  const Tensor x = uniform({7, 24}, -1.5, 1.0, 40), w = uniform({9, 24}, -0.5, 0.5, 41);
  const Tensor bias = uniform({9}, -0.3, 0.3, 42);
  const Tensor s = (w.abs().amax({1}) / 127).to(kDouble);
  const Tensor qw = quantize_per_channel(w, s, zeros({9}, TensorOptions(kLong)), 0, kQInt8);
  const Tensor out = quantized::linear_dynamic(x, qw, bias);
  EXPECT_EQ(out.dtype(), kFloat);
  // The input is quantized over [min(x, 0), max(x, 0)] in 127 steps: the reference does the same.
  const double lo = std::min(0.0, x.min().item<double>()),
               hi = std::max(0.0, x.max().item<double>());
  const double scale = (hi - lo) / 127;
  const int64_t zp = static_cast<int64_t>(std::nearbyint(-lo / scale));
  const Tensor qx = quantize_per_tensor(x, scale, zp, kQUInt8);
  const Tensor ref = linear(qx.dequantize(), qw.dequantize(), bias);
  EXPECT_TRUE(allclose(out, ref, 1e-4, 1e-4));
  // And close to the float product: within the input's and weight's rounding.
  EXPECT_TRUE(allclose(out, linear(x, w, bias), 0, 0.1));
}

// ---- observers (PyTorch's formulas) -------------------------------------------------------------

TEST(QuantizationObservers, MinMaxAndMovingAverage) {
  using namespace quantization;
  MinMaxObserver mm;  // quint8, affine
  EXPECT_THROW_MSG(mm.qparams("conv1"), ValueError, "saw no values");
  mm.observe(tensor({-1.0f, 0.5f}));
  mm.observe(tensor({3.0f, 1.0f}));
  EXPECT_EQ(mm.min_val(), -1.0);
  EXPECT_EQ(mm.max_val(), 3.0);
  const QParams p = mm.qparams();
  EXPECT_DOUBLE_EQ(p.scale, 4.0 / 255);
  EXPECT_EQ(p.zero_point, 64);  // 0 - round(-1 / (4 / 255)) = round(63.75)
  // The range always holds 0; reduce_range halves the steps.
  MinMaxObserver pos(ObserverOptions{}.with_reduce_range(true));
  pos.observe(tensor({2.0f, 4.0f}));
  EXPECT_DOUBLE_EQ(pos.qparams().scale, 4.0 / 127);
  EXPECT_EQ(pos.qparams().zero_point, 0);
  // Symmetric int8: zero point 0, scale max|x| / 127.5.
  MinMaxObserver sym(ObserverOptions{kQInt8, QScheme::PerTensorSymmetric});
  sym.observe(tensor({-2.0f, 1.0f}));
  EXPECT_DOUBLE_EQ(sym.qparams().scale, 2.0 / 127.5);
  EXPECT_EQ(sym.qparams().zero_point, 0);
  // Moving average: the first batch sets, later ones move by the constant.
  MovingAverageMinMaxObserver ma(ObserverOptions{}, 0.5);
  ma.observe(tensor({0.0f, 2.0f}));
  ma.observe(tensor({-2.0f, 4.0f}));
  EXPECT_DOUBLE_EQ(ma.min_val(), -1.0);
  EXPECT_DOUBLE_EQ(ma.max_val(), 3.0);
  EXPECT_THROW_MSG(mm.observe(tensor({1, 2})), TypeError, "floating-point");
  EXPECT_THROW_MSG(MinMaxObserver(ObserverOptions{kQInt32}), TypeError, "quint8 or qint8");
}

TEST(QuantizationObservers, PerChannel) {
  quantization::PerChannelMinMaxObserver obs(0);  // qint8 symmetric
  const Tensor w = tensor({1.0f, -2.0f, 0.5f, 0.25f, 0.0f, 0.0f}, IntArrayRef({3, 2}));
  obs.observe(w);
  const auto [scales, zps] = obs.qparams();
  ASSERT_EQ(scales.size(), 3u);
  EXPECT_DOUBLE_EQ(scales[0], 2.0 / 127.5);
  EXPECT_DOUBLE_EQ(scales[1], 0.5 / 127.5);
  EXPECT_DOUBLE_EQ(scales[2], std::numeric_limits<float>::epsilon());  // an all-zero channel
  EXPECT_EQ(zps, (std::vector<int64_t>{0, 0, 0}));
  const Tensor q = obs.quantize(w);
  EXPECT_EQ(q.qscheme(), QScheme::PerChannelAffine);
  EXPECT_TRUE(allclose(q.dequantize(), w, 0, 2.0 / 255 + 1e-6));
}

// The histogram's search only narrows the range: by a little for a heavy-tailed distribution
// (the squared error weighs the clipped tail), not at all for a uniform one; re-binning as the
// range grows keeps every count.
TEST(QuantizationObservers, HistogramNarrowsHeavyTails) {
  using namespace quantization;
  manual_seed(7);
  const Tensor z = randn({50000});
  const Tensor heavy = z * z * z;
  HistogramObserver h;
  MinMaxObserver mm;
  for (const Tensor& t : {heavy.narrow(0, 0, 100), heavy.narrow(0, 100, 49900)}) {
    h.observe(t);
    mm.observe(t);
  }
  EXPECT_LT(h.qparams().scale, 0.99 * mm.qparams().scale);
  double total = 0;
  for (double c : h.histogram()) total += c;
  EXPECT_NEAR(total, 50000, 1e-6);
  HistogramObserver u;
  MinMaxObserver um;
  const Tensor flat = rand({50000}) * 2 - 1;
  u.observe(flat);
  um.observe(flat);
  EXPECT_LE(u.qparams().scale, um.qparams().scale);
  EXPECT_GT(u.qparams().scale, 0.99 * um.qparams().scale);
}

// ---- prepare / convert
// ---------------------------------------------------------------------------

TEST(QuantizationPrepareConvert, TinyNetMatchesFloat) {
  xten::testing::TinyNet net = xten::testing::trained_tiny_net();
  const Tensor calib = rand({64, 3, 8, 8}) * 2 + 0.5, test = rand({32, 3, 8, 8}) * 2 + 0.5;
  NoGradGuard no_grad;
  const Tensor want = net(test);
  quantization::prepare(net, calib.narrow(0, 0, 4));
  const std::string r = nn::repr(*net.ptr());
  EXPECT_NE(r.find("BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true, "
                   "folded into features.0)"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("observed, relu fused, batch norm folded"), std::string::npos) << r;
  EXPECT_THROW_MSG(quantization::convert(net), ValueError, "saw no values");
  // Observing computes the float model's values (folding is exact up to rounding).
  EXPECT_TRUE(allclose(net(test), want, 1e-4, 1e-4));
  for (int64_t i = 0; i < 64; i += 16) net(calib.narrow(0, i, 16));
  quantization::convert(net);
  const Tensor got = net(test);
  EXPECT_EQ(got.dtype(), kFloat);
  EXPECT_EQ(got.sizes(), want.sizes());
  // int8 keeps the float model's answer: errors small against the outputs' spread.
  const double spread = (want.max() - want.min()).item<double>();
  EXPECT_LT((got - want).abs().max().item<double>(), 0.1 * spread);
  EXPECT_GE((got.argmax(1) == want.argmax(1)).to(kFloat).mean().item<double>(), 0.85);
  // The float model comes back untouched.
  quantization::dequantize_model(*net.ptr());
  EXPECT_TRUE(allclose(net(test), want, 0, 0));
}

TEST(QuantizationPrepareConvert, Errors) {
  xten::testing::TinyNet net = xten::testing::trained_tiny_net();
  net->train();
  EXPECT_THROW_MSG(quantization::prepare(net, rand({2, 3, 8, 8})), ValueError, "evaluation mode");
  net->eval();
  EXPECT_THROW_MSG(quantization::convert(net), ValueError, "prepare");
  quantization::prepare(net, rand({2, 3, 8, 8}));
  EXPECT_THROW_MSG(quantization::prepare(net, rand({2, 3, 8, 8})), ValueError, "already prepared");
  nn::Sequential no_layers{nn::ReLU()};
  no_layers->eval();
  EXPECT_THROW_MSG(quantization::prepare(no_layers, rand({2, 3})), ValueError,
                   "nothing to quantize");
}

TEST(QuantizationPrepareConvert, ResNet18SmallInput) {
  manual_seed(11);
  auto model = models::resnet18_small_input(10, 1);
  for (int i = 0; i < 3; ++i) model(rand({8, 1, 28, 28}));
  model->eval();
  NoGradGuard no_grad;
  const Tensor test = rand({8, 1, 28, 28});
  const Tensor want = model(test);
  quantization::prepare(model, test.narrow(0, 0, 2));
  for (int i = 0; i < 4; ++i) model(rand({8, 1, 28, 28}));
  quantization::convert(model);
  const Tensor got = model(test);
  EXPECT_EQ(got.dtype(), kFloat);
  const double spread = (want.max() - want.min()).item<double>();
  EXPECT_LT((got - want).abs().max().item<double>(), 0.25 * spread);
}

TEST(QuantizationDynamic, LinearLayers) {
  manual_seed(12);
  nn::Sequential mlp(nn::Linear(32, 64), nn::ReLU(), nn::Linear(64, 8));
  NoGradGuard no_grad;
  const Tensor x = randn({10, 32});
  const Tensor want = mlp(x);
  EXPECT_EQ(quantization::quantize_dynamic(mlp), 2);
  const Tensor got = mlp(x);
  EXPECT_EQ(got.dtype(), kFloat);
  const double spread = (want.max() - want.min()).item<double>();
  EXPECT_LT((got - want).abs().max().item<double>(), 0.05 * spread);
  EXPECT_NE(nn::repr(*mlp.ptr()).find("dynamic quantized"), std::string::npos);
}

TEST(Quantized, NotDifferentiable) {
  const Tensor x = uniform({4, 8}, -1, 1, 50).requires_grad_();
  const Tensor q = quantize_per_tensor(x, 0.01, 128, kQUInt8);
  EXPECT_FALSE(q.requires_grad());
  EXPECT_FALSE(q.dequantize().requires_grad());
  const Tensor w = quantize_per_tensor(uniform({3, 8}, -1, 1, 51), 0.01, 0, kQInt8);
  EXPECT_FALSE(quantized::linear_dynamic(x, w, std::nullopt).requires_grad());
}

// Channels-last pooling with enough channels for the 16-wide uint8 steps, and their tail.
TEST(Quantized, ChannelsLastPoolingWideChannels) {
  const Tensor x = uniform({2, 37, 9, 8}, -1, 1, 60).contiguous(MemoryFormat::ChannelsLast);
  const Tensor q = quantize_per_tensor(x, 0.01, 100, kQUInt8);
  const Tensor d = q.dequantize();
  const Tensor m = max_pool2d(q, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false);
  EXPECT_TRUE(m.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(allclose(m.dequantize(), max_pool2d(d, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false), 0, 0));
  const Tensor a = adaptive_avg_pool2d(q, {3, 2});
  EXPECT_TRUE(allclose(a.dequantize(), adaptive_avg_pool2d(d, {3, 2}), 0, 0.005 + 1e-6));
}

// Note [Packed int8 weights]: a weight written in place is packed again.
TEST(Quantized, ConvWeightWrittenInPlaceIsRepacked) {
  const Tensor x = uniform({1, 16, 6, 6}, 0, 1, 70);
  const Tensor qx = quantize_per_tensor(x, 0.01, 0, kQUInt8);
  Tensor qw = quantize_per_tensor(uniform({32, 16, 3, 3}, -0.5, 0.5, 71), 0.004, 0, kQInt8);
  const Tensor qw2 = quantize_per_tensor(uniform({32, 16, 3, 3}, -0.5, 0.5, 72), 0.004, 0, kQInt8);
  auto conv = [&](const Tensor& w) {
    return quantized::conv2d(qx, w, std::nullopt, {1, 1}, {1, 1}, {1, 1}, 1, 0.05, 64);
  };
  const Tensor first = conv(qw), want = conv(qw2);
  EXPECT_EQ(ints(conv(qw)), ints(first));
  qw.copy_(qw2);
  EXPECT_EQ(ints(conv(qw)), ints(want));
  EXPECT_NE(ints(first), ints(want));
}
