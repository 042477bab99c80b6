// Binary ops on CPU against double-precision references, for every supported dtype, on
// contiguous, non-contiguous, broadcast, zero-size and zero-dim inputs.
#include <cmath>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {

using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using RefFn = std::function<double(double, double)>;

struct Layout {
  const char* name;
  std::vector<int64_t> a, b;
  bool non_contiguous;
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> l{{"contiguous", {4, 5}, {4, 5}, false},
                                     {"non-contiguous", {4, 6}, {4, 6}, true},
                                     {"broadcast", {3, 1, 5}, {4, 1}, false},
                                     {"zero-size", {0, 3}, {1, 3}, false},
                                     {"zero-dim", {}, {}, false},
                                     {"zero-dim with dims", {2, 3}, {}, false},
                                     {"large (threaded)", {300, 257}, {257}, true}};
  return l;
}

// Runs fn over every layout for inputs of dtype t, comparing with ref in double. The
// reference sees the inputs converted to `compute` (promotion), and its result is rounded
// to the output dtype.
void check_binary(const std::string& name, const BinaryFn& fn, const RefFn& ref, ScalarType t,
                  double lo = -8, double hi = 8, bool nonzero_b = false) {
  for (const Layout& l : layouts()) {
    Tensor a = random_tensor(l.a, t, lo, hi), b = random_tensor(l.b, t, lo, hi);
    if (nonzero_b) b = where(b.eq(0), ones_like(b), b);
    if (l.non_contiguous) {
      a = non_contiguous(a);
      b = non_contiguous(b);
    }
    Tensor out = fn(a, b);
    EXPECT_EQ(out.sizes(), IntArrayRef(broadcast_shapes("test", a.sizes(), b.sizes())));
    const ScalarType compute = out.dtype() == kBool ? result_type(a, b) : out.dtype();
    expect_elements(
        out,
        [&](auto& i) {
          return ref(round_to(value_at(a, i), compute), round_to(value_at(b, i), compute));
        },
        name + " " + to_string(t) + " " + l.name);
  }
}

double wrap_as(double v, ScalarType t) {
  return round_to(v, t);
}

}  // namespace

TEST(Binary, AddSubMul) {
  manual_seed(10);
  for (ScalarType t : all_dtypes()) {
    check_binary(
        "add", [](auto& a, auto& b) { return a + b; }, [](double x, double y) { return x + y; }, t);
    check_binary(
        "mul", [](auto& a, auto& b) { return a * b; }, [](double x, double y) { return x * y; }, t);
    if (t == kBool) continue;
    check_binary(
        "sub", [](auto& a, auto& b) { return a - b; }, [](double x, double y) { return x - y; }, t);
    check_binary(
        "add alpha", [](auto& a, auto& b) { return add(a, b, 3); },
        [](double x, double y) { return x + 3 * y; }, t);
    check_binary(
        "sub alpha", [](auto& a, auto& b) { return sub(a, b, 2); },
        [](double x, double y) { return x - 2 * y; }, t);
  }
  check_binary(
      "add float alpha", [](auto& a, auto& b) { return add(a, b, 0.5); },
      [](double x, double y) { return x + 0.5 * y; }, kFloat);
}

