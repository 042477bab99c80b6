// Unary pointwise ops on CPU. Float-valued ops (exp, sin, ...) compute integer and bool
// inputs in float32, as PyTorch does; rounding ops return integer inputs unchanged.
#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>

#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/loops.h>

// Note [Packet math behind fast math]: Eigen's packet_traits gate some float packet functions
// on EIGEN_FAST_MATH, which xten builds with off (CMakeLists.txt says why): at the AVX-512 level
// x.sqrt() and, at every level, x.tanh() then run one element at a time through the C library
// (2-core VM, 4M floats, one thread: sqrt 5.8 ms and tanh 69 ms, against 1.3 ms for an add;
// libtorch's tanh is 30x faster on the host). These functors call the packet functions
// themselves: psqrt, which with fast math off is the exact vector square root at every level,
// and for float ptanh, Eigen's rational approximation of tanh (docs/cpu_kernels.md, "Vector
// math"). Their NaN lanes go through the scalar form (TanhOp::edge).
namespace {
struct VecSqrt {
  template <class S>
  S operator()(const S& x) const {
    return std::sqrt(x);
  }
  template <class P>
  P packetOp(const P& x) const {
    return Eigen::internal::psqrt(x);
  }
};
template <class S>
struct VecTanh {
  S operator()(const S& x) const { return std::tanh(x); }
  template <class P>
  P packetOp(const P& x) const {
    return Eigen::internal::ptanh(x);
  }
};
}  // namespace
namespace Eigen::internal {
template <>
struct functor_traits<VecSqrt> {
  enum { Cost = 20, PacketAccess = 1 };
};
template <>
struct functor_traits<VecTanh<float>> {
  enum { Cost = 40, PacketAccess = 1 };
};
template <>
struct functor_traits<VecTanh<double>> {  // no packet tanh for double: the C library's
  enum { Cost = 40, PacketAccess = 0 };
};
}  // namespace Eigen::internal

