// Gradient clipping (nn/utils.h): per-tensor norms as ops on each gradient's device, one host
// read of the total (the returned double, as libtorch's), then one in-place multiply per
// gradient where it clips. get_total_norm + clip_grads_with_norm_ do the same with no read: the
// multiply always runs, by a factor computed on the device.
#include <cmath>
#include <limits>

#include <xten/autograd/grad_mode.h>
#include <xten/core/error.h>
#include <xten/dispatch/ops.h>
#include <xten/nn/utils.h>

namespace xten::nn::utils {
namespace {

std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    XTEN_CHECK(p.defined(), ValueError, "clip_grad", "a parameter in the list is undefined");
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  return grads;
}

bool is_16_bit(ScalarType t) {
  return t == kHalf || t == kBFloat16;
}

}  // namespace

namespace {

void check_norm_type(const char* op, double norm_type) {
  XTEN_CHECK((std::isinf(norm_type) && norm_type > 0) || norm_type > 0, ValueError, op,
             "norm_type must be positive or inf, got {}", norm_type);
}

// The total norm of `grads` (not empty) as a 0-d tensor on the first one's device.
Tensor total_norm_of(const std::vector<Tensor>& grads, double norm_type) {
  const bool inf = std::isinf(norm_type);
  // The totals' dtype: double if any gradient is double, else float32.
  ScalarType acc = kFloat;
  for (const Tensor& g : grads)
    if (g.dtype() == kDouble) acc = kDouble;
  const Device first = grads[0].device();
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor& g : grads) {
    const Tensor x = is_16_bit(g.dtype()) ? g.to(kFloat) : g;
    const Tensor n =
        inf ? (x.numel() ? x.abs().amax() : zeros({}, x.options())) : norm(x, norm_type);
    norms.push_back(n.to(first).to(acc));
  }
  const Tensor all = stack(norms);
  return inf ? all.amax() : norm(all, norm_type);
}

[[noreturn]] void nonfinite(const char* op, double norm_type, size_t n, double total) {
  XTEN_FAIL(ValueError, op,
            "the total norm of order {} of {} gradients is {}: nothing to clip it to (pass "
            "error_if_nonfinite = false to leave the gradients as they are)",
            norm_type, n, total);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  check_norm_type("clip_grad_norm_", norm_type);
  XTEN_CHECK(!std::isnan(max_norm), ValueError, "clip_grad_norm_", "max_norm is NaN");
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return 0.0;
  const double total = total_norm_of(grads, norm_type).item<double>();
  if (!std::isfinite(total)) {
    if (error_if_nonfinite) nonfinite("clip_grad_norm_", norm_type, grads.size(), total);
    return total;
  }
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (Tensor g : grads) g.mul_(coef);
  return total;
}

Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type,
                      bool error_if_nonfinite) {
  check_norm_type("get_total_norm", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> defined;
  for (const Tensor& t : tensors)
    if (t.defined()) defined.push_back(t);
  if (defined.empty()) return zeros({});
  Tensor total = total_norm_of(defined, norm_type);
  if (error_if_nonfinite) {
    const double v = total.item<double>();
    if (!std::isfinite(v)) nonfinite("get_total_norm", norm_type, defined.size(), v);
  }
  return total;
}

void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm,
                           const Tensor& total_norm) {
  const char* op = "clip_grads_with_norm_";
  XTEN_CHECK(!std::isnan(max_norm), ValueError, op, "max_norm is NaN");
  XTEN_CHECK(total_norm.defined() && total_norm.numel() == 1, ValueError, op,
             "total_norm must be a one-element tensor, got {}",
             total_norm.defined() ? fmt::format("shape {}", total_norm.sizes()) : "undefined");
  NoGradGuard no_grad;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return;
  const Tensor t = total_norm.reshape({});
  const Tensor coef =
      where(isfinite(t), clamp(max_norm / (t + 1e-6), std::nullopt, 1.0), ones({}, t.options()));
  for (Tensor g : grads) g.mul_(coef.device() == g.device() ? coef : coef.to(g.device()));
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  XTEN_CHECK(clip_value >= 0, ValueError, "clip_grad_value_",
             "clip_value must be a non-negative number, got {}", clip_value);
  NoGradGuard no_grad;
  for (Tensor g : grads_of(parameters)) g.clamp_(-clip_value, clip_value);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) {
  clip_grad_value_(std::vector<Tensor>{parameter}, clip_value);
}

}  // namespace xten::nn::utils