TEST(Binary, IntegerOverflowWraps) {
  Tensor a = full({1}, 200, kByte);
  EXPECT_EQ((a + a).item<int>(), 144);
  Tensor m = full({1}, std::numeric_limits<int32_t>::min(), kInt);
  EXPECT_EQ((m * -1).item<int>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(div(m, full({1}, -1, kInt), "trunc").item<int>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(remainder(m, full({1}, -1, kInt)).item<int>(), 0);
}

TEST(Binary, AddSubErrors) {
  EXPECT_THROW_MSG(ones({2}, kBool) - ones({2}, kBool), TypeError,
                   "subtraction of bool tensors is not supported");
  EXPECT_THROW_MSG(
      add(ones({2}, kInt), ones({2}, kInt), 0.5), TypeError,
      "for integral input tensors, alpha must not be a floating point number (got 0.5)");
  EXPECT_THROW_MSG(ones({2, 3}) + ones({3, 2}), ValueError,
                   "[add] shapes (2, 3) and (3, 2) are not broadcastable");
  Tensor e = zeros({1}).expand({3});
  EXPECT_THROW_MSG(e.add_(ones({3})), ValueError,
                   "[add_] the written-to tensor (sizes (3), strides (0))");
  Tensor s = zeros({3});
  EXPECT_THROW_MSG(s.add_(ones({2, 3})), ValueError,
                   "[add_] output with shape (3) doesn't match the broadcast shape (2, 3)");
}

TEST(Binary, InPlaceAndOperators) {
  Tensor a = arange(6, kFloat).reshape({2, 3});
  Tensor b = a.t();  // in-place through a non-contiguous view
  b.add_(1).mul_(2);
  expect_elements(
      a, [](auto& i) { return 2.0 * (i[0] * 3 + i[1] + 1); }, "in-place on a view");
  a -= 2;
  a /= 2;
  a += ones({3});
  a *= full({2, 1}, 3.0);
  expect_elements(
      a, [](auto& i) { return 3.0 * (i[0] * 3 + i[1] + 1); }, "compound operators");
  Tensor c = 1 - a;
  Tensor d = 2 * a / 4;
  expect_elements(
      c, [&](auto& i) { return 1 - value_at(a, i); }, "scalar - tensor");
  expect_elements(
      d, [&](auto& i) { return value_at(a, i) / 2; }, "scalar * tensor");
  expect_elements(
      -a, [&](auto& i) { return -value_at(a, i); }, "unary minus");
}

TEST(Binary, Division) {
  manual_seed(11);
  for (ScalarType t : all_dtypes()) {
    if (t == kBool) continue;
    check_binary(
        "div", [](auto& a, auto& b) { return a / b; }, [](double x, double y) { return x / y; }, t,
        -8, 8, true);
    check_binary(
        "div trunc", [](auto& a, auto& b) { return div(a, b, "trunc"); },
        [](double x, double y) { return std::trunc(x / y); }, t, -8, 8, true);
    check_binary(
        "div floor", [](auto& a, auto& b) { return div(a, b, "floor"); },
        [](double x, double y) { return std::floor(x / y); }, t, -8, 8, true);
    check_binary(
        "remainder", [](auto& a, auto& b) { return remainder(a, b); },
        [](double x, double y) {
          double r = std::fmod(x, y);
          return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
        },
        t, -8, 8, true);
    check_binary(
        "fmod", [](auto& a, auto& b) { return fmod(a, b); },
        [](double x, double y) { return std::fmod(x, y); }, t, -8, 8, true);
  }
  EXPECT_EQ((ones({2}, kInt) / ones({2}, kInt)).dtype(), kFloat);
  EXPECT_TRUE(std::isinf((ones({1}) / zeros({1})).item<float>()));
  EXPECT_THROW_MSG(div(ones({2}, kInt), zeros({2}, kInt), "floor"), ValueError,
                   "[div] integer division by zero");
  EXPECT_THROW_MSG(remainder(ones({2}, kLong), 0), ValueError,
                   "[remainder] integer division by zero");
  EXPECT_THROW_MSG(div(ones({2}), ones({2}), "round"), ValueError,
                   "rounding_mode must be None, 'trunc' or 'floor', but got 'round'");
  EXPECT_EQ(div(full({1}, -7), full({1}, 2), "floor").item<int64_t>(), -4);
  EXPECT_EQ(remainder(full({1}, -7), 3).item<int64_t>(), 2);
  EXPECT_EQ(fmod(full({1}, -7), 3).item<int64_t>(), -1);
  EXPECT_EQ(div(full({1}, -0.5), full({1}, 1.0), "floor").item<float>(), -1.0f);
}

TEST(Binary, PowMaxMinAtan2) {
  manual_seed(12);
  for (ScalarType t : all_dtypes()) {
    if (t == kBool) continue;
    check_binary(
        "pow", [](auto& a, auto& b) { return pow(a, b.abs()); },
        [t](double x, double y) { return wrap_as(std::pow(x, std::abs(y)), t); }, t, -3, 4);
    check_binary(
        "maximum", [](auto& a, auto& b) { return maximum(a, b); },
        [](double x, double y) { return std::max(x, y); }, t);
    check_binary(
        "minimum", [](auto& a, auto& b) { return minimum(a, b); },
        [](double x, double y) { return std::min(x, y); }, t);
  }
  for (ScalarType t : float_dtypes())
    check_binary(
        "atan2", [](auto& a, auto& b) { return atan2(a, b); },
        [](double x, double y) { return std::atan2(x, y); }, t);
  EXPECT_EQ(atan2(ones({2}, kInt), ones({2}, kInt)).dtype(), kFloat);
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(maximum(tensor({nan}), tensor({1.f})).item<float>()));
  EXPECT_TRUE(std::isnan(minimum(tensor({1.f}), tensor({nan})).item<float>()));
  EXPECT_EQ(pow(full({1}, -1), full({1}, -3)).item<int64_t>(), -1);  // integer tensor exponents
  EXPECT_EQ(pow(full({1}, 2), full({1}, -1)).item<int64_t>(), 0);
  EXPECT_EQ(pow(full({1}, 3), 4).item<int64_t>(), 81);
  EXPECT_EQ(pow(2, arange(4)).sum().item<int64_t>(), 15);
  EXPECT_EQ(pow(full({1}, 4), 0.5).item<float>(), 2.0f);
  EXPECT_THROW_MSG(pow(full({1}, 2), -1), ValueError,
                   "integers to negative integer powers are not allowed");
  EXPECT_THROW_MSG(maximum(ones({2}), ones({3})), ValueError, "[maximum] shapes (2) and (3)");
}

// pow(x, 2) is the square (a unary op, kernels/cpu/binary.cpp): the same values as pow's, bit for
// bit (one rounding either way), in place too, and an integer base still promotes to float.
TEST(Binary, PowOfTwoIsTheSquare) {
  manual_seed(5);
  for (ScalarType t : float_dtypes()) {
    const Tensor x = random_tensor({300, 70}, t, -40, 40);
    const Tensor want = x.to(kDouble).mul(x.to(kDouble)).to(t);
    EXPECT_TRUE(pow(x, 2).eq(want).all().item<bool>()) << to_string(t);
    EXPECT_TRUE(pow(non_contiguous(x), 2).eq(non_contiguous(want)).all().item<bool>());
    Tensor y = x.clone();
    pow_(y, 2);
    EXPECT_TRUE(y.eq(want).all().item<bool>()) << to_string(t) << " in place";
  }
  const Tensor i = arange(-5, 5);
  EXPECT_EQ(pow(i, 2.0).dtype(), kFloat);
  EXPECT_TRUE(pow(i, 2.0).eq((i * i).to(kFloat)).all().item<bool>());
  EXPECT_EQ(pow(i, 2).dtype(), kLong);
  EXPECT_TRUE(pow(full({64}, NAN), 2).isnan().all().item<bool>());
}

TEST(Binary, ComparisonsAndLogical) {
  manual_seed(13);
  for (ScalarType t : all_dtypes()) {
    check_binary(
        "eq", [](auto& a, auto& b) { return a == b; }, [](double x, double y) { return x == y; }, t,
        -2, 2);
    check_binary(
        "ne", [](auto& a, auto& b) { return a != b; }, [](double x, double y) { return x != y; }, t,
        -2, 2);
    check_binary(
        "lt", [](auto& a, auto& b) { return a < b; }, [](double x, double y) { return x < y; }, t,
        -2, 2);
    check_binary(
        "le", [](auto& a, auto& b) { return a <= b; }, [](double x, double y) { return x <= y; }, t,
        -2, 2);
    check_binary(
        "gt", [](auto& a, auto& b) { return a > b; }, [](double x, double y) { return x > y; }, t,
        -2, 2);
    check_binary(
        "ge", [](auto& a, auto& b) { return a >= b; }, [](double x, double y) { return x >= y; }, t,
        -2, 2);
    check_binary(
        "logical_and", [](auto& a, auto& b) { return logical_and(a, b); },
        [](double x, double y) { return x != 0 && y != 0; }, t, -2, 2);
    check_binary(
        "logical_or", [](auto& a, auto& b) { return logical_or(a, b); },
        [](double x, double y) { return x != 0 || y != 0; }, t, -2, 2);
    check_binary(
        "logical_xor", [](auto& a, auto& b) { return logical_xor(a, b); },
        [](double x, double y) { return (x != 0) != (y != 0); }, t, -2, 2);
  }
  EXPECT_EQ((ones({2}) < 2).dtype(), kBool);
  EXPECT_EQ((arange(5) >= 2).sum().item<int64_t>(), 3);
  EXPECT_FALSE((tensor({std::nanf("")}) == tensor({std::nanf("")})).item<bool>());
}

TEST(Binary, Bitwise) {
  manual_seed(14);
  for (ScalarType t : {kBool, kByte, kChar, kShort, kInt, kLong}) {
    auto ref_and = [t](double x, double y) {
      return t == kBool ? double(x && y) : double(int64_t(x) & int64_t(y));
    };
    auto ref_or = [t](double x, double y) {
      return t == kBool ? double(x || y) : double(int64_t(x) | int64_t(y));
    };
    auto ref_xor = [t](double x, double y) {
      return t == kBool ? double((x != 0) != (y != 0)) : double(int64_t(x) ^ int64_t(y));
    };
    check_binary(
        "bitwise_and", [](auto& a, auto& b) { return a & b; }, ref_and, t, -20, 20);
    check_binary(
        "bitwise_or", [](auto& a, auto& b) { return a | b; }, ref_or, t, -20, 20);
    check_binary(
        "bitwise_xor", [](auto& a, auto& b) { return a ^ b; }, ref_xor, t, -20, 20);
  }
  EXPECT_THROW_MSG(ones({2}) & ones({2}), NotImplementedError,
                   "[bitwise_and] not implemented for dtype Float");
}

TEST(Ternary, Where) {
  manual_seed(15);
  for (ScalarType t : all_dtypes()) {
    Tensor c = random_tensor({3, 4}, kBool), a = random_tensor({3, 4}, t),
           b = random_tensor({4}, t);
    Tensor out = where(non_contiguous(c), a, b);
    expect_elements(
        out, [&](auto& i) { return value_at(c, i) ? value_at(a, i) : value_at(b, i); }, "where");
  }
  EXPECT_EQ(where(ones({2}, kBool), ones({2}, kInt), ones({2}, kDouble)).dtype(), kDouble);
  EXPECT_EQ(where(ones({2}, kBool), 1, 2.5).dtype(), kFloat);
  EXPECT_THROW_MSG(where(ones({2}), ones({2}), ones({2})), TypeError,
                   "[where] expected the condition to be a bool tensor, but got Float");
  EXPECT_THROW_MSG(where(ones({2}, kBool), ones({3}), ones({2})), ValueError, "[where] shapes");
}

TEST(Ternary, Clamp) {
  manual_seed(16);
  for (ScalarType t : all_dtypes()) {
    if (t == kBool) continue;
    Tensor a = non_contiguous(random_tensor({5, 6}, t));
    expect_elements(
        clamp(a, -2, 3), [&](auto& i) { return std::min(std::max(value_at(a, i), -2.0), 3.0); },
        "clamp");
    expect_elements(
        clamp(a, std::nullopt, 1), [&](auto& i) { return std::min(value_at(a, i), 1.0); },
        "clamp max");
    expect_elements(
        clamp(a, 4, 2), [&](auto&) { return 2.0; }, "clamp min > max");
  }
  EXPECT_EQ(clamp(ones({2}, kInt), 0.5).dtype(), kFloat);
  EXPECT_TRUE(std::isnan(clamp(tensor({std::nanf("")}), 0, 1).item<float>()));
  {  // the vectorized loop (1,000 elements): NaN elements stay NaN, a NaN bound makes all NaN
    Tensor x = arange(1000, kFloat) - 500;
    x.index_put_({tensor(std::vector<int64_t>{3, 517})}, full({2}, NAN));
    const Tensor y = clamp(x, -10, 10);
    EXPECT_TRUE(std::isnan(y.select(0, 3).item<float>()) &&
                std::isnan(y.select(0, 517).item<float>()));
    EXPECT_EQ(y.select(0, 0).item<float>(), -10.0f);
    EXPECT_EQ(y.select(0, 999).item<float>(), 10.0f);
    EXPECT_EQ(y.select(0, 505).item<float>(), 5.0f);
    EXPECT_TRUE(isnan(clamp(x, NAN, 1)).all().item<bool>());
    EXPECT_TRUE(isnan(clamp(x, std::nullopt, NAN)).all().item<bool>());
    const Tensor i = clamp(arange(1000, kLong) - 500, std::nullopt, 7);
    EXPECT_EQ(i.min().item<int64_t>(), -500);
    EXPECT_EQ(i.max().item<int64_t>(), 7);
  }
  Tensor b = arange(5, kFloat);
  b.clamp_(1, 3);
  EXPECT_EQ(b.sum().item<float>(), 1 + 1 + 2 + 3 + 3.0f);
  EXPECT_THROW_MSG(clamp(ones({2}), std::nullopt, std::nullopt), ValueError,
                   "at least one of min and max must be given");
  EXPECT_THROW_MSG(clamp(ones({2}, kBool), 0), NotImplementedError,
                   "[clamp] not implemented for dtype Bool");
}

// Note [Clamp in the vector] (kernels/cpu/binary.cpp): the vector form (max then min) keeps the
// scalar form's selects bit for bit: NaN elements of either sign stay, zeros of either sign
// against zero bounds of either sign, lo > hi, one bound missing; contiguous runs of 1133
// (packets, then a tail) in every floating dtype, at whichever level runs.
TEST(Ternary, ClampVectorFormIsTheScalarSelects) {
  manual_seed(17);
  const int64_t n = 16 * 70 + 13;
  const Tensor r = randn({n}) * 2;
  std::vector<float> x(static_cast<const float*>(r.data_ptr()),
                       static_cast<const float*>(r.data_ptr()) + n);
  const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f};
  for (int64_t i = 0; i < n; i += 3) x[i] = specials[(i / 3) % std::size(specials)];
  const std::vector<std::pair<std::optional<double>, std::optional<double>>> bounds = {
      {0.0, 1.0},  {-0.0, 0.0},          {0.0, -0.0},          {-1.0, -0.0},
      {2.0, -2.0}, {std::nullopt, -0.0}, {-0.0, std::nullopt}, {-1.0, 1.0}};
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (const auto& [lo, hi] : bounds) {
      std::vector<double> expect(n);
      for (int64_t i = 0; i < n; ++i) {
        double y = x[i];
        if (lo && y < *lo) y = *lo;
        if (hi && y > *hi) y = *hi;
        expect[i] = y;
      }
      const Tensor got = clamp(tensor(x).to(t), lo, hi);
      EXPECT_TRUE(same_bytes(got, tensor(expect).to(t)))
          << to_string(t) << " clamp(" << (lo ? *lo : -INFINITY) << ", " << (hi ? *hi : INFINITY)
          << ")";
    }
  }
}

