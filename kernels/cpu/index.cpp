// Indexing on CPU: index_select, gather, scatter (src or value, optionally adding),
// nonzero, masked_select, sort and topk, the row writes behind index_put_, and cat of contiguous
// parts. Copies move raw elements (any dtype, no conversion); only the adding forms and sorting
// need types. The rest of the family (cat's other layouts, stack, flip, roll, repeat, tril, triu,
// embedding, one_hot, masked_fill, index, index_put_, argsort, pad) is written with these in
// kernels/composite/index.cpp.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/common/reduce_rows.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/raw_elements.h>

namespace xten::cpu {
namespace {

// Note [Index checks in the copy]: index_select checks (and wraps) each row's index as the row is
// copied, inside the threads' loop, instead of in passes before it. The passes (the range check,
// then a copy of the indices with negatives wrapped) ran on the calling thread for fewer than
// kParallelGrain indices: for embedding's 8,192 rows of 2 KB they were about a tenth of the op's
// time at 16 threads on the benchmark host, where the copy itself takes about 0.2 ms. A bad
// index is not read; the rows after it are still copied into the new tensor, which the IndexError
// (naming the first bad index in order, as the passes did) then discards.
Tensor index_select_kernel(const Tensor& self, int64_t dim, const Tensor& index) {
  check_index_select_index(index);
  const Tensor s = self.dim() == 0 ? self.reshape({1}) : self;
  const int64_t d = wrap_dim("index_select", dim, s.dim());
  const Tensor flat = index_as_long("index_select", index);
  const int64_t* idx = static_cast<const int64_t*>(flat.data_ptr());
  // Rows: dims before d (outer) x selected (k) x dims after d (inner block, contiguous).
  const Tensor x = s.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < d; ++i) outer *= s.size(i);
  for (int64_t i = d + 1; i < s.dim(); ++i) inner *= s.size(i);
  const int64_t n = s.size(d), k = flat.numel();
  // No rows to copy: the indices are still checked.
  if (outer == 0) check_index_range("index_select", flat, n, d);
  DimVector shape(s.sizes());
  shape[d] = k;
  Tensor out = empty_tensor(shape, self.dtype(), self.device());
  const size_t block = static_cast<size_t>(inner) * self.element_size();
  const char* src = static_cast<const char*>(x.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  std::atomic<int64_t> first_bad{k};
  // kBytes: the row's size where it is one of a few small ones (a constant, so the copy is a
  // move or two, not a call of memcpy: index_select of a vector or of rows of four floats was
  // mostly those calls), else 0 and the size is `block`.
  auto copy_rows = [&](auto kBytes) {
    const size_t bytes = kBytes ? kBytes() : block;
    parallel_for(outer * k, grain_for(inner), [&](int64_t b, int64_t e) {
      // Row r is (o, j) = (r / k, r % k), stepped rather than divided per row.
      int64_t o = b / k, j = b % k;
      for (int64_t r = b; r < e; ++r) {
        int64_t i = idx[j];
        if (i < 0 && i >= -n) i += n;
        if (static_cast<uint64_t>(i) < static_cast<uint64_t>(n)) {
          std::memcpy(dst + r * bytes, src + (o * n + i) * bytes, bytes);
        } else {
          int64_t seen = first_bad.load(std::memory_order_relaxed);
          while (j < seen && !first_bad.compare_exchange_weak(seen, j)) {
          }
        }
        if (++j == k) j = 0, ++o;
      }
    });
  };
  switch (block) {
    case 1:
      copy_rows(std::integral_constant<size_t, 1>{});
      break;
    case 2:
      copy_rows(std::integral_constant<size_t, 2>{});
      break;
    case 4:
      copy_rows(std::integral_constant<size_t, 4>{});
      break;
    case 8:
      copy_rows(std::integral_constant<size_t, 8>{});
      break;
    case 16:
      copy_rows(std::integral_constant<size_t, 16>{});
      break;
    default:
      copy_rows(std::integral_constant<size_t, 0>{});
  }
  if (first_bad.load() < k) raise_index_out_of_range("index_select", idx[first_bad.load()], d, n);
  return self.dim() == 0 && index.dim() == 0 ? out.reshape({}) : out;
}

// Offsets, in elements, of every position of `shape` in a tensor of `strides`; along `dim`
// the coordinate comes from `along` (one value per position) instead.
template <class F>
void for_each_position(IntArrayRef shape, const F& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  for (int64_t p = 0; p < n; ++p) {
    f(p, idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// Where line l of an index of sizes `isizes` along dim d (its positions with dim d's coordinate
// running, the others fixed) starts: as offsets into two strided tensors a and b, and as a
// row-major position p in the index. Lines are what gather and scatter run in parallel.
struct LineStart {
  int64_t a = 0, b = 0, p = 0;
};
LineStart line_start(int64_t l, int64_t d, IntArrayRef isizes, IntArrayRef astride,
                     IntArrayRef bstride) {
  LineStart s;
  int64_t rest = l, step = 1;
  for (int64_t k = static_cast<int64_t>(isizes.size()) - 1; k >= 0; --k) {
    if (k != d) {
      const int64_t at = rest % isizes[k];
      rest /= isizes[k];
      s.a += at * astride[k];
      s.b += at * bstride[k];
      s.p += at * step;
    }
    step *= isizes[k];
  }
  return s;
}

// Note [Indices read as they are]: whether all n indices are in [0, size). gather and scatter
// then use them as they are; otherwise the range is checked (check_index_range raises the
// IndexError naming the first bad index, before anything is read or written: a dim of size 0
// has no element to stand in) and each index is wrapped. Wrapping each costs little in
// instructions, but the random read's address then waits on the compare and select, fewer reads
// are in flight, and gather of a [2048, 64] index from a [2048, 2048] float matrix took 1.5x as
// long (one thread on the VM: 570 against 385 us). The check reads 8 indices an instruction at
// the avx512 level.
[[gnu::target("avx512f")]] static bool all_in_range_avx512(const int64_t* p, int64_t n,
                                                           int64_t size) {
  const __m512i limit = _mm512_set1_epi64(size);
  __mmask8 out = 0;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) out |= _mm512_cmpge_epu64_mask(_mm512_loadu_si512(p + k), limit);
  for (; k < n; ++k) out |= static_cast<uint64_t>(p[k]) >= static_cast<uint64_t>(size);
  return out == 0;
}
bool all_in_range(const int64_t* p, int64_t n, int64_t size) {
  static const bool avx512 = cpu_capability() == CpuCapability::Avx512;
  std::atomic<bool> ok{true};
  parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
    bool here = true;
    if (avx512) {
      here = all_in_range_avx512(p + b, e - b, size);
    } else {
      for (int64_t k = b; k < e; ++k)
        here &= static_cast<uint64_t>(p[k]) < static_cast<uint64_t>(size);
    }
    if (!here) ok = false;
  });
  return ok;
}

Tensor gather_kernel(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = wrap_dim("gather", dim, self.dim());
  if (self.dim() == 0) return index_select_kernel(self, 0, index);
  check_gather_shapes("gather", self, d, index, nullptr);
  const Tensor idx = index_as_long("gather", index);
  Tensor out = empty_tensor(index.sizes(), self.dtype(), self.device());
  if (index.numel() == 0) return out;
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  const int64_t size = self.size(d);
  const bool as_they_are = all_in_range(ip, index.numel(), size);
  if (!as_they_are) check_index_range("gather", idx, size, d);  // negatives pass, wrapped below
  const IntArrayRef isizes = index.sizes();
  const int64_t len = isizes[d], lines = index.numel() / len;
  int64_t inner = 1;  // row-major step of dim d in the index (and in out)
  for (int64_t k = d + 1; k < index.dim(); ++k) inner *= isizes[k];
  visit_element_size("gather", self.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(self.data_ptr());
    U* dst = static_cast<U*>(out.data_ptr());
    const int64_t step = self.stride(d);
    // A pick is a random read, worth several elements of a streaming op: grain_for(len) gave a
    // [2048, 64] index 4 tasks, and 16 threads ran it at 0.37x libtorch's speed.
    parallel_for(lines, grain_for(8 * len), [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        const LineStart at = line_start(l, d, isizes, out.strides(), self.strides());
        U* o = dst + at.a;
        const U* row = src + at.b;
        const int64_t* ix = ip + at.p;
        if (as_they_are) {  // Note [Indices read as they are]
          for (int64_t t = 0; t < len; ++t) o[t * inner] = row[ix[t * inner] * step];
        } else {
          for (int64_t t = 0; t < len; ++t)
            o[t * inner] = row[wrap_index(ix[t * inner], size) * step];
        }
      }
    });
  });
  return out;
}

