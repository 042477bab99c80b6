// Factories on CPU, and the Philox generator (docs/random.md).
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "test_util.h"
#include <xten/kernels/cpu/normal_float.h>

using namespace xten;
using namespace xten::testing;

TEST(Factory, EmptyZerosOnesFull) {
  for (ScalarType t : all_dtypes()) {
    EXPECT_EQ(empty({2, 3}, t).dtype(), t);
    Tensor z = zeros({2, 3}, t), o = ones({3}, t);
    expect_elements(
        z, [](auto&) { return 0.0; }, "zeros");
    expect_elements(
        o, [](auto&) { return 1.0; }, "ones");
  }
  EXPECT_EQ(full({2}, 7).dtype(), kLong);
  EXPECT_EQ(full({2}, 7.5).dtype(), kFloat);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  expect_elements(
      full({2, 2}, -1.5, kHalf), [](auto&) { return -1.5; }, "full");
  EXPECT_EQ(zeros({0, 4}).numel(), 0);
  EXPECT_EQ(ones({}).dim(), 0);
  EXPECT_EQ(empty({2}, kInt, Device("cpu")).dtype(), kInt);
}

TEST(Factory, Arange) {
  expect_elements(
      arange(5), [](auto& i) { return static_cast<double>(i[0]); }, "arange(5)");
  EXPECT_EQ(arange(5).dtype(), kLong);
  EXPECT_EQ(arange(0.0, 1.0, 0.25).dtype(), kFloat);
  EXPECT_EQ(arange(0.0, 1.0, 0.25).numel(), 4);
  EXPECT_EQ(arange(1, 10, 3).numel(), 3);   // 1 4 7
  EXPECT_EQ(arange(10, 0, -3).numel(), 4);  // 10 7 4 1
  expect_elements(
      arange(10, 0, -3), [](auto& i) { return 10.0 - 3.0 * i[0]; }, "arange down");
  EXPECT_EQ(arange(3, 3).numel(), 0);
  expect_elements(
      arange(0, 6, 1, kHalf), [](auto& i) { return static_cast<double>(i[0]); }, "arange half");
  EXPECT_THROW_MSG(arange(0, 5, 0), ValueError, "[arange] step must be nonzero");
  EXPECT_THROW_MSG(arange(5, 0, 1), ValueError, "inconsistent with the step sign");
  EXPECT_THROW_MSG(arange(0, 2, 1, kBool), NotImplementedError,
                   "[arange] not implemented for dtype Bool");
}

TEST(Factory, LinspaceAndEye) {
  Tensor l = linspace(0, 1, 5);
  expect_elements(
      l, [](auto& i) { return i[0] * 0.25; }, "linspace");
  EXPECT_EQ(linspace(-1, 1, 7).select(0, 6).item<float>(), 1.0f);
  EXPECT_EQ(linspace(0, 1, 1).item<float>(), 0.0f);
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_THROW_MSG(linspace(0, 1, -1), ValueError,
                   "number of steps must be non-negative, but got -1");
  expect_elements(
      eye(3, 4, kInt), [](auto& i) { return i[0] == i[1] ? 1.0 : 0.0; }, "eye");
  EXPECT_EQ(eye(2).sizes(), IntArrayRef({2, 2}));
  EXPECT_THROW_MSG(eye(-1), ValueError, "[eye] n and m must be non-negative");
}

TEST(Factory, LikeVariantsKeepShapeAndOptions) {
  Tensor a = ones({2, 3}, kHalf);
  EXPECT_EQ(zeros_like(a).dtype(), kHalf);
  EXPECT_EQ(ones_like(a, kInt).dtype(), kInt);
  EXPECT_EQ(full_like(a, 4).sizes(), a.sizes());
  EXPECT_EQ(empty_like(a).sizes(), a.sizes());
  EXPECT_EQ(rand_like(a).dtype(), kHalf);
  EXPECT_EQ(randn_like(a, kDouble).dtype(), kDouble);
  EXPECT_EQ(scalar_tensor(3).dim(), 0);
}

TEST(Random, ReproducibleWithManualSeed) {
  manual_seed(42);
  Tensor a = rand({100}), b = randn({3, 3}), c = randint(0, 10, {50});
  manual_seed(42);
  EXPECT_TRUE(rand({100}).eq(a).logical_not().sum().item<int64_t>() == 0);
  EXPECT_TRUE(randn({3, 3}).eq(b).logical_not().sum().item<int64_t>() == 0);
  EXPECT_TRUE(randint(0, 10, {50}).eq(c).logical_not().sum().item<int64_t>() == 0);
  // Successive draws differ.
  EXPECT_GT(rand({100}).ne(a).sum().item<int64_t>(), 90);
}