// addcmul: self + value * t1 * t2 against double, broadcast and strided; with value 1 the bits
// of mul then add (as the composite the XPU and autograd run); integers exact; the errors.
TEST(Ternary, Addcmul) {
  manual_seed(18);
  for (ScalarType t : float_dtypes()) {
    const Tensor s = random_tensor({4, 1, 5}, t), a = random_tensor({3, 5}, t),
                 b = random_tensor({4, 3, 1}, t);
    const Tensor got = addcmul(s, a, b, 0.5);
    ASSERT_EQ(got.sizes(), IntArrayRef({4, 3, 5}));
    expect_elements(
        got,
        [&](auto& i) {
          return value_at(s, {i[0], 0, i[2]}) +
                 0.5 * value_at(a, {i[1], i[2]}) * value_at(b, {i[0], i[1], 0});
        },
        std::string("addcmul ") + to_string(t), 4.0);
  }
  // Long contiguous runs (the vector form), strided and broadcast operands (the block form).
  const Tensor s = randn({3000}), a = randn({3000}), b = randn({3000});
  EXPECT_TRUE(same_bytes(addcmul(s, a, b), a * b + s));
  EXPECT_TRUE(same_bytes(a.addcmul(s, b, 3), s * 3 * b + a));
  const Tensor sn = non_contiguous(randn({64, 70})), an = non_contiguous(randn({64, 70}));
  EXPECT_TRUE(same_bytes(addcmul(sn, an, b.narrow(0, 0, 70)), an * b.narrow(0, 0, 70) + sn));
  const Tensor x = randn({2, 8, 30, 30}), scale = randn({1, 8, 1, 1}), shift = randn({1, 8, 1, 1});
  EXPECT_TRUE(same_bytes(addcmul(shift, x, scale), x * scale + shift));
  // batch_norm in evaluation mode is its scale and shift, in one pass: the same bits.
  const Tensor w = randn({8}), bias = randn({8}), rm = randn({8}), rv = rand({8}) + 0.5;
  const Tensor sc = rsqrt(rv + 1e-5) * w, sh = -rm * sc + bias;
  EXPECT_TRUE(same_bytes(batch_norm(x, w, bias, rm, rv, false, 0.1, 1e-5),
                         x * sc.view({1, 8, 1, 1}) + sh.view({1, 8, 1, 1})));
  // Integers, exact (and wrapping), and a float self promoting them.
  const Tensor i = arange(-5, 5, 1, TensorOptions(kInt));
  EXPECT_TRUE(same_bytes(addcmul(i, i, i, 2), i * i * 2 + i));
  EXPECT_EQ(addcmul(full({2}, 0.5), i.narrow(0, 0, 2), i.narrow(0, 0, 2)).dtype(), kFloat);
  // value takes no part in the promotion (the fuzzer found the composite raising this to float).
  EXPECT_EQ(addcmul(ones({2}, kHalf), ones({2}, kByte), ones({2}, kBool), 2.5).dtype(), kHalf);
  EXPECT_THROW_MSG(addcmul(i, i, i, 0.5), TypeError,
                   "[addcmul] for integral input tensors, value must not be a floating point "
                   "number (got 0.5)");
  const Tensor m = ones({2}, kBool);
  EXPECT_THROW_MSG(addcmul(m, m, m), NotImplementedError,
                   "[addcmul] not implemented for dtype Bool");
  EXPECT_THROW_MSG(addcmul(ones({2}), ones({3}), ones({2})), ValueError, "addcmul");
}

