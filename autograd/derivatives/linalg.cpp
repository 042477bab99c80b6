// Derivative of bmm (kernels/cpu/linalg.cpp); mm, matmul, addmm, linear, dot, mv and outer are
// composites over it.
#include <xten/autograd/derivatives/common.h>

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
}

}  // namespace xten::autograd
