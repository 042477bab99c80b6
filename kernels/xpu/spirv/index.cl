// index: index_select, gather, scatter (store or atomic add), the row writes of index_put_,
// stream compaction for nonzero/masked_select, and the bitonic sort behind sort/topk.
// Copies move raw elements by width (w1/w2/w4/w8: 1, 2, 4, 8 bytes; any dtype); adding and
// comparing need the dtype. An index outside [-size, size) stores nothing and sets *err, and
// the host raises the CPU's IndexError (finding the offending index on the host). Host side:
// kernels/xpu/ops/index.cpp.
#include "common.h"
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable

typedef uchar w1_t;
typedef ushort w2_t;
typedef uint w4_t;
typedef ulong w8_t;
#define XTEN_WIDTHS(X) X(w1) X(w2) X(w4) X(w8)

// An index checked against [-size, size) and wrapped; false (and the flag) if outside.
static inline bool wrap_index(long* t, long size, global int* err) {
  if (*t < -size || *t >= size) {
    *err = 1;
    return false;
  }
  if (*t < 0) *t += size;
  return true;
}

// Offsets of position e of an index-shaped space (ndim dims, sizes innermost last) in a
// tensor of strides `st`, with the coordinate along dim d replaced by `along`.
static inline long offset_along(long e, int ndim, long8 sizes, long8 st, int d, long along) {
  long off = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    const long q = e / sizes[k], c = e - q * sizes[k];
    e = q;
    off += (k == d ? along : c) * st[k];
  }
  return off;
}

#define COPIES(W)                                                                               \
  KERNEL index_select_##W(global W##_t* out, global const W##_t* x, global const long* idx,    \
                          long n, long k, long inner, long total, global int* err) {           \
    ELEMENTS(e, total) {                                                                       \
      const long i = e % inner, j = (e / inner) % k, o = e / (inner * k);                      \
      long t = idx[j];                                                                         \
      if (wrap_index(&t, n, err)) out[e] = x[(o * n + t) * inner + i];                         \
    }                                                                                          \
  }                                                                                            \
  KERNEL gather_##W(global W##_t* out, global const W##_t* self, global const long* idx,       \
                    int ndim, long8 sizes, long8 sst, int d, long size_d, long total,          \
                    global int* err) {                                                         \
    ELEMENTS(e, total) {                                                                       \
      long t = idx[e];                                                                         \
      if (wrap_index(&t, size_d, err)) out[e] = self[offset_along(e, ndim, sizes, sst, d, t)]; \
    }                                                                                          \
  }                                                                                            \
  KERNEL scatter_##W(global W##_t* out, global const W##_t* src, global const long* idx,       \
                     int ndim, long8 sizes, long8 ost, long8 sst, int d, long size_d,          \
                     long total, global int* err) {                                            \
    ELEMENTS(e, total) {                                                                       \
      long t = idx[e];                                                                         \
      if (wrap_index(&t, size_d, err))                                                         \
        out[offset_along(e, ndim, sizes, ost, d, t)] =                                         \
            src[offset_along(e, ndim, sizes, sst, -1, 0)];                                     \
    }                                                                                          \
  }                                                                                            \
  KERNEL put_rows_##W(global W##_t* dst, global const W##_t* src, global const long* idx,      \
                      long rows, long inner, long total, global int* err) {                    \
    ELEMENTS(e, total) {                                                                       \
      const long i = e % inner, j = e / inner;                                                 \
      long t = idx[j];                                                                         \
      if (wrap_index(&t, rows, err)) dst[t * inner + i] = src[e];                              \
    }                                                                                          \
  }                                                                                            \
  KERNEL compact_##W(global W##_t* out, global const W##_t* x, global const uchar* keep,       \
                     global const long* pos, long n) {                                         \
    ELEMENTS(i, n) {                                                                           \
      if (keep[i]) out[pos[i] - 1] = x[i];                                                     \
    }                                                                                          \
  }
XTEN_WIDTHS(COPIES)

// The coordinates of every kept element: row pos[i] - 1 of out [count, ndim].
KERNEL nonzero_coords(global long* out, global const uchar* keep, global const long* pos,
                      int ndim, long8 sizes, long n) {
  ELEMENTS(i, n) {
    if (!keep[i]) return;
    long e = i;
    global long* row = out + (pos[i] - 1) * ndim;
    for (int k = ndim - 1; k >= 0; --k) {
      const long q = e / sizes[k];
      row[k] = e - q * sizes[k];
      e = q;
    }
  }
}

