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
  // A running float sum of 2^20 x 0.1f is off by ~1e-3 relative; pairwise lanes within 1e-6.
  EXPECT_NEAR(full({1 << 20}, 0.1).sum().item<double>(), 0.1f * 1048576.0, 0.1);
}

// Lengths around the vector steps and leaves (at AVX-512: steps of 64 floats or 32 doubles,
// leaves of 1,024 or 512; at the baseline a quarter of those), each against a float64 sum of the
// same values: the tail, the leaf and the halving all count.
TEST(Reduce, SumOfEveryLengthAroundTheBlocksMatchesFloat64) {
  manual_seed(3);
  for (ScalarType t : {kFloat, kDouble})
    for (int64_t n : {1, 15, 16, 17, 31, 63, 64, 65, 127, 255, 257, 511, 513, 1023, 1024, 1025,
                      2049, 4096 + 17, 100003}) {
      const Tensor x = rand({n}, TensorOptions().dtype(t));
      const Tensor xd = x.to(kDouble);
      const double* p = static_cast<const double*>(xd.data_ptr());
      double ref = 0;
      for (int64_t i = 0; i < n; ++i) ref += p[i];
      const double tol = (t == kFloat ? 1e-6 : 1e-14) * ref + 1e-12;
      EXPECT_NEAR(x.sum().item<double>(), ref, tol) << to_string(t) << " n=" << n;
      EXPECT_NEAR(x.mean().item<double>(), ref / n, tol / n) << to_string(t) << " n=" << n;
    }
}

// A reduction over leading dims of a contiguous input reads it row by row (column sums, the
// bias gradient's case) and stays pairwise over the rows.
TEST(Reduce, SumOverLeadingDimsMatchesTheRowPathAndStaysPairwise) {
  manual_seed(31);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    const Tensor a = random_tensor({37, 5, 130}, t, -4, 4);
    const Tensor ref = a.to(kDouble).permute({2, 0, 1}).contiguous().sum({1, 2});  // row path
    const double tol = t == kFloat ? 1e-5 : t == kDouble ? 1e-12 : 2e-2;
    EXPECT_TRUE(allclose(a.sum({0, 1}), ref, tol, tol)) << to_string(t);
    EXPECT_TRUE(allclose(a.sum({1, 0}), ref, tol, tol)) << to_string(t);  // any order of dims
    const Tensor m = a.mean({0}, true);
    EXPECT_EQ(m.sizes(), IntArrayRef({1, 5, 130}));
    EXPECT_TRUE(allclose(m, a.to(kDouble).mean({0}, true), tol, tol)) << to_string(t);
  }
  // 2^20 rows of 0.1f: a running sum is off by ~1e-3 relative; pairwise rows stay near 1e-7.
  const Tensor col = full({1 << 20, 3}, 0.1);
  const Tensor s = col.sum({0});
  const double exact = (1 << 20) * static_cast<double>(0.1f);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(s.select(0, j).item<double>(), exact, exact * 1e-6);
  // One row, and a dim of size 1: sums of one element.
  EXPECT_TRUE(allclose(full({1, 4}, 2.5).sum({0}), full({4}, 2.5), 0, 0));
  // Column blocks as wide as the threads allow (64 to 4,096 columns) and a ragged last block.
  const int threads = get_num_threads();
  const Tensor wide = random_tensor({300, 4100}, kFloat, -4, 4);
  const Tensor wide_ref = wide.to(kDouble).t().contiguous().sum({1});
  for (int t : {1, 3, 64}) {
    set_num_threads(t);
    EXPECT_TRUE(allclose(wide.sum({0}), wide_ref, 1e-5, 1e-5)) << t << " threads";
  }
  set_num_threads(threads);
}

