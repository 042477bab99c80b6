// Derivatives of bmm (kernels/cpu/linalg.cpp), linear and _linear_relu (kernels/cpu/linear.cpp);
// mm, matmul, addmm, dot, mv and outer are composites over bmm.
#include <xten/autograd/derivatives/common.h>
#include <xten/kernels/common/linear.h>

namespace xten::autograd {
namespace {

// Whether the matrices of a [B, r, c] tensor are column-major (a transposed view, as linear's
// weight.t()).
bool column_major(const TensorMeta& m) {
  return m.sizes.size() == 3 && m.sizes[1] > 1 && m.sizes[2] > 1 && !m.contiguous;
}

// x @ y, or ((y^T @ x^T)^T) when `transposed_result`: the same values, in the layout of the
// input the gradient is for, so that a transposed weight gets a gradient its own optimizer
// step reads contiguously (PyTorch's gradient layout contract).
Tensor product(const Tensor& x, const Tensor& y, bool transposed_result) {
  if (!transposed_result) return x.bmm(y);
  return y.transpose(1, 2).bmm(x.transpose(1, 2)).transpose(1, 2);
}

// linear's input, weight and bias gradients from `g`, the gradient of its output ([..., out]):
// g @ weight, g^T @ input over the flattened leading dims (a contiguous [out, in], the weight's
// layout), and g summed over the leading dims.
variable_list linear_grads(const GradContext& c, const Tensor& g) {
  const Tensor g2 = leading_dims_as_rows(g);
  Tensor gi, gw, gb;
  if (c.needs_grad(0)) gi = matmul(g, c.input(1));
  if (c.needs_grad(1)) {
    const Tensor x = c.input(0);
    gw = mm(g2.t(), leading_dims_as_rows(x));
  }
  if (c.needs_grad(2)) gb = g2.sum({0});
  return {gi, gw, gb};
}

}  // namespace

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("bmm", [](const GradContext& c) -> variable_list {
    const Tensor& g = c.grad();
    return {c.needs_grad(0) ? product(g, c.input(1).transpose(1, 2), column_major(c.input_meta(0)))
                            : Tensor(),
            c.needs_grad(1) ? product(c.input(0).transpose(1, 2), g, column_major(c.input_meta(1)))
                            : Tensor()};
  });
  d.def("linear", [](const GradContext& c) {
     return linear_grads(c, c.grad());
   }).saves_only({0, 1});
  // relu's mask from the output, as relu's own derivative (zero where the output is zero).
  d.def("_linear_relu",
        [](const GradContext& c) {
          return linear_grads(c, threshold_backward(c.grad(), c.result(), 0));
        })
      .saves_result()
      .saves_only({0, 1});
}

}  // namespace xten::autograd
