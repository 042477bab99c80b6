// The parameterized pointwise activations on CPU (leaky_relu, elu, softplus, hardswish) and their
// backward through the elementwise engine, each as a lane function with a vector form. A file of
// its own: in activation.cpp they grew the avx2 copy past what GCC inlines in one unit, and the
// copy then held AVX instances of shared inline functions (cpu_levels_isolated; Note [CPU
// capability]).
#include <algorithm>
#include <cmath>

#include <Eigen/Core>

#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/lane_op.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

// The parameterized activations as lane functions (a scalar form and a packet form that Eigen
// calls through unaryExpr): both select per lane without a branch. Written with `x > 0 ? a : b`
// and the C library's expm1 and log1p, one element at a time, they ran 0.06-0.18x libtorch's
// speed (bench/README.md, "bench_sweep"): a branch on the sign of random data mispredicts half
// the time. The comparisons are false for NaN, which then takes the second form and stays NaN.
// x > 0 ? x : slope x.
template <class S>
struct VecLeakyRelu {
  S slope;
  S operator()(const S& x) const { return branchless_select(x > S(0), x, x * slope); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(pzero(x), x), x, pmul(x, pset1<P>(slope)));
  }
};
// x > 0 ? scale x : scale alpha expm1(input_scale x) (scale_alpha = scale * alpha), with the
// vector expm1 (VecExpm1, Note [Vector expm1, exp2, log2, log10, tan]), whose edges (an argument
// above 88, NaN) take the scalar form.
template <class S>
struct VecElu {
  S scale, scale_alpha, input_scale;
  S operator()(const S& x) const {
    return x > S(0) ? scale * x : scale_alpha * std::expm1(x * input_scale);
  }
  bool edge(S x) const { return !(x * input_scale <= kExpHigh<S>); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P neg = pmul(pset1<P>(scale_alpha), VecExpm1{}.packetOp(pmul(x, pset1<P>(input_scale))));
    return pselect(pcmp_lt(pzero(x), x), pmul(x, pset1<P>(scale)), neg);
  }
};
// beta x > threshold ? x : log1p(exp(beta x)) / beta, as PyTorch. The vector form computes
// log1p(exp(b)) as max(b, 0) + log1p(exp(-|b|)), u = exp(-|b|) in (0, 1] from the vector exp and
// log1p(u) = log(w) - ((w - 1) - u) / w for w = 1 + u rounded (the second term puts back w's
// rounding; Eigen's packet log1p, a log and a division of its own, and the division by beta kept
// softplus at 0.6x libtorch's speed). Where beta x is below -87 the result is subnormal or 0, and
// above 88 (with a threshold that high) PyTorch's formula gives inf: the scalar form computes those
// (edge), as NaN.
template <class S>
struct VecSoftplus {
  S beta, threshold;
  S operator()(const S& x) const {
    return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
  }
  bool edge(S x) const {
    const S bx = x * beta;
    // `&` and `|`, not `&&` and `||`: the check is one vectorized pass (Note [Vector math edges]);
    // with the branches it ran element by element and took half of softplus's time.
    return !((bx >= -kExpLimit<S>)&((bx <= kExpHigh<S>) | (bx > threshold)));
  }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P one = pset1<P>(S(1)), bx = pmul(x, pset1<P>(beta));
    const P u = VecExp<S>{}.packetOp(pnegate(pabs(bx)));
    const P w = padd(one, u);
    // The correction is below an ulp of log(w): 1 / w to 2^-14 (NormalCdf::reciprocal: vrcp14ps
    // at the avx512 level) is plenty. beta = 1, the default, divides by nothing.
    const P log1p_u =
        psub(VecLog<S>{}.packetOp(w), pmul(psub(psub(w, one), u), NormalCdf::reciprocal(w)));
    const P sum = padd(pmax(bx, pzero(bx)), log1p_u);
    const P soft = beta == S(1) ? sum : pdiv(sum, pset1<P>(beta));
    return pselect(pcmp_lt(pset1<P>(threshold), bx), x, soft);
  }
};
// x min(max(x + 3, 0), 6) / 6; NaN stays NaN through the product with x.
template <class S>
struct VecHardswish {
  S operator()(const S& x) const { return x * std::min(std::max(x + S(3), S(0)), S(6)) / S(6); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P r = pmin(pmax(padd(x, pset1<P>(S(3))), pzero(x)), pset1<P>(S(6)));
    return pdiv(pmul(x, r), pset1<P>(S(6)));
  }
};

