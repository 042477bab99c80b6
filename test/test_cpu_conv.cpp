// Convolution and pooling against direct double-precision loops.
#include <cmath>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {
struct ConvCase {
  std::vector<int64_t> in, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
};

// Direct convolution: y[n][o][oy][ox] = b[o] + sum_{c,i,j} x[n][g*cg+c][oy*s-p+i*d][...]
// w[o][c][i][j].
double conv_ref(const Tensor& x, const Tensor& w, const Tensor* b, const ConvCase& c,
                const std::vector<int64_t>& i) {
  const int64_t o = i[1], cg = w.size(1), og = w.size(0) / c.groups, g = o / og;
  double s = b ? value_at(*b, {o}) : 0.0;
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t ki = 0; ki < w.size(2); ++ki)
      for (int64_t kj = 0; kj < w.size(3); ++kj) {
        const int64_t iy = i[2] * c.stride[0] - c.padding[0] + ki * c.dilation[0];
        const int64_t ix = i[3] * c.stride[1] - c.padding[1] + kj * c.dilation[1];
        if (iy < 0 || ix < 0 || iy >= x.size(2) || ix >= x.size(3)) continue;
        s += value_at(x, {i[0], g * cg + ci, iy, ix}) * value_at(w, {o, ci, ki, kj});
      }
  return s;
}
}  // namespace

TEST(Conv, Conv2dConfigurations) {
  manual_seed(60);
  const std::vector<ConvCase> cases{
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {2, 1}, {1, 2}, {1, 1}, 1, false},
      {{1, 4, 9, 9}, {6, 2, 3, 2}, {1, 2}, {1, 0}, {2, 1}, 2, true},  // groups, dilation
      {{2, 4, 5, 5}, {4, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, true},  // depthwise
      {{2, 8, 4, 4}, {5, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},  // pointwise (no im2col)
  };
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    for (const ConvCase& c : cases) {
      Tensor x = random_tensor(c.in, t, -2, 2), w = random_tensor(c.w, t, -1, 1),
             b = random_tensor({c.w[0]}, t);
      Tensor y = conv2d(x, w, c.bias ? std::optional<Tensor>(b) : std::nullopt, c.stride,
                        IntArrayRef(c.padding), c.dilation, c.groups);
      EXPECT_EQ(y.dtype(), t);
      expect_elements(
          y, [&](auto& i) { return conv_ref(x, w, c.bias ? &b : nullptr, c, i); },
          std::string("conv2d ") + to_string(t), 20.0);
    }
  }
  // Unbatched input, and a non-contiguous one.
  Tensor x = random_tensor({3, 6, 6}, kFloat), w = random_tensor({2, 3, 3, 3}, kFloat);
  Tensor y = conv2d(x, w);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 4, 4}));
  expect_elements(
      y.unsqueeze(0),
      [&](auto& i) {
        return conv_ref(x.unsqueeze(0), w, nullptr, {{}, {}, {1, 1}, {0, 0}, {1, 1}, 1, false}, i);
      },
      "unbatched", 20.0);
  EXPECT_EQ(conv2d(x.transpose(1, 2), w, std::nullopt, {1}, 1).sizes(), IntArrayRef({2, 6, 6}));
}

TEST(Conv, PaddingStringsAndConv1d) {
  manual_seed(61);
  Tensor x = random_tensor({1, 2, 8, 7}, kFloat), w = random_tensor({3, 2, 4, 3}, kFloat);
  EXPECT_EQ(conv2d(x, w, std::nullopt, {1, 1}, "same").sizes(),
            IntArrayRef({1, 3, 8, 7}));  // even kernel: asymmetric
  EXPECT_EQ(conv2d(x, w, std::nullopt, {1, 1}, "valid").sizes(), IntArrayRef({1, 3, 5, 5}));
  // "same" with an even kernel pads one more at the end: same as explicit padding of the input.
  Tensor explicit_pad = conv2d(pad(x, {1, 1, 1, 2}), w);
  EXPECT_LT((conv2d(x, w, std::nullopt, {1, 1}, "same") - explicit_pad).abs().amax().item<float>(),
            1e-5);
  EXPECT_THROW_MSG(conv2d(x, w, std::nullopt, {2, 2}, "same"), ValueError,
                   "padding='same' is not supported for strided convolutions");
  EXPECT_THROW_MSG(conv2d(x, w, std::nullopt, {1, 1}, "full"), ValueError,
                   "padding must be 'same', 'valid' or numbers, but got 'full'");
  Tensor x1 = random_tensor({2, 3, 10}, kFloat), w1 = random_tensor({4, 3, 3}, kFloat),
         b1 = random_tensor({4}, kFloat);
  Tensor y1 = conv1d(x1, w1, b1, {2}, {1});
  EXPECT_EQ(y1.sizes(), IntArrayRef({2, 4, 5}));
  expect_elements(
      y1,
      [&](auto& i) {
        double s = value_at(b1, {i[1]});
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t k = 0; k < 3; ++k) {
            const int64_t p = i[2] * 2 - 1 + k;
            if (p >= 0 && p < 10) s += value_at(x1, {i[0], c, p}) * value_at(w1, {i[1], c, k});
          }
        return s;
      },
      "conv1d", 20.0);
  EXPECT_EQ(conv1d(x1, w1, std::nullopt, {1}, "same").sizes(), IntArrayRef({2, 4, 10}));
}

