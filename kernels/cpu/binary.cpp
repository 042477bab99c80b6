// Binary pointwise ops on CPU: arithmetic, comparisons, logical and bitwise ops, where,
// clamp, lerp. Each kernel states its dtype rule, then runs a functor through the
// elementwise engine (elementwise.h) with the typed loops of loops.h.
#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>

#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

// ---- functors (scalar form over the opmath type M; vec() where Eigen has one) -------------
struct AddOp {
  template <class M>
  M operator()(M a, M b) const {
    return wrap_add(a, b);
  }
  template <class A>
  auto vec(const A& a, const A& b) const {
    return a + b;
  }
};
template <class M>
struct AddAlphaOp {
  M alpha;
  M operator()(M a, M b) const { return wrap_add(a, wrap_mul(alpha, b)); }
  template <class A>
  auto vec(const A& a, const A& b) const {
    return a + alpha * b;
  }
};
struct SubOp {
  template <class M>
  M operator()(M a, M b) const {
    return wrap_sub(a, b);
  }
  template <class A>
  auto vec(const A& a, const A& b) const {
    return a - b;
  }
};
struct MulOp {
  template <class M>
  M operator()(M a, M b) const {
    return wrap_mul(a, b);
  }
  template <class A>
  auto vec(const A& a, const A& b) const {
    return a * b;
  }
};
struct BoolMulOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct DivOp {
  template <class M>
  M operator()(M a, M b) const {
    return a / b;
  }
  template <class A>
  auto vec(const A& a, const A& b) const {
    return a / b;
  }
};

// Integer division must not trap: x / 0 is a user error, INT_MIN / -1 wraps (as PyTorch).
template <class M>
void check_divisor(const char* op, M b) {
  if constexpr (std::is_integral_v<M>)
    XTEN_CHECK(b != 0, ValueError, op, "integer division by zero");
}
template <class M>
M int_div_trunc(M a, M b) {
  if constexpr (std::is_signed_v<M>) {
    if (b == -1) return wrap_neg(a);
  }
  return a / b;
}
template <class M>
M int_mod_trunc(M a, M b) {
  if constexpr (std::is_signed_v<M>) {
    if (b == -1) return 0;
  }
  return a % b;
}