// ---- atomic add of an opmath value to one element, for every dtype ---------------------------
// 32- and 64-bit: the word's atomics (compare-and-swap for floats). 8- and 16-bit: a
// compare-and-swap loop on the aligned 32-bit word that holds the element (allocations are
// 512-byte aligned and rounded, so the word is inside the buffer).
#define SUBWORD_ADD(T, BITS, NEXT)                                                             \
  static inline void atomic_add_##T(global T##_t* p, T##_m v) {                                \
    global volatile uint* word = (global volatile uint*)((ulong)p & ~(ulong)3);                \
    const uint shift = (uint)((ulong)p & 3) * 8, mask = ((1u << BITS) - 1) << shift;          \
    uint old = *word, updated;                                                                 \
    do {                                                                                       \
      T##_t cur = (T##_t)((old & mask) >> shift);                                              \
      const T##_t next = NEXT;                                                                 \
      updated = (old & ~mask) | (((uint)next << shift) & mask);                                \
      const uint seen = atomic_cmpxchg(word, old, updated);                                    \
      if (seen == old) break;                                                                  \
      old = seen;                                                                              \
    } while (1);                                                                               \
  }
static inline ushort half_bits_add(ushort bits, float v) {
  ushort raw[1] = {bits};
  vstore_half_rte(vload_half(0, (const half*)raw) + v, 0, (half*)raw);
  return raw[0];
}
SUBWORD_ADD(b8, 8, (uchar)((cur | v) != 0))
SUBWORD_ADD(u8, 8, (uchar)(cur + v))
SUBWORD_ADD(i8, 8, (char)((uchar)cur + (uchar)v))
SUBWORD_ADD(i16, 16, (short)((ushort)cur + (ushort)v))
SUBWORD_ADD(f16, 16, half_bits_add(cur, v))
SUBWORD_ADD(bf16, 16, float_to_bf16_bits(as_float((uint)cur << 16) + v))
static inline void atomic_add_i32(global int* p, int v) { atomic_add(p, v); }
static inline void atomic_add_i64(global long* p, long v) { atom_add(p, v); }
static inline void atomic_add_f32(global float* p, float v) {
  global volatile uint* w = (global volatile uint*)p;
  uint old = *w;
  while (1) {
    const uint seen = atomic_cmpxchg(w, old, as_uint(as_float(old) + v));
    if (seen == old) break;
    old = seen;
  }
}
#ifdef XTEN_F64
static inline void atomic_add_f64(global double* p, double v) {
  global volatile ulong* w = (global volatile ulong*)p;
  ulong old = *w;
  while (1) {
    const ulong seen = atom_cmpxchg(w, old, as_ulong(as_double(old) + v));
    if (seen == old) break;
    old = seen;
  }
}
#endif

// scatter_add and index_put_(accumulate=True): the order of the adds to one element is not
// fixed (as PyTorch's GPU kernels), so float results may differ in the last bits run to run.
#define ADDS(T, unused)                                                                         \
  KERNEL scatter_add_##T(global T##_t* out, global const T##_t* src, global const long* idx,   \
                         int ndim, long8 sizes, long8 ost, long8 sst, int d, long size_d,      \
                         long total, global int* err) {                                        \
    ELEMENTS(e, total) {                                                                       \
      long t = idx[e];                                                                         \
      if (wrap_index(&t, size_d, err))                                                         \
        atomic_add_##T(out + offset_along(e, ndim, sizes, ost, d, t),                          \
                       T##_load(src, offset_along(e, ndim, sizes, sst, -1, 0)));               \
    }                                                                                          \
  }                                                                                            \
  KERNEL put_rows_add_##T(global T##_t* dst, global const T##_t* src, global const long* idx,  \
                          long rows, long inner, long total, global int* err) {                \
    ELEMENTS(e, total) {                                                                       \
      const long i = e % inner, j = e / inner;                                                 \
      long t = idx[j];                                                                         \
      if (wrap_index(&t, rows, err)) atomic_add_##T(dst + t * inner + i, T##_load(src, e));    \
    }                                                                                          \
  }
XTEN_FLOAT_DTYPES(ADDS, _)
XTEN_INT_DTYPES_HERE(ADDS, _)
XTEN_BOOL_HERE(ADDS, _)

