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
// math"). VecTanh keeps NaN lanes in the vector.
namespace {
// Whether P is the avx512 level's 16-float packet (asked through its traits: naming __m512 as a
// template argument makes GCC warn that the type's attributes are ignored).
template <class P>
constexpr bool is_packet16f() {
  using Traits = Eigen::internal::unpacket_traits<P>;
  return Traits::size == 16 && std::is_same_v<typename Traits::type, float>;
}
// c[0] t^(N-1) + ... + c[N-1] by Horner's rule, a packet at a time; horner16 at the avx512 level.
template <class P, size_t N>
P horner(const float (&c)[N], const P& t) {
  P q = Eigen::internal::pset1<P>(c[0]);
  for (size_t i = 1; i < N; ++i) q = Eigen::internal::pmadd(q, t, Eigen::internal::pset1<P>(c[i]));
  return q;
}
#if defined(__AVX2__)
// Note [Interval tables], below; the avx2 level's erf takes one of them too (VecErf::erf8).
struct IntervalTables {
#include <xten/kernels/cpu/interval_tables.inc>
};
// Whether P is the avx2 level's 8-float packet.
template <class P>
constexpr bool is_packet8f() {
  using Traits = Eigen::internal::unpacket_traits<P>;
  return Traits::size == 8 && std::is_same_v<typename Traits::type, float>;
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
// The avx2 level's form of Note [Interval tables]: 8 intervals of a = |x| = (k + t) / s, k from
// the shifter's low bits (k holds 0x4b400000 + k: vpermps reads the low 3 bits), each
// coefficient looked up with one vpermps over an 8-float row (AVX2 has no two-register permute).
struct Interval8 {
  __m256i k;
  __m256 t;
};
inline Interval8 interval8(const __m256& a, float s) {
  const __m256 shifter = _mm256_set1_ps(12582912.0f), scale = _mm256_set1_ps(s);
  const __m256 u = _mm256_fmadd_ps(a, scale, shifter);
  return {_mm256_castps_si256(u), _mm256_fmsub_ps(a, scale, _mm256_sub_ps(u, shifter))};
}
inline __m256 table_row8(const float (&row)[8], const __m256i& k) {
  return _mm256_permutevar8x32_ps(_mm256_load_ps(row), k);
}
// rows[0] t^(N-1) + ... + rows[N-1], each lane on its own interval.
template <size_t N, size_t R>
__m256 table_horner8(const float (&rows)[R][8], const Interval8& iv) {
  static_assert(N <= R);
  __m256 q = table_row8(rows[0], iv.k);
  for (size_t i = 1; i < N; ++i) q = _mm256_fmadd_ps(q, iv.t, table_row8(rows[i], iv.k));
  return q;
}
#endif
#if defined(__AVX512F__)
template <size_t N>
__m512 horner16(const float (&c)[N], const __m512& t) {
  __m512 q = _mm512_set1_ps(c[0]);
  for (size_t i = 1; i < N; ++i) q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(c[i]));
  return q;
}
// Note [Interval tables]: at the avx512 level erf, gelu and gelu_backward (float) evaluate a
// polynomial of low degree on one of 32 intervals of |x| instead of an exp and a rational form:
// a = |x| = (k + t) / s, k = round(a s) in 0..31, t = a s - k in [-0.5, 0.5] (exact for s = 8, to
// half an ulp of t otherwise), and each coefficient is looked up per lane with one vpermi2ps over
// a 32-float row held in two registers. The rows (interval_tables.inc) are written by
// tools/fit_interval_tables.cpp, which interpolates each function at Chebyshev points in long
// double and measures the kernels' formulas emulated in scalar float. k comes from a shifter:
// u = a s + 1.5 * 2^23 rounds a s to an integer held in u's low mantissa bits, which are the
// permute's index (it reads the low 5 bits of each lane); NaN and the infinities give some k and a
// NaN t, and each caller selects its own value for them. About 20 operations a packet where the
// exp-based forms take 35-38 (docs/cpu_kernels.md, "Vector math").
struct Interval16 {
  __m512i k;  // the interval, in the low 5 bits of each lane
  __m512 t;
};
inline Interval16 interval16(const __m512& a, float s) {
  const __m512 shifter = _mm512_set1_ps(12582912.0f), scale = _mm512_set1_ps(s);
  const __m512 u = _mm512_fmadd_ps(a, scale, shifter);
  const __m512 r = _mm512_sub_ps(u, shifter);
  return {_mm512_castps_si512(u), _mm512_fmsub_ps(a, scale, r)};
}
// Row `row` of a table, each lane's own interval's coefficient.
inline __m512 table_row16(const float (&row)[32], const __m512i& k) {
  return _mm512_permutex2var_ps(_mm512_load_ps(row), k, _mm512_load_ps(row + 16));
}
// rows[0] t^(N-1) + ... + rows[N-1] by Horner's rule, each lane on its own interval.
template <size_t N, size_t R>
__m512 table_horner16(const float (&rows)[R][32], const Interval16& iv) {
  static_assert(N <= R);
  __m512 q = table_row16(rows[0], iv.k);
  for (size_t i = 1; i < N; ++i) q = _mm512_fmadd_ps(q, iv.t, table_row16(rows[i], iv.k));
  return q;
}
#endif
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
// 1 / sqrt(x) for a result rounded to 16 bits (RsqrtOp::vec_rounded). At the avx512 level
// vrsqrt14ps (relative error below 2^-14) and one Newton step, y (3 - x y^2) / 2: relative error
// below 3e-7 against the 2^-18 that Note [Vector forms for 16-bit results] allows, two divider
// operations (vsqrtps, vdivps) fewer. Where the estimate is 0 or infinite (x infinite, 0 or -0)
// it is the answer itself and the step (inf * 0) is skipped; negative x and NaN give NaN. On one
// VM thread in cache: float16 0.21-0.28 -> 0.14 ns an element; bfloat16 0.17-0.22 -> 0.19-0.21
// (its rounding to 16 bits costs as much as the division saved). Other levels: the square root
// and the division, as vec().
struct VecRsqrtRounded {
  float operator()(const float& x) const { return 1.0f / std::sqrt(x); }
  template <class P>
  P packetOp(const P& x) const {
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) {
      // vrsqrt14ps takes no subnormal input (it gave -inf): those lanes are scaled by 2^24 and
      // their results by 2^12.
      const __mmask16 tiny =
          _mm512_cmp_ps_mask(x, _mm512_set1_ps(std::numeric_limits<float>::min()), _CMP_LT_OQ);
      const __m512 xs = _mm512_mask_mul_ps(x, tiny, x, _mm512_set1_ps(0x1p24f));
      const __m512 y = _mm512_rsqrt14_ps(xs);
      const __m512 h = _mm512_mul_ps(xs, _mm512_set1_ps(0.5f));
      const __m512 step =
          _mm512_mul_ps(y, _mm512_fnmadd_ps(h, _mm512_mul_ps(y, y), _mm512_set1_ps(1.5f)));
      // vfpclassps 0x1e: +0, -0, +inf, -inf.
      const __m512 r = _mm512_mask_blend_ps(_mm512_fpclass_ps_mask(y, 0x1e), step, y);
      return _mm512_mask_mul_ps(r, tiny, r, _mm512_set1_ps(0x1p12f));
    }
#endif
    using namespace Eigen::internal;
    return pdiv(pset1<P>(1.0f), psqrt(x));
  }
};
template <class S>
struct VecTanh {
  S operator()(const S& x) const { return std::tanh(x); }
  // NaN lanes keep x, selected in the vector (ptanh's clamp may turn NaN into +-1): a separate
  // edge check read each block a second time and was a fifth of tanh's time on the 16-core host
  // (bench/README.md).
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P t = ptanh(x);
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>())
      return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), t, x);
