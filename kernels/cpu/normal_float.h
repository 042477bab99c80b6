#pragma once
// Note [Box-Muller in float arithmetic]
// randn's float value of element i (docs/random.md): sqrt(-2 ln u1) cos(2 pi u2), with ln and
// cos written here in plain float operations (no library calls, no FMA: the CPU levels compile
// without contraction), so a loop over a block of Philox words vectorizes and every CPU level
// gives the same bits; Random.EveryElementFollowsTheMapping uses this same function as its
// reference. ln u1: u1 = 2^e m with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s) for
// s = (m - 1) / (m + 1), five odd terms, and e ln 2 in two parts (within 2.51 ulp over all 2^24
// values of u1). cos(2 pi u2): u2 has 24 bits, so t = 4 u2, its nearest integer q (the quadrant)
// and f = t - q are exact, and cos(2 pi u2) is cos, -sin, -cos or sin of f pi / 2 in
// [-pi/4, pi/4] by Taylor polynomials of degree 8 and 9; the C library's cosf of the rounded
// 2 pi u2 was off by up to 8,929 ulp near cos's zeros, z here is within 4 ulp of a double
// Box-Muller wherever |z| > 1e-3 (stand-alone checks on the VM).
#include <cstdint>
#include <cstring>

// Internal linkage: each CPU level's copy stays its own (docs/cpu_kernels.md).
namespace xten::cpu {
namespace {

inline float box_muller_log(float x) {  // ln x for x in [2^-24, 1]
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  const uint32_t t = b - 0x3f3504f3u;  // the bits of sqrt(1/2): m's range starts there
  const int32_t e = static_cast<int32_t>(t) >> 23;
  const uint32_t mb = (t & 0x007fffffu) + 0x3f3504f3u;
  float m;
  std::memcpy(&m, &mb, sizeof m);
  const float s = (m - 1.0f) / (m + 1.0f), z = s * s;
  const float p = 2.0f + z * (0.6666666667f + z * (0.4f + z * (0.2857142857f + z * 0.2222222222f)));
  const float ef = static_cast<float>(e);
  return ef * 0.693145751953125f + (ef * 1.428606765330187045e-06f + s * p);
}

inline float box_muller_cos(float u) {  // cos(2 pi u) for u = k 2^-24 in [0, 1)
  const float t = u * 4.0f;
  const int32_t q = static_cast<int32_t>(t + 0.5f);  // exact: t has at most 24 bits, t < 4
  const float x = (t - static_cast<float>(q)) * 1.57079632679489662f, x2 = x * x;
  const float c =
      1.0f +
      x2 * (-0.5f + x2 * (4.16666666667e-2f + x2 * (-1.38888888889e-3f + x2 * 2.48015873016e-5f)));
  const float sn =
      x + x * x2 *
              (-0.166666666667f +
               x2 * (8.33333333333e-3f + x2 * (-1.98412698413e-4f + x2 * 2.7557319224e-6f)));
  // Quadrant r: c, -sn, -c, sn, chosen and signed with integer operations (no branches, so the
  // loop vectorizes at every level; a conditional kept AVX2's loop scalar).
  const uint32_t r = static_cast<uint32_t>(q) & 3u;
  uint32_t cb, sb;
  std::memcpy(&cb, &c, sizeof cb);
  std::memcpy(&sb, &sn, sizeof sb);
  const uint32_t odd = 0u - (r & 1u);
  const uint32_t vb = ((sb & odd) | (cb & ~odd)) ^ (((r + 1u) & 2u) << 30);
  float v;
  std::memcpy(&v, &vb, sizeof v);
  return v;
}

// The standard normal of docs/random.md from Philox words r0, r1.
inline float box_muller_float(uint32_t r0, uint32_t r1) {
  // Through int32 (the same values: below 2^24): AVX2 and SSE2 convert only signed integers.
  const float u1 = (static_cast<float>(static_cast<int32_t>(r0 >> 8)) + 1.0f) * 0x1.0p-24f;
  const float u2 = static_cast<float>(static_cast<int32_t>(r1 >> 8)) * 0x1.0p-24f;
  return __builtin_sqrtf(-2.0f * box_muller_log(u1)) * box_muller_cos(u2);
}

}  // namespace
}  // namespace xten::cpu
