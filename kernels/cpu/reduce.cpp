// Reductions on CPU: sum, mean, prod, amax/amin, max/min (with indices), argmax/argmin,
// all/any, var/std, norm, logsumexp over any set of dims; cumsum and cumprod along one dim.
//
// Note [Summation accuracy]
// Sums use pairwise (cascade) summation over contiguous runs, so the rounding error grows with
// log(n), not n (float32: the sum of 2^24 ones is exactly 2^24). Float and double runs are
// summed lane by lane: leaves of 16 x 4 vectors into four vector accumulators, the leaves'
// vectors combined in a binary tree, and one horizontal sum at the end (each lane is a pairwise
// sum of its own elements; the lane count, and so the order, follows the CPU capability level);
// what is left after the whole steps goes into one vector accumulator, then one by one.
// Half and BFloat16: blocks of kLeaf elements widened to float and summed lane by lane, combined
// in a binary tree. Integers: blocks of kLeaf elements with 8 independent accumulators (in int64).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/cpu/capability.h>
#include <xten/kernels/cpu/lane_sum.h>

#include <xten/kernels/common/reduce_rows.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/unary_functors.h>

namespace xten::cpu {
namespace {

constexpr int64_t kLeaf = 128;

// Integer sums wrap on overflow (as PyTorch's); W is the type they add in.
template <class Acc, class T>
Acc pairwise_sum(const T* p, int64_t n) {
  using W = std::conditional_t<std::is_integral_v<Acc>, uint64_t, Acc>;
  if constexpr (std::is_same_v<T, W> && std::is_floating_point_v<W>) {
    return LaneSum<W>::sum(p, n);
  } else {
    if constexpr (std::is_same_v<W, float> && !std::is_same_v<T, float>) {
      // float16, bfloat16: a leaf summed lane by lane as floats, widened in registers where
      // LaneSum loads the type (bfloat16 at every level, float16 with F16C), else into a buffer
      // first (the same sum; the buffer's extra pass through L1 made a bfloat16 sum 1.3x its
      // avx512 time at avx2 on the VM). The leaf is a float leaf of LaneSum (1,024 at AVX-512):
      // with 128, the recursion and the lanes' final fold were a third of a bfloat16 sum's time.
      constexpr int64_t kWideLeaf = 1024;
      if (n <= kWideLeaf) {
        if constexpr (LaneSum<float>::kLoads<T>) {
          return LaneSum<float>::sum(p, n);
        } else {
          alignas(64) float wide[kWideLeaf];
          widen_n(p, wide, n);
          return LaneSum<float>::sum(wide, n);
        }
      }
    }
    if (n <= kLeaf) {
      W acc[8] = {};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] += static_cast<W>(static_cast<Acc>(p[i + k]));
      W s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
      for (; i < n; ++i) s += static_cast<W>(static_cast<Acc>(p[i]));
      return static_cast<Acc>(s);
    }
    const int64_t half = (n / 2 + 7) / 8 * 8;
    const W left = static_cast<W>(pairwise_sum<Acc>(p, half));  // in memory order (LaneSum)
    return static_cast<Acc>(left + static_cast<W>(pairwise_sum<Acc>(p + half, n - half)));
  }
}

template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, opmath_t<T>>;

// Calls store(i, row(ptr, n)) for every row; one long row is cut into a piece per thread,
// and the pieces are joined with combine.
template <class T, class RowFn, class Combine, class Store>
void for_each_row(const Rows& r, const RowFn& row, const Combine& combine, const Store& store) {
  const T* src = static_cast<const T*>(r.in.data_ptr());
  const int64_t inner = r.inner;
  if (r.outer == 1 && inner >= kParallelGrain && get_num_threads() > 1) {
    using Acc = decltype(row(src, inner));
    const int threads = get_num_threads();
    const int64_t piece = (inner + threads - 1) / threads;
    // One slot per thread, each its own object: a std::vector<bool> (all, any: Acc is bool)
    // packs them into shared words, and threads writing neighbouring bits lose each other's
    // writes (all() over 70,000 true values returned false 8 times in 20,000).
    struct Slot {
      Acc value{};
      bool used = false;
    };
    std::vector<Slot> part(static_cast<size_t>(threads));
    parallel_for(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t lo = t * piece, n = std::min(inner, lo + piece) - lo;
        if (n > 0) part[static_cast<size_t>(t)] = Slot{row(src + lo, n), true};
      }
    });
    Acc acc = part[0].value;
    for (int t = 1; t < threads; ++t)
      if (part[static_cast<size_t>(t)].used) acc = combine(acc, part[static_cast<size_t>(t)].value);
    store(0, acc);
    return;
  }
  parallel_for(r.outer, grain_for(inner), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) store(i, row(src + i * inner, inner));
  });
}

