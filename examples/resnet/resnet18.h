#pragma once
// A ResNet-18-shaped network from xten ops (used by examples/resnet and bench/bench_amp):
// conv 7x7/2 -> batch norm -> relu -> max pool 3x3/2, four stages of two basic blocks (64,
// 128, 256, 512 channels; stages 2-4 start with stride 2 and a 1x1 projection), global
// average pool, fully connected. Batch norm runs in evaluation mode with random running
// statistics; weights are He-initialized from the global generator.
#include <cmath>
#include <vector>

#include <xten/xten.h>

namespace resnet {

using xten::Tensor;

struct BatchNorm {
  Tensor weight, bias, mean, var;
};

struct Conv {
  Tensor weight;
  int64_t stride = 1, padding = 0;
};

struct Block {
  Conv conv1, conv2;
  BatchNorm bn1, bn2;
  bool projects = false;  // a 1x1 strided conv + bn on the shortcut
  Conv down;
  BatchNorm down_bn;
};

struct ResNet18 {
  Conv stem;
  BatchNorm stem_bn;
  std::vector<Block> blocks;
  Tensor fc_weight, fc_bias;
};

// He initialization: weights ~ N(0, 2 / fan_in).
inline Conv make_conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding) {
  return {xten::randn({out, in, k, k}) * std::sqrt(2.0 / double(in * k * k)), stride, padding};
}

inline BatchNorm make_bn(int64_t c) {
  return {1 + 0.1 * xten::randn({c}), 0.1 * xten::randn({c}), 0.1 * xten::randn({c}),
          1 + 0.1 * xten::rand({c})};
}

inline ResNet18 make_resnet18(int64_t classes) {
  ResNet18 net;
  net.stem = make_conv(3, 64, 7, 2, 3);
  net.stem_bn = make_bn(64);
  int64_t in = 64;
  for (int64_t width : {64, 128, 256, 512}) {
    for (int i = 0; i < 2; ++i) {
      const int64_t stride = (i == 0 && width != 64) ? 2 : 1;
      Block b;
      b.conv1 = make_conv(in, width, 3, stride, 1);
      b.bn1 = make_bn(width);
      b.conv2 = make_conv(width, width, 3, 1, 1);
      b.bn2 = make_bn(width);
      b.projects = stride != 1 || in != width;
      if (b.projects) {
        b.down = make_conv(in, width, 1, stride, 0);
        b.down_bn = make_bn(width);
      }
      net.blocks.push_back(b);
      in = width;
    }
  }
  net.fc_weight = xten::randn({classes, 512}) * std::sqrt(1.0 / 512);
  net.fc_bias = xten::zeros({classes});
  return net;
}

// The same network with every parameter on `device`.
inline ResNet18 to_device(const ResNet18& net, const xten::Device& device) {
  auto bn = [&](const BatchNorm& b) {
    return BatchNorm{b.weight.to(device), b.bias.to(device), b.mean.to(device), b.var.to(device)};
  };
  auto conv = [&](const Conv& c) { return Conv{c.weight.to(device), c.stride, c.padding}; };
  ResNet18 out;
  out.stem = conv(net.stem);
  out.stem_bn = bn(net.stem_bn);
  for (const Block& b : net.blocks) {
    Block d = b;
    d.conv1 = conv(b.conv1);
    d.conv2 = conv(b.conv2);
    d.bn1 = bn(b.bn1);
    d.bn2 = bn(b.bn2);
    if (b.projects) {
      d.down = conv(b.down);
      d.down_bn = bn(b.down_bn);
    }
    out.blocks.push_back(d);
  }
  out.fc_weight = net.fc_weight.to(device);
  out.fc_bias = net.fc_bias.to(device);
  return out;
}

inline Tensor conv_bn(const Tensor& x, const Conv& c, const BatchNorm& bn) {
  const Tensor y =
      xten::conv2d(x, c.weight, std::nullopt, {c.stride, c.stride}, {c.padding, c.padding});
  return xten::batch_norm(y, bn.weight, bn.bias, bn.mean, bn.var, /*training=*/false);
}

inline Tensor forward(const ResNet18& net, const Tensor& images) {
  Tensor x = conv_bn(images, net.stem, net.stem_bn).relu();
  x = xten::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
  for (const Block& b : net.blocks) {
    const Tensor shortcut = b.projects ? conv_bn(x, b.down, b.down_bn) : x;
    const Tensor y = conv_bn(conv_bn(x, b.conv1, b.bn1).relu(), b.conv2, b.bn2);
    x = (y + shortcut).relu();
  }
  x = xten::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return xten::linear(x, net.fc_weight, net.fc_bias);
}

}  // namespace resnet
