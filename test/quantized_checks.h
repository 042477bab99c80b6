#pragma once
// What the quantization tests on both devices share (test_quantized, test_quantized_xpu): the
// integers of a quantized tensor and their comparison, random inputs, the convolution cases, and
// a model with every pattern prepare handles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <xten/xten.h>

namespace xten::testing {

// The integers of a quantized tensor (on any device) as int64 values, in logical order.
inline std::vector<int64_t> ints(const Tensor& q) {
  const Tensor r = q.int_repr().to(Device(kCPU), kLong).contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

// |a - b| <= tol integers apart, element by element (in logical order, any layouts).
inline void expect_ints_near(const Tensor& got, const Tensor& want, int64_t tol,
                             const std::string& what) {
  const auto a = ints(got), b = ints(want);
  ASSERT_EQ(a.size(), b.size()) << what;
  int64_t worst = 0, off = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    off += a[i] != b[i];
  }
  EXPECT_LE(worst, tol) << what << ": " << off << " of " << a.size() << " differ";
}

// Uniform values in [lo, hi) from a seed.
inline Tensor uniform(IntArrayRef sizes, double lo, double hi, uint64_t seed) {
  manual_seed(seed);
  return rand(sizes) * (hi - lo) + lo;
}

// quantized::conv2d's test geometries: strides, padding, dilation, groups, a 1x1 kernel, and an
// unbatched (3-d) input.
struct QuantizedConvCase {
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, pad, dil;
  int64_t groups;
};
inline std::vector<QuantizedConvCase> quantized_conv_cases() {
  return {
      {{2, 8, 10, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{1, 6, 11, 11}, {4, 3, 3, 2}, {2, 1}, {0, 1}, {1, 2}, 2},
      {{3, 16, 7, 7}, {32, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1},
      {{8, 5, 5}, {7, 8, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1},  // unbatched
  };
}

// A small CNN with every pattern prepare handles: conv-bn-relu chains, a pooling, flatten,
// linear-relu, a residual Add.
class TinyNetImpl : public nn::Module {
 public:
  TinyNetImpl() : nn::Module("TinyNet") {
    features = register_module("features",
                               nn::Sequential(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)),
                                              nn::BatchNorm2d(8), nn::ReLU(), nn::MaxPool2d(2)));
    branch =
        register_module("branch", nn::Conv2d(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(8));
    skip = register_module("skip", nn::Add());
    head = register_module("head", nn::Sequential(nn::Flatten(), nn::Linear(8 * 4 * 4, 16),
                                                  nn::ReLU(), nn::Linear(16, 5)));
  }
  Tensor forward(const Tensor& x) {
    const Tensor y = features(x);
    return head(relu(skip(bn(branch(y)), y)));
  }
  nn::Sequential features{nullptr}, head{nullptr};
  nn::Conv2d branch{nullptr};
  nn::BatchNorm2d bn{nullptr};
  nn::Add skip{nullptr};
};
XTEN_MODULE(TinyNet);

inline TinyNet trained_tiny_net() {
  manual_seed(3);
  TinyNet net;
  // Running statistics that differ from (0, 1), so that folding them matters.
  for (int i = 0; i < 5; ++i) net(rand({16, 3, 8, 8}) * 2 + 0.5);
  net->eval();
  return net;
}

}  // namespace xten::testing
