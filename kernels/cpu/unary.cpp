// Unary pointwise ops on CPU. Float-valued ops (exp, sin, ...) compute integer and bool
// inputs in float32, as PyTorch does; rounding ops return integer inputs unchanged.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/lane_op.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

// Runs `op` over self into `out` (undefined: new). The compute dtype: self's, or float32 for
// integral/bool inputs when `to_float`. `Set`: the compute dtypes the op supports.
template <uint32_t Set, bool kBoolResult = false, class Op>
Tensor unary(const char* name, const Tensor& out, const Tensor& self, const Op& op,
             bool to_float = false) {
  Elementwise e(name, out, {self});
  e.compute_dtype(to_float && !is_floating_type(self.dtype()) ? kFloat : self.dtype());
  if (kBoolResult) e.result_dtype(kBool);
  e.prepare();
  return visit_dtype<Set>(name, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = std::conditional_t<kBoolResult, bool, T>;
    return e.run(make_loop<R, T>(op));
  });
}

// Same dtype in and out, over the dtype set `Set`.
#define XTEN_SAME_DTYPE_UNARY(name, Set, Op)     \
  Tensor name##_kernel(const Tensor& s) {        \
    return unary<Set>(#name, Tensor(), s, Op{}); \
  }                                              \
  Tensor name##__kernel(const Tensor& s) {       \
    return unary<Set>(#name "_", s, s, Op{});    \
  }
XTEN_SAME_DTYPE_UNARY(sign, unary_dtypes::kSign, SignOp)
XTEN_SAME_DTYPE_UNARY(relu, unary_dtypes::kRelu, ReluOp)
XTEN_SAME_DTYPE_UNARY(bitwise_not, unary_dtypes::kBitwiseNot, BitNotOp)
#undef XTEN_SAME_DTYPE_UNARY

// Runs run(out_words, in_words, n) over the 16-bit words of s into out (undefined: new, of s's
// dtype): n consecutive words where both are contiguous, else one word at a time.
template <class Run>
Tensor word_unary(const char* name, const Tensor& out, const Tensor& s, const Run& run) {
  Elementwise e(name, out, {s});
  e.prepare();
  return e.run([&run](char** data, const int64_t* st, int64_t n) {
    if (st[0] == 2 && st[1] == 2) {
      run(reinterpret_cast<uint16_t*>(data[0]), reinterpret_cast<const uint16_t*>(data[1]), n);
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      run(reinterpret_cast<uint16_t*>(data[0] + i * st[0]),
          reinterpret_cast<const uint16_t*>(data[1] + i * st[1]), 1);
  });
}

// abs and neg of float16 and bfloat16 only change the sign bit: a loop over the 16-bit words,
// (w & keep) ^ flip, with no conversion to float and back (which made bfloat16 abs and neg 0.4x
// libtorch's at 16 threads). NaN stays NaN, -0.0 becomes +0.0 under abs, as the float path does.
Tensor sign_bit_unary(const char* name, const Tensor& out, const Tensor& s, uint16_t keep,
                      uint16_t flip) {
  return word_unary(name, out, s, [keep, flip](uint16_t* o, const uint16_t* in, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint16_t>((in[i] & keep) ^ flip);
  });
}
bool is_16bit_float(ScalarType t) {
  return t == kHalf || t == kBFloat16;
}

// Note [16-bit unary ops by table]
// A float16 or bfloat16 element is one of 65,536 bit patterns, so a unary op from such a dtype to
// itself is a table of 65,536 results. The float ops below (exp ... erf, silu, gelu) look up the
// results of a large input (kTableMinElements or more) in such a table: 128 KiB, filled on first
// use for each op and dtype by running the op's own kernel (this level's vector form) over every
// bit pattern, so each result is bit for bit what the kernel computes, NaN payloads included (and
// the same wherever the element sits: a tail no longer takes the scalar form). A lookup costs a
// load, or a lane of a gather where cpu_gather() (look_up), against the 30-50 vector operations of
// a packet of erf or gelu and the widening and rounding around them. On the 16-core host, one
// thread, bfloat16 [2048, 2048], ratio to libtorch: gelu 0.67-0.70 -> 1.64-1.83, erf 0.89-0.92
// -> 3.0-3.4, rsqrt 0.82-0.83 -> 1.65-2.5 (bench/README.md, "bench_sweep"). Not for sqrt and
// reciprocal: one correctly rounded instruction each, which the lookup does not beat (reciprocal
// fell to 0.79-0.93). Inputs below the threshold compute: there a table out of cache costs more
// than the arithmetic. The table is filled on one thread (about 65,536 elements' work, once), so
// that a first call from several threads at once waits on one fill, not on an OpenMP team inside a
// static initializer.
constexpr int64_t kTableMinElements = 1 << 14;

// out[i] = table[in[i]]; table has 65,537 entries (a gather reads 32 bits at each index). With
// vector gathers where `gather` (cpu_gather(), core/cpu_backend.h, read by the caller once per
// op, not per chunk): 16 lanes at avx512, two gathers of 8 packed into one 32-byte store at avx2
// (one VM thread, [2048, 2048] bfloat16 exp: 1.0-1.1 ms without, 0.65 gathered, at either
// level); else, and at the default level, four a step.
void look_up(const uint16_t* table, uint16_t* out, const uint16_t* in, int64_t n,
             [[maybe_unused]] bool gather) {
  int64_t i = 0;
#if defined(__AVX512F__)
  if (gather) {
    for (; i + 16 <= n; i += 16) {
      const __m512i index =
          _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
      const __m512i words = _mm512_i32gather_epi32(index, table, 2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(words));
    }
  }
#elif defined(__AVX2__)
  if (gather) {
    const int* words = reinterpret_cast<const int*>(table);
    const __m256i low16 = _mm256_set1_epi32(0xffff);
    for (; i + 16 <= n; i += 16) {
      const __m256i a = _mm256_i32gather_epi32(
          words, _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))),
          2);
      const __m256i b = _mm256_i32gather_epi32(
          words,
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 8))), 2);
      // Each lane's low 16 bits are the result; vpackusdw pairs the 128-bit halves, vpermq
      // orders them.
      const __m256i packed =
          _mm256_packus_epi32(_mm256_and_si256(a, low16), _mm256_and_si256(b, low16));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_permute4x64_epi64(packed, 0xd8));
    }
  }
