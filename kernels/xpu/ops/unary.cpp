// XPU unary pointwise ops with the CPU kernels' dtype rules (kernels/cpu/unary.cpp): floating
// functions compute in the input's floating dtype (float32 for integer and bool inputs);
// neg, abs, relu, sign, bitwise_not keep the dtype; rounding copies integers; predicates give
// bool; gelu and nan_to_num as on the CPU. Kernels in unary.cl.
#include <limits>
#include <type_traits>

#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/elementwise.h>

namespace xten::xpu {
namespace {

Tensor float_unary(const char* name, const char* kernel, const Tensor& out, const Tensor& s) {
  const ScalarType compute = is_floating_type(s.dtype()) ? s.dtype() : kFloat;
  Elementwise e(name, out, {s}, compute);
  return e.run(kernel, "unary");
}

// Same dtype in and out over the dtype set `Set` (the CPU's error outside it).
template <uint32_t Set>
Tensor typed_unary(const char* name, const char* kernel, const Tensor& out, const Tensor& s,
                   std::optional<ScalarType> result = std::nullopt) {
  visit_dtype<Set>(name, s.dtype(), [](auto) {});
  Elementwise e(name, out, {s}, s.dtype(), result);
  return e.run(kernel, "unary");
}

// floor/ceil/round/trunc: integers are already integral (a copy, or self in place).
Tensor rounding(const char* name, const char* kernel, const Tensor& out, const Tensor& s) {
  if (is_integral_type(s.dtype(), false)) {
    if (out.defined()) return out;
    return s.clone();
  }
  return typed_unary<unary_dtypes::kRounding>(name, kernel, out, s);
}

Tensor gelu_impl(const Tensor& s, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return typed_unary<unary_dtypes::kGelu>("gelu", approximate == "tanh" ? "gelu_tanh" : "gelu_erf",
                                          Tensor(), s);
}

Tensor nan_to_num_impl(const Tensor& s, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  if (!is_floating_type(s.dtype())) return s.clone();
  return visit_dtype<dtypes::kFloating>("nan_to_num", s.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    // Defaults: the largest and lowest finite values of the tensor's dtype, not of M.
    const double max = finite_max(s.dtype());
    Elementwise e("nan_to_num", Tensor(), {s}, s.dtype());
    return e.run("nan_to_num", "unary", static_cast<M>(nan.value_or(0.0)),
                 static_cast<M>(posinf.value_or(max)), static_cast<M>(neginf.value_or(-max)));
  });
}

Tensor neg_impl(const char* name, const Tensor& out, const Tensor& s) {
  check_neg(name, s.dtype());
  return typed_unary<unary_dtypes::kNeg>(name, "neg", out, s);
}

}  // namespace

#define XTEN_XPU_FLOAT_UNARY(name)                                                       \
  m.impl(#name, [](const Tensor& s) { return float_unary(#name, #name, Tensor(), s); }); \
  m.impl(#name "_", [](const Tensor& s) { return float_unary(#name "_", #name, s, s); });
#define XTEN_XPU_SAME_DTYPE_UNARY(name, Set)                                                  \
  m.impl(#name, [](const Tensor& s) { return typed_unary<Set>(#name, #name, Tensor(), s); }); \
  m.impl(#name "_", [](const Tensor& s) { return typed_unary<Set>(#name "_", #name, s, s); });

#define XTEN_XPU_ROUNDING(name)                                                       \
  m.impl(#name, [](const Tensor& s) { return rounding(#name, #name, Tensor(), s); }); \
  m.impl(#name "_", [](const Tensor& s) { return rounding(#name "_", #name, s, s); });
#define XTEN_XPU_PREDICATE(name)                                                    \
  m.impl(#name, [](const Tensor& s) {                                               \
    return typed_unary<unary_dtypes::kPredicate>(#name, #name, Tensor(), s, kBool); \
  });

LIBRARY_IMPL(xten, XPU, m) {
  XTEN_XPU_ROUNDING(floor)
  XTEN_XPU_ROUNDING(ceil)
  XTEN_XPU_ROUNDING(round)
  XTEN_XPU_ROUNDING(trunc)
  XTEN_XPU_PREDICATE(isnan)
  XTEN_XPU_PREDICATE(isinf)
  XTEN_XPU_PREDICATE(isfinite)
  XTEN_XPU_PREDICATE(logical_not)
  m.impl("logical_not_", [](const Tensor& s) {
    return typed_unary<unary_dtypes::kPredicate>("logical_not_", "logical_not", s, s, kBool);
  });
  m.impl("sign", [](const Tensor& s) {
    return typed_unary<unary_dtypes::kSign>("sign", "sign", Tensor(), s);
  });
  m.impl("sign_",
         [](const Tensor& s) { return typed_unary<unary_dtypes::kSign>("sign_", "sign", s, s); });
  m.impl("bitwise_not", [](const Tensor& s) {
    return typed_unary<unary_dtypes::kBitwiseNot>("bitwise_not", "bitwise_not", Tensor(), s);
  });
  m.impl("bitwise_not_", [](const Tensor& s) {
    return typed_unary<unary_dtypes::kBitwiseNot>("bitwise_not_", "bitwise_not", s, s);
  });
  m.impl("gelu", gelu_impl);
  m.impl("nan_to_num", nan_to_num_impl);
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
  XTEN_XPU_SAME_DTYPE_UNARY(abs, unary_dtypes::kAbs)
  XTEN_XPU_SAME_DTYPE_UNARY(relu, unary_dtypes::kRelu)
  m.impl("neg", [](const Tensor& s) { return neg_impl("neg", Tensor(), s); });
  m.impl("neg_", [](const Tensor& s) { return neg_impl("neg_", s, s); });
  m.impl("silu", [](const Tensor& s) {
    return typed_unary<unary_dtypes::kSilu>("silu", "silu", Tensor(), s);
  });
  m.impl("silu_",
         [](const Tensor& s) { return typed_unary<unary_dtypes::kSilu>("silu_", "silu", s, s); });
}

}  // namespace xten::xpu
