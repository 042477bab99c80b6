#pragma once
// 16-bit floating value types. Arithmetic happens in float ("opmath"): both types convert
// implicitly to float, and a float converts back with round-to-nearest-even.
#include <cstdint>
#include <cstring>
#include <iosfwd>

namespace xten {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16 from binary32, round to nearest even; NaN stays NaN (quiet), overflow -> Inf.
inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u)  // Inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  if (a < 0x38800000u) {
    // Below 2^-14: a half subnormal. Adding 0.5f puts the value's multiple of 2^-24 (the
    // subnormal unit, which is also 0.5f's ulp) in the low mantissa bits, rounded by the FPU.
    const float r = bits_float(a) + 0.5f;
    return static_cast<uint16_t>(sign | (float_bits(r) - 0x3f000000u));
  }
  a += 0xc8000fffu + ((a >> 13) & 1u);  // rebias exponent by -112, add rounding bias (RNE)
  return static_cast<uint16_t>(sign | (a >> 13));
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -mag : mag;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// bfloat16 is the top half of a binary32: round the dropped 16 bits to nearest even.
inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}
}  // namespace detail

struct from_bits_t {};
constexpr from_bits_t from_bits{};

struct Half {
  uint16_t x = 0;
  Half() = default;
  constexpr Half(uint16_t bits, from_bits_t) : x(bits) {}
  Half(float f) : x(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like a builtin float type
  operator float() const { return detail::half_bits_to_float(x); }
};

struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  constexpr BFloat16(uint16_t bits, from_bits_t) : x(bits) {}
  BFloat16(float f) : x(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  operator float() const { return detail::bfloat16_bits_to_float(x); }
};

std::ostream& operator<<(std::ostream& os, Half h);
std::ostream& operator<<(std::ostream& os, BFloat16 b);

}  // namespace xten
