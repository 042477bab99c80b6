// Quantized tensors and ops on the XPU (docs/quantization.md "On the XPU"), against the CPU's:
// quantize, dequantize, relu, add and pooling give the same integers; conv2d and linear (integer
// products here, oneDNN's int8 kernels there) at most one step apart; a converted model runs on
// the XPU.
#include <gtest/gtest.h>

#include <xten/quantization/ops.h>
#include <xten/xten.h>

#include "quantized_checks.h"
#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using xten::testing::allclose;
using xten::testing::expect_ints_near;
using xten::testing::ints;
using xten::testing::uniform;

namespace {

const bool kEnv = xten::testing::set_xpu_test_env("1G");
const Device kXpu("xpu");
constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

// The XPU result has the CPU's dtype, quantizer, layout and integers (within tol).
void expect_same_quantized(const Tensor& xpu, const Tensor& cpu, int64_t tol,
                           const std::string& what) {
  ASSERT_EQ(xpu.device().type(), kXPU) << what;
  ASSERT_TRUE(xpu.is_quantized()) << what;
  EXPECT_EQ(xpu.dtype(), cpu.dtype()) << what;
  EXPECT_EQ(xpu.sizes(), cpu.sizes()) << what;
  EXPECT_EQ(xpu.strides(), cpu.strides()) << what;
  EXPECT_EQ(xpu.qscheme(), cpu.qscheme()) << what;
  if (cpu.qscheme() == QScheme::PerTensorAffine) {
    EXPECT_DOUBLE_EQ(xpu.q_scale(), cpu.q_scale()) << what;
    EXPECT_EQ(xpu.q_zero_point(), cpu.q_zero_point()) << what;
  }
  expect_ints_near(xpu, cpu, tol, what);
}

}  // namespace

TEST(QuantizedXpu, QuantizeAndDequantizeEqualTheCpu) {
  // Values on both sides of the range, NaN, and halfway cases (k + 0.5 steps of 0.5).
  Tensor x = uniform({2, 3, 5, 7}, -80, 80, 1);
  x.view({-1}).narrow(0, 0, 8).copy_(
      tensor({NAN, 0.25f, 0.75f, -0.25f, -1.25f, 1e9f, -1e9f, 63.75f}));
  for (ScalarType dt : {kQUInt8, kQInt8}) {
    const int64_t zp = dt == kQUInt8 ? 128 : -5;
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, kCL}) {
      const Tensor xc = x.contiguous(fmt);
      const Tensor c = quantize_per_tensor(xc, 0.5, zp, dt);
      const Tensor d = quantize_per_tensor(xc.to(kXpu), 0.5, zp, dt);
      const std::string what =
          fmt::format("per tensor {} fmt {}", dtype_name(dt), static_cast<int>(fmt));
      expect_same_quantized(d, c, 0, what);
      const Tensor back = d.dequantize();
      EXPECT_EQ(back.device().type(), kXPU);
      EXPECT_EQ(back.strides(), c.dequantize().strides()) << what;
      EXPECT_TRUE(allclose(back.to("cpu"), c.dequantize(), 0, 0)) << what;
      // Between devices the integers and the quantizer travel as they are.
      expect_same_quantized(c.to(kXpu), c, 0, what + " moved");
      const Tensor home = d.to("cpu");
      EXPECT_TRUE(home.is_cpu());
      EXPECT_EQ(ints(home), ints(c)) << what;
    }
    // Per channel along each axis, float64 input (quantized as float32, as on the CPU).
    for (int64_t axis : {0, 1, 3}) {
      const int64_t n = x.size(axis);
      const Tensor scales = uniform({n}, 0.1, 2.0, 2 + axis).to(kDouble);
      std::vector<int64_t> zv;
      for (int64_t i = 0; i < n; ++i) zv.push_back(dt == kQUInt8 ? 100 + i : i - 3);
      const Tensor zps = tensor(zv);
      const Tensor c = quantize_per_channel(x.to(kDouble), scales, zps, axis, dt);
      const Tensor d = quantize_per_channel(x.to(kXpu, kDouble), scales.to(kXpu), zps, axis, dt);
      const std::string what = fmt::format("per channel {} axis {}", dtype_name(dt), axis);
      expect_same_quantized(d, c, 0, what);
      EXPECT_EQ(d.q_per_channel_axis(), axis);
      EXPECT_TRUE(allclose(d.dequantize().to("cpu"), c.dequantize(), 0, 0)) << what;
      EXPECT_EQ(ints(c.to(kXpu)), ints(c)) << what;
    }
  }
  // Copies, clones and views work on the integers; int_repr is an XPU tensor.
  const Tensor d = quantize_per_tensor(x.to(kXpu), 0.5, 3, kQUInt8);
  EXPECT_EQ(d.int_repr().device().type(), kXPU);
  EXPECT_EQ(d.int_repr().dtype(), kByte);
  EXPECT_EQ(ints(d.transpose(1, 2).contiguous()), ints(d.to("cpu").transpose(1, 2).contiguous()));
  EXPECT_EQ(ints(d.clone()), ints(d));
  Tensor into =
      quantize_per_tensor(zeros({2, 3, 5, 7}, TensorOptions().device(kXpu)), 0.5, 3, kQUInt8);
  into.copy_(d);
  EXPECT_EQ(ints(into), ints(d));
  // The XPU takes the 8-bit types; qint32 is refused, not computed elsewhere.
  EXPECT_THROW_MSG(quantize_per_tensor(x.to(kXpu), 0.5, 0, kQInt32), NotImplementedError,
                   "quint8 and qint8, not qint32");
  const Tensor q32 = quantize_per_tensor(x, 0.5, 0, kQInt32).to(kXpu);
  EXPECT_THROW_MSG(q32.dequantize(), NotImplementedError, "quint8 and qint8, not qint32");
  EXPECT_THROW_MSG(d.to(kXpu, kFloat), NotImplementedError, "dequantize() it first");
  EXPECT_THROW_MSG(d + d, NotImplementedError, "QuantizedXPU");
}