#endif
  // Four at a time: one 8-byte load of indices and one 8-byte store of results (a load and a
  // store an element took 1.17-1.72 ms over [2048, 2048] on the VM depending on where the
  // output lay against the input, this 1.00 wherever).
  for (; i + 4 <= n; i += 4) {
    uint64_t w;
    std::memcpy(&w, in + i, sizeof w);
    const uint64_t r = uint64_t{table[w & 0xffff]} | uint64_t{table[(w >> 16) & 0xffff]} << 16 |
                       uint64_t{table[(w >> 32) & 0xffff]} << 32 | uint64_t{table[w >> 48]} << 48;
    std::memcpy(out + i, &r, sizeof r);
  }
  for (; i < n; ++i) out[i] = table[in[i]];
}

// op's results for every bit pattern of T (Half or BFloat16), computed once.
template <uint32_t Set, class T, class Op>
const uint16_t* table_of(const char* name, const Op& op, bool to_float) {
  static const std::vector<uint16_t> table = [&] {
    ThreadLimitGuard one_thread(1);
    const Tensor every = empty_tensor({65536}, scalar_type_of_v<T>, Device(kCPU));
    uint16_t* w = static_cast<uint16_t*>(every.data_ptr());
    for (int b = 0; b < 65536; ++b) w[b] = static_cast<uint16_t>(b);
    const Tensor r = unary<Set>(name, Tensor(), every, op, to_float);
    std::vector<uint16_t> t(65537, 0);
    std::memcpy(t.data(), r.data_ptr(), 65536 * sizeof(uint16_t));
    return t;
  }();
  return table.data();
}

// unary(), through the table of Note [16-bit unary ops by table] where it applies.
template <uint32_t Set, class Op>
Tensor unary_or_table(const char* name, const Tensor& out, const Tensor& s, const Op& op,
                      bool to_float = false) {
  if (!is_16bit_float(s.dtype()) || s.numel() < kTableMinElements ||
      (out.defined() && out.dtype() != s.dtype()))
    return unary<Set>(name, out, s, op, to_float);
  const uint16_t* table = s.dtype() == kHalf ? table_of<Set, Half>(name, op, to_float)
                                             : table_of<Set, BFloat16>(name, op, to_float);
  const bool gather = cpu_gather();
  return word_unary(name, out, s, [table, gather](uint16_t* o, const uint16_t* in, int64_t n) {
    look_up(table, o, in, n, gather);
  });
}

