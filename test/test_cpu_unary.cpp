// Unary ops on CPU against double-precision references, every supported dtype and layout.
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "test_util.h"

using namespace xten;
using namespace xten::testing;

namespace {

using UnaryFn = std::function<Tensor(const Tensor&)>;
using RefFn = std::function<double(double)>;

// Checks fn against ref over contiguous, non-contiguous, zero-size, zero-dim and large inputs.
void check_unary(const std::string& name, const UnaryFn& fn, const RefFn& ref, ScalarType t,
                 double lo = -4, double hi = 4, double rtol_scale = 1.0) {
  const std::vector<std::vector<int64_t>> shapes{{3, 7}, {0, 4}, {}, {200, 300}};
  for (size_t k = 0; k < shapes.size(); ++k) {
    Tensor a = random_tensor(shapes[k], t, lo, hi);
    for (bool strided : {false, true}) {
      const Tensor in = strided ? non_contiguous(a) : a;
      const Tensor out = fn(in);
      EXPECT_EQ(out.sizes(), in.sizes());
      // The reference sees the input in the op's compute dtype (float32 for integers).
      const ScalarType compute = out.dtype() == kBool ? in.dtype() : out.dtype();
      expect_elements(
          out, [&](auto& i) { return ref(round_to(value_at(in, i), compute)); },
          name + " " + to_string(t) + (strided ? " strided" : "") + " shape " + std::to_string(k),
          rtol_scale);
    }
  }
}

struct FloatCase {
  const char* name;
  UnaryFn fn;
  RefFn ref;
  double lo, hi;
};

}  // namespace

