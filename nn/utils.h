#pragma once
// nn::utils: gradient clipping (libtorch's torch::nn::utils, docs/nn.md "Gradient clipping"),
// what a transformer's training loop calls between backward() and the optimizer's step.
#include <vector>

#include <xten/core/tensor.h>

namespace xten::nn::utils {

// Scales the gradients of `parameters` (those without one are skipped) in place so that their
// total norm of order `norm_type` (the norm of the per-tensor norms; +inf: the largest absolute
// value) is at most `max_norm`: by max_norm / (total + 1e-6) when that is below 1. Returns the
// total norm before clipping (0 where no parameter has a gradient). Norms of 16-bit gradients
// are taken in float32; gradients on several devices are summed on the first one's. A total
// that is NaN or infinite clips nothing, or with `error_if_nonfinite` raises ValueError naming
// it. ValueError for a norm_type that is not positive or +inf.
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);
double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// clip_grad_norm_ in two steps that read nothing back to the host (PyTorch 2.6's names), so a
// compiled training step can clip without a graph break (docs/nn.md "Gradient clipping"):
// get_total_norm returns the total norm of order `norm_type` of `tensors` (the gradients
// themselves) as a 0-d tensor on the first one's device, float32 (float64 if any is float64);
// error_if_nonfinite reads it back to raise (a graph break under compile). clip_grads_with_norm_
// multiplies every gradient of `parameters` in place by min(1, max_norm / (total_norm + 1e-6)),
// and by 1 where total_norm is NaN or infinite (clip_grad_norm_'s rule).
Tensor get_total_norm(const std::vector<Tensor>& tensors, double norm_type = 2.0,
                      bool error_if_nonfinite = false);
void clip_grads_with_norm_(const std::vector<Tensor>& parameters, double max_norm,
                           const Tensor& total_norm);

// Clamps every gradient of `parameters` in place to [-clip_value, clip_value] (NaN stays NaN).
// ValueError for a negative or NaN clip_value.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);
void clip_grad_value_(const Tensor& parameter, double clip_value);

}  // namespace xten::nn::utils
