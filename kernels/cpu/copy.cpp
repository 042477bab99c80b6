// copy_ and fill_ on CPU, and the dtype conversions the elementwise engine uses.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>

#include <xten/kernels/cpu/elementwise.h>
#include <xten/kernels/cpu/loops.h>
#include <xten/kernels/cpu/raw_elements.h>

namespace xten::cpu {

void convert_element(const void* src, ScalarType src_dtype, void* dst, ScalarType dst_dtype) {
  visit_dtype<dtypes::kAll>("copy_", src_dtype, [&](auto s) {
    using S = typename decltype(s)::type;
    visit_dtype<dtypes::kAll>("copy_", dst_dtype, [&](auto d) {
      using D = typename decltype(d)::type;
      *static_cast<D*>(dst) = cast_value<D>(*static_cast<const S*>(src));
    });
  });
}

namespace {
// Note [Vector 16-bit casts]
// This file is compiled for the baseline (SSE2), where float <-> float16 is the scalar bit
// arithmetic of core/half.h and float -> bfloat16 does not vectorize (SSE2 has no unsigned
// 32 -> 16 bit pack): casting 4M floats to float16 took 7.4x libtorch's time, to bfloat16 1.9x
// (bench/README.md, "bench_sweep"). Where the level chosen at load time is avx2 or better
// (XTEN_CPU_CAPABILITY included, so the emulated levels run what the real ones do), contiguous
// runs go through these functions, compiled for AVX2 and F16C (both are part of x86-64-v3, the
// avx2 level): the F16C conversions round to nearest even like core/half.h, and float ->
// bfloat16 is its formula in integer ops, 8 lanes a packet with AVX2 or 16 with AVX-512 BW
// (narrow_to_bfloat16_x8 / _x16 in loops.h; on one VM thread at the avx2 level 4M floats
// 0.95 -> 0.80 ms against GCC's vectorization of the scalar loop). One difference: F16C quiets a
// signaling float16 NaN it widens (sign and payload kept), as the elementwise engine's widen_n
// already did.
[[gnu::target("avx2,f16c")]] void floats_to_halves(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(out + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = Half(in[i]);
}
[[gnu::target("avx2,f16c")]] void halves_to_floats(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}
[[gnu::target("avx2")]] void floats_to_bfloat16s(const float* in, BFloat16* out, int64_t n) {
  static const bool avx512 = cpu_capability() == CpuCapability::Avx512;
  const int64_t whole = n / 16 * 16;
  if (avx512)  // 16 lanes with AVX-512 BW (loops.h)
    narrow_to_bfloat16_x16(in, out, whole);
  else  // two packets of 8 into one store (loops.h)
    narrow_to_bfloat16_x8(in, out, whole);
  narrow_to_bfloat16(in + whole, out + whole, n - whole);  // inlined here, compiled for AVX2
}

// int64 -> float: x86-64 has a vector conversion only from AVX-512 DQ on (part of the avx512
// level); below it each element takes a scalar cvtsi2ss (4M elements, 16 threads: 0.58-0.70x
// libtorch in the sweep). Both round to nearest even, so the values are the same.
[[gnu::target("avx512f,avx512dq")]] void longs_to_floats(const int64_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm512_cvtepi64_ps(_mm512_loadu_si512(in + i)));
  for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

// A contiguous run of n elements cast from S to D through the functions above; false where
// none applies.
template <class D, class S>
bool vector_cast(const S* in, D* out, int64_t n) {
  static const bool avx2 = cpu_capability() != CpuCapability::Default;
  if (!avx2) return false;
  if constexpr (std::is_same_v<S, int64_t> && std::is_same_v<D, float>) {
    static const bool avx512 = cpu_capability() == CpuCapability::Avx512;
    if (!avx512) return false;
    longs_to_floats(in, out, n);
    return true;
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, Half>) {
    floats_to_halves(in, out, n);
    return true;
  } else if constexpr (std::is_same_v<S, Half> && std::is_same_v<D, float>) {
    halves_to_floats(in, out, n);
    return true;
  } else if constexpr (std::is_same_v<S, float> && std::is_same_v<D, BFloat16>) {
    floats_to_bfloat16s(in, out, n);
    return true;
  } else {
    return false;
  }
}

// One tile of the transposing copy below for 4-byte elements: out[r * cols + c] =
// in[r + c * ld] for r in [r0, r1), c in [c0, c1), by 8 x 8 blocks transposed in AVX registers
// (8 loads along r, 24 shuffles, 8 stores along c), the ragged edges element by element. One
// element at a time, the NCHW -> NHWC copy of [8, 64, 56, 56] floats was 0.52-0.79x libtorch.
[[gnu::target("avx2")]] void transpose_tile_4byte(const float* in, float* out, int64_t r0,
                                                  int64_t r1, int64_t c0, int64_t c1, int64_t ld,
                                                  int64_t cols) {
  const int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = c0 + (c1 - c0) / 8 * 8;
  for (int64_t r = r0; r < r8; r += 8) {
    for (int64_t c = c0; c < c8; c += 8) {
      __m256 v[8], t[8];
      for (int k = 0; k < 8; ++k) v[k] = _mm256_loadu_ps(in + r + (c + k) * ld);
      for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(v[k], v[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(v[k], v[k + 1]);
      }
      for (int k = 0; k < 8; k += 4) {
        v[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        v[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        v[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        v[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
      }
      for (int k = 0; k < 4; ++k) {
        _mm256_storeu_ps(out + (r + k) * cols + c, _mm256_permute2f128_ps(v[k], v[k + 4], 0x20));
        _mm256_storeu_ps(out + (r + k + 4) * cols + c,
                         _mm256_permute2f128_ps(v[k], v[k + 4], 0x31));
      }
    }
    for (int64_t k = r; k < r + 8; ++k)
      for (int64_t c = c8; c < c1; ++c) out[k * cols + c] = in[k + c * ld];
  }
  for (int64_t r = r8; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) out[r * cols + c] = in[r + c * ld];
}

// Note [Tiled transposing copy]
// A copy into a contiguous tensor from one whose last two dims (after merging the dims its
// strides allow) are transposed: dst's rows are src's columns (a transposed matrix made
// contiguous, NCHW -> NHWC). The elementwise engine walks dst in order and so reads src with a
// stride of a whole row per element, touching a new cache line each time (a [2048, 2048] float
// copy took 2.0-2.4x libtorch's time at one thread). Here both are walked by 32 x 32 tiles,
// which keep the tile's src lines in L1, threads over tiles. Same dtype only: raw elements.
bool copy_transposed(const Tensor& dst, const Tensor& src) {
  constexpr int64_t kTile = 32;
  if (dst.dtype() != src.dtype() || !dst.is_contiguous() || src.sizes() != dst.sizes() ||
      src.numel() < 16 * kTile * kTile || src.storage().is_alias_of(dst.storage()))
    return false;
  // src's dims without those of size 1, adjacent ones merged where src's strides allow (dst is
  // contiguous, so any merge is valid for it too).
  std::vector<int64_t> size, stride;
  for (int64_t d = 0; d < src.dim(); ++d) {
    if (src.size(d) == 1) continue;
    if (!size.empty() && stride.back() == src.size(d) * src.stride(d)) {
      size.back() *= src.size(d);
      stride.back() = src.stride(d);
    } else {
      size.push_back(src.size(d));
      stride.push_back(src.stride(d));
    }
  }
  const size_t k = size.size();
  if (k < 2 || stride[k - 2] != 1 || stride[k - 1] <= 1) return false;
  for (size_t d = 0; d + 2 < k; ++d)
    if (stride[d] == 0) return false;  // a broadcast source: the engine's
  const int64_t rows = size[k - 2], cols = size[k - 1], ld = stride[k - 1];
  if (rows < 8 || cols < 8) return false;
  const int64_t tr = (rows + kTile - 1) / kTile, tc = (cols + kTile - 1) / kTile;
  const int64_t batches = src.numel() / (rows * cols), tiles = tr * tc;
  static const bool avx2 = cpu_capability() != CpuCapability::Default;
  visit_element_size("copy_", src.element_size(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* in = static_cast<const U*>(src.data_ptr());
    U* out = static_cast<U*>(dst.data_ptr());
    parallel_for(batches * tiles, grain_for(kTile * kTile), [&](int64_t b, int64_t e) {
      for (int64_t task = b; task < e; ++task) {
        const int64_t batch = task / tiles, t = task % tiles;
        int64_t base = 0;  // src's offset of the batch: its leading dims, innermost last
        for (int64_t rest = batch, d = static_cast<int64_t>(k) - 3; d >= 0; --d) {
          base += rest % size[d] * stride[d];
          rest /= size[d];
        }
        const int64_t r0 = t / tc * kTile, c0 = t % tc * kTile;
        const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
        U* o = out + batch * rows * cols;
        const U* i = in + base;
        if constexpr (sizeof(U) == 4) {
          if (avx2) {
            transpose_tile_4byte(reinterpret_cast<const float*>(i), reinterpret_cast<float*>(o), r0,
                                 r1, c0, c1, ld, cols);
            continue;
          }
        }
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) o[r * cols + c] = i[r + c * ld];
      }
    });
  });
  return true;
}

struct Identity {
  template <class M>
  M operator()(M x) const {
    return x;
  }
};
}  // namespace

void copy_into(const char* op, const Tensor& dst, const Tensor& src) {
  XTEN_CHECK(dst.is_cpu() && src.is_cpu(), DeviceError, op,
             "the CPU copy kernel got tensors on {} and {}", dst.device().str(),
             src.device().str());
  if (copy_transposed(dst, src)) return;
  Elementwise e(op, dst, {src});
  // The input stays in its dtype; the loop converts each element on store.
  e.keep_input_dtype(0).compute_dtype(src.dtype()).result_dtype(dst.dtype());
  e.prepare();
  visit_dtype<dtypes::kAll>(op, src.dtype(), [&](auto s) {
    using S = typename decltype(s)::type;
    visit_dtype<dtypes::kAll>(op, dst.dtype(), [&](auto d) {
      using D = typename decltype(d)::type;
      e.run([](char** data, const int64_t* st, int64_t n) {
        if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
          if constexpr (std::is_same_v<D, S>) {
            std::memcpy(data[0], data[1], static_cast<size_t>(n) * sizeof(D));
          } else {
            D* __restrict__ out = reinterpret_cast<D*>(data[0]);
            const S* __restrict__ in = reinterpret_cast<const S*>(data[1]);
            if (vector_cast(in, out, n)) return;
            for (int64_t i = 0; i < n; ++i) out[i] = cast_value<D>(in[i]);
          }
          return;
        }
        if (st[0] == sizeof(D) && st[1] == 0) {  // a broadcast source (expand(...).contiguous())
          std::fill_n(reinterpret_cast<D*>(data[0]), n,
                      cast_value<D>(*reinterpret_cast<const S*>(data[1])));
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<D*>(data[0] + i * st[0]) =
              cast_value<D>(*reinterpret_cast<const S*>(data[1] + i * st[1]));
      });
    });
  });
}

namespace {

Tensor copy_kernel(const Tensor& self, const Tensor& src) {
  XTEN_CHECK(self.is_cpu() && src.is_cpu(), NotImplementedError, "copy_",
             "copy between {} and {} needs a device kernel; none is registered for it",
             self.device().str(), src.device().str());
  if (self.is_same(src) || self.numel() == 0) {
    broadcast_shapes("copy_", self.sizes(), src.sizes());
    return self;
  }
  copy_into("copy_", self, src);
  return self;
}

Tensor fill_kernel(const Tensor& self, const Scalar& value) {
  visit_dtype<dtypes::kAll>("fill_", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value.is_floating_point() ? cast_value<T>(value.to<double>())
                : value.is_boolean()      ? cast_value<T>(value.to<bool>())
                                          : cast_value<T>(value.to<int64_t>());
    Elementwise e("fill_", self, {});
    e.compute_dtype(self.dtype());
    e.run([v](char** data, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(T)) {
        std::fill_n(reinterpret_cast<T*>(data[0]), n, v);
        return;
      }
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(data[0] + i * st[0]) = v;
    });
  });
  return self;
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("copy_", copy_kernel);
  m.impl("fill_", fill_kernel);
}

}  // namespace xten::cpu
