#pragma once
// The lane-wise pairwise sum of float and double runs (Note [Summation accuracy] in
// kernels/cpu/reduce.cpp), shared by the sum kernels and the compiler's row epilogues
// (kernels/cpu/fused.cpp), so that a fused row sum is the sum kernel's value bit for bit. Only
// for the files compiled once per CPU capability level (Note [CPU capability]): internal
// linkage, each level's copy with its own vector width.
#include <cstdint>
#include <type_traits>

#include <immintrin.h>
#include <Eigen/Core>

#include <xten/core/half.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

// Float and double runs in steps of four vectors of Eigen's packet type at the level's width,
// each folded into its own accumulator: the loop LaneSum and LaneExtreme share.
template <class W>
struct VectorSteps {
  using P = typename Eigen::internal::packet_traits<W>::type;
  static constexpr int64_t kLanes = Eigen::internal::unpacket_traits<P>::size;
  static constexpr int64_t kStep = 4 * kLanes;

  // Whether a run of T loads as packets of W: W itself, and bfloat16 (every level) or float16
  // (F16C: the avx2 and avx512 levels) widened to float in registers, the values widen_n gives
  // (loops.h), so a 16-bit run is summed without a float buffer between.
  template <class T>
  static constexpr bool kLoads = std::is_same_v<T, W> ||
                                 (std::is_same_v<W, float> && (std::is_same_v<T, BFloat16>
#if defined(__F16C__)
                                                               || std::is_same_v<T, Half>
#endif
                                                               ));

  // kLanes values of p as a packet of W.
  template <class T>
  static P load(const T* p) {
    static_assert(kLoads<T>);
    if constexpr (std::is_same_v<T, W>) {
      return Eigen::internal::ploadu<P>(p);
#if defined(XTEN_SIXTEEN_IN_REGISTERS)
    } else if constexpr (kLanes == SixteenPackets::kLanes) {
      return SixteenPackets::load(p);
#endif
    } else {  // SSE2's four lanes: each bfloat16 becomes the high half of a 32-bit lane
      const __m128i h = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
      return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h));
    }
  }

  // a[k] = fold(a[k], the k-th vector of each step) over p[begin, end), a whole number of steps.
  template <class T, class Fold>
  static void fold_steps(const T* p, int64_t begin, int64_t end, P (&a)[4], Fold fold) {
    for (int64_t i = begin; i < end; i += kStep)
      for (int k = 0; k < 4; ++k) a[k] = fold(a[k], load(p + i + k * kLanes));
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
  template <class T>
  static P blocks(const T* p, int64_t n) {
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
  // dependent adds). T: W, or a 16-bit type that LaneSum::kLoads<T> (the same sum as of the run
  // widened first).
  template <class T>
  static W sum(const T* p, int64_t n) {
    using namespace Eigen::internal;
    const int64_t m = n / kStep * kStep;
    W tail = 0;
    int64_t i = m;
    if (n - m >= kLanes) {
      P acc = Map()(LaneSum::load(p + m));
      for (i = m + kLanes; i + kLanes <= n; i += kLanes)
        acc = padd(acc, Map()(LaneSum::load(p + i)));
      tail = predux(acc);
    }
    for (; i < n; ++i) tail += Map()(static_cast<W>(p[i]));
    return m ? predux(blocks(p, m)) + tail : tail;
  }
};

}  // namespace
}  // namespace xten::cpu
