// Pointwise ops written with other pointwise ops (valid on every backend; the CPU has fused
// kernels for them).
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/op_checks.h>

namespace xten {
namespace {

// self + value * tensor1 * tensor2 as (tensor1 [* value]) * tensor2 + self: the CPU kernel's
// order, and the mul then add that compile's conv + batch_norm fold matches (graph capture
// records this form, Note [Capture]). Differentiable through mul and add: autograd runs it.
Tensor addcmul_kernel(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                      const Scalar& value) {
  addcmul_meta(self, tensor1, tensor2, value);
  const bool one = value.is_integral(true) ? value.to_long() == 1 : value.to_double() == 1.0;
  return (one ? tensor1 : tensor1 * value) * tensor2 + self;
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("addcmul", addcmul_kernel);
}

}  // namespace xten
