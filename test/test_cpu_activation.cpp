// softmax, log_softmax and the activation functions against double-precision references.
#include <cmath>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

TEST(Activation, SoftmaxAndLogSoftmax) {
  manual_seed(50);
  for (ScalarType t : float_dtypes()) {
    Tensor a = non_contiguous(random_tensor({3, 4, 5}, t));
    for (int64_t d : {0, 1, 2, -1}) {
      const int64_t dd = d < 0 ? d + 3 : d;
      auto ref = [&](const std::vector<int64_t>& i, bool log) {
        double m = -INFINITY, s = 0;
        std::vector<int64_t> j(i);
        for (int64_t k = 0; k < a.size(dd); ++k) {
          j[dd] = k;
          m = std::max(m, value_at(a, j));
        }
        for (int64_t k = 0; k < a.size(dd); ++k) {
          j[dd] = k;
          s += std::exp(value_at(a, j) - m);
        }
        const double x = value_at(a, i);
        return log ? x - m - std::log(s) : std::exp(x - m) / s;
      };
      expect_elements(
          softmax(a, d), [&](auto& i) { return ref(i, false); },
          std::string("softmax ") + to_string(t), 2.0);
      expect_elements(
          log_softmax(a, d), [&](auto& i) { return ref(i, true); },
          std::string("log_softmax ") + to_string(t), 4.0);
    }
  }
  Tensor big = tensor({1000.f, 1000.f, -1000.f});
  EXPECT_NEAR(softmax(big, 0).select(0, 0).item<float>(), 0.5f, 1e-6);  // no overflow
  EXPECT_EQ(softmax(arange(3), 0, kDouble).dtype(), kDouble);
  EXPECT_NEAR(softmax(ones({4}, kHalf), 0).select(0, 0).item<float>(), 0.25f, 1e-3);
  EXPECT_EQ(softmax(full({}, 3.0), 0).item<float>(), 1.0f);
  EXPECT_EQ(softmax(zeros({0, 3}), 1).sizes(), IntArrayRef({0, 3}));
  Tensor rows = softmax(random_tensor({100, 4096}, kFloat), 1).sum({1});
  EXPECT_LT((rows - 1).abs().amax().item<float>(), 1e-5);
  EXPECT_THROW_MSG(softmax(arange(3), 0), NotImplementedError,
                   "[softmax] not implemented for dtype Long");
}

// A masked position (-inf) gets exactly 0, and a value far below the row's max its exp, down
// into the subnormals, at every CPU level (this program runs at each): Eigen's exp, which the
// rows used to take, clamps at -88.72 and gave 2.9e-39 for both. Rows of 40 (vector packets and
// a tail), float32 and float64, and log_softmax's backward, which takes the same exp.
TEST(Activation, SoftmaxOfMaskedAndFarPositions) {
  for (ScalarType t : {kFloat, kDouble}) {
    std::vector<double> v(40, 0.5);
    const double low = t == kFloat ? -95.0 : -720.0;  // exp(low): subnormal in the dtype
    v[3] = -std::numeric_limits<double>::infinity(), v[17] = low, v[38] = -1e4;
    const Tensor x = tensor(v).to(t).reshape({1, 40});
    const Tensor y = softmax(x, 1).to(kDouble);
    const double* p = y.data_ptr<double>();
    EXPECT_EQ(p[3], 0.0) << to_string(t);
    EXPECT_EQ(p[38], 0.0) << to_string(t);
    const double want = std::exp(low - 0.5) / 37.0;  // 37 positions at 0.5
    EXPECT_GT(p[17], 0.0) << to_string(t);
    EXPECT_NEAR(p[17], want, want * 0.05) << to_string(t);  // a subnormal's few bits
    EXPECT_NEAR(p[0], 1.0 / 37.0, 1e-7) << to_string(t);
    // log_softmax's backward: dx = g - exp(y) sum(g); g = 1 at the masked position only.
    const Tensor ls = log_softmax(x, 1), g = zeros({1, 40}, t);
    g.select(1, 3).fill_(1.0);
    const Tensor dx = _log_softmax_backward_data(g, ls, 1, t).to(kDouble);
    EXPECT_EQ(dx.data_ptr<double>()[38], 0.0) << to_string(t);
    EXPECT_EQ(dx.data_ptr<double>()[3], 1.0) << to_string(t);
  }
  EXPECT_THROW_MSG(softmax(ones({2}), 1), IndexError, "[softmax] dim 1 is out of range");
}

