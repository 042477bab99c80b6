#pragma once
// For the kernel files that CMake compiles once per CPU capability level (Note [CPU capability]
// in core/cpu_backend.h; docs/cpu_kernels.md "One build, every CPU"). Each copy is compiled with
// its level's instruction flags, with XTEN_CPU_CAPABILITY_NS naming its level (cap_default,
// cap_avx2, cap_avx512) and with `Eigen` renamed to Eigen_<level>, so that no inline function or
// template of Eigen is shared between levels (the linker keeps one copy of each, and an AVX-512
// copy must never be what the baseline code calls).
//
// Such a file registers its kernels with XTEN_CPU_KERNELS(file, m) { m.impl(...); } instead of
// LIBRARY_IMPL: that defines xten::cpu::<level>::register_<file>(Library&), which
// kernels/cpu/capability.cpp calls for the chosen level only. The copies have no static
// initializers (a test reads their objects), so nothing of a level the CPU lacks ever runs.
#include <xten/core/half.h>
#include <xten/dispatch/library.h>

#ifndef XTEN_CPU_CAPABILITY_NS
#error "this file is compiled once per CPU capability level: list it in XTEN_CPU_DISPATCHED (CMakeLists.txt)"
#endif

// Use inside namespace xten::cpu.
#define XTEN_CPU_KERNELS(file, m)                             \
  namespace XTEN_CPU_CAPABILITY_NS {                          \
  void register_##file(::xten::Library&);                     \
  }                                                           \
  void XTEN_CPU_CAPABILITY_NS::register_##file(::xten::Library& m)

// Note [Baseline copies of the 16-bit conversions]
// Every level's copy calls core/half.h's inline conversions; where the compiler does not inline
// a call, the object holds an out-of-line copy, AVX in an avx2/avx512 copy, and the linker keeps
// the first copy it meets for the whole library. The default level's objects come first on the
// link line, so each file of a level holds one of each here: the kept copy is then the default
// level's, which runs on every CPU (cpu_levels_isolated checks). Constant pointers: no static
// initializer; `used` keeps them though nothing reads them.
namespace xten::cpu::XTEN_CPU_CAPABILITY_NS {
namespace {
[[gnu::used]] uint16_t (*const kToHalf)(float) = &detail::float_to_half_bits;
[[gnu::used]] float (*const kFromHalf)(uint16_t) = &detail::half_bits_to_float;
[[gnu::used]] uint16_t (*const kToBFloat16)(float) = &detail::float_to_bfloat16_bits;
[[gnu::used]] float (*const kFromBFloat16)(uint16_t) = &detail::bfloat16_bits_to_float;
}  // namespace
}  // namespace xten::cpu::XTEN_CPU_CAPABILITY_NS