// Column sums: out[j] = sum over i of p[i * cols + j], for a reduction over the leading dims of
// a contiguous input (a bias gradient: a [batch, features] gradient summed over the batch), read
// row by row instead of transposed into rows first (the transpose was a copy as large as the
// input). Pairwise over the rows, as Note [Summation accuracy] promises: leaves of kRowLeaf rows
// summed in order, leaves combined like a binary counter's carries, so each column's error
// grows with log(rows).
template <class Acc, class T>
void column_sums(const T* p, int64_t rows, int64_t cols, int64_t c0, int64_t c1, Acc* out) {
  constexpr int64_t kRowLeaf = 16;
  const int64_t w = c1 - c0;
  std::vector<std::vector<Acc>> level;  // level[l]: the sum of 2^l leaves, or empty
  std::vector<Acc> leaf(static_cast<size_t>(w));
  for (int64_t r0 = 0; r0 < rows; r0 += kRowLeaf) {
    std::fill(leaf.begin(), leaf.end(), Acc(0));
    for (int64_t i = r0; i < std::min(rows, r0 + kRowLeaf); ++i) {
      const T* row = p + i * cols + c0;
      for (int64_t j = 0; j < w; ++j) leaf[j] += static_cast<Acc>(row[j]);
    }
    size_t l = 0;
    for (; l < level.size() && !level[l].empty(); ++l) {
      for (int64_t j = 0; j < w; ++j) leaf[j] = level[l][j] + leaf[j];
      level[l].clear();
    }
    if (l == level.size()) level.emplace_back();
    level[l].swap(leaf);
    leaf.resize(static_cast<size_t>(w));
  }
  std::fill(out, out + w, Acc(0));
  for (const auto& v : level)
    if (!v.empty())
      for (int64_t j = 0; j < w; ++j) out[j] += v[j];
}

// ---- sum, mean, prod ------------------------------------------------------------------------
// A sum as sum_impl stores it: divided by `divisor` (mean's count; integer sums are never
// divided), in the output dtype.
template <class T, class Acc>
T sum_value(Acc v, double divisor) {
  if constexpr (std::is_integral_v<Acc>)
    return cast_value<T>(v);
  else
    return cast_value<T>(divisor == 1.0 ? v : static_cast<Acc>(v / static_cast<Acc>(divisor)));
}