// Their derivatives times the incoming gradient g, as lane functions of (g, x) for the backward
// kernels. Written with ops (where, comparisons, products: 3-5 passes over memory) they ran at
// 0.15-0.4x libtorch's speed. The conditions are PyTorch's, NaN included: leaky_relu's and
// softplus's NaN x gives NaN, elu's and hardswish's pass g.
template <class S>
struct VecLeakyReluGrad {
  S slope;
  S operator()(const S& g, const S& x) const { return branchless_select(x > S(0), g, g * slope); }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(pzero(x), x), g, pmul(g, pset1<P>(slope)));
  }
};
// x <= 0 ? g input_scale scale alpha exp(input_scale x) : g scale; from the result y
// (is_result): x <= 0 ? g input_scale (y + scale alpha) : g scale.
template <class S>
struct VecEluGrad {
  S scale, scale_alpha, input_scale;
  bool is_result;
  S operator()(const S& g, const S& x) const {
    if (!(x <= S(0))) return g * scale;
    return is_result ? g * (input_scale * (x + scale_alpha))
                     : g * (input_scale * scale_alpha) * std::exp(x * input_scale);
  }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    const P neg = is_result ? pmul(g, pmul(pset1<P>(input_scale), padd(x, pset1<P>(scale_alpha))))
                            : pmul(pmul(g, pset1<P>(input_scale * scale_alpha)),
                                   VecExp<S>{}.packetOp(pmul(x, pset1<P>(input_scale))));
    return pselect(pcmp_le(x, pzero(x)), neg, pmul(g, pset1<P>(scale)));
  }
};
// beta x > threshold ? g : g z / (z + 1), z = exp(beta x) (PyTorch's form); NaN x gives NaN.
template <class S>
struct VecSoftplusGrad {
  S beta, threshold;
  S operator()(const S& g, const S& x) const {
    const S bx = x * beta, z = std::exp(bx);
    return bx > threshold ? g : g * z / (z + S(1));
  }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    const P bx = pmul(x, pset1<P>(beta));
    const P z = VecExp<S>{}.packetOp(bx);  // clamped at 88.7: z / (z + 1) is 1 there anyway
    const P r =
        pselect(pcmp_lt(pset1<P>(threshold), bx), g, pdiv(pmul(g, z), padd(z, pset1<P>(S(1)))));
    return pselect(pcmp_eq(x, x), r, x);
  }
};
// x <= -3 ? 0 : x < 3 ? g (x / 3 + 1/2) : g; NaN passes g.
template <class S>
struct VecHardswishGrad {
  S operator()(const S& g, const S& x) const {
    return x <= S(-3) ? S(0) : x < S(3) ? g * (x / S(3) + S(0.5)) : g;
  }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    const P mid = pmul(g, padd(pdiv(x, pset1<P>(S(3))), pset1<P>(S(0.5))));
    const P r = pselect(pcmp_lt(x, pset1<P>(S(3))), mid, g);
    return pselect(pcmp_le(x, pset1<P>(S(-3))), pzero(x), r);
  }
};

}  // namespace
}  // namespace xten::cpu

