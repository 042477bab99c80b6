// XPU against CPU: every XPU op runs on the same random inputs on both devices, for every dtype
// it supports and every layout (contiguous, non-contiguous, broadcast, zero-size, zero-dim),
// compared by dtype tolerance; the same bad input gives the same error type on both. And the
// registry: every op with a CPU kernel has an XPU kernel, or is in the list of ops not done yet.
#include <set>

#include "test_util.h"
#include "xpu_test_env.h"

using namespace xten;
using namespace xten::testing;

namespace {

const bool kEnv = set_xpu_test_env("1G");

// The same values on the XPU, in the same kind of layout (non-contiguous stays so).
Tensor to_xpu(const Tensor& t) {
  if (t.is_contiguous() || t.dim() == 0) return t.to("xpu");
  std::vector<int64_t> wide(t.sizes().begin(), t.sizes().end());
  wide.back() *= 2;
  Tensor v = zeros(wide, TensorOptions().dtype(t.dtype()).device(Device("xpu")))
                 .slice(-1, 0, std::nullopt, 2);
  v.copy_(t);
  return v;
}

double ulp_of(double v, ScalarType t) {
  const double a = std::max(std::fabs(v), t == kHalf ? 6.1e-5 : t == kDouble ? 2.3e-308 : 1.2e-38);
  const int mant = t == kHalf ? 10 : t == kBFloat16 ? 7 : t == kFloat ? 23 : 52;
  return std::ldexp(1.0, std::ilogb(a) - mant);
}

enum class Tol { kExact, kUlp, kReduce };

// Expects equal values: bitwise (NaN equal to NaN), or within 4 ulp of the result dtype
// (1 ulp for the 16-bit floats, whose float result is rounded once more).
::testing::AssertionResult agree(const Tensor& cpu, const Tensor& xpu, Tol tol) {
  if (cpu.dtype() != xpu.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << to_string(cpu.dtype()) << " vs " << to_string(xpu.dtype());
  if (cpu.sizes() != xpu.sizes())
    return ::testing::AssertionFailure() << "shape " << cpu.sizes() << " vs " << xpu.sizes();
  const Tensor x = xpu.to(kCPU).contiguous().to(kDouble), c = cpu.contiguous().to(kDouble);
  const double* a = c.data_ptr<double>();
  const double* b = x.data_ptr<double>();
  const int steps = cpu.dtype() == kHalf || cpu.dtype() == kBFloat16 ? 1 : 4;
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;
    if (tol == Tol::kUlp && std::isfinite(a[i]) &&
        std::fabs(a[i] - b[i]) <= steps * ulp_of(a[i], cpu.dtype()))
      continue;
    // Reductions sum in another order: relative to the magnitude, by dtype.
    const double rel = cpu.dtype() == kDouble ? 1e-12 : cpu.dtype() == kFloat ? 2e-5 : 2e-2;
    if (tol == Tol::kReduce && std::isfinite(a[i]) &&
        std::fabs(a[i] - b[i]) <= rel * std::max(1.0, std::fabs(a[i])))
      continue;
    return ::testing::AssertionFailure() << "element " << i << ": cpu " << a[i] << " xpu " << b[i];
  }
  return ::testing::AssertionSuccess();
}

struct Layout {
  const char* name;
  std::vector<int64_t> a, b;  // shapes of the two inputs
  bool non_contiguous;
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> l = {{"contiguous", {33, 17}, {33, 17}, false},
                                        {"non-contiguous", {9, 14}, {9, 14}, true},
                                        {"broadcast", {5, 1, 7}, {4, 7}, false},
                                        {"zero-size", {0, 3}, {0, 3}, false},
                                        {"zero-dim", {}, {}, false}};
  return l;
}

struct Case {
  const char* op;
  int arity;
  std::vector<ScalarType> dtypes;
  Tol tol;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
};

std::vector<ScalarType> all_but_bool() {
  return {kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble};
}

std::vector<Case> cases() {
  using T = const Tensor&;
  const auto all = all_dtypes();
  const auto fl = float_dtypes();
  std::vector<Case> c = {
      {"add", 2, all, Tol::kExact, [](T a, T b) { return a + b; }},
      {"add alpha", 2, all_but_bool(), Tol::kExact, [](T a, T b) { return add(a, b, 3); }},
      {"sub", 2, all_but_bool(), Tol::kExact, [](T a, T b) { return a - b; }},
      {"mul", 2, all, Tol::kExact, [](T a, T b) { return a * b; }},
      {"div", 2, all, Tol::kExact, [](T a, T b) { return a / b; }},
      {"maximum", 2, all, Tol::kExact, [](T a, T b) { return maximum(a, b); }},
      {"minimum", 2, all, Tol::kExact, [](T a, T b) { return minimum(a, b); }},
      {"eq", 2, all, Tol::kExact, [](T a, T b) { return eq(a, b); }},
      {"ne", 2, all, Tol::kExact, [](T a, T b) { return ne(a, b); }},
      {"lt", 2, all, Tol::kExact, [](T a, T b) { return lt(a, b); }},
      {"le", 2, all, Tol::kExact, [](T a, T b) { return le(a, b); }},
      {"gt", 2, all, Tol::kExact, [](T a, T b) { return gt(a, b); }},
      {"ge", 2, all, Tol::kExact, [](T a, T b) { return ge(a, b); }},
      {"add scalar", 1, all_but_bool(), Tol::kExact, [](T a, T) { return a + 2; }},
      {"mul float scalar", 1, all_but_bool(), Tol::kExact, [](T a, T) { return a * 0.5; }},
      {"add_", 2, fl, Tol::kExact,
       [](T a, T b) {
         Tensor s = a.clone();
         return s.add_(b.expand_as(s).contiguous());
       }},
      {"mul_ mixed", 2, fl, Tol::kExact,
       [](T a, T b) {
         Tensor s = a.clone();
         return s.mul_(b.to(kInt));
       }},
      {"neg", 1, all_but_bool(), Tol::kExact, [](T a, T) { return neg(a); }},
      {"abs", 1, all_but_bool(), Tol::kExact, [](T a, T) { return abs(a); }},
      {"relu", 1, all_but_bool(), Tol::kExact, [](T a, T) { return relu(a); }},
      {"sqrt", 1, all, Tol::kExact,
       [](T a, T) { return sqrt(abs(a.to(kDouble)).to(a.dtype() == kBool ? kFloat : a.dtype())); }},
      {"reciprocal", 1, all, Tol::kExact, [](T a, T) { return reciprocal(a); }},
      {"rsqrt", 1, fl, Tol::kUlp, [](T a, T) { return rsqrt(a); }},
      {"exp", 1, all, Tol::kUlp, [](T a, T) { return exp(a); }},
      {"exp2", 1, fl, Tol::kUlp, [](T a, T) { return exp2(a); }},
      {"log", 1, all, Tol::kUlp, [](T a, T) { return log(a); }},
      {"log2", 1, fl, Tol::kUlp, [](T a, T) { return log2(a); }},
      {"log10", 1, fl, Tol::kUlp, [](T a, T) { return log10(a); }},
      {"log1p", 1, fl, Tol::kUlp, [](T a, T) { return log1p(a); }},
      {"expm1", 1, fl, Tol::kUlp, [](T a, T) { return expm1(a); }},
      {"sin", 1, fl, Tol::kUlp, [](T a, T) { return sin(a); }},
      {"cos", 1, fl, Tol::kUlp, [](T a, T) { return cos(a); }},
      {"tan", 1, fl, Tol::kUlp, [](T a, T) { return tan(a); }},
      {"tanh", 1, fl, Tol::kUlp, [](T a, T) { return tanh(a); }},
      {"sigmoid", 1, fl, Tol::kUlp, [](T a, T) { return sigmoid(a); }},
      {"silu", 1, fl, Tol::kUlp, [](T a, T) { return silu(a); }},
      {"erf", 1, fl, Tol::kUlp, [](T a, T) { return erf(a); }},
      {"exp_", 1, fl, Tol::kUlp,
       [](T a, T) {
         Tensor s = a.clone();
         return s.exp_();
       }},
      {"sum", 1, all, Tol::kReduce, [](T a, T) { return sum(a); }},
      {"sum dim", 1, all, Tol::kReduce, [](T a, T) { return sum(a, {-1}); }},
      {"sum dims keepdim", 1, all, Tol::kReduce,
       [](T a, T) {
         return a.dim() ? sum(a, {0, -1}, true) : sum(a);
       }},
      {"sum dtype", 1, all, Tol::kReduce, [](T a, T) { return sum(a, {0}, false, kDouble); }},
      {"mean", 1, fl, Tol::kReduce, [](T a, T) { return mean(a); }},
      {"mean dim", 1, fl, Tol::kReduce, [](T a, T) { return mean(a, {0}); }},
      {"prod dim", 1, all, Tol::kReduce,
       [](T a, T) {
         return prod(a.dim() ? a.narrow(-1, 0, std::min<int64_t>(3, a.size(-1))) : a, -1);
       }},
      {"amax", 1, all, Tol::kExact, [](T a, T) { return amax(a); }},
      {"amin dim", 1, all, Tol::kExact, [](T a, T) { return amin(a, {-1}, true); }},
      {"max", 1, all, Tol::kExact, [](T a, T) { return max(a); }},
      {"softmax", 1, all, Tol::kReduce,
       [](T a, T) { return softmax(a, -1, a.dtype() == kDouble ? kDouble : kFloat); }},
      {"softmax dim0 same dtype", 1, fl, Tol::kReduce, [](T a, T) { return softmax(a, 0); }},
      {"leaky_relu", 1, all, Tol::kExact, [](T a, T) { return leaky_relu(a, 0.2); }},
      {"elu", 1, fl, Tol::kUlp, [](T a, T) { return elu(a, 1.5, 0.5, 2.0); }},
      {"softplus", 1, fl, Tol::kUlp, [](T a, T) { return softplus(a, 2.0, 5.0); }},
      {"hardswish", 1, all, Tol::kExact, [](T a, T) { return hardswish(a); }},
      {"log_softmax", 1, fl, Tol::kReduce, [](T a, T) { return log_softmax(a, -1); }},
      {"mm", 1, all, Tol::kReduce,
       [](T a, T) {
         return a.dim() == 2 ? mm(a, a.t()) : mm(a.reshape({1, -1}), a.reshape({-1, 1}));
       }},
      {"bmm", 1, all, Tol::kReduce,
       [](T a, T) {
         const Tensor x = a.reshape({1, 1, -1}).expand({3, 2, -1});
         return bmm(x, x.transpose(1, 2));
       }},
      {"matmul broadcast", 2, all, Tol::kReduce,
       [](T a, T b) {
         return a.dim() == 2 ? matmul(a.unsqueeze(0).expand({2, -1, -1}), b.t())
                             : matmul(a.reshape({1, -1}), b.reshape({-1, 1}));
       }},
      {"linear", 2, fl, Tol::kReduce,
       [](T a, T b) {
         return a.dim()
                    ? linear(
                          a.reshape({a.size(0), -1}),
                          b.reshape({b.size(0), -1}).narrow(0, 0, std::min<int64_t>(5, b.size(0))))
                    : linear(a.reshape({1, 1}), b.reshape({1, 1}));
       }},
      {"min", 1, all, Tol::kExact, [](T a, T) { return min(a); }},
      // Division with rounding: random divisors include 0 for integers (the CPU raises, so
      // must the XPU); the odd divisors 2b+1 are never 0.
      {"div trunc", 2, all, Tol::kExact, [](T a, T b) { return div(a, b, "trunc"); }},
      {"div floor", 2, all, Tol::kExact, [](T a, T b) { return div(a, b, "floor"); }},
      {"div trunc odd", 2, all_but_bool(), Tol::kExact,
       [](T a, T b) { return div(a, b * 2 + 1, "trunc"); }},
      {"div floor odd", 2, all_but_bool(), Tol::kExact,
       [](T a, T b) { return div(a, b * 2 + 1, "floor"); }},
      {"div_ floor", 2, fl, Tol::kExact,
       [](T a, T b) {
         Tensor s = a.clone();
         return div_(s, b.expand_as(s).contiguous(), "floor");
       }},
      {"remainder", 2, all, Tol::kExact, [](T a, T b) { return remainder(a, b); }},
      {"remainder odd", 2, all_but_bool(), Tol::kExact,
       [](T a, T b) { return remainder(a, b * 2 + 1); }},
      {"fmod odd", 2, all_but_bool(), Tol::kExact, [](T a, T b) { return fmod(a, b * 2 + 1); }},
      {"fmod", 2, all, Tol::kExact, [](T a, T b) { return fmod(a, b); }},
      {"pow", 2, all, Tol::kUlp, [](T a, T b) { return pow(a, b); }},
      {"pow small", 2, all_but_bool(), Tol::kUlp,
       [](T a, T b) { return pow(a, remainder(b, 4)); }},
      {"pow_", 2, fl, Tol::kUlp,
       [](T a, T b) {
         Tensor s = a.abs();
         return pow_(s, b.expand_as(s).contiguous());
       }},
      {"pow int scalar", 1, all_but_bool(), Tol::kUlp, [](T a, T) { return pow(a, 3); }},
      // pow(x, 2): the square on both devices (the XPU's a multiply, not OpenCL's pow).
      {"pow 2", 1, all_but_bool(), Tol::kExact, [](T a, T) { return pow(a, 2); }},
      {"pow_ 2", 1, fl, Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return pow_(s, 2.0);
       }},
      {"atan2", 2, all, Tol::kUlp, [](T a, T b) { return atan2(a, b); }},
      {"hypot", 2, all, Tol::kUlp, [](T a, T b) { return hypot(a, b); }},
      {"logical_and", 2, all, Tol::kExact, [](T a, T b) { return logical_and(a, b); }},
      {"logical_or", 2, all, Tol::kExact, [](T a, T b) { return logical_or(a, b); }},
      {"logical_xor", 2, all, Tol::kExact, [](T a, T b) { return logical_xor(a, b); }},
      {"bitwise_and", 2, all, Tol::kExact, [](T a, T b) { return bitwise_and(a, b); }},
      {"bitwise_or", 2, all, Tol::kExact, [](T a, T b) { return bitwise_or(a, b); }},
      {"bitwise_xor", 2, all, Tol::kExact, [](T a, T b) { return bitwise_xor(a, b); }},
      {"where", 2, all, Tol::kExact, [](T a, T b) { return where(gt(a, b), a, b); }},
      {"where mixed", 2, all, Tol::kExact,
       [](T a, T b) { return where(ne(b, b.flatten().sum().to(b.dtype())), a, b.to(kInt)); }},
      {"where non-bool", 2, all_but_bool(), Tol::kExact, [](T a, T b) { return where(a, a, b); }},
      {"clamp", 1, all, Tol::kExact, [](T a, T) { return clamp(a, -2, 3); }},
      {"clamp min only float", 1, all, Tol::kExact,
       [](T a, T) { return clamp(a, 0.5, std::nullopt); }},
      {"clamp max only", 1, all, Tol::kExact, [](T a, T) { return clamp(a, std::nullopt, 1); }},
      {"clamp_ saturating", 1, all_but_bool(), Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return clamp_(s, -1000, 2);
       }},
      // addcmul: the XPU runs the composite (mul, mul, add), the CPU one pass in opmath; the
      // same roundings but for the 16-bit floats, which the composite rounds after each op.
      {"addcmul", 2, {kFloat, kDouble, kInt, kLong, kByte}, Tol::kExact,
       [](T a, T b) { return addcmul(a, b, a, 3); }},
      {"addcmul broadcast", 2, {kFloat, kDouble}, Tol::kExact,
       [](T a, T b) { return addcmul(b, a, b.flatten().narrow(0, 0, 1)); }},
      {"lerp", 2, all, Tol::kExact, [](T a, T b) { return lerp(a, b, 0.3); }},
      {"lerp tensor weight", 2, fl, Tol::kExact,
       [](T a, T b) { return lerp(a, b, b * 0.125); }},  // both formulas
      {"sign", 1, all, Tol::kExact, [](T a, T) { return sign(a); }},
      {"sign NaN", 1, fl, Tol::kExact, [](T a, T) { return sign(sqrt(a)); }},  // sign(NaN) = 0
      {"relu NaN", 1, fl, Tol::kExact, [](T a, T) { return relu(sqrt(a) - 1); }},
      {"lerp wide weights", 2, fl, Tol::kExact,
       [](T a, T b) { return lerp(a, b, a * 0.25); }},  // weights in [-1.5, 1.5]: both forms
      {"sign_", 1, all, Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return sign_(s);
       }},
      {"floor", 1, all, Tol::kExact, [](T a, T) { return floor(a * 0.75); }},
      {"ceil", 1, all, Tol::kExact, [](T a, T) { return ceil(a); }},
      {"round", 1, all, Tol::kExact, [](T a, T) { return round(a * 0.5); }},
      {"trunc", 1, all, Tol::kExact, [](T a, T) { return trunc(a); }},
      {"floor_", 1, all, Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return floor_(s);
       }},
      {"logical_not", 1, all, Tol::kExact, [](T a, T) { return logical_not(a); }},
      {"logical_not_", 1, all, Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return logical_not_(s);
       }},
      {"bitwise_not", 1, all, Tol::kExact, [](T a, T) { return bitwise_not(a); }},
      {"bitwise_not_", 1, all, Tol::kExact,
       [](T a, T) {
         Tensor s = a.clone();
         return bitwise_not_(s);
       }},
      {"isnan", 1, all, Tol::kExact, [](T a, T) { return isnan(log(a)); }},
      {"isinf", 1, all, Tol::kExact, [](T a, T) { return isinf(a / a.round()); }},
      {"isfinite", 1, all, Tol::kExact, [](T a, T) { return isfinite(a / a.round()); }},
      {"isnan int", 1, all, Tol::kExact, [](T a, T) { return isnan(a); }},
      // gelu's 1 + erf (or tanh) cancels for negative x: its error is absolute, a few ulp of 1.
      {"gelu", 1, all, Tol::kReduce, [](T a, T) { return gelu(a); }},
      {"gelu tanh", 1, all, Tol::kReduce, [](T a, T) { return gelu(a, "tanh"); }},
      {"nan_to_num", 1, all, Tol::kExact,
       [](T a, T) { return nan_to_num(sqrt(a) / a.round()); }},
      {"nan_to_num given", 1, all, Tol::kExact,
       [](T a, T) { return nan_to_num(a / a.round(), 7.0, 100.0, -9.0); }},
      {"nan_to_num int", 1, all, Tol::kExact, [](T a, T) { return nan_to_num(a); }},
      // Extremes with their indices (integer inputs have many ties: the first index wins).
      {"max dim values", 1, all, Tol::kExact,
       [](T a, T) { return a.dim() ? std::get<0>(max(a, -1)) : std::get<0>(max(a, 0)); }},
      {"max dim indices", 1, all, Tol::kExact,
       [](T a, T) { return a.dim() ? std::get<1>(max(a, -1)) : std::get<1>(max(a, 0)); }},
      {"min dim0 keepdim indices", 1, all, Tol::kExact,
       [](T a, T) { return std::get<1>(min(a, 0, true)); }},
      {"min dim0 values", 1, all, Tol::kExact, [](T a, T) { return std::get<0>(min(a, 0)); }},
      {"argmax", 1, all, Tol::kExact, [](T a, T) { return argmax(a); }},
      {"argmax dim keepdim", 1, all, Tol::kExact, [](T a, T) { return argmax(a, -1, true); }},
      {"argmin dim0", 1, all, Tol::kExact, [](T a, T) { return argmin(a, 0); }},
      {"argmax NaN", 1, fl, Tol::kExact, [](T a, T) { return argmax(sqrt(a), -1); }},
      {"max NaN values", 1, fl, Tol::kExact,
       [](T a, T) { return std::get<0>(max(sqrt(a), -1)); }},
      {"all", 1, all, Tol::kExact, [](T a, T) { return xten::all(a); }},
      {"any dim", 1, all, Tol::kExact, [](T a, T) { return any(a, {-1}); }},
      {"all dims keepdim", 1, all, Tol::kExact,
       [](T a, T) { return a.dim() ? xten::all(gt(a, -5), {0, -1}, true) : xten::all(a); }},
      {"var", 1, all, Tol::kReduce, [](T a, T) { return var(a); }},
      {"var dim correction 0", 1, fl, Tol::kReduce, [](T a, T) { return var(a, {-1}, 0); }},
      {"std dim0 keepdim", 1, fl, Tol::kReduce,
       [](T a, T) { return xten::std(a, {0}, 1, true); }},
      {"norm", 1, all, Tol::kReduce, [](T a, T) { return norm(a); }},
      {"norm 1 dim", 1, fl, Tol::kReduce, [](T a, T) { return norm(a, 1, {-1}); }},
      {"norm inf", 1, fl, Tol::kExact, [](T a, T) { return norm(a, INFINITY, {-1}); }},
      {"norm -inf keepdim", 1, fl, Tol::kExact,
       [](T a, T) { return norm(a, -INFINITY, {0}, true); }},
      {"norm 0", 1, fl, Tol::kExact, [](T a, T) { return norm(a.round(), 0, {-1}); }},
      {"norm 3", 1, fl, Tol::kReduce, [](T a, T) { return norm(a, 3, {-1}); }},
      {"norm -1.5 dim0", 1, fl, Tol::kReduce, [](T a, T) { return norm(a, -1.5, {0}); }},
      {"cumsum", 1, all, Tol::kReduce, [](T a, T) { return cumsum(a, -1); }},
      {"cumsum dim0 dtype", 1, all, Tol::kReduce, [](T a, T) { return cumsum(a, 0, kDouble); }},
      {"cumprod", 1, all, Tol::kReduce,
       [](T a, T) { return cumprod(a.dim() ? a.narrow(-1, 0, std::min<int64_t>(9, a.size(-1))) : a, -1); }},
      {"cumprod dim0", 1, all_but_bool(), Tol::kReduce, [](T a, T) { return cumprod(a, 0); }},
  };
  return c;
}