TEST(QuantizedXpu, ReluAddAndPoolingEqualTheCpu) {
  const Tensor a = uniform({2, 3, 9, 7}, -1, 1, 3), b = uniform({2, 3, 9, 7}, -2, 0.5, 4);
  for (ScalarType dt : {kQUInt8, kQInt8}) {
    const int64_t shift = dt == kQInt8 ? -128 : 0;
    for (MemoryFormat fmt : {MemoryFormat::Contiguous, kCL}) {
      const std::string what = fmt::format("{} fmt {}", dtype_name(dt), static_cast<int>(fmt));
      const Tensor qa = quantize_per_tensor(a.contiguous(fmt), 0.01, 110 + shift, dt);
      const Tensor qb = quantize_per_tensor(b.contiguous(fmt), 0.02, 130 + shift, dt);
      const Tensor da = qa.to(kXpu), db = qb.to(kXpu);
      expect_same_quantized(relu(da), relu(qa), 0, what + " relu");
      Tensor r = da.clone();
      relu_(r);
      expect_same_quantized(r, relu(qa), 0, what + " relu_");
      for (bool relu_after : {false, true})
        expect_same_quantized(quantized::add(da, db, 0.03, 120 + shift, relu_after),
                              quantized::add(qa, qb, 0.03, 120 + shift, relu_after), 0,
                              what + " add");
      expect_same_quantized(max_pool2d(da, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false),
                            max_pool2d(qa, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false), 0,
                            what + " max_pool2d");
      expect_same_quantized(max_pool2d(da, {2, 3}, {1, 2}, {0, 1}, {2, 1}, true),
                            max_pool2d(qa, {2, 3}, {1, 2}, {0, 1}, {2, 1}, true), 0,
                            what + " max_pool2d dilated");
      for (auto size :
           {std::vector<int64_t>{1, 1}, std::vector<int64_t>{4, 3}, std::vector<int64_t>{9, 7}})
        expect_same_quantized(adaptive_avg_pool2d(da, size), adaptive_avg_pool2d(qa, size), 0,
                              what + " adaptive_avg_pool2d");
    }
  }
  // Averages that are exactly halfway between integers round to the even one.
  const Tensor halves = quantize_per_tensor(
      tensor({1.f, 2.f, 3.f, 4.f, -3.f, -4.f, 5.f, 5.f}, TensorOptions().device(kXpu))
          .view({2, 1, 2, 2}),
      1.0, 0, kQInt8);
  EXPECT_EQ(ints(adaptive_avg_pool2d(halves, {1, 1})), (std::vector<int64_t>{2, 1}));
  const Tensor qa = quantize_per_tensor(a.to(kXpu), 0.01, 110, kQUInt8);
  EXPECT_THROW_MSG(quantized::add(qa, qa.flatten(), 0.1, 0), NotImplementedError,
                   "no broadcasting");
}

