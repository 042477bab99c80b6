// Quantized tensors on the CPU (docs/quantization.md): quantize / dequantize, and the quantized
// ops models run: conv2d and linear (oneDNN's int8 primitives, kernels/cpu/onednn.cpp), add,
// relu, max_pool2d, adaptive_avg_pool2d. Quantized tensors carry the QuantizedCPU key
// (dispatch/dispatch_key.h): an op registered neither here nor in kernels/common/quantized.cpp
// (the copies of the integers, and the checks both devices share) raises NotImplementedError
// naming it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <emmintrin.h>
#include <immintrin.h>

#include <xten/core/cpu_backend.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/quantized.h>
#include <xten/kernels/common/window.h>
#include <xten/kernels/cpu/onednn.h>

namespace xten::cpu {
namespace {

constexpr int64_t kGrain = kParallelGrain / 4;

// A fresh quantized CPU tensor in format `fmt`.
Tensor new_quantized(IntArrayRef sizes, std::shared_ptr<const Quantizer> q,
                     MemoryFormat fmt = MemoryFormat::Contiguous) {
  return xten::new_quantized(sizes, std::move(q), Device(kCPU), fmt);
}

// The integers' C++ type of a quantized dtype.
template <class F>
decltype(auto) visit_quantized(const char* op, ScalarType t, F&& f) {
  return visit_dtype<dtype_bit(kByte) | dtype_bit(kChar) | dtype_bit(kInt)>(op, underlying_type(t),
                                                                            std::forward<F>(f));
}

// Round half to even of a value already clamped to the integer range: adding and subtracting
// 1.5 * 2^23 (2^52 for double) leaves the rounded value in the default rounding mode. It is the
// same as std::nearbyint, which costs a libm call that saves and restores the floating-point
// environment per element: quantized::add took 150 ms of a 226 ms ResNet-50 pass with it
// (bench/README.md, "bench_int8").
inline float round_even(float v) {
  constexpr float kMagic = 12582912.0f;
  return (v + kMagic) - kMagic;
}
inline double round_even(double v) {
  constexpr double kMagic = 6755399441055744.0;
  return (v + kMagic) - kMagic;
}

// round-half-even(v * (1 / scale)) + zero point, saturated to [qmin, qmax]; NaN gives the zero
// point. In float for the 8-bit dtypes (as PyTorch), in double for qint32, whose integers float
// cannot hold.
struct Quantize {
  float inv_scale;
  double inv_scale_wide;
  bool wide;
  int64_t zero_point, qmin, qmax;
  int64_t operator()(float v) const {
    if (wide) {
      const double r = static_cast<double>(v) * inv_scale_wide;
      if (!(r == r)) return zero_point;
      const double lo = static_cast<double>(qmin - zero_point),
                   hi = static_cast<double>(qmax - zero_point);
      return static_cast<int64_t>(round_even(std::min(std::max(r, lo), hi))) + zero_point;
    }
    const float r = v * inv_scale;
    if (!(r == r)) return zero_point;
    const float lo = static_cast<float>(qmin - zero_point),
                hi = static_cast<float>(qmax - zero_point);
    return static_cast<int64_t>(round_even(std::min(std::max(r, lo), hi))) + zero_point;
  }
};
Quantize quantize_fn(double scale, int64_t zero_point, ScalarType dtype) {
  return {1.0f / static_cast<float>(scale),
          1.0 / scale,
          dtype == kQInt32,
          zero_point,
          quant_min(dtype),
          quant_max(dtype)};
}

// For a contiguous [outer, channels, inner] walk: the channel of flat element i.
struct ChannelOf {
  int64_t channels, inner;
  int64_t operator()(int64_t i) const { return (i / inner) % channels; }
};
ChannelOf channel_of(IntArrayRef sizes, int64_t axis) {
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  return {sizes[static_cast<size_t>(axis)], inner};
}

Tensor quantize_per_tensor_kernel(const Tensor& self, double scale, int64_t zero_point,
                                  ScalarType dtype) {
  constexpr const char* op = "quantize_per_tensor";
  check_float_input(op, self);
  auto q = Quantizer::per_tensor(op, dtype, scale, zero_point);
  const MemoryFormat fmt = self.suggest_memory_format();
  const Tensor x = self.contiguous(fmt).to(kFloat);
  Tensor out = new_quantized(self.sizes(), q, fmt);
  const float* px = x.data_ptr<float>();
  const Quantize f = quantize_fn(scale, zero_point, dtype);
  visit_quantized(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      const float* __restrict in = px;  // locals: see relu_kernel
      T* __restrict o = po;
      if constexpr (sizeof(T) == 1) {
        // Quantize's 8-bit form without branches, so that it vectorizes (NaN selects offset 0,
        // the zero point): 12.7 -> 6.6 ms for 6.4M floats on one VM thread.
        const float inv = f.inv_scale, lo = static_cast<float>(f.qmin - f.zero_point),
                    hi = static_cast<float>(f.qmax - f.zero_point);
        const int32_t z = static_cast<int32_t>(f.zero_point);
        for (int64_t i = b; i < e; ++i) {
          const float r = in[i] * inv;
          const float c = round_even(std::min(std::max(r, lo), hi));
          o[i] = static_cast<T>(static_cast<int32_t>(r == r ? c : 0.0f) + z);
        }
      } else {
        const Quantize fl = f;
        for (int64_t i = b; i < e; ++i) o[i] = static_cast<T>(fl(in[i]));
      }
    });
  });
  return out;
}

