// The runner of fused pointwise programs (fused.h), compiled once per CPU capability level. A
// block interpreter: the iteration space is cut into blocks of kFusedBlock elements, threads take
// blocks, and each instruction runs over a whole block with the eager kernels' functors and
// typed loops, so that the vector code is the eager code and no compiler is needed at run time
// (docs/compile.md, "CPU code").
#include <cstring>

#include <xten/core/parallel.h>
#include <xten/kernels/cpu/capability.h>
#include <xten/kernels/cpu/fused.h>
#include <xten/kernels/cpu/lane_sum.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

// 1,024 floats (4 KiB) per register: a program's registers stay in L1/L2 while it runs.
constexpr int64_t kFusedBlock = 1024;

template <class Op>
void unary_block(const Op& op, const float* a, float* d, int64_t m) {
  char* data[2] = {reinterpret_cast<char*>(d), reinterpret_cast<char*>(const_cast<float*>(a))};
  const int64_t strides[2] = {sizeof(float), sizeof(float)};
  make_loop<float, float>(op)(data, strides, m);
}

// The operations of binary.cpp's functors on float, element by element (no FMA contraction at
// any level: CMakeLists.txt's level flags), so their values are the eager kernels'.
void binary_block(const FusedInstr& in, const float* a, const float* b, float* d, int64_t m) {
  switch (in.op) {
    case FusedOpcode::Add:
      for (int64_t i = 0; i < m; ++i) d[i] = a[i] + b[i];
      return;
    case FusedOpcode::Sub:
      for (int64_t i = 0; i < m; ++i) d[i] = a[i] - b[i];
      return;
    case FusedOpcode::Mul:
      for (int64_t i = 0; i < m; ++i) d[i] = a[i] * b[i];
      return;
    case FusedOpcode::Div:
      for (int64_t i = 0; i < m; ++i) d[i] = a[i] / b[i];
      return;
    case FusedOpcode::AddAlpha: {
      const float s = in.s0;
      for (int64_t i = 0; i < m; ++i) d[i] = a[i] + s * b[i];
      return;
    }
    case FusedOpcode::Maximum:
      for (int64_t i = 0; i < m; ++i) {
        const float x = a[i], y = b[i];
        d[i] = x != x ? x : y != y ? y : x > y ? x : y;
      }
      return;
    case FusedOpcode::Minimum:
      for (int64_t i = 0; i < m; ++i) {
        const float x = a[i], y = b[i];
        d[i] = x != x ? x : y != y ? y : x < y ? x : y;
      }
      return;
    default:
      XTEN_ASSERT(false, "fused: {} is not a binary opcode", to_string(in.op));
  }
}

void clamp_block(float lo, float hi, const float* a, float* d, int64_t m) {
  const bool nan_bound = lo != lo || hi != hi;
  for (int64_t i = 0; i < m; ++i) {
    float y = a[i] < lo ? lo : a[i];
    y = y > hi ? hi : y;
    d[i] = nan_bound ? std::numeric_limits<float>::quiet_NaN() : y;
  }
}

void unary_dispatch(const FusedInstr& in, const float* a, float* d, int64_t m) {
  switch (in.op) {
    case FusedOpcode::Neg:
      return unary_block(NegOp{}, a, d, m);
    case FusedOpcode::Abs:
      return unary_block(AbsOp{}, a, d, m);
    case FusedOpcode::Exp:
      return unary_block(ExpOp{}, a, d, m);
    case FusedOpcode::Log:
      return unary_block(LogOp{}, a, d, m);
    case FusedOpcode::Log1p:
      return unary_block(Log1pOp{}, a, d, m);
    case FusedOpcode::Expm1:
      return unary_block(Expm1Op{}, a, d, m);
    case FusedOpcode::Sqrt:
      return unary_block(SqrtOp{}, a, d, m);
    case FusedOpcode::Rsqrt:
      return unary_block(RsqrtOp{}, a, d, m);
    case FusedOpcode::Reciprocal:
      return unary_block(ReciprocalOp{}, a, d, m);
    case FusedOpcode::Sin:
      return unary_block(SinOp{}, a, d, m);
    case FusedOpcode::Cos:
      return unary_block(CosOp{}, a, d, m);
    case FusedOpcode::Tanh:
      return unary_block(TanhOp{}, a, d, m);
    case FusedOpcode::Sigmoid:
      return unary_block(SigmoidOp{}, a, d, m);
    case FusedOpcode::Silu:
      return unary_block(SiluOp{}, a, d, m);
    case FusedOpcode::Relu:
      return unary_block(ReluOp{}, a, d, m);
    case FusedOpcode::Erf:
      return unary_block(ErfOp{}, a, d, m);
    case FusedOpcode::GeluErf:
      return unary_block(GeluErfOp{}, a, d, m);
    case FusedOpcode::GeluTanh:
      return unary_block(GeluTanhOp{}, a, d, m);
    case FusedOpcode::Clamp:
      return clamp_block(in.s0, in.s1, a, d, m);
    default:
      XTEN_ASSERT(false, "fused: {} is not a unary opcode", to_string(in.op));
  }
}