// ---- sort: a bitonic network over index arrays of P (a power of two) per row -----------------
// The order compares the values the indices point at: NaN after every number, ties by index
// (so the network gives the CPU's stable order), padding (index >= n) after everything.
// Each launch is one compare-exchange step (j, k) over all rows.
KERNEL sort_init(global long* idx, long P, long total) {
  ELEMENTS(e, total) { idx[e] = e % P; }
}

#define SORT(T, unused)                                                                         \
  static inline bool before_##T(global const T##_t* x, long a, long b, long n, int desc) {      \
    if (b >= n) return a < n || a < b;                                                         \
    if (a >= n) return false;                                                                  \
    const T##_m va = T##_load(x, a), vb = T##_load(x, b);                                      \
    const bool na = va != va, nb = vb != vb;                                                   \
    if (na || nb) { /* NaN is the largest value */                                             \
      if (na && nb) return a < b;                                                              \
      return desc ? na : nb;                                                                   \
    }                                                                                          \
    if (va != vb) return desc ? va > vb : va < vb;                                             \
    return a < b;                                                                              \
  }                                                                                            \
  KERNEL bitonic_##T(global long* idx, global const T##_t* x, long n, long P, long j, long k,  \
                     int desc, long total) {                                                   \
    ELEMENTS(e, total) {                                                                       \
      const long i = e % P, partner = i ^ j;                                                   \
      if (partner <= i) return;                                                                \
      global long* row = idx + (e - i);                                                        \
      global const T##_t* xr = x + (e / P) * n;                                                \
      const long a = row[i], b = row[partner];                                                 \
      const bool up = (i & k) == 0;                                                            \
      if (up ? before_##T(xr, b, a, n, desc) : before_##T(xr, a, b, n, desc)) {               \
        row[i] = b;                                                                            \
        row[partner] = a;                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  KERNEL take_sorted_##T(global T##_t* values, global long* indices, global const T##_t* x,    \
                         global const long* idx, long n, long P, long kk, long total) {        \
    ELEMENTS(e, total) {                                                                       \
      const long r = e / kk, c = e - r * kk, t = idx[r * P + c];                               \
      values[e] = x[r * n + t];                                                                \
      indices[e] = t;                                                                          \
    }                                                                                          \
  }
XTEN_FLOAT_DTYPES(SORT, _)
XTEN_INT_DTYPES_HERE(SORT, _)
XTEN_BOOL_HERE(SORT, _)

// ---- topk of a few: one work-item per row keeps its best kk (at most TOPK_MAX) in order --------
// Elements are taken in index order and one enters only when it goes strictly before the
// kk-th best (before_<T>'s order: NaN largest, ties by index), so the kept list is the sorted
// row's first kk, as the bitonic network gives; one pass over the row instead of log^2 P launches
// over P per row (topk 5 of [4096, 1000] on the 2-core VM: 742 -> 8-12 ms).
#define TOPK_MAX 16
#define TOPK_ROWS(T, unused)                                                                    \
  KERNEL topk_rows_##T(global T##_t* values, global long* indices, global const T##_t* x,      \
                       long n, long kk, int desc, long rows) {                                 \
    ELEMENTS(r, rows) {                                                                        \
      global const T##_t* xr = x + r * n;                                                      \
      long best[TOPK_MAX];                                                                     \
      long count = 0;                                                                          \
      for (long t = 0; t < n; ++t) {                                                           \
        if (count == kk && !before_##T(xr, t, best[kk - 1], n, desc)) continue;                \
        long p = count < kk ? count++ : kk - 1;                                                \
        while (p > 0 && before_##T(xr, t, best[p - 1], n, desc)) {                             \
          best[p] = best[p - 1];                                                               \
          --p;                                                                                 \
        }                                                                                      \
        best[p] = t;                                                                           \
      }                                                                                        \
      for (long c = 0; c < kk; ++c) {                                                          \
        values[r * kk + c] = xr[best[c]];                                                      \
        indices[r * kk + c] = best[c];                                                         \
      }                                                                                        \
    }                                                                                          \
  }
XTEN_FLOAT_DTYPES(TOPK_ROWS, _)
XTEN_INT_DTYPES_HERE(TOPK_ROWS, _)
XTEN_BOOL_HERE(TOPK_ROWS, _)