Tensor quantize_per_channel_kernel(const Tensor& self, const Tensor& scales,
                                   const Tensor& zero_points, int64_t axis, ScalarType dtype) {
  constexpr const char* op = "quantize_per_channel";
  auto q = per_channel_quantizer(op, self, scales, zero_points, axis, dtype);
  const std::vector<double>& sv = q->scales;
  const std::vector<int64_t>& zv = q->zero_points;
  const int64_t channels = self.size(axis);
  const Tensor x = self.contiguous().to(kFloat);
  Tensor out = new_quantized(self.sizes(), q);
  std::vector<Quantize> fs;
  for (int64_t c = 0; c < channels; ++c) fs.push_back(quantize_fn(sv[c], zv[c], dtype));
  const ChannelOf ch = channel_of(self.sizes(), axis);
  const float* px = x.data_ptr<float>();
  visit_quantized(op, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = static_cast<T>(fs[static_cast<size_t>(ch(i))](px[i]));
    });
  });
  return out;
}

// float32 (q - zero_point) * scale, in the input's layout.
Tensor dequantize_kernel(const Tensor& self) {
  constexpr const char* op = "dequantize";
  const Quantizer& q = quantizer_of(self);
  const MemoryFormat fmt =
      q.per_channel() ? MemoryFormat::Contiguous : self.suggest_memory_format();
  const Tensor ints = int_alias(self).contiguous(fmt);
  Tensor out =
      empty_tensor(self.sizes(), strides_for_format(op, self.sizes(), fmt), kFloat, Device(kCPU));
  float* po = out.data_ptr<float>();
  const ChannelOf ch = q.per_channel() ? channel_of(self.sizes(), q.axis) : ChannelOf{1, 1};
  visit_quantized(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pi = static_cast<const T*>(ints.data_ptr());
    parallel_for(ints.numel(), kGrain, [&](int64_t b, int64_t e) {
      if (!q.per_channel()) {
        const float s = static_cast<float>(q.scale);
        const int64_t z = q.zero_point;
        for (int64_t i = b; i < e; ++i) po[i] = static_cast<float>(pi[i] - z) * s;
        return;
      }
      for (int64_t i = b; i < e; ++i) {
        const size_t c = static_cast<size_t>(ch(i));
        po[i] = static_cast<float>(pi[i] - q.zero_points[c]) * static_cast<float>(q.scales[c]);
      }
    });
  });
  return out;
}

