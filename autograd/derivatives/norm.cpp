// Derivatives of batch_norm and layer_norm (composites in kernels/composite/norm.cpp), written in
// closed form: a few reductions over the saved input instead of the decomposition's graph of
// mean, var, rsqrt and their broadcasts (fewer passes and nothing saved but the input). The tests
// compare them with the decomposition's gradient (test_autograd.cpp, NormFormulas). group_norm
// differentiates through its decomposition.
#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {
namespace {

ScalarType stats_dtype(const Tensor& t) {
  return t.dtype() == kHalf || t.dtype() == kBFloat16 ? kFloat : t.dtype();
}

// The input gradient of y = xhat * w + b with xhat normalized over `dims`:
// rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w.
Tensor normalized_input_grad(const Tensor& gw, const Tensor& xhat, const Tensor& rstd,
                             IntArrayRef dims) {
  return rstd * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
  d.def("batch_norm", [](const GradContext& c) -> variable_list {
    const Tensor input = c.input(0);
    const ScalarType st = stats_dtype(input);
    const Tensor x = input.to(st), g = c.grad().to(st);
    const int64_t ch = x.size(1);
    DimVector shape(static_cast<size_t>(x.dim()), 1);
    shape[1] = ch;
    std::vector<int64_t> dims{0};
    for (int64_t k = 2; k < x.dim(); ++k) dims.push_back(k);
    const bool training = c.arg<bool>(5);
    const double eps = c.arg<double>(7);
    const Tensor mean = training ? x.mean(dims, true) : c.input(3).to(st).view(shape);
    const Tensor var = training ? x.var(dims, 0, true) : c.input(4).to(st).view(shape);
    const Tensor rstd = rsqrt(var + eps), xhat = (x - mean) * rstd;
    const Tensor gw = c.has_input(1) ? g * c.input(1).to(st).view(shape) : g;
    variable_list r(5);
    if (c.needs_grad(0)) r[0] = training ? normalized_input_grad(gw, xhat, rstd, dims) : gw * rstd;
    if (c.needs_grad(1)) r[1] = (g * xhat).sum(dims);
    if (c.needs_grad(2)) r[2] = g.sum(dims);
    return r;
  });
  // layer_norm(input, normalized_shape, weight, bias, eps)
  d.def("layer_norm", [](const GradContext& c) -> variable_list {
    const Tensor input = c.input(0);
    const ScalarType st = stats_dtype(input);
    const Tensor x = input.to(st), g = c.grad().to(st);
    const int64_t k = static_cast<int64_t>(c.arg<IntArrayRef>(1).size());
    std::vector<int64_t> dims, lead;
    for (int64_t i = 0; i < x.dim(); ++i) (i < x.dim() - k ? lead : dims).push_back(i);
    const Tensor rstd = rsqrt(x.var(dims, 0, true) + c.arg<double>(4));
    const Tensor xhat = (x - x.mean(dims, true)) * rstd;
    const Tensor gw = c.has_input(2) ? g * c.input(2).to(st) : g;
    variable_list r(3);
    if (c.needs_grad(0)) r[0] = normalized_input_grad(gw, xhat, rstd, dims);
    if (c.needs_grad(1)) r[1] = lead.empty() ? g * xhat : (g * xhat).sum(lead);
    if (c.needs_grad(2)) r[2] = lead.empty() ? g : g.sum(lead);
    return r;
  });
}

}  // namespace xten::autograd
