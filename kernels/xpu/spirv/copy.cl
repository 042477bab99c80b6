// copy: strided copy with dtype conversion (copy_<src>_<dst>) and strided fill by element
// width (fill_<bits>). Host side: kernels/xpu/ops/copy.cpp.
#include "common.h"

#define COPY_KERNEL(D, S)                                                                   \
  KERNEL copy_##S##_##D(global D##_t* dst, global const S##_t* src, long n, int ndim,      \
                        long8 sizes, long8 dst_st, long8 src_st) {                          \
    ELEMENTS(i, n) {                                                                        \
      long od, os;                                                                          \
      strided_offsets(i, ndim, sizes, dst_st, src_st, &od, &os);                           \
      D##_store(dst, od, CONV_##D(S##_load(src, os)));                                      \
    }                                                                                       \
  }
// copy_<src>_<dst>_1d: one dim with a stride per operand (PoCL vectorizes it).
#define COPY_KERNEL_1D(D, S)                                                                \
  KERNEL copy_##S##_##D##_1d(global D##_t* dst, global const S##_t* src, long n, long sd,   \
                             long ss) {                                                     \
    ELEMENTS(i, n) D##_store(dst, i * sd, CONV_##D(S##_load(src, i * ss)));                 \
  }
// copy_<src>_<dst>_2d: two dims (a transpose, a narrow, a slice of a cat) with the index split
// by one division instead of the long8 walk: element e is (e / inner, e % inner).
#define COPY_KERNEL_2D(D, S)                                                                \
  KERNEL copy_##S##_##D##_2d(global D##_t* dst, global const S##_t* src, long n, long inner, \
                             long sd0, long sd1, long ss0, long ss1) {                      \
    ELEMENTS(i, n) {                                                                        \
      const long r = i / inner, c = i - r * inner;                                          \
      D##_store(dst, r * sd0 + c * sd1, CONV_##D(S##_load(src, r * ss0 + c * ss1)));        \
    }                                                                                       \
  }
#define COPY_BOTH(D, S) COPY_KERNEL(D, S) COPY_KERNEL_1D(D, S) COPY_KERNEL_2D(D, S)
#define COPY_ROW(S, unused) XTEN_DTYPES_NO64_B(COPY_BOTH, S)

#ifndef XTEN_F64
XTEN_DTYPES_NO64_A(COPY_ROW, _)

#define FILL_KERNEL(BITS, T)                                                                \
  KERNEL fill_##BITS(global T* dst, T value, long n, int ndim, long8 sizes, long8 st) {     \
    ELEMENTS(i, n) {                                                                        \
      long o, unused;                                                                       \
      strided_offsets(i, ndim, sizes, st, st, &o, &unused);                                \
      dst[o] = value;                                                                       \
    }                                                                                       \
  }
FILL_KERNEL(8, uchar)
FILL_KERNEL(16, ushort)
FILL_KERNEL(32, uint)
FILL_KERNEL(64, ulong)
#else
COPY_BOTH(f64, f64)
#define COPY_TO_F64(S, unused) COPY_BOTH(f64, S)
#define COPY_FROM_F64(D, unused) COPY_BOTH(D, f64)
XTEN_DTYPES_NO64_A(COPY_TO_F64, _)
XTEN_DTYPES_NO64_A(COPY_FROM_F64, _)
#endif