// A dense input that is not contiguous (transposed, channels last) is summed on its memory-order
// view: reduced dims that lead in memory take the column path, trailing ones the row path, no
// transposing copy. The values are the contiguous copy's, the shape self's.
TEST(Reduce, SumOfPermutedInputsFollowsTheirMemoryOrder) {
  manual_seed(32);
  const std::vector<std::vector<int64_t>> perms = {{1, 0, 2, 3}, {0, 2, 3, 1}, {3, 2, 1, 0}};
  const std::vector<std::vector<int64_t>> dimss = {{0}, {1}, {3}, {0, 1}, {2, 3}, {1, 2, 3}, {}};
  for (ScalarType t : {kFloat, kDouble, kBFloat16}) {
    const Tensor a = random_tensor({6, 35, 7, 9}, t, -4, 4);
    const double tol = t == kFloat ? 1e-5 : t == kDouble ? 1e-12 : 3e-2;
    for (const auto& perm : perms) {
      const Tensor p = a.permute(perm);
      ASSERT_FALSE(p.is_contiguous());
      const Tensor ref = p.contiguous().to(kDouble);
      for (const auto& dims : dimss)
        for (bool keepdim : {false, true}) {
          const Tensor got = p.sum(dims, keepdim), want = ref.sum(dims, keepdim);
          ASSERT_EQ(got.sizes(), want.sizes())
              << fmt::format("{} {}", IntArrayRef(perm), IntArrayRef(dims));
          EXPECT_TRUE(allclose(got, want, tol, tol))
              << to_string(t)
              << fmt::format(" perm {} dims {}", IntArrayRef(perm), IntArrayRef(dims));
          EXPECT_TRUE(allclose(p.mean(dims, keepdim), ref.mean(dims, keepdim), tol, tol))
              << to_string(t)
              << fmt::format(" mean perm {} dims {}", IntArrayRef(perm), IntArrayRef(dims));
        }
    }
  }
  // The rows of a transposed matrix: its columns in memory.
  const Tensor m = random_tensor({300, 513}, kFloat, -1, 1).t();
  EXPECT_TRUE(allclose(m.sum({1}), m.contiguous().to(kDouble).sum({1}), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(m.sum({0}), m.contiguous().to(kDouble).sum({0}), 1e-5, 1e-5));
}

// norm's p = 1 and p = 2 over float and double rows of every length around the vector blocks,
// contiguous and transposed, against sums in double.
TEST(Reduce, NormOfLongRowsMatchesFloat64) {
  manual_seed(33);
  for (ScalarType t : {kFloat, kDouble})
    for (int64_t n : {1, 17, 64, 1000, 4096 + 5, 100003}) {
      const Tensor x = random_tensor({3, n}, t, -2, 2);
      const Tensor xd = x.to(kDouble).contiguous();
      const double* p = static_cast<const double*>(xd.data_ptr());
      for (int64_t r = 0; r < 3; ++r) {
        double s1 = 0, s2 = 0;
        for (int64_t i = 0; i < n; ++i) {
          s1 += std::abs(p[r * n + i]);
          s2 += p[r * n + i] * p[r * n + i];
        }
        const double tol = t == kFloat ? 2e-6 : 1e-13;
        EXPECT_NEAR(x.norm(1, {1}).select(0, r).item<double>(), s1, tol * s1) << n;
        EXPECT_NEAR(x.norm(2, {1}).select(0, r).item<double>(), std::sqrt(s2), tol * std::sqrt(s2))
            << n;
        EXPECT_NEAR(x.t().norm(2, {0}).select(0, r).item<double>(), std::sqrt(s2),
                    tol * std::sqrt(s2))
            << n;
      }
    }
  EXPECT_TRUE(std::isnan(tensor({1.f, NAN, 2.f}).norm().item<float>()));
  EXPECT_EQ(full({1000}, INFINITY).norm(1).item<float>(), INFINITY);
}

// bfloat16 and float16 runs are summed lane by lane as floats (widened in registers where
// lane_sum.h loads the type, else through a buffer): up to a leaf (1,024) the sum is the float
// sum of the widened run, rounded once to the input's dtype, at every CPU level; norm's p = 1
// and 2 take the same lanes over the whole row, pairwise (Note [Summation accuracy]; its old
// float loop one element at a time gave the same values after rounding, 7x slower).
TEST(Reduce, SixteenBitRunsSumAsTheirWidenedFloats) {
  manual_seed(34);
  for (ScalarType t : {kBFloat16, kHalf}) {
    for (int64_t n : {1, 7, 8, 9, 33, 100, 511, 512, 513, 1000, 1024}) {
      const Tensor x = random_tensor({3, n}, t, -4, 4), xf = x.to(kFloat);
      EXPECT_TRUE(same_bytes(x.sum({1}), xf.sum({1}).to(t))) << to_string(t) << " n=" << n;
      EXPECT_TRUE(same_bytes(x.select(0, 1).sum(), xf.select(0, 1).sum().to(t)))
          << to_string(t) << " n=" << n;
    }
    for (int64_t n : {1000, 4096 + 5, 100003}) {
      const Tensor x = random_tensor({3, n}, t, -2, 2), xf = x.to(kFloat);
      for (double p : {1.0, 2.0})
        EXPECT_TRUE(same_bytes(x.norm(p, {1}), xf.norm(p, {1}).to(t)))
            << to_string(t) << " p=" << p << " n=" << n;
    }
  }
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

namespace {
// Reference over dim `d` of a 3-D tensor: f(values along d) for every other index.
Tensor reduce_ref_check(const Tensor& a, int64_t d, const Tensor& out,
                        const std::function<double(const std::vector<double>&)>& f,
                        const std::string& what) {
  expect_elements(
      out,
      [&](auto& i) {
        std::vector<double> vals;
        for (int64_t k = 0; k < a.size(d); ++k) {
          std::vector<int64_t> idx(i.begin(), i.end());
          idx.insert(idx.begin() + d, k);
          vals.push_back(value_at(a, idx));
        }
        return f(vals);
      },
      what, 4.0);
  return out;
}
double vmax(const std::vector<double>& v) {
  double m = v[0];
  for (double x : v) m = (std::isnan(x) || x > m) ? x : m;
  return m;
}
double vmin(const std::vector<double>& v) {
  double m = v[0];
  for (double x : v) m = (std::isnan(x) || x < m) ? x : m;
  return m;
}
}  // namespace

TEST(Reduce, ProdAmaxAmin) {
  manual_seed(31);
  for (ScalarType t : all_dtypes()) {
    Tensor a = non_contiguous(random_tensor({3, 4, 5}, t, -3, 3));
    for (int64_t d : {0, 1, 2}) {
      reduce_ref_check(
          a, d, a.prod(d),
          [](auto& v) {
            double p = 1;
            for (double x : v) p *= x;
            return p;
          },
          std::string("prod ") + to_string(t));
      reduce_ref_check(a, d, a.amax({d}), vmax, std::string("amax ") + to_string(t));
      reduce_ref_check(a, d, a.amin({d}), vmin, std::string("amin ") + to_string(t));
    }
  }
  EXPECT_EQ(arange(1, 6).prod().item<int64_t>(), 120);
  EXPECT_EQ(ones({2}, kInt).prod().dtype(), kLong);
  EXPECT_EQ(arange(12).reshape({3, 4}).amax({0, 1}).item<int64_t>(), 11);
  EXPECT_EQ(arange(12).reshape({3, 4}).amax({1}, true).sizes(), IntArrayRef({3, 1}));
  EXPECT_TRUE(std::isnan(tensor({1.f, std::nanf(""), 3.f}).amax().item<float>()));
  EXPECT_THROW_MSG(zeros({0, 3}).amax(), ValueError,
                   "[amax] cannot reduce over a zero-size dimension");
  EXPECT_EQ(zeros({0, 3}).amax({1}).sizes(), IntArrayRef({0}));
}

// amax/amin/max()/min() reduce float and double rows (and 16-bit ones widened as they are
// loaded) with vector accumulators and cut one long
// row into a piece per thread (ValueOnly, reduce.cpp): the same values as the indexed path
// (max(dim), ValueIndex) on rows around the vector step, a NaN anywhere wins, infinities count.
TEST(Reduce, ValuesOnlyExtremesMatchTheIndexedPath) {
  manual_seed(32);
  const int before = get_num_threads();
  for (int threads : {1, 3}) {
    set_num_threads(threads);
    for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf, kInt})
      for (int64_t n : {1, 63, 64, 65, 1000, 100003}) {
        const Tensor x = random_tensor({3, n}, t, -50, 50);
        const std::string what = std::string(to_string(t)) + " n=" + std::to_string(n);
        EXPECT_TRUE(same_bytes(x.amax({1}), std::get<0>(max(x, 1)))) << what;
        EXPECT_TRUE(same_bytes(x.amin({1}), std::get<0>(min(x, 1)))) << what;
        EXPECT_TRUE(same_bytes(x.max(), std::get<0>(max(x.reshape({-1}), 0)))) << what;
      }
    for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
      Tensor x = random_tensor({100003}, t, -1, 1);
      x.index_put_({tensor(std::vector<int64_t>{77777})}, full({1}, NAN, t));
      EXPECT_TRUE(std::isnan(x.max().item<double>())) << to_string(t);
      EXPECT_TRUE(std::isnan(x.min().item<double>())) << to_string(t);
      EXPECT_TRUE(std::isnan(x.reshape({1, -1}).amax({1}).item<double>())) << to_string(t);
      Tensor y = random_tensor({1000}, t, -1, 1);
      y.index_put_({tensor(std::vector<int64_t>{500})}, full({1}, INFINITY, t));
      y.index_put_({tensor(std::vector<int64_t>{900})}, full({1}, -INFINITY, t));
      EXPECT_EQ(y.max().item<double>(), INFINITY);
      EXPECT_EQ(y.min().item<double>(), -INFINITY);
    }
  }
  set_num_threads(before);
}