// Integer products on the XPU, oneDNN's on the CPU: the same sums, scaled and rounded in float
// in either order, so at most one step apart. The float computation on the dequantized
// operands is a third witness.
TEST(QuantizedXpu, Conv2dAndLinearWithinOneStepOfTheCpu) {
  int seed = 10;
  for (const xten::testing::QuantizedConvCase& c : xten::testing::quantized_conv_cases())
    for (ScalarType dt : {kQUInt8, kQInt8})
      for (bool per_channel : {false, true})
        for (bool relu_after : {false, true}) {
          const MemoryFormat fmt = c.x.size() == 4 && per_channel ? kCL : MemoryFormat::Contiguous;
          const int64_t zx = dt == kQUInt8 ? 20 : -100, zo = dt == kQUInt8 ? 60 : -60;
          const Tensor x = uniform(c.x, -0.2, 1.0, seed++).contiguous(fmt);
          const Tensor w = uniform(c.w, -0.5, 0.5, seed++);
          const Tensor bias = uniform({c.w[0]}, -0.3, 0.3, seed++);
          const Tensor qx = quantize_per_tensor(x, 0.01, zx, dt);
          Tensor qw;
          if (per_channel) {
            const Tensor s = (w.abs().amax({1, 2, 3}) / 127).to(kDouble);
            qw = quantize_per_channel(w, s, zeros({c.w[0]}, TensorOptions(kLong)), 0, kQInt8);
          } else {
            qw = quantize_per_tensor(w, w.abs().max().item<double>() / 127, 0, kQInt8);
          }
          const std::string what =
              fmt::format("conv x {} w {} {} per_channel {} relu {}", to_string(IntArrayRef(c.x)),
                          to_string(IntArrayRef(c.w)), dtype_name(dt), per_channel, relu_after);
          for (bool with_bias : {true, false}) {
            const std::optional<Tensor> b = with_bias ? std::optional<Tensor>(bias) : std::nullopt;
            const std::optional<Tensor> bx =
                with_bias ? std::optional<Tensor>(bias.to(kXpu)) : std::nullopt;
            const Tensor want = quantized::conv2d(qx, qw, b, c.stride, c.pad, c.dil, c.groups, 0.05,
                                                  zo, relu_after);
            const Tensor got = quantized::conv2d(qx.to(kXpu), qw.to(kXpu), bx, c.stride, c.pad,
                                                 c.dil, c.groups, 0.05, zo, relu_after);
            expect_same_quantized(got, want, 1, what + (with_bias ? " bias" : ""));
            Tensor ref = conv2d(qx.dequantize(), qw.dequantize(), b, c.stride, IntArrayRef(c.pad),
                                c.dil, c.groups);
            if (relu_after) ref = relu(ref);
            expect_ints_near(got, quantize_per_tensor(ref, 0.05, zo, dt), 1, what + " float");
          }
        }
  // linear: [..., in] inputs, per-tensor and per-channel weights, quantized and dynamic.
  const Tensor x = uniform({5, 3, 24}, -0.2, 1.0, 30), w = uniform({10, 24}, -0.5, 0.5, 31);
  const Tensor bias = uniform({10}, -0.3, 0.3, 32);
  const Tensor s = (w.abs().amax({1}) / 127).to(kDouble);
  const Tensor qw_c = quantize_per_channel(w, s, zeros({10}, TensorOptions(kLong)), 0, kQInt8);
  const Tensor qw_t = quantize_per_tensor(w, w.abs().max().item<double>() / 127, 0, kQInt8);
  for (const Tensor& qw : {qw_c, qw_t})
    for (ScalarType dt : {kQUInt8, kQInt8})
      for (bool relu_after : {false, true}) {
        const int64_t zx = dt == kQUInt8 ? 20 : -100, zo = dt == kQUInt8 ? 70 : 0;
        const Tensor qx = quantize_per_tensor(x, 0.01, zx, dt);
        const Tensor want = quantized::linear(qx, qw, bias, 0.04, zo, relu_after);
        const Tensor got =
            quantized::linear(qx.to(kXpu), qw.to(kXpu), bias.to(kXpu), 0.04, zo, relu_after);
        expect_same_quantized(got, want, 1,
                              fmt::format("linear {} relu {}", dtype_name(dt), relu_after));
        expect_same_quantized(
            quantized::linear(qx.to(kXpu), qw.to(kXpu), std::nullopt, 0.04, zo, relu_after),
            quantized::linear(qx, qw, std::nullopt, 0.04, zo, relu_after), 1, "linear no bias");
      }
  for (bool relu_after : {false, true}) {
    const Tensor xd = uniform({7, 24}, -1.5, 1.0, 40);
    const Tensor want = quantized::linear_dynamic(xd, qw_c, bias, relu_after);
    const Tensor got =
        quantized::linear_dynamic(xd.to(kXpu), qw_c.to(kXpu), bias.to(kXpu), relu_after);
    EXPECT_EQ(got.dtype(), kFloat);
    EXPECT_EQ(got.device().type(), kXPU);
    EXPECT_TRUE(allclose(got.to("cpu"), want, 1e-5, 1e-5));
  }
  // Operands on two devices, and a weight that is not symmetric, name the op.
  const Tensor qx = quantize_per_tensor(x, 0.01, 20, kQUInt8).to(kXpu);
  EXPECT_THROW_MSG(quantized::linear(qx, qw_c, bias.to(kXpu), 0.04, 70), DeviceError,
                   "quantized::linear");
  EXPECT_THROW_MSG(quantized::linear(qx, qw_c.to(kXpu), bias, 0.04, 70), ValueError,
                   "on the input's device");
  EXPECT_THROW_MSG(quantized::linear(qx, quantize_per_tensor(w, 0.01, 3, kQInt8).to(kXpu),
                                     bias.to(kXpu), 0.1, 0),
                   NotImplementedError, "zero point must be 0");
}

