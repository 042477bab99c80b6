// XPU unary pointwise ops with the CPU kernels' dtype rules (kernels/cpu/unary.cpp): floating
// functions compute in the input's floating dtype (float32 for integer and bool inputs);
// neg, abs and relu keep the dtype (no bool).
#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>

#include "../../common/op_checks.h"
#include "elementwise.h"

namespace xten::xpu {
namespace {

Tensor float_unary(const char* name, const char* kernel, const Tensor& out, const Tensor& s) {
  const ScalarType compute = is_floating_type(s.dtype()) ? s.dtype() : kFloat;
  Elementwise e(name, out, {s}, compute);
  return e.run(kernel, "unary");
}

Tensor same_dtype_unary(const char* name, const char* kernel, const Tensor& out, const Tensor& s) {
  visit_dtype<dtypes::kAllButBool>(name, s.dtype(), [](auto) {});  // the CPU's dtype error
  Elementwise e(name, out, {s}, s.dtype());
  return e.run(kernel, "unary");
}

Tensor neg_impl(const char* name, const Tensor& out, const Tensor& s) {
  check_neg(name, s.dtype());
  return same_dtype_unary(name, "neg", out, s);
}

}  // namespace

#define XTEN_XPU_FLOAT_UNARY(name)                                                       \
  m.impl(#name, [](const Tensor& s) { return float_unary(#name, #name, Tensor(), s); }); \
  m.impl(#name "_", [](const Tensor& s) { return float_unary(#name "_", #name, s, s); });
#define XTEN_XPU_SAME_DTYPE_UNARY(name)                                                       \
  m.impl(#name, [](const Tensor& s) { return same_dtype_unary(#name, #name, Tensor(), s); }); \
  m.impl(#name "_", [](const Tensor& s) { return same_dtype_unary(#name "_", #name, s, s); });

LIBRARY_IMPL(xten, XPU, m) {
  XTEN_XPU_FLOAT_UNARY(exp)
  XTEN_XPU_FLOAT_UNARY(exp2)
  XTEN_XPU_FLOAT_UNARY(log)
  XTEN_XPU_FLOAT_UNARY(log2)
  XTEN_XPU_FLOAT_UNARY(log10)
  XTEN_XPU_FLOAT_UNARY(log1p)
  XTEN_XPU_FLOAT_UNARY(expm1)
  XTEN_XPU_FLOAT_UNARY(sqrt)
  XTEN_XPU_FLOAT_UNARY(rsqrt)
  XTEN_XPU_FLOAT_UNARY(reciprocal)
  XTEN_XPU_FLOAT_UNARY(sin)
  XTEN_XPU_FLOAT_UNARY(cos)
  XTEN_XPU_FLOAT_UNARY(tan)
  XTEN_XPU_FLOAT_UNARY(tanh)
  XTEN_XPU_FLOAT_UNARY(sigmoid)
  XTEN_XPU_FLOAT_UNARY(erf)
  XTEN_XPU_SAME_DTYPE_UNARY(abs)
  XTEN_XPU_SAME_DTYPE_UNARY(relu)
  m.impl("neg", [](const Tensor& s) { return neg_impl("neg", Tensor(), s); });
  m.impl("neg_", [](const Tensor& s) { return neg_impl("neg_", s, s); });
  m.impl("silu", [](const Tensor& s) {
    visit_dtype<dtypes::kFloating>("silu", s.dtype(), [](auto) {});
    return float_unary("silu", "silu", Tensor(), s);
  });
  m.impl("silu_", [](const Tensor& s) {
    visit_dtype<dtypes::kFloating>("silu_", s.dtype(), [](auto) {});
    return float_unary("silu_", "silu", s, s);
  });
}

}  // namespace xten::xpu