// scatter(_add) whose index repeats one line along dim d over every other dim (stride 0 there,
// as the gradient of index_select and embedding makes it: index.view(...).expand(...)), with
// src of the index's shape and an output of the index's shape but along d: whole blocks of
// `inner` elements move, out[o, idx[t], :] (+)= src[o, t, :]. Tasks own blocks of destination
// rows and scan every t in order, so each destination adds in the serial order at any thread
// count. Returns false where the index is not such a line.
bool scatter_rows(const char* op, Tensor& out, int64_t d, const Tensor& index, const Tensor& src,
                  bool add) {
  if (!out.is_contiguous() || src.sizes() != index.sizes()) return false;
  for (int64_t k = 0; k < index.dim(); ++k)
    if (k != d && (index.size(k) != out.size(k) || (index.stride(k) != 0 && index.size(k) != 1)))
      return false;
  Tensor line = index;
  for (int64_t k = 0; k < index.dim(); ++k)
    if (k != d) line = line.narrow(k, 0, 1);
  const std::vector<int64_t> idx = index_values(op, line, out.size(d), d);
  const Tensor s = src.contiguous();
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= out.size(k);
  for (int64_t k = d + 1; k < out.dim(); ++k) inner *= out.size(k);
  const int64_t rows = out.size(d), len = index.size(d);
  const int64_t blocks = std::min<int64_t>(
      rows, std::max<int64_t>(1, 4 * get_num_threads() / std::max<int64_t>(outer, 1)));
  const int64_t per_block = (rows + blocks - 1) / blocks;
  visit_dtype<dtypes::kAll>(op, out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* sp = static_cast<const T*>(s.data_ptr());
    T* op_ = static_cast<T*>(out.data_ptr());
    parallel_for(outer * blocks, 1, [&](int64_t b, int64_t e) {
      for (int64_t task = b; task < e; ++task) {
        const int64_t o = task / blocks, lo = task % blocks * per_block,
                      hi = std::min(rows, lo + per_block);
        for (int64_t t = 0; t < len; ++t) {
          if (idx[t] < lo || idx[t] >= hi) continue;
          T* to = op_ + (o * rows + idx[t]) * inner;
          const T* from = sp + (o * len + t) * inner;
          if (add)
            for (int64_t j = 0; j < inner; ++j)
              to[j] = cast_value<T>(wrap_add(static_cast<M>(to[j]), static_cast<M>(from[j])));
          else
            std::copy(from, from + inner, to);
        }
      }
    });
  });
  return true;
}