struct DivTruncOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (std::is_integral_v<M>) {
      check_divisor("div", b);
      return int_div_trunc(a, b);
    } else {
      return std::trunc(a / b);
    }
  }
};
struct DivFloorOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (std::is_integral_v<M>) {
      check_divisor("div", b);
      const M q = int_div_trunc(a, b);
      return (int_mod_trunc(a, b) != 0 && ((a < 0) != (b < 0))) ? wrap_sub(q, M(1)) : q;
    } else {
      // Python's floor division: exact through fmod, then rounded to the nearest integer.
      if (b == 0) return a / b;
      const M mod = std::fmod(a, b);
      M div = (a - mod) / b;
      if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
      if (div == 0) return std::copysign(M(0), a / b);
      M fl = std::floor(div);
      if (div - fl > M(0.5)) fl += 1;
      return fl;
    }
  }
};
struct RemainderOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (std::is_integral_v<M>) {
      check_divisor("remainder", b);
      M r = int_mod_trunc(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r = wrap_add(r, b);
      return r;
    } else {
      M r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  }
};
struct FmodOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (std::is_integral_v<M>) {
      check_divisor("fmod", b);
      return int_mod_trunc(a, b);
    } else {
      return std::fmod(a, b);
    }
  }
};
struct PowOp {
  template <class M>
  M operator()(M base, M exp) const {
    if constexpr (std::is_integral_v<M>) {
      // Square-and-multiply in unsigned arithmetic: wraps like PyTorch, never overflows UB.
      if constexpr (std::is_signed_v<M>) {
        if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
      }
      using U = std::make_unsigned_t<std::conditional_t<sizeof(M) < 4, uint32_t, M>>;
      U result = 1, b = static_cast<U>(base);
      for (auto e = exp; e > 0; e >>= 1) {
        if (e & 1) result *= b;
        b *= b;
      }
      return static_cast<M>(result);
    } else {
      return std::pow(base, exp);
    }
  }
};
struct MaximumOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (!std::is_integral_v<M>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a > b ? a : b;
  }
};
struct MinimumOp {
  template <class M>
  M operator()(M a, M b) const {
    if constexpr (!std::is_integral_v<M>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a < b ? a : b;
  }
};
// Note [Float binary functions] (dispatch/ops.h): the functor of each FLOAT2 row, keyed by
// its handle; the kernels are generated at the bottom of this file.
template <class Handle>
struct FloatBinaryFn;
template <>
struct FloatBinaryFn<ops::atan2> {
  template <class M>
  M operator()(M a, M b) const {
    return std::atan2(a, b);
  }
};
template <>
struct FloatBinaryFn<ops::hypot> {
  template <class M>
  M operator()(M a, M b) const {
    return std::hypot(a, b);
  }
};
#define XTEN_COMPARE_OP(Name, expr_op)       \
  struct Name {                              \
    template <class M>                       \
    bool operator()(M a, M b) const {        \
      return a expr_op b;                    \
    }                                        \
    template <class A>                       \
    auto vec(const A& a, const A& b) const { \
      return a expr_op b;                    \
    }                                        \
  };
XTEN_COMPARE_OP(EqOp, ==)
XTEN_COMPARE_OP(NeOp, !=)
XTEN_COMPARE_OP(LtOp, <)
XTEN_COMPARE_OP(LeOp, <=)
XTEN_COMPARE_OP(GtOp, >)
XTEN_COMPARE_OP(GeOp, >=)
#undef XTEN_COMPARE_OP
// `&` and `|`, not `&&` and `||`: the short circuit is a branch, which random operands
// mispredict half the time (logical_and of two random [2048, 2048] bool tensors took 27 ms on
// one thread of the 16-core host, libtorch 0.8).
struct LogicalAndOp {
  template <class M>
  bool operator()(M a, M b) const {
    return (a != M(0)) & (b != M(0));
  }
};
struct LogicalOrOp {
  template <class M>
  bool operator()(M a, M b) const {
    return (a != M(0)) | (b != M(0));
  }
};
struct LogicalXorOp {
  template <class M>
  bool operator()(M a, M b) const {
    return (a != M(0)) != (b != M(0));
  }
};
struct BitAndOp {
  template <class M>
  M operator()(M a, M b) const {
    return static_cast<M>(a & b);
  }
};
struct BitOrOp {
  template <class M>
  M operator()(M a, M b) const {
    return static_cast<M>(a | b);
  }
};
struct BitXorOp {
  template <class M>
  M operator()(M a, M b) const {
    return static_cast<M>(a ^ b);
  }
};

// ---- the shared driver ------------------------------------------------------------------
// Runs `op` (a functor, or a callable making one per type) over (self, other) writing
// `out` (undefined: a new tensor). Set: the compute dtypes the op supports; R: bool for
// predicates, else the compute type.
template <uint32_t Set, bool kBoolResult, class MakeOp>
Tensor binary(const char* name, const Tensor& out, const Tensor& self, const Tensor& other,
              std::optional<ScalarType> compute, const MakeOp& make_op) {
  Elementwise e(name, out, {self, other});
  if (compute) e.compute_dtype(*compute);
  if (kBoolResult) e.result_dtype(kBool);
  e.prepare();
  return visit_dtype<Set>(name, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<kBoolResult, bool, T>;
    return e.run(make_loop<R, T, T>(make_op(tag)));
  });
}
template <class Op>
auto fixed(Op op) {
  return [op](auto) { return op; };
}

ScalarType promoted(const Tensor& a, const Tensor& b) {
  return result_type(a, b);
}

