// XPU conv2d (im2col + linalg's tiled bmm) and conv_transpose2d (bmm + col2im), from conv.cl,
// in NCHW or, for channels-last operands, in NHWC (Note [Channels-last XPU convolution]), with
// conv2d's weight gradient. Shapes and checks are the CPU's (kernels/common/window.h). Half and
// BFloat16 compute in float, as on the CPU. Images go through in chunks whose column buffer
// stays under kColumnBytes, so memory stays bounded for large batches.
#include <algorithm>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/composite/conv_grad.h>

#include <xten/kernels/common/window.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

constexpr int64_t kColumnBytes = int64_t{64} << 20;

// Images per chunk when one image's column buffer has `per_image` elements of `t`.
int64_t chunk_images(int64_t n, int64_t per_image, ScalarType t) {
  const int64_t bytes = std::max<int64_t>(1, per_image * static_cast<int64_t>(element_size(t)));
  return std::clamp<int64_t>(kColumnBytes / bytes, 1, std::max<int64_t>(n, 1));
}

// Launches conv.cl's im2col or col2im with the geometry's sizes.
void launch_window_kernel(const char* op, const char* name, const Tensor& dst, const Tensor& src,
                          const ConvGeometry& g, int64_t channels, int64_t h, int64_t w, int64_t ho,
                          int64_t wo) {
  Kernel& kern = get_kernel(device_of(dst), op, family_for("conv", {dst.dtype()}),
                            std::string(name) + "_" + dtype_tag(dst.dtype()));
  launch(stream_of(dst), kern, dst.numel(), dst.data_ptr(), src.data_ptr(), channels, h, w, g.kh,
         g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, ho, wo, dst.numel());
}

// Note [Channels-last XPU convolution]: as PyTorch does (Note [Channels-last convolution]), a
// convolution with a channels-last input or weight computes in NHWC. An NHWC batch is a
// [n*h*w, c] matrix and a channels-last weight [o, c/g, kh, kw] an [o, kh*kw*c/g] one, so per
// group the convolution is one product, cols [n*ho*wo, kh*kw*c/g] @ weight^T, written into the
// NHWC output's columns: im2col_nhwc lays each group's columns side by side, and a 1x1 stride-1
// convolution reads the input itself. conv_transpose2d (a convolution's input gradient) is the
// product x [n*h*w, c/g] @ weight [c/g, kh*kw*o/g] and col2im_nhwc, and the weight gradient
// grad^T [o/g, n*ho*wo] @ cols, written channels-last as the CPU's is. No reorder of the input,
// the output or the gradients; the sums run over (i, j, c) where NCHW's run over (c, i, j), so
// the two layouts agree to rounding.

// `t` ([n, c, h, w], channels-last) as the matrix [n*h*w, c] (a view).
Tensor nhwc_rows(const Tensor& t) {
  return t.permute({0, 2, 3, 1}).reshape({t.size(0) * t.size(2) * t.size(3), t.size(1)});
}

// A channels-last weight [a, b, kh, kw] as the matrix [a, kh*kw*b] (a view).
Tensor ohwi_rows(const Tensor& w) {
  return w.permute({0, 2, 3, 1}).reshape({w.size(0), w.size(1) * w.size(2) * w.size(3)});
}

Tensor empty_nhwc(IntArrayRef sizes, ScalarType t, Device d) {
  return empty_tensor(sizes, strides_for_format("conv2d", sizes, MemoryFormat::ChannelsLast), t, d);
}

// out [1, n, m] = a [1, n, k] @ b [1, k, m] for 2-d operands (views of any strides).
void mm_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  bmm_into(op, out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0));
}

