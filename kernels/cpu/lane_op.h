#pragma once
// The elementwise engine's op (kernels/cpu/loops.h: a scalar operator() and a `vec` form over
// Eigen arrays) for a lane function F: a struct with a scalar operator() and a `packetOp` that
// Eigen's unaryExpr / binaryExpr call a packet at a time (its functor_traits say PacketAccess).
// The lane functions of activation_pointwise.cpp and unary.cpp's nan_to_num share these.
#include <type_traits>
#include <utility>

namespace xten::cpu {

// F of one lane, and F's edges where it has them (Note [Vector math edges], loops.h).
template <class F>
struct LaneOp {
  F f;
  template <class M>
  M operator()(M x) const {
    return f(x);
  }
  template <class A>
  auto vec(const A& x) const {
    return x.unaryExpr(f);
  }
  template <class M, class G = F>
  auto edge(M x) const -> decltype(std::declval<const G&>().edge(x)) {
    return f.edge(x);
  }
};

// F of two lanes (g, x): the pointwise backwards.
template <class F>
struct LaneOp2 {
  F f;
  template <class M>
  M operator()(M g, M x) const {
    return f(g, x);
  }
  template <class A, class B>
  auto vec(const A& g, const B& x) const {
    return g.binaryExpr(x, f);
  }
};

}  // namespace xten::cpu
