// Flash attention on CPU, forward and backward (docs/attention.md, "The CPU kernel"): the
// L x S scores are never held whole. The forward gives each task a tile of queries of one
// (batch, head) and walks the keys in tiles: scores of the tile by one GEMM, then the online
// softmax (a running maximum m and sum l per query row; when the maximum grows the row's
// accumulator is rescaled by exp(m_old - m_new)), the output accumulated by a second GEMM and
// divided by l at the end, logsumexp = m + log(l) kept for the backward. The backward gives
// each task one (batch, key/value head), so the key and value gradients of that head have one
// writer (the query heads of a group run one after the other), and recomputes each tile's
// probabilities from logsumexp. The tile products are oneDNN's (Note [Tile products in
// attention]), or Eigen's on tiles widened to float where oneDNN has no fast product.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>

#include <xten/kernels/common/attention.h>
#include <xten/kernels/cpu/onednn.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

// Note [Tile products run alone]
// Outside an OpenMP region (one thread, or tasks run inline) Eigen would split each tile's
// product over its own OpenMP team of omp_get_max_threads() threads: on a 16-core host that
// made the one-thread forward + backward 3x slower (the team's start and barriers per small
// product). The threads here are the tasks'; each product runs on its task's thread.
// (linalg.cpp and conv.cpp set Eigen's count before their own products.)

// Tile sizes: a tile of queries against a tile of keys, both GEMMs large enough for Eigen's
// kernels, the score tile (128 x 256 floats, 128 KiB) within L2. Measured on the 2-core VM at
// one thread, length 1,024: 64 x 256 took 76 + 127 ms forward + backward, 128 x 256 54 + 106,
// 256 x 512 75 + 145 (bench/README.md, "bench_gpt").
constexpr int64_t kQueryTile = 128;
constexpr int64_t kKeyTile = 256;

template <class A>
using RowMat = Eigen::Matrix<A, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class A>
using Tile = Eigen::Map<RowMat<A>, 0, Eigen::OuterStride<>>;
template <class A>
using CTile = Eigen::Map<const RowMat<A>, 0, Eigen::OuterStride<>>;

// One operand [B, H, rows, cols] by element strides.
template <class T>
struct Operand {
  const T* p;
  int64_t s[4];
  explicit Operand(const Tensor& t) : p(static_cast<const T*>(t.data_ptr())) {
    for (int d = 0; d < 4; ++d) s[d] = t.stride(d);
  }
  const T* rows(int64_t b, int64_t h, int64_t r0) const {
    return p + b * s[0] + h * s[1] + r0 * s[2];
  }
};

// Rows [r0, r0 + n) of an operand as an A matrix: in place when T is A and rows are contiguous,
// else converted (times `mul`) into `buf`. In place, `mul` must be 1.
template <class T, class A>
CTile<A> rows_of(const Operand<T>& x, int64_t b, int64_t h, int64_t r0, int64_t n, int64_t cols,
                 std::vector<A>& buf, A mul = A(1)) {
  const T* src = x.rows(b, h, r0);
  if constexpr (std::is_same_v<T, A>) {
    if (x.s[3] == 1 && mul == A(1)) return CTile<A>(src, n, cols, Eigen::OuterStride<>(x.s[2]));
  }
  if (static_cast<int64_t>(buf.size()) < n * cols) buf.resize(n * cols);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < cols; ++c)
      buf[r * cols + c] = static_cast<A>(src[r * x.s[2] + c * x.s[3]]) * mul;
  return CTile<A>(buf.data(), n, cols, Eigen::OuterStride<>(cols));
}

// Adds the mask (or the causal -inf above the diagonal) to a score tile of queries [i0, i0 + nq)
// and keys [j0, j0 + nk) of (b, h).
template <class T, class A>
void apply_mask(const AttentionShape& g, const void* mask, bool causal, int64_t b, int64_t h,
                int64_t i0, int64_t j0, Tile<A>& sc) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const int64_t nq = sc.rows(), nk = sc.cols();
  if (causal) {
    for (int64_t r = 0; r < nq; ++r)
      for (int64_t c = std::max<int64_t>(0, i0 + r + 1 - j0); c < nk; ++c) sc(r, c) = kNegInf;
    return;
  }
  if (g.mask == AttentionShape::kNone) return;
  const int64_t* ms = g.mask_strides;
  const int64_t base = b * ms[0] + h * ms[1];
  for (int64_t r = 0; r < nq; ++r) {
    const int64_t row = base + (i0 + r) * ms[2] + j0 * ms[3];
    if (g.mask == AttentionShape::kBool) {
      const bool* m = static_cast<const bool*>(mask) + row;
      for (int64_t c = 0; c < nk; ++c)
        if (!m[c * ms[3]]) sc(r, c) = kNegInf;
    } else {
      const T* m = static_cast<const T*>(mask) + row;
      for (int64_t c = 0; c < nk; ++c) sc(r, c) += static_cast<A>(m[c * ms[3]]);
    }
  }
}

