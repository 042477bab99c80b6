// Normalization written with reductions and pointwise ops (valid on every backend):
// batch_norm, layer_norm, group_norm. Half and BFloat16 inputs compute their statistics in
// float and return their own dtype.
#include <xten/autograd/derivative.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>

namespace xten {
namespace {

ScalarType stats_dtype(const Tensor& t) {
  return t.dtype() == kHalf || t.dtype() == kBFloat16 ? kFloat : t.dtype();
}

void check_channels(const char* op, const char* what, const std::optional<Tensor>& t,
                    int64_t channels) {
  if (t && t->defined())
    XTEN_CHECK(t->dim() == 1 && t->size(0) == channels, ValueError, op,
               "{} must have shape ({}), but got {}", what, channels, t->sizes());
}

// x * weight + bias with weight and bias of shape `shape` (broadcast), either optional.
Tensor affine(Tensor x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
              IntArrayRef shape) {
  if (weight && weight->defined()) x = x * weight->view(shape);
  if (bias && bias->defined()) x = x + bias->view(shape);
  return x;
}

using BatchNormStats = TensorPair(const Tensor&);

// norms::batch_norm_stats: batch_norm's mean and biased variance per channel (dim 1), in
// float32 (float64 for a float64 input). The CPU computes both in one pass (Note [Batch norm
// statistics], kernels/cpu/norm.cpp); this composite elsewhere.
TensorPair batch_norm_stats_kernel(const Tensor& input) {
  DimVector dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  const Tensor x = input.to(stats_dtype(input));
  return {x.mean(dims), x.var(dims, /*correction=*/0)};
}

}  // namespace

std::pair<Tensor, Tensor> batch_norm_scale_shift(const Tensor& input,
                                                 const std::optional<Tensor>& weight,
                                                 const std::optional<Tensor>& bias,
                                                 const std::optional<Tensor>& running_mean,
                                                 const std::optional<Tensor>& running_var,
                                                 bool training, double momentum, double eps) {
  XTEN_CHECK(input.dim() >= 2, ValueError, "batch_norm",
             "expected an input of at least 2 dims (N, C, ...), but got shape {}", input.sizes());
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, "batch_norm",
             "not implemented for dtype {}", to_string(input.dtype()));
  const int64_t c = input.size(1);
  check_channels("batch_norm", "weight", weight, c);
  check_channels("batch_norm", "bias", bias, c);
  check_channels("batch_norm", "running_mean", running_mean, c);
  check_channels("batch_norm", "running_var", running_var, c);
  const ScalarType st = stats_dtype(input);
  Tensor mean, var;
  if (training) {
    const int64_t count = input.numel() / std::max<int64_t>(c, 1);
    XTEN_CHECK(count > 1, ValueError, "batch_norm",
               "expected more than 1 value per channel when training, but got input of shape {}",
               input.sizes());
    static const auto stats =
        Dispatcher::singleton().find("norms::batch_norm_stats").typed<BatchNormStats>();
    std::tie(mean, var) = stats.call(input);
    // Running statistics: exponential averages, the variance unbiased. Buffers, never part of
    // the autograd graph (detached statistics).
    if (running_mean && running_mean->defined()) {
      Tensor rm = *running_mean;
      rm.copy_(rm * (1 - momentum) + mean.detach() * momentum);
    }
    if (running_var && running_var->defined()) {
      Tensor rv = *running_var;
      rv.copy_(rv * (1 - momentum) + var.detach() * (momentum * count / (count - 1.0)));
    }
  } else {
    XTEN_CHECK(running_mean && running_mean->defined() && running_var && running_var->defined(),
               ValueError, "batch_norm",
               "running_mean and running_var must be given in evaluation mode (training=false)");
    mean = running_mean->to(st);
    var = running_var->to(st);
  }
  // scale = weight / sqrt(var + eps) and shift = bias - mean * scale, on [C] (as PyTorch's CPU
  // kernel does).
  Tensor scale = rsqrt(var + eps);
  if (weight && weight->defined()) scale = scale * weight->to(st);
  Tensor shift = -mean * scale;
  if (bias && bias->defined()) shift = shift + bias->to(st);
  return {scale, shift};
}

