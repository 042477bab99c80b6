// Convolution on CPU: oneDNN's convolution and deconvolution (kernels/cpu/onednn.cpp) where
// oneDNN is chosen and takes the case (core/cpu_backend.h); otherwise conv2d by im2col + GEMM
// (Eigen), and conv_transpose2d by GEMM + col2im. conv1d and the padding strings are front ends
// over these (kernels/composite/conv.cpp). Half and BFloat16 compute in float.
//
// Note [Convolution work split]
// Each (image, group) pair is one unit: its im2col buffer and one GEMM. With several units,
// threads take units and Eigen runs single-threaded inside each; with one unit (batch 1,
// groups 1), Eigen threads the GEMM itself. (Measured: running 8 units one after another
// with Eigen threading each GEMM on 16 cores halved the GFLOP/s, bench/README.md.)
#include <Eigen/Core>

#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/window.h>
#include <xten/kernels/composite/conv_grad.h>
#include <xten/kernels/cpu/onednn.h>

namespace xten::cpu {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using Geometry = ConvGeometry;

// Runs f(unit) for every (image, group) unit (Note [Convolution work split]).
template <class F>
void for_each_unit(int64_t units, const F& f) {
  Eigen::setNbThreads(get_num_threads());
  if (units == 1) return f(0);
  parallel_for(units, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) f(u);
  });
}

// cols[(c * kh + i) * kw + j][oy * wo + ox] = x[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw] (0
// outside).
template <class T>
void im2col(const T* x, int64_t channels, const Geometry& g, T* cols) {
  const int64_t plane = g.ho * g.wo;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((c * g.kh + i) * g.kw + j) * plane;
        for (int64_t oy = 0; oy < g.ho; ++oy) {
          const int64_t iy = oy * g.sh - g.ph + i * g.dh;
          T* out = row + oy * g.wo;
          if (iy < 0 || iy >= g.h) {
            std::fill_n(out, g.wo, T(0));
            continue;
          }
          const T* in = x + (c * g.h + iy) * g.w;
          for (int64_t ox = 0; ox < g.wo; ++ox) {
            const int64_t ix = ox * g.sw - g.pw + j * g.dw;
            out[ox] = (ix >= 0 && ix < g.w) ? in[ix] : T(0);
          }
        }
      }
}

// The inverse scatter: adds cols (laid out as im2col's, over an h x w input) into y[ho][wo].
template <class T>
void col2im(const T* cols, int64_t channels, const Geometry& g, T* y) {
  // Here (h, w) is the transposed conv's input and (ho, wo) its output.
  const int64_t plane = g.h * g.w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = cols + ((c * g.kh + i) * g.kw + j) * plane;
        for (int64_t iy = 0; iy < g.h; ++iy) {
          const int64_t oy = iy * g.sh - g.ph + i * g.dh;
          if (oy < 0 || oy >= g.ho) continue;
          T* out = y + (c * g.ho + oy) * g.wo;
          for (int64_t ix = 0; ix < g.w; ++ix) {
            const int64_t ox = ix * g.sw - g.pw + j * g.dw;
            if (ox >= 0 && ox < g.wo) out[ox] += row[iy * g.w + ix];
          }
        }
      }
}

// Note [Channels-last convolution] (kernels/common/window.h): oneDNN reads and writes NHWC
// directly; the Eigen path computes NCHW and hands back its result in the layout the rule names.
Tensor in_layout(const Tensor& t, bool channels_last) {
  return channels_last ? t.contiguous(MemoryFormat::ChannelsLast) : t.contiguous();
}

// Runs `run_onednn(x, w, bias, out, nhwc)` on the input's own dtype where oneDNN is chosen: the
// result (bias added, unbatched again), or an undefined tensor where oneDNN declined.
// `weight_layout_kept`: the primitive reads a channels-last weight as it is.
template <class F>
Tensor try_onednn(const Tensor& weight, const std::optional<Tensor>& bias, const Geometry& g,
                  ScalarType dtype, bool nhwc, bool weight_layout_kept, const F& run_onednn) {
  if (cpu_gemm() != CpuGemm::OneDnn) return Tensor();
  const Tensor x = in_layout(g.input4, nhwc);
  const Tensor w = weight_layout_kept && weight.is_contiguous(MemoryFormat::ChannelsLast)
                       ? weight
                       : weight.contiguous();
  const Tensor b = bias && bias->defined() ? bias->to(kFloat).contiguous() : Tensor();
  const int64_t sizes[4] = {g.n, g.o, g.ho, g.wo};
  const MemoryFormat format = nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  Tensor out =
      empty_tensor(IntArrayRef(sizes, 4),
                   strides_for_format("conv2d", IntArrayRef(sizes, 4), format), dtype, x.device());
  if (!run_onednn(x, w, b, out, nhwc)) return Tensor();
  count_cpu_gemm(CpuGemm::OneDnn);
  return g.unbatched ? out.squeeze(0) : out;
}