TEST(Reduce, MaxMinWithIndicesAndArg) {
  Tensor a = tensor({3.f, 7.f, 7.f, 1.f, -2.f, 5.f}, IntArrayRef{2, 3});
  auto [values, indices] = a.max(1);
  EXPECT_EQ(values.select(0, 0).item<float>(), 7.f);
  EXPECT_EQ(indices.select(0, 0).item<int64_t>(), 1);  // the first of equals
  EXPECT_EQ(indices.select(0, 1).item<int64_t>(), 2);
  auto [mv, mi] = a.min(0, /*keepdim=*/true);
  EXPECT_EQ(mv.sizes(), IntArrayRef({1, 3}));
  EXPECT_EQ(mi.select(1, 1).item<int64_t>(), 1);
  EXPECT_EQ(a.max().item<float>(), 7.f);
  EXPECT_EQ(a.min().item<float>(), -2.f);
  EXPECT_EQ(a.argmax().item<int64_t>(), 1);
  EXPECT_EQ(a.argmin().item<int64_t>(), 4);
  EXPECT_EQ(a.argmax(0).sizes(), IntArrayRef({3}));
  EXPECT_EQ(a.argmax(std::nullopt, true).sizes(), IntArrayRef({1, 1}));
  EXPECT_EQ(tensor({1.f, std::nanf(""), 3.f}).argmax().item<int64_t>(), 1);
  manual_seed(32);
  for (ScalarType t : all_dtypes()) {
    Tensor r = random_tensor({4, 6}, t, -50, 50);
    auto [v, i] = r.max(1);
    for (int64_t row = 0; row < 4; ++row)
      EXPECT_EQ(value_at(r, {row, i.select(0, row).item<int64_t>()}), value_at(v, {row}))
          << to_string(t);
  }
  EXPECT_THROW_MSG(a.max(2), IndexError, "[max] dim 2 is out of range");
  EXPECT_THROW_MSG(zeros({0}).argmax(), ValueError,
                   "[argmax] cannot reduce over a zero-size dimension");
}