#endif
    return pselect(pcmp_eq(x, x), t, x);
  }
};
// relu in the vector as x & ~(x < 0): NaN and -0.0 pass through as in the scalar form (ReluOp).
// A vector form also sends 16-bit runs through the registers (Note [16-bit runs in registers]);
// the scalar loop left bfloat16 relu at 0.64-0.69x libtorch at the avx2 level (bench/README.md).
template <class S>
struct VecRelu {
  S operator()(const S& x) const { return x < 0 ? S(0) : x; }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    return pandnot(x, pcmp_lt(x, pzero(x)));
  }
};
// sin and cos (float): Eigen's psin/pcos (a Cody-Waite reduction by pi/2 with an exact
// fallback for huge arguments, then polynomials). Worst error found, every 97th float of the
// whole range and its negative against a double sin/cos: 1.49 ulp at the avx2 level. At the
// default level (no FMA) the reduction loses bits as |x| grows, 1.70 ulp up to 50 but 2.4 at
// 400, so SinOp and CosOp send |x| > 48 to the C library there (an edge). inf and NaN give NaN,
// sin(-0) is -0 (documented bound: 2 ulp, docs/cpu_kernels.md). The C library's, one element at
// a time everywhere, made sin 9-14x slower than libtorch's.
template <class S>
struct VecSin {
  S operator()(const S& x) const { return std::sin(x); }
  template <class P>
  P packetOp(const P& x) const {
    return Eigen::internal::psin(x);
  }
};
template <class S>
struct VecCos {
  S operator()(const S& x) const { return std::cos(x); }
  template <class P>
  P packetOp(const P& x) const {
    return Eigen::internal::pcos(x);
  }
};
// Note [Vector exp]: Eigen's float pexp (Cephes' reduction and polynomial) ends in its generic
// ldexp, which splits the exponent in four to reach 2^+-278 (ten vector ops of a pexp's ~25);
// the functions here only call the vector exp where its result is a normal float, so the
// polynomial is scaled by 2^m in one multiply (Eigen's pldexp_fast): the same values bit for
// bit over the range it is used for (|x| <= 87; 88 at the top), 25% faster. Callers declare
// what lies outside as an edge (Note [Vector math edges]). Double keeps Eigen's pexp.
// At the avx512 level the scaling is one vscalefps, which also gives inf past the top, 25% faster
// in cache. Results that would be subnormal are 0 there (x < -87.33, where the argument is
// clamped): vscalefps and vmulps take a microcode assist for each subnormal or underflowing
// result (4.2 ns a float in cache against 0.2), which a causal mask's -inf scores would hit in
// every diagonal tile. exp(x) itself computes the subnormals in the vector (with_subnormals:
// the assist only for a packet that has such a lane) and needs no edge pass (kExpWhole). Where
// the result is normal the values are those of the other levels, bit for bit (2^m is exact).
// Note [Exp in range]: exp itself below the avx512 level (VecExp::in_range) computes only
// -87 <= x <= 88 in the vector; its edge pass recomputes the rest with the scalar form, so the
// vector needs no clamps. Adding 1.5 * 2^23 + 127 to x / ln 2 (one FMA) rounds it to the nearest
// integer m in the sum's low mantissa bits, already biased by 127: m's float is the sum less that
// constant, and 2^m is the sum's bits shifted left by 23 (m + 127 lies in [1, 254] here, and the
// constant's own bits shift out). Two operations where a floor, a conversion, an add and a shift
// took four. exp(r) on |r| <= ln2 / 2 is a polynomial of degree 6 with the constant and linear
// terms 1, its other five coefficients fitted for this file (Lawson's iterated weighted least
// squares on Chebyshev points against a 40-digit exp, coefficients rounded to float): relative
// error 3.8e-9, one multiply-add fewer than Cephes' degree 7. 12 vector operations a packet where
// there were 15 (docs/cpu_kernels.md, "Vector math").
#if defined(__AVX512F__)
constexpr bool kExpWhole = true;
#else
constexpr bool kExpWhole = false;
#endif
template <class S>
struct VecExp {
  S operator()(const S& x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    if constexpr (std::is_same_v<S, float>) {
#if defined(__AVX512F__)
      if constexpr (scales_whole<P>()) {
        constexpr float kLowest = -87.33f;  // exp(kLowest) is still a normal float
        const P xc = pmax(pmin(x, pset1<P>(89.0f)), pset1<P>(kLowest));
        P m;
        const P e = from_reduced(reduce(xc, m), m);
        return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, pset1<P>(kLowest), _CMP_NLT_UQ), e);
      }
#endif
      const P xc = pmax(pmin(x, pset1<P>(88.723f)), pset1<P>(-88.723f));
      P m;
      return from_reduced(reduce(xc, m), m);
    } else {
      return pexp(x);
    }
  }
  // Whether this packet's 2^m scaling is one vscalefps (the avx512 level's full packet).
  template <class P>
  static constexpr bool scales_whole() {
#if defined(__AVX512F__)
    return is_packet16f<P>();
#else
    return false;
#endif
  }
  // exp(x) with subnormal results too, for exp itself at the avx512 level (ExpOp: no edge pass
  // there). Lanes whose 2^m is below 2^-125 are scaled by 2^(m + 24), normal, then by 2^-24 in
  // one rounding into the subnormals; that multiply, and its assist, runs only for a packet that
  // holds such a lane. The argument is clamped to [-104, 89] (0 and inf beyond; NaN passes).
  template <class P>
  static P with_subnormals(const P& x) {
#if defined(__AVX512F__)
    if constexpr (scales_whole<P>()) {
      using namespace Eigen::internal;
      const P xc = pmax(pmin(x, pset1<P>(89.0f)), pset1<P>(-104.0f));
      P m;
      const P y = polynomial(reduce(xc, m));
      const P low_m = pset1<P>(-125.0f);
      const __mmask16 low = _mm512_cmp_ps_mask(m, low_m, _CMP_LT_OQ);
      const P e = _mm512_scalef_ps(y, pmax(m, low_m));
      if (!low) return e;
      const P tiny = pmul(_mm512_scalef_ps(y, padd(m, pset1<P>(24.0f))), pset1<P>(0x1p-24f));
      return _mm512_mask_mov_ps(e, low, tiny);
    }
#endif
    return VecExp<float>{}.packetOp(x);
  }
  // exp(x) for -87 <= x <= 88 only, for ExpOp below the avx512 level, whose edge pass recomputes
  // every other lane (Note [Exp in range]). Lanes outside the range hold garbage (never a trap:
  // the scaling is integer operations).
  template <class P>
  static P in_range(const P& x) {
    P t;
    return scaled_in_range(reduce_in_range(x, t), t);
  }
  // exp(hi + lo) for hi in [-87, 88] and lo within an ulp of hi (its rounding error), as in_range
  // computes exp: lo joins the reduced argument, where it counts in full (added to hi first, it
  // would round away). NormalCdf's exp(-x^2 / 2), whose argument it keeps in range.
  template <class P>
  static P in_range_of_sum(const P& hi, const P& lo) {
    P t;
    return scaled_in_range(Eigen::internal::padd(reduce_in_range(hi, t), lo), t);
  }
  // exp(x) for x <= 88, and 0 where the result would not be a normal float (x below -87; -87.33
  // at the avx512 level, whose vector exp already gives 0 there). NaN stays NaN.
  template <class P>
  static P normal_or_zero(const P& x) {
    using namespace Eigen::internal;
    if constexpr (scales_whole<P>()) return VecExp{}.packetOp(x);
    const P limit = pset1<P>(-87.0f);
    return pandnot(VecExp{}.packetOp(pmax(x, limit)), pcmp_lt(x, limit));
  }