TEST(XpuParity, EveryOpDtypeAndLayoutMatchesTheCpu) {
  manual_seed(11);
  int checked = 0;
  for (const Case& c : cases()) {
    for (ScalarType t : c.dtypes) {
      for (const Layout& l : layouts()) {
        Tensor a = random_tensor(l.a, t, -6, 6), b = random_tensor(l.b, t, -6, 6);
        if (l.non_contiguous) {
          a = non_contiguous(a);
          b = non_contiguous(b);
        }
        Tensor expected;
        try {
          expected = c.fn(a, b);
        } catch (const Error& e) {  // the CPU refuses: so must the XPU, with the same type
          EXPECT_THROW(c.fn(to_xpu(a), to_xpu(b)), Error) << c.op << " " << to_string(t);
          continue;
        }
        const Tensor actual = c.fn(to_xpu(a), to_xpu(b));
        EXPECT_EQ(actual.device().type(), kXPU) << c.op;
        EXPECT_TRUE(agree(expected, actual, c.tol)) << c.op << " " << to_string(t) << " " << l.name;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

// Found by the op fuzzer (seed 169877): uint8 division by 255 took the x / -1 path, since
// (uchar)-1 is 255.
TEST(XpuParity, Uint8DivisionBy255) {
  const Tensor a = tensor(std::vector<int64_t>{0, 5, 253, 255, 9}).to(kByte);
  const Tensor b = full({5}, 255, TensorOptions().dtype(kByte));
  for (const char* mode : {"trunc", "floor"})
    EXPECT_TRUE(agree(div(a, b, mode), div(a.to("xpu"), b.to("xpu"), mode), Tol::kExact)) << mode;
  EXPECT_TRUE(agree(remainder(a, b), remainder(a.to("xpu"), b.to("xpu")), Tol::kExact));
  EXPECT_TRUE(agree(fmod(a, b), fmod(a.to("xpu"), b.to("xpu")), Tol::kExact));
  EXPECT_EQ(remainder(a, b).to(kLong).sum().item<int64_t>(), 0 + 5 + 253 + 0 + 9);
}

TEST(XpuParity, SpecialValues) {
  const Tensor v = tensor({0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-30f, 3.4e38f});
  for (ScalarType t : {kFloat, kHalf, kBFloat16, kDouble}) {
    const Tensor c = v.to(t), x = c.to("xpu"), cr = c.flip({0}), xr = cr.to("xpu");
    EXPECT_TRUE(agree(c / cr, x / xr, Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(maximum(c, cr), maximum(x, xr), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(minimum(c, cr), minimum(x, xr), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(abs(c), abs(x), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(reciprocal(c), reciprocal(x), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(exp(c), exp(x), Tol::kUlp)) << to_string(t);
    EXPECT_TRUE(agree(amax(c), amax(x), Tol::kExact)) << to_string(t);  // NaN propagates
    EXPECT_TRUE(agree(amin(c.narrow(0, 0, 6)), amin(x.narrow(0, 0, 6)), Tol::kExact))
        << to_string(t);
  }
  // A long sum: two passes with many chunks; float32's sum of 2^22 ones is exact.
  EXPECT_EQ(ones({1 << 22}, TensorOptions().device(Device("xpu"))).sum().item<float>(),
            float(1 << 22));
  const Tensor r = randn({3, 1 << 18});
  EXPECT_TRUE(agree(r.sum({1}), r.to("xpu").sum({1}), Tol::kReduce));
  EXPECT_TRUE(agree(r.mean({0}), r.to("xpu").mean({0}), Tol::kReduce));
  // Long rows take two passes for their extreme's index: ties across chunks keep the first
  // index, and the first NaN wins.
  Tensor longrow = randint(0, 50, {2, 100003}).to(kFloat);
  longrow.select(0, 0).narrow(0, 70000, 1).fill_(60);
  longrow.select(0, 0).narrow(0, 90000, 1).fill_(60);
  longrow.select(0, 1).narrow(0, 80001, 1).fill_(NAN);
  longrow.select(0, 1).narrow(0, 99999, 1).fill_(NAN);
  for (ScalarType t : {kFloat, kInt, kHalf}) {
    const Tensor c = t == kInt ? nan_to_num(longrow, 61.0).to(t) : longrow.to(t);
    EXPECT_TRUE(agree(argmax(c, 1), argmax(c.to("xpu"), 1), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(argmin(c), argmin(c.to("xpu")), Tol::kExact)) << to_string(t);
    EXPECT_TRUE(agree(std::get<0>(max(c, 1)), std::get<0>(max(c.to("xpu"), 1)), Tol::kExact));
  }
  EXPECT_EQ(argmax(longrow.to("xpu"), 1).to(kCPU).data_ptr<int64_t>()[0], 70000);
  EXPECT_EQ(argmax(longrow.to("xpu"), 1).to(kCPU).data_ptr<int64_t>()[1], 80001);
  // Integer arithmetic wraps on both.
  const Tensor big = full({3}, std::numeric_limits<int32_t>::max(), TensorOptions().dtype(kInt));
  EXPECT_TRUE(agree(big + big, big.to("xpu") + big.to("xpu"), Tol::kExact));
  EXPECT_TRUE(agree(neg(big - 1), neg(big.to("xpu") - 1), Tol::kExact));
}

// Runs f on the CPU and on the XPU (f(device) builds its inputs there): the CPU's error
// message contains `needle` and the XPU's is the same.
template <class F>
void both(F&& f, const std::string& needle) {
  std::string msgs[2];
  for (int d = 0; d < 2; ++d) {
    try {
      f(d ? Device("xpu") : Device("cpu"));
    } catch (const Error& e) {
      msgs[d] = e.what();
    }
  }
  EXPECT_NE(msgs[0].find(needle), std::string::npos) << msgs[0];
  EXPECT_EQ(msgs[0], msgs[1]);
}
TensorOptions o(Device d, ScalarType t = kFloat) {
  return TensorOptions().dtype(t).device(d);
}

// Note [Float binary functions] (dispatch/ops.h): each FLOAT2 op against a float64 reference
// on both devices; integer and bool inputs compute in float32.
TEST(FloatBinaryFunctions, MatchTheirReferenceOnEveryDevice) {
  using T = const Tensor&;
  struct Fn {
    const char* op;
    std::function<Tensor(T, T)> f;
    double (*ref)(double, double);
  };
  const std::vector<Fn> fns = {
      {"atan2", [](T a, T b) { return atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }},
      {"hypot", [](T a, T b) { return hypot(a, b); },
       [](double a, double b) { return std::hypot(a, b); }},
  };
  manual_seed(54);
  for (const Fn& f : fns) {
    for (const char* dev : {"cpu", "xpu"}) {
      for (ScalarType t : {kFloat, kDouble, kHalf, kInt, kBool}) {
        const Tensor a = random_tensor({7, 9}, t, -20, 20), b = random_tensor({9}, t, -20, 20);
        const Tensor got = f.f(a.to(dev), b.to(dev)).to(kCPU);
        EXPECT_EQ(got.dtype(), is_floating_type(t) ? t : kFloat) << f.op << " " << dev;
        expect_elements(
            got, [&](auto& i) { return f.ref(value_at(a, i), value_at(b, i)); },
            std::string(f.op) + " " + dev + " " + to_string(t), 4.0);
      }
    }
  }
}

TEST(XpuParity, NanInNanOut) {
  manual_seed(52);
  for (ScalarType t : float_dtypes()) {
    check_nan_propagation(t, "xpu", 5);
    check_nan_propagation(t, "xpu", 3000);
  }
}

TEST(XpuParity, InfinitiesGivePyTorchsValues) {
  for (ScalarType t : float_dtypes()) check_infinities(t, "xpu", 3);
}

// log_softmax = (x - max) - log(sum): within float32 rounding of the result, not of the logits.
TEST(XpuParity, LogSoftmaxOfLargeLogits) {
  for (double scale : {1e3, 1e4}) {
    for (ScalarType t : {kFloat, kDouble}) {
      const Tensor x = (random_tensor({6, 300}, kDouble, -1, 1) * scale).to(t);
      const Tensor ref = x.to(kDouble);
      const Tensor m = ref.amax({1}, true);
      const Tensor expect = (ref - m) - log(exp(ref - m).sum({1}, true));
      const Tensor got = log_softmax(x.to("xpu"), 1).to(kCPU).to(kDouble);
      const double eps = t == kFloat ? 1e-6 : 1e-14;
      EXPECT_LE(((got - expect).abs() / expect.abs().clamp(1, std::nullopt)).amax().item<double>(),
                eps)
          << to_string(t) << " scale " << scale;
    }
    const Tensor two = tensor({scale, scale, -scale}).to("xpu");
    EXPECT_FLOAT_EQ(log_softmax(two, 0).to(kCPU).select(0, 0).item<float>(), std::log(0.5f));
    EXPECT_FLOAT_EQ(cross_entropy(tensor({scale, scale}, IntArrayRef{1, 2}).to("xpu"),
                                  tensor(std::vector<int64_t>{0}).to("xpu"))
                        .item<float>(),
                    std::log(2.0f));
  }
}

TEST(XpuParity, SplitWithSizesViewsOnTheXpu) {
  const Tensor a = arange(12, kFloat).reshape({3, 4}).to("xpu");
  const auto parts = a.split({1, 3}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].device().type(), kXPU);
  EXPECT_EQ(parts[1].storage_offset(), 1);
  EXPECT_TRUE(same_bytes(parts[1], arange(12, kFloat).reshape({3, 4}).narrow(1, 1, 3)));
  both(
      [](Device d) {
        split(zeros({4}, o(d)), {1, 2});
      },
      "[split_with_sizes] split_sizes must sum exactly to 4");
}

// docs/xpu_kernels.md, "Accuracy": the worst error of each float32 function against a float64
// reference on 2^16 random inputs, in ulp of the result (0.5: correctly rounded), on both
// devices. The bounds are the documented ones.
TEST(XpuParity, Float32FunctionsWithinTheirDocumentedUlp) {
  using T = const Tensor&;
  struct Fn {
    const char* op;
    double ulp;
    std::function<Tensor(T, T)> f;
    int domain;  // 0: x, y in [-10, 10); 1: x in [0, 10), y in [-3, 3)
  };
  const std::vector<Fn> fns = {
      {"div", 0.5, [](T a, T b) { return a / b; }, 0},
      {"sqrt", 0.5, [](T a, T) { return sqrt(a); }, 1},
      {"exp", 1.5, [](T a, T) { return exp(a); }, 0},
      {"exp2", 1.5, [](T a, T) { return exp2(a); }, 0},
      {"expm1", 3.0, [](T a, T) { return expm1(a); }, 0},
      {"log", 1.5, [](T a, T) { return log(a); }, 1},
      {"log2", 2.0, [](T a, T) { return log2(a); }, 1},
      {"log10", 2.0, [](T a, T) { return log10(a); }, 1},
      {"log1p", 2.5, [](T a, T) { return log1p(a); }, 1},
      {"rsqrt", 1.5, [](T a, T) { return rsqrt(a); }, 1},
      {"sin", 2.0, [](T a, T) { return sin(a); }, 0},
      {"cos", 2.0, [](T a, T) { return cos(a); }, 0},
      {"tan", 4.0, [](T a, T) { return tan(a); }, 0},
      {"tanh", 4.5, [](T a, T) { return tanh(a); }, 0},
      {"sigmoid", 2.5, [](T a, T) { return sigmoid(a); }, 0},
      {"erf", 1.0, [](T a, T) { return erf(a); }, 0},
      {"pow", 1.0, [](T a, T b) { return pow(a, b); }, 1},
      {"atan2", 1.5, [](T a, T b) { return atan2(a, b); }, 0},
  };
  manual_seed(53);
  const int64_t n = 1 << 16;
  const Tensor xs[2] = {rand({n}) * 20 - 10, rand({n}) * 10};
  const Tensor ys[2] = {rand({n}) * 20 - 10, rand({n}) * 6 - 3};
  for (const Fn& f : fns) {
    const Tensor x = xs[f.domain], y = ys[f.domain];
    const Tensor ref = f.f(x.to(kDouble), y.to(kDouble));
    const Tensor ulp = exp2(floor(log2(ref.abs().clamp(1.2e-38, std::nullopt))) - 23);
    const Tensor counted = isfinite(ref) & (ref.abs() < 3.4e38);
    for (const char* dev : {"cpu", "xpu"}) {
      const Tensor got = f.f(x.to(dev), y.to(dev)).to(kCPU).to(kDouble);
      const double worst =
          where(counted, (got - ref).abs() / ulp, zeros_like(ref)).amax().item<double>();
      EXPECT_LE(worst, f.ulp) << f.op << " on " << dev;
    }
  }
  // atan2(1, 1): the CPU gives pi/4 correctly rounded (as PyTorch's CPU), the XPU one ulp below.
  EXPECT_EQ(atan2(ones({1}), ones({1})).item<float>(), 0x1.921fb6p-1f);
}

// gelu's exact form and its derivative on the XPU (docs/xpu_kernels.md, "Accuracy"): erfc, not
// 1 + erf, so the tail for negative x keeps its relative accuracy (1 + erf had no correct digit
// below -5; 186 ulp at -12.8 from rounding -x / sqrt 2 before the arguments were carried as hi +
// lo). Every 1021st float of [0, 13.5] and their negatives, against long double: 2.2 and 3.3 ulp
// measured on PoCL, the CPU's bound of 5 checked.
TEST(XpuParity, GeluWithinItsUlpBound) {
  const GeluErrors e = gelu_errors(every_1021st_float_and_its_negative(13.5f), "xpu");
  EXPECT_LE(e.worst, 5.0) << "gelu at x = " << e.at;
  EXPECT_LE(e.worst_grad, 5.0) << "gelu_backward at x = " << e.at_grad;
}

// Convolution and pooling take images, not the generic layouts: a table of geometries, each
// on a contiguous and a non-contiguous input, in every float dtype.
TEST(XpuParity, ConvolutionAndPoolingMatchTheCpu) {
  using T = const Tensor&;
  struct WindowCase {
    const char* op;
    std::vector<int64_t> input, weight;  // weight empty: a pooling op
    std::function<Tensor(T, T)> fn;
    Tol tol;
  };
  auto first = [](const std::tuple<Tensor, Tensor>& r) { return std::get<0>(r); };
  auto second = [](const std::tuple<Tensor, Tensor>& r) { return std::get<1>(r); };
  const std::vector<WindowCase> table = {
      {"conv2d 3x3 pad 1 bias",
       {2, 3, 9, 8},
       {4, 3, 3, 3},
       [](T x, T w) {
         return conv2d(x, w, w.sum({1, 2, 3}), {1, 1}, {1, 1});
       },
       Tol::kReduce},
      {"conv2d 7x7 stride 2 pad 3",
       {2, 3, 17, 15},
       {5, 3, 7, 7},
       [](T x, T w) {
         return conv2d(x, w, std::nullopt, {2, 2}, {3, 3});
       },
       Tol::kReduce},
      {"conv2d 1x1",
       {3, 6, 5, 4},
       {4, 6, 1, 1},
       [](T x, T w) { return conv2d(x, w); },
       Tol::kReduce},
      {"conv2d 1x1 stride 2",
       {2, 6, 7, 7},
       {4, 6, 1, 1},
       [](T x, T w) {
         return conv2d(x, w, std::nullopt, {2, 2});
       },
       Tol::kReduce},
      {"conv2d groups dilation unbatched",
       {4, 10, 11},
       {6, 2, 3, 2},
       [](T x, T w) {
         return conv2d(x, w, std::nullopt, {1, 2}, {2, 1}, {2, 3}, 2);
       },
       Tol::kReduce},
      {"conv2d same",
       {1, 2, 6, 7},
       {3, 2, 3, 3},
       [](T x, T w) {
         return conv2d(x, w, std::nullopt, {1, 1}, "same");
       },
       Tol::kReduce},
      {"conv2d zero batch",
       {0, 3, 5, 5},
       {2, 3, 3, 3},
       [](T x, T w) { return conv2d(x, w); },
       Tol::kReduce},
      {"conv1d",
       {2, 4, 3, 9},
       {6, 4, 1, 3},
       [](T x, T w) { return conv1d(x.select(2, 0), w.select(2, 0), std::nullopt, {2}, {1}); },
       Tol::kReduce},
      {"conv_transpose2d",
       {2, 4, 5, 6},
       {4, 3, 3, 3},
       [](T x, T w) {
         return conv_transpose2d(x, w, w.sum({0, 2, 3}), {2, 2}, {1, 1}, {1, 0});
       },
       Tol::kReduce},
      {"conv_transpose2d groups dilation",
       {6, 4, 5},
       {6, 2, 2, 3},
       [](T x, T w) {
         return conv_transpose2d(x, w, std::nullopt, {1, 2}, {0, 1}, {0, 1}, 3, {2, 1});
       },
       Tol::kReduce},
      {"max_pool2d",
       {2, 3, 9, 10},
       {},
       [](T x, T) {
         return max_pool2d(x, {3, 3}, {2, 2}, {1});
       },
       Tol::kExact},
      {"max_pool2d dilation ceil",
       {3, 10, 9},
       {},
       [&](T x, T) {
         return first(max_pool2d_with_indices(x, {2, 3}, {2, 2}, {1, 1}, {2, 1}, true));
       },
       Tol::kExact},
      {"max_pool2d indices",
       {2, 2, 7, 8},
       {},
       [&](T x, T) { return second(max_pool2d_with_indices(x, {3}, {2}, {1}, {1}, true)); },
       Tol::kExact},
      {"avg_pool2d",
       {2, 3, 9, 10},
       {},
       [](T x, T) {
         return avg_pool2d(x, {3, 3}, {2, 2}, {1});
       },
       Tol::kExact},
      {"avg_pool2d exclude pad ceil",
       {2, 3, 8, 7},
       {},
       [](T x, T) {
         return avg_pool2d(x, {3, 2}, {2, 2}, {1, 1}, true, false);
       },
       Tol::kExact},
      {"avg_pool2d divisor",
       {3, 6, 6},
       {},
       [](T x, T) { return avg_pool2d(x, {2}, {}, {0}, false, true, 3); },
       Tol::kExact},
      {"adaptive_avg_pool2d",
       {2, 3, 7, 9},
       {},
       [](T x, T) {
         return adaptive_avg_pool2d(x, {3, 4});
       },
       Tol::kExact},
      // The CPU sums windows of whole rows lane by lane (kernels/cpu/pool.cpp): another order.
      {"adaptive_avg_pool2d 1x1",
       {2, 5, 7, 7},
       {},
       [](T x, T) {
         return adaptive_avg_pool2d(x, {1, 1});
       },
       Tol::kReduce},
      {"upsample_bilinear2d",
       {2, 3, 5, 7},
       {},
       [](T x, T) {
         return upsample_bilinear2d(x, {9, 4});
       },
       Tol::kExact},
      {"upsample_bilinear2d align_corners",
       {1, 2, 4, 6},
       {},
       [](T x, T) {
         return upsample_bilinear2d(x, {7, 11}, true);
       },
       Tol::kExact},
      {"adaptive_max_pool2d",
       {2, 3, 7, 9},
       {},
       [&](T x, T) {
         return first(adaptive_max_pool2d(x, {4, 5}));
       },
       Tol::kExact},
      {"adaptive_max_pool2d indices",
       {3, 9, 5},
       {},
       [&](T x, T) {
         return second(adaptive_max_pool2d(x, {2, 3}));
       },
       Tol::kExact},
  };
  manual_seed(5);
  int checked = 0;
  for (const WindowCase& c : table) {
    for (ScalarType t : float_dtypes()) {
      for (bool strided : {false, true}) {
        Tensor x = random_tensor(c.input, t, -3, 3);
        if (t != kDouble && !c.weight.empty()) x = x.round();  // exact sums in any order
        Tensor w = c.weight.empty() ? Tensor() : random_tensor(c.weight, t, -2, 2).round();
        if (std::string(c.op).find("max_pool") != std::string::npos)
          x.view({-1}).narrow(0, 3, 1).fill_(NAN);  // NaN wins, at the same index
        if (strided) x = non_contiguous(x);
        const Tensor expected = c.fn(x, w);
        const Tensor actual = c.fn(to_xpu(x), w.defined() ? w.to("xpu") : w);
        EXPECT_EQ(actual.device().type(), kXPU) << c.op;
        EXPECT_TRUE(agree(expected, actual, c.tol))
            << c.op << " " << to_string(t) << (strided ? " strided" : "");
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(table.size() * float_dtypes().size() * 2));
}

TEST(XpuParity, ConvolutionAndPoolingErrorsMatchTheCpu) {
  both(
      [&](Device d) {
        conv2d(ones({1, 3, 5, 5}, o(d)), ones({2, 4, 3, 3}, o(d)));
      },
      "expects 4 input channels");
  both(
      [&](Device d) {
        conv2d(ones({1, 3, 5, 5}, o(d, kInt)), ones({2, 3, 3, 3}, o(d, kInt)));
      },
      "not implemented for dtype Int");
  both(
      [&](Device d) {
        conv2d(ones({1, 3, 2, 2}, o(d)), ones({2, 3, 3, 3}, o(d)));
      },
      "smaller than the dilated kernel");
  both(
      [&](Device d) {
        conv_transpose2d(ones({1, 3, 5, 5}, o(d)), ones({4, 3, 3, 3}, o(d)));
      },
      "expects 4 input channels");
  both(
      [&](Device d) {
        max_pool2d(ones({1, 3, 5, 5}, o(d)), {3}, {1}, {2});
      },
      "at most half the (dilated) kernel size");
  both(
      [&](Device d) {
        avg_pool2d(ones({3, 5, 5}, o(d)), {2}, {}, {0}, false, true, 0);
      },
      "divisor_override must be nonzero");
  both(
      [&](Device d) {
        adaptive_avg_pool2d(ones({5, 5}, o(d)), {2, 2});
      },
      "expected a 3-D (unbatched) or 4-D (batched) input");
  both(
      [&](Device d) {
        adaptive_max_pool2d(ones({1, 5, 5}, o(d, kLong)), {2, 2});
      },
      "not implemented for dtype Long");
  both(
      [&](Device d) {
        upsample_bilinear2d(ones({5, 5, 5}, o(d)), {2, 2});
      },
      "expected a 4-D input [N, C, H, W]");
  both(
      [&](Device d) {
        upsample_bilinear2d(ones({1, 1, 5, 5}, o(d, kInt)), {2, 2});
      },
      "not implemented for dtype Int");
}

// Indexing, sorting and linspace, in every dtype, against the CPU.
TEST(XpuParity, IndexingSortingAndLinspaceMatchTheCpu) {
  manual_seed(7);
  auto x = [](const Tensor& t) { return to_xpu(t); };
  for (ScalarType t : all_dtypes()) {
    SCOPED_TRACE(to_string(t));
    const Tensor a = random_tensor({6, 9}, t, -6, 6), nc = non_contiguous(a);
    const Tensor rows = tensor({4, -1, 0, 4, 2}).to(kLong), cols = rows.to(kInt);
    // index_select / gather
    EXPECT_TRUE(agree(index_select(a, 0, rows), index_select(x(a), 0, x(rows)), Tol::kExact));
    EXPECT_TRUE(agree(index_select(nc, 1, cols), index_select(x(nc), 1, x(cols)), Tol::kExact));
    EXPECT_TRUE(agree(index_select(a.select(0, 0).select(0, 1), 0, rows.select(0, 2)),
                      index_select(x(a).select(0, 0).select(0, 1), 0, x(rows.select(0, 2))),
                      Tol::kExact));
    const Tensor g = randint(-6, 6, {4, 9});
    EXPECT_TRUE(agree(gather(a, 0, g), gather(x(a), 0, x(g)), Tol::kExact));
    EXPECT_TRUE(agree(gather(nc, 1, remainder(g.narrow(1, 0, 5), 9)),
                      gather(x(nc), 1, x(remainder(g.narrow(1, 0, 5), 9))), Tol::kExact));
    // scatter: unique targets (a permutation per column); scatter_add with repeated targets
    // on integer-valued data, whose sums are exact in any order.
    const Tensor perm = argsort(rand({6, 9}), 0);
    const Tensor src =
        t == kBool ? random_tensor({6, 9}, t) : random_tensor({6, 9}, t, -6, 6).round();
    EXPECT_TRUE(agree(scatter(a, 0, perm, src), scatter(x(a), 0, x(perm), x(src)), Tol::kExact));
    EXPECT_TRUE(agree(scatter(nc, 1, perm.narrow(0, 0, 2), 3),
                      scatter(x(nc), 1, x(perm.narrow(0, 0, 2)), 3), Tol::kExact));
    if (t != kBool) {
      const Tensor rep = randint(0, 3, {6, 9});
      const Tensor base = a.round();
      EXPECT_TRUE(agree(scatter_add(base, 0, rep, src), scatter_add(x(base), 0, x(rep), x(src)),
                        Tol::kExact));
      // index_put_ with accumulate and repeated rows (through _index_put_rows_).
      Tensor c = base.clone(), d = x(base);
      index_put_(c, {rows}, src.narrow(0, 0, 5), true);
      index_put_(d, {x(rows)}, x(src.narrow(0, 0, 5)), true);
      EXPECT_TRUE(agree(c, d, Tol::kExact));
    }
    Tensor c = a.clone(), d = x(a);
    index_put_(c, {rows.narrow(0, 1, 3)}, src.narrow(0, 0, 3));
    index_put_(d, {x(rows.narrow(0, 1, 3))}, x(src.narrow(0, 0, 3)));
    EXPECT_TRUE(agree(c, d, Tol::kExact));
    EXPECT_TRUE(agree(index(a, {rows, cols}), index(x(a), {x(rows), x(cols)}), Tol::kExact));
    // nonzero / masked_select
    EXPECT_TRUE(agree(nonzero(nc), nonzero(x(nc)), Tol::kExact));
    EXPECT_TRUE(agree(nonzero(a.select(0, 0).select(0, 0)), nonzero(x(a).select(0, 0).select(0, 0)),
                      Tol::kExact));
    const Tensor mask = gt(random_tensor({9}, kFloat, -1, 1), 0);
    EXPECT_TRUE(agree(masked_select(nc, mask), masked_select(x(nc), x(mask)), Tol::kExact));
    EXPECT_TRUE(agree(masked_select(a, zeros({1}, kBool)),
                      masked_select(x(a), x(zeros({1}, kBool))), Tol::kExact));
    // sort (stable, NaN last) and topk (values; indices point at equal values)
    Tensor s = random_tensor({5, 37}, t, -4, 4);
    if (is_floating_type(t)) s.view({-1}).narrow(0, 3, 4).fill_(NAN);
    for (bool desc : {false, true}) {
      auto [cv, ci] = sort(s, -1, desc);
      auto [xv, xi] = sort(x(s), -1, desc);
      EXPECT_TRUE(agree(cv, xv, Tol::kExact)) << desc;
      EXPECT_TRUE(agree(ci, xi, Tol::kExact)) << desc;
      auto [cv0, ci0] = sort(s, 0, desc);
      auto [xv0, xi0] = sort(x(non_contiguous(s)), 0, desc);
      EXPECT_TRUE(agree(cv0, xv0, Tol::kExact)) << desc;
      EXPECT_TRUE(agree(ci0, xi0, Tol::kExact)) << desc;
    }
    auto [tv, ti] = topk(s, 7, 1);
    auto [xtv, xti] = topk(x(s), 7, 1);
    EXPECT_TRUE(agree(tv, xtv, Tol::kExact));
    EXPECT_TRUE(agree(tv, gather(s, 1, xti.to(kCPU)), Tol::kExact));
    // Up to 16 of a row come from one pass per row (topk_rows), more from the sort: both in
    // the sort's stable order, ties and NaN included.
    const Tensor sorted_idx = std::get<1>(sort(x(s), 1, true)).to(kCPU);
    for (int64_t k : {7, 16, 20})
      EXPECT_TRUE(agree(sorted_idx.narrow(1, 0, k), std::get<1>(topk(x(s), k, 1)), Tol::kExact))
          << "k " << k;
    EXPECT_TRUE(agree(std::get<0>(topk(s, 3, 0, false)), std::get<0>(topk(x(s), 3, 0, false)),
                      Tol::kExact));
    EXPECT_TRUE(agree(argsort(s, 0, true), argsort(x(s), 0, true), Tol::kExact));
    EXPECT_TRUE(agree(std::get<0>(sort(a.select(0, 0).select(0, 0))),
                      std::get<0>(sort(x(a).select(0, 0).select(0, 0))), Tol::kExact));
    // linspace: exact where the values are exact in float; a few ulp otherwise.
    if (t != kBool) {
      const TensorOptions cpu = TensorOptions().dtype(t), xpu = cpu.device(Device("xpu"));
      EXPECT_TRUE(agree(linspace(-4, 12, 9, cpu), linspace(-4, 12, 9, xpu), Tol::kExact));
      EXPECT_TRUE(agree(linspace(3, -3, 0, cpu), linspace(3, -3, 0, xpu), Tol::kExact));
      EXPECT_TRUE(agree(linspace(5, 9, 1, cpu), linspace(5, 9, 1, xpu), Tol::kExact));
      if (is_floating_type(t)) {
        EXPECT_TRUE(agree(linspace(-1.3, 2.9, 77, cpu), linspace(-1.3, 2.9, 77, xpu), Tol::kUlp));
      }
    }
  }
}

// The composite ops (normalization, losses, joining, padding, ...) are written with the ops
// above, so on the XPU they run entirely on XPU kernels; each against the CPU.
TEST(XpuParity, CompositesMatchTheCpu) {
  using V = const std::vector<Tensor>&;
  struct Composite {
    const char* name;
    std::function<Tensor(V)> fn;
  };
  const std::vector<Composite> table = {
      {"layer_norm",
       [](V t) { return layer_norm(t[0], {9}, t[1].select(0, 0), t[2].select(0, 0)); }},
      {"group_norm",
       [](V t) {
         return group_norm(t[0].reshape({1, 6, 3, 3}), 3);
       }},
      {"batch_norm eval",
       [](V t) {
         return batch_norm(t[0].reshape({3, 6, 3}), t[1].select(1, 0), t[1].select(1, 2),
                           t[1].select(1, 3), abs(t[1].select(1, 1)), false);
       }},
      {"batch_norm train + running stats",
       [](V t) {
         Tensor rm = zeros({6}, t[0].options()), rv = ones({6}, t[0].options());
         const Tensor y =
             batch_norm(t[0].reshape({3, 6, 3}), std::nullopt, std::nullopt, rm, rv, true, 0.3);
         return cat({y.flatten(), rm, rv});
       }},
      {"cross_entropy",
       [](V t) { return cross_entropy(t[0].narrow(1, 0, 5), argmax(t[1], 1).remainder(5)); }},
      {"cross_entropy smoothing weight",
       [](V t) {
         return cross_entropy(t[0].narrow(1, 0, 5), argmax(t[1], 1).remainder(5),
                              abs(t[2].select(0, 0).narrow(0, 0, 5)), "sum", 2, 0.1);
       }},
      {"cross_entropy probabilities", [](V t) { return cross_entropy(t[0], softmax(t[1], 1)); }},
      {"nll_loss",
       [](V t) { return nll_loss(log_softmax(t[0], 1), argmax(t[1], 1), std::nullopt, "none"); }},
      {"mse_loss", [](V t) { return mse_loss(t[0], t[1]); }},
      {"l1_loss", [](V t) { return l1_loss(t[0], t[1], "sum"); }},
      {"smooth_l1_loss", [](V t) { return smooth_l1_loss(t[0], t[1], "none", 0.5); }},
      {"huber_loss", [](V t) { return huber_loss(t[0], t[1]); }},
      {"binary_cross_entropy",
       [](V t) { return binary_cross_entropy(sigmoid(t[0]), sigmoid(t[1])); }},
      {"bce_with_logits",
       [](V t) {
         return binary_cross_entropy_with_logits(t[0], sigmoid(t[1]), std::nullopt,
                                                 abs(t[2].select(0, 0)));
       }},
      {"kl_div", [](V t) { return kl_div(log_softmax(t[0], 1), softmax(t[1], 1), "batchmean"); }},
      {"logsumexp", [](V t) { return logsumexp(t[0], {1}); }},
      {"hardtanh", [](V t) { return hardtanh(t[0], -0.5, 0.7); }},
      {"prelu", [](V t) { return prelu(t[0], t[2].select(0, 0).abs()); }},
      {"cat stack",
       [](V t) {
         return stack({cat({t[0], t[1]}, 1), cat({t[1], t[0]}, 1)}, 2);
       }},
      {"pad constant",
       [](V t) {
         return pad(t[0], {1, 2, 0, 1}, "constant", 3.0);
       }},
      {"pad reflect",
       [](V t) {
         return pad(t[0].unsqueeze(0), {2, 1}, "reflect");
       }},
      {"pad replicate",
       [](V t) {
         return pad(t[0].unsqueeze(0), {2, 3, 1, 1}, "replicate");
       }},
      {"repeat flip roll",
       [](V t) {
         return roll(flip(repeat(t[0], {2, 1}), {0, 1}), {3}, {1});
       }},
      {"tril triu", [](V t) { return tril(t[0], 1) + triu(t[1], -1); }},
      {"masked_fill", [](V t) { return masked_fill(t[0], gt(t[1], 0), -2.5); }},
      {"embedding one_hot",
       [](V t) {
         const Tensor idx = argmax(t[1], 1);
         return cat({embedding(t[2], idx), one_hot(idx, 9).to(t[0].dtype())}, 1);
       }},
      {"outer dot mv",
       [](V t) {
         return cat({outer(t[0].select(0, 0), t[1].select(0, 1)).flatten(),
                     dot(t[0].select(0, 2), t[1].select(0, 2)).view({1}),
                     mv(t[0], t[1].select(0, 3))});
       }},
      {"addmm baddbmm",
       [](V t) {
         // [6, 9] @ [9, 6] + [6, 6]; batched [1, 6, 9] @ [1, 9, 9] + [1, 6, 9]
         return cat(
             {addmm(t[2].narrow(0, 0, 6).narrow(1, 0, 6), t[0], t[1].t(), 0.5, 2).flatten(),
              baddbmm(t[1].unsqueeze(0), t[0].unsqueeze(0), t[2].unsqueeze(0), 1, -1).flatten()});
       }},
  };
  manual_seed(17);
  for (ScalarType t : float_dtypes()) {
    const std::vector<Tensor> in = {random_tensor({6, 9}, t, -3, 3),
                                    random_tensor({6, 9}, t, -3, 3),
                                    random_tensor({9, 9}, t, -3, 3)};
    std::vector<Tensor> on_xpu;
    for (const Tensor& x : in) on_xpu.push_back(to_xpu(x));
    for (const Composite& c : table) {
      Tensor expected, actual;
      try {
        expected = c.fn(in);
        actual = c.fn(on_xpu);
      } catch (const Error& e) {
        ADD_FAILURE() << c.name << " " << to_string(t) << ": " << e.what();
        continue;
      }
      EXPECT_EQ(actual.device().type(), kXPU) << c.name;
      EXPECT_TRUE(agree(expected, actual, Tol::kReduce)) << c.name << " " << to_string(t);
    }
    // dropout draws from each device's Philox generator: the same mask for the same seed.
    manual_seed(3);
    const Tensor cpu_drop = dropout(in[0], 0.4);
    manual_seed(3);
    EXPECT_TRUE(agree(cpu_drop, dropout(on_xpu[0], 0.4), Tol::kExact)) << to_string(t);
  }
}

// layer_norm and group_norm forward have XPU kernels of one work-group per row (norm.cl), as the
// CPU has one task per row: rows longer than a work-group (1,000 and 2 x 6 x 7 x 9 elements),
// with and without weight and bias, every floating dtype, against the CPU kernels.
TEST(XpuParity, NormalizationForwardKernelsMatchTheCpu) {
  manual_seed(61);
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    const Tensor x = (randn({5, 1000}) * 3 + 2).to(t), w = randn({1000}).to(t),
                 b = randn({1000}).to(t);
    const Device xpu("xpu");
    for (int affine = 0; affine < 3; ++affine) {
      const std::optional<Tensor> wc = affine > 0 ? std::optional<Tensor>(w) : std::nullopt;
      const std::optional<Tensor> bc = affine > 1 ? std::optional<Tensor>(b) : std::nullopt;
      const std::optional<Tensor> wx = affine > 0 ? std::optional<Tensor>(w.to(xpu)) : std::nullopt;
      const std::optional<Tensor> bx = affine > 1 ? std::optional<Tensor>(b.to(xpu)) : std::nullopt;
      EXPECT_TRUE(
          agree(layer_norm(x, {1000}, wc, bc), layer_norm(x.to(xpu), {1000}, wx, bx), Tol::kReduce))
          << "layer_norm " << to_string(t) << " affine " << affine;
    }
    const Tensor g = (randn({2, 12, 7, 9}) - 1).to(t), gw = randn({12}).to(t),
                 gb = randn({12}).to(t);
    EXPECT_TRUE(agree(group_norm(g, 2, gw, gb), group_norm(g.to(xpu), 2, gw.to(xpu), gb.to(xpu)),
                      Tol::kReduce))
        << "group_norm " << to_string(t);
    EXPECT_TRUE(agree(group_norm(g, 4), group_norm(g.to(xpu), 4), Tol::kReduce))
        << "group_norm without affine " << to_string(t);
  }
  EXPECT_EQ(layer_norm(empty({0, 8}, Device("xpu")), {8}).sizes(), IntArrayRef({0, 8}));
}

// logsumexp's row kernel (activation.cl): rows of -inf only, with a +inf, with a NaN; several
// dims, keepdim, integers (float32), an empty reduction (-inf), in every float dtype.
TEST(XpuParity, LogsumexpRowsMatchTheCpu) {
  manual_seed(64);
  const Device xpu("xpu");
  for (ScalarType t : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor x = (randn({4, 5, 300}) * 10).to(t);
    x.select(0, 0).select(0, 1).fill_(-INFINITY);
    x.select(0, 1).select(0, 2).narrow(0, 7, 1).fill_(INFINITY);
    x.select(0, 2).select(0, 3).narrow(0, 9, 1).fill_(NAN);
    EXPECT_TRUE(agree(logsumexp(x, {2}), logsumexp(x.to(xpu), {2}), Tol::kReduce)) << to_string(t);
    EXPECT_TRUE(agree(logsumexp(x, {0, 2}, true), logsumexp(x.to(xpu), {0, 2}, true), Tol::kReduce))
        << to_string(t);
    EXPECT_TRUE(agree(logsumexp(x.narrow(2, 0, 0), {2}), logsumexp(x.narrow(2, 0, 0).to(xpu), {2}),
                      Tol::kExact))
        << to_string(t);
  }
  const Tensor i = randint(-5, 5, {3, 7});
  EXPECT_TRUE(agree(logsumexp(i, {1}), logsumexp(i.to(xpu), {1}), Tol::kReduce));
}

// layer_norm and its backward over rows of 40 (a work-item per row, Note [Short rows] in
// norm.cl) and 300 (a work-group per row); the weight and bias gradients add parts of 64 rows:
// 150 rows make two whole parts and one of 22.
TEST(XpuParity, LayerNormShortAndLongRowsMatchTheCpu) {
  manual_seed(63);
  const Device xpu("xpu");
  for (int64_t n : {40, 300})
    for (ScalarType t : {kFloat, kDouble, kBFloat16}) {
      const Tensor x = (randn({150, n}) * 2 + 1).to(t), g = randn({150, n}).to(t);
      const Tensor w = randn({n}).to(t), b = randn({n}).to(t);
      const std::string what = std::string(to_string(t)) + " n " + std::to_string(n);
      EXPECT_TRUE(agree(layer_norm(x, {n}, w, b), layer_norm(x.to(xpu), {n}, w.to(xpu), b.to(xpu)),
                        Tol::kReduce))
          << what;
      EXPECT_TRUE(agree(layer_norm(x, {n}), layer_norm(x.to(xpu), {n}), Tol::kReduce)) << what;
      auto [dx, dw, db] = layer_norm_backward(g, x, {n}, w, 1e-5);
      auto [dxx, dwx, dbx] = layer_norm_backward(g.to(xpu), x.to(xpu), {n}, w.to(xpu), 1e-5);
      EXPECT_TRUE(agree(dx, dxx, Tol::kReduce)) << what;
      EXPECT_TRUE(agree(dw, dwx, Tol::kReduce)) << what;
      EXPECT_TRUE(agree(db, dbx, Tol::kReduce)) << what;
      auto [dx0, dw0, db0] = layer_norm_backward(g, x, {n}, std::nullopt, 1e-5);
      auto [dxx0, dwx0, dbx0] = layer_norm_backward(g.to(xpu), x.to(xpu), {n}, std::nullopt, 1e-5);
      EXPECT_TRUE(agree(dx0, dxx0, Tol::kReduce)) << what << " without weight";
    }
}

// Note [Row strips] (linalg.cl): products whose B has unit column stride take 8 x 32 blocks on
// vector accumulators; with 32 rows of A or more, a B of other strides is copied to rows first,
// with fewer it goes to the tiled kernel. All three add each output's terms in k order, so they
// give the same bits. Shapes cover full blocks, a last row block of 5 (37 rows) or 4 (20), a
// last column block of 6, and a batch with strides of its own.
TEST(XpuParity, RowStripProductsEqualTheTiledKernelAndTheCpu) {
  manual_seed(62);
  const Device xpu("xpu");
  for (ScalarType t : {kFloat, kBFloat16, kHalf}) {
    const Tensor a = randn({3, 37, 2 * 83}).to(t).narrow(2, 0, 83);  // rows of stride 166
    const Tensor b = randn({3, 83, 70}).to(t);
    const Tensor ax = to_xpu(a), bx = b.to(xpu);
    const Tensor bt = bx.transpose(1, 2).contiguous().transpose(1, 2);  // column-major
    const Tensor strips = bmm(ax, bx).to(kCPU);
    EXPECT_TRUE(agree(bmm(a, b), strips, Tol::kReduce)) << to_string(t);
    EXPECT_TRUE(agree(strips, bmm(ax, bt), Tol::kExact)) << "copied B " << to_string(t);
    const Tensor a20 = ax.narrow(1, 0, 20);
    EXPECT_TRUE(agree(bmm(a20, bx).to(kCPU), bmm(a20, bt), Tol::kExact))
        << "tiled " << to_string(t);
  }
}

TEST(XpuParity, IndexErrorsMatchTheCpu) {
  const Tensor bad = tensor({1, 7, -9, 2}).to(kLong);
  both(
      [&](Device d) {
        index_select(ones({3, 4}, o(d)), 1, bad.to(d));
      },
      "index 7 is out of range for dim 1 of size 4");
  both(
      [&](Device d) {
        index_select(ones({3, 4}, o(d)), 1, bad.to(kFloat).to(d));
      },
      "expected an int64 or int32 index tensor");
  both(
      [&](Device d) {
        gather(ones({3, 4}, o(d)), 0, bad.view({1, 4}).to(d));
      },
      "index 7 is out of range for dim 0 of size 3");
  both(
      [&](Device d) {
        scatter_add(ones({3, 4}, o(d)), 0, bad.view({1, 4}).to(d), ones({1, 4}, o(d)));
      },
      "index 7 is out of range");
  both(
      [&](Device d) {
        scatter_add(ones({3}, o(d, kBool)), 0, bad.narrow(0, 0, 1).to(d), ones({1}, o(d, kBool)));
      },
      "not implemented for dtype Bool");
  both(
      [&](Device d) {
        scatter(ones({3}, o(d)), 0, bad.narrow(0, 0, 1).to(d), ones({1}, o(d, kInt)));
      },
      "expected src of dtype Float");
  both(
      [&](Device d) {
        Tensor t = ones({3, 2}, o(d));
        index_put_(t, {bad.to(d)}, ones({2}, o(d)));
      },
      "out of range");
  both([&](Device d) { masked_select(ones({3}, o(d)), ones({3}, o(d))); }, "expected a bool mask");
  both([&](Device d) { topk(ones({3}, o(d)), 4); }, "k (4) must be in [0, 3]");
  both([&](Device d) { linspace(0, 1, -1, o(d)); }, "number of steps must be non-negative");
}

TEST(XpuParity, SameErrorsOnBothDevices) {
  const Tensor a = ones({2, 3}), b = ones({4, 3}), flags = ones({3}, kBool);
  auto both_xy = [](auto&& f, const Tensor& x, const Tensor& y, const std::string& needle) {
    std::string cpu_msg, xpu_msg;
    try {
      f(x, y);
    } catch (const Error& e) {
      cpu_msg = e.what();
    }
    try {
      f(to_xpu(x), to_xpu(y));
    } catch (const Error& e) {
      xpu_msg = e.what();
    }
    EXPECT_NE(cpu_msg.find(needle), std::string::npos) << cpu_msg;
    EXPECT_EQ(cpu_msg, xpu_msg);
  };
  both_xy([](const Tensor& x, const Tensor& y) { return x + y; }, a, b, "not broadcastable");
  both_xy(
      [](const Tensor& x, const Tensor& y) {
        return scatter_add(x, 0, zeros({5, 0}, kLong).to(x.device()), y);
      },
      zeros({4, 0}), zeros({4, 0}), "index (5, 0) is larger than src (4, 0)");
  both_xy([](const Tensor& x, const Tensor& y) { return x - y; }, flags, flags,
          "subtraction of bool tensors");
  both_xy([](const Tensor& x, const Tensor&) { return neg(x); }, flags, flags,
          "negation of a bool tensor");
  both_xy([](const Tensor& x, const Tensor& y) { return add(x, y, 0.5); }, ones({2}, kInt),
          ones({2}, kInt), "alpha must not be a floating point number");
  both_xy(
      [](const Tensor& x, const Tensor& y) {
        Tensor s = x.clone();
        return s.add_(y);
      },
      ones({2}, kInt), ones({2}, kFloat),
      "result type Float can't be cast to the desired output type Int");
  both_xy(
      [](const Tensor& x, const Tensor& y) {
        Tensor s = x.clone();
        return s.mul_(y);
      },
      ones({3}), ones({2, 3}), "output with shape (3) doesn't match the broadcast shape (2, 3)");
  both_xy([](const Tensor& x, const Tensor&) { return abs(x); }, flags, flags, "abs");
  both_xy([](const Tensor& x, const Tensor&) { return softplus(x, 0); }, a, a,
          "beta must be nonzero");
  const Tensor ints = arange(4).to(kInt), with_zero = tensor({1, 0, 2, 3}).to(kInt);
  both_xy([](const Tensor& x, const Tensor& y) { return remainder(x, y); }, ints, with_zero,
          "integer division by zero");
  both_xy([](const Tensor& x, const Tensor& y) { return fmod(x, y); }, ints, with_zero,
          "integer division by zero");
  both_xy([](const Tensor& x, const Tensor& y) { return div(x, y, "floor"); }, ints, with_zero,
          "[div] integer division by zero");
  both_xy([](const Tensor& x, const Tensor& y) { return div(x, y, "round"); }, a, a,
          "rounding_mode must be None, 'trunc' or 'floor'");
  both_xy([](const Tensor& x, const Tensor&) { return pow(x, -2); }, ints, ints,
          "integers to negative integer powers are not allowed");
  both_xy([](const Tensor& x, const Tensor& y) { return where(x, y, y); }, a, a,
          "expected the condition to be a bool tensor");
  both_xy([](const Tensor& x, const Tensor&) { return clamp(x, std::nullopt, std::nullopt); }, a, a,
          "at least one of min and max must be given");
  both_xy([](const Tensor& x, const Tensor&) { return clamp(x, 0, 1); }, flags, flags,
          "not implemented for dtype Bool");
  both_xy([](const Tensor& x, const Tensor& y) { return lerp(x, y, 0.5); }, a, a.to(kDouble),
          "expected end of dtype Float");
  both_xy([](const Tensor& x, const Tensor& y) { return bitwise_and(x, y); }, a, a,
          "not implemented for dtype Float");
  both_xy([](const Tensor& x, const Tensor&) { return gelu(x, "fast"); }, a, a,
          "approximate must be 'none' or 'tanh'");
  both_xy([](const Tensor& x, const Tensor&) { return floor(x); }, flags, flags, "floor");
  EXPECT_THROW_MSG(ones({2}, TensorOptions().device(Device("xpu:0"))) +
                       ones({2}, TensorOptions().device(Device("xpu:1"))),
                   DeviceError, "expected all tensors on the same device");
}

// Ops that may have a CPU kernel and no XPU kernel, each with its reason (the issue's
// exceptions list). Empty: every op with a CPU kernel has an XPU kernel.
const std::set<std::string>& not_yet() {
  static const std::set<std::string> s = {};
  return s;
}

TEST(XpuRegistry, EveryOpWithACpuKernelHasAnXpuKernelOrIsListed) {
  std::vector<std::string> missing, stale;
  for (const std::string& full : Dispatcher::singleton().op_names()) {
    const std::string keys = Dispatcher::singleton().find(full).entry().registered_keys();
    auto has = [&](const std::string& k) {
      const std::string padded = ", " + keys + ",";
      return padded.find(", " + k + ",") != std::string::npos;
    };
    const std::string name = full.substr(full.find("::") + 2);
    if (!has("CPU")) continue;
    if (has("XPU") && not_yet().count(name)) stale.push_back(name);
    // A composite kernel covers the XPU too (nll_loss: a fused CPU kernel, the composite
    // elsewhere), running on the XPU's kernels.
    if (!has("XPU") && !has("CompositeImplicit") && !not_yet().count(name)) missing.push_back(name);
  }
  EXPECT_TRUE(missing.empty()) << "CPU kernel, no XPU kernel, not listed: "
                               << fmt::format("{}", fmt::join(missing, ", "));
  EXPECT_TRUE(stale.empty()) << "listed as missing but registered: "
                             << fmt::format("{}", fmt::join(stale, ", "));
}

}  // namespace