// max/min with indices over float and double rows longer than a vector step (the extreme with
// vector accumulators, then a search): the first of equal extremes, the first NaN, a zero's
// sign from the first zero, against a scalar scan.
TEST(Reduce, ExtremesWithIndicesOfLongRows) {
  manual_seed(34);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor x = randint(0, 20, {7, 301}).to(t);  // many ties
    x.select(0, 1).select(0, 200).fill_(NAN);
    x.select(0, 1).select(0, 250).fill_(NAN);
    x.select(0, 2).fill_(0.0);
    x.select(0, 2).select(0, 0).fill_(-0.0);
    x.select(0, 3).select(0, 300).fill_(100.0);
    const auto [mx, imx] = x.max(1);
    const auto [mn, imn] = x.min(1);
    for (int64_t r = 0; r < 7; ++r) {
      int64_t at_max = 0, at_min = 0;
      for (int64_t i = 1; i < 301; ++i) {
        const double v = x.select(0, r).select(0, i).item<double>();
        const double bmax = x.select(0, r).select(0, at_max).item<double>();
        const double bmin = x.select(0, r).select(0, at_min).item<double>();
        if (!std::isnan(bmax) && (std::isnan(v) || v > bmax)) at_max = i;
        if (!std::isnan(bmin) && (std::isnan(v) || v < bmin)) at_min = i;
      }
      EXPECT_EQ(imx.select(0, r).item<int64_t>(), at_max) << to_string(t) << " row " << r;
      EXPECT_EQ(imn.select(0, r).item<int64_t>(), at_min) << to_string(t) << " row " << r;
      EXPECT_EQ(x.argmax(1).select(0, r).item<int64_t>(), at_max);
    }
    EXPECT_TRUE(std::isnan(mx.select(0, 1).item<double>()));
    EXPECT_EQ(imx.select(0, 1).item<int64_t>(), 200);
    EXPECT_TRUE(std::signbit(mx.select(0, 2).item<double>()));  // the first zero is -0.0
    EXPECT_EQ(mx.select(0, 3).item<double>(), 100.0);
  }
}

