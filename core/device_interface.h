#pragma once
// DeviceInterface: everything a backend gives the layers above its kernels, registered once
// per device type. Note [Backend seam]: the allocator (tensors), the generator's seed
// (manual_seed), devices and the current one (guards), streams and events (synchronize,
// timing; the autograd engine and the profiler), all through this one interface; the rest
// of a backend is its dispatch keys (dispatch/dispatch_key.h) and its kernels.
// docs/adding_a_backend.md lists every place a new backend touches.
#include <cstdint>
#include <memory>

#include <xten/core/allocator.h>
#include <xten/core/device.h>
#include <xten/core/scalar_type.h>

namespace xten {

// A point recorded in a device's stream of work.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // Blocks until the work submitted before the record has completed.
  virtual void synchronize() = 0;
  // Milliseconds from this event to `end` (both synchronized first).
  virtual double elapsed_ms(DeviceEvent& end) = 0;
};

class DeviceInterface {
 public:
  virtual ~DeviceInterface() = default;
  virtual DeviceType type() const = 0;
  // Where tensors of this device type get their memory.
  virtual Allocator* allocator() = 0;
  // The lower-precision dtype autocast uses on this device type unless set (PyTorch's
  // defaults: bfloat16 on CPU, float16 on XPU).
  virtual ScalarType default_autocast_dtype() const = 0;
  // Seeds every generator of this device type (xten::manual_seed calls each backend's).
  virtual void manual_seed(uint64_t seed) = 0;
  virtual int device_count() = 0;
  // This thread's current device, and setting it (IndexError outside [0, device_count())).
  virtual int current_device() = 0;
  virtual void set_current_device(int index) = 0;
  // Blocks until all work submitted to the device (-1: the current one) has completed.
  virtual void synchronize(int device) = 0;
  // The id of this thread's current stream on the device (0: the default stream).
  virtual int64_t current_stream_id(int device) = 0;
  // Records an event (with timing) on the device's current stream.
  virtual std::unique_ptr<DeviceEvent> record_event(int device) = 0;
  // Work submitted later to the device's current stream waits for `event`.
  virtual void wait_event(DeviceEvent& event, int device) = 0;
};

// Registers the backend of `backend->type()`: once per type (a second is a ValueError).
void register_device_interface(DeviceInterface* backend);
// The backend of `type`; a DeviceError if none is registered.
DeviceInterface& device_interface(DeviceType type);
bool has_device_interface(DeviceType type);

// Makes `index` the current device of its type for the guard's lifetime.
class DeviceIndexGuard {
 public:
  explicit DeviceIndexGuard(Device device);
  ~DeviceIndexGuard();
  DeviceIndexGuard(const DeviceIndexGuard&) = delete;
  DeviceIndexGuard& operator=(const DeviceIndexGuard&) = delete;

 private:
  DeviceInterface* backend_;
  int previous_;
};

}  // namespace xten