// out = self with out[... index[p] ...] = src[p] (or += when adding), along dim.
Tensor scatter_impl(const char* op, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& src, bool add) {
  const int64_t d = wrap_dim(op, dim, self.dim());
  check_scatter_src(op, self, src);
  Tensor out = self.clone();
  if (self.dim() == 0) return out;
  check_gather_shapes(op, self, d, index, &src);  // an empty index too (its shape can be wrong)
  if (index.numel() == 0 || scatter_rows(op, out, d, index, src, add)) return out;
  const Tensor idx = index_as_long(op, index);
  const int64_t* ip = static_cast<const int64_t*>(idx.data_ptr());
  const int64_t size = self.size(d);
  const bool as_they_are = all_in_range(ip, index.numel(), size);
  if (!as_they_are) check_index_range(op, idx, size, d);  // negatives pass, wrapped below
  visit_dtype<dtypes::kAll>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* s = static_cast<const T*>(src.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    const int64_t ostep = out.stride(d), sstep = src.stride(d);
    // Lines along dim d: index positions that differ in another dim write different output
    // elements, so lines run in parallel; each line runs in order, as a serial loop would, so
    // scatter_add's sums are the same for any thread count.
    const IntArrayRef isizes = index.sizes();
    const int64_t len = isizes[d];
    int64_t inner = 1;  // row-major step of dim d in the index
    for (int64_t k = d + 1; k < self.dim(); ++k) inner *= isizes[k];
    const int64_t lines = index.numel() / len;
    parallel_for(lines, grain_for(len), [&](int64_t b, int64_t e) {
      for (int64_t l = b; l < e; ++l) {
        const LineStart at = line_start(l, d, isizes, out.strides(), src.strides());
        for (int64_t t = 0; t < len; ++t) {
          const int64_t i = ip[at.p + t * inner];  // Note [Indices read as they are]
          const int64_t off = at.a + (as_they_are ? i : wrap_index(i, size)) * ostep;
          const int64_t soff = at.b + t * sstep;
          if (add)
            o[off] = cast_value<T>(
                wrap_add(static_cast<opmath_t<T>>(o[off]), static_cast<opmath_t<T>>(s[soff])));
          else
            o[off] = s[soff];
        }
      }
    });
  });
  return out;
}