TEST(Unary, FloatFunctions) {
  manual_seed(20);
  const std::vector<FloatCase> cases{
      {"exp", [](auto& a) { return exp(a); }, [](double x) { return std::exp(x); }, -4, 4},
      {"exp2", [](auto& a) { return exp2(a); }, [](double x) { return std::exp2(x); }, -4, 4},
      {"log", [](auto& a) { return log(a); }, [](double x) { return std::log(x); }, 0.01, 8},
      {"log2", [](auto& a) { return log2(a); }, [](double x) { return std::log2(x); }, 0.01, 8},
      {"log10", [](auto& a) { return log10(a); }, [](double x) { return std::log10(x); }, 0.01, 8},
      {"log1p", [](auto& a) { return log1p(a); }, [](double x) { return std::log1p(x); }, -0.9, 4},
      {"expm1", [](auto& a) { return expm1(a); }, [](double x) { return std::expm1(x); }, -2, 2},
      {"sqrt", [](auto& a) { return sqrt(a); }, [](double x) { return std::sqrt(x); }, 0, 9},
      {"rsqrt", [](auto& a) { return rsqrt(a); }, [](double x) { return 1 / std::sqrt(x); }, 0.1,
       9},
      {"reciprocal", [](auto& a) { return reciprocal(a); }, [](double x) { return 1 / x; }, 0.5, 8},
      {"sin", [](auto& a) { return sin(a); }, [](double x) { return std::sin(x); }, -4, 4},
      {"cos", [](auto& a) { return cos(a); }, [](double x) { return std::cos(x); }, -4, 4},
      {"tan", [](auto& a) { return tan(a); }, [](double x) { return std::tan(x); }, -1, 1},
      {"tanh", [](auto& a) { return tanh(a); }, [](double x) { return std::tanh(x); }, -4, 4},
      {"sigmoid", [](auto& a) { return sigmoid(a); },
       [](double x) { return 1 / (1 + std::exp(-x)); }, -6, 6},
      {"silu", [](auto& a) { return silu(a); }, [](double x) { return x / (1 + std::exp(-x)); }, -6,
       6},
      {"erf", [](auto& a) { return erf(a); }, [](double x) { return std::erf(x); }, -3, 3},
      {"gelu", [](auto& a) { return gelu(a); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -4, 4},
      {"gelu tanh", [](auto& a) { return gelu(a, "tanh"); },
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       -4, 4},
  };
  for (const auto& c : cases)
    for (ScalarType t : float_dtypes()) check_unary(c.name, c.fn, c.ref, t, c.lo, c.hi, 2.0);
}

// The vectorized forms (Note [Packet math behind fast math], unary.cpp) at the edges, in tensors
// long enough for the vector loop: NaN stays NaN (the packet forms clamp their inputs), the
// infinities and -0.0 give what the scalar forms give, and where the vector exp would clamp, the
// tiny results are the scalar form's. gelu's tanh form keeps its accuracy where tanh(u) is near -1.
// abs clears the sign of floats' zeros and NaN (as PyTorch's), on the vector and scalar paths and
// through bfloat16 and float16; integers wrap as before.
TEST(Unary, AbsOfSignedZerosAndNaN) {
  for (ScalarType t : float_dtypes()) {
    for (int64_t n : {3, 100}) {  // a short tail and a vectorized run
      const Tensor x = full({n}, -0.0, t);
      const Tensor y = abs(non_contiguous(x)), z = abs(x);
      EXPECT_FALSE(std::signbit(y.to(kDouble).select(0, n - 1).item<double>())) << to_string(t);
      EXPECT_FALSE(std::signbit(z.to(kDouble).select(0, 0).item<double>())) << to_string(t);
      EXPECT_TRUE(abs(full({n}, -NAN, t)).isnan().all().item<bool>());
      EXPECT_EQ(abs(full({n}, -2.5, t)).to(kDouble).sum().item<double>(), 2.5 * n);
    }
  }
  EXPECT_EQ(abs(full({4}, -128, kChar)).select(0, 0).item<int64_t>(), -128);
}

TEST(Unary, VectorFormsAtTheEdges) {
  const float inf = std::numeric_limits<float>::infinity(), nan = NAN;
  auto each = [](const Tensor& out, const std::function<bool(float)>& ok, const std::string& what) {
    const Tensor c = out.contiguous();
    const float* p = static_cast<const float*>(c.data_ptr());
    for (int64_t i = 0; i < c.numel(); ++i)
      ASSERT_TRUE(ok(p[i])) << what << ": element " << i << " is " << p[i];
  };
  auto at = [](float v) { return full({100}, v); };
  auto is_nan = [](float y) { return std::isnan(y); };
  each(tanh(at(nan)), is_nan, "tanh(NaN)");
  each(sigmoid(at(nan)), is_nan, "sigmoid(NaN)");
  each(silu(at(nan)), is_nan, "silu(NaN)");
  each(gelu(at(nan), "tanh"), is_nan, "gelu tanh(NaN)");
  // gelu's exact form: the infinities give NaN as its scalar form does, selected in the vector.
  for (float x : {nan, inf, -inf}) {
    each(gelu(at(x)), is_nan, "gelu(" + std::to_string(x) + ")");
    each(gelu(at(x).to(kBFloat16)).to(kFloat), is_nan, "gelu bf16(" + std::to_string(x) + ")");
  }
  each(
      gelu(at(-10.0f)), [](float y) { return y == 0.0f || std::abs(y) < 1e-20f; }, "gelu(-10)");
  each(sqrt(at(nan)), is_nan, "sqrt(NaN)");
  each(
      tanh(at(inf)), [](float y) { return y == 1.0f; }, "tanh(inf)");
  each(
      tanh(at(-inf)), [](float y) { return y == -1.0f; }, "tanh(-inf)");
  each(
      tanh(at(-0.0f)), [](float y) { return y == 0.0f && std::signbit(y); }, "tanh(-0)");
  each(
      tanh(at(1e-5f)), [](float y) { return std::abs(y - 1e-5f) <= 1e-11f; }, "tanh(1e-5)");
  each(
      sigmoid(at(inf)), [](float y) { return y == 1.0f; }, "sigmoid(inf)");
  each(
      sigmoid(at(-inf)), [](float y) { return y == 0.0f; }, "sigmoid(-inf)");
  const float s100 = 1.0f / (1.0f + std::exp(100.0f));  // a subnormal, as the scalar form gives
  each(
      sigmoid(at(-100.0f)), [&](float y) { return y == s100; }, "sigmoid(-100)");
  each(
      silu(at(-100.0f)), [&](float y) { return y == -100.0f / (1.0f + std::exp(100.0f)); },
      "silu(-100)");
  each(
      silu(at(inf)), [&](float y) { return y == inf; }, "silu(inf)");
  each(
      sqrt(at(-1.0f)), [](float y) { return std::isnan(y); }, "sqrt(-1)");
  each(
      sqrt(at(-0.0f)), [](float y) { return y == 0.0f && std::signbit(y); }, "sqrt(-0)");
  each(
      sqrt(at(inf)), [&](float y) { return y == inf; }, "sqrt(inf)");
  // exp past the range where the vector form's result is a normal float (Note [Vector exp]):
  // the scalar form's values where the level sends them there, the vector form's (whole at the
  // avx512 level) within an ulp of them elsewhere, 0 and inf exactly; and in place, where the
  // edge check must read the inputs, not the results (exp(5) = 148 > 88).
  for (float x : {88.5f, 89.0f, -88.0f, -100.0f, -103.5f, -104.5f, inf, -inf}) {
    const float ref = std::exp(x);
    each(
        exp(at(x)),
        [&](float y) {
          return y == ref || (std::isfinite(ref) && ref != 0.0f &&
                              (y == std::nextafter(ref, inf) || y == std::nextafter(ref, 0.0f)));
        },
        "exp(" + std::to_string(x) + ")");
  }
  each(exp(at(nan)), is_nan, "exp(NaN)");
  const Tensor xs = linspace(-3.0, 6.0, 1000);
  const Tensor in_place = xs.clone().exp_();
  EXPECT_EQ((in_place != exp(xs)).sum().item<int64_t>(), 0) << "exp_ differs from exp";
  // gelu tanh at x = -5: 1 + tanh(u) is about 9e-8; the value against float64.
  for (double x : {-5.0, -8.0, -9.0, -9.5, -12.0}) {
    const double u = std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
    const double ref = x / (1 + std::exp(-2 * u));
    each(
        gelu(full({100}, x), "tanh"),
        [&](float y) { return std::abs(y - ref) <= 1e-5 * std::abs(ref) + 1e-44; },
        "gelu tanh(" + std::to_string(x) + ")");
  }
}

// gelu of bfloat16 and float16 tensors, computed with the cheaper vector form for 16-bit results
// (Note [Vector forms for 16-bit results]): within one ulp of the 16-bit type of the exact value
// on every 1021st float of [-13.5, 13.5] rounded to it, and the correctly rounded value for all
// but 1 in 10,000 (found: none in bfloat16, 1 in 18,000 in float16; t straight from vrcp14ps
// would miss 1 in 130 in float16). Results below the type's smallest
// normal are not checked: both vector forms give 0 past |x| = 13.2 (Note [Vector normal cdf]).
TEST(Unary, GeluOf16BitFloatsWithinOneUlp) {
  const std::vector<float> xs = every_1021st_float_and_its_negative(13.5f);
  const int64_t n = static_cast<int64_t>(xs.size());
  const Tensor in = from_blob(const_cast<float*>(xs.data()), {n}, kFloat).clone();
  for (ScalarType t : {kBFloat16, kHalf}) {
    const int digits = t == kBFloat16 ? 7 : 10, min_exp = t == kBFloat16 ? -126 : -14;
    const Tensor x = in.to(t).to(kFloat);  // the inputs as the 16-bit type holds them
    const Tensor y = gelu(in.to(t)).to(kFloat);
    const float* px = x.data_ptr<float>();
    const float* py = y.data_ptr<float>();
    double worst = 0;
    int64_t not_nearest = 0;
    float at = 0;
    for (int64_t i = 0; i < n; ++i) {
      const long double v = px[i], ref = v * 0.5L * std::erfc(-v / std::sqrt(2.0L));
      const float r = static_cast<float>(ref);  // rounded twice: a tie may go either way
      const float nearest = t == kBFloat16 ? float(BFloat16(r)) : float(Half(r));
      if (std::fabs(double(ref)) < std::exp2(min_exp)) continue;  // subnormal: 0 past 13.2
      const int e = static_cast<int>(std::floor(std::log2(std::fabs(double(ref)))));
      const double err = std::fabs(double(py[i] - ref)) / std::exp2(e - digits);
      if (err > worst) worst = err, at = px[i];
      not_nearest += py[i] != nearest;
    }
    EXPECT_LE(worst, 1.0) << "gelu " << to_string(t) << " at x = " << at;
    EXPECT_LE(not_nearest, n / 10000) << to_string(t) << ": " << not_nearest << " of " << n;
  }
}

// rsqrt of every bfloat16 and float16 value (RsqrtOp's 16-bit form, VecRsqrtRounded: an estimate
// and a Newton step at the avx512 level): within one ulp of the type, the correctly rounded value
// for all but a few ties, and exact at the edges (0 -> inf, -0 -> -inf, inf -> 0, negative and
// NaN -> NaN), in contiguous runs long enough for the vector loop.
TEST(Unary, RsqrtOf16BitFloatsEveryValue) {
  for (ScalarType t : {kBFloat16, kHalf}) {
    std::vector<uint16_t> bits(65536);
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
    const Tensor in = from_blob(bits.data(), {65536}, t).clone();  // the bit patterns as type t
    const Tensor x = in.to(kFloat), y = rsqrt(in).to(kFloat);
    const float* px = x.data_ptr<float>();
    const float* py = y.data_ptr<float>();
    const int digits = t == kBFloat16 ? 7 : 10;
    int64_t not_nearest = 0, finite = 0;
    double worst = 0;
    float at = 0;
    for (int64_t i = 0; i < 65536; ++i) {
      const float v = px[i];
      if (std::isnan(v) || v < 0) {
        EXPECT_TRUE(std::isnan(py[i])) << to_string(t) << " rsqrt(" << v << ") = " << py[i];
        continue;
      }
      const long double ref = 1.0L / std::sqrt(static_cast<long double>(v));
      if (v == 0 || std::isinf(v) || std::isinf(double(ref)) || (ref > 65504 && t == kHalf)) {
        const float want = t == kBFloat16 ? float(BFloat16(float(ref))) : float(Half(float(ref)));
        EXPECT_EQ(py[i], want) << to_string(t) << " rsqrt(" << v << ")";
        if (v == 0) {
          EXPECT_EQ(std::signbit(py[i]), std::signbit(v));
        }
        continue;
      }
      ++finite;
      const float nearest = t == kBFloat16 ? float(BFloat16(float(ref))) : float(Half(float(ref)));
      const int e = static_cast<int>(std::floor(std::log2(double(ref))));
      const double err = std::fabs(double(py[i] - ref)) / std::exp2(e - digits);
      if (err > worst) worst = err, at = v;
      not_nearest += py[i] != nearest;
    }
    EXPECT_LE(worst, 1.0) << "rsqrt " << to_string(t) << " at x = " << at;
    EXPECT_LE(not_nearest, finite / 1000)
        << to_string(t) << ": " << not_nearest << " of " << finite;
  }
}

// gelu's exact form and its derivative (Note [Vector normal cdf]) against long double within
// their documented bounds, on every 1021st float of [0, 13.5] and their negatives: 5 ulp at the
// avx512 level, 6 at avx2, 7.5 at the default level (no FMA); the small tail for negative x keeps
// its relative accuracy (1 + erf(x / sqrt 2) would cancel: 15 ulp at -1, no correct digit below
// -5). The derivative's error is taken against the size of its two terms (they cancel near -0.75).
// Bounds: docs/cpu_kernels.md, "Vector math" (the worst errors found over every 7th float, and
// over every float of [1.2, 2.5] and its negative, where c = Phi(-|x|) lies low in its binade and
// x c high in its own: 5.56 ulp at the avx2 level, 7.08 at default, 4.89 at avx512). The sample
// adds the worst inputs found to every 1021st float.
// The bound of gelu's exp form (Note [Vector normal cdf]) at the level running.
static double gelu_exp_form_bound() {
  switch (cpu_capability()) {
    case CpuCapability::Default:
      return 7.5;
    case CpuCapability::Avx2:
      return 6.0;
    default:
      return 5.0;
  }
}
TEST(Unary, GeluWithinItsUlpBound) {
  std::vector<float> xs = every_1021st_float_and_its_negative(13.5f);
  for (float x : {-1.85062897f, -1.84551132f, -1.86001337f, -0.0504113324f, -0.0152488314f})
    xs.push_back(x);
  const GeluErrors e = gelu_errors(xs);
  const double bound = gelu_exp_form_bound();
  EXPECT_LE(e.worst, bound) << "gelu at x = " << e.at;
  EXPECT_LE(e.worst_grad, bound) << "gelu_backward at x = " << e.at_grad;
  EXPECT_LT(gelu(full({64}, -6.0f)).data_ptr<float>()[7], 0.0f);  // -5.9e-9, not 0
  // A tensor shorter than a packet takes the scalar form, which must not cancel either (it
  // computed 0.5 x (1 + erf(x / sqrt 2)): no correct digit below -5).
  for (const float x : {-5.9f, -8.0f, -10.0f, 3.0f}) {
    const GeluErrors one = gelu_errors({x});
    EXPECT_LE(one.worst, 1.0) << "gelu at x = " << x;
    EXPECT_LE(one.worst_grad, 1.0) << "gelu_backward at x = " << x;
  }
}

// A packet whose lanes all lie inside the tables' range takes interval tables: +-5.90625 at the
// avx512 level (Note [Gelu from interval tables]; worst errors 2.66 ulp for gelu and 2.06 for its
// derivative, tools/fit_interval_tables.cpp --errors), +-5.75 at avx2 (Note [Gelu at the avx2
// level]; 2.80 and 1.85 below 3.75, 3.90 and 1.39 above), checked against 3 (4 from 3.75 at avx2)
// on every 1021st float of the range and its negative (the exp form exceeds 3 there: 4.3 at
// avx2); the default level keeps its bound. The same inputs with one lane of every packet past
// the range send every packet to the exp form as well, which keeps its own bound in those lanes;
// with one lane of every packet in the avx2 level's far table instead, every packet takes both
// tables. Either way the other lanes keep their values to the bit: each lane's result depends on
// its own x alone.
TEST(Unary, GeluTablesWithinTheirBound) {
  const CpuCapability level = cpu_capability();
  const bool avx2 = level == CpuCapability::Avx2;
  const std::vector<float> inside = every_1021st_float_and_its_negative(avx2 ? 5.7499f : 5.906f);
  std::vector<float> near, far;
  for (float x : inside) (std::fabs(x) < 3.75f ? near : far).push_back(x);
  const double bound = level == CpuCapability::Default ? gelu_exp_form_bound() : 3.0;
  for (const auto& [xs, b] : {std::pair{&near, bound}, std::pair{&far, avx2 ? 4.0 : bound}}) {
    const GeluErrors e = gelu_errors(*xs);
    EXPECT_LE(e.worst, b) << "gelu at x = " << e.at;
    EXPECT_LE(e.worst_grad, b) << "gelu_backward at x = " << e.at_grad;
  }
  const size_t lanes = level == CpuCapability::Avx512 ? 16 : 8;
  const auto as_tensor = [](const std::vector<float>& v) {
    return from_blob(const_cast<float*>(v.data()), {static_cast<int64_t>(v.size())}, kFloat)
        .clone();
  };
  // On one thread: each thread's chunk ends in a scalar tail of its own, wherever the split falls.
  ThreadLimitGuard one_thread(1);
  const Tensor xn = as_tensor(near);
  const Tensor gn = gelu(xn), dn = gelu_backward(ones_like(xn), xn);
  for (const bool past : {true, false}) {
    std::vector<float> mixed;
    std::vector<size_t> where;  // mixed[where[i]] == near[i]
    for (size_t i = 0; i < near.size(); ++i) {
      if (i % (lanes - 1) == 5)  // one in each packet
        mixed.push_back(past ? (i / 15 % 2 ? -7.5f : 9.0f) : (i / 15 % 2 ? -4.5f : 5.5f));
      where.push_back(mixed.size());
      mixed.push_back(near[i]);
    }
    const GeluErrors m = gelu_errors(mixed);
    const double exp_bound = gelu_exp_form_bound();
    EXPECT_LE(m.worst, exp_bound) << "gelu at x = " << m.at;
    EXPECT_LE(m.worst_grad, exp_bound) << "gelu_backward at x = " << m.at_grad;
    const Tensor xm = as_tensor(mixed);
    const Tensor gm = gelu(xm), dm = gelu_backward(ones_like(xm), xm);
    int64_t differ = 0;
    // (not the last packet's worth of either: a tail shorter than a packet takes the scalar form)
    for (size_t i = 0; i + lanes < near.size() && where[i] + lanes < mixed.size(); ++i) {
      differ += gn.data_ptr<float>()[i] != gm.data_ptr<float>()[where[i]];
      differ += dn.data_ptr<float>()[i] != dm.data_ptr<float>()[where[i]];
    }
    EXPECT_EQ(differ, 0) << "lanes inside the tables changed with their neighbours (past " << past
                         << ")";
  }
  // NaN and the infinities in a packet of ordinary values take the exp form too.
  Tensor edges = full({32}, 0.5f);
  float* pe = edges.data_ptr<float>();
  pe[3] = NAN, pe[17] = std::numeric_limits<float>::infinity(), pe[18] = -pe[17];
  const Tensor ge = gelu(edges);
  EXPECT_TRUE(std::isnan(ge.data_ptr<float>()[3]));
  EXPECT_TRUE(std::isnan(ge.data_ptr<float>()[17]));
  EXPECT_NEAR(ge.data_ptr<float>()[4], 0.5 * 0.6914624612740131, 1e-7);
}

// The vector erf (Note [Vector erf]) against a double erf within its documented 1 ulp, on every
// 61st float of [0, 4.5] and their negatives (each range and both boundaries), and at the edges.
// docs/cpu_kernels.md gives the worst cases over every float, per capability level.
TEST(Unary, ErfWithinOneUlp) {
  std::vector<float> xs = every_1021st_float_and_its_negative(4.5f);
  for (float x : {0.75f, 1.25f, std::nextafter(0.75f, 0.0f), std::nextafter(1.25f, 2.0f), 4.0f})
    xs.push_back(x);
  // The avx2 level's interval edges (Note [Erf at the avx2 level]: (k + 0.5) 21 / 40, the form
  // changing at k = 2.5) and the floats on either side.
  for (int k = 0; k < 8; ++k) {
    const float edge = (k + 0.5f) * 21.0f / 40.0f;
    for (float x : {std::nextafter(edge, 0.0f), edge, std::nextafter(edge, 4.0f)})
      xs.push_back(x), xs.push_back(-x);
  }
  const Tensor in = from_blob(xs.data(), {static_cast<int64_t>(xs.size())}, kFloat).clone();
  const Tensor out = erf(in);
  const float* y = out.data_ptr<float>();
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = std::erf(static_cast<double>(xs[i]));
    const double ulp = std::exp2(std::floor(std::log2(std::max(std::abs(ref), 1.2e-38))) - 23);
    const double e = std::abs(y[i] - ref) / ulp;
    if (e > worst) worst = e, worst_x = xs[i];
  }
  EXPECT_LE(worst, 1.0) << "at x = " << worst_x;
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor edges = erf(full({64}, inf));
  EXPECT_TRUE(edges.eq(1).all().item<bool>());
  EXPECT_TRUE(erf(full({64}, -inf)).eq(-1).all().item<bool>());
  EXPECT_TRUE(erf(full({64}, NAN)).isnan().all().item<bool>());
  const Tensor neg_zero = erf(full({64}, -0.0f));
  EXPECT_TRUE(std::signbit(neg_zero.data_ptr<float>()[5]));
  EXPECT_NEAR(erf(full({64}, 1e-30f)).data_ptr<float>()[3], 1.1283791671e-30, 1.2e-37);
}

