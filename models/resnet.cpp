#include <xten/models/resnet.h>

#include <xten/nn/init.h>

namespace xten::models {
namespace {

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(padding).bias(false));
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential ds)
    : nn::Module("BasicBlock") {
  conv1 = register_module("conv1", conv(inplanes, planes, 3, stride, 1));
  bn1 = register_module("bn1", nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, 1, 1));
  bn2 = register_module("bn2", nn::BatchNorm2d(planes));
  if (!ds.is_empty()) downsample = register_module("downsample", ds);
  skip_add = register_module("skip_add", nn::Add());
  relu1 = register_module("relu1", nn::ReLU());
  relu2 = register_module("relu2", nn::ReLU());
}

Tensor BasicBlockImpl::forward(const Tensor& x) {
  Tensor y = relu1(bn1(conv1(x)));
  y = bn2(conv2(y));
  return relu2(skip_add(y, downsample.is_empty() ? x : downsample(x)));
}

BottleneckImpl::BottleneckImpl(int64_t inplanes, int64_t planes, int64_t stride, nn::Sequential ds)
    : nn::Module("Bottleneck") {
  conv1 = register_module("conv1", conv(inplanes, planes, 1, 1, 0));
  bn1 = register_module("bn1", nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, stride, 1));
  bn2 = register_module("bn2", nn::BatchNorm2d(planes));
  conv3 = register_module("conv3", conv(planes, planes * kExpansion, 1, 1, 0));
  bn3 = register_module("bn3", nn::BatchNorm2d(planes * kExpansion));
  if (!ds.is_empty()) downsample = register_module("downsample", ds);
  skip_add = register_module("skip_add", nn::Add());
  relu1 = register_module("relu1", nn::ReLU());
  relu2 = register_module("relu2", nn::ReLU());
  relu3 = register_module("relu3", nn::ReLU());
}

Tensor BottleneckImpl::forward(const Tensor& x) {
  Tensor y = relu1(bn1(conv1(x)));
  y = relu2(bn2(conv2(y)));
  y = bn3(conv3(y));
  return relu3(skip_add(y, downsample.is_empty() ? x : downsample(x)));
}

ResNetImpl::ResNetImpl(bool bottleneck, std::vector<int64_t> layers, int64_t num_classes,
                       int64_t in_channels, bool small_input)
    : nn::Module("ResNet"), small_input_(small_input) {
  XTEN_CHECK(layers.size() == 4, ValueError, "ResNet", "expected 4 stages, but got {}",
             layers.size());
  conv1 = register_module(
      "conv1", small_input ? conv(in_channels, 64, 3, 1, 1) : conv(in_channels, 64, 7, 2, 3));
  bn1 = register_module("bn1", nn::BatchNorm2d(64));
  relu = register_module("relu", nn::ReLU());
  layer1 = register_module("layer1", make_layer(bottleneck, 64, layers[0], 1));
  layer2 = register_module("layer2", make_layer(bottleneck, 128, layers[1], 2));
  layer3 = register_module("layer3", make_layer(bottleneck, 256, layers[2], 2));
  layer4 = register_module("layer4", make_layer(bottleneck, 512, layers[3], 2));
  fc = register_module("fc", nn::Linear(512 * (bottleneck ? 4 : 1), num_classes));
  apply([](nn::Module& m) {
    if (auto* c = dynamic_cast<nn::Conv2dImpl*>(&m))
      nn::init::kaiming_normal_(c->weight, 0, "fan_out", "relu");
  });
}

nn::Sequential ResNetImpl::make_layer(bool bottleneck, int64_t planes, int64_t blocks,
                                      int64_t stride) {
  const int64_t expansion = bottleneck ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion;
  nn::Sequential layer;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t s = b == 0 ? stride : 1;
    nn::Sequential ds(nullptr);
    if (b == 0 && (stride != 1 || inplanes_ != planes * expansion))
      ds = nn::Sequential(conv(inplanes_, planes * expansion, 1, stride, 0),
                          nn::BatchNorm2d(planes * expansion));
    if (bottleneck) {
      layer->push_back(Bottleneck(inplanes_, planes, s, ds));
    } else {
      layer->push_back(BasicBlock(inplanes_, planes, s, ds));
    }
    inplanes_ = planes * expansion;
  }
  return layer;
}

Tensor ResNetImpl::forward(const Tensor& x) {
  Tensor y = relu(bn1(conv1(x)));  // `relu` is the member module here
  if (!small_input_) y = max_pool2d(y, {3, 3}, {2, 2}, {1, 1});
  y = layer4(layer3(layer2(layer1(y))));
  return fc(flatten(adaptive_avg_pool2d(y, {1, 1}), 1));
}

ResNet resnet18(int64_t num_classes) {
  return ResNet(false, std::vector<int64_t>{2, 2, 2, 2}, num_classes);
}
ResNet resnet34(int64_t num_classes) {
  return ResNet(false, std::vector<int64_t>{3, 4, 6, 3}, num_classes);
}
ResNet resnet18_small_input(int64_t num_classes, int64_t in_channels) {
  return ResNet(false, std::vector<int64_t>{2, 2, 2, 2}, num_classes, in_channels, true);
}
ResNet resnet50(int64_t num_classes) {
  return ResNet(true, std::vector<int64_t>{3, 4, 6, 3}, num_classes);
}

SmallCNNImpl::SmallCNNImpl(int64_t num_classes, double dropout) : nn::Module("SmallCNN") {
  features = register_module(
      "features", nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1).bias(false)),
                                 nn::BatchNorm2d(32), nn::ReLU(), nn::MaxPool2d(2),
                                 nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1).bias(false)),
                                 nn::BatchNorm2d(64), nn::ReLU(), nn::MaxPool2d(2)));
  classifier = register_module(
      "classifier", nn::Sequential(nn::Flatten(), nn::Dropout(dropout), nn::Linear(64 * 7 * 7, 32),
                                   nn::ReLU(), nn::Linear(32, num_classes)));
}

Tensor SmallCNNImpl::forward(const Tensor& x) {
  return classifier(features(x));
}

}  // namespace xten::models