// im2col_nhwc over images [i0, i0 + nc) of the NHWC input `x` into cols [nc*ho*wo, kh*kw*c].
Tensor nhwc_columns(const char* op, const Tensor& x, int64_t i0, int64_t nc, int64_t groups,
                    const ConvGeometry& g) {
  Tensor cols = empty({nc * g.ho * g.wo, g.kh * g.kw * g.c}, x.dtype(), x.device());
  Kernel& kern = get_kernel(device_of(x), op, family_for("conv", {x.dtype()}),
                            std::string("im2col_nhwc_") + dtype_tag(x.dtype()));
  launch(stream_of(x), kern, cols.numel(), cols.data_ptr(), x.narrow(0, i0, nc).data_ptr(), g.c,
         g.c / groups, g.h, g.w, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.ho, g.wo,
         cols.numel());
  return cols;
}

Tensor conv2d_nhwc(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                   const std::optional<Tensor>& bias, int64_t groups, ScalarType ct) {
  const Tensor x = g.input4.to(ct).contiguous(MemoryFormat::ChannelsLast);
  // [KH*KW*C/g, O]: each group's product reads rows of it (Note [Row strips], linalg.cl).
  const Tensor w = ohwi_rows(weight.to(ct).contiguous(MemoryFormat::ChannelsLast)).t().contiguous();
  Tensor out = empty_nhwc({g.n, g.o, g.ho, g.wo}, ct, input.device());
  const Tensor out_rows = nhwc_rows(out);
  const int64_t cg = g.c / groups, og = g.o / groups, k = g.kh * g.kw * cg, plane = g.ho * g.wo;
  const bool pointwise = g.pointwise();
  const int64_t chunk =
      pointwise ? std::max<int64_t>(g.n, 1) : chunk_images(g.n, g.c * g.kh * g.kw * plane, ct);
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - i0);
    const Tensor cols = pointwise ? nhwc_rows(x).narrow(0, i0 * plane, nc * plane)
                                  : nhwc_columns("conv2d", x, i0, nc, groups, g);
    for (int64_t grp = 0; grp < groups; ++grp)
      mm_into("conv2d", out_rows.narrow(0, i0 * plane, nc * plane).narrow(1, grp * og, og),
              cols.narrow(1, grp * k, k), w.narrow(1, grp * og, og));
  }
  return conv_finish(out, bias, g, input.dtype());
}

Tensor conv_transpose2d_nhwc(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                             const std::optional<Tensor>& bias, int64_t groups, ScalarType ct) {
  const Tensor x = nhwc_rows(g.input4.to(ct).contiguous(MemoryFormat::ChannelsLast));
  const Tensor w = ohwi_rows(weight.to(ct).contiguous(MemoryFormat::ChannelsLast));
  Tensor out = empty_nhwc({g.n, g.o, g.ho, g.wo}, ct, input.device());
  const int64_t cg = g.c / groups, og = g.o / groups, k = g.kh * g.kw * og, plane = g.h * g.w;
  const int64_t chunk = chunk_images(g.n, g.o * g.kh * g.kw * plane, ct);
  Kernel& kern = get_kernel(device_of(out), "conv_transpose2d", family_for("conv", {ct}),
                            std::string("col2im_nhwc_") + dtype_tag(ct));
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - i0);
    Tensor cols = empty({nc * plane, groups * k}, ct, input.device());
    for (int64_t grp = 0; grp < groups; ++grp)
      mm_into("conv_transpose2d", cols.narrow(1, grp * k, k),
              x.narrow(0, i0 * plane, nc * plane).narrow(1, grp * cg, cg),
              w.narrow(0, grp * cg, cg));
    const Tensor y = out.narrow(0, i0, nc);
    launch(stream_of(out), kern, y.numel(), y.data_ptr(), cols.data_ptr(), g.o, og, g.h, g.w, g.kh,
           g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.ho, g.wo, y.numel());
  }
  return conv_finish(out, bias, g, input.dtype());
}

