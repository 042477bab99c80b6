// Shared by every kernel family (OpenCL C 1.2, compiled to SPIR-V at build time; see
// docs/xpu_kernels.md). Each dtype has a tag (b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64), a
// storage type TAG_t, a load that yields the opmath value (float for f16/bf16/f32, double
// for f64, the integer itself otherwise) and a store that rounds once. float16 is read and
// written with vload_half/vstore_half_rte and bfloat16 is kept as ushort bits, so kernels
// need neither cl_khr_fp16 nor any bfloat16 support. float64 code is compiled only into the
// separate "<family>_f64" module (XTEN_F64 defined), which a device without fp64 never builds.
#pragma once
#ifdef XTEN_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#define OVL __attribute__((overloadable))

typedef uchar b8_t;
typedef uchar u8_t;
typedef char i8_t;
typedef short i16_t;
typedef int i32_t;
typedef long i64_t;
typedef ushort f16_t;
typedef ushort bf16_t;
typedef float f32_t;

#define DEFINE_PLAIN_LOAD_STORE(TAG)                                                   \
  static inline TAG##_t TAG##_load(global const TAG##_t* p, long i) { return p[i]; }           \
  static inline void TAG##_store(global TAG##_t* p, long i, TAG##_t v) { p[i] = v; }
DEFINE_PLAIN_LOAD_STORE(b8)
DEFINE_PLAIN_LOAD_STORE(u8)
DEFINE_PLAIN_LOAD_STORE(i8)
DEFINE_PLAIN_LOAD_STORE(i16)
DEFINE_PLAIN_LOAD_STORE(i32)
DEFINE_PLAIN_LOAD_STORE(i64)
DEFINE_PLAIN_LOAD_STORE(f32)

static inline float f16_load(global const f16_t* p, long i) { return vload_half(i, (global const half*)p); }
static inline void f16_store(global f16_t* p, long i, float v) { vstore_half_rte(v, i, (global half*)p); }

static inline float bf16_load(global const bf16_t* p, long i) { return as_float(((uint)p[i]) << 16); }
// Round to nearest even on the dropped 16 bits; NaN stays a quiet NaN (as core/half.h).
static inline ushort float_to_bf16_bits(float f) {
  const uint x = as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
static inline void bf16_store(global bf16_t* p, long i, float v) { p[i] = float_to_bf16_bits(v); }

// 16 consecutive elements from p as float (the 16/32-bit floats), for kernels that keep rows in
// vector registers (Note [Row strips] in linalg.cl, attention.cl's vector kernels).
static inline float16 f32_load16(global const f32_t* p) { return vload16(0, p); }
static inline float16 bf16_load16(global const bf16_t* p) {
  return as_float16(convert_uint16(vload16(0, p)) << 16);
}
static inline float16 f16_load16(global const f16_t* p) {
  return vload_half16(0, (global const half*)p);
}
static inline float hsum16(float16 v) {
  const float8 a = v.lo + v.hi;
  const float4 b = a.lo + a.hi;
  const float2 c = b.lo + b.hi;
  return c.x + c.y;
}

#ifdef XTEN_F64
typedef double f64_t;
DEFINE_PLAIN_LOAD_STORE(f64)
#endif

// Float to integer as the CPU kernels cast (kernels/cpu/loops.h cast_value): NaN gives 0,
// values beyond int64 saturate, then the int64 is narrowed (two's complement truncation).
OVL static inline long to_long(float v) {
  if (isnan(v)) return 0;
  if (v >= 0x1p63f) return LONG_MAX;
  if (v <= -0x1p63f) return LONG_MIN;
  return (long)v;
}
#ifdef XTEN_F64
OVL static inline long to_long(double v) {
  if (isnan(v)) return 0;
  if (v >= 0x1p63) return LONG_MAX;
  if (v <= -0x1p63) return LONG_MIN;
  return (long)v;
}
#endif
OVL static inline long to_long(uchar v) { return v; }
OVL static inline long to_long(char v) { return v; }
OVL static inline long to_long(short v) { return v; }
OVL static inline long to_long(int v) { return v; }
OVL static inline long to_long(long v) { return v; }

// Conversion of an opmath value to the opmath value of the destination dtype.
#define CONV_b8(v) ((uchar)((v) != 0))
#define CONV_u8(v) ((uchar)to_long(v))
#define CONV_i8(v) ((char)to_long(v))
#define CONV_i16(v) ((short)to_long(v))
#define CONV_i32(v) ((int)to_long(v))
#define CONV_i64(v) (to_long(v))
#define CONV_f16(v) ((float)(v))
#define CONV_bf16(v) ((float)(v))
#define CONV_f32(v) ((float)(v))
#define CONV_f64(v) ((double)(v))

// The dtype lists; two copies so that one can be expanded inside the other.
#define XTEN_DTYPES_NO64_A(X, ...) \
  X(b8, __VA_ARGS__) X(u8, __VA_ARGS__) X(i8, __VA_ARGS__) X(i16, __VA_ARGS__) X(i32, __VA_ARGS__) \
  X(i64, __VA_ARGS__) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__) X(f32, __VA_ARGS__)
