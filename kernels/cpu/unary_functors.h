#pragma once
// The functors of the unary pointwise ops (a scalar form, and a vector form where Eigen has one),
// shared by the unary kernels (unary.cpp) and the compiler's fused loops (fused.cpp), so that a
// fused exp computes what the exp kernel computes, bit for bit. Only for the files compiled once
// per CPU capability level (Note [CPU capability]): the functors have internal linkage, so each
// level's copy keeps its own Eigen code.
#include <cmath>
#include <limits>

#include <unsupported/Eigen/SpecialFunctions>

#include <xten/kernels/cpu/capability.h>
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
// Note [Vector exp]: Eigen's float pexp (Cephes' reduction and polynomial) ends in its generic
// ldexp, which splits the exponent in four to reach 2^+-278 (ten vector ops of a pexp's ~25);
// the functions here only call the vector exp where its result is a normal float, so the
// polynomial is scaled by 2^m in one multiply (Eigen's pldexp_fast): the same values bit for
// bit over the range it is used for (|x| <= 87; 88 at the top), 25% faster. Callers declare
// what lies outside as an edge (Note [Vector math edges]). Double keeps Eigen's pexp.
template <class S>
struct VecExp {
  S operator()(const S& x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    if constexpr (std::is_same_v<S, float>) {
      // exp(x) = 2^m exp(r), m = round(x / ln 2), r = x - m ln 2 (ln 2 in two parts).
      const P xc = pmax(pmin(x, pset1<P>(88.723f)), pset1<P>(-88.723f));
      const P m = pfloor(pmadd(xc, pset1<P>(1.44269504088896341f), pset1<P>(0.5f)));
      P r = pmadd(m, pset1<P>(-0.693359375f), xc);
      r = pmadd(m, pset1<P>(2.12194440e-4f), r);
      const P r2 = pmul(r, r), r3 = pmul(r2, r);
      // Cephes' degree-7 polynomial for exp(r) on [-ln2/2, ln2/2], in two halves.
      P y = pmadd(pset1<P>(1.9875691500E-4f), r, pset1<P>(1.3981999507E-3f));
      P y1 = pmadd(pset1<P>(4.1665795894E-2f), r, pset1<P>(1.6666665459E-1f));
      y = pmadd(y, r, pset1<P>(8.3334519073E-3f));
      y1 = pmadd(y1, r, pset1<P>(5.0000001201E-1f));
      y = pmadd(y, r3, y1);
      y = pmadd(y, r2, padd(r, pset1<P>(1.0f)));
      return pldexp_fast_impl<P>::run(y, m);
    } else {
      return pexp(x);
    }
  }
};
}  // namespace
namespace Eigen::internal {
template <>
struct functor_traits<VecExp<float>> {
  enum { Cost = 20, PacketAccess = 1 };
};
template <>
struct functor_traits<VecExp<double>> {
  enum { Cost = 25, PacketAccess = packet_traits<double>::HasExp };
};
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
// The vector exp (VecExp, Note [Vector exp]) clamps its argument to +-88.72 (float) / +-709.78
// (double) and in float is exact only where the result is a normal number: where an op's exp
// argument is past kExpLimit (a margin inside the clamp), the scalar form is used (exp below
// -kExpLimit is subnormal or 0, which the clamp would not give). exp itself also sends what
// lies above kExpHigh and NaN to the scalar form.
template <class M>
constexpr M kExpLimit = sizeof(M) == 4 ? M(87.0) : M(708.0);
template <class M>
constexpr M kExpHigh = sizeof(M) == 4 ? M(88.0) : M(708.0);
XTEN_UNARY_EDGE_FUNCTOR(ExpOp, std::exp(x), x.unaryExpr(VecExp<S>{}),
                        !(x >= -kExpLimit<M>) | !(x <= kExpHigh<M>))  // `|`: vectorizes
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
// lanes, which the clamp may turn into numbers, take the scalar form too (`!(x >= c)`). Where -x
// is below -87 the vector exp may give 0 for a subnormal, which leaves 1 + exp(-x) at 1 as the
// subnormal would.
XTEN_UNARY_EDGE_FUNCTOR(SigmoidOp, M(1) / (M(1) + std::exp(-x)),
                        (S(1) + (-x).unaryExpr(VecExp<S>{})).inverse(), !(x >= -kExpLimit<M>))
XTEN_UNARY_EDGE_FUNCTOR(SiluOp, x / (M(1) + std::exp(-x)), x / (S(1) + (-x).unaryExpr(VecExp<S>{})),
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
    return x / (S(1) + (S(-2) * u<S>(x)).unaryExpr(VecExp<S>{}));
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

}  // namespace
}  // namespace xten::cpu
