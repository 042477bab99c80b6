// Losses written with other ops (valid on every backend). `reduction` is "none", "mean" or
// "sum" (kl_div also "batchmean").
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/composite/value_checks.h>

namespace xten {
namespace {

Tensor reduce(const char* op, const Tensor& loss, const std::string& reduction) {
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  XTEN_CHECK(reduction == "mean", ValueError, op,
             "reduction must be 'none', 'mean' or 'sum', but got '{}'", reduction);
  return loss.mean();
}

Tensor mse_loss_kernel(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_floating_loss("mse_loss", input, target);
  const Tensor d = input - target;
  return reduce("mse_loss", d * d, reduction);
}

// The closed form (the CPU has a one-pass kernel, kernels/cpu/loss.cpp).
Tensor mse_loss_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                const Tensor& target, const std::string& reduction) {
  const double norm = mse_loss_backward_norm(grad_output, input, target, reduction);
  return (input - target) * norm * grad_output;
}

Tensor l1_loss_kernel(const Tensor& input, const Tensor& target, const std::string& reduction) {
  check_floating_loss("l1_loss", input, target);
  return reduce("l1_loss", (input - target).abs(), reduction);
}

Tensor smooth_l1_loss_kernel(const Tensor& input, const Tensor& target,
                             const std::string& reduction, double beta) {
  check_floating_loss("smooth_l1_loss", input, target);
  XTEN_CHECK(beta >= 0, ValueError, "smooth_l1_loss", "beta must be non-negative, but got {}",
             beta);
  const Tensor d = (input - target).abs();
  if (beta == 0) return reduce("smooth_l1_loss", d, reduction);
  return reduce("smooth_l1_loss", where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction);
}

Tensor huber_loss_kernel(const Tensor& input, const Tensor& target, const std::string& reduction,
                         double delta) {
  check_floating_loss("huber_loss", input, target);
  XTEN_CHECK(delta > 0, ValueError, "huber_loss", "delta must be positive, but got {}", delta);
  const Tensor d = (input - target).abs();
  return reduce("huber_loss", where(d <= delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction);
}

Tensor binary_cross_entropy_kernel(const Tensor& input, const Tensor& target,
                                   const std::optional<Tensor>& weight,
                                   const std::string& reduction) {
  check_floating_loss("binary_cross_entropy", input, target);
  XTEN_CHECK(input.sizes() == target.sizes(), ValueError, "binary_cross_entropy",
             "target shape {} must equal input shape {}", target.sizes(), input.sizes());
  check_values_in_range(input, 0, 1, "binary_cross_entropy",
                        "all elements of input must be in [0, 1] (probabilities)", false);
  // log is clamped at -100, as PyTorch does, so that 0 * log(0) stays finite.
  const Tensor l = -(target * clamp(log(input), -100) + (1 - target) * clamp(log(1 - input), -100));
  return reduce("binary_cross_entropy", weight && weight->defined() ? l * *weight : l, reduction);
}

Tensor binary_cross_entropy_with_logits_kernel(const Tensor& input, const Tensor& target,
                                               const std::optional<Tensor>& weight,
                                               const std::optional<Tensor>& pos_weight,
                                               const std::string& reduction) {
  check_floating_loss("binary_cross_entropy_with_logits", input, target);
  XTEN_CHECK(input.sizes() == target.sizes(), ValueError, "binary_cross_entropy_with_logits",
             "target shape {} must equal input shape {}", target.sizes(), input.sizes());
  // -log(sigmoid(x)) = softplus(-x), which is linear past its threshold (no overflow) and whose
  // derivative is smooth at 0: the form log(1 + exp(-|x|)) + max(-x, 0) differentiated as
  // ops gave -1 instead of -0.5 at x = 0 (abs' and clamp's conventions at their kinks).
  const Tensor log_sig_neg = softplus(-input, 1, 20);
  Tensor l;
  if (pos_weight && pos_weight->defined())
    l = (1 - target) * input + (1 + (*pos_weight - 1) * target) * log_sig_neg;
  else
    l = (1 - target) * input + log_sig_neg;
  return reduce("binary_cross_entropy_with_logits", weight && weight->defined() ? l * *weight : l,
                reduction);
}

Tensor kl_div_kernel(const Tensor& input, const Tensor& target, const std::string& reduction,
                     bool log_target) {
  check_floating_loss("kl_div", input, target);
  const Tensor l =
      log_target ? exp(target) * (target - input)
                 : where(target > 0, target * (log(target) - input), zeros({}, input.options()));
  if (reduction == "batchmean") return l.sum() / (input.dim() ? input.size(0) : 1);
  return reduce("kl_div", l, reduction);
}

// [N, C, d1, ...] (or [C]) -> [M, C] with the class dim last.
Tensor classes_last(const Tensor& input) {
  if (input.dim() == 1) return input.unsqueeze(0);
  if (input.dim() == 2) return input;
  DimVector order{0};
  for (int64_t d = 2; d < input.dim(); ++d) order.push_back(d);
  order.push_back(1);
  return input.permute(order).reshape({-1, input.size(1)});
}

// Per-element weights w[target] (0 where ignored), and the target made safe to gather with.
std::pair<Tensor, Tensor> class_weights(const char* op, const Tensor& target, int64_t classes,
                                        const std::optional<Tensor>& weight, int64_t ignore_index,
                                        ScalarType dtype) {
  const Tensor t = target.reshape({-1});
  const Tensor keep = t != ignore_index;
  const Tensor safe = where(keep, t, zeros({}, t.options()));
  check_values_in_range(safe, 0, static_cast<double>(classes - 1), op,
                        fmt::format("target {{}} is out of bounds for {} classes", classes));
  const Tensor w = weight && weight->defined()
                       ? index_select(weight->to(dtype), 0, safe)
                       : ones({t.numel()}, TensorOptions().dtype(dtype).device(t.device()));
  return {w * keep, safe};
}

Tensor nll_loss_kernel(const Tensor& input, const Tensor& target,
                       const std::optional<Tensor>& weight, const std::string& reduction,
                       int64_t ignore_index) {
  check_nll_loss("nll_loss", input, target, weight, reduction);
  const Tensor x = classes_last(input);
  auto [w, safe] =
      class_weights("nll_loss", target, x.size(1), weight, ignore_index, input.dtype());
  const Tensor l = -gather(x, 1, safe.unsqueeze(1)).squeeze(1) * w;
  if (reduction == "none") return l.view(target.sizes());
  if (reduction == "sum") return l.sum();
  return l.sum() / w.sum();
}

// The gradient of nll_loss with respect to its input: -w[t] * grad (over the total weight for
// 'mean') at each target's class, zero elsewhere. The CPU has a fused kernel
// (kernels/cpu/loss.cpp); this one serves the XPU and a backward with create_graph.
Tensor nll_loss_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                const Tensor& target, const std::optional<Tensor>& weight,
                                const std::string& reduction, int64_t ignore_index) {
  check_nll_loss("nll_loss_backward", input, target, weight, reduction);
  check_nll_loss_grad(grad_output, input, target, reduction);
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  auto [w, safe] = class_weights("nll_loss_backward", target, input.size(class_dim), weight,
                                 ignore_index, input.dtype());
  Tensor coef = -w.view(target.sizes()) * grad_output;
  // Ignored targets get 0, also when every target is ignored (0 / 0 for them otherwise), as the
  // CPU kernel and PyTorch give.
  if (reduction == "mean")
    coef = where(target != ignore_index, coef / w.sum(), zeros({}, coef.options()));
  return zeros(input.sizes(), input.options())
      .scatter_add(class_dim, safe.view(target.sizes()).unsqueeze(class_dim),
                   coef.unsqueeze(class_dim));
}

Tensor cross_entropy_kernel(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight, const std::string& reduction,
                            int64_t ignore_index, double label_smoothing) {
  XTEN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, ValueError, "cross_entropy",
             "label_smoothing must be in [0, 1], but got {}", label_smoothing);
  XTEN_CHECK(input.dim() >= 1 && is_floating_type(input.dtype()), ValueError, "cross_entropy",
             "expected a floating input of at least 1 dim, but got {} of shape {}",
             to_string(input.dtype()), input.sizes());
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(class_dim);
  const Tensor logp = log_softmax(input, class_dim);
  const Tensor wc =
      weight && weight->defined() ? weight->to(input.dtype()) : ones({classes}, input.options());
  DimVector wshape(static_cast<size_t>(input.dim()), 1);
  wshape[class_dim] = classes;
  if (is_floating_type(target.dtype())) {
    // Class probabilities, one per input element.
    XTEN_CHECK(target.sizes() == input.sizes(), ValueError, "cross_entropy",
               "a probability target must have the input's shape {}, but got {}", input.sizes(),
               target.sizes());
    const Tensor t =
        label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / classes : target;
    const Tensor l = -(t * logp * wc.view(wshape)).sum({class_dim});
    if (reduction == "mean") return l.sum() / (input.dim() == 1 ? 1 : l.numel());
    return reduce("cross_entropy", l, reduction);
  }
  if (label_smoothing == 0) return nll_loss(logp, target, weight, reduction, ignore_index);
  const Tensor nll = nll_loss(logp, target, weight, "none", ignore_index);
  // Smoothing: (1 - s) * nll + s * mean over classes of -w_c log p_c, ignored targets excluded.
  auto [w, safe] =
      class_weights("cross_entropy", target, classes, weight, ignore_index, input.dtype());
  const Tensor keep = (target.reshape({-1}) != ignore_index).to(input.dtype());
  const Tensor smooth = -(classes_last(logp) * wc).sum({1}) * keep / classes;
  const Tensor l = nll.reshape({-1}) * (1 - label_smoothing) + smooth * label_smoothing;
  if (reduction == "none") return l.view(target.sizes());
  if (reduction == "sum") return l.sum();
  XTEN_CHECK(reduction == "mean", ValueError, "cross_entropy",
             "reduction must be 'none', 'mean' or 'sum', but got '{}'", reduction);
  return l.sum() / w.sum();
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("mse_loss", mse_loss_kernel);
  m.impl("mse_loss_backward", mse_loss_backward_kernel);
  m.impl("l1_loss", l1_loss_kernel);
  m.impl("smooth_l1_loss", smooth_l1_loss_kernel);
  m.impl("huber_loss", huber_loss_kernel);
  m.impl("binary_cross_entropy", binary_cross_entropy_kernel);
  m.impl("binary_cross_entropy_with_logits", binary_cross_entropy_with_logits_kernel);
  m.impl("kl_div", kl_div_kernel);
  m.impl("nll_loss", nll_loss_kernel);
  m.impl("nll_loss_backward", nll_loss_backward_kernel);
  m.impl("cross_entropy", cross_entropy_kernel);
}

}  // namespace xten