TEST(Ternary, Lerp) {
  manual_seed(17);
  for (ScalarType t : float_dtypes()) {
    Tensor s = random_tensor({4, 5}, t), e = random_tensor({5}, t),
           w = random_tensor({4, 1}, t, 0, 1);
    expect_elements(
        lerp(s, e, w),
        [&](auto& i) {
          const double a = value_at(s, i), b = value_at(e, i), x = value_at(w, i);
          return a + x * (b - a);
        },
        "lerp", 4.0);
    expect_elements(
        lerp(s, e, 1.0), [&](auto& i) { return value_at(e, i); }, "lerp weight 1 is exact");
  }
  // PyTorch's result to the bit: |w| < 0.5 ? fma(w, end - start, start)
  // : fma(w - 1, end - start, end). The expected values are PyTorch 2.11's float32 results;
  // without the fused multiply-add the last three differ by one ulp.
  const Tensor s = tensor({1.f, 2.f, -3.f, 5.f}), e = tensor({4.f, -7.f, 2.5f, 3.f});
  const Tensor w = tensor({-0.7f, 0.3f, 0.6f, 1.2f});
  EXPECT_TRUE(same_bytes(lerp(s, e, w), tensor({-1.1000001430511475f, -0.7000001072883606f,
                                                0.3000001311302185f, 2.5999999046325684f})));
  const Tensor a = random_tensor({4096}, kDouble), b = random_tensor({4096}, kDouble),
               x = random_tensor({4096}, kDouble, -1.5, 1.5);
  const Tensor got = lerp(a.to(kFloat), b.to(kFloat), x.to(kFloat));
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float fs = static_cast<float>(a.data_ptr<double>()[i]),
                fe = static_cast<float>(b.data_ptr<double>()[i]),
                fw = static_cast<float>(x.data_ptr<double>()[i]);
    const float expect =
        std::fabs(fw) < 0.5f ? std::fma(fw, fe - fs, fs) : std::fma(fw - 1.0f, fe - fs, fe);
    ASSERT_EQ(got.data_ptr<float>()[i], expect)
        << "element " << i << ": lerp(" << fs << ", " << fe << ", " << fw << ")";
  }
  EXPECT_THROW_MSG(lerp(ones({2}), ones({2}, kDouble), 0.5), TypeError,
                   "expected end of dtype Float (self's), but got Double");
  EXPECT_THROW_MSG(lerp(ones({2}, kInt), ones({2}, kInt), 0.5), NotImplementedError,
                   "[lerp] not implemented for dtype Int");
}

