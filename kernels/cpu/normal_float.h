#pragma once
// randn's float Box-Muller for the CPU kernels: kernels/common/box_muller.inc (Note [Box-Muller
// in float arithmetic]), which the XPU kernels compile as OpenCL C, included here as C++.
#include <cstdint>
#include <cstring>

// Internal linkage: each CPU level's copy stays its own (docs/cpu_kernels.md).
namespace xten::cpu {
namespace {

inline uint32_t box_muller_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline float box_muller_from_bits(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

#define BM_FN inline
#define BM_U32 uint32_t
#define BM_I32 int32_t
#define BM_AS_UINT(f) box_muller_bits(f)
#define BM_AS_FLOAT(u) box_muller_from_bits(u)
#define BM_SQRT(x) __builtin_sqrtf(x)
#include <xten/kernels/common/box_muller.inc>
#undef BM_FN
#undef BM_U32
#undef BM_I32
#undef BM_AS_UINT
#undef BM_AS_FLOAT
#undef BM_SQRT

}  // namespace
}  // namespace xten::cpu
