// Convolution front ends written with conv2d: conv1d, and the padding strings "same" and
// "valid" (valid on every backend that has conv2d).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/composite/conv_grad.h>

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
  XTEN_CHECK(stride.size() == kernel.size() && dilation.size() == kernel.size(), ValueError, op,
             "stride and dilation must have {} values each, but got {} and {}", kernel.size(),
             stride, dilation);
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

Tensor conv2d_backward_weight_kernel(const Tensor& grad_output, const Tensor& input,
                                     IntArrayRef weight_size, IntArrayRef stride,
                                     IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                                     bool transposed) {
  return conv_weight_grad_by_convolution(grad_output, input, weight_size, stride, padding, dilation,
                                         groups, transposed);
}

}  // namespace

Tensor conv_weight_grad_by_convolution(const Tensor& g, const Tensor& x, IntArrayRef w_sizes,
                                       IntArrayRef stride, IntArrayRef padding,
                                       IntArrayRef dilation, int64_t groups, bool transposed) {
  const char* op = "conv2d_backward_weight";
  XTEN_CHECK(x.dim() == 4 && g.dim() == 4 && w_sizes.size() == 4 && groups > 0, ValueError, op,
             "expected a 4-D input, grad_output and weight size and groups > 0, but got {}, {}, "
             "{} and {}",
             x.sizes(), g.sizes(), w_sizes, groups);
  XTEN_CHECK(x.size(1) % groups == 0 && g.size(1) % groups == 0, ValueError, op,
             "channels ({} in, {} out) must be divisible by groups ({})", x.size(1), g.size(1),
             groups);
  const int64_t cx = x.size(1) / groups, cg = g.size(1) / groups;
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < groups; ++k) {
    const Tensor xk = x.narrow(1, k * cx, cx).transpose(0, 1);  // (cx, N, H, W)
    const Tensor gk = g.narrow(1, k * cg, cg).transpose(0, 1);  // (cg, N, Ho, Wo)
    // conv: dW[co, ci] = conv(x^T, g^T); transposed: dW[ci, co] = conv(g^T, x^T).
    auto conv = [&](const Tensor& in, const Tensor& w) {
      return ops::conv2d::handle().call(in, w, std::nullopt, dilation, padding, stride, 1);
    };
    Tensor r = transposed ? conv(gk, xk) : conv(xk, gk);
    parts.push_back(r.transpose(0, 1).narrow(2, 0, w_sizes[2]).narrow(3, 0, w_sizes[3]));
  }
  return groups == 1 ? parts[0].contiguous() : cat(parts, 0);
}

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("conv2d_backward_weight", conv2d_backward_weight_kernel);
  m.impl("conv2d.padding", conv2d_padding_kernel);
  m.impl("conv1d", conv1d_kernel);
  m.impl("conv1d.padding", conv1d_padding_kernel);
}

}  // namespace xten