TEST(Reduce, AllAny) {
  for (ScalarType t : all_dtypes()) {
    Tensor a = tensor({1, 0, 2, 3}, IntArrayRef{2, 2}).to(t);
    EXPECT_FALSE(a.all().item<bool>());
    EXPECT_TRUE(a.any().item<bool>());
    Tensor rows = a.all({1});
    EXPECT_FALSE(rows.select(0, 0).item<bool>());
    EXPECT_TRUE(rows.select(0, 1).item<bool>());
    EXPECT_EQ(rows.dtype(), kBool);
  }
  EXPECT_TRUE(zeros({0}).all().item<bool>());
  EXPECT_FALSE(zeros({0}).any().item<bool>());
  EXPECT_TRUE(tensor({std::nanf("")}).all().item<bool>());
}

TEST(Reduce, VarStd) {
  manual_seed(33);
  for (ScalarType t : float_dtypes()) {
    Tensor a = non_contiguous(random_tensor({3, 4, 5}, t));
    for (int64_t d : {0, 2}) {
      auto var_ref = [](const std::vector<double>& v, double corr) {
        double m = 0;
        for (double x : v) m += x;
        m /= v.size();
        double ss = 0;
        for (double x : v) ss += (x - m) * (x - m);
        return ss / (v.size() - corr);
      };
      reduce_ref_check(
          a, d, a.var({d}), [&](auto& v) { return var_ref(v, 1); }, "var");
      reduce_ref_check(
          a, d, a.var({d}, 0), [&](auto& v) { return var_ref(v, 0); }, "var correction 0");
      reduce_ref_check(
          a, d, a.std({d}), [&](auto& v) { return std::sqrt(var_ref(v, 1)); }, "std");
    }
  }
  // Stable far from zero: values 1e8 + {1, 2, 3} in double.
  EXPECT_NEAR((full({3}, 1e8, kDouble) + arange(1, 4, 1, kDouble)).var().item<double>(), 1.0, 1e-6);
  EXPECT_TRUE(std::isinf(ones({1}).var().item<float>()) ||
              std::isnan(ones({1}).var().item<float>()));
  EXPECT_THROW_MSG(arange(3).var(), NotImplementedError, "[var] not implemented for dtype Long");
}

