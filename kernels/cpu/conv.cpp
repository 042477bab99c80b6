// Convolution on CPU: conv2d by im2col + GEMM (Eigen), and conv_transpose2d by GEMM +
// col2im. conv1d and the padding strings are front ends over these
// (kernels/composite/conv.cpp). Half and BFloat16 compute in float.
//
// Note [Convolution work split]
// Each (image, group) pair is one unit: its im2col buffer and one GEMM. With several units,
// threads take units and Eigen runs single-threaded inside each; with one unit (batch 1,
// groups 1), Eigen threads the GEMM itself. (Measured: running 8 units one after another
// with Eigen threading each GEMM on 16 cores halved the GFLOP/s, bench/README.md.)
#include <Eigen/Core>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten::cpu {
namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Geometry {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // output channels, kernel
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t ho, wo;  // output spatial size
};

void check_pair(const char* op, const char* what, IntArrayRef v, int64_t min) {
  XTEN_CHECK(v.size() == 2, ValueError, op, "{} must have 2 values, but got {}", what, v);
  XTEN_CHECK(v[0] >= min && v[1] >= min, ValueError, op, "{} must be >= {}, but got {}", what, min,
             v);
}

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

// Common argument checks; returns the input as 4-D (a 3-D input is one unbatched image).
Tensor check_conv_args(const char* op, const Tensor& input, const Tensor& weight,
                       const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, int64_t groups) {
  XTEN_CHECK(input.dim() == 3 || input.dim() == 4, ValueError, op,
             "expected a 3-D (unbatched) or 4-D (batched) input, but got {}-D with shape {}",
             input.dim(), input.sizes());
  XTEN_CHECK(weight.dim() == 4, ValueError, op, "expected a 4-D weight, but got {}-D with shape {}",
             weight.dim(), weight.sizes());
  XTEN_CHECK(input.dtype() == weight.dtype(), TypeError, op,
             "input ({}) and weight ({}) must have the same dtype", to_string(input.dtype()),
             to_string(weight.dtype()));
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, op,
             "not implemented for dtype {}", to_string(input.dtype()));
  XTEN_CHECK(groups > 0, ValueError, op, "groups must be positive, but got {}", groups);
  check_pair(op, "stride", stride, 1);
  check_pair(op, "padding", padding, 0);
  check_pair(op, "dilation", dilation, 1);
  if (bias)
    XTEN_CHECK(bias->dim() == 1, ValueError, op, "bias must be 1-D, but got shape {}",
               bias->sizes());
  check_same_device(op, {&input, &weight, bias ? &*bias : nullptr});
  return input.dim() == 3 ? input.unsqueeze(0) : input;
}

ScalarType compute_dtype(ScalarType t) {
  return t == kHalf || t == kBFloat16 ? kFloat : t;
}

