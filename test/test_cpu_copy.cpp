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
