#pragma once
// The ops that test_cpu_capability computes at every CPU capability level (Note [CPU capability]
// in core/cpu_backend.h), each in a child process (cpu_level_child.cpp) that XTEN_CPU_CAPABILITY
// puts at one level. Shared by the child, which computes, and the test, which compares: an
// `exact` case must agree bit for bit between levels (IEEE basic operations in the same order),
// the others within `rtol` (elementwise math: a few float32 ulp; reductions, GEMM and
// normalisations, whose summation order follows the vector width: float32 rounding of their
// sums, relative to the sum of the magnitudes of the terms, `scale`).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <xten/xten.h>

namespace xten::testing {

struct LevelCase {
  std::string name;
  bool exact;
  double rtol;  // |a - b| <= rtol * (|b| + scale) where not exact
  std::function<Tensor(const NamedTensorList&)> fn;
  // The magnitude the rounding is relative to (default: the result's own |b|).
  std::function<Tensor(const NamedTensorList&)> scale = nullptr;
};

inline const Tensor& input(const NamedTensorList& in, const std::string& name) {
  for (const auto& [n, t] : in)
    if (n == name) return t;
  throw std::runtime_error("no input " + name);
}

// The inputs (made once by the test, saved, and loaded by every child).
inline NamedTensorList level_inputs() {
  manual_seed(20261124);
  NamedTensorList in;
  in.emplace_back("a", rand({37, 129}) * 8 - 4);
  in.emplace_back("b", rand({37, 129}) * 8 - 4);
  in.emplace_back("pos", rand({37, 129}) * 4 + 0.125);
  in.emplace_back("row", rand({129}) * 2 - 1);
  in.emplace_back("i32", randint(-1000, 1000, {37, 129}, kInt));
  in.emplace_back("j32", randint(1, 1000, {37, 129}, kInt));
  in.emplace_back("a64", rand({37, 129}, kDouble) * 8 - 4);
  in.emplace_back("img", randn({2, 3, 17, 19}));
  in.emplace_back("w", randn({5, 3, 3, 3}));
  in.emplace_back("m", randn({70, 90}));
  in.emplace_back("n", randn({90, 50}));
  // Every float16 bit pattern (subnormals, infinities, NaNs): the F16C conversions of the avx2 and
  // avx512 loops against core/half.h's scalar ones.
  std::vector<float> halves;
  for (uint32_t b = 0; b < 65536; ++b)
    halves.push_back(detail::half_bits_to_float(static_cast<uint16_t>(b)));
  in.emplace_back("h16", tensor(halves).to(kHalf));
  // And every bfloat16 one (signalling NaNs come out quiet): the register path's even/odd widening
  // and its roundings (Note [16-bit runs in registers] in kernels/cpu/loops.h).
  std::vector<float> bfloats;
  for (uint32_t b = 0; b < 65536; ++b)
    bfloats.push_back(detail::bfloat16_bits_to_float(static_cast<uint16_t>(b)));
  in.emplace_back("b16", tensor(bfloats).to(kBFloat16));
  return in;
}

inline std::vector<LevelCase> level_cases() {
  using In = NamedTensorList;
  auto A = [](const In& in) { return input(in, "a"); };
  auto B = [](const In& in) { return input(in, "b"); };
  auto P = [](const In& in) { return input(in, "pos"); };
  // Elementwise math: 8 float32 ulp; sums and products: u * 2^3 of the terms' magnitudes.
  const double ew = 8 * 5.96e-8, red = 8 * 5.96e-8;
  std::vector<LevelCase> c = {
      {"add", true, 0, [=](const In& in) { return A(in) + B(in); }},
      {"add_alpha", true, 0, [=](const In& in) { return add(A(in), B(in), 0.3); }},
      {"sub", true, 0, [=](const In& in) { return A(in) - B(in); }},
      {"mul", true, 0, [=](const In& in) { return A(in) * B(in); }},
      {"div", true, 0, [=](const In& in) { return A(in) / P(in); }},
      {"maximum", true, 0, [=](const In& in) { return maximum(A(in), B(in)); }},
      {"neg_abs", true, 0, [=](const In& in) { return A(in).neg().abs(); }},
      {"relu", true, 0, [=](const In& in) { return relu(A(in)); }},
      {"sqrt", true, 0, [=](const In& in) { return P(in).sqrt(); }},
      {"rsqrt", true, 0, [=](const In& in) { return P(in).rsqrt(); }},
      {"reciprocal", true, 0, [=](const In& in) { return P(in).reciprocal(); }},
      {"floor_round", true, 0, [=](const In& in) { return A(in).floor() + (A(in) * 3).round(); }},
      {"clamp", true, 0, [=](const In& in) { return A(in).clamp(-1.5, 2.5); }},
      {"where_lt", true, 0, [=](const In& in) { return where(A(in) < B(in), A(in), B(in) * 2); }},
      {"transposed_add", true, 0, [=](const In& in) { return A(in).t() + B(in).t() * 2; }},
      {"broadcast_mul", true, 0, [=](const In& in) { return A(in) * input(in, "row"); }},
      {"int32_ops", true, 0,
       [](const In& in) {
         const Tensor i = input(in, "i32"), j = input(in, "j32");
         return i * j + div(i, j, std::string("floor")) - remainder(i, j);
       }},
      {"bf16_mul_add", true, 0,
       [=](const In& in) { return A(in).to(kBFloat16) * B(in).to(kBFloat16) + 1; }},
      {"f16_div", true, 0, [=](const In& in) { return A(in).to(kHalf) / P(in).to(kHalf); }},
      {"f16_every_value_relu", true, 0, [](const In& in) { return relu(input(in, "h16")); }},
      {"f16_every_value_mul", true, 0,
       [](const In& in) { return input(in, "h16") * input(in, "h16").flip({0}) * 0.75; }},
      {"bf16_every_value_square", true, 0, [](const In& in) { return pow(input(in, "b16"), 2); }},
      {"bf16_every_value_mul", true, 0,
       [](const In& in) { return input(in, "b16") * input(in, "b16").flip({0}); }},
      {"f64_mul_sub", true, 0, [](const In& in) { return input(in, "a64") * 3 - 1; }},
      {"amax", true, 0, [=](const In& in) { return A(in).amax({1}); }},
      {"int_sum", true, 0, [](const In& in) { return input(in, "i32").sum({0}); }},
      {"max_pool", true, 0,
       [](const In& in) {
         return max_pool2d(input(in, "img"), {3, 3}, {2, 2}, {1});
       }},
      {"sgd_step", true, 0,
       [=](const In& in) {
         Tensor p = A(in).clone(), buf = zeros_like(p);
         for (int k = 0; k < 3; ++k)
           _fused_sgd_({p}, {B(in)}, {buf}, 0.01, 0.9, 0.1, 0, true, false, k == 0);
         return p;
       }},
      {"adamw_step", true, 0,
       [=](const In& in) {
         Tensor p = A(in).clone(), m = zeros_like(p), v = zeros_like(p);
         for (int k = 1; k <= 3; ++k)
           _fused_adam_({p}, {B(in) * k}, {m}, {v}, {}, full({1}, double(k), kDouble), 0.01, 0.9,
                        0.999, 0.01, 1e-8, false, false, true);
         return p;
       }},
      {"exp", false, ew, [=](const In& in) { return A(in).exp(); }},
      {"log", false, ew, [=](const In& in) { return P(in).log(); }},
      {"tanh", false, ew, [=](const In& in) { return A(in).tanh(); }},
      {"sigmoid", false, ew, [=](const In& in) { return A(in).sigmoid(); }},
      {"gelu_tanh", false, ew, [=](const In& in) { return gelu(A(in), "tanh"); }},
      {"sin", false, ew, [=](const In& in) { return A(in).sin(); }},
      {"pow", false, ew, [=](const In& in) { return P(in).pow(1.7); }},
      {"bf16_exp", false, 1.0 / 128, [=](const In& in) { return (A(in) / 2).to(kBFloat16).exp(); }},
      {"softmax", false, red, [=](const In& in) { return softmax(A(in), 1); }},
      {"log_softmax", false, red, [=](const In& in) { return log_softmax(A(in), 1); },
       [=](const In& in) {
         return A(in).abs().amax({1}, true).expand({37, 129}) + 1;
       }},
      {"sum", false, red, [=](const In& in) { return A(in).sum({1}); },
       [=](const In& in) { return A(in).abs().sum({1}); }},
      {"mean_all", false, red, [=](const In& in) { return A(in).mean(); },
       [=](const In& in) { return A(in).abs().mean(); }},
      {"var", false, red, [=](const In& in) { return var(A(in), {1}); }},
      {"norm", false, red, [=](const In& in) { return norm(A(in), 2, {0}); }},
      {"logsumexp", false, red, [=](const In& in) { return logsumexp(A(in), {1}); }},
      {"cumsum", false, red, [=](const In& in) { return cumsum(A(in), 1); },
       [=](const In& in) { return cumsum(A(in).abs(), 1); }},
      {"avg_pool", false, red,
       [](const In& in) {
         return avg_pool2d(input(in, "img"), {3, 3}, {2, 2}, {1});
       }},
      {"mm_eigen", false, red,
       [](const In& in) {
         set_cpu_gemm(CpuGemm::Eigen);
         return mm(input(in, "m"), input(in, "n"));
       },
       [](const In& in) {
         set_cpu_gemm(CpuGemm::Eigen);
         return mm(input(in, "m").abs(), input(in, "n").abs());
       }},
      {"conv_eigen", false, red,
       [](const In& in) {
         set_cpu_gemm(CpuGemm::Eigen);
         return conv2d(input(in, "img"), input(in, "w"), std::nullopt, {1, 1}, {1, 1});
       },
       [](const In& in) {
         set_cpu_gemm(CpuGemm::Eigen);
         return conv2d(input(in, "img").abs(), input(in, "w").abs(), std::nullopt, {1, 1}, {1, 1});
       }},
      {"batch_norm", false, red,
       [](const In& in) {
         return batch_norm(input(in, "img"), std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                           true);
       },
       [](const In& in) { return input(in, "img").abs() * 2 + 1; }},
      {"layer_norm", false, red, [=](const In& in) { return layer_norm(A(in), {129}); },
       [=](const In& in) { return A(in).abs() + 1; }},
  };
  return c;
}

}  // namespace xten::testing