Tensor sum_impl(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim,
                ScalarType out_dtype, double divisor) {
  // A dense input that is not contiguous: its memory-order view, reduced columns taking the
  // path below (reduce_in_memory_order; a transposing copy cost 14x the sum of a transposed
  // [2048, 2048] matrix's rows at one thread).
  if (std::optional<Tensor> r = reduce_in_memory_order(
          op, self, dims, keepdim, [&](const Tensor& view, IntArrayRef mdims) {
            return sum_impl(op, view, mdims, true, out_dtype, divisor);
          }))
    return *r;
  if (const int64_t k = leading_dims_reduction(op, self, dims, out_dtype)) {
    int64_t rows = 1;
    for (int64_t d = 0; d < k; ++d) rows *= self.size(d);
    const int64_t cols = self.numel() / rows;
    DimVector out_shape, kept(self.sizes());
    for (int64_t d = k; d < self.dim(); ++d) out_shape.push_back(self.size(d));
    for (int64_t d = 0; d < k; ++d) kept[d] = 1;
    Tensor out = empty_tensor(out_shape, out_dtype, self.device());
    visit_dtype<dtypes::kFloating>(op, out_dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Acc = acc_t<T>;
      const T* src = static_cast<const T*>(self.data_ptr());
      T* dst = static_cast<T*>(out.data_ptr());
      // threads over blocks of columns, each reading its columns of every row: as wide as the
      // threads allow (a multiple of 64 columns, at most 4,096: the leaves stay in L1/L2), since a
      // block's rows are strided reads, a new page each row when the row is long (one thread
      // over [2048, 2048] in 64-column blocks: 0.35-0.70x libtorch on the 16-core host, 4 ms
      // where one streaming pass takes 1).
      constexpr int64_t kCols = 64;
      const int64_t threads = get_num_threads();
      const int64_t width =
          std::clamp<int64_t>((cols + threads - 1) / threads, kCols, 4096) / kCols * kCols;
      const int64_t blocks = (cols + width - 1) / width;
      // Few blocks and many rows (a channels-last batch's per-channel sums: 64 columns of
      // N*H*W rows) leave threads idle: the rows are cut among them instead, each summing
      // its rows of every column, and the parts are added in order.
      const int64_t parts = std::min<int64_t>(threads, rows / 256);
      if ((cols + kCols - 1) / kCols < threads && parts > 1) {
        std::vector<Acc> part(static_cast<size_t>(parts * cols));
        parallel_for(parts, 1, [&](int64_t b, int64_t e) {
          for (int64_t q = b; q < e; ++q) {
            const int64_t r0 = rows * q / parts, r1 = rows * (q + 1) / parts;
            for (int64_t c0 = 0; c0 < cols; c0 += kCols)
              column_sums<Acc>(src + r0 * cols, r1 - r0, cols, c0, std::min(cols, c0 + kCols),
                               part.data() + q * cols + c0);
          }
        });
        for (int64_t j = 0; j < cols; ++j) {
          Acc acc = part[static_cast<size_t>(j)];
          for (int64_t q = 1; q < parts; ++q) acc += part[static_cast<size_t>(q * cols + j)];
          dst[j] = sum_value<T>(acc, divisor);
        }
        return;
      }
      parallel_for(blocks, std::max<int64_t>(1, kParallelGrain / (rows * width)),
                   [&](int64_t b, int64_t e) {
                     std::vector<Acc> acc(static_cast<size_t>(width));
                     for (int64_t blk = b; blk < e; ++blk) {
                       const int64_t c0 = blk * width, c1 = std::min(cols, c0 + width);
                       column_sums<Acc>(src, rows, cols, c0, c1, acc.data());
                       for (int64_t j = c0; j < c1; ++j)
                         dst[j] = sum_value<T>(acc[static_cast<size_t>(j - c0)], divisor);
                     }
                   });
    });
    return keepdim ? out.view(kept) : out;
  }
  const Rows r = make_rows(op, self, dims, out_dtype);
  Tensor out = empty_tensor(r.out_shape, out_dtype, self.device());
  visit_dtype<dtypes::kAll>(op, out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    T* dst = static_cast<T*>(out.data_ptr());
    for_each_row<T>(
        r, [](const T* p, int64_t n) { return pairwise_sum<Acc>(p, n); },
        [](Acc a, Acc b) { return static_cast<Acc>(a + b); },
        [&](int64_t i, Acc v) { dst[i] = sum_value<T>(v, divisor); });
  });
  return finish(out, self, r, keepdim);
}

Tensor sum_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                  std::optional<ScalarType> dtype) {
  return sum_impl("sum", self, dims, keepdim, sum_dtype(self, dtype), 1.0);
}

Tensor mean_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const ScalarType out = mean_dtype(self, dtype);
  int64_t count = 1;
  for (int64_t d : reduction_dims("mean", self, dims)) count *= self.size(d);
  return sum_impl("mean", self, dims, keepdim, out, static_cast<double>(count));
}

Tensor prod_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = sum_dtype(self, dtype);
  const Rows r = make_rows("prod", self, dims, out_dtype);
  Tensor out = empty_tensor(r.out_shape, out_dtype, self.device());
  visit_dtype<dtypes::kAll>("prod", out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    T* dst = static_cast<T*>(out.data_ptr());
    auto mul = [](Acc a, Acc b) { return wrap_mul(a, b); };
    for_each_row<T>(
        r,
        [&](const T* p, int64_t n) {
          Acc acc = 1;
          for (int64_t i = 0; i < n; ++i) acc = mul(acc, static_cast<Acc>(p[i]));
          return acc;
        },
        mul, [&](int64_t i, Acc v) { dst[i] = cast_value<T>(v); });
  });
  return finish(out, self, r, keepdim);
}

