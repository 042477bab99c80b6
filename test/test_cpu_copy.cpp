// copy_, to, fill_, zero_: every dtype pair, strided and broadcast sources.
#include <limits>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

TEST(Copy, EveryDtypePair) {
  manual_seed(1);
  for (ScalarType from : all_dtypes()) {
    const Tensor src = random_tensor({3, 5}, from, 0, 100);
    for (ScalarType to : all_dtypes()) {
      Tensor dst = src.to(to);
      EXPECT_EQ(dst.dtype(), to);
      expect_elements(
          dst, [&](auto& i) { return value_at(src, i); },
          std::string("copy ") + to_string(from) + "->" + to_string(to));
    }
  }
}

TEST(Copy, StridedBroadcastAndInPlaceIntoViews) {
  Tensor src = arange(12, kFloat).reshape({3, 4});
  Tensor dst = zeros({4, 3});
  dst.copy_(src.t());
  expect_elements(
      dst, [](auto& i) { return static_cast<double>(i[1] * 4 + i[0]); }, "transposed copy");
  Tensor row = arange(3, kFloat);
  Tensor b = zeros({2, 3});
  b.copy_(row);  // broadcast
  expect_elements(
      b, [](auto& i) { return static_cast<double>(i[1]); }, "broadcast copy");
  Tensor base = zeros({4, 4}, kInt);
  base.slice(1, 0, std::nullopt, 2).copy_(ones({4, 2}, kInt));  // into a strided view
  EXPECT_EQ(base.sum().item<int64_t>(), 8);
  EXPECT_EQ(base.select(0, 0).select(0, 1).item<int>(), 0);
  EXPECT_THROW_MSG(zeros({2}).copy_(ones({3})), ValueError,
                   "[copy_] shapes (2) and (3) are not broadcastable");
  Tensor e = zeros({1}).expand({3});
  EXPECT_THROW_MSG(e.copy_(ones({3})), ValueError, "several elements at one memory location");
  Tensor z = zeros({0, 2});
  z.copy_(ones({0, 2}));
}

TEST(Copy, CastsAreDefinedEverywhere) {
  Tensor f = tensor({-1.0f, 300.0f, 2.9f, -2.9f, std::numeric_limits<float>::quiet_NaN(), 1e20f});
  Tensor u8 = f.to(kByte);  // float -> int64 (saturating, NaN -> 0) -> wrap
  EXPECT_EQ(u8.select(0, 0).item<int>(), 255);
  EXPECT_EQ(u8.select(0, 1).item<int>(), 44);
  EXPECT_EQ(u8.select(0, 2).item<int>(), 2);
  EXPECT_EQ(u8.select(0, 4).item<int>(), 0);
  Tensor i64 = f.to(kLong);
  EXPECT_EQ(i64.select(0, 3).item<int64_t>(), -2);
  EXPECT_EQ(i64.select(0, 5).item<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(f.to(kBool).sum().item<int64_t>(), 6);  // NaN is true
  EXPECT_EQ(full({1}, 65536.0).to(kHalf).isinf().item<bool>(), true);
}

// The vector casts of Note [Vector 16-bit casts] (kernels/cpu/copy.cpp) give core/half.h's
// scalar conversions bit for bit: float -> float16 and -> bfloat16 over every 251st float bit
// pattern (both signs, subnormals, ties, overflow, NaN payloads) and float16 -> float over every
// half pattern (a signaling NaN quieted or not). This program runs at every CPU level, so each
// level's path is compared.
TEST(Copy, SixteenBitCastsMatchTheScalarConversions) {
  std::vector<float> fs;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 251) {
    const uint32_t u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, sizeof f);
    fs.push_back(f);
  }
  for (float f : {65504.0f, 65520.0f, 65519.99f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 5.96e-8f,
                  std::numeric_limits<float>::infinity(), -0.0f})
    fs.push_back(f);
  const Tensor in = from_blob(fs.data(), {static_cast<int64_t>(fs.size())}, kFloat).clone();
  const Tensor h = in.to(kHalf), b = in.to(kBFloat16);
  const uint16_t* hp = static_cast<const uint16_t*>(h.data_ptr());
  const uint16_t* bp = static_cast<const uint16_t*>(b.data_ptr());
  int bad_h = 0, bad_b = 0;
  for (size_t i = 0; i < fs.size(); ++i) {
    if (hp[i] != detail::float_to_half_bits(fs[i]) && bad_h++ < 5)
      ADD_FAILURE() << "float16 of " << fs[i] << ": " << hp[i];
    if (bp[i] != detail::float_to_bfloat16_bits(fs[i]) && bad_b++ < 5)
      ADD_FAILURE() << "bfloat16 of " << fs[i] << ": " << bp[i];
  }
  std::vector<uint16_t> hs(65536);
  for (size_t i = 0; i < hs.size(); ++i) hs[i] = static_cast<uint16_t>(i);
  const Tensor back = from_blob(hs.data(), {65536}, kHalf).clone().to(kFloat);
  const float* fp = back.data_ptr<float>();
  int bad_f = 0;
  for (size_t i = 0; i < hs.size(); ++i) {
    // A signaling NaN may come back quieted (F16C quiets, as IEEE conversions do); its sign and
    // payload stay.
    const float want = detail::half_bits_to_float(hs[i]);
    uint32_t w, g;
    std::memcpy(&w, &want, sizeof w);
    std::memcpy(&g, fp + i, sizeof g);
    if (std::isnan(want)) w |= 0x400000u, g |= 0x400000u;
    if (w != g && bad_f++ < 5)
      ADD_FAILURE() << "float of half " << hs[i] << ": " << fp[i] << " vs " << want;
  }
}

