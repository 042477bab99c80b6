#pragma once
// What the dispatcher and the backends need from the profiler (docs/profiler.md): whether one
// is recording (one relaxed atomic load per call when none is), the range an op call records
// when one is, and the seam through which a backend hands over device activity (the XPU
// runtime: kernels, copies, fills with device timestamps). The profiler itself is
// profiler/profiler.h.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <xten/core/tensor.h>

namespace xten {
class OperatorEntry;
enum class DispatchKey : uint8_t;

namespace profiler {

// One piece of device work: a kernel, a copy or a fill.
struct DeviceEvent {
  std::string name;    // the kernel's name; "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset"
  std::string kind;    // "kernel", "memcpy", "memset"
  std::string device;  // "xpu:0"
  int stream = 0;      // the stream's number on its device
  uint64_t global_size = 0, local_size = 0;  // work-items in all and per group (kernels)
  uint64_t bytes = 0;                        // copies and fills
  int64_t launch_ns = 0;                     // host clock, when the host appended it
  int64_t start_ns = 0, end_ns = 0;          // device timestamps, put on the host clock
  uint64_t correlation = 0;                  // Event::id of the op range that launched it
  uint64_t thread = 0;                       // the launching thread (Event::thread)
  int64_t duration_ns() const { return end_ns - start_ns; }
};

namespace detail {

extern std::atomic<bool> g_recording;
extern std::atomic<bool> g_record_shapes;
inline bool recording() {
  return g_recording.load(std::memory_order_relaxed);
}
// Whether device work is recorded (a profiler records with the XPU activity).
extern std::atomic<bool> g_record_device;
inline bool recording_device() {
  return g_record_device.load(std::memory_order_relaxed);
}

// The profiler's clock (steady, ns).
int64_t now_ns();
// What device work and memory events are correlated with: the id of the innermost range open
// on this thread (0: none), and the thread's number (Event::thread).
uint64_t current_range_id();
uint64_t current_thread_number();

// A backend that records device work while recording_device(): collect() waits for the work
// recorded so far, returns it with start and end on the host clock (now_ns), and forgets it;
// discard() forgets it without waiting for timestamps. Registered once, never unregistered.
class DeviceActivitySource {
 public:
  virtual ~DeviceActivitySource() = default;
  virtual std::vector<DeviceEvent> collect() = 0;
  virtual void discard() = 0;
};
void register_device_source(DeviceActivitySource* source);

// One recorded call: opened before the kernel runs, closed (and stored) after it, on the
// calling thread. `name` must outlive the profiler (an op's entry, a literal), or be copied by
// the string constructor.
class Range {
 public:
  Range(const OperatorEntry* op, DispatchKey key, std::vector<std::vector<int64_t>> shapes,
        std::vector<std::string> dtypes);
  // A named range that is not an op call: `kind` "user" (RecordFunction), "backward" (a graph
  // node's evaluation by the autograd engine); a string literal.
  explicit Range(std::string name, const char* kind = "user");
  ~Range();
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  void open();
  const OperatorEntry* op_ = nullptr;
  std::string user_name_;
  const char* kind_ = "user";
  DispatchKey key_{};
  bool active_ = false;
  uint64_t id_ = 0;
  int64_t start_ns_ = 0;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> dtypes_;
};

// The shapes and dtypes of a call's tensor arguments (record_shapes).
struct InputShapes {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
  void add(const Tensor& t);
  template <class T>
  void add(const T&) {}
  void add(const std::vector<Tensor>& ts) {
    for (const Tensor& t : ts) add(t);
  }
};
template <class... Args>
InputShapes input_shapes(const Args&... args) {
  InputShapes s;
  if (g_record_shapes.load(std::memory_order_relaxed)) (s.add(args), ...);
  return s;
}

}  // namespace detail
}  // namespace profiler
}  // namespace xten
