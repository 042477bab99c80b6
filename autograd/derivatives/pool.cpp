// Derivatives of pooling (kernels/cpu/pool.cpp) over the last two dims of a 3-D or 4-D input:
// max pooling sends each gradient to the element its index names; average pooling is linear, so
// its backward is a transposed convolution with a window of ones, each cell divided by its own
// divisor (the kernel's rule, computed here on the host).
#include <cmath>

#include <xten/autograd/derivatives/common.h>
#include <xten/dispatch/op_handles.h>
#include <xten/kernels/common/window.h>

namespace xten::autograd {
namespace {

// The input's gradient from the output's and the per-plane flat indices (y * W + x).
Tensor max_pool_grad(const Tensor& g, const Tensor& indices, IntArrayRef input_sizes) {
  const int64_t n = static_cast<int64_t>(input_sizes.size());
  const int64_t hw = input_sizes[n - 2] * input_sizes[n - 1];
  return zeros({g.numel() / std::max<int64_t>(g.size(-1) * g.size(-2), 1), hw}, g.dtype(),
               g.device())
      .scatter_add(1, indices.reshape({-1, g.size(-1) * g.size(-2)}),
                   g.reshape({-1, g.size(-1) * g.size(-2)}))
      .view(input_sizes);
}

// The gradient of an average over windows of `kernel` with `stride` and `padding`: g divided by
// each cell's divisor, spread back over its window.
Tensor window_sum_grad(const Tensor& g_div, IntArrayRef input_sizes, IntArrayRef kernel,
                       IntArrayRef stride, IntArrayRef padding) {
  const int64_t n = static_cast<int64_t>(input_sizes.size());
  const int64_t h = input_sizes[n - 2], w = input_sizes[n - 1];
  const int64_t ho = g_div.size(-2), wo = g_div.size(-1);
  if (kernel[0] == stride[0] && kernel[1] == stride[1] && padding[0] == 0 && padding[1] == 0) {
    // Windows that tile the input (2x2 stride 2, ...): every input element is in at most one
    // window, so its gradient is that window's value, repeated over the window by one copy.
    // The transposed convolution below took 5x libtorch's time on this case (one channel per
    // plane); ceil_mode's windows past the input are cut, rows and columns no window reads are
    // zero, as there.
    const int64_t kh = kernel[0], kw = kernel[1];
    const Tensor tiled =
        g_div.reshape({-1, ho, 1, wo, 1})
            .expand({g_div.numel() / std::max<int64_t>(ho * wo, 1), ho, kh, wo, kw})
            .reshape({-1, ho * kh, wo * kw});
    return pad(tiled, {0, w - wo * kw, 0, h - ho * kh}).reshape(input_sizes);
  }
  const Tensor planes = g_div.reshape({-1, 1, ho, wo});
  const Tensor ones_window = ones({1, 1, kernel[0], kernel[1]}, g_div.dtype(), g_div.device());
  int64_t out_pad[2], full[2];
  const int64_t in[2] = {h, w}, out[2] = {ho, wo};
  for (int i = 0; i < 2; ++i) {
    full[i] = (out[i] - 1) * stride[i] - 2 * padding[i] + kernel[i];
    out_pad[i] = std::max<int64_t>(0, std::min(in[i] - full[i], stride[i] - 1));
  }
  Tensor r =
      ops::conv_transpose2d::handle().call(planes, ones_window, std::nullopt, stride, padding,
                                           IntArrayRef(out_pad, 2), 1, IntArrayRef({1, 1}));
  // ceil_mode windows may reach past the input: cut; a short result is padded with zeros.
  if (r.size(2) > h) r = r.narrow(2, 0, h);
  if (r.size(3) > w) r = r.narrow(3, 0, w);
  if (r.size(2) < h || r.size(3) < w) r = pad(r, {0, w - r.size(3), 0, h - r.size(2)});
  return r.reshape(input_sizes);
}

// (out, in): row o averages the inputs of adaptive window o.
Tensor adaptive_matrix(int64_t out, int64_t in, const Tensor& like) {
  std::vector<double> a(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t s = adaptive_start(o, in, out), e = adaptive_end(o, in, out);
    for (int64_t i = s; i < e; ++i) a[o * in + i] = 1.0 / static_cast<double>(e - s);
  }
  return tensor(a, IntArrayRef({out, in}), TensorOptions(like.dtype())).to(like.device());
}

// (out, in): row o holds the bilinear weights of output o (Note [Bilinear taps]), computed in
// the forward kernel's opmath type.
template <class M>
std::vector<double> bilinear_weights(int64_t out, int64_t in, bool align_corners) {
  std::vector<double> a(static_cast<size_t>(out * in), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    const LinearTap<M> t = linear_tap<M>(o, in, out, align_corners);
    a[o * in + t.i0] += 1.0 - static_cast<double>(t.l);
    a[o * in + t.i1] += static_cast<double>(t.l);
  }
  return a;
}

Tensor bilinear_matrix(int64_t out, int64_t in, bool align_corners, const Tensor& like) {
  const std::vector<double> a = like.dtype() == kDouble
                                    ? bilinear_weights<double>(out, in, align_corners)
                                    : bilinear_weights<float>(out, in, align_corners);
  return tensor(a, IntArrayRef({out, in}), TensorOptions(like.dtype())).to(like.device());
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("max_pool2d_with_indices",
        [](const GradContext& c) -> variable_list {
          return {max_pool_grad(c.grad(0), c.result(1), c.input_sizes(0))};
        })
      .saves_result()
      .saves_only({});
  d.def("adaptive_max_pool2d",
        [](const GradContext& c) -> variable_list {
          return {max_pool_grad(c.grad(0), c.result(1), c.input_sizes(0))};
        })
      .saves_result()
      .saves_only({});
  // avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
  d.def("avg_pool2d", [](const GradContext& c) -> variable_list {
     const IntArrayRef xs = c.input_sizes(0);
     const Tensor& g = c.grad();
     // The forward's reading of the lists (one value for both dims, an empty stride or padding
     // for the default), from the same function.
     Planes p;
     p.h = xs[xs.size() - 2];
     p.w = xs[xs.size() - 1];
     const Window win = window_args("avg_pool2d", p, c.arg<IntArrayRef>(1), c.arg<IntArrayRef>(2),
                                    c.arg<IntArrayRef>(3), {}, c.arg<bool>(4));
     const int64_t kernel[2] = {win.kh, win.kw}, stride[2] = {win.sh, win.sw},
                   padding[2] = {win.ph, win.pw};
     const bool include_pad = c.arg<bool>(5);
     const auto override_div = c.arg<std::optional<int64_t>>(6);
     const int64_t h = p.h, w = p.w, ho = g.size(-2), wo = g.size(-1);
     std::vector<double> inv(static_cast<size_t>(ho * wo));
     for (int64_t oy = 0; oy < ho; ++oy)
       for (int64_t ox = 0; ox < wo; ++ox) {
         int64_t y0 = oy * stride[0] - padding[0], x0 = ox * stride[1] - padding[1];
         int64_t y1 = std::min(y0 + kernel[0], h + padding[0]);
         int64_t x1 = std::min(x0 + kernel[1], w + padding[1]);
         const int64_t padded = (y1 - y0) * (x1 - x0);
         y0 = std::max<int64_t>(y0, 0), x0 = std::max<int64_t>(x0, 0);
         y1 = std::min(y1, h), x1 = std::min(x1, w);
         const int64_t div = override_div  ? *override_div
                             : include_pad ? padded
                                           : (y1 - y0) * (x1 - x0);
         inv[oy * wo + ox] = div > 0 ? 1.0 / static_cast<double>(div) : 0.0;
       }
     const Tensor scale =
         tensor(inv, IntArrayRef({ho, wo}), TensorOptions(g.dtype())).to(g.device());
     return {window_sum_grad(g * scale, xs, IntArrayRef(kernel, 2), IntArrayRef(stride, 2),
                             IntArrayRef(padding, 2))};
   }).saves_only({});
  // Separable: out = A_h x A_w^T per plane, so dx = A_h^T g A_w.
  d.def("adaptive_avg_pool2d", [](const GradContext& c) -> variable_list {
     const IntArrayRef xs = c.input_sizes(0);
     const Tensor& g = c.grad();
     const Tensor ah = adaptive_matrix(g.size(-2), xs[xs.size() - 2], g);
     const Tensor aw = adaptive_matrix(g.size(-1), xs[xs.size() - 1], g);
     return {matmul(matmul(ah.t(), g), aw)};
   }).saves_only({});
  // Linear and separable like adaptive_avg_pool2d: out = B_h x B_w^T, dx = B_h^T g B_w.
  d.def("upsample_bilinear2d", [](const GradContext& c) -> variable_list {
     const IntArrayRef xs = c.input_sizes(0);
     const Tensor& g = c.grad();
     const bool align_corners = c.arg<bool>(2);
     const Tensor bh = bilinear_matrix(g.size(-2), xs[2], align_corners, g);
     const Tensor bw = bilinear_matrix(g.size(-1), xs[3], align_corners, g);
     return {matmul(matmul(bh.t(), g), bw)};
   }).saves_only({});
}

}  // namespace xten::autograd