// exp(x - shift) of a row in place, with the vector exp of docs/cpu_kernels.md, and its sum:
// by whole packets from the row's start and the scalar form for the tail, so where the split
// falls depends on the length only, never on the buffer's address (a run's results do not change
// with where memory lands; Eigen's array loops switch forms at the first aligned address).
// With `scale`, exp(x * scale - shift): the product rounded first, as a separate pass scaling x
// would round it (the tile path's scores, Note [Tile products in attention]).
template <class A>
A exp_row(A* x, int64_t n, A shift, A scale = A(1)) {
  using namespace Eigen::internal;
  using P = typename packet_traits<A>::type;
  constexpr int64_t kWidth = packet_traits<A>::size;
  const VecExp<A> f;
  // VecExp clamps its argument, so masked entries (-inf) come out tiny, not 0: what lies below
  // the smallest normal number is flushed to 0 (NaN stays).
  const P tiny = pset1<P>(std::numeric_limits<A>::min()), s = pset1<P>(shift), k = pset1<P>(scale);
  P acc = pset1<P>(A(0));
  int64_t c = 0;
  for (; c + kWidth <= n; c += kWidth) {
    P e = f.packetOp(psub(pmul(ploadu<P>(x + c), k), s));
    e = pselect(pcmp_lt(e, tiny), pzero(e), e);
    pstoreu(x + c, e);
    acc = padd(acc, e);
  }
  A sum = predux(acc);
  for (; c < n; ++c) {
    const A e = f(x[c] * scale - shift);
    x[c] = e < std::numeric_limits<A>::min() ? A(0) : e;
    sum += x[c];
  }
  return sum;
}

// Row r of a tile the row steps just wrote, rounded to the products' operand dtype T into
// `rounded` (a tile of the same leading dimension) while it is in the L1 cache: a pass of its own
// over a 128 x 256 tile read it back from L2. Nothing where `rounded` is null (float32 operands,
// the Eigen path). The vector rounding of the elementwise loops (the bits of static_cast<T>).
template <class A, class T>
void round_row(const Tile<A>& t, int64_t r, T* rounded) {
  if constexpr (!std::is_same_v<T, A>)
    if (rounded != nullptr) narrow_n(&t(r, 0), rounded + r * t.outerStride(), t.cols());
}

// The row steps both forward paths share. The online softmax over one score tile: per row the
// new maximum m, the tile's exp(s - m) in place (0 where nothing is attended yet), the running
// sum l and the accumulator `at` rescaled by exp(m_old - m_new); with `rounded`, the tile's
// values as T there too (round_row; the sum is of the floats).
// With `scale` (positive), the tile holds unscaled scores: the scaled row's maximum is the scale
// times the unscaled one (rounding is monotonic), and exp_row scales as it reads, so the values
// are those of a tile scaled first, without that pass over it.
template <class A, class T = A>
void online_softmax(Tile<A>& sc, A* m, A* l, Tile<A>& at, A scale = A(1), T* rounded = nullptr) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const int64_t nk = sc.cols();
  for (int64_t r = 0; r < sc.rows(); ++r) {
    A* row = &sc(r, 0);
    const A m_new = std::max(m[r], sc.row(r).maxCoeff() * scale);
    if (m_new == kNegInf) {  // nothing attended in this row yet
      std::fill(row, row + nk, A(0));
      round_row(sc, r, rounded);
      continue;
    }
    const A sum = exp_row(row, nk, m_new, scale);
    round_row(sc, r, rounded);
    const A alpha = m[r] == kNegInf ? A(0) : std::exp(m[r] - m_new);
    l[r] = l[r] * alpha + sum;
    if (alpha != A(1)) at.row(r) *= alpha;
    m[r] = m_new;
  }
}

// The output rows (`out` the first, `row_stride` apart) as the accumulator over l, and each
// row's logsumexp m + log(l); a row that attends nothing gives 0 and -inf.
template <class T, class A>
void write_rows(const Tile<A>& at, const A* m, const A* l, T* out, int64_t row_stride, A* lse) {
  for (int64_t r = 0; r < at.rows(); ++r) {
    T* orow = out + r * row_stride;
    const A inv = l[r] > 0 ? A(1) / l[r] : A(0);
    for (int64_t c = 0; c < at.cols(); ++c) orow[c] = static_cast<T>(at(r, c) * inv);
    lse[r] = l[r] > 0 ? m[r] + std::log(l[r]) : -std::numeric_limits<A>::infinity();
  }
}