// Kernels: `name` for the functional form, `name_` writing into self; `run` is unary_or_table, or
// unary for sqrt and reciprocal (Note [16-bit unary ops by table]).
#define XTEN_FLOAT_UNARY(name, Op, run)                                         \
  Tensor name##_kernel(const Tensor& s) {                                       \
    return run<dtypes::kFloating>(#name, Tensor(), s, Op{}, /*to_float=*/true); \
  }                                                                             \
  Tensor name##__kernel(const Tensor& s) {                                      \
    return run<dtypes::kFloating>(#name "_", s, s, Op{}, /*to_float=*/true);    \
  }
XTEN_FLOAT_UNARY(exp, ExpOp, unary_or_table)
XTEN_FLOAT_UNARY(exp2, Exp2Op, unary_or_table)
XTEN_FLOAT_UNARY(log, LogOp, unary_or_table)
XTEN_FLOAT_UNARY(log2, Log2Op, unary_or_table)
XTEN_FLOAT_UNARY(log10, Log10Op, unary_or_table)
XTEN_FLOAT_UNARY(log1p, Log1pOp, unary_or_table)
XTEN_FLOAT_UNARY(expm1, Expm1Op, unary_or_table)
XTEN_FLOAT_UNARY(sqrt, SqrtOp, unary)
XTEN_FLOAT_UNARY(rsqrt, RsqrtOp, unary_or_table)
XTEN_FLOAT_UNARY(reciprocal, ReciprocalOp, unary)
XTEN_FLOAT_UNARY(sin, SinOp, unary_or_table)
XTEN_FLOAT_UNARY(cos, CosOp, unary_or_table)
XTEN_FLOAT_UNARY(tan, TanOp, unary_or_table)
XTEN_FLOAT_UNARY(tanh, TanhOp, unary_or_table)
XTEN_FLOAT_UNARY(sigmoid, SigmoidOp, unary_or_table)
XTEN_FLOAT_UNARY(erf, ErfOp, unary_or_table)
#undef XTEN_FLOAT_UNARY

Tensor silu_kernel(const Tensor& s) {
  return unary_or_table<unary_dtypes::kSilu>("silu", Tensor(), s, SiluOp{});
}
Tensor silu__kernel(const Tensor& s) {
  return unary_or_table<unary_dtypes::kSilu>("silu_", s, s, SiluOp{});
}

Tensor abs_impl(const char* name, const Tensor& out, const Tensor& s) {
  if (is_16bit_float(s.dtype()) && (!out.defined() || out.dtype() == s.dtype()))
    return sign_bit_unary(name, out, s, 0x7fff, 0);
  return unary<unary_dtypes::kAbs>(name, out, s, AbsOp{});
}
Tensor abs_kernel(const Tensor& s) {
  return abs_impl("abs", Tensor(), s);
}
Tensor abs__kernel(const Tensor& s) {
  return abs_impl("abs_", s, s);
}

Tensor neg_impl(const char* name, const Tensor& out, const Tensor& s) {
  check_neg(name, s.dtype());
  if (is_16bit_float(s.dtype()) && (!out.defined() || out.dtype() == s.dtype()))
    return sign_bit_unary(name, out, s, 0xffff, 0x8000);
  return unary<unary_dtypes::kNeg>(name, out, s, NegOp{});
}
Tensor neg_kernel(const Tensor& s) {
  return neg_impl("neg", Tensor(), s);
}
Tensor neg__kernel(const Tensor& s) {
  return neg_impl("neg_", s, s);
}

// Rounding: floating dtypes round; integer dtypes are already integral (a copy).
template <class Op>
Tensor round_impl(const char* name, const Tensor& out, const Tensor& s) {
  if (is_integral_type(s.dtype(), false))
    return unary<dtypes::kIntegral>(name, out, s, IdentityOp{});
  return unary<unary_dtypes::kRounding>(name, out, s, Op{});
}
#define XTEN_ROUNDING_UNARY(name, Op)          \
  Tensor name##_kernel(const Tensor& s) {      \
    return round_impl<Op>(#name, Tensor(), s); \
  }                                            \
  Tensor name##__kernel(const Tensor& s) {     \
    return round_impl<Op>(#name "_", s, s);    \
  }