Tensor conv2d_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                     int64_t groups) {
  const ConvGeometry g = conv2d_geometry(input, weight, bias, stride, padding, dilation, groups);
  const ScalarType ct = conv_compute_dtype(input.dtype());
  if (channels_last_conv(input, weight)) return conv2d_nhwc(g, input, weight, bias, groups, ct);
  const Tensor x = g.input4.to(ct).contiguous(), w = weight.to(ct).contiguous();
  Tensor out = empty({g.n, g.o, g.ho, g.wo}, ct, input.device());
  const int64_t cg = g.c / groups, og = g.o / groups, k = cg * g.kh * g.kw, plane = g.ho * g.wo;
  const bool pointwise = g.pointwise();
  const int64_t chunk =
      pointwise ? std::max<int64_t>(g.n, 1) : chunk_images(g.n, g.c * g.kh * g.kw * plane, ct);
  const Tensor out3 = out.view({g.n, g.o, plane});
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - i0);
    const Tensor xc = x.narrow(0, i0, nc);
    Tensor cols;  // [nc, c*kh*kw, plane]
    if (pointwise) {
      cols = xc.view({nc, g.c, plane});
    } else {
      cols = empty({nc, g.c * g.kh * g.kw, plane}, ct, input.device());
      launch_window_kernel("conv2d", "im2col", cols, xc, g, g.c, g.h, g.w, g.ho, g.wo);
    }
    for (int64_t grp = 0; grp < groups; ++grp) {
      const Tensor wg = w.narrow(0, grp * og, og).view({1, og, k}).expand({nc, og, k});
      bmm_into("conv2d", out3.narrow(0, i0, nc).narrow(1, grp * og, og), wg,
               cols.narrow(1, grp * k, k));
    }
  }
  return conv_finish(out, bias, g, input.dtype());
}

Tensor conv_transpose2d_kernel(const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                               IntArrayRef dilation) {
  const ConvGeometry g = conv_transpose2d_geometry(input, weight, bias, stride, padding,
                                                   output_padding, groups, dilation);
  const ScalarType ct = conv_compute_dtype(input.dtype());
  if (channels_last_conv(input, weight))
    return conv_transpose2d_nhwc(g, input, weight, bias, groups, ct);
  const Tensor x = g.input4.to(ct).contiguous(), w = weight.to(ct).contiguous();
  Tensor out = empty({g.n, g.o, g.ho, g.wo}, ct, input.device());
  const int64_t cg = g.c / groups, og = g.o / groups, k = og * g.kh * g.kw, plane = g.h * g.w;
  const int64_t chunk = chunk_images(g.n, g.o * g.kh * g.kw * plane, ct);
  const Tensor x3 = x.view({g.n, g.c, plane});
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - i0);
    // cols [nc, o*kh*kw, h*w]: per group, W_g^T [og*kh*kw, cg] @ x_g [cg, h*w].
    Tensor cols = empty({nc, g.o * g.kh * g.kw, plane}, ct, input.device());
    for (int64_t grp = 0; grp < groups; ++grp) {
      const Tensor wt =
          w.narrow(0, grp * cg, cg).view({cg, k}).t().unsqueeze(0).expand({nc, k, cg});
      bmm_into("conv_transpose2d", cols.narrow(1, grp * k, k), wt,
               x3.narrow(0, i0, nc).narrow(1, grp * cg, cg));
    }
    launch_window_kernel("conv_transpose2d", "col2im", out.narrow(0, i0, nc), cols, g, g.o, g.h,
                         g.w, g.ho, g.wo);
  }
  return conv_finish(out, bias, g, input.dtype());
}

// Whether conv2d of g (4-d) with a weight of `w` sizes gives x's shape: then a transposed
// convolution's weight gradient is that conv2d's (an output_padding of a stride or more makes x
// a row or column larger, which the convolution path takes).
bool swapped_roles_fit(const Tensor& g, const Tensor& x, IntArrayRef w, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (g.dim() != 4 || x.dim() != 4 || w.size() != 4 || stride.size() != 2 || padding.size() != 2 ||
      dilation.size() != 2 || groups <= 0 || g.size(0) != x.size(0) || x.size(1) != w[0] ||
      w[0] % groups != 0 || g.size(1) != w[1] * groups || g.dtype() != x.dtype())
    return false;
  for (int i = 0; i < 2; ++i) {
    const int64_t span = g.size(2 + i) + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1;
    if (span < 0 || stride[i] <= 0 || span / stride[i] + 1 != x.size(2 + i)) return false;
  }
  return true;
}