TEST(Random, DocumentedMapping) {
  // docs/random.md: element i of the op at (seed, offset) uses philox(key=seed,
  // counter=(i, offset)); rand float32 takes the top 24 bits of word 0.
  manual_seed(123);
  Tensor skip = rand({1});  // offset 0
  Tensor r = rand({4});     // offset 1
  for (int64_t i = 0; i < 4; ++i) {
    const PhiloxCounter w = philox_words(123, 1, static_cast<uint64_t>(i));
    EXPECT_EQ(r.select(0, i).item<float>(), static_cast<float>(w[0] >> 8) * 0x1.0p-24f);
  }
  // Known-answer test for Philox4x32-10 (Random123's kat_vectors: zero counter and key).
  const PhiloxCounter k = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(k[0], 0x6627e8d5u);
  EXPECT_EQ(k[1], 0xe169c58du);
  EXPECT_EQ(k[2], 0xbc57ac4cu);
  EXPECT_EQ(k[3], 0x9b00dbd8u);
}

TEST(Random, EveryElementFollowsTheMapping) {
  // The avx2 and avx512 levels draw the words in vector blocks (Note [Philox in vector lanes],
  // kernels/cpu/factory.cpp). Every element, across block edges, the unaligned starts of 3
  // threads' chunks and a ragged tail, equals docs/random.md's scalar mapping at every level.
  const int saved = get_num_threads();
  set_num_threads(3);
  const int64_t n = 100003;
  manual_seed(99);
  const Tensor f = rand({n}), d = rand({n}, kDouble), h = rand({n}, kHalf),
               b = rand({n}, kBFloat16);
  const Tensor z = randn({n}), zd = randn({n}, kDouble), k = randint(-7, 1000, {n}, kLong);
  set_num_threads(saved);
  const float* fp = f.data_ptr<float>();
  const double* dp = d.data_ptr<double>();
  const Half* hp = h.data_ptr<Half>();
  const BFloat16* bp = b.data_ptr<BFloat16>();
  const float* zp = z.data_ptr<float>();
  const double* zdp = zd.data_ptr<double>();
  const int64_t* kp = k.data_ptr<int64_t>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto w = [&](uint64_t offset) {
      return philox_words(99, offset, static_cast<uint64_t>(i));
    };
    const PhiloxCounter w0 = w(0), w1 = w(1), w2 = w(2), w3 = w(3), w4 = w(4), w5 = w(5), w6 = w(6);
    const float normal = cpu::box_muller_float(w4[0], w4[1]);  // docs/random.md's float form
    const double v1 =
        (static_cast<double>((static_cast<uint64_t>(w5[0]) << 32 | w5[1]) >> 11) + 1.0) * 0x1.0p-53;
    const double v2 =
        static_cast<double>((static_cast<uint64_t>(w5[2]) << 32 | w5[3]) >> 11) * 0x1.0p-53;
    const double normal_d = std::sqrt(-2.0 * std::log(v1)) * std::cos(2.0 * M_PI * v2);
    const bool ok =
        fp[i] == static_cast<float>(w0[0] >> 8) * 0x1.0p-24f &&
        dp[i] ==
            static_cast<double>((static_cast<uint64_t>(w1[0]) << 32 | w1[1]) >> 11) * 0x1.0p-53 &&
        static_cast<float>(hp[i]) == static_cast<float>(w2[0] >> 21) * 0x1.0p-11f &&
        static_cast<float>(bp[i]) == static_cast<float>(w3[0] >> 24) * 0x1.0p-8f &&
        zp[i] == normal && zdp[i] == normal_d &&
        kp[i] == -7 + static_cast<int64_t>((static_cast<uint64_t>(w6[0]) << 32 | w6[1]) % 1007);
    wrong += !ok;
    if (!ok && wrong <= 3) ADD_FAILURE() << "element " << i << " differs from docs/random.md";
  }
  EXPECT_EQ(wrong, 0);
}