XTEN_ROUNDING_UNARY(floor, FloorOp)
XTEN_ROUNDING_UNARY(ceil, CeilOp)
XTEN_ROUNDING_UNARY(round, RoundOp)
XTEN_ROUNDING_UNARY(trunc, TruncOp)
#undef XTEN_ROUNDING_UNARY

Tensor logical_not_kernel(const Tensor& s) {
  return unary<unary_dtypes::kPredicate, true>("logical_not", Tensor(), s, LogicalNotOp{});
}
Tensor logical_not__kernel(const Tensor& s) {
  return unary<unary_dtypes::kPredicate, true>("logical_not_", s, s, LogicalNotOp{});
}
Tensor isnan_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isnan", Tensor(), s, IsNanOp{});
}
Tensor isinf_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isinf", Tensor(), s, IsInfOp{});
}
Tensor isfinite_kernel(const Tensor& s) {
  return unary<dtypes::kAll, true>("isfinite", Tensor(), s, IsFiniteOp{});
}

Tensor gelu_kernel(const Tensor& s, const std::string& approximate) {
  check_gelu_approximate(approximate);
  if (approximate == "tanh")
    return unary_or_table<unary_dtypes::kGelu>("gelu", Tensor(), s, GeluTanhOp{});
  return unary_or_table<unary_dtypes::kGelu>("gelu", Tensor(), s, GeluErfOp{});
}

// An activation's backward in one pass over grad_output and x (its input or output), computed
// in opmath: gelu's formula written with ops took nine passes (an erf and an exp among them),
// sigmoid's and tanh's three, silu's six. The vector forms are unary_functors.h's.
template <class Op>
Tensor activation_backward(const char* op, const Tensor& grad, const Tensor& x, const Op& f) {
  Elementwise e(op, Tensor(), {grad, x});
  e.compute_dtype(grad.dtype());
  e.prepare();
  return visit_dtype<unary_dtypes::kGelu>(op, e.compute(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return e.run(make_loop<T, T, T>(f));
  });
}

Tensor gelu_backward_kernel(const Tensor& grad, const Tensor& self,
                            const std::string& approximate) {
  check_gelu_backward(grad, self, approximate);
  if (approximate == "tanh")
    return activation_backward("gelu_backward", grad, self, GeluTanhBackwardOp{});
  return activation_backward("gelu_backward", grad, self, GeluErfBackwardOp{});
}
Tensor sigmoid_backward_kernel(const Tensor& grad, const Tensor& output) {
  check_pointwise_backward("sigmoid_backward", grad, output, "output");
  return activation_backward("sigmoid_backward", grad, output, SigmoidBackwardOp{});
}
Tensor tanh_backward_kernel(const Tensor& grad, const Tensor& output) {
  check_pointwise_backward("tanh_backward", grad, output, "output");
  return activation_backward("tanh_backward", grad, output, TanhBackwardOp{});
}
Tensor silu_backward_kernel(const Tensor& grad, const Tensor& self) {
  check_pointwise_backward("silu_backward", grad, self);
  return activation_backward("silu_backward", grad, self, SiluBackwardOp{});
}

// nan_to_num's lane function: the three replacements selected per lane (one element at a time
// it ran at 0.2-0.3x libtorch's speed).
template <class M>
struct VecNanToNum {
  M nan, posinf, neginf;
  M operator()(const M& x) const {
    return x != x                                     ? nan
           : x == std::numeric_limits<M>::infinity()  ? posinf
           : x == -std::numeric_limits<M>::infinity() ? neginf
                                                      : x;
  }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P inf = pset1<P>(std::numeric_limits<M>::infinity());
    P r = pselect(pcmp_eq(x, inf), pset1<P>(posinf), x);
    r = pselect(pcmp_eq(x, pnegate(inf)), pset1<P>(neginf), r);
    return pselect(pcmp_eq(x, x), r, pset1<P>(nan));
  }
};
}  // namespace
}  // namespace xten::cpu