// conv2d's weight gradient: for channels-last activations, per group grad^T @ cols over chunks
// of images (Note [Channels-last XPU convolution]); otherwise, and for conv_transpose2d's, a
// convolution over the batch on the kernels above. conv_transpose2d's, for channels-last
// activations, is the channels-last conv2d one with the roles of the activations swapped.
Tensor conv2d_backward_weight_kernel(const Tensor& grad_output, const Tensor& input,
                                     IntArrayRef weight_size, IntArrayRef stride,
                                     IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                                     bool transposed) {
  const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                  grad_output.suggest_memory_format() == MemoryFormat::ChannelsLast;
  if (transposed && cl &&
      swapped_roles_fit(grad_output, input, weight_size, stride, padding, dilation, groups)) {
    // conv_transpose2d(x, w)'s weight gradient is conv2d's for the convolution g -> x that it
    // is the adjoint of: the same weight shape, x in the gradient's place.
    return conv2d_backward_weight_kernel(input, grad_output, weight_size, stride, padding, dilation,
                                         groups, false);
  }
  if (transposed || !cl || weight_size.size() != 4 || input.dtype() != grad_output.dtype())
    return conv_weight_grad_by_convolution(grad_output, input, weight_size, stride, padding,
                                           dilation, groups, transposed);
  const ScalarType ct = conv_compute_dtype(input.dtype());
  Tensor grad_weight = empty_nhwc(weight_size, ct, input.device());
  const ConvGeometry g =
      conv2d_geometry(input, grad_weight, std::nullopt, stride, padding, dilation, groups);
  XTEN_CHECK(grad_output.sizes() == IntArrayRef({g.n, g.o, g.ho, g.wo}), ValueError,
             "conv2d_backward_weight", "grad_output must have the output's shape {}, but got {}",
             IntArrayRef({g.n, g.o, g.ho, g.wo}), grad_output.sizes());
  if (g.n == 0) return grad_weight.zero_().to(input.dtype());  // an empty batch's sum
  const Tensor x = g.input4.to(ct).contiguous(MemoryFormat::ChannelsLast);
  const Tensor gy = nhwc_rows(grad_output.to(ct).contiguous(MemoryFormat::ChannelsLast));
  Tensor dw = ohwi_rows(grad_weight);
  const int64_t cg = g.c / groups, og = g.o / groups, k = g.kh * g.kw * cg, plane = g.ho * g.wo;
  const bool pointwise = g.pointwise();
  const int64_t chunk =
      pointwise ? std::max<int64_t>(g.n, 1) : chunk_images(g.n, g.c * g.kh * g.kw * plane, ct);
  // One chunk writes the gradient; more add each chunk's product to it.
  const Tensor part = chunk < g.n ? empty(dw.sizes(), ct, input.device()) : dw;
  for (int64_t i0 = 0; i0 < g.n; i0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - i0);
    const Tensor cols = pointwise ? nhwc_rows(x).narrow(0, i0 * plane, nc * plane)
                                  : nhwc_columns("conv2d_backward_weight", x, i0, nc, groups, g);
    const Tensor rows = gy.narrow(0, i0 * plane, nc * plane);
    for (int64_t grp = 0; grp < groups; ++grp)
      mm_into("conv2d_backward_weight", (i0 == 0 ? dw : part).narrow(0, grp * og, og),
              rows.narrow(1, grp * og, og).t(), cols.narrow(1, grp * k, k));
    if (i0 > 0) dw.add_(part);
  }
  return grad_weight.to(input.dtype());
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("conv2d", conv2d_kernel);
  m.impl("conv_transpose2d", conv_transpose2d_kernel);
  m.impl("conv2d_backward_weight", conv2d_backward_weight_kernel);
}

}  // namespace xten::xpu
