#pragma once
// The environment every XPU test runs in, set before the first Level Zero call (a static
// initializer of the test program): the validation layer with parameter validation, the
// bundled driver exposing two devices, and the kernel caches in the build tree. Variables the
// caller already set win, so a run can be pointed elsewhere (e.g. at a real GPU).
#include <cstdlib>

namespace xten::testing {

inline bool set_xpu_test_env(const char* device_memory) {
  setenv("ZE_ENABLE_VALIDATION_LAYER", "1", 0);
  setenv("ZE_ENABLE_PARAMETER_VALIDATION", "1", 0);
  setenv("ZE_OPENCL_DEVICES", "2", 0);
  setenv("ZE_OPENCL_DEVICE_MEMORY", device_memory, 0);
  setenv("POCL_CACHE_DIR", XTEN_TEST_CACHE_DIR "/pocl", 0);
  setenv("ZE_OPENCL_CACHE_DIR", XTEN_TEST_CACHE_DIR "/ze_opencl", 0);
  return true;
}

}  // namespace xten::testing
