#pragma once
// Typed inner loops for the elementwise engine (elementwise.h). A loop gets one run of n
// elements: data[0] is the output, data[1..] the inputs, with byte strides.
//
// An op is a functor with a scalar operator() over the opmath type M (float for Half and
// BFloat16) and, where Eigen has a vectorized form, a vec() over Eigen arrays of M (used for
// floating M; integer loops are plain C++, which the compiler vectorizes, written with the
// wrapping helpers below so that overflow wraps as in PyTorch instead of being UB). Runs
// with contiguous operands of type M go to Eigen directly; other runs with a vec() are
// gathered into M buffers of kBlock elements (converting and following strides), computed
// with Eigen, and scattered; ops without vec() run the scalar functor element by element.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <immintrin.h>

#include <xten/core/cpu_backend.h>
#include <xten/core/scalar_type.h>

// Everything below is compiled into each CPU level's kernel files (Note [CPU capability]) and
// into baseline files (copy, factory, index): an inline namespace per level gives each copy its
// own symbols, so that the linker never merges an F16C or AVX-512 instantiation with the
// baseline one (or the reverse, which would silently lose the fast copy).
#define XTEN_LOOPS_CAT_(a, b) a##b
#define XTEN_LOOPS_CAT(a, b) XTEN_LOOPS_CAT_(a, b)
#ifdef XTEN_CPU_CAPABILITY_NS
#define XTEN_LOOPS_NS XTEN_LOOPS_CAT(loops_, XTEN_CPU_CAPABILITY_NS)
#else
#define XTEN_LOOPS_NS loops_baseline
#endif

namespace xten::cpu {
inline namespace XTEN_LOOPS_NS {

template <class T>
using EArray = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using EMap = Eigen::Map<EArray<T>>;
template <class T>
using ECMap = Eigen::Map<const EArray<T>>;

constexpr int64_t kBlock = 256;
// Note [Aligned blocks]: Eigen computes the elements before the first aligned address of an
// output with the scalar form of a function and the rest with the vector form, and the two can
// differ in the last bit (exp, tanh, sigmoid). The block buffers are 64-byte aligned, as the
// allocators' memory is, so that a value does not depend on where a buffer landed on the stack,
// and the compiler's fused loops (fused.cpp) get the eager kernels' values bit for bit.

// Conversion between element types with defined results everywhere: a float into an integer
// type saturates to int64 (NaN -> 0), then wraps to the width (as x86 PyTorch does for
// in-range and the usual out-of-range values); anything into bool is `!= 0`.
template <class To, class From>
inline To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<opmath_t<From>>(v) != 0;
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<From>) {
    const double d = static_cast<double>(static_cast<opmath_t<From>>(v));
    if (!(d == d)) return To(0);
    if (d >= 9223372036854775807.0) return static_cast<To>(std::numeric_limits<int64_t>::max());
    if (d <= -9223372036854775808.0) return static_cast<To>(std::numeric_limits<int64_t>::min());
    return static_cast<To>(static_cast<int64_t>(d));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(static_cast<opmath_t<From>>(v)));
  } else {
    return static_cast<To>(static_cast<opmath_t<From>>(v));
  }
}

// Signed integer arithmetic that wraps (two's complement) instead of overflowing.
// (clang-format 14 reads `is_integral_v<M> &&` as an rvalue reference.)
// clang-format off
template <class M>
constexpr bool kWraps = std::is_integral_v<M> && std::is_signed_v<M> && sizeof(M) >= sizeof(int);
// clang-format on
template <class M>
inline M wrap_add(M a, M b) {
  if constexpr (kWraps<M>)
    return static_cast<M>(static_cast<std::make_unsigned_t<M>>(a) +
                          static_cast<std::make_unsigned_t<M>>(b));
  else
    return static_cast<M>(a + b);
}
template <class M>
inline M wrap_sub(M a, M b) {
  if constexpr (kWraps<M>)
    return static_cast<M>(static_cast<std::make_unsigned_t<M>>(a) -
                          static_cast<std::make_unsigned_t<M>>(b));
  else
    return static_cast<M>(a - b);
}
template <class M>
inline M wrap_mul(M a, M b) {
  if constexpr (kWraps<M>)
    return static_cast<M>(static_cast<std::make_unsigned_t<M>>(a) *
                          static_cast<std::make_unsigned_t<M>>(b));
  else if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>)
    return static_cast<M>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  else
    return static_cast<M>(a * b);
}
template <class M>
inline M wrap_neg(M a) {
  if constexpr (std::is_integral_v<M>)
    return wrap_sub(M(0), a);
  else
    return -a;  // keeps the sign of zero: -(0.0) is -0.0
}

