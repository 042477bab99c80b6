// XPU binary pointwise ops: add/sub (alpha), mul, div (true, trunc, floor), remainder, fmod,
// pow, atan2, maximum, minimum, comparisons, logical and bitwise ops, and where, clamp, lerp,
// with the CPU kernels' dtype rules and errors (kernels/cpu/binary.cpp). Kernels in
// binary.cl (clamp's in unary.cl).
#include <limits>
#include <type_traits>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/elementwise.h>

namespace xten::xpu {
namespace {

// Runs `kernel` with a value argument of the compute dtype's opmath type.
Tensor run_with_value(Elementwise& e, const char* kernel, const Scalar& value) {
  return visit_dtype<dtypes::kAll>("xpu", e.compute(), [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    return e.run(kernel, "binary", value.to<M>());
  });
}

Tensor add_impl(const char* name, const Tensor& out, const Tensor& self, const Tensor& other,
                const Scalar& alpha, bool negate) {
  const ScalarType t = add_sub_meta(name, self, other, alpha, negate);
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
  Elementwise e(name, out, {a, b}, true_div_meta(name, a, b));
  return run_with_value(e, "div", Scalar(0));
}

// Runs one of binary.cl's error-flag kernels (division with rounding, remainder, fmod). For
// integers a zero divisor sets the flag, which is read back after the launch (one
// synchronization) to raise the CPU's error as `error_op`.
Tensor run_flagged(Elementwise& e, const char* kernel, const char* error_op) {
  const Tensor flag = zeros({1}, TensorOptions().dtype(kInt).device(e.device()));
  Tensor out = e.run(kernel, "binary", flag.data_ptr());
  if (!is_floating_type(e.compute()))
    XTEN_CHECK(flag.item<int32_t>() == 0, ValueError, error_op, "integer division by zero");
  return out;
}

Tensor div_mode_impl(const char* name, const Tensor& out, const Tensor& a, const Tensor& b,
                     const std::optional<std::string>& mode) {
  if (!mode) return div_impl(name, out, a, b);
  Elementwise e(name, out, {a, b}, div_mode_meta(name, a, b, *mode));
  return run_flagged(e, *mode == "trunc" ? "div_trunc" : "div_floor", "div");
}

Tensor remainder_fmod(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b}, remainder_fmod_meta(name, a, b));
  return run_flagged(e, name, name);
}

Tensor pow_impl(const char* name, const Tensor& out, const Tensor& base, const Tensor& exp) {
  const ScalarType t = pow_meta(name, base, exp);
  // pow(x, 2) is x * x, rounded once either way (as on the CPU): OpenCL's pow under PoCL took
  // 100 ns an element, 400-700x the CPU's square in the XPU sweep (bench/README.md).
  if (is_wrapped_number(exp) && is_floating_type(t) && base.dtype() == t &&
      exp.item<double>() == 2.0)
    return mul_impl(name, out, base, base);
  Elementwise e(name, out, {base, exp}, t);
  return run_with_value(e, "pow", Scalar(0));
}

// A float binary function (Note [Float binary functions] in dispatch/ops.h): the kernel of the
// op's name in binary.cl's FLOAT_BINARY_FUNCTIONS.
Tensor float_binary_impl(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b}, float_binary_meta(name, a, b));
  return run_with_value(e, name, Scalar(0));
}

// An activation's pointwise backward (binary.cl's FLOAT_ACTIVATION_BACKWARDS) over the gradient
// g and the forward's input or output y (the callers run the CPU kernels' checks).
Tensor activation_backward(const char* name, const char* kernel, const Tensor& g, const Tensor& y,
                           const Scalar& value = 0) {
  Elementwise e(name, Tensor(), {g, y});
  return run_with_value(e, kernel, value);
}

Tensor logical(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b}, std::nullopt, kBool);
  return run_with_value(e, name, Scalar(0));
}

Tensor bitwise(const char* name, const Tensor& a, const Tensor& b) {
  Elementwise e(name, Tensor(), {a, b}, bitwise_meta(name, a, b));
  return run_with_value(e, name, Scalar(0));
}

Tensor where_impl(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_where_condition(cond);
  Elementwise e("where", Tensor(), {cond, a, b}, result_type(a, b), std::nullopt, /*keep=*/1);
  return e.run("where", "binary");
}

Tensor clamp_impl(const char* name, const Tensor& out, const Tensor& self,
                  const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Elementwise e(name, out, {self}, clamp_meta(name, self, lo, hi));
  return visit_dtype<dtypes::kAllButBool>(name, e.compute(), [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    // A missing bound is one that clamps nothing.
    const M none_lo = std::is_integral_v<M> ? std::numeric_limits<M>::lowest()
                                            : -std::numeric_limits<M>::infinity();
    const M none_hi =
        std::is_integral_v<M> ? std::numeric_limits<M>::max() : std::numeric_limits<M>::infinity();
    return e.run("clamp", "unary", lo ? clamp_bound<M>(*lo) : none_lo,
                 hi ? clamp_bound<M>(*hi) : none_hi, M(0));
  });
}