// ---- logsumexp --------------------------------------------------------------------------------
// One pass per row (the composite, which the XPU runs, is eight: kernels/composite/reduce.cpp):
// the row's max m, then m + log(sum(exp(x - m))) with the vector exp (Note [Vector exp]). exp(x -
// m) <= 1 and the max's own term is 1, so where the vector exp clamps a very negative x - m (-inf
// among them) its tiny result is lost in the sum. A row whose max is not finite takes the
// composite's formula in scalars: a +inf max is taken out as 0 (the result is +inf), all -inf (or
// no element) gives -inf, NaN gives NaN. A part is (m, s): a long row cut into pieces per thread,
// or widened a block at a time, joins them as max(m1, m2) and the sums rescaled to it (a part of
// -inf only adds nothing).
template <class M>
struct LseAcc {
  M m = -std::numeric_limits<M>::infinity(), s = 0;
};
template <class M>
LseAcc<M> lse_part(const M* p, int64_t n) {
  const ECMap<M> x(p, n);
  // Eigen's plain maxCoeff (its NaN-propagating form was a sixth of the row's time at avx2) may
  // pass over a NaN; a finite m carries it into the sum (x - m is NaN, and stays NaN through the
  // clamp and the exp), and a row whose max is not finite is looked at in scalars.
  const M m = n ? x.maxCoeff() : -std::numeric_limits<M>::infinity();
  // As log_softmax_into's sum (kernels/cpu/unary_functors.h): x - m <= 0, the exp without its
  // edges (clamped at -87, where exp's value is lost in the max's own term of 1).
  if (std::isfinite(m)) return {m, (x - m).unaryExpr(VecExpUnderEdge<M>{}).sum()};
  if (m < 0 && !x.hasNaN()) return {};  // all -inf (or no element)
  const M c = std::isinf(m) ? M(0) : m;
  M s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(p[i] - c);
  return {c, s};
}
template <class M>
LseAcc<M> lse_join(const LseAcc<M>& a, const LseAcc<M>& b) {
  if (a.m < 0 && std::isinf(a.m)) return b;
  if (b.m < 0 && std::isinf(b.m)) return a;
  const M m = std::max(a.m, b.m);
  return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
}

Tensor logsumexp_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  constexpr const char* op = "logsumexp";
  const ScalarType dtype = is_floating_type(self.dtype()) ? self.dtype() : kFloat;
  const Rows r = make_rows(op, self, dims, dtype);
  Tensor out = empty_tensor(r.out_shape, dtype, self.device());
  visit_dtype<dtypes::kFloating>(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* dst = static_cast<T*>(out.data_ptr());
    auto store = [&](int64_t i, const LseAcc<M>& a) {
      dst[i] = cast_value<T>(static_cast<M>(a.m + std::log(a.s)));
    };
    if constexpr (std::is_same_v<T, M>) {
      for_each_row<T>(r, lse_part<M>, lse_join<M>, store);
    } else {  // float16, bfloat16: widened a block at a time, the blocks joined
      auto row = [](const T* p, int64_t n) {
        constexpr int64_t kBlock = 1024;
        alignas(64) M wide[kBlock];
        LseAcc<M> acc;
        for (int64_t b = 0; b < n; b += kBlock) {
          const int64_t k = std::min(kBlock, n - b);
          widen_n(p + b, wide, k);
          acc = lse_join(acc, lse_part<M>(wide, k));
        }
        return acc;
      };
      for_each_row<T>(r, row, lse_join<M>, store);
    }
  });
  return finish(out, self, r, keepdim);
}

// ---- extremes ---------------------------------------------------------------------------------
// NaN wins (it propagates, as in PyTorch); among equals the first index wins.
template <bool kMax, class M>
bool better(M candidate, M best) {
  if constexpr (!std::is_integral_v<M>) {
    if (best != best) return false;
    if (candidate != candidate) return true;
  }
  return kMax ? candidate > best : candidate < best;
}

template <bool kMax>
struct ValueOnly;