// log_softmax sums a clamped exp (log_softmax_into in unary_functors.h) and softmax skips exp's
// edge pass where min - max says there is no edge (softmax_into): rows of 40 (packets and a tail)
// holding NaN, +inf or only -inf, at every CPU level (this program runs at each), are NaN
// throughout in both, as PyTorch's; log_softmax of masked and far positions gives -inf at a
// masked one and the double computation's values elsewhere.
TEST(Activation, SoftmaxesOfNanInfAndMaskedRows) {
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType t : {kFloat, kDouble}) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<double> v(40);
      for (int i = 0; i < 40; ++i) v[i] = std::sin(i * 0.7) * 3;
      if (kind == 0) v[5] = std::nan("");
      if (kind == 1) v[7] = inf;
      if (kind == 2) v.assign(40, -inf);
      const Tensor x = tensor(v).to(t).reshape({1, 40});
      const Tensor y = log_softmax(x, 1), p = softmax(x, 1);
      EXPECT_TRUE(isnan(y).all().item<bool>()) << to_string(t) << " kind " << kind << ": " << y;
      EXPECT_TRUE(isnan(p).all().item<bool>()) << to_string(t) << " kind " << kind << ": " << p;
    }
    std::vector<double> v(40);
    for (int i = 0; i < 40; ++i) v[i] = std::sin(i * 0.7) * 3;
    v[3] = -inf, v[17] = -95.0, v[38] = -1e4, v[21] = -800.0;
    const Tensor x = tensor(v).to(t).reshape({1, 40});
    const Tensor ref = x.to(kDouble);
    const Tensor m = ref.amax({1}, true);
    const Tensor want = (ref - m) - log(exp(ref - m).sum({1}, true));
    const Tensor got = log_softmax(x, 1).to(kDouble);
    EXPECT_EQ(got.data_ptr<double>()[3], -inf) << to_string(t);
    const Tensor finite = got.narrow(1, 4, 36);
    const double eps = t == kFloat ? 1e-6 : 1e-14;
    EXPECT_LE(((finite - want.narrow(1, 4, 36)).abs() / want.narrow(1, 4, 36).abs().clamp(1, inf))
                  .amax()
                  .item<double>(),
              eps)
        << to_string(t) << ": " << got;
  }
}

// Note: log_softmax = (x - max) - log(sum), not x - (max + log(sum)), which rounds at the
// magnitude of the logits. PyTorch gives log(0.5) = -0.69314718 for [1000, 1000, -1000].
TEST(Activation, LogSoftmaxOfLargeLogits) {
  for (double scale : {1e3, 1e4}) {
    for (ScalarType t : {kFloat, kDouble}) {
      const Tensor a = random_tensor({6, 9}, kDouble, -1, 1) * scale;
      const Tensor x = a.to(t);  // the logits as this dtype holds them
      const Tensor ref = x.to(kDouble);
      const Tensor m = ref.amax({1}, true);
      const Tensor expect = (ref - m) - log(exp(ref - m).sum({1}, true));
      const Tensor got = log_softmax(x, 1).to(kDouble);
      // Within a few ulp of the result, not of the logits.
      const double eps = t == kFloat ? 1e-6 : 1e-14;
      EXPECT_LE(((got - expect).abs() / expect.abs().clamp(1, std::nullopt)).amax().item<double>(),
                eps)
          << to_string(t) << " scale " << scale;
    }
    const Tensor half_half = tensor({scale, scale, -scale});
    EXPECT_FLOAT_EQ(log_softmax(half_half, 0).select(0, 0).item<float>(), std::log(0.5f));
    // cross_entropy goes through log_softmax: log 2 for two equal large logits.
    EXPECT_FLOAT_EQ(
        cross_entropy(tensor({scale, scale}, IntArrayRef{1, 2}), tensor(std::vector<int64_t>{0}))
            .item<float>(),
        std::log(2.0f));
    EXPECT_FLOAT_EQ(tensor({scale, scale}).logsumexp({0}).item<float>(),
                    static_cast<float>(scale + std::log(2.0)));
  }
}