// How a block of input k is read: in place (contiguous in the iteration space), one value
// (every stride 0), periodic (a contiguous tensor broadcast over leading dims, as a bias row:
// element i is base[i % period], read in place where a block does not wrap), or gathered by
// walking its strides.
struct InputGeometry {
  enum Kind { InPlace, Scalar, Periodic, Gather } kind;
  const float* base;
  std::vector<int64_t> strides;  // elements, one per dim of the iteration space
  int64_t period = 0;            // Periodic
};

InputGeometry input_geometry(const Tensor& t, IntArrayRef shape) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  const int64_t td = t.dim();
  std::vector<int64_t> st(static_cast<size_t>(nd), 0);
  for (int64_t d = 0; d < td; ++d) {
    const int64_t od = nd - td + d;  // broadcasting aligns trailing dims
    st[od] = t.size(d) == 1 ? 0 : t.stride(d);
  }
  bool scalar = true, contiguous = true, in_suffix = true, periodic = true;
  int64_t expect = 1, period = 1;
  for (int64_t d = nd - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    scalar = scalar && st[d] == 0;
    contiguous = contiguous && st[d] == expect;
    if (in_suffix && st[d] == period) {
      period *= shape[d];
    } else {
      in_suffix = false;
      periodic = periodic && st[d] == 0;
    }
    expect *= shape[d];
  }
  const float* base = static_cast<const float*>(t.data_ptr());
  if (scalar) return {InputGeometry::Scalar, base, std::move(st)};
  if (contiguous) return {InputGeometry::InPlace, base, std::move(st)};
  if (periodic) return {InputGeometry::Periodic, base, std::move(st), period};
  return {InputGeometry::Gather, base, std::move(st)};
}

// Copies elements [start, start + m) of the iteration space of a strided input into `dst`.
void gather(const InputGeometry& g, IntArrayRef shape, int64_t start, int64_t m, float* dst) {
  const int64_t nd = static_cast<int64_t>(shape.size());
  int64_t idx[16];
  int64_t rem = start, off = 0;
  for (int64_t d = nd - 1; d >= 0; --d) {
    idx[d] = rem % shape[d];
    rem /= shape[d];
    off += idx[d] * g.strides[d];
  }
  const int64_t inner = shape[nd - 1], inner_stride = g.strides[nd - 1];
  int64_t i = 0;
  while (i < m) {
    const int64_t run = std::min(inner - idx[nd - 1], m - i);
    const float* p = g.base + off;
    if (inner_stride == 1) {
      std::memcpy(dst + i, p, static_cast<size_t>(run) * sizeof(float));
    } else if (inner_stride == 0) {
      std::fill_n(dst + i, run, *p);
    } else {
      for (int64_t j = 0; j < run; ++j) dst[i + j] = p[j * inner_stride];
    }
    i += run;
    off += run * inner_stride;
    idx[nd - 1] += run;
    // carry into the outer dims
    for (int64_t d = nd - 1; d > 0 && idx[d] == shape[d]; --d) {
      off -= idx[d] * g.strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += g.strides[d - 1];
    }
  }
}

// One thread's registers: 64-byte aligned, as the eager kernels' outputs are. Eigen peels
// unaligned heads with the scalar form, so alignment decides which lanes take the vector form,
// and the fused values would differ from eager ones (Note [Aligned blocks] in loops.h).
struct Registers {
  explicit Registers(const FusedProgram& p)
      : storage(static_cast<size_t>(p.num_registers) * kFusedBlock + 16),
        src(static_cast<size_t>(p.num_registers)) {
    base = storage.data();
    while (reinterpret_cast<uintptr_t>(base) % 64 != 0) ++base;
  }
  float* reg(int r) { return base + r * kFusedBlock; }
  std::vector<float> storage;
  float* base;
  std::vector<const float*> src;  // where each register's block is (in place or in reg())
};