Tensor conv2d_kernel(const Tensor& input_, const Tensor& weight_, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                     int64_t groups) {
  const Geometry g = conv2d_geometry(input_, weight_, bias, stride, padding, dilation, groups);
  const bool cl = channels_last_conv(input_, weight_);
  Tensor fast = try_onednn(weight_, bias, g, input_.dtype(), cl, true,
                           [&](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& o,
                               bool nhwc) { return onednn::conv2d(x, w, b, g, o, nhwc); });
  if (fast.defined()) return fast;
  count_cpu_gemm(CpuGemm::Eigen);
  const ScalarType ct = conv_compute_dtype(input_.dtype());
  const Tensor x = g.input4.to(ct).contiguous(), w = weight_.to(ct).contiguous();
  Tensor out = empty_tensor({g.n, g.o, g.ho, g.wo}, ct, input_.device());
  const int64_t cg = g.c / groups, og = g.o / groups, k = cg * g.kh * g.kw, plane = g.ho * g.wo;
  const bool pointwise = g.pointwise();
  visit_dtype<dtype_bit(kFloat) | dtype_bit(kDouble)>("conv2d", ct, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = static_cast<const T*>(w.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    for_each_unit(g.n * groups, [&](int64_t u) {
      const int64_t img = u / groups, grp = u % groups;
      const T* xin = xp + (img * g.c + grp * cg) * g.h * g.w;
      std::vector<T> buf;
      const T* cols = xin;
      if (!pointwise) {
        buf.resize(static_cast<size_t>(k * plane));
        im2col(xin, cg, g, buf.data());
        cols = buf.data();
      }
      Eigen::Map<RowMat<T>> y(op + (img * g.o + grp * og) * plane, og, plane);
      y.noalias() = Eigen::Map<const RowMat<T>>(wp + grp * og * k, og, k) *
                    Eigen::Map<const RowMat<T>>(cols, k, plane);
    });
  });
  return in_layout(conv_finish(out, bias, g, input_.dtype()), cl);
}

Tensor conv_transpose2d_kernel(const Tensor& input_, const Tensor& weight_,
                               const std::optional<Tensor>& bias, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                               IntArrayRef dilation) {
  const Geometry g = conv_transpose2d_geometry(input_, weight_, bias, stride, padding,
                                               output_padding, groups, dilation);
  const bool cl = channels_last_conv(input_, weight_);
  Tensor fast = try_onednn(
      weight_, bias, g, input_.dtype(), cl, true,
      [&](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& o, bool nhwc) {
        return onednn::conv_transpose2d(x, w, b, g, output_padding, o, nhwc);
      });
  if (fast.defined()) return fast;
  count_cpu_gemm(CpuGemm::Eigen);
  const int64_t cin = g.c;
  const ScalarType ct = conv_compute_dtype(input_.dtype());
  const Tensor x = g.input4.to(ct).contiguous(), w = weight_.to(ct).contiguous();
  Tensor out = zeros({g.n, g.o, g.ho, g.wo}, ct, input_.device());
  const int64_t cg = cin / groups, og = g.o / groups, k = og * g.kh * g.kw, plane = g.h * g.w;
  visit_dtype<dtype_bit(kFloat) | dtype_bit(kDouble)>("conv_transpose2d", ct, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* wp = static_cast<const T*>(w.data_ptr());
    T* op = static_cast<T*>(out.data_ptr());
    for_each_unit(g.n * groups, [&](int64_t u) {
      const int64_t img = u / groups, grp = u % groups;
      std::vector<T> cols(static_cast<size_t>(k * plane));
      // cols [og*kh*kw, h*w] = W_g^T [og*kh*kw, cg] @ x [cg, h*w]
      Eigen::Map<RowMat<T>>(cols.data(), k, plane).noalias() =
          Eigen::Map<const RowMat<T>>(wp + grp * cg * k, cg, k).transpose() *
          Eigen::Map<const RowMat<T>>(xp + (img * cin + grp * cg) * plane, cg, plane);
      col2im(cols.data(), og, g, op + (img * g.o + grp * og) * g.ho * g.wo);
    });
  });
  return in_layout(conv_finish(out, bias, g, input_.dtype()), cl);
}

// conv2d's weight gradient: oneDNN's backward-weights where it takes the case, else the
// convolution over the batch (kernels/composite/conv.cpp) on the kernels above.
Tensor conv2d_backward_weight_kernel(const Tensor& grad_output, const Tensor& input,
                                     IntArrayRef weight_size, IntArrayRef stride,
                                     IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                                     bool transposed) {
  if (!transposed && cpu_gemm() == CpuGemm::OneDnn && input.dim() == 4 && grad_output.dim() == 4 &&
      weight_size.size() == 4 && input.dtype() == grad_output.dtype()) {
    // Channels-last activations are read as they lie (Note [Channels-last convolution]), and
    // the weight gradient is written channels-last then, as PyTorch's is (a channels-last
    // weight's accumulation then copies nothing).
    const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                    grad_output.suggest_memory_format() == MemoryFormat::ChannelsLast;
    const MemoryFormat layout = cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
    Tensor grad_weight =
        empty_tensor(weight_size, strides_for_format("conv2d_backward_weight", weight_size, layout),
                     input.dtype(), input.device());
    const Geometry g =
        conv2d_geometry(input, grad_weight, std::nullopt, stride, padding, dilation, groups);
    if (grad_output.sizes() == IntArrayRef({g.n, g.o, g.ho, g.wo}) &&
        onednn::conv2d_backward_weight(in_layout(grad_output, cl), in_layout(g.input4, cl), g,
                                       grad_weight, cl)) {
      count_cpu_gemm(CpuGemm::OneDnn);
      return grad_weight;
    }
  }
  return conv_weight_grad_by_convolution(grad_output, input, weight_size, stride, padding, dilation,
                                         groups, transposed);
}

}  // namespace

XTEN_CPU_KERNELS(conv, m) {
  m.impl("conv2d_backward_weight", conv2d_backward_weight_kernel);
  m.impl("conv2d", conv2d_kernel);
  m.impl("conv_transpose2d", conv_transpose2d_kernel);
}

}  // namespace xten::cpu