TEST(Activation, NanInNanOut) {
  manual_seed(52);
  for (ScalarType t : float_dtypes()) {
    check_nan_propagation(t, "cpu", 5);
    check_nan_propagation(t, "cpu", 20000);  // several threads, vectorized runs
  }
}

TEST(Activation, InfinitiesGivePyTorchsValues) {
  for (ScalarType t : float_dtypes()) {
    check_infinities(t, "cpu", 3);
    check_infinities(t, "cpu", 20000);
  }
}

TEST(Activation, Pointwise) {
  manual_seed(51);
  for (ScalarType t : float_dtypes()) {
    Tensor a = non_contiguous(random_tensor({4, 6}, t, -5, 5));
    expect_elements(
        leaky_relu(a, 0.2),
        [&](auto& i) {
          double x = value_at(a, i);
          return x > 0 ? x : 0.2 * x;
        },
        "leaky_relu", 2.0);
    expect_elements(
        elu(a, 1.5),
        [&](auto& i) {
          double x = value_at(a, i);
          return x > 0 ? x : 1.5 * std::expm1(x);
        },
        "elu", 2.0);
    expect_elements(
        softplus(a, 2, 5),
        [&](auto& i) {
          double x = value_at(a, i);
          return 2 * x > 5 ? x : std::log1p(std::exp(2 * x)) / 2;
        },
        "softplus", 2.0);
    expect_elements(
        hardswish(a),
        [&](auto& i) {
          double x = value_at(a, i);
          return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
        },
        "hardswish", 2.0);
    expect_elements(
        hardtanh(a, -2, 3), [&](auto& i) { return std::min(std::max(value_at(a, i), -2.0), 3.0); },
        "hardtanh");
    // Contiguous and long enough for the vector forms (kernels/cpu/activation_pointwise.cpp),
    // with the values where they hand over to the scalar form: softplus's exp below -87 (a
    // subnormal result) and above 88 under a threshold of 100 (exp(89) is inf in float, as in
    // PyTorch), elu's expm1 near 0.
    std::vector<double> v = {-100, -90, -87.5, -1e-6, -1e-30, 0, 1e-30, 87.5, 88.5, 101};
    for (int i = 0; v.size() < 4099; ++i) v.push_back(-30 + 60.0 * (i % 997) / 997);
    const Tensor b =
        tensor(v, IntArrayRef({static_cast<int64_t>(v.size())}), TensorOptions(kDouble)).to(t);
    expect_elements(
        leaky_relu(b, 0.2),
        [&](auto& i) {
          double x = value_at(b, i);
          return x > 0 ? x : 0.2 * x;
        },
        "leaky_relu long", 2.0);
    expect_elements(
        elu(b, 1.5, 2, 0.5),
        [&](auto& i) {
          double x = value_at(b, i);
          return x > 0 ? 2 * x : 3 * std::expm1(0.5 * x);
        },
        "elu long", 2.0);
    expect_elements(
        softplus(b, 1, 100),
        [&](auto& i) {
          double x = value_at(b, i);
          return x > 100 ? x : std::log1p(std::exp(x));
        },
        "softplus long", 2.0);
    expect_elements(
        hardswish(b),
        [&](auto& i) {
          double x = value_at(b, i);
          return x * std::min(std::max(x + 3, 0.0), 6.0) / 6;
        },
        "hardswish long", 2.0);
  }
  // The scalar form's edges, relative to the tiny result, in vectors of 64: softplus of -100 is
  // exp(-100) (subnormal in float; the vector exp gives 0 there), of 88.5 under a threshold of
  // 100 is 88.5 (the vector exp clamps at 88.7).
  EXPECT_NEAR(softplus(full({64}, -100.0f)).data_ptr<float>()[9], std::exp(-100.0), 1e-45);
  EXPECT_GT(softplus(full({64}, -100.0f)).data_ptr<float>()[9], 0.0f);
  EXPECT_FLOAT_EQ(softplus(full({64}, 88.5f), 1, 100).data_ptr<float>()[9], 88.5f);
  EXPECT_NEAR(elu(full({64}, -1e-20f)).data_ptr<float>()[9], -1e-20, 1e-27);
  EXPECT_THROW_MSG(leaky_relu(arange(3)), NotImplementedError,
                   "[leaky_relu] not implemented for dtype Long");
  EXPECT_THROW_MSG(hardtanh(ones({2}), 2, 1), ValueError,
                   "min_val (2) must not exceed max_val (1)");
  EXPECT_THROW_MSG(softplus(ones({2}), 0), ValueError, "[softplus] beta must be nonzero");
}