Tensor scatter_src_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_impl("scatter", self, dim, index, src, false);
}
Tensor scatter_value_kernel(const Tensor& self, int64_t dim, const Tensor& index,
                            const Scalar& value) {
  return scatter_impl("scatter", self, dim, index, full(index.sizes(), value, self.options()),
                      false);
}
Tensor scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  check_scatter_add_dtype(self);
  return scatter_impl("scatter_add", self, dim, index, src, true);
}

// Note [Selecting in chunks]: nonzero and masked_select write, in order, one output row per
// element that passes a test. Over chunks of kSelectChunk elements, in parallel: each chunk
// counts its passing elements (branch-free, vectorized), a prefix sum of the counts gives each
// chunk the first row it writes, and each chunk then writes its rows without a branch on the
// test: every element is stored at the next row, and the row advances only for a passing one.
// The chunk stops when its rows are full, so it never stores into the next chunk's rows. One
// thread walking every element with a branch (and, for nonzero, for_each_position's index vector)
// ran nonzero of a random [2048, 2048] bool tensor at 0.06x libtorch's speed at 16 threads and
// 0.58x at one, masked_select at 0.74-0.78x at 16.
constexpr int64_t kSelectChunk = 1 << 16;
// first[c]: the first row of chunk c (first[chunks]: the total); count(b, e) counts [b, e).
template <class Count>
std::vector<int64_t> chunk_rows(int64_t n, const Count& count) {
  const int64_t chunks = (n + kSelectChunk - 1) / kSelectChunk;
  std::vector<int64_t> first(chunks + 1, 0);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c)
      first[c + 1] = count(c * kSelectChunk, std::min(n, (c + 1) * kSelectChunk));
  });
  std::partial_sum(first.begin(), first.end(), first.begin());
  return first;
}