// sin and cos (float: Eigen's packet forms, docs/cpu_kernels.md "Vector math") within their
// documented 2 ulp: every 4099th float of the whole range and its negative, against double.
TEST(Unary, SinCosWithinTwoUlp) {
  std::vector<float> xs;
  for (uint32_t b = 0; b < 0x7f800000u; b += 4099) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    xs.push_back(x);
    xs.push_back(-x);
  }
  for (float x : {3.14159265f, 1.5707963f, 1e4f, 1e8f, 3e38f}) xs.push_back(x);
  const Tensor in = from_blob(xs.data(), {static_cast<int64_t>(xs.size())}, kFloat).clone();
  for (bool is_cos : {false, true}) {
    const Tensor out = is_cos ? cos(in) : sin(in);
    const float* y = out.data_ptr<float>();
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double x = xs[i], ref = is_cos ? std::cos(x) : std::sin(x);
      const double ulp = std::exp2(std::floor(std::log2(std::max(std::abs(ref), 1.2e-38))) - 23);
      const double e = std::abs(y[i] - ref) / ulp;
      if (e > worst) worst = e, worst_x = xs[i];
    }
    EXPECT_LE(worst, 2.0) << (is_cos ? "cos" : "sin") << " at x = " << worst_x;
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, NAN}) {
    EXPECT_TRUE(sin(full({64}, x)).isnan().all().item<bool>()) << x;
    EXPECT_TRUE(cos(full({64}, x)).isnan().all().item<bool>()) << x;
  }
  EXPECT_TRUE(std::signbit(sin(full({64}, -0.0f)).data_ptr<float>()[7]));
  EXPECT_EQ(cos(full({64}, -0.0f)).data_ptr<float>()[7], 1.0f);
}