// ---- add / sub ----------------------------------------------------------------------------
Tensor add_impl(const char* name, const Tensor& out, const Tensor& self, const Tensor& other,
                const Scalar& alpha, bool negate) {
  const ScalarType t = add_sub_meta(name, self, other, alpha, negate);
  if (alpha.to_double() == 1.0) {
    if (negate)
      return binary<dtypes::kAllButBool, false>(name, out, self, other, t, fixed(SubOp{}));
    return binary<dtypes::kAll, false>(name, out, self, other, t, fixed(AddOp{}));
  }
  return binary<dtypes::kAll, false>(name, out, self, other, t, [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    const M a = negate ? -alpha.to<M>() : alpha.to<M>();
    return AddAlphaOp<M>{a};
  });
}
Tensor add_kernel(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl("add", Tensor(), a, b, alpha, false);
}
Tensor add__kernel(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl("add_", a, a, b, alpha, false);
}
Tensor sub_kernel(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl("sub", Tensor(), a, b, alpha, true);
}
Tensor sub__kernel(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return add_impl("sub_", a, a, b, alpha, true);
}

// ---- mul / div ----------------------------------------------------------------------------
Tensor mul_impl(const char* name, const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType t = promoted(a, b);
  if (t == kBool) return binary<dtypes::kBoolOnly, false>(name, out, a, b, t, fixed(BoolMulOp{}));
  return binary<dtypes::kAllButBool, false>(name, out, a, b, t, fixed(MulOp{}));
}
Tensor mul_kernel(const Tensor& a, const Tensor& b) {
  return mul_impl("mul", Tensor(), a, b);
}
Tensor mul__kernel(const Tensor& a, const Tensor& b) {
  return mul_impl("mul_", a, a, b);
}

Tensor div_impl(const char* name, const Tensor& out, const Tensor& a, const Tensor& b,
                const std::optional<std::string>& mode) {
  if (!mode)
    return binary<dtypes::kFloating, false>(name, out, a, b, true_div_meta(name, a, b),
                                            fixed(DivOp{}));
  const ScalarType t = div_mode_meta(name, a, b, *mode);
  if (*mode == "trunc")
    return binary<dtypes::kAllButBool, false>(name, out, a, b, t, fixed(DivTruncOp{}));
  return binary<dtypes::kAllButBool, false>(name, out, a, b, t, fixed(DivFloorOp{}));
}
Tensor div_kernel(const Tensor& a, const Tensor& b) {
  return div_impl("div", Tensor(), a, b, std::nullopt);
}
Tensor div__kernel(const Tensor& a, const Tensor& b) {
  return div_impl("div_", a, a, b, std::nullopt);
}
Tensor div_mode_kernel(const Tensor& a, const Tensor& b, std::optional<std::string> mode) {
  return div_impl("div", Tensor(), a, b, mode);
}
Tensor div__mode_kernel(const Tensor& a, const Tensor& b, std::optional<std::string> mode) {
  return div_impl("div_", a, a, b, mode);
}

Tensor remainder_kernel(const Tensor& a, const Tensor& b) {
  return binary<dtypes::kAllButBool, false>(
      "remainder", Tensor(), a, b, remainder_fmod_meta("remainder", a, b), fixed(RemainderOp{}));
}
Tensor fmod_kernel(const Tensor& a, const Tensor& b) {
  return binary<dtypes::kAllButBool, false>("fmod", Tensor(), a, b,
                                            remainder_fmod_meta("fmod", a, b), fixed(FmodOp{}));
}

// x * x as a unary op: one input read and widened, not the same tensor twice as a binary mul
// (bfloat16 pow(x, 2) was 0.49-0.62x libtorch, which squares one input).
struct SquareOp {
  template <class M>
  M operator()(M x) const {
    return x * x;
  }
  template <class A>
  auto vec(const A& x) const {
    return x * x;
  }
};

Tensor pow_impl(const char* name, const Tensor& out, const Tensor& base, const Tensor& exp) {
  const ScalarType t = pow_meta(name, base, exp);
  // pow(x, 2) is x * x, rounded once either way: the vectorized multiply instead of the C
  // library's pow element by element (50x slower than libtorch's, which squares too).
  if (is_wrapped_number(exp) && is_floating_type(t) && exp.item<double>() == 2.0) {
    Elementwise e(name, out, {base});
    e.compute_dtype(t);
    e.prepare();
    return visit_dtype<dtypes::kFloating>(name, e.compute(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      return e.run(make_loop<T, T>(SquareOp{}));
    });
  }
  return binary<dtypes::kAllButBool, false>(name, out, base, exp, t, fixed(PowOp{}));
}
Tensor pow_kernel(const Tensor& a, const Tensor& b) {
  return pow_impl("pow", Tensor(), a, b);
}
Tensor pow__kernel(const Tensor& a, const Tensor& b) {
  return pow_impl("pow_", a, a, b);
}

