// Derivative of bmm (kernels/cpu/linalg.cpp); mm, matmul, addmm, linear, dot, mv and outer are
// composites over it.
#include <xten/autograd/derivatives/common.h>

namespace xten::autograd {

LIBRARY_IMPL(xten, Autograd, m) {
  Derivatives d(m);
  d.def("bmm", [](const GradContext& c) -> variable_list {
    return {c.needs_grad(0) ? c.grad().bmm(c.input(1).transpose(1, 2)) : Tensor(),
            c.needs_grad(1) ? c.input(0).transpose(1, 2).bmm(c.grad()) : Tensor()};
  });
}

}  // namespace xten::autograd