Tensor relu_kernel(const Tensor& self) {
  check_per_tensor("relu", self, "the input");
  const MemoryFormat fmt = self.suggest_memory_format();
  const Tensor in = int_alias(self).contiguous(fmt);
  Tensor out = new_quantized(self.sizes(), self.impl()->quantizer(), fmt);
  const int64_t z = quantizer_of(self).zero_point;
  visit_quantized("relu", self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pin = static_cast<const T*>(in.data_ptr());
    T* pout = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), kGrain, [&](int64_t b, int64_t e) {
      // Locals: a store of a uint8 may alias anything, captures included (the loop reloaded
      // them per element and did not vectorize: 17.8 -> 1.9 ms for [32, 256, 56, 56]).
      const T* __restrict pi = pin;
      T* __restrict po = pout;
      const T zt = static_cast<T>(z);
      for (int64_t i = b; i < e; ++i) po[i] = pi[i] < zt ? zt : pi[i];
    });
  });
  return out;
}

Tensor relu__kernel(const Tensor& self) {
  int_alias(self).copy_(int_alias(relu_kernel(self)));
  return self;
}

// copy_ between quantized tensors of one quantizer (what contiguous() and views need).
bool is_channels_last(const Tensor& t) {
  return t.dim() == 4 && t.suggest_memory_format() == MemoryFormat::ChannelsLast;
}

// Max pooling on the integers: the order of real values is the order of the integers (a
// positive scale), so the result keeps the input's quantizer.
Tensor max_pool2d_kernel(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  constexpr const char* op = "max_pool2d";
  check_per_tensor(op, self, "the input");
  const Planes p = planes_of(op, self);
  const Window w = window_args(op, p, kernel_size, stride, padding, dilation, ceil_mode);
  if (is_channels_last(self)) {
    // NHWC: each output pixel's channels are the max of its window's pixels' channels.
    const int64_t n = self.size(0), c = self.size(1);
    const Tensor in = int_alias(self).contiguous(MemoryFormat::ChannelsLast);
    Tensor out =
        new_quantized({n, c, w.ho, w.wo}, self.impl()->quantizer(), MemoryFormat::ChannelsLast);
    visit_quantized(op, self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pi = static_cast<const T*>(in.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      parallel_for(n * w.ho, 1, [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          const int64_t img = row / w.ho, oy = row % w.ho;
          for (int64_t ox = 0; ox < w.wo; ++ox) {
            T* __restrict o = po + (row * w.wo + ox) * c;
            std::fill(o, o + c, std::numeric_limits<T>::lowest());
            for (int64_t ky = 0; ky < w.kh; ++ky) {
              const int64_t y = oy * w.sh - w.ph + ky * w.dh;
              if (y < 0 || y >= p.h) continue;
              for (int64_t kx = 0; kx < w.kw; ++kx) {
                const int64_t x = ox * w.sw - w.pw + kx * w.dw;
                if (x < 0 || x >= p.w) continue;
                const T* __restrict i = pi + ((img * p.h + y) * p.w + x) * c;
                int64_t ch = 0;
                if constexpr (std::is_same_v<T, uint8_t>) {  // 16 channels a step (SSE2)
                  for (; ch + 16 <= c; ch += 16) {
                    auto* op = reinterpret_cast<__m128i*>(o + ch);
                    _mm_storeu_si128(
                        op,
                        _mm_max_epu8(_mm_loadu_si128(op),
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(i + ch))));
                  }
                }
                for (; ch < c; ++ch) o[ch] = std::max(o[ch], i[ch]);
              }
            }
          }
        }
      });
    });
    return out;
  }
  const Tensor in = int_alias(self).contiguous();
  Tensor out = new_quantized(p.shape(w.ho, w.wo), self.impl()->quantizer());
  visit_quantized(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pi = static_cast<const T*>(in.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(p.planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        for (int64_t oy = 0; oy < w.ho; ++oy)
          for (int64_t ox = 0; ox < w.wo; ++ox) {
            T m = std::numeric_limits<T>::lowest();
            for (int64_t ky = 0; ky < w.kh; ++ky) {
              const int64_t y = oy * w.sh - w.ph + ky * w.dh;
              if (y < 0 || y >= p.h) continue;
              for (int64_t kx = 0; kx < w.kw; ++kx) {
                const int64_t x = ox * w.sw - w.pw + kx * w.dw;
                if (x >= 0 && x < p.w) m = std::max(m, pi[(pl * p.h + y) * p.w + x]);
              }
            }
            po[(pl * w.ho + oy) * w.wo + ox] = m;
          }
    });
  });
  return in_layout_of(out, self);
}

