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
    const Tensor x = c.input(0);
    return {where(x > 0, c.grad(), c.grad() * c.arg<Scalar>(1))};
  });
  // elu(x) = scale * x for x > 0, scale * alpha * (exp(input_scale * x) - 1) otherwise.
  d.def("elu", [](const GradContext& c) -> variable_list {
    const Tensor x = c.input(0);
    const double alpha = c.arg<Scalar>(1).to<double>(), scale = c.arg<Scalar>(2).to<double>(),
                 input_scale = c.arg<Scalar>(3).to<double>();
    // x <= 0 picks the exponential side, so NaN takes the linear one and passes the gradient
    // (PyTorch's elu_backward).
    return {where(x <= 0, c.grad() * exp(x * input_scale) * (alpha * scale * input_scale),
                  c.grad() * scale)};
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
    const Tensor x = c.input(0);
    const double beta = c.arg<Scalar>(1).to<double>(), threshold = c.arg<Scalar>(2).to<double>();
    const Tensor bx = x * beta;
    return {where(bx > threshold, c.grad(), c.grad() * sigmoid(bx))};
  });
  d.def("hardswish", [](const GradContext& c) -> variable_list {
    const Tensor x = c.input(0);
    // PyTorch 2.11's bounds: 0 at x = -3, the identity's 1 at x = 3 and at NaN.
    return {where(x <= -3, zeros({}, c.grad().dtype(), c.grad().device()),
                  where(x < 3, c.grad() * (x / 3 + 0.5), c.grad()))};
  });
}

}  // namespace xten::autograd