// The backward kernels of leaky_relu, elu, softplus and hardswish (kernels/cpu/
// activation_pointwise.cpp) against their formulas written with ops, over long contiguous and
// strided runs with NaN, the bounds and both signs, in each floating dtype.
TEST(Activation, PointwiseBackwardKernelsMatchTheirFormulas) {
  manual_seed(52);
  for (ScalarType t : float_dtypes()) {
    std::vector<double> v = {NAN, -3, 3, 0, -0.0, -1e-30, 1e-30, -100, 100, 2.5};
    for (int i = 0; v.size() < 4099; ++i) v.push_back(-6 + 12.0 * (i % 991) / 991);
    const int64_t n = static_cast<int64_t>(v.size());
    const Tensor x0 = tensor(v, IntArrayRef({n}), TensorOptions(kDouble)), g0 = randn({n}, kDouble);
    for (bool strided : {false, true}) {
      const Tensor x = strided ? non_contiguous(x0.to(t)) : x0.to(t);
      const Tensor g = strided ? non_contiguous(g0.to(t)) : g0.to(t);
      const Tensor xd = x.to(kDouble), gd = g.to(kDouble);
      auto check = [&](const Tensor& got, const Tensor& want, const char* what) {
        expect_elements(
            got, [&](auto& i) { return value_at(want, i); },
            std::string(what) + (strided ? " strided " : " ") + to_string(t), 4.0);
      };
      check(leaky_relu_backward(g, x, 0.2, false), where(xd > 0, gd, gd * 0.2), "leaky_relu");
      const Tensor y = elu(x, 1.5, 2, 0.5), yd = y.to(kDouble);
      check(elu_backward(g, 1.5, 2, 0.5, false, x),
            where(xd <= 0, gd * exp(xd * 0.5) * (1.5 * 2 * 0.5), gd * 2), "elu");
      check(elu_backward(g, 1.5, 2, 0.5, true, y),
            where(yd <= 0, gd * ((yd + 1.5 * 2) * 0.5), gd * 2), "elu of the result");
      check(softplus_backward(g, x, 2, 5), where(xd * 2 > 5, gd, gd * sigmoid(xd * 2)), "softplus");
      check(hardswish_backward(g, x),
            where(xd <= -3, zeros({}, kDouble), where(xd < 3, gd * (xd / 3 + 0.5), gd)),
            "hardswish");
    }
  }
  EXPECT_THROW_MSG(leaky_relu_backward(ones({2}), ones({2}), -0.1, true), ValueError,
                   "[leaky_relu_backward] the derivative from the result needs a nonnegative "
                   "slope, but got -0.1");
  EXPECT_THROW_MSG(hardswish_backward(ones({2}), ones({3})), ValueError,
                   "[hardswish_backward] grad_output and self must have one shape, but got (2) "
                   "and (3)");
  EXPECT_THROW_MSG(softplus_backward(ones({2}, kInt), ones({2}, kInt), 1, 20), NotImplementedError,
                   "[softplus_backward] not implemented for dtype Int");
}