// A model quantized on the XPU (weights quantized there, every layer's integers computed there)
// answers as the same model quantized on the CPU.
TEST(QuantizedXpu, ConvertedModelRunsOnTheXpu) {
  xten::testing::TinyNet cpu_net = xten::testing::trained_tiny_net();
  xten::testing::TinyNet xpu_net = xten::testing::trained_tiny_net();
  xpu_net->to(kXpu);
  const Tensor calib = rand({32, 3, 8, 8}) * 2 + 0.5, test = rand({16, 3, 8, 8}) * 2 + 0.5;
  NoGradGuard no_grad;
  quantization::prepare(cpu_net, calib.narrow(0, 0, 4));
  quantization::prepare(xpu_net, calib.narrow(0, 0, 4).to(kXpu));
  for (int64_t i = 0; i < 32; i += 16) {
    cpu_net(calib.narrow(0, i, 16));
    xpu_net(calib.narrow(0, i, 16).to(kXpu));
  }
  quantization::convert(cpu_net);
  quantization::convert(xpu_net);
  const Tensor want = cpu_net(test), got = xpu_net(test.to(kXpu));
  EXPECT_EQ(got.device().type(), kXPU);
  EXPECT_EQ(got.dtype(), kFloat);
  // Observers see the same values up to float rounding; each layer may round one step apart.
  const double spread = (want.max() - want.min()).item<double>();
  EXPECT_LT((got.to("cpu") - want).abs().max().item<double>(), 0.03 * spread);
  EXPECT_GE((got.to("cpu").argmax(1) == want.argmax(1)).to(kFloat).mean().item<double>(), 0.9);
  // Dynamic quantization of Linear layers on the XPU.
  manual_seed(12);
  nn::Sequential mlp(nn::Linear(32, 64), nn::ReLU(), nn::Linear(64, 8));
  mlp->to(kXpu);
  const Tensor x = randn({10, 32}).to(kXpu);
  const Tensor float_out = mlp(x);
  EXPECT_EQ(quantization::quantize_dynamic(mlp), 2);
  const Tensor q_out = mlp(x);
  EXPECT_EQ(q_out.device().type(), kXPU);
  const double mlp_spread = (float_out.max() - float_out.min()).item<double>();
  EXPECT_LT((q_out - float_out).abs().max().item<double>(), 0.05 * mlp_spread);
}