// Runs the program over elements [start, start + m) of the iteration space (m <= kFusedBlock)
// and stores its outputs there.
void run_block(const FusedProgram& p, const std::vector<InputGeometry>& geo, IntArrayRef space,
               const std::vector<float*>& out, int64_t start, int64_t m, Registers& r) {
  for (int k = 0; k < p.num_inputs; ++k) {
    const InputGeometry& g = geo[static_cast<size_t>(k)];
    if (g.kind == InputGeometry::InPlace) {
      r.src[k] = g.base + start;
    } else if (g.kind == InputGeometry::Periodic && start % g.period + m <= g.period) {
      r.src[k] = g.base + start % g.period;
    } else if (g.kind == InputGeometry::Scalar) {
      std::fill_n(r.reg(k), m, *g.base);
      r.src[k] = r.reg(k);
    } else {
      gather(g, space, start, m, r.reg(k));
      r.src[k] = r.reg(k);
    }
  }
  for (const FusedInstr& in : p.code) {
    float* d = r.reg(in.dst);
    if (is_binary(in.op))
      binary_block(in, r.src[in.a], r.src[in.b], d, m);
    else
      unary_dispatch(in, r.src[in.a], d, m);
    r.src[in.dst] = d;
  }
  for (size_t o = 0; o < out.size(); ++o)
    std::memcpy(out[o] + start, r.src[p.outputs[o]], static_cast<size_t>(m) * sizeof(float));
}

// Asks for the lines of row [start, start + d) of the inputs read in place and of the output
// (unless null) while the current row computes: the row's program is compute-bound (exp, division)
// and its store memory-bound, and a row of 4 KiB is too short for the hardware prefetcher to run
// ahead.
void prefetch_row(const std::vector<InputGeometry>& geo, float* y, int64_t start, int64_t d) {
  constexpr int64_t kLine = 64 / sizeof(float);
  for (const InputGeometry& g : geo)
    if (g.kind == InputGeometry::InPlace)
      for (int64_t i = 0; i < d; i += kLine) __builtin_prefetch(g.base + start + i, 0);
  if (y)
    for (int64_t i = 0; i < d; i += kLine) __builtin_prefetch(y + start + i, 1);
}