#define XTEN_DTYPES_NO64_B(X, ...) \
  X(b8, __VA_ARGS__) X(u8, __VA_ARGS__) X(i8, __VA_ARGS__) X(i16, __VA_ARGS__) X(i32, __VA_ARGS__) \
  X(i64, __VA_ARGS__) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__) X(f32, __VA_ARGS__)

// Opmath types (what a value is computed in) and unsigned twins (wrapping integer arithmetic).
typedef uchar b8_m;
typedef uchar u8_m;
typedef char i8_m;
typedef short i16_m;
typedef int i32_m;
typedef long i64_m;
typedef float f16_m;
typedef float bf16_m;
typedef float f32_m;
typedef uchar u8_u;
typedef uchar i8_u;
typedef ushort i16_u;
typedef uint i32_u;
typedef ulong i64_u;
#ifdef XTEN_F64
typedef double f64_m;
#endif

// Offsets (in elements) of element i of a strided iteration space in up to four tensors (an
// output and three inputs); dimensions are given innermost last, as in Tensor::sizes().
static inline void strided_offsets4(long i, int ndim, long8 sizes, long8 a_st, long8 b_st,
                                    long8 c_st, long8 d_st, long* a, long* b, long* c, long* d) {
  if (ndim == 1) {
    *a = i * a_st[0];
    *b = i * b_st[0];
    *c = i * c_st[0];
    *d = i * d_st[0];
    return;
  }
  // Two and three dims read constant lanes of the long8s, with no loop: 1.3-1.5x faster on
  // PoCL (docs/xpu_kernels.md).
  if (ndim == 2) {  // a broadcast row, a transpose
    const long r = i / sizes.s1, q = i - r * sizes.s1;
    *a = r * a_st.s0 + q * a_st.s1;
    *b = r * b_st.s0 + q * b_st.s1;
    *c = r * c_st.s0 + q * c_st.s1;
    *d = r * d_st.s0 + q * d_st.s1;
    return;
  }
  if (ndim == 3) {  // a per-channel operand of a batch, an NCHW <-> NHWC copy
    const long r = i / sizes.s2, q = i - r * sizes.s2, p = r / sizes.s1, m = r - p * sizes.s1;
    *a = p * a_st.s0 + m * a_st.s1 + q * a_st.s2;
    *b = p * b_st.s0 + m * b_st.s1 + q * b_st.s2;
    *c = p * c_st.s0 + m * c_st.s1 + q * c_st.s2;
    *d = p * d_st.s0 + m * d_st.s1 + q * d_st.s2;
    return;
  }
  long oa = 0, ob = 0, oc = 0, od = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    const long s = sizes[k];
    const long q = i / s;
    const long idx = i - q * s;
    i = q;
    oa += idx * a_st[k];
    ob += idx * b_st[k];
    oc += idx * c_st[k];
    od += idx * d_st[k];
  }
  *a = oa;
  *b = ob;
  *c = oc;
  *d = od;
}

// The same for three tensors (the fourth's arithmetic is dead code the device compiler drops).
static inline void strided_offsets3(long i, int ndim, long8 sizes, long8 a_st, long8 b_st,
                                    long8 c_st, long* a, long* b, long* c) {
  long unused;
  strided_offsets4(i, ndim, sizes, a_st, b_st, c_st, c_st, a, b, c, &unused);
}

// The same for two tensors (the third's arithmetic is dead code the device compiler drops).
static inline void strided_offsets(long i, int ndim, long8 sizes, long8 a_st, long8 b_st, long* a,
                                   long* b) {
  long unused;
  strided_offsets3(i, ndim, sizes, a_st, b_st, b_st, a, b, &unused);
}