// Whether the oneDNN tile path applies the scale as the softmax reads the unscaled scores
// (online_softmax, probabilities) instead of in a pass of its own: a positive scale, and no
// additive mask, which is added to scaled scores.
bool scale_folds(const AttentionShape& g, double scale) {
  return scale > 0 && g.mask != AttentionShape::kAdditive;
}

// The backward's row steps. P = exp(s - logsumexp) in place (0 for a row that attends nothing);
// with `scale`, of the unscaled scores s (as online_softmax's); with `rounded`, P as T there too.
template <class A, class T = A>
void probabilities(Tile<A>& p, const A* lse, A scale = A(1), T* rounded = nullptr) {
  for (int64_t r = 0; r < p.rows(); ++r) {
    A* row = &p(r, 0);
    if (lse[r] == -std::numeric_limits<A>::infinity())  // attended nothing
      std::fill(row, row + p.cols(), A(0));
    else
      exp_row(row, p.cols(), lse[r], scale);
    round_row(p, r, rounded);
  }
}

// dS = P * (dP - D) in place of dP, D = rowsum(dO * O) per row; with `rounded`, dS as T there too.
template <class A, class T = A>
void softmax_backward(const Tile<A>& p, const A* d, Tile<A>& ds, T* rounded = nullptr) {
  for (int64_t r = 0; r < p.rows(); ++r) {
    ds.row(r).array() = p.row(r).array() * (ds.row(r).array() - d[r]);
    round_row(ds, r, rounded);
  }
}

// Note [Tile products in attention]
// The tiles are multiplied by oneDNN (Note [Tile products] in kernels/cpu/onednn.h), reading
// Q, K, V and dO in place: float32 by sgemm, bfloat16 and float16 in their own dtype where
// oneDNN has fast products for it (AVX-512 with bf16, AMX, AVX512-FP16), as PyTorch's CPU
// flash kernel does: scores and gradients accumulate in float, and the probabilities P and the
// score gradients dS are rounded to the dtype before the products that read them. The scale
// multiplies the score tile. Measured on the 16-core host against the widening Eigen path
// below: bfloat16 1.75-2.7x faster, float32 1.01-1.74x (bench/README.md, "bench_gpt").
// The score and probability tiles are dense (leading dimension the step's key count, not
// kKeyTile): oneDNN 2.6 gives a strided 16-bit tile to its packing gemm:jit instead of brgemm,
// which on the 2-core VM (AVX512-BF16) took 15 us for a 64 x 64 x 64 product against 4.5 (the
// causal diagonal's halves, whose key count is below kKeyTile; bench/README.md, "Dense tiles").
// The Eigen path (tiles widened to float) stays for float64,
// operands whose rows are not contiguous, bfloat16 / float16 where oneDNN has no fast product,
// and a reduced-precision query shorter than one tile (generation with a key/value cache: its
// growing key length would build new primitives at every token).
bool tile_path(const AttentionShape& g, std::initializer_list<const Tensor*> operands) {
  if (g.q_len < kQueryTile && (*operands.begin())->dtype() != kFloat) return false;
  for (const Tensor* t : operands)
    if (t->stride(3) != 1) return false;
  return true;
}

// Note [Causal diagonal in halves]: the steps of the query tile [i0, i0 + nq), forward and
// backward: rows [r0, r0 + nr) of the tile against keys [j0, j0 + nk). Key tiles of kKeyTile for
// every row, but under a causal mask the key tile that holds the diagonal is taken in two halves
// of rows when the query tile has more than 64: the upper rows stop at their own last key (i0 +
// 64), so the masked upper triangle computed is two 64 x 64 halves instead of one 128 x 128 (at
// length 512 a quarter of the scores computed were masked, now an eighth; at the GPT's length 128,
// where the diagonal tile is the only one, the backward's five products do three quarters of the
// work).
struct TileStep {
  int64_t r0, nr, j0, nk;
};
std::vector<TileStep> tile_steps(int64_t i0, int64_t nq, int64_t S, bool causal) {
  std::vector<TileStep> steps;
  const int64_t kv_end = causal ? std::min(S, i0 + nq) : S;
  constexpr int64_t kHalf = kQueryTile / 2;
  const int64_t upper_end = std::min(kv_end, i0 + kHalf);  // the upper rows' last key + 1
  for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyTile) {
    const int64_t nk = std::min(kKeyTile, kv_end - j0);
    if (causal && nq > kHalf && j0 + nk > upper_end && upper_end > j0) {
      steps.push_back({0, kHalf, j0, upper_end - j0});
      steps.push_back({kHalf, nq - kHalf, j0, nk});
    } else {
      steps.push_back({0, nq, j0, nk});
    }
  }
  return steps;
}
// The (rows, keys) shapes of every query tile's steps.
std::vector<std::pair<int64_t, int64_t>> step_shapes(int64_t L, int64_t S, bool causal) {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (int64_t i0 = 0; i0 < L; i0 += kQueryTile)
    for (const TileStep& st : tile_steps(i0, std::min(kQueryTile, L - i0), S, causal)) {
      const std::pair<int64_t, int64_t> s{st.nr, st.nk};
      if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
    }
  return shapes;
}

