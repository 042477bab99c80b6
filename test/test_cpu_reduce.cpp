// sum and mean on CPU.
#include "test_util.h"

using namespace xten;
using namespace xten::testing;

TEST(Reduce, SumAndMeanOverDims) {
  manual_seed(30);
  for (ScalarType t : all_dtypes()) {
    Tensor a = non_contiguous(random_tensor({3, 4, 5}, t, -4, 4));
    const ScalarType out_t = is_integral_type(t, true) ? kLong : t;
    Tensor s = a.sum({0, 2});
    EXPECT_EQ(s.dtype(), out_t);
    EXPECT_EQ(s.sizes(), IntArrayRef({4}));
    expect_elements(
        s,
        [&](auto& i) {
          double acc = 0;
          for (int64_t x = 0; x < 3; ++x)
            for (int64_t z = 0; z < 5; ++z) acc += value_at(a, {x, i[0], z});
          return acc;
        },
        std::string("sum ") + to_string(t), 4.0);
    Tensor k = a.sum({1}, /*keepdim=*/true);
    EXPECT_EQ(k.sizes(), IntArrayRef({3, 1, 5}));
    Tensor all = a.sum();
    EXPECT_EQ(all.dim(), 0);
    if (is_floating_type(t)) {
      Tensor m = a.mean({-1});
      expect_elements(
          m,
          [&](auto& i) {
            double acc = 0;
            for (int64_t z = 0; z < 5; ++z) acc += value_at(a, {i[0], i[1], z});
            return acc / 5;
          },
          std::string("mean ") + to_string(t), 4.0);
    }
  }
}

TEST(Reduce, Accuracy) {
  // Pairwise summation: float32 sums of 2^24 ones are exact (a running sum stops at 2^24).
  EXPECT_EQ(ones({1 << 24}).sum().item<double>(), 16777216.0);
  EXPECT_EQ(ones({(1 << 24) + 4}).sum().item<double>(), 16777220.0);
  EXPECT_NEAR(full({1000000}, 0.1).sum().item<double>(), 100000.0, 1.0);
  EXPECT_EQ(ones({4096}, kHalf).sum().item<float>(), 4096.0f);  // accumulates in float
}

TEST(Reduce, DtypesEmptyAndErrors) {
  EXPECT_EQ(ones({3}, kBool).sum().item<int64_t>(), 3);
  EXPECT_EQ(ones({3}, kInt).sum(kDouble).dtype(), kDouble);
  EXPECT_EQ(arange(4).mean(kFloat).item<float>(), 1.5f);
  EXPECT_EQ(zeros({0, 3}).sum().item<float>(), 0.0f);
  EXPECT_EQ(zeros({0, 3}).sum({0}).sizes(), IntArrayRef({3}));
  EXPECT_TRUE(std::isnan(zeros({0}).mean().item<float>()));
  EXPECT_EQ(full({}, 5).sum().item<int64_t>(), 5);
  EXPECT_THROW_MSG(arange(4).mean(), TypeError,
                   "[mean] could not infer the output dtype: input dtype Long is not floating");
  EXPECT_THROW_MSG(ones({2, 3}).sum({2}), IndexError,
                   "[sum] dim 2 is out of range for a tensor of 2 dims");
  EXPECT_THROW_MSG(ones({2, 3}).sum({1, -1}), ValueError, "dim 1 appears more than once");
  EXPECT_EQ(full({2}, std::numeric_limits<int64_t>::max()).sum().item<int64_t>(), -2);  // wraps
}