TEST(Conv, ConvErrors) {
  Tensor x = ones({1, 3, 5, 5}), w = ones({2, 3, 3, 3});
  EXPECT_THROW_MSG(
      conv2d(x, ones({2, 4, 3, 3})), ValueError,
      "weight of shape (2, 4, 3, 3) expects 4 input channels (groups=1), but the input has 3");
  EXPECT_THROW_MSG(conv2d(ones({5, 5}), w), ValueError,
                   "expected a 3-D (unbatched) or 4-D (batched) input, but got 2-D");
  EXPECT_THROW_MSG(conv2d(x, w, std::nullopt, {1, 1}, {-1, 0}), ValueError,
                   "padding must be >= 0, but got (-1, 0)");
  EXPECT_THROW_MSG(conv2d(x, w, std::nullopt, {0, 1}), ValueError,
                   "stride must be >= 1, but got (0, 1)");
  EXPECT_THROW_MSG(conv2d(x, ones({2, 3, 7, 7})), ValueError,
                   "the padded input (5x5) is smaller than the dilated kernel (7x7)");
  EXPECT_THROW_MSG(conv2d(x, w, ones({3})), ValueError,
                   "bias has 3 values, but there are 2 output channels");
  EXPECT_THROW_MSG(conv2d(x, w.to(kDouble)), TypeError,
                   "input (Float) and weight (Double) must have the same dtype");
  EXPECT_THROW_MSG(conv2d(x.to(kInt), w.to(kInt)), NotImplementedError,
                   "[conv2d] not implemented for dtype Int");
  EXPECT_THROW_MSG(conv2d(x, ones({2, 1, 3, 3}), std::nullopt, {1, 1}, {0, 0}, {1, 1}, 2),
                   ValueError, "must both be divisible by groups (2)");
}

TEST(Conv, ConvTranspose2d) {
  manual_seed(62);
  struct Case {
    std::vector<int64_t> in, w, stride, padding, output_padding, dilation;
    int64_t groups;
  };
  for (const Case& c :
       std::vector<Case>{{{2, 4, 3, 4}, {4, 3, 3, 3}, {2, 2}, {1, 0}, {1, 0}, {1, 1}, 1},
                         {{1, 4, 4, 3}, {4, 1, 2, 3}, {1, 2}, {0, 1}, {0, 1}, {2, 1}, 2}}) {
    Tensor x = random_tensor(c.in, kFloat), w = random_tensor(c.w, kFloat),
           b = random_tensor({c.w[1] * c.groups}, kFloat);
    Tensor y =
        conv_transpose2d(x, w, b, c.stride, c.padding, c.output_padding, c.groups, c.dilation);
    const int64_t ho = (c.in[2] - 1) * c.stride[0] - 2 * c.padding[0] +
                       c.dilation[0] * (c.w[2] - 1) + c.output_padding[0] + 1;
    const int64_t wo = (c.in[3] - 1) * c.stride[1] - 2 * c.padding[1] +
                       c.dilation[1] * (c.w[3] - 1) + c.output_padding[1] + 1;
    ASSERT_EQ(y.sizes(), IntArrayRef({c.in[0], c.w[1] * c.groups, ho, wo}));
    // Reference: scatter every input element through the kernel.
    std::vector<double> ref(static_cast<size_t>(y.numel()), 0.0);
    const int64_t cg = c.in[1] / c.groups, og = c.w[1];
    for_each_index(x.sizes(), [&](const std::vector<int64_t>& i) {
      const int64_t g = i[1] / cg;
      for (int64_t o = 0; o < og; ++o)
        for (int64_t ki = 0; ki < c.w[2]; ++ki)
          for (int64_t kj = 0; kj < c.w[3]; ++kj) {
            const int64_t oy = i[2] * c.stride[0] - c.padding[0] + ki * c.dilation[0];
            const int64_t ox = i[3] * c.stride[1] - c.padding[1] + kj * c.dilation[1];
            if (oy < 0 || ox < 0 || oy >= ho || ox >= wo) continue;
            const int64_t oc = g * og + o;
            ref[((i[0] * y.size(1) + oc) * ho + oy) * wo + ox] +=
                value_at(x, i) * value_at(w, {i[1], o, ki, kj});
          }
    });
    expect_elements(
        y,
        [&](auto& i) {
          return ref[((i[0] * y.size(1) + i[1]) * ho + i[2]) * wo + i[3]] + value_at(b, {i[1]});
        },
        "conv_transpose2d", 20.0);
  }
  EXPECT_THROW_MSG(
      conv_transpose2d(ones({1, 2, 3, 3}), ones({2, 2, 3, 3}), std::nullopt, {1, 1}, {0, 0},
                       {1, 1}),
      ValueError,
      "output_padding (1, 1) must be smaller than either stride (1, 1) or dilation (1, 1)");
}

