#pragma once
// The profiler (docs/profiler.md), in the mould of torch.profiler: while a Profiler records,
// every dispatched op call is an event (name, the dispatch key whose kernel ran, start and
// duration, thread, nesting; input shapes and dtypes with record_shapes), and so is every
// RecordFunction range the program opens; with the XPU activity, every kernel, copy and fill
// on an XPU (device timestamps on the host clock, the op that launched it); with
// profile_memory, every allocation and free. Afterwards: key_averages() (a table by name) and
// export_chrome_trace(path) (chrome://tracing and Perfetto open it).
//
//   xten::profiler::Profiler prof(xten::profiler::ProfilerOptions().record_shapes(true));
//   prof.start();
//   { xten::profiler::RecordFunction r("forward"); y = model(x); }
//   prof.stop();
//   std::cout << prof.key_averages().table(10);
//   prof.export_chrome_trace("trace.json");
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <xten/core/arg.h>
#include <xten/profiler/record.h>

namespace xten::profiler {

enum class ProfilerActivity { CPU, XPU };

struct ProfilerOptions {
  // CPU: op calls and ranges on the host; XPU: kernels, copies and fills on XPU devices.
  XTEN_ARG(std::vector<ProfilerActivity>, activities) = {ProfilerActivity::CPU,
                                                         ProfilerActivity::XPU};
  XTEN_ARG(bool, record_shapes) = false;   // input shapes and dtypes of every op call
  XTEN_ARG(bool, profile_memory) = false;  // every allocation and free (CPU and XPU)
};

// One recorded range.
struct Event {
  uint64_t id = 0;   // what DeviceEvent::correlation and MemoryEvent::correlation refer to
  std::string name;  // "xten::add", or the RecordFunction's name
  // The dispatch key whose kernel ran ("CPU", "AutogradCPU", ...); "user" for a
  // RecordFunction; "backward" for a graph node evaluated by backward ("MulBackward").
  std::string key;
  int64_t start_ns = 0, end_ns = 0;  // steady clock
  uint64_t thread = 0;               // a small number per thread, in order of first event
  int depth = 0;                     // ranges open on the thread when it opened
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<std::string> input_dtypes;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// One allocation (bytes > 0) or free (bytes < 0), with the allocator's total after it.
struct MemoryEvent {
  std::string device;  // "cpu", "xpu:0"
  uint64_t address = 0;
  int64_t bytes = 0;
  int64_t total_allocated = 0;  // the device's allocated bytes after this event
  int64_t time_ns = 0;          // steady clock
  uint64_t thread = 0;
  uint64_t correlation = 0;  // Event::id of the innermost range open on the thread; 0: none
};

// Bytes allocated minus freed, on CPU and on XPU devices.
struct MemoryUse {
  int64_t self = 0;   // by the name's ranges themselves
  int64_t total = 0;  // by the counted ranges, nested ranges included
  int64_t peak = 0;   // the most any one call had allocated beyond its start, at any moment
};

// key_averages(): one row per name (op, range, or device kernel).
struct Average {
  std::string name;
  int64_t calls = 0;     // ranges not directly inside a range of the same name; device: launches
  int64_t self_ns = 0;   // time in the ranges minus their children's, every layer summed
  int64_t total_ns = 0;  // time of the counted (outermost) ranges
  int64_t self_device_ns = 0;   // device work launched by the ranges themselves; a kernel's own
  int64_t device_total_ns = 0;  // device work of the counted ranges, nested ranges included
  MemoryUse cpu_memory, xpu_memory;
  bool is_device = false;  // a row of device work (a kernel's name, "Memcpy HtoD", ...)
};
struct Averages {
  std::vector<Average> rows;  // by self CPU time, largest first
  // The first `limit` rows as text, sorted by `sort_by`: "self_cpu_time_total" (default),
  // "cpu_time_total", "self_xpu_time_total", "xpu_time_total", "self_cpu_memory_usage",
  // "cpu_memory_usage", "self_xpu_memory_usage", "xpu_memory_usage", "count" (ValueError
  // listing these for another). Columns: name, calls, self and total CPU time (ms, %); self and
  // total XPU time if device work was recorded; CPU and XPU memory (total and peak per call)
  // if memory was.
  std::string table(size_t limit = 10, const std::string& sort_by = "self_cpu_time_total") const;
  bool has_device = false, has_memory = false;
};

class Profiler {
 public:
  explicit Profiler(ProfilerOptions options = {});
  ~Profiler();  // stops recording if still on
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // One profiler records at a time: start() while another records raises ValueError.
  void start();
  void stop();
  bool recording() const { return recording_; }

  // The events of the last start/stop, in order of start time (valid after stop()).
  const std::vector<Event>& events() const { return events_; }
  const std::vector<DeviceEvent>& device_events() const { return device_events_; }
  const std::vector<MemoryEvent>& memory_events() const { return memory_events_; }
  Averages key_averages() const;
  // Writes the Chrome trace JSON; ValueError naming the path if it cannot be written.
  void export_chrome_trace(const std::string& path) const;

 private:
  ProfilerOptions options_;
  bool recording_ = false;
  std::vector<Event> events_;
  std::vector<DeviceEvent> device_events_;
  std::vector<MemoryEvent> memory_events_;
};

// A named range of user code ("forward", "optimizer.step"), recorded while a profiler records.
class RecordFunction {
 public:
  explicit RecordFunction(std::string name);

 private:
  detail::Range range_;
};

}  // namespace xten::profiler