template <class Op, class M, int N, class = void>
struct has_vec : std::false_type {};
template <class Op, class M>
struct has_vec<Op, M, 1,
               std::void_t<decltype(std::declval<const Op&>().vec(std::declval<ECMap<M>>()))>>
    : std::true_type {};
template <class Op, class M>
struct has_vec<Op, M, 2,
               std::void_t<decltype(std::declval<const Op&>().vec(
                   std::declval<ECMap<M>>(), std::declval<ECMap<M>>()))>> : std::true_type {};
template <class Op, class M>
struct has_vec<Op, M, 3,
               std::void_t<decltype(std::declval<const Op&>().vec(
                   std::declval<ECMap<M>>(), std::declval<ECMap<M>>(), std::declval<ECMap<M>>()))>>
    : std::true_type {};

// Note [Vector forms for 16-bit results]: an op may add vec_rounded(), a cheaper vector form
// for a result that is stored as bfloat16 or float16 (output type R of 16 bits; the inputs are
// widened to float as for vec()). Its relative error must stay below 2^-18 (a 64th of float16's
// half ulp), so that the stored values are those of vec() but for rare ties. gelu's exact form
// uses it (unary_functors.h, VecGeluErfRounded): VecGeluErf keeps 5 ulp in float, which costs
// twice the operations; so does rsqrt (VecRsqrtRounded: an estimate and a Newton step instead of
// a square root and a division at the avx512 level). docs/cpu_kernels.md, "Vector math".
template <class Op, class M, int N, class = void>
struct has_vec_rounded : std::false_type {};
template <class Op, class M>
struct has_vec_rounded<
    Op, M, 1,
    std::void_t<decltype(std::declval<const Op&>().vec_rounded(std::declval<ECMap<M>>()))>>
    : std::true_type {};

// Note [Vector math edges]: an Op whose vectorized form is wrong on some inputs (Eigen's exp
// clamps its argument, so exp(-inf) is not 0) declares edge(x); the loop then recomputes those
// elements with the scalar form after the vector pass.
template <class Op, class M, class = void>
struct has_edge : std::false_type {};
template <class Op, class M>
struct has_edge<Op, M, std::void_t<decltype(std::declval<const Op&>().edge(std::declval<M>()))>>
    : std::true_type {};

// Whether any of in[0, m) is an edge of op: with_edges's first pass, for a caller that fuses the
// vector form into a larger expression where there is none (log_softmax's backward).
template <class Op, class M>
inline bool any_edge(const Op& op, const M* in, int64_t m) {
  unsigned any = 0;
  for (int64_t i = 0; i < m; ++i) any |= op.edge(in[i]) ? 1u : 0u;
  return any != 0;
}
// Note [Vector math edges]'s recomputation: out[i] = op(in[i]) where op.edge(in[i]) after
// `vector_pass` wrote out[0, m). Edges are rare, so a branch-free pass first asks whether the
// block has any (an integer flag: GCC 12 vectorizes an OR of ints but not of bools, and a scalar
// test was 40% of sigmoid's time), and only a block that has one is walked element by element.
// The check comes before the vector pass and keeps the edge inputs, since `out` may be `in`
// (exp_): read after it, exp's outputs above 88 would look like edges.
template <class Op, class M, class V, class VectorPass>
inline void with_edges(const Op& op, const M* in, V* out, int64_t m,
                       const VectorPass& vector_pass) {
  if (!any_edge(op, in, m)) return vector_pass();
  std::vector<std::pair<int64_t, M>> edges;
  for (int64_t i = 0; i < m; ++i)
    if (op.edge(in[i])) edges.emplace_back(i, in[i]);
  vector_pass();
  for (const auto& [i, x] : edges) out[i] = static_cast<V>(op(x));
}

