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
// The operands are cast to the result dtype first: `value` takes no part in the promotion, but a
// float value times an integer tensor1 would raise it to float (addcmul of float16, uint8 and
// bool is float16, not float32).
Tensor addcmul_kernel(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                      const Scalar& value) {
  const ScalarType t = addcmul_meta(self, tensor1, tensor2, value);
  auto as_t = [t](const Tensor& x) { return x.dtype() == t ? x : x.to(t); };
  const bool one = value.is_integral(true) ? value.to_long() == 1 : value.to_double() == 1.0;
  const Tensor a = as_t(tensor1);
  return (one ? a : a * value) * as_t(tensor2) + as_t(self);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("addcmul", addcmul_kernel);
}

}  // namespace xten
