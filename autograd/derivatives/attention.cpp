// Derivative of the flash attention kernel (docs/attention.md, "Backward"): its backward op, which
// has fused kernels on CPU and XPU and a closed-form composite that a backward with create_graph
// records. scaled_dot_product_attention and its math path differentiate through their
// decomposition.
#include <xten/autograd/derivatives/common.h>

#include <xten/kernels/common/attention.h>

namespace xten::autograd {

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // _scaled_dot_product_flash_attention(query, key, value, attn_mask, is_causal, scale)
  //   -> (output, logsumexp)
  d.def("_scaled_dot_product_flash_attention", [](const GradContext& c) -> variable_list {
     const std::optional<Tensor> mask =
         c.has_input(3) ? std::optional<Tensor>(c.input(3)) : std::nullopt;
     const bool causal = c.arg<bool>(4);
     const double scale = c.arg<double>(5);
     const Tensor q = c.input(0), k = c.input(1), v = c.input(2);
     const Tensor out = c.result(0), lse = c.result(1);
     // A gradient of logsumexp only reaches here from a second derivative (the backward's
     // closed form reads logsumexp): the closed form takes its term.
     auto [dq, dk, dv] = c.grad_flowed(1)
                             ? detail::flash_attention_backward_with_lse(
                                   c.grad(0), q, k, v, out, lse, mask, causal, scale, c.grad(1))
                             : _scaled_dot_product_flash_attention_backward(
                                   c.grad(0), q, k, v, out, lse, mask, causal, scale);
     return {dq, dk, dv, Tensor()};
   }).saves_result();
}

}  // namespace xten::autograd