namespace xten::cpu {
namespace {

// One functor per op: a scalar form over the opmath type and, where Eigen vectorizes it, vec()
// (in vec_expr, S is the vector's scalar type); a vector form that is wrong on some inputs also
// has edge(), and the loop recomputes those with the scalar form (Note [Vector math edges] in
// loops.h).
#define XTEN_UNARY_SCALAR_PART(scalar_expr) \
  template <class M>                        \
  M operator()(M x) const {                 \
    return scalar_expr;                     \
  }
#define XTEN_UNARY_VEC_PART(vec_expr)              \
  template <class A>                               \
  auto vec(const A& x) const {                     \
    using S [[maybe_unused]] = typename A::Scalar; \
    return vec_expr;                               \
  }
#define XTEN_UNARY_SCALAR_FUNCTOR(Name, scalar_expr) \
  struct Name {                                      \
    XTEN_UNARY_SCALAR_PART(scalar_expr)              \
  };
#define XTEN_UNARY_FUNCTOR(Name, scalar_expr, vec_expr) \
  struct Name {                                         \
    XTEN_UNARY_SCALAR_PART(scalar_expr)                 \
    XTEN_UNARY_VEC_PART(vec_expr)                       \
  };
#define XTEN_UNARY_EDGE_FUNCTOR(Name, scalar_expr, vec_expr, edge_expr) \
  struct Name {                                                         \
    XTEN_UNARY_SCALAR_PART(scalar_expr)                                 \
    XTEN_UNARY_VEC_PART(vec_expr)                                       \
    template <class M>                                                  \
    bool edge(M x) const {                                              \
      return edge_expr;                                                 \
    }                                                                   \
  };
// Eigen's vector exp clamps its argument to +-88.72 (float) / +-709.78 (double): where an op's exp
// argument is past kExpLimit (a margin inside the clamp), the scalar form is used (exp below
// -kExpLimit is subnormal or 0, which the clamp would not give).
template <class M>
constexpr M kExpLimit = sizeof(M) == 4 ? M(87.0) : M(708.0);
XTEN_UNARY_EDGE_FUNCTOR(ExpOp, std::exp(x), x.exp(), x < -kExpLimit<M>)
XTEN_UNARY_SCALAR_FUNCTOR(Exp2Op, std::exp2(x))
XTEN_UNARY_FUNCTOR(LogOp, std::log(x), x.log())
XTEN_UNARY_FUNCTOR(Log2Op, std::log2(x), x.log2())
XTEN_UNARY_FUNCTOR(Log10Op, std::log10(x), x.log10())
XTEN_UNARY_FUNCTOR(Log1pOp, std::log1p(x), x.log1p())
XTEN_UNARY_FUNCTOR(Expm1Op, std::expm1(x), x.expm1())
XTEN_UNARY_FUNCTOR(SqrtOp, std::sqrt(x), x.unaryExpr(VecSqrt{}))
XTEN_UNARY_SCALAR_FUNCTOR(RsqrtOp, M(1) / std::sqrt(x))
XTEN_UNARY_FUNCTOR(ReciprocalOp, M(1) / x, x.inverse())
XTEN_UNARY_FUNCTOR(SinOp, std::sin(x), x.sin())
XTEN_UNARY_FUNCTOR(CosOp, std::cos(x), x.cos())
XTEN_UNARY_FUNCTOR(TanOp, std::tan(x), x.tan())
// NaN lanes: the packet tanh clamps its input first.
XTEN_UNARY_EDGE_FUNCTOR(TanhOp, std::tanh(x), x.unaryExpr(VecTanh<S>{}), x != x)
// sigmoid and silu through the vector exp of exp(-x); where -x is past the vector exp's clamp
// (x < -87 in float, -708 in double) the scalar form gives the tiny or zero result, and NaN
// lanes, which the clamp may turn into numbers, take the scalar form too (`!(x >= c)`).
XTEN_UNARY_EDGE_FUNCTOR(SigmoidOp, M(1) / (M(1) + std::exp(-x)), (S(1) + (-x).exp()).inverse(),
                        !(x >= -kExpLimit<M>))
XTEN_UNARY_EDGE_FUNCTOR(SiluOp, x / (M(1) + std::exp(-x)), x / (S(1) + (-x).exp()),
                        !(x >= -kExpLimit<M>))
// Scalar: Eigen's vector erf is off by up to 7 ulp (float); the C library's is within 1.
XTEN_UNARY_SCALAR_FUNCTOR(ErfOp, std::erf(x))
XTEN_UNARY_FUNCTOR(FloorOp, std::floor(x), x.floor())
XTEN_UNARY_FUNCTOR(CeilOp, std::ceil(x), x.ceil())
XTEN_UNARY_FUNCTOR(RoundOp, std::nearbyint(x), x.rint())  // half to even
XTEN_UNARY_SCALAR_FUNCTOR(TruncOp, std::trunc(x))
XTEN_UNARY_FUNCTOR(NegOp, wrap_neg(x), -x)
XTEN_UNARY_SCALAR_FUNCTOR(AbsOp, x < 0 ? wrap_neg(x) : x)
// NaN in, NaN out (as PyTorch): `x < 0` is false for NaN, so NaN passes through.
XTEN_UNARY_SCALAR_FUNCTOR(ReluOp, static_cast<M>(x < 0 ? M(0) : x))
XTEN_UNARY_SCALAR_FUNCTOR(IdentityOp, x)
#undef XTEN_UNARY_FUNCTOR
#undef XTEN_UNARY_SCALAR_FUNCTOR
#undef XTEN_UNARY_EDGE_FUNCTOR
#undef XTEN_UNARY_SCALAR_PART
#undef XTEN_UNARY_VEC_PART

struct SignOp {
  template <class M>
  M operator()(M x) const {
    if constexpr (std::is_same_v<M, bool>)
      return x;
    else if constexpr (std::is_unsigned_v<M>)
      return static_cast<M>(x > 0);
    else if constexpr (std::is_integral_v<M>)
      return static_cast<M>((x > 0) - (x < 0));
    else
      return static_cast<M>((x > 0) - (x < 0));  // sign(NaN) = 0, as PyTorch
  }
};
// gelu's exact form, 0.5 x (1 + erf(x / sqrt(2))); NaN at both infinities, as PyTorch gives
// (docs/xpu_kernels.md, "Accuracy").
struct GeluErfOp {
  template <class M>
  M operator()(M x) const {
    if (std::isinf(x)) return std::numeric_limits<M>::quiet_NaN();
    return M(0.5) * x * (M(1) + std::erf(x * M(0.70710678118654752440)));
  }
};
// gelu's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), computed as
// x / (1 + exp(-2u)) (the same function: 1 + tanh(u) = 2 / (1 + exp(-2u))), which does not
// cancel where tanh(u) is near -1: for x below about -3 the first form's 1 + tanh(u) keeps a few
// bits in float, and rounds to 0 once tanh(u) rounds to -1. Where -2u is past the vector exp's
// clamp (x below about -9.4 in float) the scalar form gives the tiny result.
struct GeluTanhOp {
  // u(x) for a scalar (S = M) or an Eigen array of S.
  template <class S, class X>
  static auto u(const X& x) {
    return S(0.79788456080286535588) * (x + S(0.044715) * x * x * x);
  }
  template <class M>
  M operator()(M x) const {
    return x / (M(1) + std::exp(M(-2) * u<M>(x)));
  }
  template <class A>
  auto vec(const A& x) const {
    using S = typename A::Scalar;
    return x / (S(1) + (S(-2) * u<S>(x)).exp());
  }
  template <class M>
  bool edge(M x) const {
    return !(M(-2) * u<M>(x) <= kExpLimit<M>);  // and NaN
  }
};
struct IsNanOp {
  template <class M>
  bool operator()(M x) const {
    return x != x;
  }
};
struct IsInfOp {
  template <class M>
  bool operator()(M x) const {
    if constexpr (std::is_integral_v<M>)
      return false;
    else
      return std::isinf(x);
  }
};
struct IsFiniteOp {
  template <class M>
  bool operator()(M x) const {
    if constexpr (std::is_integral_v<M>)
      return true;
    else
      return std::isfinite(x);
  }
};
struct LogicalNotOp {
  template <class M>
  bool operator()(M x) const {
    return x == M(0);
  }
};
struct BitNotOp {
  template <class M>
  M operator()(M x) const {
    if constexpr (std::is_same_v<M, bool>)
      return !x;
    else
      return static_cast<M>(~x);
  }
};

// Runs `op` over self into `out` (undefined: new). The compute dtype: self's, or float32 for
// integral/bool inputs when `to_float`. `Set`: the compute dtypes the op supports.
template <uint32_t Set, bool kBoolResult = false, class Op>
Tensor unary(const char* name, const Tensor& out, const Tensor& self, const Op& op,
             bool to_float = false) {
  Elementwise e(name, out, {self});
  e.compute_dtype(to_float && !is_floating_type(self.dtype()) ? kFloat : self.dtype());
  if (kBoolResult) e.result_dtype(kBool);
  e.prepare();
  return visit_dtype<Set>(name, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<kBoolResult, bool, T>;
    return e.run(make_loop<R, T>(op));
  });
}

// Kernels: `name` for the functional form, `name_` writing into self.
#define XTEN_FLOAT_UNARY(name, Op)                                                \
  Tensor name##_kernel(const Tensor& s) {                                         \
    return unary<dtypes::kFloating>(#name, Tensor(), s, Op{}, /*to_float=*/true); \
  }                                                                               \
  Tensor name##__kernel(const Tensor& s) {                                        \
    return unary<dtypes::kFloating>(#name "_", s, s, Op{}, /*to_float=*/true);    \
  }
XTEN_FLOAT_UNARY(exp, ExpOp)
XTEN_FLOAT_UNARY(exp2, Exp2Op)
XTEN_FLOAT_UNARY(log, LogOp)
XTEN_FLOAT_UNARY(log2, Log2Op)
XTEN_FLOAT_UNARY(log10, Log10Op)
XTEN_FLOAT_UNARY(log1p, Log1pOp)
XTEN_FLOAT_UNARY(expm1, Expm1Op)
XTEN_FLOAT_UNARY(sqrt, SqrtOp)
XTEN_FLOAT_UNARY(rsqrt, RsqrtOp)
XTEN_FLOAT_UNARY(reciprocal, ReciprocalOp)
XTEN_FLOAT_UNARY(sin, SinOp)
XTEN_FLOAT_UNARY(cos, CosOp)
XTEN_FLOAT_UNARY(tan, TanOp)
XTEN_FLOAT_UNARY(tanh, TanhOp)
XTEN_FLOAT_UNARY(sigmoid, SigmoidOp)
XTEN_FLOAT_UNARY(erf, ErfOp)
#undef XTEN_FLOAT_UNARY

// Same dtype in and out, over the dtype set `Set`.
#define XTEN_SAME_DTYPE_UNARY(name, Set, Op)                                             \
  Tensor name##_kernel(const Tensor& s) { return unary<Set>(#name, Tensor(), s, Op{}); } \
  Tensor name##__kernel(const Tensor& s) { return unary<Set>(#name "_", s, s, Op{}); }
XTEN_SAME_DTYPE_UNARY(silu, unary_dtypes::kSilu, SiluOp)
XTEN_SAME_DTYPE_UNARY(abs, unary_dtypes::kAbs, AbsOp)
XTEN_SAME_DTYPE_UNARY(sign, unary_dtypes::kSign, SignOp)
XTEN_SAME_DTYPE_UNARY(relu, unary_dtypes::kRelu, ReluOp)
XTEN_SAME_DTYPE_UNARY(bitwise_not, unary_dtypes::kBitwiseNot, BitNotOp)
#undef XTEN_SAME_DTYPE_UNARY

Tensor neg_impl(const char* name, const Tensor& out, const Tensor& s) {
  check_neg(name, s.dtype());
  return unary<unary_dtypes::kNeg>(name, out, s, NegOp{});
}
Tensor neg_kernel(const Tensor& s) {
  return neg_impl("neg", Tensor(), s);
}
Tensor neg__kernel(const Tensor& s) {
  return neg_impl("neg_", s, s);
}

// Rounding: floating dtypes round; integer dtypes are already integral (a copy).
template <class Op>
Tensor round_impl(const char* name, const Tensor& out, const Tensor& s) {
  if (is_integral_type(s.dtype(), false))
    return unary<dtypes::kIntegral>(name, out, s, IdentityOp{});
  return unary<unary_dtypes::kRounding>(name, out, s, Op{});
}
#define XTEN_ROUNDING_UNARY(name, Op)                                                  \
  Tensor name##_kernel(const Tensor& s) { return round_impl<Op>(#name, Tensor(), s); } \
  Tensor name##__kernel(const Tensor& s) { return round_impl<Op>(#name "_", s, s); }
XTEN_ROUNDING_UNARY(floor, FloorOp)
XTEN_ROUNDING_UNARY(ceil, CeilOp)
XTEN_ROUNDING_UNARY(round, RoundOp)
XTEN_ROUNDING_UNARY(trunc, TruncOp)
#undef XTEN_ROUNDING_UNARY

Tensor logical_not_kernel(const Tensor& s) {
  return unary<unary_dtypes::kPredicate, true>("logical_not", Tensor(), s, LogicalNotOp{});
}
Tensor logical_not__kernel(const Tensor& s) {
  return unary<unary_dtypes::kPredicate, true>("logical_not_", s, s, LogicalNotOp{});
}
Tensor isnan_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isnan", Tensor(), s, IsNanOp{});
}
Tensor isinf_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isinf", Tensor(), s, IsInfOp{});
}
Tensor isfinite_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isfinite", Tensor(), s, IsFiniteOp{});
}

