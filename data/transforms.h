#pragma once
// Per-example transforms (docs/data.md), torchvision's names and meanings. Each is a callable
// Tensor -> Tensor on one example's image ([C, H, W]; ToTensor also takes [H, W] and HWC), so
// any lambda is a transform too. Random ones draw from data::sample_rng(), which the
// DataLoader seeds per sample.
//
//   auto tf = transforms::Compose({transforms::RandomCrop(28, 2), transforms::ToTensor(),
//                                  transforms::Normalize({0.2860}, {0.3530})});
#include <string>
#include <utility>
#include <vector>

#include <xten/data/dataset.h>

namespace xten::data::transforms {

// uint8 pixels -> float32 in [0, 1], channels first. layout "CHW" (the readers' layout) or
// "HWC" (an interleaved image); a 2-D [H, W] image becomes [1, H, W].
struct ToTensor {
  explicit ToTensor(std::string layout = "CHW");
  Tensor operator()(const Tensor& image) const;
  std::string layout;
};

// (x - mean[c]) / std[c] per channel of a floating [C, H, W] image; one value applies to all.
struct Normalize {
  Normalize(std::vector<double> mean, std::vector<double> std);
  Tensor operator()(const Tensor& image) const;
  std::vector<double> mean, std;
};

// Bilinear resize of a floating [C, H, W] image to [C, height, width] (torchvision's Resize
// without antialias: upsample_bilinear2d with align_corners = false).
struct Resize {
  Resize(int64_t height, int64_t width);
  explicit Resize(int64_t size) : Resize(size, size) {}
  Tensor operator()(const Tensor& image) const;
  int64_t height, width;
};

// Mirrors the last dim with probability p.
struct RandomHorizontalFlip {
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor operator()(const Tensor& image) const;
  double p;
};

// Pads H and W by `padding` with `fill`, then takes a random window of `size` (square) or
// {height, width}.
struct RandomCrop {
  RandomCrop(std::pair<int64_t, int64_t> size, int64_t padding = 0, double fill = 0);
  explicit RandomCrop(int64_t size, int64_t padding = 0, double fill = 0)
      : RandomCrop({size, size}, padding, fill) {}
  Tensor operator()(const Tensor& image) const;
  int64_t height, width, padding;
  double fill;
};

// Applies transforms in order.
struct Compose {
  explicit Compose(std::vector<Transform> transforms);
  Tensor operator()(const Tensor& image) const;
  std::vector<Transform> transforms;
};

}  // namespace xten::data::transforms