// Averages of integers, rounded half to even: the mean of (q - z) * s is (mean(q) - z) * s, so
// the result keeps the input's quantizer (as PyTorch's quantized adaptive_avg_pool2d).
Tensor adaptive_avg_pool2d_kernel(const Tensor& self, IntArrayRef output_size) {
  constexpr const char* op = "adaptive_avg_pool2d";
  check_per_tensor(op, self, "the input");
  check_adaptive_output_size(op, output_size);
  const Planes p = planes_of(op, self);
  const int64_t ho = output_size[0], wo = output_size[1];
  if (is_channels_last(self)) {
    // NHWC: sums over each output cell's pixels, all channels at once.
    const int64_t n = self.size(0), c = self.size(1);
    const Tensor in = int_alias(self).contiguous(MemoryFormat::ChannelsLast);
    Tensor out =
        new_quantized({n, c, ho, wo}, self.impl()->quantizer(), MemoryFormat::ChannelsLast);
    visit_quantized(op, self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* pi = static_cast<const T*>(in.data_ptr());
      T* po = static_cast<T*>(out.data_ptr());
      parallel_for(n * ho, 1, [&](int64_t b, int64_t e) {
        std::vector<int64_t> sum(static_cast<size_t>(c));
        for (int64_t row = b; row < e; ++row) {
          const int64_t img = row / ho, oy = row % ho;
          const int64_t y0 = adaptive_start(oy, p.h, ho), y1 = adaptive_end(oy, p.h, ho);
          for (int64_t ox = 0; ox < wo; ++ox) {
            const int64_t x0 = adaptive_start(ox, p.w, wo), x1 = adaptive_end(ox, p.w, wo);
            std::fill(sum.begin(), sum.end(), 0);
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t x = x0; x < x1; ++x) {
                const T* i = pi + ((img * p.h + y) * p.w + x) * c;
                for (int64_t ch = 0; ch < c; ++ch) sum[static_cast<size_t>(ch)] += i[ch];
              }
            const double count = static_cast<double>((y1 - y0) * (x1 - x0));
            T* o = po + (row * wo + ox) * c;
            for (int64_t ch = 0; ch < c; ++ch)
              o[ch] = static_cast<T>(
                  round_even(static_cast<double>(sum[static_cast<size_t>(ch)]) / count));
          }
        }
      });
    });
    return out;
  }
  const Tensor in = int_alias(self).contiguous();
  Tensor out = new_quantized(p.shape(ho, wo), self.impl()->quantizer());
  visit_quantized(op, self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pi = static_cast<const T*>(in.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(p.planes, 1, [&](int64_t b, int64_t e) {
      for (int64_t pl = b; pl < e; ++pl)
        for (int64_t oy = 0; oy < ho; ++oy) {
          const int64_t y0 = adaptive_start(oy, p.h, ho), y1 = adaptive_end(oy, p.h, ho);
          for (int64_t ox = 0; ox < wo; ++ox) {
            const int64_t x0 = adaptive_start(ox, p.w, wo), x1 = adaptive_end(ox, p.w, wo);
            int64_t sum = 0;
            for (int64_t y = y0; y < y1; ++y)
              for (int64_t x = x0; x < x1; ++x) sum += pi[(pl * p.h + y) * p.w + x];
            const double mean =
                static_cast<double>(sum) / static_cast<double>((y1 - y0) * (x1 - x0));
            po[(pl * ho + oy) * wo + ox] = static_cast<T>(round_even(mean));
          }
        }
    });
  });
  return in_layout_of(out, self);
}