template <bool kMax>
struct ValueIndex {
  template <class T>
  static std::pair<opmath_t<T>, int64_t> row(const T* p, int64_t n) {
    using M = opmath_t<T>;
    if constexpr (std::is_floating_point_v<M> && VectorSteps<M>::template kLoads<T>) {
      // Float and double (and 16-bit types widened as loaded): the extreme with vector
      // accumulators (ValueOnly), then the first element equal to it (or the first NaN), a
      // second pass over a row still in cache; the compare and branch per element below ran
      // max(dim) at 0.60-0.65x libtorch's speed. Among equal values the first wins, as below; a
      // zero's sign is the first zero's.
      if (n >= VectorSteps<M>::kStep) {
        const M best = ValueOnly<kMax>::row(p, n);
        int64_t at = 0;
        if constexpr (std::is_same_v<T, M>) {
          if (best != best) {
            while (p[at] == p[at]) ++at;
          } else {
            while (p[at] != best) ++at;
          }
        } else {  // 16-bit: searched by bits (float16's scalar widening took 3 ms a [2048, 2048])
          const uint16_t* b = reinterpret_cast<const uint16_t*>(p);
          constexpr uint16_t kInf = std::is_same_v<T, BFloat16> ? 0x7f80 : 0x7c00;
          if (best != best) {
            while ((b[at] & 0x7fff) <= kInf) ++at;
          } else if (best == 0) {
            while ((b[at] & 0x7fff) != 0) ++at;
          } else {
            const T t = static_cast<T>(best);  // exact: best is one of the row's values
            uint16_t want;
            std::memcpy(&want, &t, sizeof want);
            while (b[at] != want) ++at;
          }
        }
        return {static_cast<M>(p[at]), at};
      }
    }
    M best = static_cast<M>(p[0]);
    int64_t at = 0;
    for (int64_t i = 1; i < n; ++i) {
      const M v = static_cast<M>(p[i]);
      if (better<kMax>(v, best)) {
        best = v;
        at = i;
      }
    }
    return {best, at};
  }
};

// ValueOnly's vector part for float and double: four accumulators of Eigen's NaN-propagating
// packet max/min (the compiler does not vectorize the scalar form's select) over the whole steps
// of a row of at least one step; returns how many elements it read and leaves its lanes in
// `lanes`.
template <class W, bool kMax>
struct LaneExtreme : VectorSteps<W> {
  using typename VectorSteps<W>::P;
  using VectorSteps<W>::kLanes;
  using VectorSteps<W>::kStep;

  static P pick(const P& a, const P& b) {
    if constexpr (kMax)
      return Eigen::internal::pmax<Eigen::PropagateNaN>(a, b);
    else
      return Eigen::internal::pmin<Eigen::PropagateNaN>(a, b);
  }
  // T: W, or a 16-bit type that VectorSteps::kLoads (widened exactly, so the same extreme).
  template <class T>
  static int64_t run(const T* p, int64_t n, W* lanes) {
    P a[4] = {LaneExtreme::load(p), LaneExtreme::load(p + kLanes),
              LaneExtreme::load(p + 2 * kLanes), LaneExtreme::load(p + 3 * kLanes)};
    const int64_t end = n / kStep * kStep;
    LaneExtreme::fold_steps(p, kStep, end, a, pick);
    Eigen::internal::pstoreu(lanes, pick(pick(a[0], a[1]), pick(a[2], a[3])));
    return end;
  }
};

// Values only (amax, amin, max(), min()): with no index to keep, a float or double row (or a
// bfloat16 or float16 one that lane_sum.h widens as it loads) is reduced with vector accumulators
// (ValueIndex's compare and branch per element ran amax over [2048, 2048] floats at 0.07-0.15x
// libtorch's speed on the host), other dtypes element by element; a long row is cut into a piece
// per thread. NaN still wins: a NaN candidate is taken, and nothing replaces a NaN accumulator
// (both comparisons with it are false). Among equal values only the sign of a zero can tell which
// one was kept; it may differ from the first one's (as in PyTorch's vectorized kernels).
template <bool kMax>
struct ValueOnly {
  template <class M>
  static bool take(M v, M best) {
    if constexpr (std::is_integral_v<M>)
      return kMax ? v > best : v < best;
    else
      return (kMax ? v > best : v < best) || v != v;
  }
  template <class T>
  static opmath_t<T> row(const T* p, int64_t n) {
    using M = opmath_t<T>;
    M best = static_cast<M>(p[0]);
    int64_t i = 1;
    if constexpr (std::is_floating_point_v<M> && VectorSteps<M>::template kLoads<T>) {
      using L = LaneExtreme<M, kMax>;
      if (n >= L::kStep) {
        M lanes[L::kLanes];
        i = L::run(p, n, lanes);
        best = lanes[0];
        for (int64_t k = 1; k < L::kLanes; ++k) best = take(lanes[k], best) ? lanes[k] : best;
      }
    }
    for (; i < n; ++i) {
      const M v = static_cast<M>(p[i]);
      best = take(v, best) ? v : best;
    }
    return best;
  }
};