// log (Note [Vector log]) over every 61st positive float, subnormals included (Eigen's plog
// clamped them to the smallest normal), against a double log; the edges, float and double.
TEST(Unary, LogWithinOneUlpSubnormalsIncluded) {
  std::vector<float> xs;
  for (uint32_t b = 1; b < 0x7f800000u; b += 61) {
    float x;
    std::memcpy(&x, &b, sizeof x);
    xs.push_back(x);
  }
  for (float x : {1.0f, 1.41421356f, 1.41421366f, 0.70710677f, 2.0f, 0.5f, 1e-45f, 3.4e38f})
    xs.push_back(x);
  const Tensor in = from_blob(xs.data(), {static_cast<int64_t>(xs.size())}, kFloat).clone();
  const Tensor out = log(in);
  const float* y = out.data_ptr<float>();
  double worst = 0;
  float worst_x = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = std::log(static_cast<double>(xs[i]));
    const double ulp = std::exp2(std::floor(std::log2(std::max(std::abs(ref), 1.2e-38))) - 23);
    const double e = std::abs(y[i] - ref) / ulp;
    if (e > worst) worst = e, worst_x = xs[i];
  }
  EXPECT_LE(worst, 1.0) << "log at x = " << worst_x;
  EXPECT_NEAR(log(full({64}, 1e-40f)).data_ptr<float>()[9], std::log(1e-40), 1e-5);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (ScalarType t : {kFloat, kDouble}) {
    const std::vector<double> v8 = {0.0, -0.0, -1.0, inf, -inf, nan, 1.0, 1e-310};
    const Tensor e = log(tensor(v8, IntArrayRef({8}), TensorOptions(kDouble)).to(t).repeat({9}));
    const Tensor d = e.to(kDouble);
    for (int64_t r = 0; r < 9; ++r) {
      const double* v = d.data_ptr<double>() + 8 * r;
      EXPECT_EQ(v[0], -inf);
      EXPECT_EQ(v[1], -inf);
      EXPECT_TRUE(std::isnan(v[2]) && std::isnan(v[4]) && std::isnan(v[5]));
      EXPECT_EQ(v[3], inf);
      EXPECT_EQ(v[6], 0.0);
      if (t == kDouble)
        EXPECT_DOUBLE_EQ(v[7], std::log(1e-310)) << "double subnormal";
      else
        EXPECT_EQ(v[7], -inf) << "1e-310 is 0 in float";
    }
  }
}