// The uint8 body of quantized::add over [b, e), 16 elements a step in SSE2 (every x86-64 CPU
// has it; this file is compiled once, not per capability level): widen to int32, to float,
// a * ka + b * kb + c, clamp, convert rounding half to even (cvtps2dq in the default rounding
// mode), narrow with saturation. The scalar loop above does the same for the rest. Returns where
// it stopped.
// The same, 16 elements a step at the avx512 level (this file is compiled at the baseline; the
// function is chosen by cpu_capability(), so XTEN_CPU_CAPABILITY caps it), for uint8 and int8:
// the same operations in the same order, so the same integers. 8.0 -> 4.0 ms for a uint8
// [32, 256, 56, 56] on one VM thread (a copy of it: 1.9), ResNet-50's residual sums.
// 16 8-bit integers as floats.
template <class T>
[[gnu::target("avx512f,avx512bw")]] inline __m512 widen_16(const T* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_same_v<T, uint8_t>) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(v));
  } else {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
  }
}

template <class T>
[[gnu::target("avx512f,avx512bw")]] int64_t add_8bit_avx512(const T* pa, const T* pb, T* po,
                                                            int64_t b, int64_t e, float ka,
                                                            float kb, float c, float lo, float hi) {
  const __m512 vka = _mm512_set1_ps(ka), vkb = _mm512_set1_ps(kb), vc = _mm512_set1_ps(c);
  const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const __m512 v = _mm512_add_ps(
        _mm512_add_ps(_mm512_mul_ps(widen_16(pa + i), vka), _mm512_mul_ps(widen_16(pb + i), vkb)),
        vc);
    // Clamped to the dtype's range, so the truncating narrow keeps every value.
    const __m512i r = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, vlo), vhi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(po + i), _mm512_cvtepi32_epi8(r));
  }
  return i;
}

int64_t add_u8_sse2(const uint8_t* pa, const uint8_t* pb, uint8_t* po, int64_t b, int64_t e,
                    float ka, float kb, float c, float lo, float hi) {
  const __m128 vka = _mm_set1_ps(ka), vkb = _mm_set1_ps(kb), vc = _mm_set1_ps(c);
  const __m128 vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi);
  const __m128i zero = _mm_setzero_si128();
  auto quarter = [&](__m128i a32, __m128i b32) {
    __m128 v = _mm_add_ps(
        _mm_add_ps(_mm_mul_ps(_mm_cvtepi32_ps(a32), vka), _mm_mul_ps(_mm_cvtepi32_ps(b32), vkb)),
        vc);
    return _mm_cvtps_epi32(_mm_min_ps(_mm_max_ps(v, vlo), vhi));
  };
  int64_t i = b;
  for (; i + 16 <= e; i += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pa + i));
    const __m128i bb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + i));
    const __m128i a_lo = _mm_unpacklo_epi8(a, zero), a_hi = _mm_unpackhi_epi8(a, zero);
    const __m128i b_lo = _mm_unpacklo_epi8(bb, zero), b_hi = _mm_unpackhi_epi8(bb, zero);
    const __m128i r0 = quarter(_mm_unpacklo_epi16(a_lo, zero), _mm_unpacklo_epi16(b_lo, zero));
    const __m128i r1 = quarter(_mm_unpackhi_epi16(a_lo, zero), _mm_unpackhi_epi16(b_lo, zero));
    const __m128i r2 = quarter(_mm_unpacklo_epi16(a_hi, zero), _mm_unpacklo_epi16(b_hi, zero));
    const __m128i r3 = quarter(_mm_unpackhi_epi16(a_hi, zero), _mm_unpackhi_epi16(b_hi, zero));
    const __m128i packed = _mm_packus_epi16(_mm_packs_epi32(r0, r1), _mm_packs_epi32(r2, r3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(po + i), packed);
  }
  return i;
}