Tensor gelu_kernel(const Tensor& s, const std::string& approximate) {
  check_gelu_approximate(approximate);
  if (approximate == "tanh") return unary<unary_dtypes::kGelu>("gelu", Tensor(), s, GeluTanhOp{});
  return unary<unary_dtypes::kGelu>("gelu", Tensor(), s, GeluErfOp{});
}

template <class M>
struct NanToNumOp {
  M nan, posinf, neginf;
  M operator()(M x) const {
    return x != x                                     ? nan
           : x == std::numeric_limits<M>::infinity()  ? posinf
           : x == -std::numeric_limits<M>::infinity() ? neginf
                                                      : x;
  }
};
Tensor nan_to_num_kernel(const Tensor& s, std::optional<double> nan, std::optional<double> posinf,
                         std::optional<double> neginf) {
  if (!is_floating_type(s.dtype()))
    return unary<dtypes::kAll>("nan_to_num", Tensor(), s, IdentityOp{});
  return visit_dtype<dtypes::kFloating>("nan_to_num", s.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    // Defaults: the largest and lowest finite values of the tensor's dtype, not of M.
    const double max = finite_max(s.dtype());
    const NanToNumOp<M> op{static_cast<M>(nan.value_or(0.0)), static_cast<M>(posinf.value_or(max)),
                           static_cast<M>(neginf.value_or(-max))};
    Elementwise e("nan_to_num", Tensor(), {s});
    e.prepare();
    return e.run(make_loop<T, T>(op));
  });
}

}  // namespace