// Writes the extreme value (and/or its index within the row) of every row.
template <bool kMax>
std::tuple<Tensor, Tensor, Rows> extremes(const char* op, const Tensor& self, IntArrayRef dims,
                                          bool want_values, bool want_indices) {
  Rows r = make_rows(op, self, dims, self.dtype());
  check_nonempty(op, self, r);
  Tensor values = want_values ? empty_tensor(r.out_shape, self.dtype(), self.device()) : Tensor();
  Tensor indices = want_indices ? empty_tensor(r.out_shape, kLong, self.device()) : Tensor();
  visit_dtype<dtypes::kAll>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* vdst = want_values ? static_cast<T*>(values.data_ptr()) : nullptr;
    int64_t* idst = want_indices ? static_cast<int64_t*>(indices.data_ptr()) : nullptr;
    const T* src = static_cast<const T*>(r.in.data_ptr());
    if (!idst) {  // values only: a long row is cut into a piece per thread (for_each_row)
      for_each_row<T>(
          r, [](const T* p, int64_t n) { return ValueOnly<kMax>::row(p, n); },
          [](M a, M b) { return ValueOnly<kMax>::take(b, a) ? b : a; },
          [&](int64_t i, M v) { vdst[i] = cast_value<T>(v); });
      return;
    }
    // Row by row (a single long row is not split: its index would need the piece's offset).
    parallel_for(r.outer, grain_for(r.inner), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const auto [v, at] = ValueIndex<kMax>::row(src + i * r.inner, r.inner);
        if (vdst) vdst[i] = cast_value<T>(static_cast<M>(v));
        idst[i] = at;
      }
    });
  });
  return {values, indices, std::move(r)};
}

template <bool kMax>
Tensor amax_impl(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim) {
  auto [values, indices, r] = extremes<kMax>(op, self, dims, true, false);
  return finish(values, self, r, keepdim);
}
Tensor amax_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  return amax_impl<true>("amax", self, dims, keepdim);
}
Tensor amin_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  return amax_impl<false>("amin", self, dims, keepdim);
}
Tensor max_kernel(const Tensor& self) {
  return amax_impl<true>("max", self, {}, false);
}
Tensor min_kernel(const Tensor& self) {
  return amax_impl<false>("min", self, {}, false);
}

template <bool kMax>
std::tuple<Tensor, Tensor> max_dim_impl(const char* op, const Tensor& self, int64_t dim,
                                        bool keepdim) {
  auto [values, indices, r] = extremes<kMax>(op, self, {dim}, true, true);
  return {finish(values, self, r, keepdim), finish(indices, self, r, keepdim)};
}
std::tuple<Tensor, Tensor> max_dim_kernel(const Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_impl<true>("max", self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min_dim_kernel(const Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_impl<false>("min", self, dim, keepdim);
}

template <bool kMax>
Tensor argmax_impl(const char* op, const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) {  // over the flattened tensor
    auto [values, indices, r] = extremes<kMax>(op, self.reshape({-1}), {}, false, true);
    if (!keepdim) return indices;
    return indices.view(DimVector(static_cast<size_t>(self.dim()), 1));
  }
  auto [values, indices, r] = extremes<kMax>(op, self, {*dim}, false, true);
  return finish(indices, self, r, keepdim);
}
Tensor argmax_kernel(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return argmax_impl<true>("argmax", self, dim, keepdim);
}
Tensor argmin_kernel(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return argmax_impl<false>("argmin", self, dim, keepdim);
}

// ---- all, any -------------------------------------------------------------------------------
template <bool kAll>
Tensor all_impl(const char* op, const Tensor& self, IntArrayRef dims, bool keepdim) {
  const Rows r = make_rows(op, self, dims, self.dtype());
  Tensor out = empty_tensor(r.out_shape, kBool, self.device());
  bool* dst = static_cast<bool*>(out.data_ptr());
  visit_dtype<dtypes::kAll>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    for_each_row<T>(
        r,
        [](const T* p, int64_t n) {
          for (int64_t i = 0; i < n; ++i)
            if ((static_cast<M>(p[i]) != M(0)) != kAll) return !kAll;
          return kAll;
        },
        [](bool a, bool b) { return kAll ? (a && b) : (a || b); },
        [&](int64_t i, bool v) { dst[i] = v; });
  });
  return finish(out, self, r, keepdim);
}
Tensor all_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  return all_impl<true>("all", self, dims, keepdim);
}
Tensor any_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  return all_impl<false>("any", self, dims, keepdim);
}