// The row epilogue: each row of the last dim is computed into a row buffer (the program's
// other outputs stored on the way), then normalized as layer_norm does:
// (x - mean) / sqrt(var + eps) * weight + bias, mean and biased variance over the row.
void run_rows(const FusedProgram& p, const std::vector<InputGeometry>& geo, IntArrayRef space,
              const std::vector<float*>& out, const RowNorm& norm) {
  const int64_t d = space.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < space.size(); ++i) rows *= space[i];
  const int64_t numel = rows * d;
  const float* w =
      norm.weight.defined() ? static_cast<const float*>(norm.weight.data_ptr()) : nullptr;
  const float* b = norm.bias.defined() ? static_cast<const float*>(norm.bias.data_ptr()) : nullptr;
  float* y = static_cast<float*>(norm.out.data_ptr());
  const bool one_per_row = norm.op == RowOp::Sum || norm.op == RowOp::Mean;
  const int64_t cost = (static_cast<int64_t>(p.code.size()) + 4) * d;
  parallel_for(rows, grain_for(cost), [&](int64_t r0, int64_t r1) {
    Registers regs(p);
    // Note [Row buffers]: Eigen's reductions and maps start at the first aligned element, so
    // what they compute depends on where a row starts modulo 64 bytes. The row buffer puts row
    // r where the eager kernel's input row r would be (a 64-byte-aligned tensor, r * d floats
    // in), so that softmax and log_softmax here equal the eager kernel bit for bit.
    constexpr int64_t kLanes = 64 / sizeof(float);
    std::vector<float> raw(static_cast<size_t>(d + 2 * kLanes));
    float* const aligned =
        raw.data() +
        (kLanes - reinterpret_cast<uintptr_t>(raw.data()) % 64 / sizeof(float)) % kLanes;
    static const std::vector<float*> no_stores;
    for (int64_t r = r0; r < r1; ++r) {
      if (r + 1 < r1) prefetch_row(geo, one_per_row ? nullptr : y, (r + 1) * d, d);
      float* const row = aligned + (r * d) % kLanes;
      // The program runs over a window of whole 64-byte lines around the row, so that each
      // element takes the vector or scalar form of a function as in the eager kernels, which run
      // over the whole tensor (Note [Aligned blocks] in loops.h); the row's part is kept.
      const int64_t begin = r * d, end = begin + d;
      const int64_t lo = begin / kLanes * kLanes,
                    hi = std::min(numel, (end + kLanes - 1) / kLanes * kLanes);
      const bool whole = lo == begin && hi == end && d <= kFusedBlock;
      for (int64_t c = lo; c < hi; c += kFusedBlock) {
        const int64_t m = std::min(kFusedBlock, hi - c);
        run_block(p, geo, space, no_stores, c, m, regs);
        const int64_t from = std::max(c, begin), to = std::min(c + m, end);
        if (from >= to) continue;
        const size_t bytes = static_cast<size_t>(to - from) * sizeof(float);
        if (!whole)
          std::memcpy(row + (from - begin), regs.src[norm.input_register] + (from - c), bytes);
        for (size_t o = 0; o < out.size(); ++o)
          std::memcpy(out[o] + from, regs.src[p.outputs[o]] + (from - c), bytes);
      }
      // One block that is the row itself (a row of whole 64-byte lines, as the chain's 1,024):
      // its register is the row buffer, placed as the copy would be.
      const float* xs = whole ? regs.src[norm.input_register] : row;
      if (one_per_row) {  // as reduce.cpp's sum_impl
        const float sum = LaneSum<float>::sum(xs, d);
        y[r] = norm.op == RowOp::Sum ? sum : sum / static_cast<float>(d);
        continue;
      }
      const ECMap<float> x(xs, d);
      EMap<float> yr(y + r * d, d);
      if (norm.op == RowOp::Softmax) {  // as kernels/cpu/activation.cpp's softmax_impl
        softmax_into(x, yr);
        continue;
      }
      if (norm.op == RowOp::LogSoftmax) {
        log_softmax_into(x, yr);
        continue;
      }
      // Eigen's vectorized sums (several accumulators): a scalar loop's float or double sum is
      // one dependent add per element, 10 ms on 4M floats.
      const float mean = x.sum() / static_cast<float>(d);
      const float var = (x - mean).square().sum() / static_cast<float>(d);
      const float rstd = 1.0f / std::sqrt(var + static_cast<float>(norm.eps));
      if (w && b)
        yr = (x - mean) * rstd * ECMap<float>(w, d) + ECMap<float>(b, d);
      else if (w)
        yr = (x - mean) * rstd * ECMap<float>(w, d);
      else if (b)
        yr = (x - mean) * rstd + ECMap<float>(b, d);
      else
        yr = (x - mean) * rstd;
    }
  });
}

void run_fused_level(const FusedProgram& p, IntArrayRef shape, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs, const RowNorm* norm) {
  XTEN_ASSERT(static_cast<int>(inputs.size()) == p.num_inputs,
              "fused: {} inputs for a program of {}", inputs.size(), p.num_inputs);
  XTEN_ASSERT(shape.size() <= 16, "fused: {} dims", shape.size());
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  if (numel == 0) return;
  std::vector<int64_t> one{1};
  const IntArrayRef space = shape.empty() ? IntArrayRef(one) : shape;
  std::vector<InputGeometry> geo;
  geo.reserve(inputs.size());
  for (const Tensor& t : inputs) geo.push_back(input_geometry(t, space));
  std::vector<float*> out(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) out[o] = static_cast<float*>(outputs[o].data_ptr());
  if (norm) return run_rows(p, geo, space, out, *norm);
  const int64_t blocks = (numel + kFusedBlock - 1) / kFusedBlock;
  const int64_t cost = static_cast<int64_t>(p.code.size()) + 1;
  parallel_for(blocks, std::max<int64_t>(1, grain_for(cost * kFusedBlock) / kFusedBlock),
               [&](int64_t b0, int64_t b1) {
                 Registers regs(p);
                 for (int64_t b = b0; b < b1; ++b) {
                   const int64_t start = b * kFusedBlock;
                   run_block(p, geo, space, out, start, std::min(kFusedBlock, numel - start), regs);
                 }
               });
}

}  // namespace

XTEN_CPU_KERNELS(fused, m) {
  (void)m;
  detail::set_fused_runner(&run_fused_level);
}

}  // namespace xten::cpu