TEST(Activation, Prelu) {
  Tensor x = tensor({-1.f, 2.f, -3.f, 4.f, -5.f, 6.f}, IntArrayRef{1, 3, 2});
  Tensor w = tensor({0.1f, 0.2f, 0.3f});
  Tensor y = prelu(x, w);
  EXPECT_FLOAT_EQ(y.select(1, 1).select(1, 0).item<float>(), -0.6f);
  EXPECT_FLOAT_EQ(y.select(1, 2).select(1, 1).item<float>(), 6.f);
  EXPECT_FLOAT_EQ(prelu(x, tensor({0.5f})).sum().item<float>(), 12 - 4.5f);
  EXPECT_THROW_MSG(prelu(x, tensor({0.1f, 0.2f})), ValueError,
                   "weight has 2 values, but the input has 3 channels");
}

TEST(Activation, Dropout) {
  manual_seed(52);
  Tensor x = ones({100000});
  Tensor y = dropout(x, 0.3, true);
  const double kept = (y != 0).sum().item<int64_t>() / 100000.0;
  EXPECT_NEAR(kept, 0.7, 0.01);
  EXPECT_FLOAT_EQ(y.amax().item<float>(), 1.0f / 0.7f);
  EXPECT_TRUE(dropout(x, 0.3, false).is_same(x));
  EXPECT_EQ(dropout(x, 1.0, true).sum().item<float>(), 0.0f);
  manual_seed(52);
  EXPECT_EQ((dropout(x, 0.3, true) != y).sum().item<int64_t>(), 0);  // reproducible
  EXPECT_THROW_MSG(dropout(x, 1.5, true), ValueError,
                   "[dropout] probability must be in [0, 1], but got 1.5");
}

// relu's backward (kernels/cpu/binary.cpp): grad where self > threshold, 0 elsewhere, for every
// float dtype and layout; a NaN in self passes the gradient (PyTorch's rule); the same values as
// the composite, which the XPU and create_graph run.
TEST(Activation, ThresholdBackward) {
  manual_seed(12);
  for (ScalarType t : float_dtypes()) {
    const Tensor g = random_tensor({40, 30}, t), y = random_tensor({40, 30}, t, -1, 1);
    y.select(0, 3).fill_(std::nan(""));
    y.select(0, 4).fill_(0.25);  // exactly the threshold: 0
    for (const auto& [gg, yy] : std::vector<std::pair<Tensor, Tensor>>{
             {g, y}, {g.t(), y.t()}, {non_contiguous(g), non_contiguous(y)}}) {
      const Tensor r = threshold_backward(gg, yy, 0.25);
      ASSERT_EQ(r.dtype(), t);
      int failures = 0;
      for_each_index(r.sizes(), [&](const std::vector<int64_t>& i) {
        const double v = value_at(yy, i), want = v <= 0.25 ? 0.0 : value_at(gg, i);
        if (value_at(r, i) != want && failures++ < 3)
          ADD_FAILURE() << to_string(t) << " at " << to_string(IntArrayRef(i)) << ": got "
                        << value_at(r, i) << ", expected " << want;
      });
      EXPECT_TRUE(same_bytes(r, where(yy <= 0.25, zeros({}, gg.options()), gg)));
    }
  }
  EXPECT_EQ(threshold_backward(ones({200000}), ones({200000}), 0).sum().item<float>(), 200000.0f);
  EXPECT_THROW_MSG(threshold_backward(ones({2, 3}), ones({3, 2}), 0), ValueError,
                   "[threshold_backward] grad_output and self must have one shape, but got (2, 3) "
                   "and (3, 2)");
  EXPECT_THROW_MSG(threshold_backward(ones({2}), ones({2}, kDouble), 0), TypeError,
                   "[threshold_backward] expected grad_output and self to have the same dtype");
  EXPECT_THROW_MSG(threshold_backward(ones({2}, kInt), ones({2}, kInt), 0), NotImplementedError,
                   "[threshold_backward] not implemented for dtype Int");
}