// The products of one tile shape, made before the tasks start. `make(nq, nk)` gives them (false:
// one is not available); `of(nq, nk)` finds them.
template <size_t N>
class TileProducts {
 public:
  using Set = std::array<onednn::TileProduct, N>;
  template <class Make>
  bool build(const std::vector<std::pair<int64_t, int64_t>>& shapes, Make&& make) {
    for (const auto& [nq, nk] : shapes) {
      Set set = make(nq, nk);
      for (const auto& p : set)
        if (!p) return false;
      sets_.emplace_back(std::make_pair(nq, nk), std::move(set));
    }
    return true;
  }
  const Set& of(int64_t nq, int64_t nk) const {
    auto it = std::find_if(sets_.begin(), sets_.end(),
                           [&](const auto& e) { return e.first == std::make_pair(nq, nk); });
    XTEN_ASSERT(it != sets_.end(), "no products for the tile {} x {}", nq, nk);
    return it->second;
  }

 private:
  std::vector<std::pair<std::pair<int64_t, int64_t>, Set>> sets_;
};

// The tile products' operand for a tile of floats: the floats themselves for float32, else the
// copy rounded to T that the row steps wrote into `buf` (round_row).
template <class T, class A>
const T* tile_operand(const A* x, const T* buf) {
  if constexpr (std::is_same_v<T, A>)
    return x;
  else
    return buf;
}
// Where the row steps write that rounded copy: nowhere for float32.
template <class T, class A>
T* rounded_into(std::vector<T>& buf) {
  return std::is_same_v<T, A> ? nullptr : buf.data();
}

// The forward of Note [Tile products in attention]; false (nothing done) where the products are
// not available. Tiles: scores S = Q K^T and the accumulator += P V.
template <class T>
bool flash_forward_tiles(const AttentionShape& g, const Tensor& query, const Tensor& key,
                         const Tensor& value, const void* mask, bool causal, double scale,
                         const Tensor& out, const Tensor& lse) {
  using A = float;
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  if (!tile_path(g, {&query, &key, &value})) return false;
  const Operand<T> q(query), k(key), v(value);
  const int64_t E = g.head_dim, Ev = g.value_dim, L = g.q_len, S = g.kv_len;
  const ScalarType dt = query.dtype();
  TileProducts<2> products;
  const bool ok = products.build(step_shapes(L, S, causal), [&](int64_t nq, int64_t nk) {
    return TileProducts<2>::Set{
        onednn::TileProduct::make(dt, nq, nk, E, {q.s[2], 1}, {1, k.s[2]}, nk, false),
        onednn::TileProduct::make(dt, nq, Ev, nk, {nk, 1}, {v.s[2], 1}, Ev, true)};
  });
  if (!ok) return false;
  const int64_t q_tiles = (L + kQueryTile - 1) / kQueryTile;
  T* o = static_cast<T*>(out.data_ptr());
  const int64_t os[3] = {out.stride(0), out.stride(1), out.stride(2)};
  A* ls = static_cast<A*>(lse.data_ptr());
  const bool fold = scale_folds(g, scale);
  parallel_for(g.batch * g.heads * q_tiles, 1, [&](int64_t t0, int64_t t1) {
    std::vector<A> sb(kQueryTile * kKeyTile), acc(kQueryTile * Ev), m(kQueryTile), l(kQueryTile);
    std::vector<T> pb(std::is_same_v<T, A> ? 0 : kQueryTile * kKeyTile);  // P as T
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (g.heads * q_tiles), h = t / q_tiles % g.heads;
      const int64_t hk = g.kv_head(h), i0 = t % q_tiles * kQueryTile;
      const int64_t nq = std::min(kQueryTile, L - i0);
      Tile<A> at(acc.data(), nq, Ev, Eigen::OuterStride<>(Ev));
      at.setZero();
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), A(0));
      for (const TileStep& st : tile_steps(i0, nq, S, causal)) {
        const int64_t r0 = st.r0, nr = st.nr, j0 = st.j0, nk = st.nk;
        const auto& pr = products.of(nr, nk);
        pr[0].run(q.rows(b, h, i0 + r0), k.rows(b, hk, j0), sb.data());
        Tile<A> sc(sb.data(), nr, nk, Eigen::OuterStride<>(nk));
        // The scale folded into the softmax where no additive mask needs scaled scores.
        if (!fold) sc *= static_cast<A>(scale);
        apply_mask<T, A>(g, mask, causal, b, h, i0 + r0, j0, sc);
        Tile<A> rows(acc.data() + r0 * Ev, nr, Ev, Eigen::OuterStride<>(Ev));
        online_softmax(sc, m.data() + r0, l.data() + r0, rows, fold ? static_cast<A>(scale) : A(1),
                       rounded_into<T, A>(pb));
        pr[1].run(tile_operand(sb.data(), pb.data()), v.rows(b, hk, j0), acc.data() + r0 * Ev);
      }
      write_rows(at, m.data(), l.data(), o + b * os[0] + h * os[1] + i0 * os[2], os[2],
                 ls + (b * g.heads + h) * L + i0);
    }
  });
  return true;
}

