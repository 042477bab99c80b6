// Derivatives of nll_loss and mse_loss (fused backward kernels in kernels/cpu/loss.cpp) and
// binary_cross_entropy; the other losses, cross_entropy included, are composites
// (kernels/composite/loss.cpp) and differentiate through their ops.
#include <algorithm>

#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // mse_loss(self, target, reduction): the fused mse_loss_backward (a composite with
  // create_graph) in the shape self and target broadcast to; the target's gradient is its
  // negative. The engine sums each back to its input's shape.
  d.def("mse_loss", [](const GradContext& c) -> variable_list {
    const Tensor gx = mse_loss_backward(c.grad(), c.input(0), c.input(1), c.arg<std::string>(2));
    return {c.needs_grad(0) ? gx : Tensor(), c.needs_grad(1) ? -gx : Tensor()};
  });
  // The input's gradient is the fused nll_loss_backward (a composite with create_graph). The
  // weight's, rarely asked for, in ops: for 'none' and 'sum' dL/dw_c = sum over targets i = c
  // of -x[i, c] * g_i; for 'mean' (L = S / W) of (-x[i, c] - L) / W * g.
  d.def("nll_loss", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0), target = c.input(1);
     const std::optional<Tensor> weight =
         c.has_input(2) ? std::optional<Tensor>(c.input(2)) : std::nullopt;
     const auto& reduction = c.arg<std::string>(3);
     const int64_t ignore_index = c.arg<int64_t>(4);
     Tensor gx, gw;
     if (c.needs_grad(0))
       gx = nll_loss_backward(c.grad(), x, target, weight, reduction, ignore_index);
     if (c.needs_grad(2)) {
       const int64_t cd = x.dim() == 1 ? 0 : 1;
       const Tensor keep = target != ignore_index;
       const Tensor safe = where(keep, target, zeros({}, target.options()));
       Tensor term = -gather(x, cd, safe.unsqueeze(cd)).squeeze(cd);
       if (reduction == "mean") {
         const Tensor total =
             keep_where(keep, index_select(*weight, 0, safe.reshape({-1})).view(target.sizes()))
                 .sum();
         term = (term - c.result()) / total;
       }
       const Tensor contrib = keep_where(keep, term * c.grad());
       gw = zeros(weight->sizes(), weight->options())
                .scatter_add(0, safe.reshape({-1}), contrib.reshape({-1}).to(weight->dtype()));
     }
     return {gx, Tensor(), gw};
   }).saves_result();
  // binary_cross_entropy is a composite whose forward clamps log at -100; differentiated
  // through its ops it gave NaN at x = 0 and 1 (0 * inf). PyTorch's formulas instead:
  // dL/dx = g w (x - t) / max(x (1 - x), 1e-12), dL/dt = g w (log(1 - x) - log(x)); the weight
  // gets none.
  d.def("binary_cross_entropy", [](const GradContext& c) -> variable_list {
    const Tensor x = c.input(0), t = c.input(1);
    Tensor g = c.grad();
    if (c.arg<std::string>(3) == "mean")
      g = g / static_cast<double>(std::max<int64_t>(x.numel(), 1));
    if (c.has_input(2)) g = g * c.input(2);
    return {c.needs_grad(0) ? g * (x - t) / clamp(x * (1 - x), 1e-12) : Tensor(),
            c.needs_grad(1) ? g * (log1p(-x) - log(x)) : Tensor(), Tensor()};
  });
}

}  // namespace xten::autograd