// randint's remainder by the range without a division (Note [Remainder by an invariant
// divisor], kernels/cpu/factory.cpp) is docs/random.md's `mod` for ranges from 1 to 2^64 - 1:
// powers of two and their neighbours, and the widest range int64 has.
TEST(Random, RandintIsTheRemainderForEveryRange) {
  const int64_t kMin = std::numeric_limits<int64_t>::min(),
                kMax = std::numeric_limits<int64_t>::max();
  const std::vector<std::pair<int64_t, int64_t>> bounds = {{0, 1},
                                                           {0, 2},
                                                           {-1, 2},
                                                           {0, 7},
                                                           {-500, 500},
                                                           {0, kMax / 2},
                                                           {0, 1LL << 32},
                                                           {0, (1LL << 32) + 1},
                                                           {5, (1LL << 33) + 12},
                                                           {0, (1LL << 62) + 3},
                                                           {kMin, 0},
                                                           {kMin, 5},
                                                           {kMin + 1, kMax},
                                                           {kMin, kMax}};
  manual_seed(5);
  uint64_t offset = 0;
  for (const auto& [low, high] : bounds) {
    const int64_t n = 4099;  // whole vector blocks and a tail
    const Tensor k = randint(low, high, {n}, kLong);
    const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
    const int64_t* kp = k.data_ptr<int64_t>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const PhiloxCounter w = philox_words(5, offset, static_cast<uint64_t>(i));
      const uint64_t v = (static_cast<uint64_t>(w[0]) << 32 | w[1]) % range;
      wrong += kp[i] != static_cast<int64_t>(static_cast<uint64_t>(low) + v);
    }
    EXPECT_EQ(wrong, 0) << "randint(" << low << ", " << high << ")";
    ++offset;
  }
}

// randn's float form (Note [Box-Muller in float arithmetic]) against Box-Muller in double on the
// same words: within 4 ulp wherever |z| > 1e-3, within 1e-9 absolutely nearer 0 (cos's zeros).
TEST(Random, FloatNormalIsWithinFourUlpOfTheExactTransform) {
  int64_t bad = 0;
  for (uint64_t i = 0; i < 200000; ++i) {
    const PhiloxCounter w = philox_words(11, 0, i);
    const float z = cpu::box_muller_float(w[0], w[1]);
    const double u1 = (static_cast<double>(w[0] >> 8) + 1.0) * 0x1.0p-24,
                 u2 = static_cast<double>(w[1] >> 8) * 0x1.0p-24;
    const double want = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    int e = 0;
    std::frexp(want, &e);
    const double err = std::abs(z - want);
    bad += std::abs(want) > 1e-3 ? err > 4 * std::ldexp(1.0, e - 24) : err > 1e-9;
  }
  EXPECT_EQ(bad, 0);
  // The edges of u: u1 = 1 gives 0, u1 = 2^-24 the largest value, u2 = 0 and 1/4 exact.
  EXPECT_EQ(cpu::box_muller_float(0xffffffffu, 0), 0.0f);
  EXPECT_NEAR(cpu::box_muller_float(0, 0), std::sqrt(48 * std::log(2.0)), 4e-6);
  EXPECT_EQ(cpu::box_muller_float(0, 1u << 30), 0.0f);  // cos(pi / 2)
}

TEST(Random, Distributions) {
  manual_seed(7);
  for (ScalarType t : float_dtypes()) {
    Tensor u = rand({20000}, t);
    EXPECT_GE(u.to(kDouble).sum().item<double>() / 20000, 0.48);
    EXPECT_LE(u.to(kDouble).sum().item<double>() / 20000, 0.52);
    EXPECT_EQ(u.lt(0).logical_or(u.ge(1)).sum().item<int64_t>(), 0) << to_string(t);
    Tensor n = randn({20000}, t).to(kDouble);
    const double mean = n.mean().item<double>();
    const double var = (n * n).mean().item<double>() - mean * mean;
    EXPECT_NEAR(mean, 0.0, 0.05) << to_string(t);
    EXPECT_NEAR(var, 1.0, 0.05) << to_string(t);
    EXPECT_EQ(n.isfinite().logical_not().sum().item<int64_t>(), 0);
  }
  Tensor i = randint(-3, 3, {10000});
  EXPECT_EQ(i.lt(-3).logical_or(i.ge(3)).sum().item<int64_t>(), 0);
  EXPECT_NEAR(i.to(kDouble).mean().item<double>(), -0.5, 0.1);
  EXPECT_THROW_MSG(randint(5, 5, {2}), ValueError,
                   "[randint] expects low < high, but got low=5, high=5");
  EXPECT_THROW_MSG(randint(0, 300, {2}, kByte), ValueError, "[0, 300) does not fit dtype Byte");
  EXPECT_THROW_MSG(rand({2}, kInt), NotImplementedError, "[rand] not implemented for dtype Int");
}