// expm1, exp2, log2, log10 and tan of floats (Note [Vector expm1, exp2, log2, log10, tan]) within
// their documented bounds (docs/cpu_kernels.md, "Vector math"; found: 1.39, 1.30, 1.79, 1.73 and
// 3.82 ulp at the default level; tan 2.59 with FMA) on every 4099th float of their ranges against
// long double; exact values and the edges the scalar form takes.
TEST(Unary, Expm1Exp2Log2Log10TanWithinTheirBounds) {
  struct Fn {
    const char* name;
    Tensor (*op)(const Tensor&);
    long double (*ref)(long double);
    float lo, hi;
    double bound;
  };
  const Fn fns[] = {
      {"expm1", [](const Tensor& t) { return expm1(t); }, [](long double x) { return expm1l(x); },
       -100, 88, 1.5},
      {"exp2", [](const Tensor& t) { return exp2(t); }, [](long double x) { return exp2l(x); },
       -126, 127, 1.5},
      {"log2", [](const Tensor& t) { return log2(t); }, [](long double x) { return log2l(x); }, 0,
       3.4e38f, 2.0},
      {"log10", [](const Tensor& t) { return log10(t); }, [](long double x) { return log10l(x); },
       0, 3.4e38f, 2.0},
      {"tan", [](const Tensor& t) { return tan(t); }, [](long double x) { return tanl(x); },
       -3.4e38f, 3.4e38f, 4.0},
  };
  for (const Fn& f : fns) {
    std::vector<float> xs;
    for (uint32_t b = 1; b < 0xff800000u; b += 4099) {
      float x;
      std::memcpy(&x, &b, sizeof x);
      if (x >= f.lo && x <= f.hi) xs.push_back(x);
    }
    const Tensor in = from_blob(xs.data(), {static_cast<int64_t>(xs.size())}, kFloat).clone();
    const Tensor out = f.op(in);
    const float* y = out.data_ptr<float>();
    double worst = 0;
    float worst_x = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const long double ref = f.ref(xs[i]);
      const double ulp =
          std::ldexp(1.0, std::ilogb(std::max(std::fabs(double(ref)), 1.17549435e-38)) - 23);
      const double e = double(std::fabs(y[i] - ref)) / ulp;
      if (e > worst) worst = e, worst_x = xs[i];
    }
    EXPECT_LE(worst, f.bound) << f.name << " at x = " << worst_x;
  }
  auto at = [](const Tensor& t) { return t.data_ptr<float>()[9]; };  // a lane of a vector of 64
  const float inf = std::numeric_limits<float>::infinity();
  for (int k = -149; k <= 127; ++k) {
    EXPECT_EQ(at(log2(full({64}, std::ldexp(1.0f, k)))), float(k)) << "log2 of 2^" << k;
    EXPECT_EQ(at(exp2(full({64}, float(k)))), std::ldexp(1.0f, k)) << "exp2 of " << k;
  }
  for (int k = -30; k <= 30; ++k)
    EXPECT_EQ(at(log10(full({64}, std::pow(10.0f, k)))), std::log10(std::pow(10.0f, k)))
        << "log10 of 1e" << k;
  EXPECT_TRUE(std::signbit(at(expm1(full({64}, -0.0f)))));
  EXPECT_TRUE(std::signbit(at(tan(full({64}, -0.0f)))));
  EXPECT_EQ(at(expm1(full({64}, -inf))), -1.0f);
  EXPECT_EQ(at(expm1(full({64}, 89.0f))), inf);
  EXPECT_EQ(at(exp2(full({64}, 128.0f))), inf);
  EXPECT_EQ(at(exp2(full({64}, -inf))), 0.0f);
  EXPECT_EQ(at(log2(full({64}, 0.0f))), -inf);
  EXPECT_EQ(at(log10(full({64}, inf))), inf);
  for (auto op :
       {+[](const Tensor& t) { return expm1(t); }, +[](const Tensor& t) { return exp2(t); },
        +[](const Tensor& t) { return log2(t); }, +[](const Tensor& t) { return log10(t); },
        +[](const Tensor& t) { return tan(t); }})
    EXPECT_TRUE(std::isnan(at(op(full({64}, NAN)))));
  EXPECT_TRUE(std::isnan(at(log2(full({64}, -1.0f)))));
  EXPECT_TRUE(std::isnan(at(tan(full({64}, inf)))));
}