Tensor nonzero_kernel(const Tensor& self) {
  const Tensor x = self.contiguous();
  const int64_t n = x.numel(), d = x.dim();
  Tensor out;
  visit_dtype<dtypes::kAll>("nonzero", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* p = static_cast<const T*>(x.data_ptr());
    // NaN is nonzero (`!=`), as in PyTorch.
    const std::vector<int64_t> first = chunk_rows(n, [p](int64_t b, int64_t e) {
      int64_t k = 0;
      for (int64_t i = b; i < e; ++i) k += static_cast<M>(p[i]) != M(0);
      return k;
    });
    out = empty_tensor({first.back(), d}, kLong, self.device());
    int64_t* o = static_cast<int64_t*>(out.data_ptr());
    const IntArrayRef sizes = x.sizes();
    parallel_for(static_cast<int64_t>(first.size()) - 1, 1, [&](int64_t b, int64_t e) {
      std::vector<int64_t> at(static_cast<size_t>(d));
      for (int64_t c = b; c < e; ++c) {
        const int64_t start = c * kSelectChunk, end = std::min(n, start + kSelectChunk);
        for (int64_t k = d - 1, rest = start; k >= 0; --k) {  // start's coordinates
          at[k] = rest % sizes[k];
          rest /= sizes[k];
        }
        int64_t* row = o + first[c] * d;
        int64_t* const full = o + first[c + 1] * d;
        for (int64_t i = start; i < end && row != full; ++i) {
          std::copy(at.begin(), at.end(), row);
          row += d * (static_cast<M>(p[i]) != M(0));
          for (int64_t k = d - 1; k >= 0 && ++at[k] == sizes[k]; --k) at[k] = 0;  // next
        }
      }
    });
  });
  return out;
}

// masked_select's copy (Note [Selecting in chunks]), typed by element size; first is chunk_rows'
// count of the mask.
template <class E>
void masked_copy(const E* src, const bool* mask, E* dst, int64_t n,
                 const std::vector<int64_t>& first) {
  parallel_for(static_cast<int64_t>(first.size()) - 1, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t start = c * kSelectChunk, end = std::min(n, start + kSelectChunk);
      E* row = dst + first[c];
      E* const full = dst + first[c + 1];
      for (int64_t i = start; i < end && row != full; ++i) {
        *row = src[i];
        row += mask[i];
      }
    }
  });
}

Tensor masked_select_kernel(const Tensor& self, const Tensor& mask) {
  check_masked_select_mask(mask);
  const DimVector shape = broadcast_shapes("masked_select", self.sizes(), mask.sizes());
  const Tensor x = self.expand(shape).contiguous(), m = mask.expand(shape).contiguous();
  const bool* mp = static_cast<const bool*>(m.data_ptr());
  const int64_t n = m.numel();
  // One parallel count sizes the output and places each chunk's rows.
  const std::vector<int64_t> first =
      chunk_rows(n, [mp](int64_t b, int64_t e) { return std::count(mp + b, mp + e, true); });
  Tensor out = empty_tensor({first.back()}, self.dtype(), self.device());
  visit_element_size("masked_select", self.element_size(), [&](auto tag) {
    using E = typename decltype(tag)::type;
    masked_copy(static_cast<const E*>(x.data_ptr()), mp, static_cast<E*>(out.data_ptr()), n, first);
  });
  return out;
}

// Sorting and topk over rows with the dim innermost. NaN counts as larger than everything
// (sorted last ascending, first descending), as in PyTorch.
template <class M>
bool less_nan_last(M a, M b) {
  if constexpr (!std::is_integral_v<M>) {
    if (b != b) return a == a;
    if (a != a) return false;
  }
  return a < b;
}

// Note [Sorting packed keys]: a full sort of float values (float32, bfloat16, float16) sorts one
// uint64 per element, its value's order-preserving 32 bits above its position: integer compares
// on contiguous keys instead of a comparator reading the values through an index (0.80-0.86x
// libtorch on [1024, 1024]). The position breaks ties, so equal values keep their order (stable,
// as std::stable_sort); every NaN takes the largest key and -0.0 the key of +0.0, so NaN sorts
// last (first when descending) and the zeros compare equal, as less_nan_last has them.
// Descending sorts the complemented value bits, still above the position.
uint32_t ascending_key(float a) {
  if (a != a) return 0xffffffffu;
  if (a == 0.0f) return 0x80000000u;
  uint32_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}
