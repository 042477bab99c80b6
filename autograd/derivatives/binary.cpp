// Derivatives of the binary, ternary and comparison ops (kernels/cpu/binary.cpp).
#include <cmath>

#include <xten/autograd/derivatives/common.h>
#include <xten/core/meta.h>

namespace xten::autograd {
namespace {

Tensor scaled(const Tensor& g, const Scalar& alpha) {
  return alpha.to<double>() == 1.0 ? g : g * alpha;
}

// maximum/minimum: the gradient goes to the larger (smaller) input; ties split it in half
// (PyTorch's formula, NaN included).
variable_list max_min_grad(const GradContext& c, bool is_max) {
  const Tensor a = c.input(0), b = c.input(1);
  const Tensor half = where(a == b, c.grad() / 2, c.grad());
  return {keep_where(~(is_max ? a < b : a > b), half), keep_where(~(is_max ? a > b : a < b), half)};
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("add.Tensor",
        [](const GradContext& c) -> variable_list {
          return {c.grad(), c.needs_grad(1) ? scaled(c.grad(), c.arg<Scalar>(2)) : Tensor()};
        })
      .inplace("add_.Tensor")
      .saves_only({});
  d.def("sub.Tensor",
        [](const GradContext& c) -> variable_list {
          return {c.grad(), c.needs_grad(1) ? -scaled(c.grad(), c.arg<Scalar>(2)) : Tensor()};
        })
      .inplace("sub_.Tensor")
      .saves_only({});
  d.def("mul.Tensor", [](const GradContext& c) -> variable_list {
     return {c.needs_grad(0) ? c.grad() * c.input(1) : Tensor(),
             c.needs_grad(1) ? c.grad() * c.input(0) : Tensor()};
   }).inplace("mul_.Tensor");
  d.def("div.Tensor", [](const GradContext& c) -> variable_list {
     const Tensor b = c.input(1);
     return {c.needs_grad(0) ? c.grad() / b : Tensor(),
             c.needs_grad(1) ? -c.grad() * c.input(0) / (b * b) : Tensor()};
   }).inplace("div_.Tensor");
  // With a rounding mode the result is piecewise constant: zero gradient (PyTorch's too).
  d.def("div.Tensor_mode", [](const GradContext& c) -> variable_list {
     if (c.arg<std::optional<std::string>>(2)) return {zeros_like(c.grad()), zeros_like(c.grad())};
     const Tensor b = c.input(1);
     return {c.needs_grad(0) ? c.grad() / b : Tensor(),
             c.needs_grad(1) ? -c.grad() * c.input(0) / (b * b) : Tensor()};
   }).inplace("div_.Tensor_mode");
  d.def("remainder.Tensor", [](const GradContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1)
                          ? -c.grad() * div(c.input(0), c.input(1), std::string("floor"))
                          : Tensor()};
  });
  d.def("fmod.Tensor", [](const GradContext& c) -> variable_list {
    return {c.grad(), c.needs_grad(1)
                          ? -c.grad() * div(c.input(0), c.input(1), std::string("trunc"))
                          : Tensor()};
  });
  // d/dx x^y = y x^(y-1) (0 where y = 0); d/dy x^y = x^y log x (0 where x = 0 and y >= 0).
  d.def("pow.Tensor_Tensor", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0), y = c.input(1);
     if (y.impl()->is_wrapped_number()) {  // pow(x, scalar)
       const double e = y.item<double>();
       return {e == 0 ? zeros_like(c.grad()) : c.grad() * e * pow(x, e - 1), Tensor()};
     }
     variable_list r(2);
     if (c.needs_grad(0)) r[0] = keep_where(y != 0, c.grad() * y * pow(x, y - 1));
     if (c.needs_grad(1)) r[1] = keep_where(~((x == 0) & (y >= 0)), c.grad() * pow(x, y) * log(x));
     return r;
   }).inplace("pow_.Tensor");
  d.def("maximum", [](const GradContext& c) { return max_min_grad(c, true); });
  d.def("minimum", [](const GradContext& c) { return max_min_grad(c, false); });
  d.def("atan2", [](const GradContext& c) -> variable_list {
    const Tensor a = c.input(0), b = c.input(1);
    // At (0, 0) both gradients are 0, as in PyTorch (1 / (a^2 + b^2) is taken as 0 there).
    Tensor recip = reciprocal(a * a + b * b);
    recip = masked_fill(recip, isinf(recip), 0);
    return {c.grad() * b * recip, c.grad() * -a * recip};
  });
  d.def("hypot", [](const GradContext& c) -> variable_list {
     const Tensor r = c.result();
     return {c.grad() * c.input(0) / r, c.grad() * c.input(1) / r};
   }).saves_result();
  d.def("where.self", [](const GradContext& c) -> variable_list {
    const Tensor cond = c.input(0);
    return {Tensor(), keep_where(cond, c.grad()), keep_where(~cond, c.grad())};
  });
  // The gradient passes where min <= self <= max (PyTorch's convention at the bounds).
  d.def("clamp", [](const GradContext& c) -> variable_list {
     const Tensor x = c.input(0);
     Tensor mask = ones_like(x, TensorOptions(kBool));
     if (auto lo = c.arg<std::optional<Scalar>>(1)) mask = mask & (x >= *lo);
     if (auto hi = c.arg<std::optional<Scalar>>(2)) mask = mask & (x <= *hi);
     return {keep_where(mask, c.grad())};
   }).inplace("clamp_");
  d.def("lerp.Tensor", [](const GradContext& c) -> variable_list {
    const Tensor w = c.input(2);
    // A Scalar weight arrives as a wrapped number, which has no device of its own to run `1 - w`
    // on: take 1 - w in double, as PyTorch's lerp.Scalar does.
    const Tensor one_minus_w =
        is_wrapped_number(w) ? scalar_to_tensor(1 - w.item<double>()) : 1 - w;
    return {c.needs_grad(0) ? c.grad() * one_minus_w : Tensor(),
            c.needs_grad(1) ? c.grad() * w : Tensor(),
            c.needs_grad(2) ? c.grad() * (c.input(1) - c.input(0)) : Tensor()};
  });
  d.nondifferentiable({"eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor",
                       "logical_and", "logical_or", "logical_xor", "bitwise_and.Tensor",
                       "bitwise_or.Tensor", "bitwise_xor.Tensor"});
}

}  // namespace xten::autograd
