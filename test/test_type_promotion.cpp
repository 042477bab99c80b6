// Type promotion: each rule of docs/type_promotion.md.
#include "test_util.h"

using namespace xten;
using namespace xten::testing;

TEST(PromoteTypes, Lattice) {
  EXPECT_EQ(promote_types(kBool, kInt), kInt);
  EXPECT_EQ(promote_types(kBool, kHalf), kHalf);
  EXPECT_EQ(promote_types(kByte, kChar), kShort);
  EXPECT_EQ(promote_types(kByte, kShort), kShort);
  EXPECT_EQ(promote_types(kByte, kLong), kLong);
  EXPECT_EQ(promote_types(kChar, kInt), kInt);
  EXPECT_EQ(promote_types(kLong, kHalf), kHalf);
  EXPECT_EQ(promote_types(kInt, kBFloat16), kBFloat16);
  EXPECT_EQ(promote_types(kHalf, kBFloat16), kFloat);
  EXPECT_EQ(promote_types(kBFloat16, kDouble), kDouble);
  EXPECT_EQ(promote_types(kFloat, kHalf), kFloat);
  // Symmetric, and idempotent.
  for (ScalarType a : all_dtypes()) {
    EXPECT_EQ(promote_types(a, a), a);
    for (ScalarType b : all_dtypes()) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
  }
}

TEST(PromoteTypes, CanCast) {
  EXPECT_TRUE(can_cast(kInt, kFloat));
  EXPECT_TRUE(can_cast(kDouble, kHalf));  // same category, narrower: allowed
  EXPECT_FALSE(can_cast(kFloat, kLong));  // floating -> integral
  EXPECT_FALSE(can_cast(kInt, kBool));    // non-bool -> bool
  EXPECT_TRUE(can_cast(kBool, kByte));
}

TEST(ResultType, DimensionedTensors) {
  EXPECT_EQ((ones({2}, kInt) + ones({2}, kLong)).dtype(), kLong);
  EXPECT_EQ((ones({2}, kByte) + ones({2}, kChar)).dtype(), kShort);
  EXPECT_EQ((ones({2}, kInt) + ones({2}, kHalf)).dtype(), kHalf);
  EXPECT_EQ((ones({2}, kHalf) + ones({2}, kBFloat16)).dtype(), kFloat);
  EXPECT_EQ((ones({2}, kBool) + ones({2}, kBool)).dtype(), kBool);
}

TEST(ResultType, ZeroDimTensorsRaiseCategoryNotWidth) {
  // Same category: the dimensioned tensor's dtype wins.
  EXPECT_EQ((ones({2}, kInt) + ones({}, kLong)).dtype(), kInt);
  EXPECT_EQ((ones({2}, kHalf) + ones({}, kDouble)).dtype(), kHalf);
  // Higher category: the zero-dim tensor's dtype joins.
  EXPECT_EQ((ones({2}, kInt) + ones({}, kDouble)).dtype(), kDouble);
  EXPECT_EQ((ones({2}, kBool) + ones({}, kInt)).dtype(), kInt);
  // Only zero-dim tensors: ordinary promotion among them.
  EXPECT_EQ((ones({}, kInt) + ones({}, kLong)).dtype(), kLong);
}

TEST(ResultType, ScalarsRaiseCategoryToDefault) {
  EXPECT_EQ((ones({2}, kInt) * 2.5).dtype(), kFloat);   // float Scalar -> default float
  EXPECT_EQ((ones({2}, kInt) * 2).dtype(), kInt);       // int Scalar: no change
  EXPECT_EQ((ones({2}, kByte) + (-1)).dtype(), kByte);  // not even for a negative value
  EXPECT_EQ((ones({2}, kHalf) + 2.5).dtype(), kHalf);
  EXPECT_EQ((ones({2}, kBool) + 1).dtype(), kLong);
  EXPECT_EQ((ones({2}, kBool) + true).dtype(), kBool);
  EXPECT_EQ((ones({}, kInt) + 2.5).dtype(), kFloat);  // zero-dim tensor vs Scalar
  EXPECT_EQ((ones({}, kDouble) + 2).dtype(), kDouble);
  EXPECT_EQ((ones({1}, kLong) * 0.5).item<float>(), 0.5f) << "value, not only dtype";
}

TEST(ResultType, DivisionAndComparisons) {
  EXPECT_EQ((ones({2}, kInt) / ones({2}, kInt)).dtype(), kFloat);  // true division
  EXPECT_EQ(div(ones({2}, kInt), ones({2}, kInt), "floor").dtype(), kInt);
  EXPECT_EQ((ones({2}, kDouble) < ones({2}, kInt)).dtype(), kBool);
  EXPECT_EQ((ones({2}, kInt) == 1.5).dtype(), kBool);
  // The comparison happens in the promoted dtype: 1 == 1.5 is false, not 1 == 1.
  EXPECT_FALSE(eq(ones({1}, kInt), 1.5).item<bool>());
}

TEST(ResultType, InPlaceMustHoldTheResult) {
  Tensor i = ones({2}, kInt);
  EXPECT_THROW_MSG(i.add_(ones({2}, kFloat)), TypeError,
                   "[add_] result type Float can't be cast to the desired output type Int");
  EXPECT_THROW_MSG(i.mul_(1.5), TypeError,
                   "result type Float can't be cast to the desired output type Int");
  Tensor f = ones({2}, kFloat);
  f.add_(full({2}, 1e-10, kDouble));  // computes in float64, stores float32
  EXPECT_EQ(f.dtype(), kFloat);
  EXPECT_EQ(f.sum().item<float>(), 2.0f);
  Tensor b = ones({2}, kBool);
  EXPECT_THROW_MSG(b.add_(ones({2}, kInt)), TypeError,
                   "can't be cast to the desired output type Bool");
}
