// Derivatives of softmax, log_softmax and the parameterized activations
// (kernels/cpu/activation.cpp).
#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  // y = softmax(x): dx = y * (g - sum(g * y)); y = log_softmax(x): dx = g - exp(y) * sum(g).
  // Fused kernels on CPU and XPU (kernels/cpu/activation.cpp); composites with create_graph.
  d.def("softmax",
        [](const GradContext& c) -> variable_list {
          return {_softmax_backward_data(c.grad(), c.result(), c.arg<int64_t>(1),
                                         c.input_meta(0).dtype)};
        })
      .saves_result()
      .saves_only({});
  d.def("log_softmax",
        [](const GradContext& c) -> variable_list {
          return {_log_softmax_backward_data(c.grad(), c.result(), c.arg<int64_t>(1),
                                             c.input_meta(0).dtype)};
        })
      .saves_result()
      .saves_only({});
  d.def("leaky_relu", [](const GradContext& c) -> variable_list {
    return {leaky_relu_backward(c.grad(), c.input(0), c.arg<Scalar>(1), false)};
  });
  // elu(x) = scale * x for x > 0, scale * alpha * (exp(input_scale * x) - 1) otherwise.
  d.def("elu", [](const GradContext& c) -> variable_list {
    return {elu_backward(c.grad(), c.arg<Scalar>(1), c.arg<Scalar>(2), c.arg<Scalar>(3), false,
                         c.input(0))};
  });
  // hardtanh passes the gradient strictly inside (min, max): 0 at the bounds, unlike clamp, and
  // NaN passes it (PyTorch's hardtanh_backward). hardtanh is a composite of clamp (kernels/
  // composite/activation.cpp); this derivative overrides clamp's convention.
  d.def("hardtanh", [](const GradContext& c) -> variable_list {
    const Tensor x = c.input(0);
    const Scalar lo = c.arg<Scalar>(1), hi = c.arg<Scalar>(2);
    return {where((x <= lo) | (x >= hi), zeros({}, c.grad().dtype(), c.grad().device()), c.grad())};
  });
  // softplus(x) = log(1 + exp(beta x)) / beta, x where beta x > threshold.
  d.def("softplus", [](const GradContext& c) -> variable_list {
    return {softplus_backward(c.grad(), c.input(0), c.arg<Scalar>(1), c.arg<Scalar>(2))};
  });
  d.def("hardswish", [](const GradContext& c) -> variable_list {
    return {hardswish_backward(c.grad(), c.input(0))};
  });
}

}  // namespace xten::autograd
