// Derivatives of batch_norm and layer_norm (composites in kernels/composite/norm.cpp): their
// backward ops, batch_norm_backward and layer_norm_backward, which have fused kernels on CPU and
// XPU (a few passes over the saved input, nothing else saved) and a closed-form composite that a
// backward with create_graph records (docs/autograd.md, "Fused backward kernels"). The tests
// compare both with the decomposition's gradient (test_autograd.cpp, NormFormulas). group_norm
// differentiates through its decomposition.
#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {
namespace {

std::optional<Tensor> optional_input(const GradContext& c, size_t arg) {
  return c.has_input(arg) ? std::optional<Tensor>(c.input(arg)) : std::nullopt;
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
  d.def("batch_norm", [](const GradContext& c) -> variable_list {
     const bool training = c.arg<bool>(5);
     auto [dx, dw, db] = batch_norm_backward(
         c.grad(), c.input(0), optional_input(c, 1), training ? std::nullopt : optional_input(c, 3),
         training ? std::nullopt : optional_input(c, 4), training, c.arg<double>(7));
     return {dx, dw, db};
   }).saves_only({0, 1, 3, 4});
  // layer_norm(input, normalized_shape, weight, bias, eps)
  d.def("layer_norm", [](const GradContext& c) -> variable_list {
     auto [dx, dw, db] = layer_norm_backward(c.grad(), c.input(0), c.arg<IntArrayRef>(1),
                                             optional_input(c, 2), c.arg<double>(4));
     return {dx, dw, db};
   }).saves_only({0, 2});
}

}  // namespace xten::autograd