// The backward of Note [Tile products in attention]; false where the products are not available.
// Per tile: P = softmax(scale Q K^T) from logsumexp, dV += P^T dO, dS = P * (dO V^T - D),
// dQ += dS K and dK += dS^T Q (both times the scale when written out).
template <class T>
bool flash_backward_tiles(const AttentionShape& g, const Tensor& grad_out, const Tensor& query,
                          const Tensor& key, const Tensor& value, const Tensor& out,
                          const Tensor& lse, const void* mask, bool causal, double scale,
                          const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  using A = float;
  if (!tile_path(g, {&query, &key, &value, &grad_out})) return false;
  const Operand<T> q(query), k(key), v(value), go(grad_out), o(out);
  const int64_t E = g.head_dim, Ev = g.value_dim, L = g.q_len, S = g.kv_len;
  const ScalarType dt = query.dtype();
  using onednn::TileProduct;
  TileProducts<5> products;
  const bool ok = products.build(step_shapes(L, S, causal), [&](int64_t nq, int64_t nk) {
    return TileProducts<5>::Set{
        TileProduct::make(dt, nq, nk, E, {q.s[2], 1}, {1, k.s[2]}, nk, false),    // Q K^T
        TileProduct::make(dt, nk, Ev, nq, {1, nk}, {go.s[2], 1}, Ev, true),       // P^T dO
        TileProduct::make(dt, nq, nk, Ev, {go.s[2], 1}, {1, v.s[2]}, nk, false),  // dO V^T
        TileProduct::make(dt, nq, E, nk, {nk, 1}, {k.s[2], 1}, E, true),          // dS K
        TileProduct::make(dt, nk, E, nq, {1, nk}, {q.s[2], 1}, E, true)};         // dS^T Q
  });
  if (!ok) return false;
  const Tensor lse_c = lse.contiguous();
  const A* ls = static_cast<const A*>(lse_c.data_ptr());
  const A sc_mul = static_cast<A>(scale);
  const bool fold = scale_folds(g, scale);
  T* dqp = static_cast<T*>(dq.data_ptr());
  T* dkp = static_cast<T*>(dk.data_ptr());
  T* dvp = static_cast<T*>(dv.data_ptr());
  const int64_t dqs[3] = {dq.stride(0), dq.stride(1), dq.stride(2)},
                dks[3] = {dk.stride(0), dk.stride(1), dk.stride(2)},
                dvs[3] = {dv.stride(0), dv.stride(1), dv.stride(2)};
  parallel_for(g.batch * g.kv_heads, 1, [&](int64_t t0, int64_t t1) {
    std::vector<A> sb(kQueryTile * kKeyTile), db(kQueryTile * kKeyTile), dqb(kQueryTile * E),
        dkb(S * E), dvb(S * Ev), d(kQueryTile);
    const size_t n_rounded = std::is_same_v<T, A> ? 0 : kQueryTile * kKeyTile;  // P, dS as T
    std::vector<T> pb(n_rounded), dsb(n_rounded);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / g.kv_heads, hk = t % g.kv_heads;
      const int64_t group = g.heads / g.kv_heads;  // a task exists: kv_heads > 0
      std::fill(dkb.begin(), dkb.end(), A(0));
      std::fill(dvb.begin(), dvb.end(), A(0));
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i0 = 0; i0 < L; i0 += kQueryTile) {
          const int64_t nq = std::min(kQueryTile, L - i0);
          const A* lrow = ls + (b * g.heads + h) * L + i0;
          const T* qt = q.rows(b, h, i0);
          const T* gt = go.rows(b, h, i0);
          // D = rowsum(dO * O), the softmax backward's inner product.
          for (int64_t r = 0; r < nq; ++r) {
            const T* orow = o.rows(b, h, i0 + r);
            const T* grow = gt + r * go.s[2];
            A s = 0;
            for (int64_t c = 0; c < Ev; ++c)
              s += static_cast<A>(grow[c]) * static_cast<A>(orow[c * o.s[3]]);
            d[r] = s;
          }
          std::fill(dqb.begin(), dqb.begin() + nq * E, A(0));
          for (const TileStep& st : tile_steps(i0, nq, S, causal)) {
            const int64_t r0 = st.r0, nr = st.nr, j0 = st.j0, nk = st.nk;
            const auto& pr = products.of(nr, nk);
            const T* qs = qt + r0 * q.s[2];
            const T* gs = gt + r0 * go.s[2];
            pr[0].run(qs, k.rows(b, hk, j0), sb.data());
            Tile<A> p(sb.data(), nr, nk, Eigen::OuterStride<>(nk));
            if (!fold) p *= sc_mul;  // else scaled as probabilities reads it (as the forward)
            apply_mask<T, A>(g, mask, causal, b, h, i0 + r0, j0, p);
            probabilities(p, lrow + r0, fold ? sc_mul : A(1), rounded_into<T, A>(pb));
            pr[1].run(tile_operand(sb.data(), pb.data()), gs, dvb.data() + j0 * Ev);
            pr[2].run(gs, v.rows(b, hk, j0), db.data());
            Tile<A> ds(db.data(), nr, nk, Eigen::OuterStride<>(nk));
            softmax_backward(p, d.data() + r0, ds, rounded_into<T, A>(dsb));
            const T* dst = tile_operand(db.data(), dsb.data());
            pr[3].run(dst, k.rows(b, hk, j0), dqb.data() + r0 * E);
            pr[4].run(dst, qs, dkb.data() + j0 * E);
          }
          T* row = dqp + b * dqs[0] + h * dqs[1] + i0 * dqs[2];
          for (int64_t r = 0; r < nq; ++r, row += dqs[2])
            for (int64_t c = 0; c < E; ++c) row[c] = static_cast<T>(dqb[r * E + c] * sc_mul);
        }
      }
      T* krow = dkp + b * dks[0] + hk * dks[1];
      T* vrow = dvp + b * dvs[0] + hk * dvs[1];
      for (int64_t r = 0; r < S; ++r, krow += dks[2], vrow += dvs[2]) {
        for (int64_t c = 0; c < E; ++c) krow[c] = static_cast<T>(dkb[r * E + c] * sc_mul);
        for (int64_t c = 0; c < Ev; ++c) vrow[c] = static_cast<T>(dvb[r * Ev + c]);
      }
    }
  });
  return true;
}