#if defined(__AVX512F__)
  // exp(u v) at the avx512 level, h being u v rounded (the caller may clamp it to [-87, 88]):
  // m = round(h / ln 2), r = u v - m ln2hi in one FMA, so the product's rounding error is in r
  // with no term of its own (m ln2hi is exact: m has 7 bits, ln2hi 9), then Cephes' polynomial
  // by Horner's rule and one vscalefps, which gives 0 in the lanes outside `keep`. NormalCdf
  // (Note [Normal cdf at the avx512 level]) and VecErf take exp(-x^2 / 2) and exp(-x^2) so.
  static __m512 of_product16(const __m512& u, const __m512& v, const __m512& h, __mmask16 keep) {
    const __m512 m = _mm512_roundscale_ps(_mm512_mul_ps(h, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(u, v, _mm512_mul_ps(m, _mm512_set1_ps(-0.693359375f)));
    r = _mm512_fmadd_ps(m, _mm512_set1_ps(2.12194440e-4f), r);
    // exp(r) = 1 + r (1 + r Q(r)), Q the polynomial's (below) higher terms.
    static constexpr float kQ[6] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                    4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 y = _mm512_fmadd_ps(_mm512_fmadd_ps(horner16(kQ, r), r, one), r, one);
    return _mm512_maskz_scalef_ps(keep, y, m);
  }
#endif

 private:
  friend struct VecExp2;
  // exp(x) = 2^m exp(r), m = round(x / ln 2), r = x - m ln 2 (ln 2 in two parts).
  template <class P>
  static P reduce(const P& x, P& m) {
    using namespace Eigen::internal;
    m = pfloor(pmadd(x, pset1<P>(1.44269504088896341f), pset1<P>(0.5f)));
    return minus_m_ln2(x, m);
  }
  // x - m ln 2, ln 2 as 0.693359375 (exact in 10 bits, so m * it is exact for |m| < 2^14) minus
  // 2.12194440e-4.
  template <class P>
  static P minus_m_ln2(const P& x, const P& m) {
    using namespace Eigen::internal;
    const P r = pmadd(m, pset1<P>(-0.693359375f), x);
    return pmadd(m, pset1<P>(2.12194440e-4f), r);
  }
  template <class P>
  static P from_reduced(const P& r, const P& m) {
    const P y = polynomial(r);
#if defined(__AVX512F__)
    if constexpr (scales_whole<P>()) return _mm512_scalef_ps(y, m);
#endif
    return Eigen::internal::pldexp_fast_impl<P>::run(y, m);
  }
  // in_range's reduction: r = x - m ln 2, and t, whose bits hold m + 127.
  template <class P>
  static P reduce_in_range(const P& x, P& t) {
    using namespace Eigen::internal;
    const P shifter = pset1<P>(0x1.8p23f + 127.0f);
    t = pmadd(x, pset1<P>(1.44269504088896341f), shifter);
    return minus_m_ln2(x, psub(t, shifter));
  }
  // exp(r) 2^m: exp(r) = 1 + r (1 + r q(r)), q of degree 4 (kInRange, highest term first), times
  // t's bits shifted into the exponent.
  template <class P>
  static P scaled_in_range(const P& r, const P& t) {
    using namespace Eigen::internal;
    using PI = typename unpacket_traits<P>::integer_packet;
    const P one = pset1<P>(1.0f);
    const P y = pmadd(pmadd(horner(kInRange, r), r, one), r, one);
    return pmul(y, preinterpret<P>(plogical_shift_left<23>(preinterpret<PI>(t))));
  }
  static constexpr float kInRange[5] = {1.3814589474e-03f, 8.3687175065e-03f, 4.1668388993e-02f,
                                        1.6666521132e-01f, 4.9999994040e-01f};
  template <class P>
  static P polynomial(const P& r) {
    using namespace Eigen::internal;
    // Cephes' degree-7 polynomial for exp(r) on [-ln2/2, ln2/2].
#if defined(__FMA__)
    // By Horner's rule: seven fused steps, each rounded once (worst exp error 0.88 ulp at the
    // avx2 level against 1.25 in two halves, and two operations fewer: docs/cpu_kernels.md).
    P y = pmadd(pset1<P>(1.9875691500E-4f), r, pset1<P>(1.3981999507E-3f));
    y = pmadd(y, r, pset1<P>(8.3334519073E-3f));
    y = pmadd(y, r, pset1<P>(4.1665795894E-2f));
    y = pmadd(y, r, pset1<P>(1.6666665459E-1f));
    y = pmadd(y, r, pset1<P>(5.0000001201E-1f));
    y = pmadd(y, r, pset1<P>(1.0f));
    return pmadd(y, r, pset1<P>(1.0f));
#else
    // Without FMA each pmadd rounds twice; in two halves the chain is shorter and expm1 (which
    // subtracts 1 from this) stays within its 1.5 ulp bound, which Horner's form does not.
    const P r2 = pmul(r, r), r3 = pmul(r2, r);
    P y = pmadd(pset1<P>(1.9875691500E-4f), r, pset1<P>(1.3981999507E-3f));
    P y1 = pmadd(pset1<P>(4.1665795894E-2f), r, pset1<P>(1.6666665459E-1f));
    y = pmadd(y, r, pset1<P>(8.3334519073E-3f));
    y1 = pmadd(y1, r, pset1<P>(5.0000001201E-1f));
    y = pmadd(y, r3, y1);
    return pmadd(y, r2, padd(r, pset1<P>(1.0f)));
#endif
  }
};
// float exp for every input (VecExp::with_subnormals): exp itself at the avx512 level.
struct VecExpWhole {
  float operator()(const float& x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    return VecExp<float>::with_subnormals(x);
  }
};
// exp(x) inside an op whose edge pass recomputes x > 87 and NaN (sigmoid and silu take exp(-x),
// gelu's tanh form exp(-2u); Note [Vector math edges]). Float below the avx512 level, where they
// have that pass: in_range's form with x clamped below at -87, whose exp(-87) = 1.6e-38 vanishes
// in the 1 + exp(x) these ops take, as the true value does. At the avx512 level (no edge pass
// for float: kExpWhole), and for double, the whole vector exp.
template <class S>
struct VecExpUnderEdge {
  S operator()(const S& x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    if constexpr (std::is_same_v<S, float> && !kExpWhole)
      return VecExp<float>::in_range(pmax(x, pset1<P>(-87.0f)));
    else
      return VecExp<S>{}.packetOp(x);
  }
};
// float exp for -87 <= x <= 88 (VecExp::in_range): exp itself below the avx512 level.
struct VecExpInRange {
  float operator()(const float& x) const { return std::exp(x); }
  template <class P>
  P packetOp(const P& x) const {
    return VecExp<float>::in_range(x);
  }
};
// Note [Vector log]: float log with the exponent and mantissa taken from the bits (Eigen's plog
// calls its generic frexp and clamps subnormal inputs to the smallest normal float, so log(1e-40)
// came out as -87.3 instead of -92.1). x = 2^e m, m in [sqrt(1/2), sqrt(2)); log(x) = e ln 2 +
// log1p(m - 1), the last from Cephes' degree-8 polynomial (f - f^2/2 + f^3 P(f)) and ln 2 in two
// parts, so e ln 2 adds no rounding of its own. Subnormals are scaled by 2^23 first (and 23 taken
// off e); 0 gives -inf, negatives and NaN NaN, +inf +inf, all selected in the vector, so the op
// needs no edge pass. Those selects run only for a packet that holds such a lane: at the avx512
// level each compare and select converts a mask both ways, and with them for every packet log
// took 1.7 ns a float in cache on the 16-core host (exp 0.45); without, 0.56. At the avx512 level
// the full packet takes e and m from vgetexpps / vgetmantps and every edge from one vfixupimmps,
// with no test at all (whole_packet: 0.31 -> 0.21 ns a float in cache). Worst error found:
// docs/cpu_kernels.md, "Vector math". Double keeps Eigen's plog (exact for normal doubles; a double
// subnormal takes the scalar form, LogOp::edge).
// kBase 2 and 10: log2 and log10 of floats from the same e and f (Note [Vector expm1, exp2, log2,
// log10, tan]).
template <class S, int kBase = 0>
struct VecLog {
  S operator()(const S& x) const {
    return kBase == 2 ? std::log2(x) : kBase == 10 ? std::log10(x) : std::log(x);
  }
  // log(x) = e ln 2 + log1p(f) for x = 2^e (1 + f), f in [sqrt(1/2) - 1, sqrt(2) - 1).
  // Inlined: called twice from packetOp, GCC otherwise kept them as calls (twice the time).
  template <class P>
  [[gnu::always_inline]] static P from_parts(const P& e, const P& f) {
    using namespace Eigen::internal;
    const P f2 = pmul(f, f), f3 = pmul(f2, f);
    P y = pmadd(pset1<P>(7.0376836292E-2f), f, pset1<P>(-1.1514610310E-1f));
    P y1 = pmadd(pset1<P>(-1.2420140846E-1f), f, pset1<P>(1.4249322787E-1f));
    P y2 = pmadd(pset1<P>(2.0000714765E-1f), f, pset1<P>(-2.4999993993E-1f));
    y = pmadd(y, f, pset1<P>(1.1676998740E-1f));
    y1 = pmadd(y1, f, pset1<P>(-1.6668057665E-1f));
    y2 = pmadd(y2, f, pset1<P>(3.3333331174E-1f));
    y = pmadd(y, f3, y1);
    y = pmadd(y, f3, y2);
    y = pmul(y, f3);
    if constexpr (kBase == 2) {
      // e + (f + y) log2(e), log2(e) in two parts: exact at powers of 2 (f = y = 0).
      y = pmadd(pset1<P>(-0.5f), f2, y);
      const P r = pmadd(f, pset1<P>(1.925962989e-8f), pmul(y, pset1<P>(1.44269504089f)));
      return padd(pmadd(f, pset1<P>(1.44269502163f), r), e);
    } else if constexpr (kBase == 10) {
      // e log10(2) + (f + y) log10(e), each constant in two parts (e log10(2)'s first exact).
      y = pmadd(pset1<P>(-0.5f), f2, y);
      P r = pmadd(f, pset1<P>(-1.0103050119e-8f), pmul(y, pset1<P>(0.434294481903f)));
      r = pmadd(e, pset1<P>(4.6050389811952e-6f), r);
      r = pmadd(f, pset1<P>(0.434294492f), r);
      return pmadd(e, pset1<P>(0.30102539062f), r);
    } else {
      y = pmadd(e, pset1<P>(-2.12194440e-4f), y);
      y = pmadd(pset1<P>(-0.5f), f2, y);
      return pmadd(e, pset1<P>(0.693359375f), padd(f, y));
    }
  }
  // e and f of a positive normal x (kLess: less is taken off e, 23 for a subnormal scaled by 2^23).
  // x's bits less those of `split` (the float just above sqrt(1/2)) hold e in their
  // high bits (an arithmetic shift), and their low 23 plus split's are m's: a mantissa at or
  // above split's gives m in [sqrt(1/2), 1) and e one more, a smaller one m in [1, sqrt(2)).
  // The same e and m, bit for bit, as halving m past sqrt(2) (whole_packet below), in five integer
  // and conversion steps where the compare and select took ten.
  template <bool kLess = false, class P>
  [[gnu::always_inline]] static P log_of_normal(const P& x, const P& less = P()) {
    using namespace Eigen::internal;
    using PI = typename unpacket_traits<P>::integer_packet;
    const PI split = pset1<PI>(0x3f3504f4);
    const PI ix = psub(preinterpret<PI>(x), split);
    P e = pcast<PI, P>(parithmetic_shift_right<23>(ix));
    if constexpr (kLess) e = psub(e, less);
    const P m = preinterpret<P>(padd(pand(ix, pset1<PI>(0x007fffff)), split));
    return from_parts(e, psub(m, pset1<P>(1.0f)));
  }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    if constexpr (std::is_same_v<S, float>) {
#if defined(__AVX512F__)
      if constexpr (VecExp<float>::scales_whole<P>()) return whole_packet(x);
#endif
      const P inf = pset1<P>(std::numeric_limits<float>::infinity());
      const P tiny = pset1<P>(std::numeric_limits<float>::min());
      // A packet of positive normal floats (nearly always) takes no selects for the edges:
      // each costs a mask conversion each way at the avx512 level. Negative and NaN lanes only
      // need NaN ORed in (log of randn: half the lanes, every packet; 1.15 -> 0.43 ns a float
      // in cache at avx512).
      if (!predux_any(por(pcmp_lt_or_nan(x, tiny), pcmp_le(inf, x)))) return log_of_normal(x);
      const P nan_lanes = pcmp_lt_or_nan(x, pzero(x));
      if (!predux_any(por(pandnot(pcmp_lt(x, tiny), nan_lanes), pcmp_eq(x, inf))))
        return por(log_of_normal(x), nan_lanes);
      const P sub = pcmp_lt(x, tiny);
      const P xn = pselect(sub, pmul(x, pset1<P>(8388608.0f)), x);  // 2^23
      P r = log_of_normal<true>(xn, pand(sub, pset1<P>(23.0f)));
      r = pselect(pcmp_eq(x, inf), inf, r);
      r = por(r, pcmp_lt_or_nan(x, pzero(x)));  // NaN
      return pselect(pcmp_eq(x, pzero(x)), pnegate(inf), r);
    } else {
      static_assert(kBase == 0, "log2 and log10 of doubles take the C library's");
      return plog(x);
    }
  }
#if defined(__AVX512F__)
  // The avx512 level's full packet: e and m from vgetexpps / vgetmantps, which take subnormals
  // as they are, and the edges (0, negative, inf, NaN) from one vfixupimmps on x's class. The
  // same e and f as log_of_normal (its m halved past sqrt(2)), so the same values bit for bit.
  static __m512 whole_packet(const __m512& x) {
    using namespace Eigen::internal;
    __m512 e = _mm512_getexp_ps(x);
    __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);  // [1, 2)
    const __mmask16 high = _mm512_cmp_ps_mask(m, pset1<__m512>(1.41421356237f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, high, m, pset1<__m512>(0.5f));
    e = _mm512_mask_add_ps(e, high, e, pset1<__m512>(1.0f));
    const __m512 r = from_parts(e, psub(m, pset1<__m512>(1.0f)));
    // One 4-bit token per class of x: QNaN -> x, SNaN -> quiet x, +-0 -> -inf, 1 -> r,
    // -inf -> NaN, +inf -> +inf, negative -> NaN, positive -> r.
    return _mm512_fixupimm_ps(r, x, _mm512_set1_epi32(0x03530421), 0);
  }
#endif
};
// Note [Vector expm1, exp2, log2, log10, tan]: float forms built on the vector exp, log, sin and
// cos above, where Eigen has a slow form (expm1: exp, log and a division) or none (tan, log10,
// exp2: the C library one element at a time, 0.05-0.25x libtorch's speed in the sweep).
// - expm1: below 1 in magnitude x + x^2 q(x), q the Taylor series of (e^x - 1 - x) / x^2 to
//   degree 9 (truncation below 2e-9 relative); elsewhere exp(x) - 1, whose subtraction scales
//   exp's error by at most e / (e - 1). Above 88 and NaN: the scalar form (edge); below -87 the
//   vector exp's 0 gives -1, as expm1 rounds to in float below -17.4.
// - exp2: 2^n exp(f ln 2), n = x rounded to an integer (the 1.5 * 2^23 trick), f = x - n exact,
//   |f ln 2| <= 0.35 (the vector exp's polynomial alone, no second reduction); 2^n from its
//   bits. Exact at integers. Outside [-126, 127] (subnormal or
//   infinite results) and NaN: the scalar form (edge).
// - log2, log10: VecLog<S, 2 or 10> (Note [Vector log]): e + log1p(f) log2(e), and e log10(2) +
//   log1p(f) log10(e) with the constants in two parts; the same edges as log, selected in the
//   vector. log2 is exact at powers of 2.
// - tan: with FMA, one reduction by pi/2 in three fused parts, Cephes' tanf polynomial, and
//   -1 / tan(r) for odd quadrants (|x| <= 8192; beyond, and NaN and the infinities, the scalar
//   form); at the default level sin / cos (VecSin, VecCos) with their edges.
// Worst errors found: docs/cpu_kernels.md, "Vector math"; test_cpu_unary checks them.
struct VecExpm1 {
  float operator()(const float& x) const { return std::expm1(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    static constexpr float kQ[10] = {
        2.5052108385e-8f, 2.7557319224e-7f, 2.7557319224e-6f, 2.4801587302e-5f, 1.9841269841e-4f,
        1.3888888889e-3f, 8.3333333333e-3f, 4.1666666667e-2f, 1.6666666667e-1f, 0.5f};
    P q = pset1<P>(kQ[0]);
    for (int i = 1; i < 10; ++i) q = pmadd(q, x, pset1<P>(kQ[i]));
    // x + x^2 q, its sign bit put back for x = -0 (where the sum gives +0).
    const P small = por(pmadd(pmul(x, x), q, x), pand(x, pset1frombits<P>(0x80000000u)));
    const P large = psub(VecExp<float>{}.packetOp(x), pset1<P>(1.0f));
    return pselect(pcmp_lt(pabs(x), pset1<P>(1.0f)), small, large);
  }
};
struct VecExp2 {
  float operator()(const float& x) const { return std::exp2(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    using PI = typename unpacket_traits<P>::integer_packet;
    const P magic = pset1<P>(12582912.0f);  // 1.5 * 2^23: x + magic rounds x to an integer
    const P n = psub(padd(x, magic), magic);
    const P f = psub(x, n);
    const P scale = preinterpret<P>(plogical_shift_left<23>(padd(pcast<P, PI>(n), pset1<PI>(127))));
    // exp(f ln 2) straight from the vector exp's polynomial: |f ln 2| <= ln 2 / 2 is its range.
    return pmul(VecExp<float>::polynomial(pmul(f, pset1<P>(0.69314718056f))), scale);
  }
};
struct VecTan {
  float operator()(const float& x) const { return std::tan(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
#if defined(__FMA__)
    // One reduction: r = x - n pi/2 (pi/2 in three parts, Eigen's for its sin and cos, each
    // product fused), tan(r) = r + r^3 Q(r^2) (Cephes' tanf coefficients) for |r| <= pi/4, and
    // -1 / tan(r) for odd n. Beyond kTanVectorMax, the scalar form (TanOp's edge).
    const P n = pround(pmul(x, pset1<P>(0.636619772368f)));
    P r = pmadd(n, pset1<P>(-1.57079601287841796875f), x);
    r = pmadd(n, pset1<P>(-3.13916473e-07f), r);
    r = pmadd(n, pset1<P>(-5.3903029534742383e-15f), r);
    const P z = pmul(r, r);
    P q = pmadd(pset1<P>(9.38540185543e-3f), z, pset1<P>(3.11992232697e-3f));
    q = pmadd(q, z, pset1<P>(2.44301354525e-2f));
    q = pmadd(q, z, pset1<P>(5.34112807005e-2f));
    q = pmadd(q, z, pset1<P>(1.33387994085e-1f));
    q = pmadd(q, z, pset1<P>(3.33331568548e-1f));
    const P t = pmadd(pmul(q, z), r, r);
    using PI = typename unpacket_traits<P>::integer_packet;
    const P odd = preinterpret<P>(pcmp_eq(pand(pcast<P, PI>(n), pset1<PI>(1)), pset1<PI>(1)));
    // +-0 gives itself (the reduction's sum makes -0 a +0).
    return pselect(pcmp_eq(x, pzero(x)), x, pselect(odd, pdiv(pset1<P>(-1.0f), t), t));
#else
    return pdiv(psin(x), pcos(x));
#endif
  }
};
// Note [Vector erf]: float erf without the C library (which computes one element at a time and
// made gelu's exact form 10-20x slower than libtorch's), within its 1-ulp bound. Three ranges of
// |x|, each computed for every lane and then selected (no branches); the polynomials were fitted
// for this file by iterated weighted least squares on Chebyshev points against a 40-digit erf:
// - below 0.75: erf(x) = x + x q(x^2), q(s) = P(s) - 1, P of degree 7 (relative error of
//   x P(x^2) 4e-13). The last step is a multiply-add of x and q onto x (fused where the level
//   has FMA), so q's own rounding counts little (|q| < 0.08). Up to 1.25 this form reached 1.45
//   ulp: there q's rounding is a larger share of the result.
// - 0.75 to 1.25: erf(|x|) = erf(1) + R(|x| - 1), erf(1) rounded to float and R of degree 7
//   (absolute error 5e-10); |R| < 0.14 keeps its rounding small against the result's ulp.
// - above 1.25: erf(|x|) = 1 - exp(-x^2) Q(|x|), Q = erfc(x) exp(x^2) of degree 10 in
//   (|x| - 2.625) / 1.375 (relative error 4e-8; Q is smooth and does not cancel). x^2's rounding
//   error is put back to first order (exp(-h - l) = exp(-h)(1 - l), l from an FMA). |x| is
//   clamped at 4, past which erf is 1 in float; so infinities give +-1.
// NaN fails both range compares, takes the first range and stays NaN. Double keeps the C
// library's erf. Worst errors over every float in [0, 4.5] and their negatives, measured against
// a double erf: docs/cpu_kernels.md, "Vector math"; test_cpu_unary's ErfWithinOneUlp samples them.
// The avx512 and avx2 levels take interval tables instead (erf16 and erf8, below).
template <class S>
struct VecErf {
  S operator()(const S& x) const { return std::erf(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    static_assert(std::is_same_v<S, float>, "VecErf's vector form is float only");
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return erf16(x);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (is_packet8f<P>()) return erf8(x);
#endif
    const P one = pset1<P>(1.0f);
    const P ax = pabs(x);
    // |x| < 0.75
    const P small = pmadd(x, horner(kSmall, pmul(x, x)), x);
    // 0.75 <= |x| <= 1.25
    const P mid = padd(pset1<P>(kErf1), horner(kMid, psub(ax, one)));
    // |x| > 1.25
    const P a = pmin(ax, pset1<P>(4.0f));
    const P r = horner(kBig, pmul(psub(a, pset1<P>(2.625f)), pset1<P>(1.0f / 1.375f)));
    const P h = pmul(a, a);
    const P l = pmadd(a, a, pnegate(h));  // 0 where pmadd is not fused
    const P e = pmul(VecExp<float>::in_range(pnegate(h)), psub(one, l));  // h <= 16
    const P big = psub(one, pmul(e, r));
    const P wide = pselect(pcmp_lt(pset1<P>(1.25f), ax), big, mid);
    const P signed_wide = pselect(pcmp_lt(x, pzero(x)), pnegate(wide), wide);
    return pselect(pcmp_le(pset1<P>(0.75f), ax), signed_wide, small);
  }
#if defined(__AVX512F__)
  // At the avx512 level erf(x) = x R(|x|), R(a) = erf(a) / a from 32 intervals of width 1/8
  // (Note [Interval tables]): R = hi + lo + t q(t), q of degree 3, and erf = x hi + x (lo + t q)
  // in one FMA, so the result has one rounding and hi's none (the first interval's hi is 1, which
  // keeps x (lo + t q) a normal number down to x = 1e-37). Past 3.9375 erf is +-1 in float, the
  // infinities too; NaN stays NaN (t is NaN). Worst error over every 7th float of [-3.9375,
  // 3.9375] 0.76 ulp (the three ranges': 0.785), about 19 operations where they took 36: in
  // cache on one VM thread 0.86-0.99 -> 0.29 ns a float (docs/cpu_kernels.md, "Vector math").
  static __m512 erf16(const __m512& x) {
    using T = IntervalTables;
    const __m512 ax = _mm512_abs_ps(x);
    const Interval16 iv = interval16(ax, 8.0f);
    const __m512 s = table_horner16<5>(T::kErfTable, iv);
    const __m512 r = _mm512_fmadd_ps(x, table_row16(T::kErfTable[5], iv.k), _mm512_mul_ps(x, s));
    // 1 | (x & sign) past the table
    const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    const __m512 unit = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(_mm512_set1_ps(1.0f)), _mm512_castps_si512(x), sign, 0xf8));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(ax, _mm512_set1_ps(3.9375f), _CMP_GE_OQ), r,
                                unit);
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  // Note [Erf at the avx2 level]: 8 intervals of |x| = a = (k + t) / s, s = 40 / 21 (so that
  // they reach 3.9375, past which erf is +-1 in float), each coefficient looked up with one
  // vpermps (AVX2 has no two-register permute; the index is the shifter's low bits, of which
  // vpermps reads 3). A width of 0.525 takes degree 7 where the avx512 level's 1/8 takes 4, and
  // the form changes with the interval: on intervals 0..kErfTable8OverA the table holds erf(a) / a
  // and erf = x hi + x (lo + t q) (relative accuracy down to the subnormals, as erf16); past them
  // it holds erf(a) and erf = +-(hi + (lo + t q)), because there t q is a large share of erf(a) /
  // a and its product with x would round at the result's scale (0.94 ulp with erf(a) / a
  // everywhere). One expression takes both: m = x or +-1, erf = m hi + m (lo + t q). Worst error
  // over every 7th float of the range 0.80 ulp (tools/fit_interval_tables.cpp --errors; the three
  // ranges': 0.78), about 27 operations where they take about 50 (docs/cpu_kernels.md, "Vector
  // math"). NaN stays NaN (t is NaN), the infinities give +-1. AVX2 only: the default level keeps
  // the three ranges (SSE has neither the permute nor FMA).
  static __m256 erf8(const __m256& x) {
    using T = IntervalTables;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const Interval8 iv = interval8(ax, 40.0f / 21.0f);
    constexpr size_t kLo = std::size(T::kErfTable8) - 2;  // rows c7..c1, lo, hi
    const __m256 s = table_horner8<kLo + 1>(T::kErfTable8, iv);
    const __m256 unit = _mm256_or_ps(_mm256_and_ps(x, sign), _mm256_set1_ps(1.0f));  // +-1
    const __m256i first_past = _mm256_set1_epi32(0x4b400000 + T::kErfTable8OverA + 1);
    const __m256 over_a = _mm256_castsi256_ps(_mm256_cmpgt_epi32(first_past, iv.k));
    const __m256 m = _mm256_blendv_ps(unit, x, over_a);
    const __m256 r =
        _mm256_fmadd_ps(m, table_row8(T::kErfTable8[kLo + 1], iv.k), _mm256_mul_ps(m, s));
    return _mm256_blendv_ps(r, unit, _mm256_cmp_ps(ax, _mm256_set1_ps(3.9375f), _CMP_GE_OQ));
  }
#endif
  // q(s) = P(s) - 1 below 0.75 (erf(x) = x + x q(x^2)); R(|x| - 1) from 0.75 to 1.25; Q(u) above.
  static constexpr float kSmall[8] = {
      -1.1660109352e-05f, 1.1768573795e-04f,  -8.5349041017e-04f,
      5.2236259680e-03f,  -2.6866120314e-02f, 1.1283791316e-01f,
      -3.7612638894e-01f, 1.2837916709e-01f};  // last: 2/sqrt(pi) - 1
  static constexpr float kMid[8] = {1.4861887134e-02f, 4.0289550192e-03f, -6.9169073416e-02f,
                                    6.9207172066e-02f, 1.3836885308e-01f, -4.1510777823e-01f,
                                    4.1510749919e-01f, 1.4057339686e-08f};
  static constexpr float kErf1 = 0.842700779438f;  // erf(1) in float
  static constexpr float kBig[11] = {2.4865212789e-05f,  -7.4801943615e-05f, 1.4642736517e-04f,
                                     -3.9649527115e-04f, 1.1226884821e-03f,  -2.9244456432e-03f,
                                     7.3426868523e-03f,  -1.7870319408e-02f, 4.1886958902e-02f,
                                     -9.4145657270e-02f, 2.0188755571e-01f};
};
// Note [Vector normal cdf]: gelu's exact form is x Phi(x) and its derivative Phi(x) + x phi(x),
// with Phi(x) = 0.5 erfc(-x / sqrt 2) and phi(x) = exp(-x^2 / 2) / sqrt(2 pi). Both come from one
// function of each lane instead of 0.5 (1 + erf(x / sqrt 2)) with erf's three ranges (Note
// [Vector erf]): 10-20% faster, and accurate for negative x, where 1 + erf cancels (15 ulp at
// x = -1, no correct digit below -5; libtorch's form cancels too):
// - c = Phi(-|x|) = 0.5 exp(-x^2 / 2) t P(t), t = 1 / (1 + p |x|), P of degree 8 fitted for this
//   file to erfc(|x| / sqrt 2) exp(x^2 / 2) / t (Lawson's iteration on Chebyshev points in t,
//   coefficients rounded to float one at a time and the rest refitted): relative error 3e-8
//   for |x| <= 13.2. Phi(x) is c for negative x and 1 - c otherwise, so the small tail keeps its
//   relative accuracy (Phi(-10) = 7.6e-24), where 1 + erf(x / sqrt 2) would cancel to noise.
// - x^2 / 2 enters the vector exp in two parts (VecExp::in_range_of_sum), its rounding error
//   taken from an FMA (or Dekker's split where the level has none): near x = -10 the rounded
//   x^2 / 2 alone is off by up to 2e-6, a relative error of 2e-6 in exp (30 ulp).
// - exp(-x^2 / 2) is phi's as well, so the derivative takes one exp, not two.
// - Past |x| = 13.2 (x^2 / 2 > 87, where exp leaves the normal floats) c and phi are 0, and
//   NaN stays NaN (t is NaN), as does an infinite x (t's correction step multiplies inf by 0).
//   The fitted P's factor 0.5 is folded into its coefficients. At the avx512 level t starts
//   from vrcp14ps, not a division. Worst error against a double gelu: docs/cpu_kernels.md,
//   "Vector math"; test_cpu_unary's GeluWithinItsUlpBound samples it. Float only.
struct NormalCdf {
  // Phi(x); *gauss gets exp(-x^2 / 2), 0 past the range.
  template <class P>
  static P eval(const P& x, P* gauss) {
    using namespace Eigen::internal;
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return eval16<true>(x, gauss);
#endif
    const P one = pset1<P>(1.0f);
    // t = 1 / (1 + p |x|) to within half an ulp: d's rounding error de and the division's
    // residual put back (near x = 0 an ulp of t is 2e-7 in x).
    const P ax = pabs(x), p = pset1<P>(kP);
    const P d = pmadd(p, ax, one), de = pmadd(p, ax, psub(one, d));
    const P t0 = reciprocal(d);
    const P t = pmadd(t0, pmadd(pnegate(t0), de, pmadd(pnegate(d), t0, one)), t0);
    const P q = horner(kC, t);
    // -x^2 / 2 = hi + lo, negative: -x / 2 is exact, so an FMA gives the product's rounding.
#ifdef EIGEN_VECTORIZE_FMA
    const P nx = pmul(x, pset1<P>(-0.5f));
    const P hi = pmul(x, nx), lo = pmadd(x, nx, pnegate(hi));
#else
    const P xh = pand(x, pset1frombits<P>(0xfffff000u)), xl = psub(x, xh);  // xh^2 is exact
    const P nhalf = pset1<P>(-0.5f);
    const P hi = pmul(pmul(xh, xh), nhalf), lo = pmul(pmul(xl, padd(x, xh)), nhalf);
#endif
    const P limit = pset1<P>(-87.0f);
    const P past = pcmp_lt(hi, limit);
    const P e = pandnot(VecExp<float>::in_range_of_sum(pmax(hi, limit), lo), past);
    if (gauss) *gauss = e;
    const P c = pmul(e, pmul(t, q));  // P's coefficients carry the 0.5
    return pselect(pcmp_lt(x, pzero(x)), c, psub(one, c));
  }
#if defined(__AVX512F__)
  // Note [Normal cdf at the avx512 level]: the same Phi as eval's with a third fewer operations
  // (38 a packet where the portable form compiles to about 50; in cache on one VM thread gelu
  // 0.42 -> 0.37 ns a float): negated products fused (fnmadd, fmsub), the tests in mask
  // registers (the lanes past the range zeroed by the scaling itself, Phi's 1 - c for x >= 0 a
  // masked subtraction), and exp(-x^2 / 2) reduced from the exact square: r = x (-x / 2) - m ln2hi
  // in one FMA (m ln2hi is exact: m has 7 bits, ln2hi 9), so x^2's rounding error needs no term
  // of its own, then Cephes' polynomial by Horner's rule. Within the same ulp bound as eval's
  // (docs/cpu_kernels.md, "Vector math"; worst found 4.89 ulp, eval's 5.04) and 15% faster; the
  // values differ from eval's in the last bit here and there. kFull false is the form for
  // results rounded to 16 bits (VecGeluErfRounded): t from one Newton step without d's rounding
  // error, and P of degree 6 (kC16).
  template <bool kFull>
  static Eigen::internal::Packet16f eval16(const __m512& x, __m512* gauss) {
    const __m512 one = _mm512_set1_ps(1.0f), p = _mm512_set1_ps(kP);
    const __m512 ax = _mm512_abs_ps(x);
    const __m512 d = _mm512_fmadd_ps(p, ax, one);
    const __m512 t0 = _mm512_rcp14_ps(d);
    __m512 t, q;
    if constexpr (kFull) {
      // t = t0 + t0 (1 - d t0 - de t0), as eval's.
      const __m512 de = _mm512_fmadd_ps(p, ax, _mm512_sub_ps(one, d));
      t = _mm512_fmadd_ps(t0, _mm512_fnmadd_ps(t0, de, _mm512_fnmadd_ps(d, t0, one)), t0);
      q = horner16(kC, t);
    } else {
      t = _mm512_fmadd_ps(t0, _mm512_fnmadd_ps(d, t0, one), t0);
      q = horner16(kC16, t);
    }
    const __m512 nx = _mm512_mul_ps(x, _mm512_set1_ps(-0.5f));
    const __m512 limit = _mm512_set1_ps(-87.0f);
    const __m512 h = _mm512_max_ps(_mm512_mul_ps(x, nx), limit);  // -x^2 / 2 rounded, clamped
    const __mmask16 inside = _mm512_cmp_ps_mask(h, limit, _CMP_GT_OQ);
    const __m512 e = VecExp<float>::of_product16(x, nx, h, inside);  // 0 past |x| = 13.2
    if (gauss) *gauss = e;
    const __m512 c = _mm512_mul_ps(e, _mm512_mul_ps(t, q));
    // NaN fails the compare and keeps c (NaN: t is NaN).
    const __mmask16 upper = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mask_sub_ps(c, upper, one, c);
  }
  // Note [Gelu from interval tables]: at the avx512 level, where every lane of a packet has
  // |x| < 5.90625, gelu and its derivative take tables of 32 intervals of width 3/16 (Note
  // [Interval tables]) instead of eval16's exp and rational form: c = Phi(-|x|) of degree 6, gelu
  // = x c below 0 and x - x c above (one rounding); the derivative's a phi(a) - Phi(-a) = E of
  // degree 6, Phi(x) + x phi(x) = -E below 0 and 1 + E above. Worst errors over every 7th float
  // of the range: gelu 2.66 ulp (eval16's 4.89), the derivative 2.06 of the size of its terms
  // (4.43); about 20 operations where eval16 takes 38. A packet with a lane past the range (or
  // NaN, or an infinity) computes eval16 as well and takes its value in those lanes only, so each
  // lane's result depends on its own x alone (a shape, a stride or a fused loop that groups the
  // elements otherwise gives the same bits); the branch is on the packet, so data inside +-5.9
  // (a unit normal leaves it once in 3e8) pays nothing for the tails.
  static constexpr float kTableScale = 16.0f / 3.0f, kTableEnd = 5.90625f;
  // The lanes inside the tables (NaN is not).
  static __mmask16 in_tables16(const __m512& ax) {
    return _mm512_cmp_ps_mask(ax, _mm512_set1_ps(kTableEnd), _CMP_LT_OQ);
  }
  // x Phi(x) for |x| < kTableEnd.
  static __m512 gelu_table16(const __m512& x, const __m512& ax) {
    const __m512 c =
        table_horner16<7>(IntervalTables::kLowerTailTable, interval16(ax, kTableScale));
    const __mmask16 upper = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 r = _mm512_mask_fnmadd_ps(c, upper, x, x);  // x - x c above 0, c below
    return _mm512_mask_mul_ps(r, _knot_mask16(upper), r, x);
  }
  // gelu at the avx512 level: the tables, and eval16<kFull> in the lanes outside them.
  template <bool kFull>
  static __m512 gelu16(const __m512& x) {
    const __m512 ax = _mm512_abs_ps(x), fast = gelu_table16(x, ax);
    const __mmask16 inside = in_tables16(ax);
    if (inside == 0xffff) return fast;
    return _mm512_mask_blend_ps(inside, _mm512_mul_ps(x, eval16<kFull>(x, nullptr)), fast);
  }
  // g (Phi(x) + x phi(x)) for |x| < kTableEnd.
  static __m512 gelu_grad_table16(const __m512& g, const __m512& x, const __m512& ax) {
    const __m512 e = table_horner16<7>(IntervalTables::kGeluGradTable, interval16(ax, kTableScale));
    const __mmask16 upper = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
    // 1 + e above 0, -e below; then times g, as the exp form (so that g times
    // gelu_backward(1, x) is gelu_backward(g, x) to the bit, as the compiler's graphs assume).
    const __m512 d =
        _mm512_mask_add_ps(_mm512_sub_ps(_mm512_setzero_ps(), e), upper, e, _mm512_set1_ps(1.0f));
    return _mm512_mul_ps(g, d);
  }
#endif
#if defined(__AVX2__) && defined(__FMA__)
  // Note [Gelu at the avx2 level]: Note [Gelu from interval tables] with tables of 8 intervals
  // (one vpermps a coefficient, as erf8): c = Phi(-|x|) and E = a phi(a) - Phi(-a) of degree 7,
  // on intervals of width 1/2 up to 3.75 (a = (k + t) / 2) and, past them, of width 1/4 up to
  // 5.75 (a = 3.875 + (k + t) / 4; y = 4a - 15.5 is exact, k and t come from y): one table of
  // width 1/2 would lose float's accuracy in Phi's tail (the polynomial's terms grow larger than
  // its value: 8 ulp at 4.7 with width 0.625), and 16 intervals cost two permutes and a blend a
  // coefficient. A packet inside 3.75 takes the near table alone (about 25 operations where the
  // exp form takes about 50); one with a lane from 3.75 to 5.75 takes both, a blend a
  // coefficient (about 45); one with a lane past 5.75, NaN or an infinity computes the exp form
  // (`slow`) as well and takes it in those lanes only. Each lane's value depends on its own x
  // alone (the blends select, they do not round). Worst errors over every 7th float
  // (tools/fit_interval_tables.cpp --errors): gelu 2.80 ulp below 3.75 and 3.90 from 3.75 to
  // 5.75, the derivative 1.85 and 1.39 of the size of its terms (the exp form's at this level:
  // 5.56 and 4.43).
  static constexpr float kNearEnd8 = 3.75f, kTableEnd8 = 5.75f;
  static __m256 in_tables8(const __m256& ax) {  // all ones in the lanes inside (NaN is not)
    return _mm256_cmp_ps(ax, _mm256_set1_ps(kTableEnd8), _CMP_LT_OQ);
  }
  // The near table's polynomial at a = ax, or where `far` (a lane at 3.75 or more) each lane's
  // own table's.
  template <size_t R>
  static __m256 tables8(const float (&near)[R][8], const float (&far_rows)[R][8], const __m256& ax,
                        bool far) {
    const Interval8 iv = interval8(ax, 2.0f);
    if (!far) return table_horner8<R>(near, iv);
    const __m256 shifter = _mm256_set1_ps(12582912.0f);
    const __m256 y = _mm256_fmadd_ps(ax, _mm256_set1_ps(4.0f), _mm256_set1_ps(-15.5f));
    const __m256 u = _mm256_add_ps(y, shifter);
    const __m256 is_far = _mm256_cmp_ps(ax, _mm256_set1_ps(kNearEnd8), _CMP_GE_OQ);
    const __m256i k = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(iv.k), u, is_far));
    const __m256 t = _mm256_blendv_ps(iv.t, _mm256_sub_ps(y, _mm256_sub_ps(u, shifter)), is_far);
    const auto row = [&](size_t i) {
      return _mm256_blendv_ps(table_row8(near[i], k), table_row8(far_rows[i], k), is_far);
    };
    __m256 q = row(0);
    for (size_t i = 1; i < R; ++i) q = _mm256_fmadd_ps(q, t, row(i));
    return q;
  }
  static bool any_far8(const __m256& ax) {
    return _mm256_movemask_ps(_mm256_cmp_ps(ax, _mm256_set1_ps(kNearEnd8), _CMP_LT_OQ)) != 0xff;
  }
  // x Phi(x) for |x| < kTableEnd8: x - x c above 0 (one rounding), x c below; the exp form
  // (`slow`) in the lanes outside.
  template <class Slow>
  static __m256 gelu8(const __m256& x, Slow slow) {
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const bool far = any_far8(ax);
    const __m256 c =
        tables8(IntervalTables::kLowerTailTable8, IntervalTables::kLowerTailTable8Far, ax, far);
    const __m256 upper = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256 fast = _mm256_blendv_ps(_mm256_mul_ps(x, c), _mm256_fnmadd_ps(x, c, x), upper);
    if (!far) return fast;
    const __m256 inside = in_tables8(ax);
    if (_mm256_movemask_ps(inside) == 0xff) return fast;
    return _mm256_blendv_ps(slow(x), fast, inside);
  }
  // g (Phi(x) + x phi(x)) for |x| < kTableEnd8: 1 + E above 0, -E below, then times g (as the
  // exp form and the avx512 tables); *inside gets the lanes inside, *all whether they all are.
  static __m256 gelu_grad_table8(const __m256& g, const __m256& x, __m256* inside, bool* all) {
    const __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    const bool far = any_far8(ax);
    const __m256 e =
        tables8(IntervalTables::kGeluGradTable8, IntervalTables::kGeluGradTable8Far, ax, far);
    const __m256 upper = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256 d = _mm256_blendv_ps(_mm256_sub_ps(_mm256_setzero_ps(), e),
                                      _mm256_add_ps(e, _mm256_set1_ps(1.0f)), upper);
    *inside = in_tables8(ax);
    *all = !far || _mm256_movemask_ps(*inside) == 0xff;
    return _mm256_mul_ps(g, d);
  }
#endif
  // 1 / d for d >= 1: the division, or at the avx512 level vrcp14ps (relative error below 2^-14),
  // which the correction step above takes to within an ulp as it does the division's rounding.
  template <class P>
  static P reciprocal(const P& d) {
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return _mm512_rcp14_ps(d);
#endif
    return Eigen::internal::pdiv(Eigen::internal::pset1<P>(1.0f), d);
  }
  static constexpr float kP = 0.265625f;
  // P's fitted coefficients times 0.5 (Phi's factor; exact: the same c to the bit wherever it
  // is a normal float).
  static constexpr float kC[9] = {
      0.5f * 6.1356518418e-02f,  0.5f * -2.8473770618e-01f, 0.5f * 4.2463085055e-01f,
      0.5f * -2.2171585262e-01f, 0.5f * 2.6878327131e-01f,  0.5f * 1.2342961133e-01f,
      0.5f * 2.0521208644e-01f,  0.5f * 2.1106305718e-01f,  0.5f * 2.1197818220e-01f};
  // P of degree 6 for results rounded to 16 bits (VecGeluErfRounded), 0.5 folded in as well.
  static constexpr float kC16[7] = {-6.6888168454e-02f, 1.9038030505e-01f, -6.0525067151e-02f,
                                    1.3891971111e-01f,  8.4375776350e-02f, 1.0787319392e-01f,
                                    1.0586391389e-01f};
};
// One element (the packets' tails, double): 0.5 x erfc(-x / sqrt 2), which keeps the small tail
// for negative x where 0.5 x (1 + erf(x / sqrt 2)) cancels (no correct digit below -5 in float),
// computed in double (float's rounding of x / sqrt 2 alone is 30 ulp of the result at -5.9).
// Infinities give NaN, as PyTorch's gelu.
template <class M>
M gelu_erf_scalar(M x) {
  if (std::isinf(x)) return std::numeric_limits<M>::quiet_NaN();
  const double xd = static_cast<double>(x);
  return static_cast<M>(0.5 * xd * std::erfc(xd * -0.70710678118654752440));
}
// g (Phi(x) + x phi(x)) for one element, in double as gelu_erf_scalar.
template <class M>
M gelu_erf_grad_scalar(M g, M x) {
  const double xd = static_cast<double>(x);
  const double cdf = 0.5 * std::erfc(xd * -0.70710678118654752440);
  const double pdf = std::exp(-0.5 * xd * xd) * 0.39894228040143267794;
  return static_cast<M>(static_cast<double>(g) * (cdf + xd * pdf));
}
// gelu's exact form, 0.5 x (1 + erf(x / sqrt(2))) = x Phi(x) (Note [Vector normal cdf]), with
// the infinities giving NaN (as the scalar form). Float only.
template <class S>
struct VecGeluErf {
  S operator()(const S& x) const { return gelu_erf_scalar(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    // An infinite x gives NaN with no test of its own: d = inf, so t's correction is inf * 0.
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return NormalCdf::gelu16<true>(x);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (is_packet8f<P>())
      return NormalCdf::gelu8(x, [](const __m256& v) { return exp_form(v); });
#endif
    return exp_form(x);
  }
  template <class P>
  static P exp_form(const P& x) {
    return Eigen::internal::pmul(x, NormalCdf::eval(x, static_cast<P*>(nullptr)));
  }
};
// gelu's exact form for a result rounded to 16 bits (vec_rounded, Note [Vector forms for
// 16-bit results] in loops.h): Phi(-|x|) = exp(-x^2 / 2) t Q(t) as in Note [Vector normal cdf],
// but t from one Newton step (the avx512 level's vrcp14ps, or the division), x^2 / 2 in one
// part, and Q of degree 6 (fitted as NormalCdf's P, with its 0.5 folded in: relative error
// 7e-7 for |x| <= 13.2). Relative error below 2e-6 up to |x| = 10 (5e-6 at 13.2, x^2 / 2's
// rounding), against bfloat16's 2^-9 and float16's 2^-12 of rounding: half the operations of
// VecGeluErf. An infinite x gives NaN (the Newton step's inf * 0), as the scalar form; NaN stays.
// At the avx512 level NormalCdf::eval16<false> (Note [Normal cdf at the avx512 level]), whose
// exp takes x^2 / 2 exactly, so the 5e-6 at 13.2 is gone there.
struct VecGeluErfRounded {
  float operator()(const float& x) const { return VecGeluErf<float>{}(x); }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return NormalCdf::gelu16<false>(x);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (is_packet8f<P>())
      return NormalCdf::gelu8(x, [](const __m256& v) { return exp_form(v); });
#endif
    return exp_form(x);
  }
  template <class P>
  static P exp_form(const P& x) {
    using namespace Eigen::internal;
    const P one = pset1<P>(1.0f);
    const P d = pmadd(pset1<P>(NormalCdf::kP), pabs(x), one);
    const P t0 = NormalCdf::reciprocal(d);
    const P t = pmadd(t0, pmadd(pnegate(d), t0, one), t0);
    const P q = horner(NormalCdf::kC16, t);
    const P c = pmul(VecExp<float>::normal_or_zero(pmul(x, pmul(x, pset1<P>(-0.5f)))), pmul(t, q));
    return pmul(x, pselect(pcmp_lt(x, pzero(x)), c, psub(one, c)));
  }
};
// gelu's derivatives, times the incoming gradient g (gelu_backward). The exact form's is
// Phi(x) + x phi(x) (Note [Vector normal cdf]); phi is 0 past |x| = 13.2, where the scalar exp
// is below 1e-37; NaN stays NaN and an infinite x gives NaN (x times phi's 0), as the formula
// written with ops does.
template <class S>
struct VecGeluErfGrad {
  static constexpr S kRsqrt2Pi = S(0.39894228040143267794);
  S operator()(const S& g, const S& x) const { return gelu_erf_grad_scalar(g, x); }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
#if defined(__AVX512F__)
    __m512 fast;
    __mmask16 inside = 0;
    if constexpr (is_packet16f<P>()) {
      const __m512 ax = _mm512_abs_ps(x);
      fast = NormalCdf::gelu_grad_table16(g, x, ax);
      inside = NormalCdf::in_tables16(ax);
      if (inside == 0xffff) return fast;
    }
#endif
#if defined(__AVX2__) && defined(__FMA__)
    __m256 fast8, inside8;
    if constexpr (is_packet8f<P>()) {
      bool all;
      fast8 = NormalCdf::gelu_grad_table8(g, x, &inside8, &all);
      if (all) return fast8;
    }
#endif
    P e;
    const P cdf = NormalCdf::eval(x, &e);
    const P exact = pmul(g, pmadd(x, pmul(e, pset1<P>(kRsqrt2Pi)), cdf));
    // the lanes inside the tables keep the tables' values (Note [Gelu from interval tables])
#if defined(__AVX512F__)
    if constexpr (is_packet16f<P>()) return _mm512_mask_blend_ps(inside, exact, fast);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if constexpr (is_packet8f<P>()) return _mm256_blendv_ps(exact, fast8, inside8);
#endif
    return exact;
  }
};
// silu's derivative times g: s (1 + x (1 - s)), s = 1 / (1 + exp(-x)). Where -x is past the
// vector exp's range (Note [Vector exp]: x below -87, where s is tiny but the derivative still a
// normal number down to -88.7, below which exp(-x) overflows and it is 0) or x is NaN, the
// packet is computed lane by lane with the scalar form; for large x, s rounds to 1 exactly as
// the scalar form's does. Float only (double: the scalar form).
template <class S>
struct VecSiluGrad {
  S operator()(const S& g, const S& x) const {
    const S s = S(1) / (S(1) + std::exp(-x));
    return g * (s * (S(1) + x * (S(1) - s)));
  }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    if (predux_any(pcmp_lt_or_nan(x, pset1<P>(S(-87))))) {
      constexpr int kLanes = unpacket_traits<P>::size;
      S gs[kLanes], xs[kLanes];
      pstoreu(gs, g);
      pstoreu(xs, x);
      for (int i = 0; i < kLanes; ++i) gs[i] = (*this)(gs[i], xs[i]);
      return ploadu<P>(gs);
    }
    const P one = pset1<P>(S(1));
    const P s = pdiv(one, padd(one, VecExp<S>{}.packetOp(pnegate(x))));
    return pmul(g, pmul(s, padd(one, pmul(x, psub(one, s)))));
  }
};
// gelu's tanh-form derivative times g (GeluTanhBackwardOp says how). Where -2u is past the
// vector exp's range (x below about -9.4 in float) s is 0 and so is the derivative; the
// infinities give NaN, as the formula written with ops does.
template <class S>
struct VecGeluTanhGrad {
  static constexpr S kK = S(0.79788456080286535588), kC = S(0.044715);
  S operator()(const S& g, const S& x) const {
    if (std::isinf(x)) return std::numeric_limits<S>::quiet_NaN();
    const S x2 = x * x, u = kK * (x + kC * x2 * x), du = kK * (S(1) + S(3) * kC * x2);
    const S e = std::exp(S(-2) * u);
    if (std::isinf(e)) return g * S(0);
    const S s = S(1) / (S(1) + e);
    return g * (s * (S(1) + S(2) * x * du * e * s));
  }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    const P one = pset1<P>(S(1)), x2 = pmul(x, x);
    const P u = pmul(pset1<P>(kK), pmadd(pmul(pset1<P>(kC), x2), x, x));
    const P du = pmul(pset1<P>(kK), pmadd(pset1<P>(S(3) * kC), x2, one));
    const P h = pmul(pset1<P>(S(-2)), u), limit = pset1<P>(S(87));
    const P e = VecExp<S>{}.packetOp(pmin(h, limit));
    const P s = pdiv(one, padd(one, e));
    P r = pmul(s, pmadd(pmul(pmul(pset1<P>(S(2)), x), pmul(du, e)), s, one));
    r = pselect(pcmp_lt(limit, h), pzero(x), r);
    const P inf = pset1<P>(std::numeric_limits<S>::infinity());
    r = pselect(pcmp_eq(pabs(x), inf), pset1<P>(std::numeric_limits<S>::quiet_NaN()), r);
    return pmul(g, r);
  }
};
}  // namespace
namespace Eigen::internal {
template <>
struct functor_traits<VecExp<float>> {
  enum { Cost = 20, PacketAccess = 1 };
};
template <>
struct functor_traits<VecExpWhole> {
  enum { Cost = 20, PacketAccess = 1 };
};
template <class S>
struct functor_traits<VecRelu<S>> {
  enum { Cost = 2, PacketAccess = 1 };
};
template <>
struct functor_traits<VecExpInRange> {
  enum { Cost = 16, PacketAccess = 1 };
};
template <class S>
struct functor_traits<VecExpUnderEdge<S>> {
  enum { Cost = 20, PacketAccess = functor_traits<VecExp<S>>::PacketAccess };
};
template <>
struct functor_traits<VecExp<double>> {
  enum { Cost = 25, PacketAccess = packet_traits<double>::HasExp };
};
template <class S, int kBase>
struct functor_traits<VecLog<S, kBase>> {
  enum { Cost = 30, PacketAccess = packet_traits<S>::HasLog && (kBase == 0 || sizeof(S) == 4) };
};
template <>
struct functor_traits<VecExpm1> {
  enum { Cost = 35, PacketAccess = 1 };
};
template <>
struct functor_traits<VecExp2> {
  enum { Cost = 25, PacketAccess = 1 };
};
template <>
struct functor_traits<VecTan> {
  enum { Cost = 90, PacketAccess = 1 };
};
template <>
struct functor_traits<VecErf<float>> {
  enum { Cost = 40, PacketAccess = 1 };
};
template <>
struct functor_traits<VecErf<double>> {  // no packet erf for double: the C library's
  enum { Cost = 40, PacketAccess = 0 };
};
template <class S>
struct functor_traits<VecGeluErf<S>> {
  enum { Cost = 50, PacketAccess = std::is_same_v<S, float> };
};
template <>
struct functor_traits<VecGeluErfRounded> {
  enum { Cost = 30, PacketAccess = true };
};
template <class S>
struct functor_traits<VecGeluErfGrad<S>> {
  enum { Cost = 60, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<VecGeluTanhGrad<S>> {
  enum { Cost = 40, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<VecSiluGrad<S>> {
  enum { Cost = 30, PacketAccess = std::is_same_v<S, float> };
};
template <>
struct functor_traits<VecSqrt> {
  enum { Cost = 8, PacketAccess = 1 };  // one vsqrtps; Eigen's own estimate for a float sqrt
};
template <>
struct functor_traits<VecRsqrtRounded> {
  enum { Cost = 8, PacketAccess = 1 };
};
template <>
struct functor_traits<VecTanh<float>> {
  enum { Cost = 40, PacketAccess = 1 };
};
template <>
struct functor_traits<VecTanh<double>> {  // no packet tanh for double: the C library's
  enum { Cost = 40, PacketAccess = 0 };
};
template <class S>
struct functor_traits<VecSin<S>> {  // no packet sin/cos for double: the C library's
  enum { Cost = 40, PacketAccess = std::is_same_v<S, float> };
};
template <class S>
struct functor_traits<VecCos<S>> {
  enum { Cost = 40, PacketAccess = std::is_same_v<S, float> };
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
// lies above kExpHigh and NaN to the scalar form; where the vector exp is whole above (float at
// the avx512 level, kExpWhole), only what lies below.
template <class M>
constexpr M kExpLimit = sizeof(M) == 4 ? M(87.0) : M(708.0);
template <class M>
constexpr M kExpHigh = sizeof(M) == 4 ? M(88.0) : M(708.0);
struct ExpOp {
  XTEN_UNARY_SCALAR_PART(std::exp(x))
  template <class A>
  auto vec(const A& x) const {
    using S = typename A::Scalar;
    if constexpr (std::is_same_v<S, float> && kExpWhole)
      return x.unaryExpr(VecExpWhole{});
    else if constexpr (std::is_same_v<S, float>)
      return x.unaryExpr(VecExpInRange{});
    else
      return x.unaryExpr(VecExp<S>{});
  }
  template <class M, std::enable_if_t<sizeof(M) == 8 || !kExpWhole, int> = 0>
  bool edge(M x) const {
    return !(x >= -kExpLimit<M>) | !(x <= kExpHigh<M>);  // `|`: vectorizes
  }
};
// dst = exp(src) for a row expression src and a contiguous row dst, as the exp op computes it
// (ExpOp: xten's vector exp, and the scalar exp for what lies past its range): the softmax rows
// of activation.cpp and of the compiler's fused rows (fused.cpp). Eigen's exp, which they took
// before, clamps its argument at -88.72 (float; -709.78 double): a softmax row's -inf (a masked
// position) came out as 2.9e-39, not 0, at the avx2 and default levels, and subnormal results
// were 0 at the avx512 level (Activation.SoftmaxOfMaskedAndFarPositions). Where the vector exp
// has no edges (float at the avx512 level) it is one pass, src evaluated as it is read; else src
// is written first and the edges recomputed (two passes made log_softmax's backward 30% slower
// on the host at one thread, hence the one-pass form where it is exact).
template <class Src, class Dst>
void exp_into(const Src& src, Dst&& dst) {
  using M = typename std::decay_t<Dst>::Scalar;
  const ExpOp op;
  if constexpr (has_edge<ExpOp, M>::value) {
    dst = src;
    M* y = dst.data();
    const int64_t n = dst.size();
    with_edges(op, y, y, n, [&] { EMap<M>(y, n) = op.vec(ECMap<M>(y, n)); });
  } else {
    dst = op.vec(src);
  }
}

// dst = softmax(src) for a row expression src and a contiguous row dst: exp(src - max) times
// the reciprocal of its sum. One division a row, as libtorch's vector softmax: a division an
// element (`dst /= sum`) was a quarter of the float row's time (vdivps's throughput: softmax
// of [2048, 2048] 4.3 -> 3.2 ms on one VM thread, bfloat16 4.4-4.9 -> 2.7-3.9), for one more
// rounding. Shared by the softmax kernel (activation.cpp) and the compiler's fused rows
// (fused.cpp), which equal it bit for bit.
// Float below the avx512 level, where exp has edges: src - m <= 0, and min(src) - m is the least
// of its values (rounding keeps the order), so where that is >= -87 no element is an edge and
// exp_into's passes (src - m written, then checked) are one, with the same values (one VM
// thread, avx2, [2048, 2048]: 2.35 -> 2.0 ms). A NaN that the max and min skip stays NaN through
// the in-range exp, as through the edge pass.
template <class Src, class Dst>
void softmax_into(const Src& src, Dst&& dst) {
  using M = typename std::decay_t<Dst>::Scalar;
  const M m = src.maxCoeff();
  bool no_edge = false;
  if constexpr (std::is_same_v<M, float> && has_edge<ExpOp, M>::value)
    no_edge = src.minCoeff() - m >= -kExpLimit<M>;
  if (no_edge)
    dst = ExpOp{}.vec(src - m);
  else
    exp_into(src - m, dst);
  dst *= M(1) / dst.sum();
}
// dst = log_softmax(src), as softmax_into's callers: (x - max) - log(sum exp(x - max)), not
// x - (max + log(sum)), which rounds max + log(sum) at the logits' magnitude
// (log_softmax([1000, 1000, -1000]) would lose 4 digits of log 0.5). The exp is only summed,
// never stored, so it takes VecExpUnderEdge: x - max <= 0, and what lies below -87 adds at most
// 1.6e-38 an element to a sum of at least 1 (the maximum's own term), which does not move it.
// NaN stays NaN through the clamp (Eigen's pmax returns its first argument's NaN) and through
// in_range, so a row holding NaN (or +inf, where inf - inf is NaN; or only -inf) sums to NaN
// and comes out NaN throughout, as PyTorch's. Below the avx512 level this is the exp without
// an edge pass (one VM thread, [2048, 2048] float at the avx2 level: 3.2 -> 2.1-2.2 ms);
// Activation.SoftmaxesOfNanInfAndMaskedRows tests the edges at every level.
template <class Src, class Dst>
void log_softmax_into(const Src& src, Dst&& dst) {
  using M = typename std::decay_t<Dst>::Scalar;
  const M m = src.maxCoeff();
  dst = (src - m) - std::log((src - m).unaryExpr(VecExpUnderEdge<M>{}).sum());
}

// The float vector forms of Note [Vector expm1, exp2, log2, log10, tan]: `vec` exists for
// float only (double takes the C library one element at a time, as before for these).
#define XTEN_UNARY_FLOAT_VEC_PART(vec_expr)                                                \
  template <class A, std::enable_if_t<std::is_same_v<typename A::Scalar, float>, int> = 0> \
  auto vec(const A& x) const {                                                             \
    return vec_expr;                                                                       \
  }
struct Exp2Op {
  XTEN_UNARY_SCALAR_PART(std::exp2(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecExp2{}))
  template <class M>
  bool edge(M x) const {
    return !(x >= M(-126)) | !(x <= M(127));
  }
};
struct Expm1Op {
  XTEN_UNARY_SCALAR_PART(std::expm1(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecExpm1{}))
  template <class M>
  bool edge(M x) const {
    return !(x <= kExpHigh<M>);
  }
};
// Float's vector log is whole (Note [Vector log]); double's clamps subnormals, the one edge.
struct LogOp {
  XTEN_UNARY_SCALAR_PART(std::log(x))
  XTEN_UNARY_VEC_PART(x.unaryExpr(VecLog<S>{}))
  template <class M, std::enable_if_t<sizeof(M) == 8, int> = 0>
  bool edge(M x) const {
    return x > M(0) && x < std::numeric_limits<M>::min();
  }
};
struct Log2Op {
  XTEN_UNARY_SCALAR_PART(std::log2(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecLog<float, 2>{}))
};
struct Log10Op {
  XTEN_UNARY_SCALAR_PART(std::log10(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecLog<float, 10>{}))
};
XTEN_UNARY_FUNCTOR(Log1pOp, std::log1p(x), x.log1p())
XTEN_UNARY_FUNCTOR(SqrtOp, std::sqrt(x), x.unaryExpr(VecSqrt{}))
// rsqrt; for a result rounded to 16 bits (Note [Vector forms for 16-bit results] in loops.h)
// VecRsqrtRounded, which at the avx512 level takes vrsqrt14ps and one Newton step instead of a
// square root and a division.
struct RsqrtOp {
  XTEN_UNARY_SCALAR_PART(M(1) / std::sqrt(x))
  XTEN_UNARY_VEC_PART(x.unaryExpr(VecSqrt{}).inverse())
  template <class A>
  auto vec_rounded(const A& x) const {
    return x.unaryExpr(VecRsqrtRounded{});
  }
};
XTEN_UNARY_FUNCTOR(ReciprocalOp, M(1) / x, x.inverse())
#if defined(__FMA__)
XTEN_UNARY_FUNCTOR(SinOp, std::sin(x), x.unaryExpr(VecSin<S>{}))
XTEN_UNARY_FUNCTOR(CosOp, std::cos(x), x.unaryExpr(VecCos<S>{}))
#else
// Without FMA the packet forms' reduction loses bits as |x| grows (2.0 ulp at 85, 2.4 at 400):
// beyond 48 the C library's forms run (VecSin says more).
template <class M>
constexpr M kTrigVectorMax = M(48);
XTEN_UNARY_EDGE_FUNCTOR(SinOp, std::sin(x), x.unaryExpr(VecSin<S>{}),
                        !(std::abs(x) <= kTrigVectorMax<M>))
XTEN_UNARY_EDGE_FUNCTOR(CosOp, std::cos(x), x.unaryExpr(VecCos<S>{}),
                        !(std::abs(x) <= kTrigVectorMax<M>))
#endif
#if defined(__FMA__)
// VecTan's one reduction is exact enough up to here (NaN and the infinities: the scalar form).
template <class M>
constexpr M kTanVectorMax = M(8192);
struct TanOp {
  XTEN_UNARY_SCALAR_PART(std::tan(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecTan{}))
  template <class M>
  bool edge(M x) const {
    return !(std::abs(x) <= kTanVectorMax<M>);
  }
};
#else
struct TanOp {
  XTEN_UNARY_SCALAR_PART(std::tan(x))
  XTEN_UNARY_FLOAT_VEC_PART(x.unaryExpr(VecTan{}))
  template <class M>
  bool edge(M x) const {
    return !(std::abs(x) <= kTrigVectorMax<M>);
  }
};
#endif
XTEN_UNARY_FUNCTOR(TanhOp, std::tanh(x), x.unaryExpr(VecTanh<S>{}))
// sigmoid and silu through the vector exp of exp(-x); where -x is past the vector exp's clamp
// (x < -87 in float, -708 in double) the scalar form gives the tiny or zero result, and NaN
// lanes, which the clamp may turn into numbers, take the scalar form too (`!(x >= c)`). Where -x
// is below -87 the vector exp may give 0 for a subnormal, which leaves 1 + exp(-x) at 1 as the
// subnormal would. Float at the avx512 level has no edge (as ExpOp): there the vector exp of
// -x is exact up to its top and inf past it (vscalefps), and keeps NaN, so the vector form
// gives the scalar form's values everywhere; the edge check's second read of each block was
// about a fifth of tanh's time there (bench/README.md), sigmoid's is the same check.
#define XTEN_EXP_EDGE_FUNCTOR(Name, scalar_expr, vec_expr)                      \
  struct Name {                                                                 \
    XTEN_UNARY_SCALAR_PART(scalar_expr)                                         \
    XTEN_UNARY_VEC_PART(vec_expr)                                               \
    template <class M, std::enable_if_t<sizeof(M) == 8 || !kExpWhole, int> = 0> \
    bool edge(M x) const {                                                      \
      return !(x >= -kExpLimit<M>);                                             \
    }                                                                           \
  };
XTEN_EXP_EDGE_FUNCTOR(SigmoidOp, M(1) / (M(1) + std::exp(-x)),
                      (S(1) + (-x).unaryExpr(VecExpUnderEdge<S>{})).inverse())
XTEN_EXP_EDGE_FUNCTOR(SiluOp, x / (M(1) + std::exp(-x)),
                      x / (S(1) + (-x).unaryExpr(VecExpUnderEdge<S>{})))
#undef XTEN_EXP_EDGE_FUNCTOR
// Vector: VecErf (Note [Vector erf]); Eigen's own is off by up to 7 ulp (float).
XTEN_UNARY_FUNCTOR(ErfOp, std::erf(x), x.unaryExpr(VecErf<S>{}))
XTEN_UNARY_FUNCTOR(FloorOp, std::floor(x), x.floor())
XTEN_UNARY_FUNCTOR(CeilOp, std::ceil(x), x.ceil())
XTEN_UNARY_FUNCTOR(RoundOp, std::nearbyint(x), x.rint())  // half to even
XTEN_UNARY_SCALAR_FUNCTOR(TruncOp, std::trunc(x))
XTEN_UNARY_FUNCTOR(NegOp, wrap_neg(x), -x)
// Floats: std::abs, so that abs(-0.0) is +0.0 (as in PyTorch; `x < 0 ? -x : x` kept the sign),
// and a vector form (bfloat16 abs was 0.27-0.76x libtorch converted one element at a time).
struct AbsOp {
  template <class M>
  M operator()(M x) const {
    if constexpr (std::is_floating_point_v<M>)
      return std::abs(x);
    else
      return x < 0 ? wrap_neg(x) : x;
  }
  template <class A>
  auto vec(const A& x) const {
    return x.abs();
  }
};
// NaN in, NaN out (as PyTorch): `x < 0` is false for NaN, so NaN passes through.
XTEN_UNARY_FUNCTOR(ReluOp, static_cast<M>(x < 0 ? M(0) : x), x.unaryExpr(VecRelu<S>{}))
XTEN_UNARY_SCALAR_FUNCTOR(IdentityOp, x)
#undef XTEN_UNARY_FLOAT_VEC_PART
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
// gelu's exact form, 0.5 x (1 + erf(x / sqrt(2))) (gelu_erf_scalar, VecGeluErf); NaN at both
// infinities, as PyTorch gives (docs/xpu_kernels.md, "Accuracy").
struct GeluErfOp {
  template <class M>
  M operator()(M x) const {
    return gelu_erf_scalar(x);
  }
  template <class A>
  auto vec(const A& x) const {
    return x.unaryExpr(VecGeluErf<typename A::Scalar>{});
  }
  template <class A>
  auto vec_rounded(const A& x) const {
    return x.unaryExpr(VecGeluErfRounded{});
  }
  // Double: the C library's erf (no vector form), so the scalar operator() throughout.
  template <class M, std::enable_if_t<sizeof(M) == 8, int> = 0>
  bool edge(M x) const {
    return !(x - x == M(0));  // infinite or NaN
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
    return x / (S(1) + (S(-2) * u<S>(x)).unaryExpr(VecExpUnderEdge<S>{}));
  }
  template <class M>
  bool edge(M x) const {
    return !(M(-2) * u<M>(x) <= kExpLimit<M>);  // and NaN
  }
};
struct GeluErfBackwardOp {
  template <class M>
  M operator()(M g, M x) const {
    return VecGeluErfGrad<M>{}(g, x);
  }
  template <class A, class B>
  auto vec(const A& g, const B& x) const {
    return g.binaryExpr(x, VecGeluErfGrad<typename A::Scalar>{});
  }
};
// The tanh form's: 0.5 (1 + t) + 0.5 x (1 - t^2) u'(x), t = tanh(u(x)), u as GeluTanhOp's.
// With s = 1 / (1 + e), e = exp(-2u): 1 + t = 2 s and 1 - t^2 = 4 s e s, so the derivative is
// s (1 + 2 x u' e s), which does not cancel where t is near -1 (x below about -3), as the form
// with t does (its 1 + t is 0 in float from x = -5 on). VecGeluTanhGrad computes it.
struct GeluTanhBackwardOp {
  template <class M>
  M operator()(M g, M x) const {
    return VecGeluTanhGrad<M>{}(g, x);
  }
  template <class A, class B>
  auto vec(const A& g, const B& x) const {
    return g.binaryExpr(x, VecGeluTanhGrad<typename A::Scalar>{});
  }
};
// sigmoid's and tanh's derivatives from their output y, times g (as PyTorch's kernels compute
// them); silu's from its input (VecSiluGrad).
struct SigmoidBackwardOp {
  template <class M>
  M operator()(M g, M y) const {
    return g * ((M(1) - y) * y);
  }
  template <class A, class B>
  auto vec(const A& g, const B& y) const {
    using S = typename A::Scalar;
    return g * ((S(1) - y) * y);
  }
};
struct TanhBackwardOp {
  template <class M>
  M operator()(M g, M y) const {
    return g * (M(1) - y * y);
  }
  template <class A, class B>
  auto vec(const A& g, const B& y) const {
    using S = typename A::Scalar;
    return g * (S(1) - y * y);
  }
};
struct SiluBackwardOp {
  template <class M>
  M operator()(M g, M x) const {
    return VecSiluGrad<M>{}(g, x);
  }
  template <class A, class B>
  auto vec(const A& g, const B& x) const {
    return g.binaryExpr(x, VecSiluGrad<typename A::Scalar>{});
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
