#include <xten/core/allocator.h>

#include <array>
#include <atomic>
#include <cstdlib>

#include <xten/core/error.h>

namespace xten {
namespace {

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    if (nbytes == 0) return DataPtr(nullptr, nullptr, [](void*) {}, device);
    void* p = nullptr;
    const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    if (posix_memalign(&p, kCpuAlignment, rounded) != 0 || p == nullptr)
      XTEN_FAIL(OutOfMemoryError, "cpu_allocator", "failed to allocate {} bytes", nbytes);
    return DataPtr(p, p, [](void* q) { std::free(q); }, device);
  }
};

std::array<std::atomic<Allocator*>, kNumDeviceTypes>& registry() {
  static std::array<std::atomic<Allocator*>, kNumDeviceTypes> r{};
  return r;
}

}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator a;
  return &a;
}

Allocator* allocator_for(DeviceType type) {
  if (type == kCPU) return cpu_allocator();
  Allocator* a = registry()[static_cast<int>(type)].load(std::memory_order_acquire);
  XTEN_CHECK(a != nullptr, DeviceError, "allocator", "no allocator is registered for device type {}",
             to_string(type));
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) {
  registry()[static_cast<int>(type)].store(allocator, std::memory_order_release);
}

}  // namespace xten