// ---- var, std -------------------------------------------------------------------------------
// Two passes per row in double: the mean, then the sum of squared deviations (stable for
// data far from zero, unlike sum(x^2) - n mean^2).
Tensor var_impl(const char* op, const Tensor& self, IntArrayRef dims, double correction,
                bool keepdim, bool take_sqrt) {
  check_var_dtype(op, self);
  const Rows r = make_rows(op, self, dims, self.dtype());
  Tensor out = empty_tensor(r.out_shape, self.dtype(), self.device());
  visit_dtype<dtypes::kFloating>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = static_cast<T*>(out.data_ptr());
    const T* src = static_cast<const T*>(r.in.data_ptr());
    parallel_for(r.outer, grain_for(r.inner), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* p = src + i * r.inner;
        const int64_t n = r.inner;
        const double mean = n ? pairwise_sum<double>(p, n) / static_cast<double>(n) : 0.0;
        double ss = 0;
        for (int64_t k = 0; k < n; ++k) {
          const double d = static_cast<double>(static_cast<opmath_t<T>>(p[k])) - mean;
          ss += d * d;
        }
        const double v = ss / std::max(0.0, static_cast<double>(n) - correction);
        dst[i] = cast_value<T>(take_sqrt ? std::sqrt(v) : v);
      }
    });
  });
  return finish(out, self, r, keepdim);
}
Tensor var_kernel(const Tensor& self, IntArrayRef dims, double correction, bool keepdim) {
  return var_impl("var", self, dims, correction, keepdim, false);
}
Tensor std_kernel(const Tensor& self, IntArrayRef dims, double correction, bool keepdim) {
  return var_impl("std", self, dims, correction, keepdim, true);
}

// ---- norm -----------------------------------------------------------------------------------
Tensor norm_kernel(const Tensor& self, const Scalar& p_scalar, IntArrayRef dims, bool keepdim) {
  check_norm_dtype(self);
  const double p = p_scalar.to<double>();
  const Rows r = make_rows("norm", self, dims, self.dtype());
  Tensor out = empty_tensor(r.out_shape, self.dtype(), self.device());
  visit_dtype<dtypes::kFloating>("norm", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* dst = static_cast<T*>(out.data_ptr());
    for_each_row<T>(
        r,
        [p](const T* x, int64_t n) {
          // Partial form: sum |x|^p, or the max/min |x| for p = +-inf, the count for p = 0.
          // p = 1 and 2: lane-wise pairwise sums (Note [Summation accuracy]) of float and double,
          // and of the 16-bit types LaneSum loads (widened in registers).
          if constexpr (LaneSum<M>::template kLoads<T>) {
            if (p == 2) return LaneSum<M, LaneSquare>::sum(x, n);
            if (p == 1) return LaneSum<M, LaneAbs>::sum(x, n);
          }
          M acc = std::isinf(p) && p < 0 ? std::numeric_limits<M>::infinity() : M(0);
          for (int64_t i = 0; i < n; ++i) {
            const M a = std::abs(static_cast<M>(x[i]));
            if (std::isinf(p))
              acc = (a != a) ? a : (p > 0 ? std::max(acc, a) : std::min(acc, a));
            else if (p == 0)
              acc += a != 0;
            else if (p == 1)
              acc += a;
            else if (p == 2)
              acc += a * a;
            else
              acc += std::pow(a, static_cast<M>(p));
          }
          return acc;
        },
        [p](M a, M b) { return std::isinf(p) ? (p > 0 ? std::max(a, b) : std::min(a, b)) : a + b; },
        [&](int64_t i, M v) {
          const M res = (std::isinf(p) || p == 0 || p == 1) ? v
                        : p == 2                            ? std::sqrt(v)
                                                            : std::pow(v, static_cast<M>(1.0 / p));
          dst[i] = cast_value<T>(res);
        });
  });
  return finish(out, self, r, keepdim);
}

