#pragma once
// A model for the quantization tests on both devices (test_quantized, test_quantized_xpu).
#include <xten/xten.h>

namespace xten::testing {

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