template <class M>
struct Eigen::internal::functor_traits<xten::cpu::VecNanToNum<M>> {
  enum { Cost = 4, PacketAccess = std::is_floating_point_v<M> };
};

namespace xten::cpu {
namespace {
Tensor nan_to_num_kernel(const Tensor& s, std::optional<double> nan, std::optional<double> posinf,
                         std::optional<double> neginf) {
  if (!is_floating_type(s.dtype()))
    return unary<dtypes::kAll>("nan_to_num", Tensor(), s, IdentityOp{});
  return visit_dtype<dtypes::kFloating>("nan_to_num", s.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    // Defaults: the largest and lowest finite values of the tensor's dtype, not of M.
    const double max = finite_max(s.dtype());
    const LaneOp<VecNanToNum<M>> op{{static_cast<M>(nan.value_or(0.0)),
                                     static_cast<M>(posinf.value_or(max)),
                                     static_cast<M>(neginf.value_or(-max))}};
    Elementwise e("nan_to_num", Tensor(), {s});
    e.prepare();
    return e.run(make_loop<T, T>(op));
  });
}

}  // namespace

XTEN_CPU_KERNELS(unary, m) {
  m.impl("neg", neg_kernel);
  m.impl("neg_", neg__kernel);
  m.impl("abs", abs_kernel);
  m.impl("abs_", abs__kernel);
  m.impl("sign", sign_kernel);
  m.impl("sign_", sign__kernel);
  m.impl("exp", exp_kernel);
  m.impl("exp_", exp__kernel);
  m.impl("exp2", exp2_kernel);
  m.impl("exp2_", exp2__kernel);
  m.impl("log", log_kernel);
  m.impl("log_", log__kernel);
  m.impl("log2", log2_kernel);
  m.impl("log2_", log2__kernel);
  m.impl("log10", log10_kernel);
  m.impl("log10_", log10__kernel);
  m.impl("log1p", log1p_kernel);
  m.impl("log1p_", log1p__kernel);
  m.impl("expm1", expm1_kernel);
  m.impl("expm1_", expm1__kernel);
  m.impl("sqrt", sqrt_kernel);
  m.impl("sqrt_", sqrt__kernel);
  m.impl("rsqrt", rsqrt_kernel);
  m.impl("rsqrt_", rsqrt__kernel);
  m.impl("reciprocal", reciprocal_kernel);
  m.impl("reciprocal_", reciprocal__kernel);
  m.impl("sin", sin_kernel);
  m.impl("sin_", sin__kernel);
  m.impl("cos", cos_kernel);
  m.impl("cos_", cos__kernel);
  m.impl("tan", tan_kernel);
  m.impl("tan_", tan__kernel);
  m.impl("tanh", tanh_kernel);
  m.impl("tanh_", tanh__kernel);
  m.impl("sigmoid", sigmoid_kernel);
  m.impl("sigmoid_", sigmoid__kernel);
  m.impl("relu", relu_kernel);
  m.impl("relu_", relu__kernel);
  m.impl("silu", silu_kernel);
  m.impl("silu_", silu__kernel);
  m.impl("erf", erf_kernel);
  m.impl("erf_", erf__kernel);
  m.impl("floor", floor_kernel);
  m.impl("floor_", floor__kernel);
  m.impl("ceil", ceil_kernel);
  m.impl("ceil_", ceil__kernel);
  m.impl("round", round_kernel);
  m.impl("round_", round__kernel);
  m.impl("trunc", trunc_kernel);
  m.impl("trunc_", trunc__kernel);
  m.impl("logical_not", logical_not_kernel);
  m.impl("logical_not_", logical_not__kernel);
  m.impl("bitwise_not", bitwise_not_kernel);
  m.impl("bitwise_not_", bitwise_not__kernel);
  m.impl("isnan", isnan_kernel);
  m.impl("isinf", isinf_kernel);
  m.impl("isfinite", isfinite_kernel);
  m.impl("gelu", gelu_kernel);
  m.impl("gelu_backward", gelu_backward_kernel);
  m.impl("sigmoid_backward", sigmoid_backward_kernel);
  m.impl("tanh_backward", tanh_backward_kernel);
  m.impl("silu_backward", silu_backward_kernel);
  m.impl("nan_to_num", nan_to_num_kernel);
}

}  // namespace xten::cpu
