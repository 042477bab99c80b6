#include <xten/core/device_interface.h>

#include <array>
#include <atomic>
#include <chrono>

#include <xten/core/error.h>
#include <xten/core/generator.h>

namespace xten {

namespace {

// CPU work is done when its op returns: events are host timestamps, synchronizing is free.
class CpuEvent : public DeviceEvent {
 public:
  void synchronize() override {}
  double elapsed_ms(DeviceEvent& end) override {
    const auto* e = dynamic_cast<CpuEvent*>(&end);
    XTEN_CHECK(e != nullptr, ValueError, "elapsed_ms", "the end event is not a CPU event");
    return std::chrono::duration<double, std::milli>(e->at_ - at_).count();
  }

 private:
  std::chrono::steady_clock::time_point at_ = std::chrono::steady_clock::now();
};

class CpuInterface : public DeviceInterface {
 public:
  DeviceType type() const override { return kCPU; }
  Allocator* allocator() override { return cpu_allocator(); }
  ScalarType default_autocast_dtype() const override { return kBFloat16; }
  void manual_seed(uint64_t seed) override { default_cpu_generator().manual_seed(seed); }
  int device_count() override { return 1; }
  int current_device() override { return 0; }
  void set_current_device(int index) override {
    XTEN_CHECK(index == 0, IndexError, "set_device", "cpu device must be in [0, 1), but got {}",
               index);
  }
  void synchronize(int) override {}
  int64_t current_stream_id(int) override { return 0; }
  std::unique_ptr<DeviceEvent> record_event(int) override { return std::make_unique<CpuEvent>(); }
  void wait_event(DeviceEvent&, int) override {}
};

// The CPU backend is there from the start (static initializers of any file may make CPU
// tensors); other backends register when their library part loads.
std::array<std::atomic<DeviceInterface*>, kNumDeviceTypes>& backends() {
  static CpuInterface* cpu = new CpuInterface;  // never destroyed: used until the process ends
  static std::array<std::atomic<DeviceInterface*>, kNumDeviceTypes> b{};
  static const bool cpu_in = (b[static_cast<int>(kCPU)].store(cpu), true);
  (void)cpu_in;
  return b;
}

}  // namespace

void register_device_interface(DeviceInterface* backend) {
  DeviceInterface* expected = nullptr;
  XTEN_CHECK(
      backends()[static_cast<int>(backend->type())].compare_exchange_strong(expected, backend),
      ValueError, "register_device_interface", "a backend for device type {} is registered already",
      to_string(backend->type()));
}

DeviceInterface& device_interface(DeviceType type) {
  DeviceInterface* b = backends()[static_cast<int>(type)].load(std::memory_order_acquire);
  XTEN_CHECK(b != nullptr, DeviceError, "device", "no backend is registered for device type {}",
             to_string(type));
  return *b;
}

bool has_device_interface(DeviceType type) {
  return backends()[static_cast<int>(type)].load(std::memory_order_acquire) != nullptr;
}

DeviceIndexGuard::DeviceIndexGuard(Device device)
    : backend_(&device_interface(device.type())), previous_(backend_->current_device()) {
  if (device.has_index()) backend_->set_current_device(device.index());
}
DeviceIndexGuard::~DeviceIndexGuard() {
  backend_->set_current_device(previous_);
}

}  // namespace xten