// ---- cumulative -----------------------------------------------------------------------------
template <bool kProd>
Tensor scan_impl(const char* op, const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = sum_dtype(self, dtype);
  if (self.dim() == 0) return self.to(out_dtype, /*copy=*/true);
  const int64_t d = wrap_dim(op, dim, self.dim());
  Tensor moved = self.to(out_dtype).transpose(d, -1).contiguous();
  Tensor out = empty_tensor(moved.sizes(), out_dtype, self.device());
  const int64_t n = moved.dim() ? moved.size(-1) : 1;
  const int64_t rows = n ? moved.numel() / n : 0;
  visit_dtype<dtypes::kAllButBool>(op, out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Floating scans accumulate in double (PyTorch's CPU accumulation type), integers wrap.
    using Acc = std::conditional_t<std::is_integral_v<T>, T, double>;
    const T* src = static_cast<const T*>(moved.data_ptr());
    T* dst = static_cast<T*>(out.data_ptr());
    // Note [Scans of rows side by side]: a row's scan is one chain of dependent adds (4 cycles
    // each in double), so kScanRows rows are scanned together, element k of each in turn: as
    // many independent chains, each row's sums in the same order as alone (the same values).
    // Not for 16-bit floats, whose scalar rounding per element made the interleaved loop slower
    // (one VM thread, [2048, 2048] bfloat16: 5.0 -> 8.1 ms), against float32's 3.8 -> 3.3.
    constexpr int64_t kScanRows = 8;
    constexpr bool kSideBySide = sizeof(T) >= 4;
    auto step = [](Acc acc, T x) {
      const Acc v = static_cast<Acc>(static_cast<opmath_t<T>>(x));
      return kProd ? wrap_mul(acc, v) : wrap_add(acc, v);
    };
    parallel_for(rows, grain_for(n), [&](int64_t b, int64_t e) {
      int64_t i = b;
      for (; kSideBySide && i + kScanRows <= e; i += kScanRows) {
        Acc acc[kScanRows];
        for (int64_t r = 0; r < kScanRows; ++r) acc[r] = kProd ? Acc(1) : Acc(0);
        const T* in = src + i * n;
        T* o = dst + i * n;
        for (int64_t k = 0; k < n; ++k)
          for (int64_t r = 0; r < kScanRows; ++r) {
            acc[r] = step(acc[r], in[r * n + k]);
            o[r * n + k] = cast_value<T>(acc[r]);
          }
      }
      for (; i < e; ++i) {
        Acc acc = kProd ? Acc(1) : Acc(0);
        for (int64_t k = 0; k < n; ++k) {
          acc = step(acc, src[i * n + k]);
          dst[i * n + k] = cast_value<T>(acc);
        }
      }
    });
  });
  return out.transpose(d, -1).contiguous();
}
Tensor cumsum_kernel(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<false>("cumsum", self, dim, dtype);
}
Tensor cumprod_kernel(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  return scan_impl<true>("cumprod", self, dim, dtype);
}

}  // namespace

XTEN_CPU_KERNELS(reduce, m) {
  m.impl("sum.dim_IntList", sum_kernel);
  m.impl("mean.dim", mean_kernel);
  m.impl("prod.dim_IntList", prod_kernel);
  m.impl("amax", amax_kernel);
  m.impl("amin", amin_kernel);
  m.impl("max", max_kernel);
  m.impl("min", min_kernel);
  m.impl("max.dim", max_dim_kernel);
  m.impl("min.dim", min_dim_kernel);
  m.impl("argmax", argmax_kernel);
  m.impl("argmin", argmin_kernel);
  m.impl("all.dims", all_kernel);
  m.impl("any.dims", any_kernel);
  m.impl("var.correction", var_kernel);
  m.impl("std.correction", std_kernel);
  m.impl("norm.ScalarOpt_dim", norm_kernel);
  m.impl("logsumexp", logsumexp_kernel);
  m.impl("cumsum", cumsum_kernel);
  m.impl("cumprod", cumprod_kernel);
}

}  // namespace xten::cpu