// Dtype lists by kind (for ops defined per kind); X(tag, ...).
#define XTEN_INT_DTYPES(X, ...) \
  X(u8, __VA_ARGS__) X(i8, __VA_ARGS__) X(i16, __VA_ARGS__) X(i32, __VA_ARGS__) X(i64, __VA_ARGS__)
// What a module holds: everything but float64 ("<family>"), float64 only (XTEN_F64,
// "<family>_f64"); the large families (XTEN_SPIRV_SPLIT_FAMILIES in
// cmake/spirv_kernels.cmake) split the first into the 16/32-bit floats (XTEN_FLOAT_MODULE)
// and the integers and bool (XTEN_INT_MODULE, "<family>_int"), to keep each module quick to
// build.
#if defined(XTEN_F64)
#define XTEN_FLOAT_DTYPES(X, ...) X(f64, __VA_ARGS__)
#define XTEN_INT_DTYPES_HERE(X, ...)
#define XTEN_BOOL_HERE(X, ...)
#elif defined(XTEN_INT_MODULE)
#define XTEN_FLOAT_DTYPES(X, ...)
#define XTEN_INT_DTYPES_HERE(X, ...) XTEN_INT_DTYPES(X, __VA_ARGS__)
#define XTEN_BOOL_HERE(X, ...) X(b8, __VA_ARGS__)
#elif defined(XTEN_FLOAT_MODULE)
#define XTEN_FLOAT_DTYPES(X, ...) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__) X(f32, __VA_ARGS__)
#define XTEN_INT_DTYPES_HERE(X, ...)
#define XTEN_BOOL_HERE(X, ...)
#else
#define XTEN_FLOAT_DTYPES(X, ...) X(f16, __VA_ARGS__) X(bf16, __VA_ARGS__) X(f32, __VA_ARGS__)
#define XTEN_INT_DTYPES_HERE(X, ...) XTEN_INT_DTYPES(X, __VA_ARGS__)
#define XTEN_BOOL_HERE(X, ...) X(b8, __VA_ARGS__)
#endif

#define ONE(T) ((T##_m)1)  // one in opmath

// The standard normal's cdf Phi(x) = erfc(-x / sqrt 2) / 2 and density phi(x), for gelu's exact
// form and its derivative. erfc(a) magnifies the relative error of a by about 2 a^2 (160 ulp at
// x = -12.8 from rounding -x / sqrt 2 alone), and exp(-x^2 / 2) that of x^2 by x^2 / 2: both
// arguments are carried as hi + lo (an fma gives a product's rounding error exactly) and the
// first-order term of lo is added (docs/xpu_kernels.md, "Accuracy"). The prelude of compiled
// XPU kernels (compile/xpu_codegen.cpp) repeats the float form: the two must give the same bits.
#define XTEN_NORMAL(M, C_HI, C_LO)                                                                 \
  OVL static inline M normal_cdf(M x) {                                                            \
    const M hi = x * (M)C_HI, lo = fma(x, (M)C_HI, -hi) + x * (M)C_LO;                             \
    return (M)0.5 * (erfc(hi) - lo * (M)1.12837916709551257390 * exp(-hi * hi));                   \
  }                                                                                                \
  OVL static inline M normal_pdf(M x) {                                                            \
    const M s = x * x, s_lo = fma(x, x, -s);                                                       \
    return exp((M)-0.5 * s) * ((M)1 - (M)0.5 * s_lo) * (M)0.39894228040143267794;                  \
  }
XTEN_NORMAL(float, -0.70710678f, -1.2101617104478969e-8f)  // -1 / sqrt 2 = C_HI + C_LO
#ifdef XTEN_F64
XTEN_NORMAL(double, -0.70710678118654757, 4.8336466567264565e-17)
#endif

#define XTEN_GROUP_SIZE 256
// Note [One work-item per element]: elementwise kernels give each work-item one element,
// `i = get_global_id(0)`, guarded by `i < n`; the host launches ceil(n / 256) groups (launch()
// in runtime.h). The body is straight-line code, no loop: PoCL runs a work-group as a loop
// over its work-items and vectorizes that loop only when it is the innermost one. Measured on
// the 2-core VM: 16M float adds took 85 ms with a grid-stride loop around each element (one
// iteration per work-item, yet a loop) and 69-72 ms without; few long-running work-items
// were slower still (520 ms with 8 or 64 groups), as PoCL then strides through memory. A
// bare `o[i] = a[i] + b[i]` OpenCL kernel takes 42-46 ms on this PoCL: most of the rest of
// the gap to the CPU (12 ms) is PoCL's.
// An early `return` skips an element.
#define ELEMENTS(i, n) \
  const long i = get_global_id(0); \
  if (i < (n))
