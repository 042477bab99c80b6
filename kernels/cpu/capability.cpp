// Registers the CPU kernels of the capability level chosen at load time (Note [CPU capability]
// in core/cpu_backend.h). This file is compiled for the baseline; it calls into one level's
// copies only, after the level was checked against the CPU.
#include <xten/core/cpu_backend.h>
#include <xten/dispatch/library.h>

// XTEN_CPU_DISPATCHED_FILES(X): X(file) for every file of CMakeLists.txt's XTEN_CPU_DISPATCHED.
#include <xten_cpu_dispatched.h>

namespace xten::cpu {

#define XTEN_DECLARE_REGISTER(file) void register_##file(Library&);
namespace cap_default {
XTEN_CPU_DISPATCHED_FILES(XTEN_DECLARE_REGISTER)
}
namespace cap_avx2 {
XTEN_CPU_DISPATCHED_FILES(XTEN_DECLARE_REGISTER)
}
namespace cap_avx512 {
XTEN_CPU_DISPATCHED_FILES(XTEN_DECLARE_REGISTER)
}
#undef XTEN_DECLARE_REGISTER

LIBRARY_IMPL(xten, CPU, m) {
#define XTEN_REGISTER_DEFAULT(file) cap_default::register_##file(m);
#define XTEN_REGISTER_AVX2(file) cap_avx2::register_##file(m);
#define XTEN_REGISTER_AVX512(file) cap_avx512::register_##file(m);
  switch (cpu_capability()) {
    case CpuCapability::Avx512:
      XTEN_CPU_DISPATCHED_FILES(XTEN_REGISTER_AVX512)
      break;
    case CpuCapability::Avx2:
      XTEN_CPU_DISPATCHED_FILES(XTEN_REGISTER_AVX2)
      break;
    case CpuCapability::Default:
      XTEN_CPU_DISPATCHED_FILES(XTEN_REGISTER_DEFAULT)
      break;
  }
#undef XTEN_REGISTER_DEFAULT
#undef XTEN_REGISTER_AVX2
#undef XTEN_REGISTER_AVX512
}

}  // namespace xten::cpu