Tensor maximum_kernel(const Tensor& a, const Tensor& b) {
  return binary<dtypes::kAll, false>("maximum", Tensor(), a, b, std::nullopt, fixed(MaximumOp{}));
}
Tensor minimum_kernel(const Tensor& a, const Tensor& b) {
  return binary<dtypes::kAll, false>("minimum", Tensor(), a, b, std::nullopt, fixed(MinimumOp{}));
}
template <class Handle>
Tensor float_binary_kernel(const char* name, const Tensor& a, const Tensor& b) {
  return binary<dtypes::kFloating, false>(name, Tensor(), a, b, float_binary_meta(name, a, b),
                                          fixed(FloatBinaryFn<Handle>{}));
}

// ---- predicates -----------------------------------------------------------------------------
#define XTEN_PREDICATE_KERNEL(fn, name, Op)                                             \
  Tensor fn(const Tensor& a, const Tensor& b) {                                         \
    return binary<dtypes::kAll, true>(name, Tensor(), a, b, std::nullopt, fixed(Op{})); \
  }
XTEN_PREDICATE_KERNEL(eq_kernel, "eq", EqOp)
XTEN_PREDICATE_KERNEL(ne_kernel, "ne", NeOp)
XTEN_PREDICATE_KERNEL(lt_kernel, "lt", LtOp)
XTEN_PREDICATE_KERNEL(le_kernel, "le", LeOp)
XTEN_PREDICATE_KERNEL(gt_kernel, "gt", GtOp)
XTEN_PREDICATE_KERNEL(ge_kernel, "ge", GeOp)
XTEN_PREDICATE_KERNEL(logical_and_kernel, "logical_and", LogicalAndOp)
XTEN_PREDICATE_KERNEL(logical_or_kernel, "logical_or", LogicalOrOp)
XTEN_PREDICATE_KERNEL(logical_xor_kernel, "logical_xor", LogicalXorOp)
#undef XTEN_PREDICATE_KERNEL

#define XTEN_BITWISE_KERNEL(fn, name, Op)                                                          \
  Tensor fn(const Tensor& a, const Tensor& b) {                                                    \
    return binary<dtypes::kIntegralAndBool, false>(name, Tensor(), a, b, bitwise_meta(name, a, b), \
                                                   fixed(Op{}));                                   \
  }
XTEN_BITWISE_KERNEL(bitwise_and_kernel, "bitwise_and", BitAndOp)
XTEN_BITWISE_KERNEL(bitwise_or_kernel, "bitwise_or", BitOrOp)
XTEN_BITWISE_KERNEL(bitwise_xor_kernel, "bitwise_xor", BitXorOp)
#undef XTEN_BITWISE_KERNEL

// ---- where, clamp, lerp ---------------------------------------------------------------------
Tensor where_kernel(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_where_condition(cond);
  Elementwise e("where", Tensor(), {cond, a, b});
  e.keep_input_dtype(0).compute_dtype(result_type(a, b));
  e.prepare();
  return visit_dtype<dtypes::kAll>("where", e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    return e.run(
        make_loop<T, bool, T, T>([](bool c, M x, M y) { return branchless_select(c, x, y); }));
  });
}

// relu's backward (PyTorch's threshold_backward): grad where self > threshold, else 0, in one
// pass (the formula's where(self > 0, grad, 0) took three ops and a bool temporary).
Tensor threshold_backward_kernel(const Tensor& grad, const Tensor& self, const Scalar& threshold) {
  check_threshold_backward(grad, self);
  Elementwise e("threshold_backward", Tensor(), {grad, self});
  e.compute_dtype(grad.dtype());
  e.prepare();
  return visit_dtype<dtypes::kFloating>("threshold_backward", e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const M th = static_cast<M>(threshold.to_double());
    // As PyTorch: 0 where self <= threshold, so a NaN in self passes the gradient.
    return e.run(
        make_loop<T, T, T>([th](M g, M y) { return branchless_select(y <= th, M(0), g); }));
  });
}

