#pragma once
// The XPU runtime's public API (xten::xpu), in the mould of torch.xpu: devices, streams,
// events, the caching allocator's statistics. docs/xpu_runtime.md describes the mechanisms.
// Level Zero types stay out of this header; kernels/xpu/runtime/runtime.h has the internals.
#include <cstdint>
#include <map>
#include <string>

#include <xten/core/generator.h>
#include <xten/core/tensor.h>

namespace xten::xpu {

// ---- devices ---------------------------------------------------------------------------
// Number of XPU devices (0 if none; never throws).
int device_count();
bool is_available();
int current_device();
// Range-checked: IndexError unless 0 <= index < device_count().
void set_device(int index);
// Blocks until every stream of the device (-1: the current one) has finished its work.
void synchronize(int device = -1);

struct DeviceProperties {
  std::string name;
  std::string driver;  // "vendor" or the bundled "ze_opencl (OpenCL on the CPU)"
  uint64_t total_memory = 0;
  uint32_t max_work_group_size = 0;
  uint32_t max_compute_units = 0;
  bool has_fp16 = false;  // native half arithmetic; float16 tensors work regardless
  bool has_fp64 = false;  // float64 kernels run only where this is true
};
const DeviceProperties& get_device_properties(int device = -1);

// Sets the current device for its lifetime (-1: leaves it unchanged).
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

// ---- streams ---------------------------------------------------------------------------
struct StreamImpl;

// An in-order queue of work on one device. Cheap to copy (a handle to a pooled stream).
class Stream {
 public:
  explicit Stream(StreamImpl* impl) : impl_(impl) {}
  int device_index() const;
  // 0 is the device's default stream; pool streams are 1..kStreamsPerDevice-1.
  int id() const;
  void synchronize() const;
  // True if all work submitted so far has completed.
  bool query() const;
  StreamImpl* impl() const { return impl_; }
  bool operator==(const Stream& o) const { return impl_ == o.impl_; }
  bool operator!=(const Stream& o) const { return impl_ != o.impl_; }

 private:
  StreamImpl* impl_;
};

constexpr int kStreamsPerDevice = 8;
Stream get_default_stream(int device = -1);
// The pool's streams in turn (round robin), never the default stream.
Stream get_stream_from_pool(int device = -1);
// This thread's current stream of the device (initially the default stream).
Stream get_current_stream(int device = -1);
void set_current_stream(const Stream& stream);

// Makes `stream` current on its device (and that device current) for its lifetime.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_stream_;
  int previous_device_;
};

// ---- events ----------------------------------------------------------------------------
struct EventImpl;

// A marker in a stream: record it, make other streams wait for it, or time between two.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);
  void record();  // on the current stream of the current device
  // Work submitted to `stream` after this call waits until the recorded point is reached.
  void wait(const Stream& stream) const;
  void synchronize() const;
  bool query() const;  // true if recorded work has completed (or never recorded)
  // Milliseconds from this event to `end`; both recorded with timing and completed.
  double elapsed_time(const Event& end) const;

 private:
  EventImpl* impl_ = nullptr;
  bool timing_;
};

// ---- memory ----------------------------------------------------------------------------
// The caching allocator's statistics (bytes), per device (-1: current).
uint64_t memory_allocated(int device = -1);
uint64_t max_memory_allocated(int device = -1);
uint64_t memory_reserved(int device = -1);
uint64_t max_memory_reserved(int device = -1);
void reset_peak_memory_stats(int device = -1);
// Every counter by name: allocated_bytes.current/peak, reserved_bytes.current/peak,
// num_allocs, num_frees, num_segments, num_alloc_retries, num_ooms, active_blocks, ...
std::map<std::string, int64_t> memory_stats(int device = -1);
// Returns cached, unused segments to the driver (all devices).
void empty_cache();
// Marks `t`'s memory as used by `stream` too: it is not reused until `stream` has finished
// the work submitted so far when the tensor is freed.
void record_stream(const Tensor& t, const Stream& stream);

// The device's Philox generator (docs/random.md); xten::manual_seed seeds all of them.
Generator& default_generator(int device = -1);

}  // namespace xten::xpu
