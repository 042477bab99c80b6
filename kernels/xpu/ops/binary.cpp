// XPU binary pointwise ops: add/sub (alpha), mul, div (true division), maximum, minimum and
// the comparisons, with the CPU kernels' dtype rules and errors (kernels/cpu/binary.cpp).
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>

#include "../../common/op_checks.h"
#include "elementwise.h"

namespace xten::xpu {
namespace {

// The dtype set's error, exactly as the CPU kernel raises it.
template <uint32_t Set>
void check_supported(const char* op, ScalarType t) {
  visit_dtype<Set>(op, t, [](auto) {});
}

// Runs `kernel` with a value argument of the compute dtype's opmath type.
Tensor run_with_value(Elementwise& e, const char* kernel, const Scalar& value) {
  return visit_dtype<dtypes::kAll>("xpu", e.compute(), [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    return e.run(kernel, "binary", value.to<M>());
  });
}

Tensor add_impl(const char* name, const Tensor& out, const Tensor& self, const Tensor& other,
                const Scalar& alpha, bool negate) {
  const ScalarType t = result_type(self, other);
  check_add_sub(name, t, alpha, negate);
  check_supported<dtypes::kAll>(name, t);
  Elementwise e(name, out, {self, other}, t);
  if (t == kBool) return run_with_value(e, "add", alpha);
  const Scalar a =
      negate ? (is_floating_type(t) ? Scalar(-alpha.to<double>()) : Scalar(-alpha.to_long()))
             : alpha;
  return run_with_value(e, "add", a);
}

Tensor mul_impl(const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  Elementwise e(name, out, {a, b}, result_type(a, b));
  return run_with_value(e, "mul", Scalar(0));
}

Tensor div_impl(const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  const ScalarType compute = is_floating_type(t) ? t : kFloat;
  check_supported<dtypes::kFloating>(name, compute);
  Elementwise e(name, out, {a, b}, compute);
  return run_with_value(e, "div", Scalar(0));
}

Tensor max_min(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b});
  return run_with_value(e, name, Scalar(0));
}

Tensor compare(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b}, std::nullopt, kBool);
  return run_with_value(e, name, Scalar(0));
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("add.Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {
    return add_impl("add", Tensor(), a, b, alpha, false);
  });
  m.impl("add_.Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {
    return add_impl("add_", a, a, b, alpha, false);
  });
  m.impl("sub.Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {
    return add_impl("sub", Tensor(), a, b, alpha, true);
  });
  m.impl("sub_.Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {
    return add_impl("sub_", a, a, b, alpha, true);
  });
  m.impl("mul.Tensor",
         [](const Tensor& a, const Tensor& b) { return mul_impl("mul", Tensor(), a, b); });
  m.impl("mul_.Tensor", [](const Tensor& a, const Tensor& b) { return mul_impl("mul_", a, a, b); });
  m.impl("div.Tensor",
         [](const Tensor& a, const Tensor& b) { return div_impl("div", Tensor(), a, b); });
  m.impl("div_.Tensor", [](const Tensor& a, const Tensor& b) { return div_impl("div_", a, a, b); });
  m.impl("maximum", [](const Tensor& a, const Tensor& b) { return max_min("maximum", a, b); });
  m.impl("minimum", [](const Tensor& a, const Tensor& b) { return max_min("minimum", a, b); });
  m.impl("eq.Tensor", [](const Tensor& a, const Tensor& b) { return compare("eq", a, b); });
  m.impl("ne.Tensor", [](const Tensor& a, const Tensor& b) { return compare("ne", a, b); });
  m.impl("lt.Tensor", [](const Tensor& a, const Tensor& b) { return compare("lt", a, b); });
  m.impl("le.Tensor", [](const Tensor& a, const Tensor& b) { return compare("le", a, b); });
  m.impl("gt.Tensor", [](const Tensor& a, const Tensor& b) { return compare("gt", a, b); });
  m.impl("ge.Tensor", [](const Tensor& a, const Tensor& b) { return compare("ge", a, b); });
}

}  // namespace xten::xpu