// Note [Clamp in the vector]: clamp is max then min, in that order: y = x < lo ? lo : x, then
// y > hi ? hi : y. A missing bound is -inf / +inf (lowest / max for integers); NaN in x stays
// (both comparisons are false), lo > hi gives hi everywhere, as PyTorch's; a NaN bound makes
// every result NaN, which clamp_impl runs as its own op. The scalar form is branch-free, so the
// compiler vectorizes it (the branchy form ran 4M floats in 4.3 ms on the VM, 3.4x an add). The
// vector form is vmaxps then vminps, whose operand order keeps those selects bit for bit (each
// returns its second operand where either is NaN or both are zeros of either sign: Eigen's
// pmax(a, b) is vmaxps(b, a), so pmax(x, lo) gives x there); with it 16-bit runs take the
// register path (Note [16-bit runs in registers], kernels/cpu/loops.h). An earlier vector form
// of two compare-and-blend selects (and a NaN-bound test per packet) was slower than the
// scalar loop on the host at the avx512 level and no faster at avx2 (bench/README.md,
// 2026-12-04); max and min are one instruction each.
template <class S>
struct VecClamp {
  S lo, hi;
  S operator()(const S& x) const {
    const S y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    return pmin(pmax(x, pset1<P>(lo)), pset1<P>(hi));
  }
};
}  // namespace
}  // namespace xten::cpu
namespace Eigen::internal {
template <class S>
struct functor_traits<xten::cpu::VecClamp<S>> {
  enum { Cost = 2, PacketAccess = 1 };
};
}  // namespace Eigen::internal
namespace xten::cpu {
namespace {

template <class M>
struct ClampOp {
  M lo, hi;
  M operator()(M x) const {
    const M y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
  // Floating M only (make_loop asks for it there).
  template <class A>
  auto vec(const A& x) const {
    return x.unaryExpr(VecClamp<M>{lo, hi});
  }
};

Tensor clamp_impl(const char* name, const Tensor& out, const Tensor& self,
                  const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  Elementwise e(name, out, {self});
  e.compute_dtype(clamp_meta(name, self, lo, hi));
  e.prepare();
  return visit_dtype<dtypes::kAllButBool>(name, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    constexpr bool kFloat = !std::is_integral_v<M>;
    const M none_lo =
        kFloat ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::lowest();
    const M none_hi = kFloat ? std::numeric_limits<M>::infinity() : std::numeric_limits<M>::max();
    const M l = lo ? clamp_bound<M>(*lo) : none_lo, h = hi ? clamp_bound<M>(*hi) : none_hi;
    if (kFloat && (l != l || h != h))  // a NaN bound: every result NaN (Note [Clamp in the vector])
      return e.run(make_loop<T, T>([](M) { return std::numeric_limits<M>::quiet_NaN(); }));
    return e.run(make_loop<T, T>(ClampOp<M>{l, h}));
  });
}
Tensor clamp_kernel(const Tensor& self, const std::optional<Scalar>& lo,
                    const std::optional<Scalar>& hi) {
  return clamp_impl("clamp", Tensor(), self, lo, hi);
}
Tensor clamp__kernel(const Tensor& self, const std::optional<Scalar>& lo,
                     const std::optional<Scalar>& hi) {
  return clamp_impl("clamp_", self, self, lo, hi);
}

Tensor lerp_kernel(const Tensor& self, const Tensor& end, const Tensor& weight) {
  Elementwise e("lerp", Tensor(), {self, end, weight});
  e.compute_dtype(lerp_meta(self, end, weight));
  e.prepare();
  return visit_dtype<dtypes::kFloating>("lerp", e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    // PyTorch's two forms, each one fused multiply-add (as its vectorized CPU kernel), so that
    // results agree to the bit; weight 0 gives start and weight 1 gives end exactly.
    return e.run(make_loop<T, T, T, T>([](M s, M t, M w) {
      return std::abs(w) < M(0.5) ? std::fma(w, t - s, s) : std::fma(w - M(1), t - s, t);
    }));
  });
}

// self + value * tensor1 * tensor2 in opmath, as (value * t1) * t2 + self (PyTorch's order), so
// value 1 gives the bits of mul then add; integers wrap. One pass: batch_norm's per-channel
// scale and shift (kernels/composite/norm.cpp) were a broadcast mul and a broadcast add.
template <class M>
struct AddcmulOp {
  M value;
  M operator()(M s, M a, M b) const { return wrap_add(s, wrap_mul(wrap_mul(value, a), b)); }
  template <class A>
  auto vec(const A& s, const A& a, const A& b) const {
    return s + value * a * b;
  }
};

Tensor addcmul_kernel(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                      const Scalar& value) {
  const ScalarType t = addcmul_meta(self, tensor1, tensor2, value);
  Elementwise e("addcmul", Tensor(), {self, tensor1, tensor2});
  e.compute_dtype(t);
  e.prepare();
  return visit_dtype<dtypes::kAllButBool>("addcmul", e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    return e.run(make_loop<T, T, T, T>(AddcmulOp<M>{value.to<M>()}));
  });
}

}  // namespace

