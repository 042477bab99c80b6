// Factories with CPU kernels: empty, arange, linspace and the random ones. The random ones
// follow the (seed, offset, index) -> value mapping of docs/random.md exactly. Compiled once per
// CPU level (capability.h), for Philox in vector lanes.
#include <algorithm>
#include <cmath>
#include <limits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <xten/core/dtype_dispatch.h>
#include <xten/core/generator.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/factory_meta.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/normal_float.h>

namespace xten::cpu {
namespace {

Tensor empty_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  check_empty_dtype(dtype);
  return empty_tensor(size, dtype, device);
}

// Fills a contiguous tensor with value_at(i) in parallel.
template <class T, class F>
void fill_indexed(const Tensor& out, const F& value_at) {
  T* p = out.data_ptr<T>();
  parallel_for(out.numel(), kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = value_at(i);
  });
}

Tensor arange_kernel(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                     Device device) {
  const ArangeMeta m = arange_meta(start, end, step, dtype, device);
  const bool integral = m.spec.integral;
  const double s = start.to<double>(), st = step.to<double>();
  const Tensor& out = m.out;
  visit_dtype<dtypes::kAllButBool>("arange", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (integral) {
      const int64_t s0 = start.to_long(), d = step.to_long();
      fill_indexed<T>(out, [=](int64_t i) { return cast_value<T>(s0 + i * d); });
    } else {
      fill_indexed<T>(out,
                      [=](int64_t i) { return cast_value<T>(s + static_cast<double>(i) * st); });
    }
  });
  return out;
}

Tensor linspace_kernel(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype,
                       Device device) {
  const LinspaceMeta m = linspace_meta(start, end, steps, dtype, device);
  const Tensor& out = m.out;
  const double s = m.start, e = m.end, step = m.step;
  const int64_t half = m.half;
  visit_dtype<dtypes::kAllButBool>("linspace", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Computed from both ends so that the last value is `end` exactly.
    fill_indexed<T>(out, [=](int64_t i) {
      return cast_value<T>(i < half ? s + step * static_cast<double>(i)
                                    : e - step * static_cast<double>(steps - 1 - i));
    });
  });
  return out;
}