// int64 -> float by AVX-512 DQ's vector conversion where the level is avx512 (longs_to_floats,
// kernels/cpu/copy.cpp): the scalar conversion's values, ties to even included, at every level.
TEST(Copy, LongToFloatMatchesTheScalarConversion) {
  std::vector<int64_t> ls;
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < 4099; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    ls.push_back(static_cast<int64_t>(x) >> (i % 63));  // every magnitude
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, (int64_t{1} << 24) + 1, (int64_t{1} << 24) + 3,
                    (int64_t{1} << 53) + 1, std::numeric_limits<int64_t>::max(),
                    std::numeric_limits<int64_t>::min()})
    ls.push_back(v);
  const Tensor f =
      from_blob(ls.data(), {static_cast<int64_t>(ls.size())}, kLong).clone().to(kFloat);
  const float* fp = f.data_ptr<float>();
  int bad = 0;
  for (size_t i = 0; i < ls.size(); ++i)
    if (fp[i] != static_cast<float>(ls[i]) && bad++ < 5)
      ADD_FAILURE() << "float of " << ls[i] << ": " << fp[i];
}

// Copies whose last two dims are transposed go by tiles (Note [Tiled transposing copy]): a
// transposed matrix with edges that are not whole tiles, NCHW -> NHWC (dims merged first), a
// batch of transposed matrices with a gap between them, every element size (4-byte ones by 8 x 8
// blocks in AVX registers where the level has AVX2, with ragged edges); all above the tiled
// path's 16,384 elements; against the values read one by one.
TEST(Copy, TransposingCopiesByTiles) {
  manual_seed(5);
  auto check = [](const Tensor& src, const std::string& what) {
    const Tensor got = src.contiguous();
    ASSERT_TRUE(got.is_contiguous());
    expect_elements(
        got, [&](auto& i) { return value_at(src, i); }, what, 0.0);
  };
  for (ScalarType t : {kFloat, kBFloat16, kDouble, kByte, kInt}) {
    check(random_tensor({131, 260}, t).t(), std::string("transposed ") + to_string(t));
    check(random_tensor({2, 19, 30, 31}, t).permute({0, 2, 3, 1}),
          std::string("nchw->nhwc ") + to_string(t));
  }
  const Tensor wide = random_tensor({3, 90, 100}, kFloat);
  check(wide.narrow(2, 3, 90).transpose(1, 2), "batch of transposed matrices");
  // Into a non-contiguous destination, and across dtypes: the engine's copy, same values.
  Tensor dst = zeros({130, 134}).narrow(1, 2, 67);
  const Tensor src = random_tensor({67, 130}, kFloat);
  dst.copy_(src.t());
  EXPECT_TRUE(allclose(dst, src.t(), 0, 0));
  EXPECT_TRUE(allclose(src.t().to(kDouble), src.to(kDouble).t(), 0, 0));
}

TEST(Copy, ToShortCircuitsAndCopies) {
  Tensor a = ones({2});
  EXPECT_TRUE(a.to(kFloat).is_same(a));
  EXPECT_TRUE(a.to(Device("cpu")).is_same(a));
  EXPECT_FALSE(a.to(kFloat, /*copy=*/true).is_same(a));
  EXPECT_EQ(a.to(TensorOptions(kHalf)).dtype(), kHalf);
}

TEST(Fill, EveryDtypeAndLayouts) {
  for (ScalarType t : all_dtypes()) {
    Tensor a = empty({3, 4}, t);
    a.fill_(1);
    expect_elements(
        a, [](auto&) { return 1.0; }, "fill");
    a.zero_();
    expect_elements(
        a, [](auto&) { return 0.0; }, "zero");
  }
  Tensor m = zeros({4, 4});
  m.t().select(0, 1).fill_(2.5);  // a column
  EXPECT_EQ(m.sum().item<float>(), 10.0f);
  EXPECT_EQ(m.select(1, 1).sum().item<float>(), 10.0f);
  Tensor e = zeros({1}).expand({4});
  EXPECT_THROW_MSG(e.fill_(1), ValueError, "[fill_] the written-to tensor");
}
