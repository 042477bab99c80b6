#pragma once
// ResNet-18/34/50 as torchvision defines them (the same layers, names and parameter counts, so a
// torchvision state dict's keys match: conv1, bn1, layer1.0.conv1, ..., layer2.0.downsample.0,
// fc), and a small CNN for 28x28 images (docs/nn.md, "Models").
//
//   auto model = xten::models::resnet18();        // 1000 classes
//   auto small = xten::models::SmallCNN(10);
#include <xten/nn/modules.h>

namespace xten::models {

// conv3x3-bn-relu-conv3x3-bn plus the input (through downsample when the shape changes), relu.
class BasicBlockImpl : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential downsample);
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1{nullptr}, conv2{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  nn::Sequential downsample{nullptr};
  // The residual sum and the relus as modules, so that quantization can fuse them
  // (docs/quantization.md): conv-bn-relu1, skip_add-relu2.
  nn::Add skip_add{nullptr};
  nn::ReLU relu1{nullptr}, relu2{nullptr};
};
XTEN_MODULE(BasicBlock);

// conv1x1-bn-relu-conv3x3(stride)-bn-relu-conv1x1(4x)-bn plus the input, relu (torchvision's
// ResNet v1.5: the stride on the 3x3).
class BottleneckImpl : public nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;
  BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential downsample);
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  nn::Sequential downsample{nullptr};
  nn::Add skip_add{nullptr};  // as BasicBlock's
  nn::ReLU relu1{nullptr}, relu2{nullptr}, relu3{nullptr};
};
XTEN_MODULE(Bottleneck);

// The stem (7x7/2 conv, bn, relu, 3x3/2 max pool), four stages of blocks, global average pool
// and fc. Convolutions start from kaiming_normal_(fan_out, relu), batch norms from (1, 0), as
// torchvision's.
class ResNetImpl : public nn::Module {
 public:
  // small_input: a 3x3 stride-1 stem and no max pool, for 28x28 or 32x32 images.
  ResNetImpl(bool bottleneck, std::vector<int64_t> layers, int64_t num_classes = 1000,
             int64_t in_channels = 3, bool small_input = false);
  Tensor forward(const Tensor& x);
  nn::Conv2d conv1{nullptr};
  nn::BatchNorm2d bn1{nullptr};
  nn::ReLU relu{nullptr};
  nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  nn::Linear fc{nullptr};

 private:
  nn::Sequential make_layer(bool bottleneck, int64_t planes, int64_t blocks, int64_t stride);
  int64_t inplanes_ = 64;
  bool small_input_;
};
XTEN_MODULE(ResNet);

ResNet resnet18(int64_t num_classes = 1000);  // 11,689,512 parameters
ResNet resnet34(int64_t num_classes = 1000);  // 21,797,672
ResNet resnet50(int64_t num_classes = 1000);  // 25,557,032
// ResNet-18 for small images (Fashion-MNIST: in_channels 1): the small_input stem.
ResNet resnet18_small_input(int64_t num_classes, int64_t in_channels);

// For 28x28 single-channel images (Fashion-MNIST): two conv(3x3)-bn-relu-maxpool(2) stages
// (32 and 64 channels), dropout, fc 3136 -> 32, relu, fc 32 -> num_classes: 119,626 parameters
// for 10 classes. Trained by examples/train to 92% on Fashion-MNIST (docs/training.md).
class SmallCNNImpl : public nn::Module {
 public:
  explicit SmallCNNImpl(int64_t num_classes = 10, double dropout = 0.25);
  Tensor forward(const Tensor& x);
  nn::Sequential features{nullptr}, classifier{nullptr};
};
XTEN_MODULE(SmallCNN);

}  // namespace xten::models
