#pragma once
// The lane-wise pairwise sum of float and double runs (Note [Summation accuracy] in
// kernels/cpu/reduce.cpp), shared by the sum kernels and the compiler's row epilogues
// (kernels/cpu/fused.cpp), so that a fused row sum is the sum kernel's value bit for bit. Only
// for the files compiled once per CPU capability level (Note [CPU capability]): internal
// linkage, each level's copy with its own vector width.
#include <cstdint>

#include <Eigen/Core>

namespace xten::cpu {
namespace {

// Float and double runs in steps of four vectors of Eigen's packet type at the level's width,
// each folded into its own accumulator: the loop LaneSum and LaneExtreme share.
template <class W>
struct VectorSteps {
  using P = typename Eigen::internal::packet_traits<W>::type;
  static constexpr int64_t kLanes = Eigen::internal::unpacket_traits<P>::size;
  static constexpr int64_t kStep = 4 * kLanes;

  // a[k] = fold(a[k], the k-th vector of each step) over p[begin, end), a whole number of steps.
  template <class Fold>
  static void fold_steps(const W* p, int64_t begin, int64_t end, P (&a)[4], Fold fold) {
    for (int64_t i = begin; i < end; i += kStep)
      for (int k = 0; k < 4; ++k) a[k] = fold(a[k], Eigen::internal::ploadu<P>(p + i + k * kLanes));
  }
};

// Float and double: the lane-wise pairwise sum of Note [Summation accuracy]. The leaves before it
// (Eigen's sum of 128 elements, a horizontal sum each, the halves in an order the compiler chose)
// took 3.0-8.3 ms for 16M floats on one core of the host, this 2.6-2.8 (bench/README.md, "The
// one-thread sum"). Map is applied to each element (and vector) before it is added: norm's |x|
// and x * x (LaneAbs, LaneSquare) are summed in the same order as the values themselves.
struct LaneIdentity {
  template <class X>
  X operator()(const X& x) const {
    return x;
  }
};
struct LaneAbs {
  template <class X>
  X operator()(const X& x) const {
    return Eigen::internal::pabs(x);
  }
};
struct LaneSquare {
  template <class X>
  X operator()(const X& x) const {
    return Eigen::internal::pmul(x, x);
  }
};

template <class W, class Map = LaneIdentity>
struct LaneSum : VectorSteps<W> {
  using typename VectorSteps<W>::P;
  using VectorSteps<W>::kLanes;
  using VectorSteps<W>::kStep;
  // A leaf: 16 steps, so each accumulator lane adds 16 elements in a row at every level (1,024
  // floats at AVX-512, 256 at the baseline's SSE).
  static constexpr int64_t kVectorLeaf = 16 * kStep;

  // n is a multiple of kStep.
  static P blocks(const W* p, int64_t n) {
    using namespace Eigen::internal;
    if (n <= kVectorLeaf) {
      const P zero = pset1<P>(W(0));
      P a[4] = {zero, zero, zero, zero};
      LaneSum::fold_steps(p, 0, n, a, [](const P& x, const P& y) { return padd(x, Map()(y)); });
      return padd(padd(a[0], a[1]), padd(a[2], a[3]));
    }
    // In memory order: the order of a call's arguments is unspecified (GCC took the right half
    // first, which walked a long run backwards block by block and defeated the hardware
    // prefetcher: 16M floats in 5.8-7.2 ms instead of 2.2-2.9 on the VM's one core).
    const int64_t half = (n / 2 + kStep - 1) / kStep * kStep;
    const P left = blocks(p, half);
    return padd(left, blocks(p + half, n - half));
  }

  // The whole steps pairwise (blocks); what is left, one vector accumulator and then one by one
  // (a short row, such as a 7 x 7 pooling window, is mostly tail: 49 floats at AVX-512 were 49
  // dependent adds).
  static W sum(const W* p, int64_t n) {
    using namespace Eigen::internal;
    const int64_t m = n / kStep * kStep;
    W tail = 0;
    int64_t i = m;
    if (n - m >= kLanes) {
      P acc = Map()(ploadu<P>(p + m));
      for (i = m + kLanes; i + kLanes <= n; i += kLanes) acc = padd(acc, Map()(ploadu<P>(p + i)));
      tail = predux(acc);
    }
    for (; i < n; ++i) tail += Map()(p[i]);
    return m ? predux(blocks(p, m)) + tail : tail;
  }
};

}  // namespace
}  // namespace xten::cpu