TEST(Pool, MaxPool2d) {
  manual_seed(63);
  for (ScalarType t : float_dtypes()) {
    Tensor x = random_tensor({2, 3, 8, 8}, t);
    for (bool ceil : {false, true}) {
      auto [y, idx] = max_pool2d_with_indices(x, {3, 2}, {2, 2}, {1, 1}, {1}, ceil);
      const int64_t ho = y.size(2), wo = y.size(3);
      EXPECT_EQ(ho, ceil ? 5 : 4);
      EXPECT_EQ(wo, 5);
      expect_elements(
          y,
          [&](auto& i) {
            double m = -INFINITY;
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t b = 0; b < 2; ++b) {
                const int64_t iy = i[2] * 2 - 1 + a, ix = i[3] * 2 - 1 + b;
                if (iy >= 0 && iy < 8 && ix >= 0 && ix < 8)
                  m = std::max(m, value_at(x, {i[0], i[1], iy, ix}));
              }
            return m;
          },
          "max_pool2d");
      expect_elements(
          y,
          [&](auto& i) {
            const int64_t f = static_cast<int64_t>(value_at(idx, i));
            return value_at(x, {i[0], i[1], f / 8, f % 8});
          },
          "indices");
    }
  }
  EXPECT_EQ(max_pool2d(ones({1, 1, 4, 4}), {2}).sizes(), IntArrayRef({1, 1, 2, 2}));
  EXPECT_EQ(max_pool2d(ones({3, 9, 9}), {3}, {3}, {0}, {2}).sizes(),
            IntArrayRef({3, 2, 2}));  // dilation
  EXPECT_THROW_MSG(
      max_pool2d(ones({1, 1, 4, 4}), {2}, {2}, {2}), ValueError,
      "padding (2) must be non-negative and at most half the (dilated) kernel size (2)");
  EXPECT_THROW_MSG(max_pool2d(ones({4, 4}), {2}), ValueError,
                   "expected a 3-D (unbatched) or 4-D (batched) input");
  EXPECT_THROW_MSG(max_pool2d(ones({1, 1, 4, 4}, kInt), {2}), NotImplementedError,
                   "[max_pool2d] not implemented for dtype Int");
}

TEST(Pool, AvgPool2d) {
  manual_seed(64);
  Tensor x = random_tensor({2, 2, 6, 5}, kFloat);
  for (bool include_pad : {true, false}) {
    for (bool ceil : {false, true}) {
      Tensor y = avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, ceil, include_pad);
      expect_elements(
          y,
          [&](auto& i) {
            double s = 0;
            int64_t valid = 0;
            const int64_t y0 = i[2] * 2 - 1, x0 = i[3] * 2 - 1;
            const int64_t y1 = std::min<int64_t>(y0 + 3, 6 + 1),
                          x1 = std::min<int64_t>(x0 + 3, 5 + 1);
            for (int64_t a = y0; a < y1; ++a)
              for (int64_t b = x0; b < x1; ++b)
                if (a >= 0 && a < 6 && b >= 0 && b < 5)
                  s += value_at(x, {i[0], i[1], a, b}), ++valid;
            return s / (include_pad ? (y1 - y0) * (x1 - x0) : valid);
          },
          "avg_pool2d");
    }
  }
  Tensor d = avg_pool2d(ones({1, 1, 4, 4}), {2}, {2}, {0}, false, true, 3);
  EXPECT_FLOAT_EQ(d.select(2, 0).select(2, 0).item<float>(), 4.0f / 3.0f);
  EXPECT_THROW_MSG(avg_pool2d(ones({1, 1, 4, 4}), {2}, {2}, {0}, false, true, 0), ValueError,
                   "divisor_override must be nonzero");
}