// n contiguous 16-bit floats (or any T) widened to M, and n values of V stored as R. Half goes
// through F16C, 8 at a time, where the level has it (avx2, avx512): the same results as the
// scalar conversions of core/half.h (IEEE round to nearest even, NaN kept and quieted).
template <class M, class T>
inline void widen_n(const T* in, M* out, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, Half> && std::is_same_v<M, float>) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(out + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
#endif
  for (; i < n; ++i) out[i] = static_cast<M>(in[i]);
}
// 16 floats rounded to bfloat16 as narrow_to_bfloat16 below rounds them (to nearest even), each
// in the high 16 bits of its lane (the low 16 are left over). NaN lanes found by one vfpclassps
// (AVX-512 DQ, part of the avx512 level) and quieted by one masked OR of the truncated bits.
[[gnu::target("avx512f,avx512bw,avx512dq")]] static inline __m512i bfloat16_rounded_high_x16(
    __m512 r) {
  const __m512i x = _mm512_castps_si512(r);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb);
  const __mmask16 nan = _mm512_fpclass_ps_mask(r, 0x81);  // QNaN, SNaN
  return _mm512_mask_or_epi32(rounded, nan, x, _mm512_set1_epi32(0x400000));
}
// Each result in the low 16 bits of its lane.
[[gnu::target("avx512f,avx512bw,avx512dq")]] static inline __m512i bfloat16_bits_of_x16(__m512 r) {
  return _mm512_srli_epi32(bfloat16_rounded_high_x16(r), 16);
}
// The same 16 bfloat16s packed into 32 bytes.
[[gnu::target("avx512f,avx512bw,avx512dq")]] static inline __m256i bfloat16s_of_x16(__m512 r) {
  return _mm512_cvtepi32_epi16(bfloat16_bits_of_x16(r));
}
// float -> bfloat16, core/half.h's rounding (to nearest even, NaN kept quiet) written without a
// branch, which the compiler vectorizes (the scalar conversion's NaN branch kept it one element
// at a time: every bfloat16 output of the elementwise engine, and the casts of copy.cpp).
// The same rounding 16 lanes at a time with AVX-512 BW and DQ (vpmovdw to pack):
// GCC's vectorization of the loop below packed through shuffles and ran 1.6x an F16C float16
// cast. Compiled for AVX-512 by its attribute, so that copy.cpp (built for the baseline) can
// call it where the level chosen at load time is avx512; `n` a multiple of 16. Internal linkage:
// no shared (weak) copy with AVX-512 instructions for the linker to pick (cpu_levels_isolated).
[[gnu::target("avx512f,avx512bw,avx512dq")]] static inline void narrow_to_bfloat16_x16(
    const float* __restrict__ in, BFloat16* __restrict__ out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        bfloat16s_of_x16(_mm512_loadu_ps(in + i)));
}
// 8 floats rounded as bfloat16_rounded_high_x16 rounds them, with AVX2 (NaN lanes found by an
// unordered compare).
[[gnu::target("avx2")]] static inline __m256i bfloat16_rounded_high_x8(__m256 r) {
  const __m256i x = _mm256_castps_si256(r);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(x, _mm256_set1_epi32(0x400000)), nan);
}
// Each result in the low 16 bits of its lane.
[[gnu::target("avx2")]] static inline __m256i bfloat16_bits_of_x8(__m256 r) {
  return _mm256_srli_epi32(bfloat16_rounded_high_x8(r), 16);
}
// narrow_to_bfloat16_x16 for AVX2 machines: 16 floats a step, two packets packed (vpackusdw
// pairs their 128-bit halves, vpermq orders them) into one 32-byte store; GCC's vectorization
// of the scalar loop below packed through more shuffles (the float -> bfloat16 cast at the avx2
// level: bench/README.md, 2026-12-07). `n` a multiple of 16; internal linkage as above.
[[gnu::target("avx2")]] static inline void narrow_to_bfloat16_x8(const float* __restrict__ in,
                                                                 BFloat16* __restrict__ out,
                                                                 int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m256i a = bfloat16_bits_of_x8(_mm256_loadu_ps(in + i)),
                  b = bfloat16_bits_of_x8(_mm256_loadu_ps(in + i + 8));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8));
  }
}
[[gnu::always_inline]] inline void narrow_to_bfloat16(const float* __restrict__ in,
                                                      BFloat16* __restrict__ out, int64_t n) {
#if defined(__AVX512BW__) || defined(__AVX2__)
  const int64_t whole = n / 16 * 16;
#if defined(__AVX512BW__)
  narrow_to_bfloat16_x16(in, out, whole);
#else
  narrow_to_bfloat16_x8(in, out, whole);
#endif
  in += whole, out += whole, n -= whole;
#endif
  uint16_t* o = reinterpret_cast<uint16_t*>(out);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x;
    std::memcpy(&x, in + i, sizeof x);
    const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16, quiet_nan = (x >> 16) | 0x40u;
    o[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

template <class R, class V>
inline void narrow_n(const V* in, R* out, int64_t n) {
  if constexpr (std::is_same_v<R, BFloat16> && std::is_same_v<V, float>) {
    static_assert(sizeof(BFloat16) == sizeof(uint16_t));
    return narrow_to_bfloat16(in, out, n);
  }
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<R, Half> && std::is_same_v<V, float>) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(
          reinterpret_cast<__m128i*>(out + i),
          _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  for (; i < n; ++i) out[i] = cast_value<R>(in[i]);
}

#if defined(__AVX512BW__) || defined(__AVX2__)
#define XTEN_SIXTEEN_IN_REGISTERS 1
// The packets of Note [16-bit runs in registers] at this level: kLanes floats in a P, widened
// from bfloat16 or float16 and rounded back in registers, as widen_n and narrow_n convert (round
// to nearest even, NaN kept and quieted). Only x86-64-v3 and up: the default level keeps the
// blocks.
struct SixteenPackets {
  static constexpr int kHigh16 = static_cast<int>(0xffff0000u);
#if defined(__AVX512BW__)
  using P = __m512;
  static constexpr int kLanes = 16;
  // kLanes 16-bit values of in widened to floats in order (the values widen_n gives).
  template <class T>
  static P load(const T* in) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
    if constexpr (std::is_same_v<T, BFloat16>)
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else
      return _mm512_cvtph_ps(h);
  }
  template <class T>
  static void widen(const T* in, float* out) {  // out 64-byte aligned
    _mm512_store_ps(out, load(in));
  }
  // 2 * kLanes 16-bit values from one 64-byte load into out[0, 2 kLanes) as floats: bfloat16 as
  // the even elements then the odd ones (each 32-bit lane holds two bfloat16s; the even one
  // shifted up and the odd one masked are both floats, so no shuffle), float16 in order.
  template <class T>
  static void widen_two(const T* in, float* out) {  // out 64-byte aligned
    if constexpr (std::is_same_v<T, BFloat16>) {
      const __m512i v = _mm512_loadu_si512(in);
      _mm512_store_si512(out, _mm512_slli_epi32(v, 16));
      _mm512_store_si512(out + kLanes, _mm512_and_si512(v, _mm512_set1_epi32(kHigh16)));
    } else {
      widen(in, out), widen(in + kLanes, out + kLanes);
    }
  }
  static __m256i half(P r) {
    return _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2 * kLanes results in one 64-byte store, r0 and r1 in widen_two's order: bfloat16 the even
  // and the odd elements (each rounded in the high half of its lane, narrow_n's rounding, NaN
  // quieted; one ternary-logic op interleaves them), float16 in order.
  template <class R>
  static void store_two(R* out, P r0, P r1) {
    __m512i* o = reinterpret_cast<__m512i*>(out);
    if constexpr (std::is_same_v<R, BFloat16>) {
      const __m512i even = bfloat16_bits_of_x16(r0), odd = bfloat16_rounded_high_x16(r1);
      // (odd & kHigh16) | even
      _mm512_storeu_si512(o,
                          _mm512_ternarylogic_epi32(odd, _mm512_set1_epi32(kHigh16), even, 0xea));
    } else {
      _mm512_storeu_si512(o, _mm512_inserti64x4(_mm512_castsi256_si512(half(r0)), half(r1), 1));
    }
  }
  // store_two of bfloat16 where cpu_has_avx512_bf16(): one vcvtne2ps2bf16 rounds both packets
  // as narrow_n does (to nearest even, NaN quieted from the truncated bits) and a word permute
  // interleaves the even and the odd elements; 1.3-1.6x store_two's x * x on the host, in and out
  // of cache. The instruction takes subnormal floats as zero, so a pair with a subnormal result
  // (one class test each) keeps store_two's integer rounding. Written as inline assembly: the
  // level is compiled for x86-64-v4, which does not include AVX-512 BF16, and a function with
  // that target would not inline here.
  static void store_two_bf16(BFloat16* out, P r0, P r1) {
    const __mmask16 subnormal = _mm512_fpclass_ps_mask(r0, 0x20) | _mm512_fpclass_ps_mask(r1, 0x20);
    if (subnormal) return store_two(out, r0, r1);
    __m512i b;  // r1 rounded in the high 256 bits, r0 in the low
    asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(b) : "v"(r1), "v"(r0));
    alignas(64) static constexpr uint16_t kInterleave[32] = {
        0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
        8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    _mm512_storeu_si512(out, _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), b));
  }
  template <class R>
  static void store_one(R* out, P r) {
    __m256i* o = reinterpret_cast<__m256i*>(out);
    if constexpr (std::is_same_v<R, BFloat16>)
      _mm256_storeu_si256(o, bfloat16s_of_x16(r));
    else
      _mm256_storeu_si256(o, half(r));
  }
#else
  using P = __m256;
  static constexpr int kLanes = 8;
  template <class T>
  static P load(const T* in) {  // as at avx512
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    if constexpr (std::is_same_v<T, BFloat16>)
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    else
      return _mm256_cvtph_ps(h);
  }
  template <class T>
  static void widen(const T* in, float* out) {  // out 32-byte aligned
    _mm256_store_ps(out, load(in));
  }
  // As at avx512: bfloat16 as the even elements then the odd ones, float16 in order.
  template <class T>
  static void widen_two(const T* in, float* out) {  // out 32-byte aligned
    if constexpr (std::is_same_v<T, BFloat16>) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm256_slli_epi32(v, 16));
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + kLanes),
                         _mm256_and_si256(v, _mm256_set1_epi32(kHigh16)));
    } else {
      widen(in, out), widen(in + kLanes, out + kLanes);
    }
  }
  static __m128i half(P r) {
    return _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // 2 * kLanes results in one 32-byte store, in widen_two's order (bfloat16: one word blend
  // interleaves the even and the odd elements).
  template <class R>
  static void store_two(R* out, P r0, P r1) {
    __m256i* o = reinterpret_cast<__m256i*>(out);
    if constexpr (std::is_same_v<R, BFloat16>)
      _mm256_storeu_si256(
          o, _mm256_blend_epi16(bfloat16_bits_of_x8(r0), bfloat16_rounded_high_x8(r1), 0xaa));
    else
      _mm256_storeu_si256(o,
                          _mm256_inserti128_si256(_mm256_castsi128_si256(half(r0)), half(r1), 1));
  }
  template <class R>
  static void store_one(R* out, P r) {
    __m128i* o = reinterpret_cast<__m128i*>(out);
    if constexpr (std::is_same_v<R, BFloat16>) {
      const __m256i b = bfloat16_bits_of_x8(r);
      _mm_storeu_si128(o,
                       _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    } else {
      _mm_storeu_si128(o, half(r));
    }
  }
#endif
};
#endif

// Element by element with the scalar functor; inputs of types Ts..., output R.
template <class R, class... Ts, class Op, size_t... I>
inline void scalar_run(char** data, const int64_t* s, int64_t n, const Op& op,
                       std::index_sequence<I...>) {
  const bool contiguous = s[0] == sizeof(R) && ((s[I + 1] == sizeof(Ts)) && ...);
  if (contiguous) {
    R* __restrict__ out = reinterpret_cast<R*>(data[0]);
    if constexpr (((std::is_same_v<Ts, Half>) || ...) || std::is_same_v<R, Half>) {
      // float16 operands: converted a block at a time (widen_n/narrow_n: F16C where the level
      // has it), not one element at a time.
      using V = decltype(op(std::declval<opmath_t<Ts>>()...));
      std::tuple<std::array<opmath_t<Ts>, kBlock>...> in;
      V res[kBlock];
      for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t m = std::min(kBlock, n - start);
        (widen_n(reinterpret_cast<const Ts*>(data[I + 1]) + start, std::get<I>(in).data(), m), ...);
        for (int64_t i = 0; i < m; ++i) res[i] = op(std::get<I>(in)[i]...);
        narrow_n(res, out + start, m);
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      out[i] = cast_value<R>(
          op(static_cast<opmath_t<Ts>>(reinterpret_cast<const Ts*>(data[I + 1])[i])...));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<R*>(data[0] + i * s[0]) = cast_value<R>(
        op(static_cast<opmath_t<Ts>>(*reinterpret_cast<const Ts*>(data[I + 1] + i * s[I + 1]))...));
}

// c ? x : y without a branch: on random data (relu's mask in its backward, the running max of
// pooling) a branch mispredicts half the time, ~6 ns an element; a bitwise select of both
// values costs no more than a copy.
template <class M>
inline M branchless_select(bool c, M x, M y) {
  if constexpr (std::is_floating_point_v<M>) {
    using U = std::conditional_t<sizeof(M) == 8, uint64_t, uint32_t>;
    U ux, uy;
    std::memcpy(&ux, &x, sizeof(M));
    std::memcpy(&uy, &y, sizeof(M));
    const U mask = U(0) - static_cast<U>(c);
    const U r = (ux & mask) | (uy & ~mask);
    M out;
    std::memcpy(&out, &r, sizeof(M));
    return out;
  } else if constexpr (std::is_integral_v<M> && !std::is_same_v<M, bool>) {
    using U = std::make_unsigned_t<M>;
    const U mask = U(0) - static_cast<U>(c);
    return static_cast<M>((static_cast<U>(x) & mask) | (static_cast<U>(y) & ~mask));
  } else {
    return c ? x : y;
  }
}

// A loop for an op with N inputs of types Ts... writing R.
template <class R, class... Ts, class Op>
auto make_loop(const Op& op) {
  return [op](char** data, const int64_t* s, int64_t n) {
    constexpr int N = sizeof...(Ts);
    using T0 = std::tuple_element_t<0, std::tuple<Ts...>>;
    using M = opmath_t<T0>;
    constexpr bool same_types = (std::is_same_v<Ts, T0> && ...);
    if constexpr (same_types && N <= 3 &&
                  std::conjunction_v<std::is_floating_point<M>, has_vec<Op, M, N>>) {
      // The vector form over m elements of each input, p[k] + offset.
      constexpr bool kSixteenOut = std::is_same_v<R, BFloat16> || std::is_same_v<R, Half>;
      constexpr bool rounded = kSixteenOut && has_vec_rounded<Op, M, N>::value;
      auto vec = [&op](const M* const* p, int64_t offset, int64_t m) {
        if constexpr (rounded)
          return op.vec_rounded(ECMap<M>(p[0] + offset, m));
        else if constexpr (N == 1)
          return op.vec(ECMap<M>(p[0] + offset, m));
        else if constexpr (N == 2)
          return op.vec(ECMap<M>(p[0] + offset, m), ECMap<M>(p[1] + offset, m));
        else
          return op.vec(ECMap<M>(p[0] + offset, m), ECMap<M>(p[1] + offset, m),
                        ECMap<M>(p[2] + offset, m));
      };
      using V = typename std::decay_t<decltype(vec(nullptr, 0, 0))>::Scalar;
      bool contiguous = s[0] == sizeof(R);
      for (int k = 1; k <= N; ++k) contiguous = contiguous && s[k] == sizeof(T0);
      if constexpr (std::is_same_v<T0, M> && std::is_same_v<R, V>) {
        if (contiguous) {
          R* out = reinterpret_cast<R*>(data[0]);
          const M* ins[N];
          for (int k = 0; k < N; ++k) ins[k] = reinterpret_cast<const M*>(data[k + 1]);
          if constexpr (N == 1 && has_edge<Op, M>::value) {
            // A block at a time, so that the edge check reads what the vector pass just read
            // (not the whole chunk again from memory).
            constexpr int64_t kEdgeBlock = 16 * kBlock;
            for (int64_t start = 0; start < n; start += kEdgeBlock) {
              const int64_t m = std::min(kEdgeBlock, n - start);
              with_edges(op, ins[0] + start, out + start, m,
                         [&] { EMap<R>(out + start, m) = vec(ins, start, m); });
            }
          } else {
            EMap<R>(out, n) = vec(ins, 0, n);
          }
          return;
        }
      }
#if defined(XTEN_SIXTEEN_IN_REGISTERS)
      // Note [16-bit runs in registers]: at the avx2 and avx512 levels, a run whose operands and
      // output are all contiguous (or broadcast) bfloat16 or float16 is computed without the
      // blocks' float buffers for the result: each input packet (8 or 16 lanes, SixteenPackets
      // above) widened in registers (stored once to a 64-byte buffer the expression reads back),
      // the op's vector form evaluated for that packet, and the result rounded to 16 bits in
      // registers and stored. The blocks below made three passes through L1 (widen, compute,
      // narrow). Cheap ops only (Eigen's cost estimate of the expression below 20: arithmetic,
      // sqrt, division): one VM thread, in cache, avx512, bfloat16 x * x 0.17 -> 0.13 ns an
      // element, x * y 0.21 -> 0.14, x / y 0.28 -> 0.20, sqrt 0.26 -> 0.22; exp and gelu got 15%
      // slower this way and keep the blocks. Two packets a step, rounded into one store, then one
      // packet where a packet's worth is left: one VM thread (AMD, avx512), in cache, bfloat16 x *
      // x 14.8 -> 14.3 us and x * y 17.6 -> 16.6 for 128K, against a packet a step. A pair of
      // bfloat16 packets is widened as its even and its odd elements (SixteenPackets::widen_two:
      // a shift and a mask of one load, where vpmovzxwd and the pack back are shuffles, one port
      // on Intel); every vector form is elementwise, so the order inside the pair is free. A probe
      // of x * x on the AVX2 VM, one thread: 0.17 -> 0.13 ns an element in cache. The last n %
      // kLanes elements take the blocks, whose scalar tail computes the same elements (the same
      // rounding).
      constexpr bool kSixteen = std::is_same_v<T0, BFloat16> || std::is_same_v<T0, Half>;
      char* rest[N + 1];
      if constexpr (kSixteen && std::is_same_v<R, T0> && std::is_same_v<V, float> && N <= 2 &&
                    !has_edge<Op, M>::value) {
        using SP = SixteenPackets;
        constexpr int L = SP::kLanes;
        using Expr = std::decay_t<decltype(vec(nullptr, 0, L))>;
        using Ev = Eigen::internal::evaluator<Expr>;
        if constexpr ((Ev::Flags & Eigen::PacketAccessBit) != 0 && Ev::CoeffReadCost < 20) {
          // Inputs contiguous, or broadcast (stride 0: a scalar operand, widened once).
          bool contiguous16 = s[0] == sizeof(R);
          for (int k = 1; k <= N; ++k)
            contiguous16 = contiguous16 && (s[k] == sizeof(T0) || s[k] == 0);
          if (contiguous16 && n >= L) {
            alignas(64) float buf[N][2 * L];
            const M* bufs[N];
            for (int k = 0; k < N; ++k) {
              bufs[k] = buf[k];
              if (s[k + 1] == 0)
                std::fill_n(buf[k], 2 * L,
                            static_cast<M>(*reinterpret_cast<const T0*>(data[k + 1])));
            }
            const Expr expr = vec(bufs, 0, 2 * L);
            const Ev ev(expr);
            R* out = reinterpret_cast<R*>(data[0]);
            const int64_t pairs = n / (2 * L) * (2 * L), whole = n / L * L;
            auto run_pairs = [&]([[maybe_unused]] auto bf16_conversion) {
              for (int64_t i = 0; i < pairs; i += 2 * L) {
                // Two packets of each input at i, in widen_two's order (bfloat16: even elements,
                // odd elements), which store_two undoes; a broadcast buffer is the same either way.
                for (int k = 0; k < N; ++k)
                  if (s[k + 1] != 0)
                    SP::widen_two(reinterpret_cast<const T0*>(data[k + 1]) + i, buf[k]);
                const auto r0 = ev.template packet<Eigen::Aligned64, SP::P>(0),
                           r1 = ev.template packet<Eigen::Aligned64, SP::P>(L);
#if defined(__AVX512BW__)
                if constexpr (decltype(bf16_conversion)::value && std::is_same_v<R, BFloat16>) {
                  SP::store_two_bf16(out + i, r0, r1);
                  continue;
                }
#endif
                SP::store_two(out + i, r0, r1);
              }
            };
#if defined(__AVX512BW__)
            if (std::is_same_v<R, BFloat16> && cpu_has_avx512_bf16())
              run_pairs(std::true_type{});
            else
#endif
              run_pairs(std::false_type{});
            if (pairs < whole) {
              for (int k = 0; k < N; ++k)
                if (s[k + 1] != 0)
                  SP::widen(reinterpret_cast<const T0*>(data[k + 1]) + pairs, buf[k]);
              SP::store_one(out + pairs, ev.template packet<Eigen::Aligned64, SP::P>(0));
            }
            if (whole == n) return;
            for (int k = 0; k <= N; ++k) rest[k] = data[k] + whole * s[k];
            data = rest;  // the caller's pointers stay as they were
            n -= whole;
          }
        }
      }
#endif
      // Blocks of kBlock: an input of type M read in place where contiguous, a broadcast one
      // (stride 0, as a scalar operand) filled once, others gathered and converted; the
      // result written in place where the output is contiguous of the vector's type.
      alignas(64) M in[N][kBlock];
      alignas(64) V res[kBlock];  // aligned: Note [Aligned blocks]
      const M* src[N];
      for (int k = 0; k < N; ++k)  // as much of the block as the run uses (a run may be short)
        if (s[k + 1] == 0)
          std::fill_n(in[k], std::min(kBlock, n),
                      static_cast<M>(*reinterpret_cast<const T0*>(data[k + 1])));
      for (int64_t start = 0; start < n; start += kBlock) {
        const int64_t m = std::min(kBlock, n - start);
        for (int k = 0; k < N; ++k) {
          const char* p = data[k + 1] + start * s[k + 1];
          if (s[k + 1] == 0) {
            src[k] = in[k];
          } else if (std::is_same_v<T0, M> && s[k + 1] == sizeof(M)) {
            src[k] = reinterpret_cast<const M*>(p);
          } else if (s[k + 1] == sizeof(T0)) {
            // contiguous, converted (bfloat16, half): vectorized
            widen_n(reinterpret_cast<const T0*>(p), in[k], m);
            src[k] = in[k];
          } else {
            for (int64_t i = 0; i < m; ++i)
              in[k][i] = static_cast<M>(*reinterpret_cast<const T0*>(p + i * s[k + 1]));
            src[k] = in[k];
          }
        }
        char* q = data[0] + start * s[0];
        const bool direct = std::is_same_v<R, V> && s[0] == sizeof(R) && !has_edge<Op, M>::value;
        V* out = direct ? reinterpret_cast<V*>(q) : res;
        if constexpr (N == 1 && has_edge<Op, M>::value)
          with_edges(op, src[0], out, m, [&] { EMap<V>(out, m) = vec(src, 0, m); });
        else
          EMap<V>(out, m) = vec(src, 0, m);
        if (!direct && s[0] == sizeof(R)) {
          narrow_n(res, reinterpret_cast<R*>(q), m);
        } else if (!direct) {
          for (int64_t i = 0; i < m; ++i)
            *reinterpret_cast<R*>(q + i * s[0]) = cast_value<R>(res[i]);
        }
      }
    } else {
      scalar_run<R, Ts...>(data, s, n, op, std::index_sequence_for<Ts...>{});
    }
  };
}

}  // namespace XTEN_LOOPS_NS
}  // namespace xten::cpu
