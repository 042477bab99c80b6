#include <xten/data/transforms.h>

#include <xten/core/error.h>
#include <xten/data/random.h>
#include <xten/dispatch/ops.h>

namespace xten::data::transforms {
namespace {

void check_image(const Tensor& image, const char* op, bool floating) {
  XTEN_CHECK(image.defined() && image.dim() >= 2, ValueError, op,
             "expected an image [C, H, W] or [H, W], but got shape {}",
             image.defined() ? image.sizes() : IntArrayRef{});
  if (floating) {
    XTEN_CHECK(image.is_floating_point(), TypeError, op,
               "expected a floating image (apply ToTensor first), but got dtype {}",
               to_string(image.dtype()));
  }
}

}  // namespace

ToTensor::ToTensor(std::string layout_) : layout(std::move(layout_)) {
  XTEN_CHECK(layout == "CHW" || layout == "HWC", ValueError, "ToTensor",
             "layout must be \"CHW\" or \"HWC\", but got \"{}\"", layout);
}

Tensor ToTensor::operator()(const Tensor& image) const {
  check_image(image, "ToTensor", false);
  XTEN_CHECK(image.dtype() == kByte, TypeError, "ToTensor",
             "expected uint8 pixels, but got dtype {}", to_string(image.dtype()));
  XTEN_CHECK(image.dim() <= 3, ValueError, "ToTensor",
             "expected an image [H, W] or with channels, but got shape {}", image.sizes());
  Tensor chw = image.dim() == 2 ? image.unsqueeze(0)
               : layout == "HWC" ? image.permute({2, 0, 1})
                                 : image;
  return chw.to(kFloat).div(255.0);
}

Normalize::Normalize(std::vector<double> mean_, std::vector<double> std_)
    : mean(std::move(mean_)), std(std::move(std_)) {
  XTEN_CHECK(!mean.empty() && mean.size() == std.size(), ValueError, "Normalize",
             "mean and std need the same non-zero number of values, but got {} and {}",
             mean.size(), std.size());
  for (double s : std) {
    XTEN_CHECK(s != 0, ValueError, "Normalize", "std must not contain 0, but got {}",
               fmt::join(std, ", "));
  }
}

Tensor Normalize::operator()(const Tensor& image) const {
  check_image(image, "Normalize", true);
  const int64_t channels = image.dim() == 2 ? 1 : image.size(-3);
  if (mean.size() == 1) return image.sub(mean[0]).div(std[0]);
  XTEN_CHECK(int64_t(mean.size()) == channels, ValueError, "Normalize",
             "{} means for an image of {} channels (shape {})", mean.size(), channels,
             image.sizes());
  const auto options = TensorOptions().dtype(image.dtype()).device(image.device());
  Tensor m = tensor(mean, options).reshape({channels, 1, 1});
  Tensor s = tensor(std, options).reshape({channels, 1, 1});
  return image.sub(m).div(s);
}

Resize::Resize(int64_t height_, int64_t width_) : height(height_), width(width_) {
  XTEN_CHECK(height > 0 && width > 0, ValueError, "Resize",
             "the size must be positive, but got {}x{}", height, width);
}

Tensor Resize::operator()(const Tensor& image) const {
  check_image(image, "Resize", true);
  const bool plane = image.dim() == 2;
  Tensor x = plane ? image.unsqueeze(0) : image;
  Tensor y = upsample_bilinear2d(x.unsqueeze(0), {height, width}, false).squeeze(0);
  return plane ? y.squeeze(0) : y;
}

RandomHorizontalFlip::RandomHorizontalFlip(double p_) : p(p_) {
  XTEN_CHECK(p >= 0 && p <= 1, ValueError, "RandomHorizontalFlip",
             "p must be in [0, 1], but got {}", p);
}

Tensor RandomHorizontalFlip::operator()(const Tensor& image) const {
  check_image(image, "RandomHorizontalFlip", false);
  return sample_rng().uniform() < p ? image.flip({-1}) : image;
}

RandomCrop::RandomCrop(std::pair<int64_t, int64_t> size, int64_t padding_, double fill_)
    : height(size.first), width(size.second), padding(padding_), fill(fill_) {
  XTEN_CHECK(height > 0 && width > 0 && padding >= 0, ValueError, "RandomCrop",
             "expected a positive size and padding >= 0, but got {}x{} and padding {}", height,
             width, padding);
}

Tensor RandomCrop::operator()(const Tensor& image) const {
  check_image(image, "RandomCrop", false);
  Tensor x = padding > 0 ? pad(image, {padding, padding, padding, padding}, "constant", fill)
                         : image;
  const int64_t h = x.size(-2), w = x.size(-1);
  XTEN_CHECK(height <= h && width <= w, ValueError, "RandomCrop",
             "a {}x{} crop does not fit an image of {}x{} (padding {})", height, width, h, w,
             padding);
  Rng& rng = sample_rng();
  const int64_t top = rng.integer(0, h - height + 1), left = rng.integer(0, w - width + 1);
  return x.narrow(-2, top, height).narrow(-1, left, width);
}

Compose::Compose(std::vector<Transform> transforms_) : transforms(std::move(transforms_)) {
  for (size_t i = 0; i < transforms.size(); ++i) {
    XTEN_CHECK(static_cast<bool>(transforms[i]), ValueError, "Compose",
               "transform {} is empty", i);
  }
}

Tensor Compose::operator()(const Tensor& image) const {
  Tensor x = image;
  for (const Transform& t : transforms) x = t(x);
  return x;
}

}  // namespace xten::data::transforms
