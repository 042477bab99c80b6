// One small XPU computation, then one on the CPU, each reported on stdout: the child that
// test_xpu_faults.cpp runs under injected faults (docs/xpu_runtime.md, Note [Faults]).
//   "xpu ok 192" or "<ErrorType>: <message>", then "cpu ok 192".
#include <cstdio>

#include <xten/xten.h>

int main() {
  try {
    const float v = (xten::ones({64}, xten::TensorOptions().device("xpu")) * 3).sum().item<float>();
    std::printf("xpu ok %g\n", v);
  } catch (const xten::OutOfMemoryError& e) {
    std::printf("OutOfMemoryError: %s\n", e.what());
  } catch (const xten::DeviceError& e) {
    std::printf("DeviceError: %s\n", e.what());
  } catch (const xten::Error& e) {
    std::printf("other Error: %s\n", e.what());
  }
  std::printf("cpu ok %g\n", (xten::ones({64}) * 3).sum().item<float>());
  return 0;
}