namespace {
// Host memory labelled as an XPU device: enough to make tensors that claim another device.
class FakeXpuAllocator : public Allocator {
 public:
  DataPtr allocate(size_t n, Device d) override {
    DataPtr host = cpu_allocator()->allocate(n, Device(kCPU));
    void* p = host.get();
    auto* keep = new DataPtr(std::move(host));
    return DataPtr(
        p, keep, [](void* k) { delete static_cast<DataPtr*>(k); }, d);
  }
};
}  // namespace

TEST(Binary, TensorsOnDifferentDevices) {
  FakeXpuAllocator fake;
  Allocator* const real = allocator_for(kXPU);
  set_allocator(kXPU, &fake);
  Tensor x = empty_tensor({2}, kFloat, Device(kXPU, 0));
  EXPECT_EQ(x.device().str(), "xpu:0");
  // Through the CPU kernel directly: it must refuse.
  auto add_op = Dispatcher::singleton()
                    .find("xten::add.Tensor")
                    .typed<Tensor(const Tensor&, const Tensor&, const Scalar&)>();
  EXPECT_THROW_MSG(add_op.redispatch(DispatchKeySet(DispatchKey::CPU), ones({2}), x, 1),
                   DeviceError,
                   "[add] expected all tensors on the same device, but found cpu and xpu:0");
  // Through the front end, the XPU key wins; the XPU kernel refuses alike.
  EXPECT_THROW_MSG(ones({2}) + x, DeviceError,
                   "[add] expected all tensors on the same device, but found cpu and xpu:0");
  set_allocator(kXPU, real);
  // A zero-dim CPU tensor may join any device's op (like a Scalar).
  EXPECT_EQ((ones({2}) + ones({})).numel(), 2);
  EXPECT_EQ(rand({2}, {kHalf, Device("cpu")}).dtype(), kHalf);
}