template <class T>
void flash_forward(const AttentionShape& g, const Tensor& query, const Tensor& key,
                   const Tensor& value, const void* mask, bool causal, double scale,
                   const Tensor& out, const Tensor& lse) {
  using A = opmath_t<T>;
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const Operand<T> q(query), k(key), v(value);
  const int64_t E = g.head_dim, Ev = g.value_dim, L = g.q_len, S = g.kv_len;
  const int64_t q_tiles = (L + kQueryTile - 1) / kQueryTile;
  Eigen::setNbThreads(1);  // Note [Tile products run alone]
  T* o = static_cast<T*>(out.data_ptr());
  const int64_t os[3] = {out.stride(0), out.stride(1), out.stride(2)};
  A* ls = static_cast<A*>(lse.data_ptr());
  parallel_for(g.batch * g.heads * q_tiles, 1, [&](int64_t t0, int64_t t1) {
    std::vector<A> qb, kb, vb, sb(kQueryTile * kKeyTile), acc(kQueryTile * Ev), m(kQueryTile),
        l(kQueryTile);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / (g.heads * q_tiles), h = t / q_tiles % g.heads;
      const int64_t hk = g.kv_head(h), i0 = t % q_tiles * kQueryTile;
      const int64_t nq = std::min(kQueryTile, L - i0);
      // The scale goes into the query tile, which is then always a converted copy.
      if (static_cast<int64_t>(qb.size()) < nq * E) qb.resize(nq * E);
      const T* qsrc = q.rows(b, h, i0);
      for (int64_t r = 0; r < nq; ++r)
        for (int64_t c = 0; c < E; ++c)
          qb[r * E + c] = static_cast<A>(qsrc[r * q.s[2] + c * q.s[3]]) * static_cast<A>(scale);
      const CTile<A> qt(qb.data(), nq, E, Eigen::OuterStride<>(E));
      Tile<A> at(acc.data(), nq, Ev, Eigen::OuterStride<>(Ev));
      at.setZero();
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), A(0));
      const int64_t kv_end = causal ? std::min(S, i0 + nq) : S;
      for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyTile) {
        const int64_t nk = std::min(kKeyTile, kv_end - j0);
        const CTile<A> kt = rows_of(k, b, hk, j0, nk, E, kb);
        const CTile<A> vt = rows_of(v, b, hk, j0, nk, Ev, vb);
        Tile<A> sc(sb.data(), nq, nk, Eigen::OuterStride<>(nk));
        sc.noalias() = qt * kt.transpose();
        apply_mask<T, A>(g, mask, causal, b, h, i0, j0, sc);
        online_softmax(sc, m.data(), l.data(), at);
        at.noalias() += sc * vt;
      }
      write_rows(at, m.data(), l.data(), o + b * os[0] + h * os[1] + i0 * os[2], os[2],
                 ls + (b * g.heads + h) * L + i0);
    }
  });
}