// Values worked out by hand from the taps of Note [Bilinear taps] (and equal to PyTorch's
// F.interpolate(mode="bilinear") on the same input).
TEST(Upsample, BilinearMatchesHandWorkedValues) {
  for (ScalarType t : {kFloat, kDouble, kHalf, kBFloat16}) {
    SCOPED_TRACE(to_string(t));
    Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).reshape({1, 1, 2, 2}).to(t);
    // align_corners=false, 2 -> 4: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25.
    Tensor up = upsample_bilinear2d(x, {4, 4}, false).to(kDouble);
    const std::vector<double> row = {1.0, 1.25, 1.75, 2.0};
    const double rows[4] = {0, 0.5, 1.5, 2};  // the row offsets: (1 - l) * 0 + l * 2
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_DOUBLE_EQ(up.select(2, i).select(2, j).item<double>(), row[j] + rows[i]) << i << j;
    // align_corners=true, 2 -> 3: the corners stay, the middle is the mean.
    Tensor ac = upsample_bilinear2d(x, {3, 3}, true).to(kDouble);
    EXPECT_TRUE(allclose(
        ac, tensor({1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0}).reshape({1, 1, 3, 3}), 0, 0));
    // Down to 1x1 without align_corners reads the center of the 2x2 cell.
    EXPECT_DOUBLE_EQ(upsample_bilinear2d(x, {1, 1}).to(kDouble).item<double>(), 2.5);
  }
  // A non-contiguous input and a non-square output.
  manual_seed(3);
  Tensor x = randn({2, 3, 5, 4}).transpose(2, 3);
  EXPECT_TRUE(
      allclose(upsample_bilinear2d(x, {7, 3}), upsample_bilinear2d(x.contiguous(), {7, 3})));
  // The same size with align_corners is the identity.
  EXPECT_TRUE(allclose(upsample_bilinear2d(x, {4, 5}, true), x, 0, 1e-6));
}

TEST(Upsample, BadArgumentsRaise) {
  EXPECT_THROW_MSG(
      upsample_bilinear2d(ones({3, 4, 4}), {8, 8}), ValueError,
      "[upsample_bilinear2d] expected a 4-D input [N, C, H, W], but got shape (3, 4, 4)");
  EXPECT_THROW_MSG(upsample_bilinear2d(ones({1, 3, 4, 4}), {8, 0}), ValueError,
                   "output_size must be 2 positive values, but got (8, 0)");
  EXPECT_THROW_MSG(upsample_bilinear2d(ones({1, 3, 0, 4}), {8, 8}), ValueError,
                   "the input's spatial size must be nonzero");
  EXPECT_THROW_MSG(upsample_bilinear2d(ones({1, 3, 4, 4}, kLong), {8, 8}), NotImplementedError,
                   "[upsample_bilinear2d] not implemented for dtype Long");
}

TEST(Pool, Adaptive) {
  manual_seed(65);
  Tensor x = random_tensor({2, 3, 7, 5}, kFloat);
  Tensor y = adaptive_avg_pool2d(x, {3, 2});
  auto [m, idx] = adaptive_max_pool2d(x, {3, 2});
  auto window = [&](const std::vector<int64_t>& i, bool mean) {
    const int64_t y0 = i[2] * 7 / 3, y1 = ((i[2] + 1) * 7 + 2) / 3, x0 = i[3] * 5 / 2,
                  x1 = ((i[3] + 1) * 5 + 1) / 2;
    double s = 0, mx = -INFINITY;
    for (int64_t a = y0; a < y1; ++a)
      for (int64_t b = x0; b < x1; ++b)
        s += value_at(x, {i[0], i[1], a, b}), mx = std::max(mx, value_at(x, {i[0], i[1], a, b}));
    return mean ? s / ((y1 - y0) * (x1 - x0)) : mx;
  };
  expect_elements(
      y, [&](auto& i) { return window(i, true); }, "adaptive_avg_pool2d");
  expect_elements(
      m, [&](auto& i) { return window(i, false); }, "adaptive_max_pool2d");
  EXPECT_EQ(adaptive_avg_pool2d(x, {1}).sizes(), IntArrayRef({2, 3, 1, 1}));
  // Windows of whole rows (summed as one run): global pooling and bands of rows, float and double.
  for (ScalarType t : {kFloat, kDouble}) {
    const Tensor big = random_tensor({2, 3, 21, 19}, t);
    EXPECT_TRUE(
        allclose(adaptive_avg_pool2d(big, {1}), big.to(kDouble).mean({2, 3}, true), 1e-6, 1e-6));
    EXPECT_TRUE(allclose(adaptive_avg_pool2d(big, {3, 1}),
                         big.to(kDouble).view({2, 3, 3, 7, 19}).mean({3, 4}).unsqueeze(3), 1e-6,
                         1e-6));
  }
  EXPECT_THROW_MSG(adaptive_avg_pool2d(x, {0, 2}), ValueError,
                   "output_size must be 2 positive values, but got (0, 2)");
}
