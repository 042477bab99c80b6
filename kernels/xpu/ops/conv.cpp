// XPU conv2d (im2col + linalg's tiled bmm) and conv_transpose2d (bmm + col2im), from conv.cl.
// Shapes and checks are the CPU's (kernels/common/window.h). Half and BFloat16 compute in
// float, as on the CPU. Images go through in chunks whose column buffer stays under
// kColumnBytes, so memory stays bounded for large batches.
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

Tensor conv2d_kernel(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                     int64_t groups) {
  const ConvGeometry g = conv2d_geometry(input, weight, bias, stride, padding, dilation, groups);
  const ScalarType ct = conv_compute_dtype(input.dtype());
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
  // Computed in NCHW; handed back in the layout PyTorch gives (Note [Channels-last convolution]).
  const Tensor r = conv_finish(out, bias, g, input.dtype());
  return channels_last_conv(input, weight) ? r.contiguous(MemoryFormat::ChannelsLast) : r;
}

Tensor conv_transpose2d_kernel(const Tensor& input, const Tensor& weight,
                               const std::optional<Tensor>& bias, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                               IntArrayRef dilation) {
  const ConvGeometry g = conv_transpose2d_geometry(input, weight, bias, stride, padding,
                                                   output_padding, groups, dilation);
  const ScalarType ct = conv_compute_dtype(input.dtype());
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
  // Computed in NCHW; handed back in the layout PyTorch gives (Note [Channels-last convolution]).
  const Tensor r = conv_finish(out, bias, g, input.dtype());
  return channels_last_conv(input, weight) ? r.contiguous(MemoryFormat::ChannelsLast) : r;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("conv2d", conv2d_kernel);
  m.impl("conv_transpose2d", conv_transpose2d_kernel);
  // The weight gradient: a convolution over the batch on the XPU kernels above.
  m.impl("conv2d_backward_weight", conv_weight_grad_by_convolution);
}

}  // namespace xten::xpu