// abs and neg of float16 and bfloat16 flip or clear the sign bit only: against the float
// results on values, signed zeros, infinities and NaN; contiguous, strided and in place.
TEST(Unary, SixteenBitAbsAndNegAreSignBitOps) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {1.5, -2.25, 0.0, -0.0, inf, -inf, std::nan(""), -1e-7, 65504};
  const Tensor base = tensor(v, IntArrayRef({9}), TensorOptions(kDouble)).repeat({40});
  auto words = [](const Tensor& t) {
    const Tensor c = t.contiguous();
    const uint16_t* p = static_cast<const uint16_t*>(c.data_ptr());
    return std::vector<uint16_t>(p, p + c.numel());
  };
  for (ScalarType t : {kHalf, kBFloat16}) {
    SCOPED_TRACE(to_string(t));
    const Tensor x = base.to(t);
    for (bool strided : {false, true}) {
      const Tensor in = strided ? x.reshape({40, 9}).t() : x;
      const std::vector<uint16_t> w = words(in), a = words(abs(in)), n = words(neg(in));
      ASSERT_EQ(abs(in).dtype(), t);
      for (size_t i = 0; i < w.size(); ++i) {
        ASSERT_EQ(a[i], w[i] & 0x7fff) << i;
        ASSERT_EQ(n[i], w[i] ^ 0x8000) << i;
      }
      // The same values as the float path (NaN compared as NaN).
      EXPECT_TRUE(allclose(nan_to_num(abs(in).to(kFloat)), nan_to_num(in.to(kFloat).abs()), 0, 0));
      EXPECT_TRUE(allclose(nan_to_num(neg(in).to(kFloat)), nan_to_num(in.to(kFloat).neg()), 0, 0));
    }
    Tensor y = x.clone();
    y.neg_();
    EXPECT_EQ(words(y), words(neg(x)));
    y.abs_();
    EXPECT_EQ(words(y), words(abs(x)));
  }
}

// sigmoid_backward, tanh_backward and silu_backward (one kernel each) against the derivatives in
// double, every float dtype, contiguous and strided; silu's far negative range and NaN (the
// scalar lanes of VecSiluGrad) against the composite's values; the errors.
TEST(Unary, SixteenBitTablesEqualTheComputedResults) {
  // Note [16-bit unary ops by table] (kernels/cpu/unary.cpp): float16 and bfloat16 inputs of
  // 16,384 elements or more look their results up in a table of the op's own results (every
  // float unary op but sqrt and reciprocal, silu, gelu). Every bit
  // pattern, shuffled, contiguous, through a transposed view and in place, must give the bits that
  // the computed path gives (pieces of 4,096 elements, below the threshold), at every CPU level.
  std::vector<uint16_t> bits(65536);
  std::iota(bits.begin(), bits.end(), uint16_t(0));
  std::shuffle(bits.begin(), bits.end(), std::mt19937(5));
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<std::string, Fn>> ops = {
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"exp2", [](const Tensor& x) { return x.exp2(); }},
      {"log", [](const Tensor& x) { return x.log(); }},
      {"log2", [](const Tensor& x) { return x.log2(); }},
      {"log10", [](const Tensor& x) { return x.log10(); }},
      {"log1p", [](const Tensor& x) { return x.log1p(); }},
      {"expm1", [](const Tensor& x) { return x.expm1(); }},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }},
      {"sin", [](const Tensor& x) { return x.sin(); }},
      {"cos", [](const Tensor& x) { return x.cos(); }},
      {"tan", [](const Tensor& x) { return x.tan(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"silu", [](const Tensor& x) { return x.silu(); }},
      {"gelu", [](const Tensor& x) { return x.gelu(); }},
      {"gelu tanh", [](const Tensor& x) { return x.gelu("tanh"); }},
  };
  const auto same_bits = [](const Tensor& a, const Tensor& b) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    return ca.sizes() == cb.sizes() && ca.dtype() == cb.dtype() &&
           std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * 2) == 0;
  };
  // The lookup with vector gathers and one load at a time (set_cpu_gather, core/cpu_backend.h;
  // the default level has no gathers), and a length that leaves a tail after the gathers' steps.
  const bool gather_before = cpu_gather();
  for (bool gather : {false, true})
    for (ScalarType t : {kBFloat16, kHalf}) {
      set_cpu_gather(gather);
      const std::string how = gather ? " gathered" : " one by one";
      const Tensor in = from_blob(bits.data(), {65536}, t).clone();
      for (const auto& [name, f] : ops) {
        std::vector<Tensor> pieces;
        for (int64_t k = 0; k < 16; ++k) pieces.push_back(f(in.narrow(0, k * 4096, 4096)));
        const Tensor computed = cat(pieces);
        EXPECT_TRUE(same_bits(f(in), computed)) << name << " " << to_string(t) << how;
        EXPECT_TRUE(same_bits(f(in.narrow(0, 3, 65531)), computed.narrow(0, 3, 65531)))
            << name << " " << to_string(t) << how << " from element 3";
        const Tensor transposed = in.view({256, 256}).t();
        EXPECT_TRUE(same_bits(f(transposed), computed.view({256, 256}).t()))
            << name << " " << to_string(t) << " transposed";
      }
      Tensor a = in.clone(), b = in.clone(), c = in.clone();
      a.exp_();
      b.erf_();
      c.silu_();
      EXPECT_TRUE(same_bits(a, in.exp()) && same_bits(b, in.erf()) && same_bits(c, in.silu()))
          << to_string(t) << " in place" << how;
    }
  set_cpu_gather(gather_before);
}