TEST(Reduce, Norm) {
  Tensor a = tensor({3.f, -4.f, 0.f, 1.f}, IntArrayRef{2, 2});
  EXPECT_FLOAT_EQ(a.norm().item<float>(), std::sqrt(26.f));
  EXPECT_FLOAT_EQ(a.norm(1).item<float>(), 8.f);
  EXPECT_FLOAT_EQ(a.norm(INFINITY).item<float>(), 4.f);
  EXPECT_FLOAT_EQ(a.norm(-INFINITY).item<float>(), 0.f);
  EXPECT_FLOAT_EQ(a.norm(0).item<float>(), 3.f);
  EXPECT_FLOAT_EQ(norm(a, 0).item<float>(), 3.f);  // the literal 0 is p, not a null const char*
  EXPECT_FLOAT_EQ(norm(a, -INFINITY).item<float>(), 0.f);  // stays a float, not an int
  EXPECT_NEAR(a.norm(3).item<float>(), std::cbrt(27.f + 64.f + 1.f), 1e-5);
  EXPECT_FLOAT_EQ(norm(a, "fro").item<float>(), std::sqrt(26.f));
  Tensor rows = a.norm(2, {1});
  EXPECT_FLOAT_EQ(rows.select(0, 0).item<float>(), 5.f);
  EXPECT_EQ(a.norm(2, {1}, true).sizes(), IntArrayRef({2, 1}));
  EXPECT_NEAR(ones({1 << 18}).norm().item<float>(), 512.f, 1e-3);  // threaded partial sums
  EXPECT_THROW_MSG(norm(a, "nuc"), ValueError, "p must be a number or 'fro', but got 'nuc'");
  EXPECT_THROW_MSG(arange(3).norm(), NotImplementedError, "[norm] not implemented for dtype Long");
}

TEST(Reduce, Logsumexp) {
  manual_seed(34);
  for (ScalarType t : float_dtypes()) {
    Tensor a = random_tensor({3, 5}, t);
    reduce_ref_check(
        a.unsqueeze(2), 1, a.logsumexp({1}).unsqueeze(1),
        [](auto& v) {
          double s = 0;
          for (double x : v) s += std::exp(x);
          return std::log(s);
        },
        std::string("logsumexp ") + to_string(t));
  }
  Tensor big = tensor({1000.f, 1000.f});
  EXPECT_NEAR(big.logsumexp({0}).item<float>(), 1000.f + std::log(2.f), 1e-3);
  EXPECT_EQ(full({2}, -INFINITY).logsumexp({0}).item<float>(), -INFINITY);
  EXPECT_EQ(ones({2, 3}).logsumexp({1}, true).sizes(), IntArrayRef({2, 1}));
  EXPECT_EQ(arange(3).logsumexp({0}).dtype(), kFloat);
}