#define KERNEL kernel __attribute__((reqd_work_group_size(XTEN_GROUP_SIZE, 1, 1))) void

// A pooling kernel's output element e: its cell (oy, ox) and its input `x`, read at x[(iy * w +
// ix) * st]. With c == 0, contiguous [planes, ho, wo] over [planes, h, w] planes (st 1); with
// c > 0, channels-last [n, ho, wo, c] over [n, h, w, c] (x at the element's channel, st c), so
// an NHWC batch is read as it lies (Note [Pooling layouts], kernels/common/window.h).
#define POOL_CELL(T)                                                                            \
  long ox, oy, st;                                                                             \
  global const T##_t* x;                                                                       \
  if (c > 0) {                                                                                 \
    const long r = e / c;                                                                      \
    ox = r % wo, oy = (r / wo) % ho, st = c;                                                   \
    x = in + (r / (wo * ho)) * h * w * c + (e - r * c);                                        \
  } else {                                                                                     \
    ox = e % wo, oy = (e / wo) % ho, st = 1;                                                   \
    x = in + (e / (wo * ho)) * h * w;                                                          \
  }

// Adaptive pooling's window (PyTorch's rule: [floor(o * in / out), ceil((o + 1) * in / out))) for
// output element e (POOL_CELL: ox, oy, x, st), rows [y0, y1) and columns [x0, x1). Shared by
// pool.cl and quantized.cl, so that both read the windows kernels/common/window.h computes.
#define ADAPTIVE_WINDOW(T)                                                                      \
  POOL_CELL(T)                                                                                 \
  const long y0 = (oy * h) / ho, y1 = ((oy + 1) * h + ho - 1) / ho;                            \
  const long x0 = (ox * w) / wo, x1 = ((ox + 1) * w + wo - 1) / wo;

// A work-group's tree reduction of scratch[0..XTEN_GROUP_SIZE) with OP into scratch[0], every
// work-item `l` taking part (the caller fills scratch and puts a barrier before).
#define TREE(OP, scratch, l)                                                                       \
  for (int s = XTEN_GROUP_SIZE / 2; s > 0; s >>= 1) {                                              \
    if ((l) < s) scratch[l] = OP(scratch[l], scratch[(l) + s]);                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
  }
#define PLUS(a, b) ((a) + (b))

// Heads of a pointwise kernel with up to three opmath parameters p0..p2 (clamp and
// nan_to_num in unary.cl, the parameterized activations in activation.cl): NAME_T over a
// strided space and NAME_T_1d over one dim, the body (the last argument) run per element
// with x loaded; unused parameters are fine.
#define PARAM_HEAD_ND(NAME, T, OUT_T, ...)                                                         \
  KERNEL NAME##_##T(global OUT_T* out, global const T##_t* a, T##_m p0, T##_m p1, T##_m p2,        \
                    long n, int ndim, long8 sizes, long8 so, long8 sa) {                           \
    ELEMENTS(i, n) {                                                                               \
      long oo, oa;                                                                                 \
      strided_offsets(i, ndim, sizes, so, sa, &oo, &oa);                                           \
      const T##_m x = T##_load(a, oa);                                                             \
      (void)p0; (void)p1; (void)p2;                                                                \
      __VA_ARGS__                                                                                  \
    }                                                                                              \
  }
#define PARAM_HEAD_1D(NAME, T, OUT_T, ...)                                                         \
  KERNEL NAME##_##T##_1d(global OUT_T* out, global const T##_t* a, T##_m p0, T##_m p1,             \
                         T##_m p2, long n, long so, long sa) {                                     \
    ELEMENTS(i, n) {                                                                               \
      const long oo = i * so, oa = i * sa;                                                         \
      const T##_m x = T##_load(a, oa);                                                             \
      (void)p0; (void)p1; (void)p2;                                                                \
      __VA_ARGS__                                                                                  \
    }                                                                                              \
  }