namespace {

// y = x * scale + shift per channel: one addcmul, in the statistics' dtype. The CPU has a kernel
// of its own (one pass in the input's dtype, kernels/cpu/norm.cpp); graph capture records this
// composite on every backend (compile/capture.cpp, recorded_as_composite), and addcmul as a mul
// and an add, for the fold into a convolution (compile/passes.cpp) and the pointwise groups.
Tensor batch_norm_kernel(const Tensor& input, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean,
                         const std::optional<Tensor>& running_var, bool training, double momentum,
                         double eps) {
  const auto [scale, shift] = batch_norm_scale_shift(input, weight, bias, running_mean, running_var,
                                                     training, momentum, eps);
  DimVector shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = input.size(1);
  return addcmul(shift.view(shape), input.to(scale.dtype()), scale.view(shape)).to(input.dtype());
}

Tensor layer_norm_kernel(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         double eps) {
  layer_norm_meta(input, normalized_shape, weight, bias);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  DimVector dims;
  for (int64_t d = input.dim() - k; d < input.dim(); ++d) dims.push_back(d);
  const Tensor x = input.to(stats_dtype(input));
  const Tensor mean = x.mean(dims, true), var = x.var(dims, 0, true);
  const Tensor y = (x - mean) * rsqrt(var + eps);
  return affine(y, weight, bias, normalized_shape).to(input.dtype());
}

Tensor group_norm_kernel(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias, double eps) {
  group_norm_meta(input, groups, weight, bias);
  const int64_t c = input.size(1);
  // The channels split into [groups, c / groups] by a view, so every step keeps the input's
  // layout, and so does the input's gradient (a channels-last batch: docs/memory_format.md).
  DimVector split{input.size(0), groups, c / groups}, dims{2};
  for (int64_t d = 2; d < input.dim(); ++d) {
    split.push_back(input.size(d));
    dims.push_back(d + 1);
  }
  const Tensor x = input.to(stats_dtype(input)).view(split);
  const Tensor y = ((x - x.mean(dims, true)) * rsqrt(x.var(dims, 0, true) + eps)).flatten(1, 2);
  DimVector shape(static_cast<size_t>(input.dim()), 1);
  shape[1] = c;
  return affine(y, weight, bias, shape).to(input.dtype());
}

// The backward of batch_norm and layer_norm in closed form: for y = xhat * w + b with xhat
// normalized over a group, dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w
// (batch statistics; with running ones dx = gw * rstd), dw = sum(g * xhat), db = sum(g), the
// sums over the group's other dims. The CPU and XPU have fused kernels (kernels/cpu/norm.cpp),
// so this runs where autograd records it (a backward with create_graph) and on other backends;
// the tests compare both with the gradient of the forward's decomposition.
Tensor normalized_input_grad(const Tensor& gw, const Tensor& xhat, const Tensor& rstd,
                             IntArrayRef dims) {
  return rstd * (gw - gw.mean(dims, true) - xhat * (gw * xhat).mean(dims, true));
}

TensorTriple batch_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& running_mean,
                                        const std::optional<Tensor>& running_var, bool training,
                                        double eps) {
  batch_norm_backward_meta(grad_output, input, weight, running_mean, running_var, training);
  const ScalarType st = stats_dtype(input);
  const Tensor x = input.to(st), g = grad_output.to(st);
  DimVector dims{0}, shape(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  shape[1] = x.size(1);
  const Tensor mean = training ? x.mean(dims, true) : running_mean->to(st).view(shape);
  const Tensor var = training ? x.var(dims, 0, true) : running_var->to(st).view(shape);
  const Tensor rstd = rsqrt(var + eps), xhat = (x - mean) * rstd;
  const Tensor gw = weight && weight->defined() ? g * weight->to(st).view(shape) : g;
  Tensor dx = training ? normalized_input_grad(gw, xhat, rstd, dims) : gw * rstd;
  return norm_backward_results(input, weight, dx, (g * xhat).sum(dims), g.sum(dims));
}

TensorTriple layer_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        IntArrayRef normalized_shape,
                                        const std::optional<Tensor>& weight, double eps) {
  layer_norm_backward_meta(grad_output, input, normalized_shape, weight);
  const ScalarType st = stats_dtype(input);
  const Tensor x = input.to(st), g = grad_output.to(st);
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  DimVector dims, lead;
  for (int64_t i = 0; i < x.dim(); ++i) (i < x.dim() - k ? lead : dims).push_back(i);
  const Tensor rstd = rsqrt(x.var(dims, 0, true) + eps);
  const Tensor xhat = (x - x.mean(dims, true)) * rstd;
  const Tensor gw = weight && weight->defined() ? g * weight->to(st) : g;
  return norm_backward_results(input, weight, normalized_input_grad(gw, xhat, rstd, dims),
                               lead.empty() ? g * xhat : (g * xhat).sum(lead),
                               lead.empty() ? g : g.sum(lead));
}

}  // namespace

LIBRARY(norms, m) {
  m.def<BatchNormStats>("batch_norm_stats(Tensor input) -> (Tensor, Tensor)");
}
LIBRARY_IMPL(norms, CompositeImplicit, m) {
  m.impl("batch_norm_stats", batch_norm_stats_kernel);
}
LIBRARY_IMPL(norms, Autograd, m) {
  autograd::Derivatives d(m);
  d.nondifferentiable({"batch_norm_stats"});
}

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("batch_norm", batch_norm_kernel);
  m.impl("layer_norm", layer_norm_kernel);
  m.impl("group_norm", group_norm_kernel);
  m.impl("batch_norm_backward", batch_norm_backward_kernel);
  m.impl("layer_norm_backward", layer_norm_backward_kernel);
}

}  // namespace xten