XTEN_CPU_KERNELS(binary, m) {
  m.impl("add.Tensor", add_kernel);
  m.impl("add_.Tensor", add__kernel);
  m.impl("sub.Tensor", sub_kernel);
  m.impl("sub_.Tensor", sub__kernel);
  m.impl("mul.Tensor", mul_kernel);
  m.impl("mul_.Tensor", mul__kernel);
  m.impl("div.Tensor", div_kernel);
  m.impl("div_.Tensor", div__kernel);
  m.impl("div.Tensor_mode", div_mode_kernel);
  m.impl("div_.Tensor_mode", div__mode_kernel);
  m.impl("remainder.Tensor", remainder_kernel);
  m.impl("fmod.Tensor", fmod_kernel);
  m.impl("pow.Tensor_Tensor", pow_kernel);
  m.impl("pow_.Tensor", pow__kernel);
  m.impl("maximum", maximum_kernel);
  m.impl("minimum", minimum_kernel);
#define XTEN_FLOAT2_KERNEL(kind, name, id, schema, Ret, params, args) \
  XTEN_FLOAT2_KERNEL_##kind(name, id)
#define XTEN_FLOAT2_KERNEL_FLOAT2(name, id)            \
  m.impl(#name, [](const Tensor& a, const Tensor& b) { \
    return float_binary_kernel<ops::id>(#name, a, b);  \
  });
#define XTEN_FLOAT2_KERNEL_FLOAT2_M XTEN_FLOAT2_KERNEL_FLOAT2
#define XTEN_FLOAT2_KERNEL_FN(name, id)
#define XTEN_FLOAT2_KERNEL_FN_M(name, id)
#define XTEN_FLOAT2_KERNEL_IN(name, id)
#define XTEN_FLOAT2_KERNEL_IN_M(name, id)
#define XTEN_FLOAT2_KERNEL_CUSTOM(name, id)
  XTEN_FORALL_OPS(XTEN_FLOAT2_KERNEL)
  m.impl("eq.Tensor", eq_kernel);
  m.impl("ne.Tensor", ne_kernel);
  m.impl("lt.Tensor", lt_kernel);
  m.impl("le.Tensor", le_kernel);
  m.impl("gt.Tensor", gt_kernel);
  m.impl("ge.Tensor", ge_kernel);
  m.impl("logical_and", logical_and_kernel);
  m.impl("logical_or", logical_or_kernel);
  m.impl("logical_xor", logical_xor_kernel);
  m.impl("bitwise_and.Tensor", bitwise_and_kernel);
  m.impl("bitwise_or.Tensor", bitwise_or_kernel);
  m.impl("bitwise_xor.Tensor", bitwise_xor_kernel);
  m.impl("where.self", where_kernel);
  m.impl("threshold_backward", threshold_backward_kernel);
  m.impl("clamp", clamp_kernel);
  m.impl("clamp_", clamp__kernel);
  m.impl("lerp.Tensor", lerp_kernel);
  m.impl("addcmul", addcmul_kernel);
}

}  // namespace xten::cpu
