#include <xten/autograd/gradcheck.h>

#include <cmath>

#include <xten/autograd/autograd.h>
#include <xten/dispatch/ops.h>

namespace xten::autograd {
namespace {

// The address of element `flat` (row-major over the sizes) of a strided float64 CPU tensor.
double* element(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    offset += (flat % t.size(d)) * t.stride(d);
    flat /= t.size(d);
  }
  return static_cast<double*>(t.data_ptr()) + offset;
}

Tensor flat_output(const Tensor& out) {
  return out.reshape({-1});
}

}  // namespace

bool gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& o) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    XTEN_CHECK(t.dtype() == kDouble && t.is_cpu(), TypeError, "gradcheck",
               "input {} must be a float64 CPU tensor, but is {} on {}", i, to_string(t.dtype()),
               t.device().str());
    checked.push_back(i);
  }
  XTEN_CHECK(!checked.empty(), ValueError, "gradcheck", "no input requires grad");
  const Tensor out0 = fn(inputs);
  XTEN_CHECK(out0.requires_grad(), ValueError, "gradcheck",
             "the function's output does not require grad");
  const int64_t n_out = out0.numel();

  // Numeric Jacobian, column by column (one input element at a time).
  std::vector<std::vector<double>> numeric;  // [input element][output element]
  for (size_t i : checked) {
    const Tensor data = inputs[i].detach();
    for (int64_t e = 0; e < data.numel(); ++e) {
      double* p = element(data, e);
      const double orig = *p;
      Tensor plus, minus;
      {
        // Grad mode stays as it is: fn may itself differentiate (gradgradcheck).
        *p = orig + o.eps;
        // Copies: an output may be a view of the input being perturbed.
        plus = flat_output(fn(inputs)).to(kDouble).clone();
        *p = orig - o.eps;
        minus = flat_output(fn(inputs)).to(kDouble).clone();
        *p = orig;
      }
      std::vector<double> col(static_cast<size_t>(n_out));
      for (int64_t k = 0; k < n_out; ++k)
        col[k] = (plus.data_ptr<double>()[k] - minus.data_ptr<double>()[k]) / (2 * o.eps);
      numeric.push_back(std::move(col));
    }
  }
  // Analytic Jacobian, row by row (one backward per output element).
  std::vector<Tensor> wrt;
  for (size_t i : checked) wrt.push_back(inputs[i]);
  const Tensor out = flat_output(fn(inputs));
  for (int64_t k = 0; k < n_out; ++k) {
    Tensor v = zeros({n_out}, out.dtype(), out.device());
    v.select(0, k).fill_(1);
    std::vector<Tensor> g = grad({out}, wrt, {v}, /*retain_graph=*/true, false,
                                 /*allow_unused=*/true);
    size_t col = 0;
    for (size_t j = 0; j < wrt.size(); ++j) {
      const Tensor gj = g[j].defined() ? g[j].to(kDouble).contiguous() : Tensor();
      for (int64_t e = 0; e < wrt[j].numel(); ++e, ++col) {
        const double a = gj.defined() ? gj.data_ptr<double>()[e] : 0.0;
        const double nval = numeric[col][k];
        const bool ok = std::abs(a - nval) <= o.atol + o.rtol * std::abs(nval) ||
                        (std::isnan(a) && std::isnan(nval));
        if (ok) continue;
        if (!o.raise_exception) return false;
        XTEN_FAIL(ValueError, "gradcheck",
                  "Jacobian mismatch for output {} with respect to input {} (element {}): "
                  "numerical {} vs analytical {} (atol {}, rtol {})",
                  k, checked[j], e, nval, a, o.atol, o.rtol);
      }
    }
  }
  return true;
}

bool gradgradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& o) {
  Tensor out = fn(inputs);
  std::vector<Tensor> all = inputs;
  const size_t n_in = inputs.size();
  Tensor v = randn(out.sizes(), TensorOptions(kDouble)).requires_grad_();
  all.push_back(v);
  std::vector<size_t> diff;
  for (size_t i = 0; i < n_in; ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff.push_back(i);
  auto first_grads = [n_in, diff, &fn](const std::vector<Tensor>& xs) {
    std::vector<Tensor> in(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n_in));
    std::vector<Tensor> wrt;
    for (size_t i : diff) wrt.push_back(in[i]);
    std::vector<Tensor> g = grad({fn(in)}, wrt, {xs.back()}, true, /*create_graph=*/true, true);
    std::vector<Tensor> flat;
    for (size_t j = 0; j < g.size(); ++j)
      flat.push_back(g[j].defined() ? g[j].reshape({-1}) : zeros({wrt[j].numel()}, kDouble, "cpu"));
    return cat(flat, 0);
  };
  return gradcheck(first_grads, all, o);
}

}  // namespace xten::autograd
