#include <xten/core/generator.h>

#include <xten/core/device_interface.h>

namespace xten {

Generator& default_cpu_generator() {
  static Generator* g = new Generator;  // never destroyed: threads may still draw at exit
  return *g;
}

void manual_seed_all_generators(uint64_t seed) {
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (has_device_interface(static_cast<DeviceType>(t)))
      device_interface(static_cast<DeviceType>(t)).manual_seed(seed);
}

}  // namespace xten