Tensor lerp_impl(const Tensor& self, const Tensor& end, const Tensor& weight) {
  Elementwise e("lerp", Tensor(), {self, end, weight}, lerp_meta(self, end, weight));
  return e.run("lerp", "binary");
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
  m.impl("div.Tensor_mode", [](const Tensor& a, const Tensor& b, std::optional<std::string> mode) {
    return div_mode_impl("div", Tensor(), a, b, mode);
  });
  m.impl("div_.Tensor_mode", [](const Tensor& a, const Tensor& b, std::optional<std::string> mode) {
    return div_mode_impl("div_", a, a, b, mode);
  });
  m.impl("remainder.Tensor",
         [](const Tensor& a, const Tensor& b) { return remainder_fmod("remainder", a, b); });
  m.impl("fmod.Tensor",
         [](const Tensor& a, const Tensor& b) { return remainder_fmod("fmod", a, b); });
  m.impl("pow.Tensor_Tensor",
         [](const Tensor& a, const Tensor& b) { return pow_impl("pow", Tensor(), a, b); });
  m.impl("pow_.Tensor", [](const Tensor& a, const Tensor& b) { return pow_impl("pow_", a, a, b); });
#define XTEN_XPU_FLOAT2_KERNEL(kind, name, id, schema, Ret, params, args) \
  XTEN_XPU_FLOAT2_KERNEL_##kind(name)
#define XTEN_XPU_FLOAT2_KERNEL_FLOAT2(name) \
  m.impl(#name, [](const Tensor& a, const Tensor& b) { return float_binary_impl(#name, a, b); });
#define XTEN_XPU_FLOAT2_KERNEL_FLOAT2_M XTEN_XPU_FLOAT2_KERNEL_FLOAT2
#define XTEN_XPU_FLOAT2_KERNEL_FN(name)
#define XTEN_XPU_FLOAT2_KERNEL_FN_M(name)
#define XTEN_XPU_FLOAT2_KERNEL_IN(name)
#define XTEN_XPU_FLOAT2_KERNEL_IN_M(name)
#define XTEN_XPU_FLOAT2_KERNEL_CUSTOM(name)
  XTEN_FORALL_OPS(XTEN_XPU_FLOAT2_KERNEL)
  m.impl("gelu_backward", [](const Tensor& g, const Tensor& x, const std::string& approximate) {
    check_gelu_backward(g, x, approximate);
    return activation_backward(
        "gelu_backward", approximate == "tanh" ? "gelu_backward_tanh" : "gelu_backward_erf", g, x);
  });
  m.impl("threshold_backward", [](const Tensor& g, const Tensor& y, const Scalar& threshold) {
    check_threshold_backward(g, y);
    return activation_backward("threshold_backward", "threshold_backward", g, y, threshold);
  });
  m.impl("sigmoid_backward", [](const Tensor& g, const Tensor& y) {
    check_pointwise_backward("sigmoid_backward", g, y, "output");
    return activation_backward("sigmoid_backward", "sigmoid_backward", g, y);
  });
  m.impl("tanh_backward", [](const Tensor& g, const Tensor& y) {
    check_pointwise_backward("tanh_backward", g, y, "output");
    return activation_backward("tanh_backward", "tanh_backward", g, y);
  });
  m.impl("silu_backward", [](const Tensor& g, const Tensor& x) {
    check_pointwise_backward("silu_backward", g, x);
    return activation_backward("silu_backward", "silu_backward", g, x);
  });
  m.impl("logical_and",
         [](const Tensor& a, const Tensor& b) { return logical("logical_and", a, b); });
  m.impl("logical_or",
         [](const Tensor& a, const Tensor& b) { return logical("logical_or", a, b); });
  m.impl("logical_xor",
         [](const Tensor& a, const Tensor& b) { return logical("logical_xor", a, b); });
  m.impl("bitwise_and.Tensor",
         [](const Tensor& a, const Tensor& b) { return bitwise("bitwise_and", a, b); });
  m.impl("bitwise_or.Tensor",
         [](const Tensor& a, const Tensor& b) { return bitwise("bitwise_or", a, b); });
  m.impl("bitwise_xor.Tensor",
         [](const Tensor& a, const Tensor& b) { return bitwise("bitwise_xor", a, b); });
  m.impl("where.self", where_impl);
  m.impl("clamp",
         [](const Tensor& s, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
           return clamp_impl("clamp", Tensor(), s, lo, hi);
         });
  m.impl("clamp_",
         [](const Tensor& s, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
           return clamp_impl("clamp_", s, s, lo, hi);
         });
  m.impl("lerp.Tensor", lerp_impl);
}

}  // namespace xten::xpu