// qa + qb requantized to (scale, zero_point), optionally relu'd; one shape, both per tensor.
Tensor add_kernel(const Tensor& qa, const Tensor& qb, double scale, int64_t zero_point, bool relu) {
  constexpr const char* op = "quantized::add";
  check_add_operands(op, qa, qb);
  auto q = Quantizer::per_tensor(op, qa.dtype(), scale, zero_point);
  const MemoryFormat fmt = qa.suggest_memory_format();
  const Tensor a = int_alias(qa).contiguous(fmt), b = int_alias(qb).contiguous(fmt);
  Tensor out = new_quantized(qa.sizes(), q, fmt);
  // In the output's integers: q = a * ka + b * kb + c, c folding in the three zero points;
  // clamped (to the zero point from below for relu) and rounded half to even.
  const auto [ka, kb, c, lo, hi] = add_params(qa, qb, scale, zero_point, relu);
  visit_quantized(op, qa.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* pa = static_cast<const T*>(a.data_ptr());
    const T* pb = static_cast<const T*>(b.data_ptr());
    T* po = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), kGrain, [&](int64_t bg, int64_t e) {
      int64_t i = bg;
      if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
        static const bool avx512 = cpu_capability() == CpuCapability::Avx512;
        if (avx512) {
          i = add_8bit_avx512<T>(pa, pb, po, bg, e, ka, kb, c, lo, hi);
        } else if constexpr (std::is_same_v<T, uint8_t>) {
          i = add_u8_sse2(pa, pb, po, bg, e, ka, kb, c, lo, hi);
        }
      }
      for (; i < e; ++i) {
        const float v = static_cast<float>(pa[i]) * ka + static_cast<float>(pb[i]) * kb + c;
        po[i] = static_cast<T>(round_even(std::min(std::max(v, lo), hi)));
      }
    });
  });
  return out;
}

Tensor conv2d_kernel(const Tensor& qx, const Tensor& qw, const std::optional<Tensor>& bias,
                     IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, int64_t groups,
                     double output_scale, int64_t output_zero_point, bool relu) {
  constexpr const char* op = "quantized::conv2d";
  check_activation(op, qx);
  const std::vector<double> ws = weight_scales(op, qw);
  const ConvGeometry g = conv2d_geometry(qx, qw, bias, stride, padding, dilation, groups);
  const Tensor b = accumulator_bias(op, bias, qx, ws);
  // Channels-last always, as PyTorch's quantized convolution: oneDNN's int8 kernels work in NHWC
  // (an NCHW input or output would be reordered on each side), and so the next layer gets NHWC.
  const bool nhwc = true;
  const MemoryFormat fmt = MemoryFormat::ChannelsLast;
  const Tensor x = g.input4.contiguous(fmt);
  const Tensor w =
      qw.is_contiguous() || qw.is_contiguous(MemoryFormat::ChannelsLast) ? qw : qw.contiguous();
  auto q = Quantizer::per_tensor(op, qx.dtype(), output_scale, output_zero_point);
  Tensor out = new_quantized({g.n, g.o, g.ho, g.wo}, q, fmt);
  XTEN_CHECK(onednn::quantized_conv2d(x, static_cast<int32_t>(quantizer_of(qx).zero_point), w, b,
                                      product_scales(qx, ws, output_scale),
                                      static_cast<int32_t>(output_zero_point), relu, g, out, nhwc),
             NotImplementedError, op, "oneDNN has no int8 convolution for this case (input {}, {})",
             qx.sizes(), dtype_name(qx.dtype()));
  return g.unbatched ? out.squeeze(0) : out;
}

