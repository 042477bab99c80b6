// Convolution front ends written with conv2d: conv1d, and the padding strings "same" and
// "valid" (valid on every backend that has conv2d).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

// "valid": no padding. "same": output size = input size (stride 1 only); an odd total
// padding puts the extra element at the end, padded explicitly.
struct SamePadding {
  DimVector symmetric;  // per spatial dim
  DimVector extra;      // one more zero at the end of the dim
};
SamePadding resolve_padding(const char* op, const std::string& padding, IntArrayRef kernel,
                            IntArrayRef stride, IntArrayRef dilation) {
  XTEN_CHECK(padding == "same" || padding == "valid", ValueError, op,
             "padding must be 'same', 'valid' or numbers, but got '{}'", padding);
  SamePadding p{DimVector(kernel.size(), 0), DimVector(kernel.size(), 0)};
  if (padding == "valid") return p;
  for (size_t i = 0; i < kernel.size(); ++i) {
    XTEN_CHECK(stride[i] == 1, ValueError, op,
               "padding='same' is not supported for strided convolutions (stride {})", stride);
    const int64_t total = dilation[i] * (kernel[i] - 1);
    p.symmetric[i] = total / 2;
    p.extra[i] = total % 2;
  }
  return p;
}

Tensor pad_end(const Tensor& input, IntArrayRef extra) {
  bool any = false;
  for (int64_t e : extra) any = any || e;
  if (!any) return input;
  DimVector pads;  // pad() lists the last dim first
  for (size_t i = extra.size(); i-- > 0;) {
    pads.push_back(0);
    pads.push_back(extra[i]);
  }
  return pad(input, pads);
}

Tensor conv2d_padding_kernel(const Tensor& input, const Tensor& weight,
                             const std::optional<Tensor>& bias, IntArrayRef stride,
                             const std::string& padding, IntArrayRef dilation, int64_t groups) {
  XTEN_CHECK(weight.dim() == 4, ValueError, "conv2d", "expected a 4-D weight, but got shape {}",
             weight.sizes());
  const SamePadding p =
      resolve_padding("conv2d", padding, weight.sizes().slice(2, 2), stride, dilation);
  return conv2d(pad_end(input, p.extra), weight, bias, stride, IntArrayRef(p.symmetric), dilation,
                groups);
}

Tensor conv1d_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                     int64_t groups) {
  XTEN_CHECK(input.dim() == 2 || input.dim() == 3, ValueError, "conv1d",
             "expected a 2-D (unbatched) or 3-D (batched) input, but got shape {}", input.sizes());
  XTEN_CHECK(weight.dim() == 3, ValueError, "conv1d", "expected a 3-D weight, but got shape {}",
             weight.sizes());
  XTEN_CHECK(stride.size() == 1 && padding.size() == 1 && dilation.size() == 1, ValueError,
             "conv1d", "stride, padding and dilation must have 1 value each, but got {}, {}, {}",
             stride, padding, dilation);
  const DimVector st{1, stride[0]}, pd{0, padding[0]}, dl{1, dilation[0]};
  const Tensor out =
      conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, st, IntArrayRef(pd), dl, groups);
  return out.squeeze(-2);
}

Tensor conv1d_padding_kernel(const Tensor& input, const Tensor& weight,
                             const std::optional<Tensor>& bias, IntArrayRef stride,
                             const std::string& padding, IntArrayRef dilation, int64_t groups) {
  XTEN_CHECK(weight.dim() == 3, ValueError, "conv1d", "expected a 3-D weight, but got shape {}",
             weight.sizes());
  const SamePadding p =
      resolve_padding("conv1d", padding, weight.sizes().slice(2, 1), stride, dilation);
  return conv1d(pad_end(input, p.extra), weight, bias, stride, IntArrayRef(p.symmetric), dilation,
                groups);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("conv2d.padding", conv2d_padding_kernel);
  m.impl("conv1d", conv1d_kernel);
  m.impl("conv1d.padding", conv1d_padding_kernel);
}

}  // namespace xten