template <class T>
void sort_row_by_keys(const T* x, int64_t n, bool descending, std::vector<uint64_t>& keys,
                      T* values, int64_t* indices) {
  keys.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t key = ascending_key(static_cast<float>(x[i]));
    keys[static_cast<size_t>(i)] =
        (static_cast<uint64_t>(descending ? ~key : key) << 32) | static_cast<uint64_t>(i);
  }
  std::sort(keys.begin(), keys.end());
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = static_cast<int64_t>(keys[static_cast<size_t>(j)] & 0xffffffffu);
    values[j] = x[i];
    indices[j] = i;
  }
}

// Note [Top k in one pass]: for k up to kTopKOnePass, a row's best k are kept in a buffer in the
// stable sort's order (best first; among equal values the earlier position first, NaN the largest),
// and an element enters only when it comes before the buffer's last, the threshold. On random data
// that is about k ln(n / k) insertions a row, so the scan tests 16 elements at a time against the
// threshold with one branch-free comparison each (a > t, NaN included, for the largest; a < t for
// the smallest, while t is a number) and looks closer only at a block holding an entrant. The
// partial_sort over an index vector (an iota per row, every comparison through the index) took
// 1.14x libtorch's time for topk 5 of [4096, 1000] floats; the buffer tested element by element
// with less_nan_last's branches was slower still (bench/README.md, "bench_sweep"). The XPU's
// topk_rows keeps the same order, so both devices give the same indices; a larger k takes the
// partial sort, whose comparison breaks ties by position to the same end.
constexpr int64_t kTopKOnePass = 16;
template <class T, class M>
void top_k_row(const T* x, int64_t n, int64_t k, bool largest,
               std::vector<std::pair<M, int64_t>>& best, T* values, int64_t* indices) {
  // a strictly before b: larger first when `largest`, NaN the largest of all.
  const auto before = [largest](M a, M b) {
    return largest ? less_nan_last(b, a) : less_nan_last(a, b);
  };
  // Keeps a (at position i), known to enter: after every kept element that a does not come
  // before, so the earlier position wins ties.
  const auto place = [&](M a, int64_t i) {
    const auto at = std::upper_bound(best.begin(), best.end(), a, [&](M v, const auto& e) {
                      return before(v, e.first);
                    }) - best.begin();
    if (static_cast<int64_t>(best.size()) == k) best.pop_back();
    best.insert(best.begin() + at, {a, i});
  };
  const auto insert = [&](int64_t i) {
    const M a = static_cast<M>(x[i]);
    if (static_cast<int64_t>(best.size()) < k || before(a, best.back().first)) place(a, i);
  };
  best.clear();
  int64_t i = 0;
  for (; i < n && static_cast<int64_t>(best.size()) < k; ++i) insert(i);
  // While t is a number, a comes before it in one comparison.
  const auto enters = [largest](M a, M t) { return largest ? !(a <= t) : a < t; };
  while (i < n) {
    M t = best.back().first;
    const int64_t end = std::min(n, i + 16);
    if (t != t) {  // a NaN among the smallest k: element by element
      for (; i < end; ++i) insert(i);
      continue;
    }
    unsigned any = 0;
    if (largest) {
      for (int64_t j = i; j < end; ++j) any |= !(static_cast<M>(x[j]) <= t);
    } else {
      for (int64_t j = i; j < end; ++j) any |= static_cast<M>(x[j]) < t;
    }
    if (!any) {
      i = end;
      continue;
    }
    for (; i < end && t == t; ++i) {
      const M a = static_cast<M>(x[i]);
      if (!enters(a, t)) continue;
      place(a, i);  // enters is before's answer while t is a number
      t = best.back().first;
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    values[j] = x[best[static_cast<size_t>(j)].second];
    indices[j] = best[static_cast<size_t>(j)].second;
  }
}

std::tuple<Tensor, Tensor> sort_rows(const char* op, const Tensor& self, int64_t dim,
                                     bool descending, int64_t k, bool sorted) {
  const SortRows m = sort_rows_meta(op, self, dim, k);
  if (m.zero_dim) return m.finish();
  const Tensor &rows_in = m.rows_in, &values = m.values, &indices = m.indices;
  const int64_t n = m.n, rows = m.rows;
  visit_dtype<dtypes::kAll>(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const T* src = static_cast<const T*>(rows_in.data_ptr());
    T* vdst = static_cast<T*>(values.data_ptr());
    int64_t* idst = static_cast<int64_t*>(indices.data_ptr());
    parallel_for(rows, grain_for(n), [&](int64_t b, int64_t e) {
      if constexpr (std::is_same_v<M, float>) {
        if (k == n && n <= int64_t{0xffffffff}) {  // Note [Sorting packed keys]
          std::vector<uint64_t> keys;
          for (int64_t r = b; r < e; ++r)
            sort_row_by_keys(src + r * n, n, descending, keys, vdst + r * n, idst + r * n);
          return;
        }
      }
      if (k > 0 && k < n && k <= kTopKOnePass) {  // Note [Top k in one pass]
        std::vector<std::pair<M, int64_t>> best;
        best.reserve(static_cast<size_t>(k));
        for (int64_t r = b; r < e; ++r)
          top_k_row(src + r * n, n, k, descending, best, vdst + r * k, idst + r * k);
        return;
      }
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = b; r < e; ++r) {
        const T* x = src + r * n;
        std::iota(order.begin(), order.end(), 0);
        // Equal values by position, so that topk's partial sort gives the stable sort's order too.
        auto cmp = [&](int64_t i, int64_t j) {
          const M a = static_cast<M>(x[i]), c = static_cast<M>(x[j]);
          const bool ij = descending ? less_nan_last(c, a) : less_nan_last(a, c);
          const bool ji = descending ? less_nan_last(a, c) : less_nan_last(c, a);
          return ij || (!ji && i < j);
        };
        if (k == n)
          std::stable_sort(order.begin(), order.end(), cmp);
        else if (sorted)
          std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
        else
          std::nth_element(order.begin(), order.begin() + k, order.end(), cmp);
        for (int64_t j = 0; j < k; ++j) {
          vdst[r * k + j] = x[order[j]];
          idst[r * k + j] = order[j];
        }
      }
    });
  });
  return m.finish();
}