// x [..., k] by w [o, k]: into a quantized output, or float32 for a float32 output (dynamic).
Tensor linear_into(const char* op, const Tensor& qx, const Tensor& qw,
                   const std::optional<Tensor>& bias, bool relu, const Tensor& out2d,
                   double out_scale, int64_t out_zp) {
  check_linear_operands(op, qx, qw);
  const std::vector<double> ws = weight_scales(op, qw);
  const Tensor b = accumulator_bias(op, bias, qx, ws);
  const Tensor x = qx.reshape({-1, qx.size(-1)}).contiguous();
  XTEN_CHECK(onednn::quantized_linear(x, static_cast<int32_t>(quantizer_of(qx).zero_point),
                                      qw.contiguous(), b, product_scales(qx, ws, out_scale),
                                      static_cast<int32_t>(out_zp), relu, out2d),
             NotImplementedError, op, "oneDNN has no int8 product for this case (input {})",
             qx.sizes());
  return out2d;
}

Tensor linear_kernel(const Tensor& qx, const Tensor& qw, const std::optional<Tensor>& bias,
                     double output_scale, int64_t output_zero_point, bool relu) {
  constexpr const char* op = "quantized::linear";
  check_activation(op, qx);
  const DimVector shape = linear_shape(qx, qw);
  auto q = Quantizer::per_tensor(op, qx.dtype(), output_scale, output_zero_point);
  Tensor out = new_quantized(linear_rows(qx, qw), q);
  linear_into(op, qx, qw, bias, relu, out, output_scale, output_zero_point);
  return out.view(shape);
}

// Dynamic quantization: x is quantized per tensor (uint8, over [0, 127] like PyTorch's x86
// backend, docs/quantization.md "Saturation") from its own range on every call, the product
// comes out in float32.
Tensor linear_dynamic_kernel(const Tensor& x, const Tensor& qw, const std::optional<Tensor>& bias,
                             bool relu) {
  constexpr const char* op = "quantized::linear_dynamic";
  check_float_input(op, x);
  XTEN_CHECK(x.is_cpu(), NotImplementedError, op, "expects a CPU input, but got one on {}",
             x.device().str());
  const Tensor xf = x.to(kFloat).contiguous();
  const float* p = xf.data_ptr<float>();
  float lo = 0.0f, hi = 0.0f;  // the range always holds 0, so that 0 is exact
  for (int64_t i = 0; i < xf.numel(); ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  const DynamicParams d = dynamic_params(lo, hi);
  const Tensor qx = quantize_per_tensor_kernel(xf, d.scale, d.zero_point, kQUInt8);
  const DimVector shape = linear_shape(x, qw);
  Tensor out = empty_tensor(linear_rows(x, qw), kFloat, Device(kCPU));
  linear_into(op, qx, qw, bias, relu, out, 1.0, 0);
  return out.view(shape);
}

}  // namespace

LIBRARY_IMPL(quantized, CPU, m) {
  m.impl("quantize_per_tensor", quantize_per_tensor_kernel);
  m.impl("quantize_per_channel", quantize_per_channel_kernel);
}

LIBRARY_IMPL(quantized, QuantizedCPU, m) {
  m.impl("dequantize", dequantize_kernel);
  m.impl("conv2d", conv2d_kernel);
  m.impl("linear", linear_kernel);
  m.impl("linear_dynamic", linear_dynamic_kernel);
  m.impl("add", add_kernel);
}

LIBRARY_IMPL(xten, QuantizedCPU, m) {
  m.impl("relu", relu_kernel);
  m.impl("relu_", relu__kernel);
  m.impl("max_pool2d", max_pool2d_kernel);
  m.impl("adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
}

}  // namespace xten::cpu