template <class T>
void flash_backward(const AttentionShape& g, const Tensor& grad_out, const Tensor& query,
                    const Tensor& key, const Tensor& value, const Tensor& out, const Tensor& lse,
                    const void* mask, bool causal, double scale, const Tensor& dq, const Tensor& dk,
                    const Tensor& dv) {
  using A = opmath_t<T>;
  const Operand<T> q(query), k(key), v(value), go(grad_out), o(out);
  const int64_t E = g.head_dim, Ev = g.value_dim, L = g.q_len, S = g.kv_len;
  const Tensor lse_c = lse.contiguous();
  const A* ls = static_cast<const A*>(lse_c.data_ptr());
  const A sc_mul = static_cast<A>(scale);
  Eigen::setNbThreads(1);  // Note [Tile products run alone]
  parallel_for(g.batch * g.kv_heads, 1, [&](int64_t t0, int64_t t1) {
    std::vector<A> qb, gb, kb, vb, sb(kQueryTile * kKeyTile), pb(kQueryTile * kKeyTile),
        dqb(kQueryTile * E), dkb(S * E), dvb(S * Ev), d(kQueryTile);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / g.kv_heads, hk = t % g.kv_heads;
      const int64_t group = g.heads / g.kv_heads;  // a task exists: kv_heads > 0
      Tile<A> dk_all(dkb.data(), S, E, Eigen::OuterStride<>(E));
      Tile<A> dv_all(dvb.data(), S, Ev, Eigen::OuterStride<>(Ev));
      dk_all.setZero();
      dv_all.setZero();
      const CTile<A> k_all = rows_of(k, b, hk, 0, S, E, kb);
      const CTile<A> v_all = rows_of(v, b, hk, 0, S, Ev, vb);
      for (int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i0 = 0; i0 < L; i0 += kQueryTile) {
          const int64_t nq = std::min(kQueryTile, L - i0);
          // The scaled queries: S = (scale Q) K^T and dK = dS^T (scale Q) need no scaling pass.
          const CTile<A> qt = rows_of(q, b, h, i0, nq, E, qb, sc_mul);
          const CTile<A> gt = rows_of(go, b, h, i0, nq, Ev, gb);
          const A* lrow = ls + (b * g.heads + h) * L + i0;
          // D = rowsum(dO * O), the softmax backward's inner product.
          for (int64_t r = 0; r < nq; ++r) {
            const T* orow = o.rows(b, h, i0 + r);
            A s = 0;
            for (int64_t c = 0; c < Ev; ++c) s += gt(r, c) * static_cast<A>(orow[c * o.s[3]]);
            d[r] = s;
          }
          Tile<A> dqt(dqb.data(), nq, E, Eigen::OuterStride<>(E));
          dqt.setZero();
          const int64_t kv_end = causal ? std::min(S, i0 + nq) : S;
          for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyTile) {
            const int64_t nk = std::min(kKeyTile, kv_end - j0);
            const auto kt = k_all.middleRows(j0, nk);
            const auto vt = v_all.middleRows(j0, nk);
            Tile<A> p(sb.data(), nq, nk, Eigen::OuterStride<>(nk));
            p.noalias() = qt * kt.transpose();
            apply_mask<T, A>(g, mask, causal, b, h, i0, j0, p);
            probabilities(p, lrow);
            dv_all.middleRows(j0, nk).noalias() += p.transpose() * gt;
            Tile<A> ds(pb.data(), nq, nk, Eigen::OuterStride<>(nk));
            ds.noalias() = gt * vt.transpose();
            softmax_backward(p, d.data(), ds);
            dqt.noalias() += ds * kt;
            dk_all.middleRows(j0, nk).noalias() += ds.transpose() * qt;
          }
          T* dqp = static_cast<T*>(dq.data_ptr());
          for (int64_t r = 0; r < nq; ++r) {
            T* row = dqp + b * dq.stride(0) + h * dq.stride(1) + (i0 + r) * dq.stride(2);
            for (int64_t c = 0; c < E; ++c) row[c] = static_cast<T>(dqt(r, c) * sc_mul);
          }
        }
      }
      T* dkp = static_cast<T*>(dk.data_ptr());
      T* dvp = static_cast<T*>(dv.data_ptr());
      for (int64_t r = 0; r < S; ++r) {
        T* krow = dkp + b * dk.stride(0) + hk * dk.stride(1) + r * dk.stride(2);
        T* vrow = dvp + b * dv.stride(0) + hk * dv.stride(1) + r * dv.stride(2);
        for (int64_t c = 0; c < E; ++c) krow[c] = static_cast<T>(dk_all(r, c));
        for (int64_t c = 0; c < Ev; ++c) vrow[c] = static_cast<T>(dv_all(r, c));
      }
    }
  });
}