std::tuple<Tensor, Tensor> sort_kernel(const Tensor& self, int64_t dim, bool descending) {
  return sort_rows("sort", self, dim, descending,
                   self.dim() ? self.size(wrap_dim("sort", dim, self.dim())) : 1, true);
}
std::tuple<Tensor, Tensor> topk_kernel(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                       bool sorted) {
  return sort_rows("topk", self, dim, largest, k, sorted);
}

// self[index[j], ...] = values[j, ...] along dim 0 (+= when accumulating), for index_put_.
Tensor index_put_rows_kernel(const Tensor& self, const Tensor& index, const Tensor& values,
                             bool accumulate) {
  XTEN_CHECK(self.dim() >= 1 && index.dim() == 1, ValueError, "index_put_",
             "internal row layout expected");
  const std::vector<int64_t> idx = index_values("index_put_", index, self.size(0), 0);
  DimVector vshape(self.sizes());
  vshape[0] = static_cast<int64_t>(idx.size());
  const Tensor v = values.to(self.dtype()).expand(vshape).contiguous();
  XTEN_CHECK(self.is_contiguous(), ValueError, "index_put_", "internal: rows must be contiguous");
  const int64_t rows = self.size(0), inner = self.numel() / std::max<int64_t>(rows, 1);
  const int64_t n = static_cast<int64_t>(idx.size());
  // Tasks own blocks of destination rows and each scans every j in order, so a row picked twice
  // gets its values in the serial order at any thread count (the sums bit for bit; the last
  // write wins without accumulate). embedding's and index_select's gradients come here.
  const int64_t blocks =
      n * inner < kParallelGrain ? 1 : std::min<int64_t>(rows, 4 * get_num_threads());
  const int64_t per_block = (rows + blocks - 1) / blocks;
  visit_dtype<dtypes::kAll>("index_put_", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    T* dst = static_cast<T*>(self.data_ptr());
    const T* src = static_cast<const T*>(v.data_ptr());
    parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
      const int64_t lo = b * per_block, hi = std::min(rows, e * per_block);
      for (int64_t j = 0; j < n; ++j) {
        if (idx[j] < lo || idx[j] >= hi) continue;
        T* o = dst + idx[j] * inner;
        const T* from = src + j * inner;
        if (accumulate)
          for (int64_t i = 0; i < inner; ++i)
            o[i] = cast_value<T>(wrap_add(static_cast<M>(o[i]), static_cast<M>(from[i])));
        else
          std::copy(from, from + inner, o);
      }
    });
  });
  return self;
}

