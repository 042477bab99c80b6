// The XPU backend's DeviceInterface (core/device_interface.h, Note [Backend seam]): the
// caching allocator, the devices' generators, device selection, streams and events of the
// runtime, registered when the library loads. Nothing here starts the runtime before a
// caller needs a device.
#include <xten/core/device_interface.h>
#include <xten/core/error.h>
#include <xten/kernels/xpu/runtime/runtime.h>
#include <xten/kernels/xpu/runtime/xpu.h>

namespace xten::xpu {
namespace {

class XpuEvent : public DeviceEvent {
 public:
  explicit XpuEvent(const Stream& stream) : event_(/*enable_timing=*/true) {
    event_.record(stream);
  }
  void synchronize() override { event_.synchronize(); }
  double elapsed_ms(DeviceEvent& end) override {
    auto* e = dynamic_cast<XpuEvent*>(&end);
    XTEN_CHECK(e != nullptr, ValueError, "elapsed_ms", "the end event is not an XPU event");
    return event_.elapsed_time(e->event_);
  }
  const Event& event() const { return event_; }

 private:
  Event event_;
};

class XpuInterface : public DeviceInterface {
 public:
  DeviceType type() const override { return kXPU; }
  Allocator* allocator() override { return caching_allocator(); }
  ScalarType default_autocast_dtype() const override { return kHalf; }
  void manual_seed(uint64_t seed) override { seed_started_devices(seed); }
  int device_count() override { return xpu::device_count(); }
  int current_device() override { return xpu::current_device(); }
  void set_current_device(int index) override { set_device(index); }
  void synchronize(int device) override { xpu::synchronize(device); }
  int64_t current_stream_id(int device) override { return get_current_stream(device).id(); }
  std::unique_ptr<DeviceEvent> record_event(int device) override {
    return std::make_unique<XpuEvent>(get_current_stream(device));
  }
  void wait_event(DeviceEvent& event, int device) override {
    auto* e = dynamic_cast<XpuEvent*>(&event);
    XTEN_CHECK(e != nullptr, ValueError, "wait_event", "the event is not an XPU event");
    e->event().wait(get_current_stream(device));
  }
};

const bool kRegistered = [] {
  register_device_interface(new XpuInterface);  // never destroyed: used until the process ends
  return true;
}();

}  // namespace
}  // namespace xten::xpu