// logsumexp's one-pass kernel against the composite's formula in double: several dims and
// layouts, every float dtype, a long row cut among threads (one piece all -inf), the edges
// (-inf, +inf and NaN rows as the composite gives them), and its gradient, softmax.
TEST(Reduce, LogsumexpKernel) {
  manual_seed(36);
  auto reference = [](const Tensor& x, IntArrayRef dims) {
    const Tensor xd = x.to(kDouble);
    Tensor m = amax(xd, dims, true);
    m = where(isinf(m), zeros_like(m), m);
    return log(sum(exp(xd - m), dims, true)) + m;
  };
  auto ref_sizes = [](const Tensor& x, IntArrayRef dims) {
    std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
    for (size_t d = 0; d < sizes.size(); ++d)
      if (dims.empty() || std::count(dims.begin(), dims.end(), static_cast<int64_t>(d)) ||
          std::count(dims.begin(), dims.end(), static_cast<int64_t>(d) - x.dim()))
        sizes[d] = 1;
    return sizes;
  };
  auto close = [](const Tensor& got, const Tensor& ref, double rel, const std::string& what) {
    const Tensor g = got.to(kDouble);
    ASSERT_EQ(g.sizes(), ref.sizes()) << what;
    const Tensor bad = (g - ref).abs() > (ref.abs() * rel + rel);
    EXPECT_FALSE(bad.any().item<bool>())
        << what << ": max error " << (g - ref).abs().max().item<double>();
  };
  for (ScalarType t : float_dtypes()) {
    const double rel = t == kFloat ? 2e-6 : t == kDouble ? 1e-12 : 1e-2;
    const Tensor x = random_tensor({6, 7, 9}, t, -20, 20);
    for (const Tensor& in : {x, non_contiguous(x), x.transpose(0, 2)}) {
      for (std::vector<int64_t> dims : {std::vector<int64_t>{1}, {0, 2}, {-1}, {}}) {
        const std::string what = std::string("logsumexp ") + to_string(t) + " dims " +
                                 std::to_string(dims.size()) + " of " + to_string(in.sizes());
        close(logsumexp(in, dims, true), reference(in, dims), rel, what);
        const Tensor flat = logsumexp(in, dims);  // keepdim false: the same values
        EXPECT_EQ(flat.dim(), dims.empty() ? 0 : 3 - static_cast<int64_t>(dims.size())) << what;
        EXPECT_EQ((flat.reshape(ref_sizes(in, dims)) - logsumexp(in, dims, true))
                      .abs()
                      .max()
                      .item<double>(),
                  0.0)
            << what;
      }
    }
  }
  // One long row, cut into a piece per thread: the first half -inf, the rest near -300.
  const int64_t n = 1 << 18;
  Tensor row = full({n}, -INFINITY);
  row.narrow(0, n / 2, n / 2).copy_(rand({n / 2}) - 300);
  close(logsumexp(row, {0}, true), reference(row, {0}), 2e-6, "a long row");
  EXPECT_EQ(full({n}, -INFINITY).logsumexp({0}).item<float>(), -INFINITY);  // every piece -inf
  // The edges, each row long enough for the vector loop.
  const float inf = INFINITY;
  Tensor edges = randn({5, 40});
  edges.select(0, 0).fill_(-inf);                   // all -inf: -inf
  edges.select(0, 1).select(0, 7).fill_(inf);       // a +inf: +inf
  edges.select(0, 2).select(0, 33).fill_(NAN);      // a NaN: NaN
  edges.select(0, 3).narrow(0, 0, 39).fill_(-inf);  // one finite value: itself
  edges.select(0, 4).select(0, 0).fill_(-1e30f);    // a value far below the max: no effect
  const Tensor got = logsumexp(edges, {1});
  EXPECT_EQ(got.select(0, 0).item<float>(), -inf);
  EXPECT_EQ(got.select(0, 1).item<float>(), inf);
  EXPECT_TRUE(std::isnan(got.select(0, 2).item<float>()));
  EXPECT_FLOAT_EQ(got.select(0, 3).item<float>(), edges.select(0, 3).select(0, 39).item<float>());
  close(got.narrow(0, 4, 1), reference(edges.narrow(0, 4, 1), {1}).squeeze(1), 2e-6, "far below");
  // A NaN anywhere in a row of -inf, of +inf or of finite values, first, inside the vector steps
  // or in the tail: NaN (the row's max may pass over it).
  for (int64_t len : {1, 2, 9, 40, 67, 1000})
    for (int64_t at : {int64_t{0}, len / 2, len - 1})
      for (float fill : {-inf, inf, 1.5f}) {
        Tensor r = full({2, len}, fill);
        r.select(0, 1).copy_(randn({len}));
        r.select(0, 0).select(0, at).fill_(NAN);
        r.select(0, 1).select(0, at).fill_(NAN);
        const Tensor v = logsumexp(r, {1});
        EXPECT_TRUE(std::isnan(v.select(0, 0).item<float>())) << len << " " << at << " " << fill;
        EXPECT_TRUE(std::isnan(v.select(0, 1).item<float>())) << len << " " << at;
      }
  EXPECT_EQ(empty({3, 0}).logsumexp({1}).eq(-inf).sum().item<int64_t>(), 3);
  EXPECT_NEAR(arange(5).logsumexp({0}).item<float>(),
              std::log(1 + M_E + std::exp(2.) + std::exp(3.) + std::exp(4.)), 1e-5);
  // The gradient: softmax over the reduced dim.
  const Tensor a = randn({4, 33}).requires_grad_();
  logsumexp(a, {1}).sum().backward();
  EXPECT_LE((a.grad() - softmax(a.detach(), 1)).abs().max().item<float>(), 1e-6f);
}