namespace Eigen::internal {
template <class S>
struct functor_traits<xten::cpu::VecLeakyRelu<S>> {
  enum { Cost = 3, PacketAccess = std::is_floating_point_v<S> };
};
template <class S>
struct functor_traits<xten::cpu::VecElu<S>> {
  enum { Cost = 40, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<xten::cpu::VecSoftplus<S>> {
  enum { Cost = 60, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<xten::cpu::VecHardswish<S>> {
  enum { Cost = 8, PacketAccess = std::is_floating_point_v<S> };
};
template <class S>
struct functor_traits<xten::cpu::VecLeakyReluGrad<S>> {
  enum { Cost = 3, PacketAccess = std::is_floating_point_v<S> };
};
template <class S>
struct functor_traits<xten::cpu::VecEluGrad<S>> {
  enum { Cost = 30, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<xten::cpu::VecSoftplusGrad<S>> {
  enum { Cost = 35, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<xten::cpu::VecHardswishGrad<S>> {
  enum { Cost = 10, PacketAccess = std::is_floating_point_v<S> };
};
}  // namespace Eigen::internal

namespace xten::cpu {
namespace {

// A pointwise activation over floating inputs, the functor built per opmath type.
template <class MakeOp>
Tensor activation(const char* op, const Tensor& self, const MakeOp& make) {
  Elementwise e(op, Tensor(), {self});
  e.prepare();
  return visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return e.run(make_loop<T, T>(make(TypeTag<opmath_t<T>>{})));
  });
}

Tensor leaky_relu_kernel(const Tensor& self, const Scalar& slope) {
  return activation("leaky_relu", self, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp<VecLeakyRelu<M>>{{slope.to<M>()}};
  });
}

Tensor elu_kernel(const Tensor& self, const Scalar& alpha, const Scalar& scale,
                  const Scalar& input_scale) {
  return activation("elu", self, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp<VecElu<M>>{{scale.to<M>(), scale.to<M>() * alpha.to<M>(), input_scale.to<M>()}};
  });
}

Tensor softplus_kernel(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  check_softplus_beta(beta);
  return activation("softplus", self, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp<VecSoftplus<M>>{{beta.to<M>(), threshold.to<M>()}};
  });
}

Tensor hardswish_kernel(const Tensor& self) {
  return activation("hardswish", self, [](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp<VecHardswish<M>>{{}};
  });
}

// A backward over (grad_output, x) of one floating dtype, the functor built per opmath type.
template <class MakeOp>
Tensor activation_backward(const char* op, const Tensor& grad, const Tensor& x,
                           const MakeOp& make) {
  Elementwise e(op, Tensor(), {grad, x});
  e.compute_dtype(grad.dtype());
  e.prepare();
  return visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return e.run(make_loop<T, T, T>(make(TypeTag<opmath_t<T>>{})));
  });
}

Tensor leaky_relu_backward_kernel(const Tensor& g, const Tensor& self, const Scalar& slope,
                                  bool self_is_result) {
  check_leaky_relu_backward(g, self, slope, self_is_result);
  return activation_backward("leaky_relu_backward", g, self, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp2<VecLeakyReluGrad<M>>{{slope.to<M>()}};
  });
}
Tensor elu_backward_kernel(const Tensor& g, const Scalar& alpha, const Scalar& scale,
                           const Scalar& input_scale, bool is_result, const Tensor& y_or_x) {
  check_pointwise_backward("elu_backward", g, y_or_x, "self_or_result");
  return activation_backward("elu_backward", g, y_or_x, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp2<VecEluGrad<M>>{
        {scale.to<M>(), scale.to<M>() * alpha.to<M>(), input_scale.to<M>(), is_result}};
  });
}
Tensor softplus_backward_kernel(const Tensor& g, const Tensor& self, const Scalar& beta,
                                const Scalar& threshold) {
  check_pointwise_backward("softplus_backward", g, self);
  check_softplus_beta(beta);
  return activation_backward("softplus_backward", g, self, [&](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp2<VecSoftplusGrad<M>>{{beta.to<M>(), threshold.to<M>()}};
  });
}
Tensor hardswish_backward_kernel(const Tensor& g, const Tensor& self) {
  check_pointwise_backward("hardswish_backward", g, self);
  return activation_backward("hardswish_backward", g, self, [](auto tag) {
    using M = typename decltype(tag)::type;
    return LaneOp2<VecHardswishGrad<M>>{{}};
  });
}

}  // namespace

XTEN_CPU_KERNELS(activation_pointwise, m) {
  m.impl("leaky_relu", leaky_relu_kernel);
  m.impl("elu", elu_kernel);
  m.impl("softplus", softplus_kernel);
  m.impl("hardswish", hardswish_kernel);
  m.impl("leaky_relu_backward", leaky_relu_backward_kernel);
  m.impl("elu_backward", elu_backward_kernel);
  m.impl("softplus_backward", softplus_backward_kernel);
  m.impl("hardswish_backward", hardswish_backward_kernel);
}

}  // namespace xten::cpu