XTEN_CPU_KERNELS(unary, m) {
  m.impl("neg", neg_kernel);
  m.impl("neg_", neg__kernel);
  m.impl("abs", abs_kernel);
  m.impl("abs_", abs__kernel);
  m.impl("sign", sign_kernel);
  m.impl("sign_", sign__kernel);
  m.impl("exp", exp_kernel);
  m.impl("exp_", exp__kernel);
  m.impl("exp2", exp2_kernel);
  m.impl("exp2_", exp2__kernel);
  m.impl("log", log_kernel);
  m.impl("log_", log__kernel);
  m.impl("log2", log2_kernel);
  m.impl("log2_", log2__kernel);
  m.impl("log10", log10_kernel);
  m.impl("log10_", log10__kernel);
  m.impl("log1p", log1p_kernel);
  m.impl("log1p_", log1p__kernel);
  m.impl("expm1", expm1_kernel);
  m.impl("expm1_", expm1__kernel);
  m.impl("sqrt", sqrt_kernel);
  m.impl("sqrt_", sqrt__kernel);
  m.impl("rsqrt", rsqrt_kernel);
  m.impl("rsqrt_", rsqrt__kernel);
  m.impl("reciprocal", reciprocal_kernel);
  m.impl("reciprocal_", reciprocal__kernel);
  m.impl("sin", sin_kernel);
  m.impl("sin_", sin__kernel);
  m.impl("cos", cos_kernel);
  m.impl("cos_", cos__kernel);
  m.impl("tan", tan_kernel);
  m.impl("tan_", tan__kernel);
  m.impl("tanh", tanh_kernel);
  m.impl("tanh_", tanh__kernel);
  m.impl("sigmoid", sigmoid_kernel);
  m.impl("sigmoid_", sigmoid__kernel);
  m.impl("relu", relu_kernel);
  m.impl("relu_", relu__kernel);
  m.impl("silu", silu_kernel);
  m.impl("silu_", silu__kernel);
  m.impl("erf", erf_kernel);
  m.impl("erf_", erf__kernel);
  m.impl("floor", floor_kernel);
  m.impl("floor_", floor__kernel);
  m.impl("ceil", ceil_kernel);
  m.impl("ceil_", ceil__kernel);
  m.impl("round", round_kernel);
  m.impl("round_", round__kernel);
  m.impl("trunc", trunc_kernel);
  m.impl("trunc_", trunc__kernel);
  m.impl("logical_not", logical_not_kernel);
  m.impl("logical_not_", logical_not__kernel);
  m.impl("bitwise_not", bitwise_not_kernel);
  m.impl("bitwise_not_", bitwise_not__kernel);
  m.impl("isnan", isnan_kernel);
  m.impl("isinf", isinf_kernel);
  m.impl("isfinite", isfinite_kernel);
  m.impl("gelu", gelu_kernel);
  m.impl("nan_to_num", nan_to_num_kernel);
}

}  // namespace xten::cpu