// Runs of contiguous bfloat16 or float16 operands go a packet at a time in registers at the avx2
// (8 lanes) and avx512 (16) levels (Note [16-bit runs in registers] in kernels/cpu/loops.h),
// strided ones through the float blocks: both give the float result rounded once to the 16-bit
// type, NaN, infinities, signed zeros and values that round to subnormals included (with AVX-512
// BF16's conversion too, whose pairs with a subnormal result keep the integer rounding); an
// operand that is a scalar (stride 0) is widened once. n = 1133: at either level pairs of
// packets, then one packet, then a tail of 5 that takes the blocks.
TEST(Binary, SixteenBitRunsMatchTheFloatResultRoundedOnce) {
  manual_seed(88);
  const int64_t n = 16 * 70 + 13;
  Tensor a = randn({n}) * 4, b = randn({n}) + 0.25;
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            -0.0f,
                            0.0f,
                            3e-39f,
                            -1e-40f,
                            65504.0f,
                            1e-7f,
                            2e-20f};  // squared: a subnormal float
  for (size_t k = 0; k < std::size(specials); ++k) {
    a.select(0, static_cast<int64_t>(7 * k + 3)).fill_(specials[k]);
    b.select(0, static_cast<int64_t>(11 * k + 5)).fill_(specials[k]);
  }
  // Sums exactly halfway between two bfloat16 (1 + 2^-8, 1 + 3 * 2^-8) or float16 (1 + 2^-11)
  // values: round to even.
  const float ties[][2] = {{1.0f, 0x1p-8f},
                           {1.0f + 0x1p-7f, 0x1p-8f},
                           {-1.0f, -0x1p-8f},
                           {1.0f, 0x1p-11f},
                           {1.0f + 0x1p-10f, 0x1p-11f}};
  for (size_t k = 0; k < std::size(ties); ++k) {
    a.select(0, static_cast<int64_t>(200 + k)).fill_(ties[k][0]);
    b.select(0, static_cast<int64_t>(200 + k)).fill_(ties[k][1]);
  }
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&, const Tensor&)>>>
      ops = {{"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
             {"mul", [](const Tensor& x, const Tensor& y) { return x * y; }},
             {"div", [](const Tensor& x, const Tensor& y) { return x / y; }},
             {"square", [](const Tensor& x, const Tensor&) { return pow(x, 2); }},
             {"sqrt", [](const Tensor& x, const Tensor&) { return sqrt(x); }},
             {"rsqrt", [](const Tensor& x, const Tensor&) { return rsqrt(x); }},
             {"relu", [](const Tensor& x, const Tensor&) { return x.relu(); }},
             {"clamp", [](const Tensor& x, const Tensor&) { return x.clamp(-1.0, 2.0); }},
             {"clamp to NaN", [](const Tensor& x, const Tensor&) { return x.clamp(NAN, 2.0); }},
             {"add a scalar", [](const Tensor& x, const Tensor&) { return x + 1.5; }}};
  for (ScalarType t : {kBFloat16, kHalf}) {
    const Tensor a16 = a.to(t), b16 = b.to(t);
    // The same values every other element of a longer tensor: strided, through the blocks.
    const Tensor a_strided = empty({2 * n}, t).narrow(0, 0, 2 * n).view({n, 2}).select(1, 0);
    const Tensor b_strided = empty({2 * n}, t).view({n, 2}).select(1, 1);
    Tensor(a_strided).copy_(a16);
    Tensor(b_strided).copy_(b16);
    for (const auto& [name, f] : ops) {
      const Tensor run = f(a16, b16);
      const Tensor once = f(a16.to(kFloat), b16.to(kFloat)).to(t);
      EXPECT_TRUE(same_bytes(run, once)) << name << " " << to_string(t);
      EXPECT_TRUE(same_bytes(f(a_strided, b_strided).contiguous(), run))
          << name << " strided " << to_string(t);
    }
  }
}