// cat: where every part is contiguous and of the output's dtype, one pass over the output in
// memory order: its rows (the dims before `dim`) each hold the parts' runs in turn. The copy per
// part (cat_by_copies, which the composite and other layouts take) wrote each part's strided
// slice of the output in a pass of its own: cat along dim 1 of four [512, 2048] was 0.75x
// libtorch at one thread. Threads take equal spans of the output's bytes, wherever the rows and
// runs fall (one row, as a cat along dim 0, is cut among them too).
Tensor cat_kernel(const std::vector<Tensor>& tensors, int64_t dim) {
  const CatMeta m = cat_meta(tensors, dim);
  bool direct = !m.parts.empty();
  for (const Tensor* t : m.parts) direct = direct && t->dtype() == m.dtype && t->is_contiguous();
  if (!direct) return cat_by_copies(m);
  Tensor out = empty(m.shape, m.dtype, m.device);
  int64_t inner = 1;
  for (size_t k = static_cast<size_t>(m.dim) + 1; k < m.shape.size(); ++k) inner *= m.shape[k];
  const size_t elt = element_size(m.dtype);
  const size_t row = static_cast<size_t>(m.shape[static_cast<size_t>(m.dim)] * inner) * elt;
  if (out.numel() == 0) return out;
  std::vector<const char*> src;
  std::vector<size_t> bytes, start;  // each part's bytes per row and offset within a row
  size_t offset = 0;
  for (const Tensor* t : m.parts) {
    src.push_back(static_cast<const char*>(t->data_ptr()));
    bytes.push_back(static_cast<size_t>(t->size(m.dim) * inner) * elt);
    start.push_back(offset);
    offset += bytes.back();
  }
  char* dst = static_cast<char*>(out.data_ptr());
  parallel_for(out.numel(), kParallelGrain, [&](int64_t b, int64_t e) {
    size_t o = static_cast<size_t>(b) * elt;
    const size_t end = static_cast<size_t>(e) * elt;
    while (o < end) {
      const size_t r = o / row, w = o % row;
      // The part whose run holds w: the last that starts at or before it (an empty part
      // starts where the next one does and is passed over).
      const size_t i =
          static_cast<size_t>(std::upper_bound(start.begin(), start.end(), w) - start.begin()) - 1;
      const size_t n = std::min(end - o, bytes[i] - (w - start[i]));
      std::memcpy(dst + o, src[i] + r * bytes[i] + (w - start[i]), n);
      o += n;
    }
  });
  return out;
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("cat", cat_kernel);
  m.impl("index_select", index_select_kernel);
  m.impl("gather", gather_kernel);
  m.impl("scatter.src", scatter_src_kernel);
  m.impl("scatter.value", scatter_value_kernel);
  m.impl("scatter_add", scatter_add_kernel);
  m.impl("nonzero", nonzero_kernel);
  m.impl("masked_select", masked_select_kernel);
  m.impl("sort", sort_kernel);
  m.impl("topk", topk_kernel);
  m.impl("_index_put_rows_", index_put_rows_kernel);
}

}  // namespace xten::cpu
