// Derivatives of the reductions and scans (kernels/cpu/reduce.cpp; logsumexp also has a
// composite, kernels/composite/reduce.cpp).
#include <xten/autograd/derivatives/common.h>
#include <xten/core/meta.h>

namespace xten::autograd {
namespace {

// The gradient of a reduction that picks values (amax, amin, max, min): split evenly among the
// elements equal to the result. PyTorch's two conventions for a NaN result: max() and min() of
// the whole tensor send the gradient to the NaN elements (`nan_takes`), amax and amin compute
// grad / count * mask, so a slice whose result is NaN (no element equals it) gets NaN gradients.
Tensor evenly_to_ties(const GradContext& c, IntArrayRef dims, bool keepdim, bool nan_takes) {
  const Tensor x = c.input(0);
  const Tensor r = expand_reduced(c.result(), x.sizes(), dims, keepdim);
  Tensor mask = (x == r);
  if (nan_takes) mask = mask | (isnan(x) & isnan(r));
  const Tensor count = expand_reduced(mask.sum(dims, true), x.sizes(), dims, true);
  const Tensor g = expand_reduced(c.grad(), x.sizes(), dims, keepdim) / count;
  return nan_takes ? keep_where(mask, g) : g * mask;
}

// The gradient of max.dim/min.dim/sort/topk values: to the elements the indices name.
Tensor to_indices(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes, int64_t dim,
                  bool keepdim) {
  Tensor g = grad, idx = indices;
  if (!keepdim && !input_sizes.empty()) {
    g = g.unsqueeze(dim);
    idx = idx.unsqueeze(dim);
  }
  return zeros(input_sizes, grad.dtype(), grad.device()).scatter(dim, idx, g);
}

// prod over `dims`: each element's gradient is the product of the others, computed with
// exclusive cumulative products from both ends, so that zeros need no division.
Tensor prod_grad(const Tensor& grad, const Tensor& x, IntArrayRef dims_in, bool keepdim) {
  if (x.dim() == 0) return grad;
  const std::vector<int64_t> dims = reduced_dims(dims_in, x.dim());
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::count(dims.begin(), dims.end(), d)) perm.push_back(d);
  const size_t kept = perm.size();
  for (int64_t d : dims) perm.push_back(d);
  Tensor xp = x.permute(perm);
  DimVector kept_sizes;
  for (size_t i = 0; i < kept; ++i) kept_sizes.push_back(xp.size(static_cast<int64_t>(i)));
  DimVector flat(kept_sizes);
  flat.push_back(-1);
  Tensor rows = xp.reshape(flat);  // (..., R)
  const int64_t last = rows.dim() - 1, n = rows.size(last);
  Tensor others;
  if (n == 0) {
    others = rows;
  } else {
    DimVector one(kept_sizes);
    one.push_back(1);
    const Tensor ones_col = ones(one, x.dtype(), x.device());
    const Tensor left = cat({ones_col, cumprod(rows.narrow(last, 0, n - 1), last)}, last);
    const Tensor right = cat(
        {flip(cumprod(flip(rows.narrow(last, 1, n - 1), {last}), last), {last}), ones_col}, last);
    others = left * right;
  }
  Tensor g = expand_reduced(grad, x.sizes(), dims_in, keepdim).permute(perm).reshape(flat);
  Tensor gx = (g * others).reshape(xp.sizes());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return gx.permute(inverse);
}

// cumprod along dim, exact with zeros: before a row's first zero the usual
// reverse_cumsum(g * y) / x; at the first zero the products with that element left out; after it
// zero.
Tensor cumprod_grad(const Tensor& g, const Tensor& x, const Tensor& y, int64_t dim) {
  if (x.dim() == 0) return g;
  const Tensor is_zero = (x == 0);
  const Tensor first_zero = is_zero & (cumsum(is_zero, dim) == 1);
  const Tensor y_without_first_zero = cumprod(where(first_zero, ones_like(x), x), dim);
  const Tensor at_first_zero = reverse_cumsum(g * y_without_first_zero, dim);
  const Tensor elsewhere = reverse_cumsum(g * y, dim) / where(is_zero, ones_like(x), x);
  return where(first_zero, at_first_zero, keep_where(~is_zero, elsewhere));
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("sum.dim_IntList", [](const GradContext& c) -> variable_list {
     return {expand_reduced(c.grad(), c.input_sizes(0), c.arg<IntArrayRef>(1), c.arg<bool>(2))};
   }).saves_only({});
  d.def("mean.dim", [](const GradContext& c) -> variable_list {
     const IntArrayRef sizes = c.input_sizes(0), dims = c.arg<IntArrayRef>(1);
     return {expand_reduced(c.grad(), sizes, dims, c.arg<bool>(2)) /
             static_cast<double>(reduced_count(sizes, dims))};
   }).saves_only({});
  d.def("prod.dim_IntList", [](const GradContext& c) -> variable_list {
    return {prod_grad(c.grad(), c.input(0), c.arg<IntArrayRef>(1), c.arg<bool>(2))};
  });
  // logsumexp(self, dim, keepdim) = r: grad * exp(self - r) (softmax over the reduced dims).
  d.def("logsumexp", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     const IntArrayRef dims = c.arg<IntArrayRef>(1);
     const bool keepdim = c.arg<bool>(2);
     return {expand_reduced(c.grad(), x.sizes(), dims, keepdim) *
             exp(x - expand_reduced(c.result(), x.sizes(), dims, keepdim))};
   }).saves_result();
  d.def("amax", [](const GradContext& c) -> variable_list {
     return {evenly_to_ties(c, c.arg<IntArrayRef>(1), c.arg<bool>(2), false)};
   }).saves_result();
  d.def("amin", [](const GradContext& c) -> variable_list {
     return {evenly_to_ties(c, c.arg<IntArrayRef>(1), c.arg<bool>(2), false)};
   }).saves_result();
  d.def("max", [](const GradContext& c) -> variable_list {
     return {evenly_to_ties(c, {}, false, true)};
   }).saves_result();
  d.def("min", [](const GradContext& c) -> variable_list {
     return {evenly_to_ties(c, {}, false, true)};
   }).saves_result();
  for (const char* op : {"max.dim", "min.dim"})
    d.def(op,
          [](const GradContext& c) -> variable_list {
            const IntArrayRef sizes = c.input_sizes(0);
            const int64_t n = static_cast<int64_t>(sizes.size());
            const int64_t dim = n == 0 ? 0 : wrap_dim("backward", c.arg<int64_t>(1), n);
            return {to_indices(c.grad(0), c.result(1), sizes, dim, c.arg<bool>(2))};
          })
        .saves_result()
        .saves_only({});
  // var = sum((x - mean)^2) / (N - correction).
  d.def("var.correction", [](const GradContext& c) -> variable_list {
    const Tensor x = c.input(0);
    const IntArrayRef dims = c.arg<IntArrayRef>(1);
    const double denom = static_cast<double>(reduced_count(x.sizes(), dims)) - c.arg<double>(2);
    const bool keepdim = c.arg<bool>(3);
    const Tensor centered = x - x.mean(dims, true);
    return {expand_reduced(c.grad(), x.sizes(), dims, keepdim) * centered * (2.0 / denom)};
  });
  d.def("std.correction", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     const IntArrayRef dims = c.arg<IntArrayRef>(1);
     const double denom = static_cast<double>(reduced_count(x.sizes(), dims)) - c.arg<double>(2);
     const bool keepdim = c.arg<bool>(3);
     const Tensor s = expand_reduced(c.result(), x.sizes(), dims, keepdim);
     const Tensor g = expand_reduced(c.grad(), x.sizes(), dims, keepdim);
     return {keep_where(s != 0, g * (x - x.mean(dims, true)) / (s * denom))};
   }).saves_result();
  d.def("norm.ScalarOpt_dim", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     const double p = c.arg<Scalar>(1).to<double>();
     const IntArrayRef dims = c.arg<IntArrayRef>(2);
     const bool keepdim = c.arg<bool>(3);
     const Tensor g = expand_reduced(c.grad(), x.sizes(), dims, keepdim);
     const Tensor r = expand_reduced(c.result(), x.sizes(), dims, keepdim);
     if (p == 0) return {zeros_like(x)};
     if (p == 1) return {g * sign(x)};
     if (std::isinf(p)) {
       const Tensor mask = abs(x) == r;
       const Tensor count = expand_reduced(mask.sum(dims, true), x.sizes(), dims, true);
       return {keep_where(mask, g * sign(x) / count)};
     }
     if (p == 2) return {keep_where(r != 0, g * x / r)};
     return {keep_where(r != 0, g * x * pow(abs(x), p - 2) / pow(r, p - 1))};
   }).saves_result();
  d.def("cumsum", [](const GradContext& c) -> variable_list {
     const int64_t n = static_cast<int64_t>(c.input_sizes(0).size());
     if (n == 0) return {c.grad()};
     return {reverse_cumsum(c.grad(), wrap_dim("backward", c.arg<int64_t>(1), n))};
   }).saves_only({});
  d.def("cumprod", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     if (x.dim() == 0) return {c.grad()};
     const int64_t dim = wrap_dim("backward", c.arg<int64_t>(1), x.dim());
     return {cumprod_grad(c.grad(), x, c.result().to(x.dtype()), dim)};
   }).saves_result();
  d.nondifferentiable({"argmax", "argmin", "all.dims", "any.dims"});
}

}  // namespace xten::autograd