TEST(Unary, SigmoidTanhSiluBackward) {
  manual_seed(22);
  for (ScalarType t : float_dtypes()) {
    const Tensor g = random_tensor({300, 70}, t, -2, 2), x = random_tensor({300, 70}, t, -6, 6);
    const Tensor ys = sigmoid(x), yt = tanh(x);
    for (bool strided : {false, true}) {
      auto nc = [&](const Tensor& a) { return strided ? non_contiguous(a) : a; };
      const Tensor gs = sigmoid_backward(nc(g), nc(ys)), gt = tanh_backward(nc(g), nc(yt));
      const Tensor gsi = silu_backward(nc(g), nc(x));
      ASSERT_EQ(gs.dtype(), t);
      ASSERT_EQ(gsi.dtype(), t);
      expect_elements(
          gs,
          [&](auto& i) {
            const double y = value_at(ys, i);
            return value_at(g, i) * y * (1 - y);
          },
          std::string("sigmoid_backward ") + to_string(t), 4.0);
      expect_elements(
          gt,
          [&](auto& i) {
            const double y = value_at(yt, i);
            return value_at(g, i) * (1 - y * y);
          },
          std::string("tanh_backward ") + to_string(t), 4.0);
      expect_elements(
          gsi,
          [&](auto& i) {
            const double v = value_at(x, i), sg = 1 / (1 + std::exp(-v));
            return value_at(g, i) * sg * (1 + v * (1 - sg));
          },
          std::string("silu_backward ") + to_string(t), 4.0);
    }
  }
  // Past the vector exp's range (x < -87) s is tiny but s (1 + x (1 - s)) is a normal number
  // down to -88.7, where exp(-x) overflows and both forms give 0: the composite's value, bit for
  // bit (with g = 1 both multiply the same factors in float).
  std::vector<float> xs;
  for (float v : {-86.5f, -87.5f, -90.0f, -95.0f, -100.0f, -104.0f, -110.0f, NAN, INFINITY,
                  -INFINITY, 0.0f, -0.0f, 3.0f, 88.0f, 100.0f})
    for (int k = 0; k < 5; ++k) xs.push_back(v);
  const Tensor xe = from_blob(xs.data(), {static_cast<int64_t>(xs.size())}, kFloat).clone();
  const Tensor se = sigmoid(xe), want = se * (xe * (1 - se) + 1);
  const Tensor got = silu_backward(ones_like(xe), xe);
  for (int64_t i = 0; i < xe.numel(); ++i) {
    const float a = got.data_ptr<float>()[i], b = want.data_ptr<float>()[i];
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b)))
        << "x = " << xs[i] << ": " << a << " vs " << b;
  }
  EXPECT_LT(got.data_ptr<float>()[5], -1e-37f);  // x = -87.5: about -1.1e-36, not flushed to 0
  EXPECT_THROW_MSG(sigmoid_backward(ones({2}), ones({3})), ValueError,
                   "[sigmoid_backward] grad_output and output must have one shape, but got (2) "
                   "and (3)");
  EXPECT_THROW_MSG(tanh_backward(ones({2}), ones({2}, kDouble)), TypeError, "tanh_backward");
  EXPECT_THROW_MSG(silu_backward(ones({2}, kInt), ones({2}, kInt)), NotImplementedError,
                   "[silu_backward] not implemented for dtype Int");
}

