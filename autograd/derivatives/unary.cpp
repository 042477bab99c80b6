// Derivatives of the unary ops (kernels/cpu/unary.cpp). Each formula is registered for the op
// and its in-place variant.
#include <cmath>

#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {
namespace {

constexpr double kLn2 = 0.693147180559945309417;
constexpr double kLn10 = 2.302585092994045684018;
constexpr double kPi = 3.141592653589793238463;

Tensor zero_grad(const GradContext& c) {
  return zeros_like(c.grad());
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("neg", [](const GradContext& c) -> variable_list { return {-c.grad()}; })
      .inplace("neg_")
      .saves_only({});
  d.def("abs", [](const GradContext& c) -> variable_list {
     return {c.grad() * sign(c.input(0))};
   }).inplace("abs_");
  d.def("sign", [](const GradContext& c) -> variable_list { return {zero_grad(c)}; })
      .inplace("sign_")
      .saves_only({});
  d.def("exp", [](const GradContext& c) -> variable_list { return {c.grad() * c.result()}; })
      .saves_result()
      .inplace("exp_")
      .saves_only({});
  d.def("exp2",
        [](const GradContext& c) -> variable_list { return {c.grad() * c.result() * kLn2}; })
      .saves_result()
      .inplace("exp2_")
      .saves_only({});
  d.def("expm1",
        [](const GradContext& c) -> variable_list { return {c.grad() * (c.result() + 1)}; })
      .saves_result()
      .inplace("expm1_")
      .saves_only({});
  d.def("log", [](const GradContext& c) -> variable_list {
     return {c.grad() / c.input(0)};
   }).inplace("log_");
  d.def("log2", [](const GradContext& c) -> variable_list {
     return {c.grad() / (c.input(0) * kLn2)};
   }).inplace("log2_");
  d.def("log10", [](const GradContext& c) -> variable_list {
     return {c.grad() / (c.input(0) * kLn10)};
   }).inplace("log10_");
  d.def("log1p", [](const GradContext& c) -> variable_list {
     return {c.grad() / (c.input(0) + 1)};
   }).inplace("log1p_");
  d.def("sqrt", [](const GradContext& c) -> variable_list { return {c.grad() / (c.result() * 2)}; })
      .saves_result()
      .inplace("sqrt_")
      .saves_only({});
  d.def("rsqrt",
        [](const GradContext& c) -> variable_list {
          const Tensor r = c.result();
          return {c.grad() * r * r * r * -0.5};
        })
      .saves_result()
      .inplace("rsqrt_")
      .saves_only({});
  d.def("reciprocal",
        [](const GradContext& c) -> variable_list {
          const Tensor r = c.result();
          return {-c.grad() * r * r};
        })
      .saves_result()
      .inplace("reciprocal_")
      .saves_only({});
  d.def("sin", [](const GradContext& c) -> variable_list {
     return {c.grad() * cos(c.input(0))};
   }).inplace("sin_");
  d.def("cos", [](const GradContext& c) -> variable_list {
     return {-c.grad() * sin(c.input(0))};
   }).inplace("cos_");
  d.def("tan",
        [](const GradContext& c) -> variable_list {
          const Tensor r = c.result();
          return {c.grad() * (r * r + 1)};
        })
      .saves_result()
      .inplace("tan_")
      .saves_only({});
  d.def("tanh",
        [](const GradContext& c) -> variable_list { return {tanh_backward(c.grad(), c.result())}; })
      .saves_result()
      .inplace("tanh_")
      .saves_only({});
  d.def("sigmoid",
        [](const GradContext& c) -> variable_list {
          return {sigmoid_backward(c.grad(), c.result())};
        })
      .saves_result()
      .inplace("sigmoid_")
      .saves_only({});
  // Zero where the result is zero: at x = 0 too (threshold_backward, fused on the CPU).
  d.def("relu",
        [](const GradContext& c) -> variable_list {
          return {threshold_backward(c.grad(), c.result(), 0)};
        })
      .saves_result()
      .inplace("relu_")
      .saves_only({});
  d.def("silu", [](const GradContext& c) -> variable_list {
     return {silu_backward(c.grad(), c.input(0))};
   }).inplace("silu_");
  d.def("erf", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     return {c.grad() * exp(-(x * x)) * (2 / std::sqrt(kPi))};
   }).inplace("erf_");
  for (const char* op : {"floor", "ceil", "round", "trunc"}) {
    d.def(op, [](const GradContext& c) -> variable_list { return {zero_grad(c)}; })
        .inplace((std::string(op) + "_").c_str())
        .saves_only({});
  }
  d.def("gelu", [](const GradContext& c) -> variable_list {
    return {gelu_backward(c.grad(), c.input(0), c.arg<std::string>(1))};
  });
  d.def("nan_to_num", [](const GradContext& c) -> variable_list {
    return {keep_where(isfinite(c.input(0)), c.grad())};
  });
  d.nondifferentiable(
      {"logical_not", "logical_not_", "bitwise_not", "bitwise_not_", "isnan", "isinf", "isfinite",
       // GradScaler's unscale and the optimizers' steps: data to them (kernels/cpu/optim.cpp)
       "_amp_foreach_non_finite_check_and_unscale_", "_fused_sgd_", "_fused_adam_",
       "_fused_rmsprop_", "_amp_update_scale_"});
}

}  // namespace xten::autograd