Tensor conv2d_kernel(const Tensor& input_, const Tensor& weight_, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                     int64_t groups) {
  const Tensor in4 =
      check_conv_args("conv2d", input_, weight_, bias, stride, padding, dilation, groups);
  Geometry g{in4.size(0),
             in4.size(1),
             in4.size(2),
             in4.size(3),
             weight_.size(0),
             weight_.size(2),
             weight_.size(3),
             stride[0],
             stride[1],
             padding[0],
             padding[1],
             dilation[0],
             dilation[1],
             groups,
             0,
             0};
  XTEN_CHECK(g.c % groups == 0 && g.o % groups == 0, ValueError, "conv2d",
             "input channels ({}) and output channels ({}) must both be divisible by groups ({})",
             g.c, g.o, groups);
  XTEN_CHECK(
      weight_.size(1) * groups == g.c, ValueError, "conv2d",
      "weight of shape {} expects {} input channels (groups={}), but the input has {} (shape {})",
      weight_.sizes(), weight_.size(1) * groups, groups, g.c, input_.sizes());
  if (bias)
    XTEN_CHECK(bias->size(0) == g.o, ValueError, "conv2d",
               "bias has {} values, but there are {} output channels", bias->size(0), g.o);
  g.ho = (g.h + 2 * g.ph - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  XTEN_CHECK(g.h + 2 * g.ph >= g.dh * (g.kh - 1) + 1 && g.w + 2 * g.pw >= g.dw * (g.kw - 1) + 1,
             ValueError, "conv2d",
             "the padded input ({}x{}) is smaller than the dilated kernel ({}x{})", g.h + 2 * g.ph,
             g.w + 2 * g.pw, g.dh * (g.kh - 1) + 1, g.dw * (g.kw - 1) + 1);
  const ScalarType ct = compute_dtype(input_.dtype());
  const Tensor x = in4.to(ct).contiguous(), w = weight_.to(ct).contiguous();
  Tensor out = empty_tensor({g.n, g.o, g.ho, g.wo}, ct, input_.device());
  const int64_t cg = g.c / groups, og = g.o / groups, k = cg * g.kh * g.kw, plane = g.ho * g.wo;
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
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
  if (bias) out = out + bias->to(ct).view({1, g.o, 1, 1});
  if (input_.dim() == 3) out = out.squeeze(0);
  return out.to(input_.dtype());
}

Tensor conv_transpose2d_kernel(const Tensor& input_, const Tensor& weight_,
                               const std::optional<Tensor>& bias, IntArrayRef stride,
                               IntArrayRef padding, IntArrayRef output_padding, int64_t groups,
                               IntArrayRef dilation) {
  const Tensor in4 =
      check_conv_args("conv_transpose2d", input_, weight_, bias, stride, padding, dilation, groups);
  check_pair("conv_transpose2d", "output_padding", output_padding, 0);
  XTEN_CHECK(output_padding[0] < std::max(stride[0], dilation[0]) &&
                 output_padding[1] < std::max(stride[1], dilation[1]),
             ValueError, "conv_transpose2d",
             "output_padding {} must be smaller than either stride {} or dilation {}",
             output_padding, stride, dilation);
  const int64_t cin = in4.size(1);
  XTEN_CHECK(weight_.size(0) == cin, ValueError, "conv_transpose2d",
             "weight of shape {} expects {} input channels, but the input has {} (shape {})",
             weight_.sizes(), weight_.size(0), cin, input_.sizes());
  XTEN_CHECK(cin % groups == 0, ValueError, "conv_transpose2d",
             "input channels ({}) must be divisible by groups ({})", cin, groups);
  Geometry g{in4.size(0),
             cin,
             in4.size(2),
             in4.size(3),
             weight_.size(1) * groups,
             weight_.size(2),
             weight_.size(3),
             stride[0],
             stride[1],
             padding[0],
             padding[1],
             dilation[0],
             dilation[1],
             groups,
             0,
             0};
  g.ho = (g.h - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + output_padding[0] + 1;
  g.wo = (g.w - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + output_padding[1] + 1;
  XTEN_CHECK(g.ho > 0 && g.wo > 0, ValueError, "conv_transpose2d",
             "the output would be {}x{}: padding {} is too large", g.ho, g.wo, padding);
  if (bias)
    XTEN_CHECK(bias->size(0) == g.o, ValueError, "conv_transpose2d",
               "bias has {} values, but there are {} output channels", bias->size(0), g.o);
  const ScalarType ct = compute_dtype(input_.dtype());
  const Tensor x = in4.to(ct).contiguous(), w = weight_.to(ct).contiguous();
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
  if (bias) out = out + bias->to(ct).view({1, g.o, 1, 1});
  if (input_.dim() == 3) out = out.squeeze(0);
  return out.to(input_.dtype());
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("conv2d", conv2d_kernel);
  m.impl("conv_transpose2d", conv_transpose2d_kernel);
}

}  // namespace xten::cpu
