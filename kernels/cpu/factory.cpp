// Factories with CPU kernels: empty, arange, linspace and the random ones. The random ones
// follow the (seed, offset, index) -> value mapping of docs/random.md exactly.
#include <cmath>
#include <limits>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/generator.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/library.h>

#include <xten/kernels/common/factory_meta.h>
#include <xten/kernels/cpu/loops.h>

namespace xten::cpu {
namespace {

Tensor empty_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  check_empty_dtype(dtype);
  return empty_tensor(size, dtype, device);
}

// Fills a contiguous tensor with value_at(i) in parallel.
template <class T, class F>
void fill_indexed(const Tensor& out, const F& value_at) {
  T* p = out.data_ptr<T>();
  parallel_for(out.numel(), kParallelGrain / 8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = value_at(i);
  });
}

Tensor arange_kernel(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                     Device device) {
  const ArangeMeta m = arange_meta(start, end, step, dtype, device);
  const bool integral = m.spec.integral;
  const double s = start.to<double>(), st = step.to<double>();
  const Tensor& out = m.out;
  visit_dtype<dtypes::kAllButBool>("arange", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (integral) {
      const int64_t s0 = start.to_long(), d = step.to_long();
      fill_indexed<T>(out, [=](int64_t i) { return cast_value<T>(s0 + i * d); });
    } else {
      fill_indexed<T>(out,
                      [=](int64_t i) { return cast_value<T>(s + static_cast<double>(i) * st); });
    }
  });
  return out;
}

Tensor linspace_kernel(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype,
                       Device device) {
  const LinspaceMeta m = linspace_meta(start, end, steps, dtype, device);
  const Tensor& out = m.out;
  const double s = m.start, e = m.end, step = m.step;
  const int64_t half = m.half;
  visit_dtype<dtypes::kAllButBool>("linspace", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Computed from both ends so that the last value is `end` exactly.
    fill_indexed<T>(out, [=](int64_t i) {
      return cast_value<T>(i < half ? s + step * static_cast<double>(i)
                                    : e - step * static_cast<double>(steps - 1 - i));
    });
  });
  return out;
}

// Uniform [0, 1) from Philox words, at the precision of the dtype (docs/random.md).
template <class T>
T uniform_from(const PhiloxCounter& r) {
  if constexpr (std::is_same_v<T, double>) {
    const uint64_t bits = (static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11;
    return static_cast<double>(bits) * 0x1.0p-53;
  } else if constexpr (std::is_same_v<T, Half>) {
    return T(static_cast<float>(r[0] >> 21) * 0x1.0p-11f);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(r[0] >> 24) * 0x1.0p-8f);
  } else {
    return static_cast<float>(r[0] >> 8) * 0x1.0p-24f;
  }
}

// Standard normal by Box-Muller on two uniforms (the cosine branch).
template <class T>
T normal_from(const PhiloxCounter& r) {
  if constexpr (std::is_same_v<T, double>) {
    const double u1 =
        (static_cast<double>((static_cast<uint64_t>(r[0]) << 32 | r[1]) >> 11) + 1.0) * 0x1.0p-53;
    const double u2 =
        static_cast<double>((static_cast<uint64_t>(r[2]) << 32 | r[3]) >> 11) * 0x1.0p-53;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  } else {
    const float u1 = (static_cast<float>(r[0] >> 8) + 1.0f) * 0x1.0p-24f;
    const float u2 = static_cast<float>(r[1] >> 8) * 0x1.0p-24f;
    return T(std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864769f * u2));
  }
}

Tensor rand_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  Tensor out = random_meta("rand", size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  visit_dtype<dtypes::kFloating>("rand", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_indexed<T>(
        out, [=](int64_t i) { return uniform_from<T>(philox_words(st.seed, st.offset, i)); });
  });
  return out;
}

Tensor randn_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  Tensor out = random_meta("randn", size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  visit_dtype<dtypes::kFloating>("randn", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_indexed<T>(out,
                    [=](int64_t i) { return normal_from<T>(philox_words(st.seed, st.offset, i)); });
  });
  return out;
}

Tensor randint_kernel(int64_t low, int64_t high, IntArrayRef size, ScalarType dtype,
                      Device device) {
  Tensor out = randint_meta(low, high, size, dtype, device);
  const PhiloxState st = default_cpu_generator().next();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  visit_dtype<dtypes::kAllButBool>("randint", dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_indexed<T>(out, [=](int64_t i) {
      const PhiloxCounter r = philox_words(st.seed, st.offset, i);
      const uint64_t v = (static_cast<uint64_t>(r[0]) << 32 | r[1]) % range;
      return cast_value<T>(static_cast<int64_t>(static_cast<uint64_t>(low) + v));
    });
  });
  return out;
}

}  // namespace

LIBRARY_IMPL(xten, CPU, m) {
  m.impl("empty", empty_kernel);
  m.impl("arange", arange_kernel);
  m.impl("linspace", linspace_kernel);
  m.impl("rand", rand_kernel);
  m.impl("randn", randn_kernel);
  m.impl("randint", randint_kernel);
}

}  // namespace xten::cpu