const void* mask_data(const std::optional<Tensor>& m) {
  return m && m->defined() ? m->data_ptr() : nullptr;
}

TensorPair flash_attention_kernel(const Tensor& query, const Tensor& key, const Tensor& value,
                                  const std::optional<Tensor>& attn_mask, bool is_causal,
                                  double scale) {
  const char* op = "_scaled_dot_product_flash_attention";
  const AttentionShape g = flash_attention_meta(op, query, key, value, attn_mask, is_causal);
  Tensor out =
      empty_heads_last(g.batch, g.heads, g.q_len, g.value_dim, query.dtype(), query.device());
  Tensor lse =
      empty_tensor({g.batch, g.heads, g.q_len}, attention_acc_dtype(query.dtype()), query.device());
  visit_dtype<dtypes::kFloating>(op, query.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<opmath_t<T>, float>) {
      if (flash_forward_tiles<T>(g, query, key, value, mask_data(attn_mask), is_causal, scale, out,
                                 lse))
        return;
    }
    flash_forward<T>(g, query, key, value, mask_data(attn_mask), is_causal, scale, out, lse);
  });
  return {out, lse};
}

TensorTriple flash_attention_backward_kernel(const Tensor& grad_out, const Tensor& query,
                                             const Tensor& key, const Tensor& value,
                                             const Tensor& out, const Tensor& lse,
                                             const std::optional<Tensor>& attn_mask, bool is_causal,
                                             double scale) {
  const char* op = "_scaled_dot_product_flash_attention_backward";
  const AttentionShape g = flash_attention_backward_meta(op, grad_out, query, key, value, out, lse,
                                                         attn_mask, is_causal);
  const ScalarType t = query.dtype();
  const Device dev = query.device();
  Tensor dq = empty_heads_last(g.batch, g.heads, g.q_len, g.head_dim, t, dev);
  Tensor dk = empty_heads_last(g.batch, g.kv_heads, g.kv_len, g.head_dim, t, dev);
  Tensor dv = empty_heads_last(g.batch, g.kv_heads, g.kv_len, g.value_dim, t, dev);
  visit_dtype<dtypes::kFloating>(op, t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<opmath_t<T>, float>) {
      if (flash_backward_tiles<T>(g, grad_out, query, key, value, out, lse, mask_data(attn_mask),
                                  is_causal, scale, dq, dk, dv))
        return;
    }
    flash_backward<T>(g, grad_out, query, key, value, out, lse, mask_data(attn_mask), is_causal,
                      scale, dq, dk, dv);
  });
  return {dq, dk, dv};
}

}  // namespace

XTEN_CPU_KERNELS(attention, m) {
  m.impl("_scaled_dot_product_flash_attention", flash_attention_kernel);
  m.impl("_scaled_dot_product_flash_attention_backward", flash_attention_backward_kernel);
}

}  // namespace xten::cpu