// Note [Philox in vector lanes]
// One Philox call per element is ten rounds of two 32 x 32 -> 64-bit products: about 5 ns an
// element on one core, which made rand (and so dropout) the slowest pointwise op of the sweep
// (dropout 0.77x libtorch at one thread; bench/README.md). The rounds of different indices are
// independent, so at the avx2 and avx512 levels each of the four words is a vector of 8 or 16
// indices' words, and kPhiloxVectors vectors go through the rounds together so that the products
// of one vector overlap the latency of the others'. vpmuludq multiplies the even 32-bit lanes;
// the odd lanes are shifted down and multiplied apart, then the low and high halves blended back.
// The words are the scalar philox_words' bit for bit (integer arithmetic), so every level draws
// the same numbers. A block starts at a multiple of its size, so index + lane never carries into
// the index's high word. The default level (SSE2's two-lane products) keeps the scalar form.
#if defined(__AVX512F__)
#define XTEN_PHILOX_LANES 1
using PhiloxVec = __m512i;
constexpr int kPhiloxLanes = 16;
inline PhiloxVec philox_splat(uint32_t x) {
  return _mm512_set1_epi32(static_cast<int>(x));
}
inline PhiloxVec philox_xor(PhiloxVec a, PhiloxVec b) {
  return _mm512_xor_si512(a, b);
}
inline PhiloxVec philox_iota(uint32_t first) {
  return _mm512_add_epi32(philox_splat(first),
                          _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}
inline void philox_mulhilo(PhiloxVec a, PhiloxVec m, PhiloxVec& hi, PhiloxVec& lo) {
  const PhiloxVec even = _mm512_mul_epu32(a, m);
  const PhiloxVec odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}
inline void philox_store(uint32_t* p, PhiloxVec v) {
  _mm512_storeu_si512(p, v);
}
#elif defined(__AVX2__)
#define XTEN_PHILOX_LANES 1
using PhiloxVec = __m256i;
constexpr int kPhiloxLanes = 8;
inline PhiloxVec philox_splat(uint32_t x) {
  return _mm256_set1_epi32(static_cast<int>(x));
}
inline PhiloxVec philox_xor(PhiloxVec a, PhiloxVec b) {
  return _mm256_xor_si256(a, b);
}
inline PhiloxVec philox_iota(uint32_t first) {
  return _mm256_add_epi32(philox_splat(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline void philox_mulhilo(PhiloxVec a, PhiloxVec m, PhiloxVec& hi, PhiloxVec& lo) {
  const PhiloxVec even = _mm256_mul_epu32(a, m);
  const PhiloxVec odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}
inline void philox_store(uint32_t* p, PhiloxVec v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v);
}
#endif

#ifdef XTEN_PHILOX_LANES
constexpr int kPhiloxVectors = 4;
constexpr int64_t kPhiloxBlock = kPhiloxLanes * kPhiloxVectors;

// words[w][j] = philox_words(seed, offset, first + j)[w] for j < kPhiloxBlock; first is a
// multiple of kPhiloxBlock.
void philox_block(const PhiloxState& st, uint64_t first, uint32_t (&words)[4][kPhiloxBlock]) {
  PhiloxVec c0[kPhiloxVectors], c1[kPhiloxVectors], c2[kPhiloxVectors], c3[kPhiloxVectors];
  for (int v = 0; v < kPhiloxVectors; ++v) {
    c0[v] = philox_iota(static_cast<uint32_t>(first) + static_cast<uint32_t>(v * kPhiloxLanes));
    c1[v] = philox_splat(static_cast<uint32_t>(first >> 32));
    c2[v] = philox_splat(static_cast<uint32_t>(st.offset));
    c3[v] = philox_splat(static_cast<uint32_t>(st.offset >> 32));
  }
  const PhiloxVec m0 = philox_splat(0xD2511F53u), m1 = philox_splat(0xCD9E8D57u);
  uint32_t k0 = static_cast<uint32_t>(st.seed), k1 = static_cast<uint32_t>(st.seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const PhiloxVec key0 = philox_splat(k0), key1 = philox_splat(k1);
    for (int v = 0; v < kPhiloxVectors; ++v) {
      PhiloxVec hi0, lo0, hi1, lo1;
      philox_mulhilo(c0[v], m0, hi0, lo0);
      philox_mulhilo(c2[v], m1, hi1, lo1);
      c0[v] = philox_xor(philox_xor(hi1, c1[v]), key0);
      c1[v] = lo1;
      c2[v] = philox_xor(philox_xor(hi0, c3[v]), key1);
      c3[v] = lo0;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int v = 0; v < kPhiloxVectors; ++v) {
    philox_store(words[0] + v * kPhiloxLanes, c0[v]);
    philox_store(words[1] + v * kPhiloxLanes, c1[v]);
    philox_store(words[2] + v * kPhiloxLanes, c2[v]);
    philox_store(words[3] + v * kPhiloxLanes, c3[v]);
  }
}
#endif

// Calls f(i, philox_words(st.seed, st.offset, i)) for every i in [b, e), in order.
template <class F>
void for_each_philox(const PhiloxState& st, int64_t b, int64_t e, const F& f) {
  int64_t i = b;
#ifdef XTEN_PHILOX_LANES
  const int64_t first_block = (b + kPhiloxBlock - 1) / kPhiloxBlock * kPhiloxBlock;
  for (; i < std::min(first_block, e); ++i) f(i, philox_words(st.seed, st.offset, i));
  alignas(64) uint32_t words[4][kPhiloxBlock];
  for (; i + kPhiloxBlock <= e; i += kPhiloxBlock) {
    philox_block(st, static_cast<uint64_t>(i), words);
    for (int64_t j = 0; j < kPhiloxBlock; ++j)
      f(i + j, PhiloxCounter{words[0][j], words[1][j], words[2][j], words[3][j]});
  }
#endif
  for (; i < e; ++i) f(i, philox_words(st.seed, st.offset, i));
}

// Fills a contiguous tensor with value_from(philox words of i) in parallel.
template <class T, class F>
void fill_random(const Tensor& out, const PhiloxState& st, const F& value_from) {
  T* p = out.data_ptr<T>();
  parallel_for(out.numel(), kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for_each_philox(st, b, e, [&](int64_t i, const PhiloxCounter& r) { p[i] = value_from(r); });
  });
}

// Uniform [0, 1) from Philox words, at the precision of the dtype (docs/random.md).
template <class T>
T uniform_from(const PhiloxCounter& r) {
  if constexpr (std::is_same_v<T, double>) {
    const uint64_t bits = (static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53;
  } else if constexpr (std::is_same_v<T, Half>) {
    return T(static_cast<float>(r[0] >> 21) * 0x1.0p-11f);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(r[0] >> 24) * 0x1.0p-8f);
  } else {
    return static_cast<float>(r[0] >> 8) * 0x1.0p-24f;
  }
}

// Standard normal by Box-Muller on two uniforms (the cosine branch).
template <class T>
T normal_from(const PhiloxCounter& r) {
  if constexpr (std::is_same_v<T, double>) {
    const double u1 =
        (static_cast<double>((static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11) + 1.0) * 0x1.0p-53;
    const double u2 =
        static_cast<double>((static_cast<uint64_t>(r[2]) << 32 | r[3]) >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  } else {
    return T(box_muller_float(r[0], r[1]));  // Note [Box-Muller in float arithmetic]
  }
}

Tensor rand_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  Tensor out = random_meta("rand", size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  visit_dtype<dtypes::kFloating>("rand", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random<T>(out, st, [](const PhiloxCounter& r) { return uniform_from<T>(r); });
  });
  return out;
}

Tensor randn_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  Tensor out = random_meta("randn", size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  visit_dtype<dtypes::kFloating>("randn", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random<T>(out, st, [](const PhiloxCounter& r) { return normal_from<T>(r); });
  });
  return out;
}

// Note [Remainder by an invariant divisor]
// n mod d for every 64-bit n and a fixed d >= 1 without a division instruction (Granlund and
// Montgomery, "Division by invariant integers using multiplication", figure 4.1): with
// l = ceil(log2 d) and m = floor(2^64 (2^l - d) / d) + 1, the quotient is
// (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0) for t = the high half of m n, exactly (checked
// against `%` for 10M pairs, edges included, and by Random.RandintIsTheRemainderForEveryRange).
// One 64 x 64 -> 128-bit product instead of a 64-bit division: 3.8 -> 2.6 ns an element over 4M
// in a stand-alone loop on the VM; randint of [2048, 2048] is then 2.1-2.4x libtorch's speed on
// one host thread (bench/README.md, "bench_sweep"). The values are the same.
class InvariantDivisor {
 public:
  explicit InvariantDivisor(uint64_t d) : d_(d) {
    int l = 0;
    while (l < 64 && (uint64_t{1} << l) < d) ++l;
    const unsigned __int128 two_l = static_cast<unsigned __int128>(1) << l;
    m_ = static_cast<uint64_t>(((two_l - d) << 64) / d) + 1;
    sh1_ = std::min(l, 1);
    sh2_ = std::max(l - 1, 0);
  }
  uint64_t remainder(uint64_t n) const {
    const uint64_t t = static_cast<uint64_t>((static_cast<unsigned __int128>(m_) * n) >> 64);
    const uint64_t q = (t + ((n - t) >> sh1_)) >> sh2_;
    return n - q * d_;
  }

 private:
  uint64_t d_, m_;
  int sh1_, sh2_;
};

Tensor randint_kernel(int64_t low, int64_t high, IntArrayRef size, ScalarType dtype,
                      Device device) {
  Tensor out = randint_meta(low, high, size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  const InvariantDivisor divisor(range);
  visit_dtype<dtypes::kAllButBool>("randint", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random<T>(out, st, [=](const PhiloxCounter& r) {
      const uint64_t v = divisor.remainder(static_cast<uint64_t>(r[0]) << 32 | r[1]);
      return cast_value<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + v));
    });
  });
  return out;
}

}  // namespace

XTEN_CPU_KERNELS(factory, m) {
  m.impl("empty", empty_kernel);
  m.impl("arange", arange_kernel);
  m.impl("linspace", linspace_kernel);
  m.impl("rand", rand_kernel);
  m.impl("randn", randn_kernel);
  m.impl("randint", randint_kernel);
}

}  // namespace xten::cpu