// [19, 5] along dim 1: two groups of rows scanned side by side and three alone (Note [Scans of
// rows side by side] in kernels/cpu/reduce.cpp), each row's values as the serial scan's.
TEST(Reduce, CumsumCumprod) {
  manual_seed(35);
  for (ScalarType t : all_dtypes()) {
    if (t == kBool) continue;
    for (int64_t rows : {3, 19}) {
      Tensor a = non_contiguous(random_tensor({rows, rows == 3 ? 4 : 5}, t, -3, 3));
      for (int64_t d : {0, 1}) {
        if (rows == 19 && d == 0) continue;  // a product of 19 such values overflows float16
        Tensor cs = a.cumsum(d), cp = a.cumprod(d);
        EXPECT_EQ(cs.dtype(), is_integral_type(t, false) ? kLong : t);
        expect_elements(
            cs,
            [&](auto& i) {
              double s = 0;
              for (int64_t k = 0; k <= i[d]; ++k)
                s += value_at(
                    a, d == 0 ? std::vector<int64_t>{k, i[1]} : std::vector<int64_t>{i[0], k});
              return s;
            },
            std::string("cumsum ") + to_string(t), 4.0);
        expect_elements(
            cp,
            [&](auto& i) {
              double s = 1;
              for (int64_t k = 0; k <= i[d]; ++k)
                s *= value_at(
                    a, d == 0 ? std::vector<int64_t>{k, i[1]} : std::vector<int64_t>{i[0], k});
              return s;
            },
            std::string("cumprod ") + to_string(t), 4.0);
      }
    }
  }
  EXPECT_EQ(ones({3}, kBool).cumsum(0).select(0, 2).item<int64_t>(), 3);
  EXPECT_EQ(arange(4).cumsum(0, kFloat).dtype(), kFloat);
  EXPECT_EQ(full({}, 5).cumsum(0).item<int64_t>(), 5);
  EXPECT_EQ(zeros({0, 2}).cumsum(0).sizes(), IntArrayRef({0, 2}));
  EXPECT_THROW_MSG(ones({2}).cumsum(1), IndexError, "[cumsum] dim 1 is out of range");
}

TEST(Reduce, AllAndAnyOverOneLongRowAreExactOnEveryRun) {
  // One row split over threads, each writing its partial result: these were bits of one
  // std::vector<bool>, and neighbouring threads lost each other's writes (all() over 70,000
  // true values returned false 8 times in 20,000 on 2 cores).
  const int threads = get_num_threads();
  set_num_threads(4);
  const Tensor ones_ = ones({70000}, kBool);
  Tensor last = zeros({70000}, kBool);
  last.narrow(0, 69999, 1).fill_(true);
  int wrong = 0;
  for (int i = 0; i < 20000; ++i) {
    wrong += !ones_.all().item<bool>();
    wrong += !last.any().item<bool>();
  }
  set_num_threads(threads);
  EXPECT_EQ(wrong, 0);
}