// gelu_backward (one kernel) against the derivative in double, both forms, every float dtype and
// layout; at the edges: NaN and the infinities give NaN, as the formula written with ops does,
// and far past exp's range phi is 0.
TEST(Unary, GeluBackward) {
  manual_seed(21);
  for (const char* form : {"none", "tanh"}) {
    for (ScalarType t : float_dtypes()) {
      const Tensor g = random_tensor({300, 70}, t, -2, 2), x = random_tensor({300, 70}, t, -6, 6);
      for (bool strided : {false, true}) {
        const Tensor gg = strided ? non_contiguous(g) : g, xx = strided ? non_contiguous(x) : x;
        const Tensor got = gelu_backward(gg, xx, form);
        ASSERT_EQ(got.dtype(), t);
        expect_elements(
            got,
            [&](auto& i) {
              const double a = value_at(xx, i), d = value_at(gg, i);
              if (std::string(form) == "tanh") {
                const double k = std::sqrt(2 / M_PI), u = k * (a + 0.044715 * a * a * a);
                const double th = std::tanh(u);
                return d *
                       (0.5 * (1 + th) + 0.5 * a * (1 - th * th) * k * (1 + 3 * 0.044715 * a * a));
              }
              return d * (0.5 * (1 + std::erf(a / std::sqrt(2.0))) +
                          a * std::exp(-0.5 * a * a) / std::sqrt(2 * M_PI));
            },
            std::string("gelu_backward ") + form + " " + to_string(t) + (strided ? " strided" : ""),
            4.0);
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {inf, -inf, NAN})
    EXPECT_TRUE(gelu_backward(ones({64}), full({64}, x)).isnan().all().item<bool>()) << x;
  EXPECT_TRUE(gelu_backward(ones({64}), full({64}, 20.0f)).eq(1).all().item<bool>());
  EXPECT_TRUE(gelu_backward(ones({64}), full({64}, -20.0f)).eq(0).all().item<bool>());
  // The same values as the formula written with ops (the composite, which the XPU runs).
  const Tensor x = linspace(-8, 8, 4001), g = rand({4001});
  const Tensor composite =
      g * ((erf(x / std::sqrt(2.0)) + 1) * 0.5 + x * exp(x * x * -0.5) / std::sqrt(2 * M_PI));
  EXPECT_LE((gelu_backward(g, x) - composite).abs().max().item<float>(), 2e-6f);
  EXPECT_THROW_MSG(gelu_backward(ones({2}), ones({3})), ValueError,
                   "[gelu_backward] grad_output and self must have one shape, but got (2) and (3)");
  EXPECT_THROW_MSG(gelu_backward(ones({2}), ones({2}), "fast"), ValueError,
                   "[gelu_backward] approximate must be 'none' or 'tanh', but got 'fast'");
  EXPECT_THROW_MSG(gelu_backward(ones({2}, kInt), ones({2}, kInt)), NotImplementedError,
                   "[gelu_backward] not implemented for dtype Int");
}

TEST(Unary, IntegersPromoteToFloat) {
  for (const char* name : {"exp", "log", "sqrt", "sin", "sigmoid", "erf"}) {
    (void)name;
  }
  EXPECT_EQ(exp(arange(3)).dtype(), kFloat);
  EXPECT_EQ(sqrt(ones({2}, kBool)).dtype(), kFloat);
  check_unary(
      "exp int", [](auto& a) { return exp(a); }, [](double x) { return std::exp(x); }, kInt, -4, 4);
  check_unary(
      "sin uint8", [](auto& a) { return sin(a); }, [](double x) { return std::sin(x); }, kByte, 0,
      50);
  EXPECT_THROW_MSG(gelu(arange(3)), NotImplementedError, "[gelu] not implemented for dtype Long");
  EXPECT_THROW_MSG(silu(arange(3)), NotImplementedError, "[silu] not implemented for dtype Long");
  EXPECT_THROW_MSG(gelu(ones({2}), "fast"), ValueError,
                   "approximate must be 'none' or 'tanh', but got 'fast'");
  Tensor i = arange(3);
  EXPECT_THROW_MSG(i.exp_(), TypeError,
                   "[exp_] result type Float can't be cast to the desired output type Long");
}

TEST(Unary, SignedAndRounding) {
  manual_seed(21);
  for (ScalarType t : all_dtypes()) {
    check_unary(
        "sign", [](auto& a) { return sign(a); }, [](double x) { return double((x > 0) - (x < 0)); },
        t);
    if (t == kBool) continue;
    check_unary(
        "neg", [](auto& a) { return neg(a); }, [](double x) { return -x; }, t);
    check_unary(
        "abs", [](auto& a) { return abs(a); }, [](double x) { return std::abs(x); }, t);
    check_unary(
        "relu", [](auto& a) { return relu(a); }, [](double x) { return std::max(x, 0.0); }, t);
    check_unary(
        "floor", [](auto& a) { return floor(a); }, [](double x) { return std::floor(x); }, t);
    check_unary(
        "ceil", [](auto& a) { return ceil(a); }, [](double x) { return std::ceil(x); }, t);
    check_unary(
        "trunc", [](auto& a) { return trunc(a); }, [](double x) { return std::trunc(x); }, t);
    check_unary(
        "round", [](auto& a) { return round(a); }, [](double x) { return std::nearbyint(x); }, t);
  }
  // sign(NaN) is 0, as PyTorch's.
  for (ScalarType t : float_dtypes())
    EXPECT_EQ(sign(full({3}, NAN, t)).to(kFloat).sum().item<float>(), 0.0f) << to_string(t);
  EXPECT_EQ(round(tensor({0.5f, 1.5f, 2.5f, -0.5f})).sum().item<float>(),
            0 + 2 + 2 + 0.0f);  // half to even
  EXPECT_TRUE(std::signbit(neg(zeros({1})).item<float>()));
  EXPECT_EQ(abs(full({1}, std::numeric_limits<int64_t>::min())).item<int64_t>(),
            std::numeric_limits<int64_t>::min());
  EXPECT_THROW_MSG(-ones({2}, kBool), NotImplementedError,
                   "[neg] negation of a bool tensor is not supported");
  EXPECT_THROW_MSG(floor(ones({2}, kBool)), NotImplementedError,
                   "[floor] not implemented for dtype Bool");
  EXPECT_THROW_MSG(relu(ones({2}, kBool)), NotImplementedError,
                   "[relu] not implemented for dtype Bool");
}

TEST(Unary, Predicates) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor f = tensor({1.f, inf, -inf, nan, 0.f});
  for (ScalarType t : float_dtypes()) {
    Tensor x = f.to(t);
    EXPECT_EQ(x.isnan().sum().item<int64_t>(), 1) << to_string(t);
    EXPECT_EQ(x.isinf().sum().item<int64_t>(), 2);
    EXPECT_EQ(x.isfinite().sum().item<int64_t>(), 2);
    EXPECT_EQ(x.isnan().dtype(), kBool);
  }
  for (ScalarType t : all_dtypes()) {
    Tensor x = random_tensor({4, 5}, t, -2, 2);
    check_unary(
        "logical_not", [](auto& a) { return logical_not(a); },
        [](double v) { return double(v == 0); }, t, -2, 2);
    EXPECT_EQ(x.isnan().sum().item<int64_t>(), 0);
    EXPECT_EQ(x.isfinite().sum().item<int64_t>(), 20);
  }
}

TEST(Unary, BitwiseNot) {
  for (ScalarType t : {kBool, kByte, kChar, kShort, kInt, kLong}) {
    check_unary(
        "bitwise_not", [](auto& a) { return ~a; },
        [t](double v) { return t == kBool ? double(v == 0) : round_to(double(~int64_t(v)), t); }, t,
        -20, 20);
  }
  EXPECT_THROW_MSG(~ones({2}), NotImplementedError,
                   "[bitwise_not] not implemented for dtype Float");
}

TEST(Unary, NanToNum) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  Tensor f = tensor({nan, inf, -inf, 2.f});
  Tensor d = nan_to_num(f);
  EXPECT_EQ(d.select(0, 0).item<float>(), 0.0f);
  EXPECT_EQ(d.select(0, 1).item<float>(), std::numeric_limits<float>::max());
  EXPECT_EQ(d.select(0, 2).item<float>(), std::numeric_limits<float>::lowest());
  Tensor h = nan_to_num(f.to(kHalf), 1.0, 100.0);
  EXPECT_EQ(h.select(0, 0).item<float>(), 1.0f);
  EXPECT_EQ(h.select(0, 1).item<float>(), 100.0f);
  EXPECT_EQ(h.select(0, 2).item<float>(), -65504.0f);
  EXPECT_EQ(nan_to_num(arange(3)).sum().item<int64_t>(), 3);
}

TEST(Unary, InPlace) {
  Tensor a = arange(6, kFloat).reshape({2, 3});
  Tensor v = a.t();
  v.sqrt_();
  expect_elements(
      a, [](auto& i) { return std::sqrt(double(i[0] * 3 + i[1])); }, "sqrt_ on a view");
  a.neg_().abs_().exp_().log_();
  expect_elements(
      a, [](auto& i) { return std::sqrt(double(i[0] * 3 + i[1])); }, "chained in-place", 2.0);
  Tensor e = zeros({1}).expand({3});
  EXPECT_THROW_MSG(e.relu_(), ValueError, "[relu_] the written-to tensor");
}
