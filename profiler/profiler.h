#pragma once
// The profiler (docs/profiler.md), in the mould of torch.profiler: while a Profiler records,
// every dispatched op call is an event (name, the dispatch key whose kernel ran, start and
// duration, thread, nesting; input shapes and dtypes with record_shapes), and so is every
// RecordFunction range the program opens. Afterwards: key_averages() (a table by op, sorted by
// self CPU time) and export_chrome_trace(path) (chrome://tracing and Perfetto open it).
//
//   xten::profiler::Profiler prof(xten::profiler::ProfilerOptions().record_shapes(true));
//   prof.start();
//   { xten::profiler::RecordFunction r("forward"); y = model(x); }
//   prof.stop();
//   std::cout << prof.key_averages().table(10);
//   prof.export_chrome_trace("trace.json");
#include <cstdint>
#include <string>
#include <vector>

#include <xten/core/arg.h>
#include <xten/profiler/record.h>

namespace xten::profiler {

struct ProfilerOptions {
  XTEN_ARG(bool, record_shapes) = false;  // input shapes and dtypes of every op call
};

// One recorded range.
struct Event {
  std::string name;  // "xten::add", or the RecordFunction's name
  std::string key;   // the dispatch key whose kernel ran ("CPU", "AutogradCPU", ...); "user"
  int64_t start_ns = 0, end_ns = 0;  // steady clock
  uint64_t thread = 0;               // a small number per thread, in order of first event
  int depth = 0;                     // ranges open on the thread when it opened
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<std::string> input_dtypes;
  int64_t duration_ns() const { return end_ns - start_ns; }
};

// key_averages(): one row per name.
struct Average {
  std::string name;
  int64_t calls = 0;     // ranges not directly inside a range of the same name
  int64_t self_ns = 0;   // time in the ranges minus their children's, every layer summed
  int64_t total_ns = 0;  // time of the counted (outermost) ranges
};
struct Averages {
  std::vector<Average> rows;  // by self time, largest first
  // The first `limit` rows as text: name, calls, self and total CPU time (ms, %).
  std::string table(size_t limit = 10) const;
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
  Averages key_averages() const;
  // Writes the Chrome trace JSON; ValueError naming the path if it cannot be written.
  void export_chrome_trace(const std::string& path) const;

 private:
  ProfilerOptions options_;
  bool recording_ = false;
  std::vector<Event> events_;
};

// A named range of user code ("forward", "optimizer.step"), recorded while a profiler records.
class RecordFunction {
 public:
  explicit RecordFunction(std::string name);

 private:
  detail::Range range_;
};

}  // namespace xten::profiler
