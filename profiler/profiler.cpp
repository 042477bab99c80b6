// The profiler's recording and its reports (docs/profiler.md). Each thread appends its closed
// ranges and its memory events to a buffer of its own (registered once per thread, locked only
// by that thread and by stop()), so recording never contends across threads. Device work comes
// from the backends' DeviceActivitySource (the XPU runtime's: Note [Device activity]).
#include <xten/profiler/profiler.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <xten/core/allocator.h>
#include <xten/dispatch/dispatch_key.h>
#include <xten/dispatch/operator_entry.h>

namespace xten::profiler {
namespace detail {

std::atomic<bool> g_recording{false};
std::atomic<bool> g_record_shapes{false};
std::atomic<bool> g_record_device{false};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

struct RawEvent {
  uint64_t id;
  const OperatorEntry* op;
  std::string user_name;
  const char* kind;
  DispatchKey key;
  int64_t start_ns, end_ns;
  int depth;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::string> dtypes;
};

struct ThreadBuffer {
  uint64_t thread = 0;
  std::mutex mutex;
  std::vector<RawEvent> events;
  std::vector<MemoryEvent> memory;
  // Only the thread touches these: the ids of its open ranges, innermost last, and the count
  // its range ids are made from.
  std::vector<uint64_t> open;
  uint64_t ranges = 0;
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;  // every thread that recorded
  std::vector<DeviceActivitySource*> sources;
};
Registry& registry() {
  static auto* r = new Registry;  // never destroyed: threads may record until the process ends
  return *r;
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    auto b = std::make_shared<ThreadBuffer>();
    std::lock_guard<std::mutex> lock(registry().mutex);
    b->thread = registry().buffers.size();
    registry().buffers.push_back(b);
    return b;
  }();
  return *buffer;
}

// Note [Memory reports]: the observer set while a profiler records memory.
void observe_memory(Device device, const void* ptr, int64_t bytes, int64_t total) {
  if (!recording()) return;
  ThreadBuffer& b = this_thread_buffer();
  MemoryEvent m;
  m.device = device.str();
  m.address = reinterpret_cast<uint64_t>(ptr);
  m.bytes = bytes;
  m.total_allocated = total;
  m.time_ns = now_ns();
  m.thread = b.thread;
  m.correlation = b.open.empty() ? 0 : b.open.back();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.memory.push_back(std::move(m));
}

}  // namespace

uint64_t current_range_id() {
  ThreadBuffer& b = this_thread_buffer();
  return b.open.empty() ? 0 : b.open.back();
}

uint64_t current_thread_number() {
  return this_thread_buffer().thread;
}

void register_device_source(DeviceActivitySource* source) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().sources.push_back(source);
}

void InputShapes::add(const Tensor& t) {
  if (!t.defined()) return;
  shapes.emplace_back(t.sizes().begin(), t.sizes().end());
  dtypes.emplace_back(to_string(t.dtype()));
}

Range::Range(const OperatorEntry* op, DispatchKey key, std::vector<std::vector<int64_t>> shapes,
             std::vector<std::string> dtypes)
    : op_(op), key_(key), shapes_(std::move(shapes)), dtypes_(std::move(dtypes)) {
  open();
}

Range::Range(std::string name, const char* kind) : user_name_(std::move(name)), kind_(kind) {
  open();
}

void Range::open() {
  if (!recording()) return;
  active_ = true;
  ThreadBuffer& b = this_thread_buffer();
  id_ = ((b.thread + 1) << 40) | ++b.ranges;  // unique across threads
  b.open.push_back(id_);
  start_ns_ = now_ns();
}

Range::~Range() {
  if (!active_) return;
  const int64_t end = now_ns();
  ThreadBuffer& b = this_thread_buffer();
  b.open.pop_back();
  const int depth = static_cast<int>(b.open.size());
  if (!recording()) return;  // stopped meanwhile: the range is not part of the session
  std::lock_guard<std::mutex> lock(b.mutex);
  b.events.push_back(RawEvent{id_, op_, std::move(user_name_), kind_, key_, start_ns_, end, depth,
                              std::move(shapes_), std::move(dtypes_)});
}

}  // namespace detail

// ---- the profiler -----------------------------------------------------------------------
Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {}

Profiler::~Profiler() {
  if (recording_) stop();
}

namespace {
bool has(const std::vector<ProfilerActivity>& list, ProfilerActivity a) {
  return std::find(list.begin(), list.end(), a) != list.end();
}
std::vector<detail::DeviceActivitySource*> device_sources() {
  std::lock_guard<std::mutex> lock(detail::registry().mutex);
  return detail::registry().sources;
}
}  // namespace

void Profiler::start() {
  XTEN_CHECK(!recording_, ValueError, "profiler", "this profiler is already recording");
  XTEN_CHECK(!options_.activities().empty(), ValueError, "profiler",
             "no activities to record (give CPU, XPU or both)");
  bool expected = false;
  XTEN_CHECK(detail::g_recording.compare_exchange_strong(expected, true), ValueError, "profiler",
             "another profiler is recording (one at a time)");
  {
    std::lock_guard<std::mutex> lock(detail::registry().mutex);
    for (auto& b : detail::registry().buffers) {
      std::lock_guard<std::mutex> block(b->mutex);
      b->events.clear();
      b->memory.clear();
    }
  }
  for (auto* s : device_sources()) s->discard();  // work recorded after an earlier stop()
  events_.clear();
  device_events_.clear();
  memory_events_.clear();
  detail::g_record_shapes = options_.record_shapes();
  detail::g_record_device = has(options_.activities(), ProfilerActivity::XPU);
  if (options_.profile_memory()) set_memory_observer(&detail::observe_memory);
  recording_ = true;
}

void Profiler::stop() {
  XTEN_CHECK(recording_, ValueError, "profiler", "stop() without start()");
  const bool cpu = has(options_.activities(), ProfilerActivity::CPU);
  set_memory_observer(nullptr);
  detail::g_record_shapes = false;
  detail::g_record_device = false;
  detail::g_recording = false;
  recording_ = false;
  {
    std::lock_guard<std::mutex> lock(detail::registry().mutex);
    for (auto& b : detail::registry().buffers) {
      std::lock_guard<std::mutex> block(b->mutex);
      for (auto& r : b->events) {
        if (!cpu) break;
        Event e;
        e.id = r.id;
        e.name = r.op ? "xten::" + std::string(r.op->error_name()) : std::move(r.user_name);
        e.key = r.op ? to_string(r.key) : r.kind;
        e.start_ns = r.start_ns;
        e.end_ns = r.end_ns;
        e.thread = b->thread;
        e.depth = r.depth;
        e.input_shapes = std::move(r.shapes);
        e.input_dtypes = std::move(r.dtypes);
        events_.push_back(std::move(e));
      }
      b->events.clear();
      for (auto& m : b->memory) memory_events_.push_back(std::move(m));
      b->memory.clear();
    }
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
  for (auto* s : device_sources())
    for (auto& d : s->collect()) device_events_.push_back(std::move(d));
  std::stable_sort(device_events_.begin(), device_events_.end(),
                   [](const DeviceEvent& a, const DeviceEvent& b) { return a.start_ns < b.start_ns; });
  std::stable_sort(memory_events_.begin(), memory_events_.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) { return a.time_ns < b.time_ns; });
}

Averages Profiler::key_averages() const {
  // Per thread, in start order, a stack of open ranges gives each range its parent (children
  // start after their parent, so walking backwards visits children first).
  const size_t n = events_.size();
  std::vector<int64_t> parent(n, -1);
  {
    std::map<uint64_t, std::vector<size_t>> open;
    for (size_t i = 0; i < n; ++i) {
      auto& stack = open[events_[i].thread];
      while (!stack.empty() && events_[stack.back()].end_ns <= events_[i].start_ns)
        stack.pop_back();
      if (!stack.empty()) parent[i] = static_cast<int64_t>(stack.back());
      stack.push_back(i);
    }
  }
  std::unordered_map<uint64_t, size_t> index_of;
  for (size_t i = 0; i < n; ++i) index_of[events_[i].id] = i;
  auto event_of = [&](uint64_t correlation) -> int64_t {
    auto it = index_of.find(correlation);
    return it == index_of.end() ? -1 : static_cast<int64_t>(it->second);
  };

  std::vector<int64_t> children_ns(n, 0), dev_self(n, 0), dev_total(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (parent[i] >= 0) children_ns[static_cast<size_t>(parent[i])] += events_[i].duration_ns();
  std::map<std::string, Average> by_name;
  for (const DeviceEvent& d : device_events_) {
    Average& a = by_name[d.name];
    a.name = d.name;
    a.is_device = true;
    ++a.calls;
    a.self_device_ns += d.duration_ns();
    a.device_total_ns += d.duration_ns();
    const int64_t e = event_of(d.correlation);
    if (e >= 0) dev_self[static_cast<size_t>(e)] += d.duration_ns();
  }
  for (size_t i = n; i-- > 0;) {
    dev_total[i] += dev_self[i];
    if (parent[i] >= 0) dev_total[static_cast<size_t>(parent[i])] += dev_total[i];
  }

  // Memory: each event counts for its range (self) and every enclosing one (total), and the
  // running sum per range and device gives the peak.
  struct Mem {
    MemoryUse cpu, xpu;
    int64_t cpu_now = 0, xpu_now = 0;
  };
  std::vector<Mem> mem(n);
  for (const MemoryEvent& m : memory_events_) {
    const bool on_cpu = m.device == "cpu";
    int64_t e = event_of(m.correlation);
    if (e >= 0) (on_cpu ? mem[static_cast<size_t>(e)].cpu : mem[static_cast<size_t>(e)].xpu).self += m.bytes;
    for (; e >= 0; e = parent[static_cast<size_t>(e)]) {
      Mem& r = mem[static_cast<size_t>(e)];
      MemoryUse& u = on_cpu ? r.cpu : r.xpu;
      int64_t& now = on_cpu ? r.cpu_now : r.xpu_now;
      u.total += m.bytes;
      now += m.bytes;
      u.peak = std::max(u.peak, now);
    }
  }

  for (size_t i = 0; i < n; ++i) {
    const Event& e = events_[i];
    Average& a = by_name[e.name];
    a.name = e.name;
    a.self_ns += e.duration_ns() - children_ns[i];
    a.self_device_ns += dev_self[i];
    a.cpu_memory.self += mem[i].cpu.self;
    a.xpu_memory.self += mem[i].xpu.self;
    a.cpu_memory.peak = std::max(a.cpu_memory.peak, mem[i].cpu.peak);
    a.xpu_memory.peak = std::max(a.xpu_memory.peak, mem[i].xpu.peak);
    const int64_t p = parent[i];
    if (p < 0 || events_[static_cast<size_t>(p)].name != e.name) {
      ++a.calls;
      a.total_ns += e.duration_ns();
      a.device_total_ns += dev_total[i];
      a.cpu_memory.total += mem[i].cpu.total;
      a.xpu_memory.total += mem[i].xpu.total;
    }
  }
  Averages out;
  out.has_device = !device_events_.empty();
  out.has_memory = !memory_events_.empty();
  for (auto& [name, a] : by_name) out.rows.push_back(a);
  std::sort(out.rows.begin(), out.rows.end(), [](const Average& a, const Average& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  return out;
}

namespace {
std::string bytes_text(int64_t b) {
  const double a = std::abs(static_cast<double>(b));
  if (a >= 1 << 30) return fmt::format("{:.2f} GB", b / double(1 << 30));
  if (a >= 1 << 20) return fmt::format("{:.2f} MB", b / double(1 << 20));
  if (a >= 1 << 10) return fmt::format("{:.2f} KB", b / double(1 << 10));
  return fmt::format("{} B", b);
}
}  // namespace

std::string Averages::table(size_t limit, const std::string& sort_by) const {
  using Key = std::function<int64_t(const Average&)>;
  const std::vector<std::pair<std::string, Key>> keys = {
      {"self_cpu_time_total", [](const Average& a) { return a.self_ns; }},
      {"cpu_time_total", [](const Average& a) { return a.total_ns; }},
      {"self_xpu_time_total", [](const Average& a) { return a.self_device_ns; }},
      {"xpu_time_total", [](const Average& a) { return a.device_total_ns; }},
      {"self_cpu_memory_usage", [](const Average& a) { return a.cpu_memory.self; }},
      {"cpu_memory_usage", [](const Average& a) { return a.cpu_memory.total; }},
      {"self_xpu_memory_usage", [](const Average& a) { return a.xpu_memory.self; }},
      {"xpu_memory_usage", [](const Average& a) { return a.xpu_memory.total; }},
      {"count", [](const Average& a) { return a.calls; }}};
  auto k = std::find_if(keys.begin(), keys.end(), [&](const auto& p) { return p.first == sort_by; });
  if (k == keys.end()) {
    std::string names;
    for (const auto& p : keys) names += (names.empty() ? "" : ", ") + p.first;
    XTEN_FAIL(ValueError, "key_averages().table", "unknown sort_by '{}' (one of: {})", sort_by,
              names);
  }
  std::vector<const Average*> sorted;
  for (const auto& r : rows) sorted.push_back(&r);
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Average* a, const Average* b) {
    return k->second(*a) > k->second(*b);
  });
  int64_t all_self = 0, all_device = 0;
  for (const auto& r : rows) {
    all_self += r.self_ns;
    if (r.is_device) all_device += r.self_device_ns;
  }
  std::string head = fmt::format("{:<36} {:>8} {:>13} {:>7} {:>13}", "Name", "Calls",
                                 "Self CPU (ms)", "Self %", "CPU tot. (ms)");
  if (has_device) head += fmt::format(" {:>13} {:>13}", "Self XPU (ms)", "XPU tot. (ms)");
  if (has_memory)
    head += fmt::format(" {:>11} {:>11} {:>11} {:>11}", "CPU Mem", "Peak CPU", "XPU Mem",
                        "Peak XPU");
  std::string s = head + "\n" + std::string(head.size(), '-') + "\n";
  for (size_t i = 0; i < sorted.size() && i < limit; ++i) {
    const Average& r = *sorted[i];
    s += fmt::format("{:<36} {:>8} {:>13.3f} {:>6.1f}% {:>13.3f}", r.name, r.calls,
                     r.self_ns * 1e-6, all_self ? 100.0 * r.self_ns / all_self : 0.0,
                     r.total_ns * 1e-6);
    if (has_device)
      s += fmt::format(" {:>13.3f} {:>13.3f}", r.self_device_ns * 1e-6, r.device_total_ns * 1e-6);
    if (has_memory)
      s += fmt::format(" {:>11} {:>11} {:>11} {:>11}", bytes_text(r.cpu_memory.total),
                       bytes_text(r.cpu_memory.peak), bytes_text(r.xpu_memory.total),
                       bytes_text(r.xpu_memory.peak));
    s += "\n";
  }
  s += fmt::format("Self CPU time total: {:.3f} ms\n", all_self * 1e-6);
  if (has_device) s += fmt::format("Self XPU time total: {:.3f} ms\n", all_device * 1e-6);
  return s;
}

void Profiler::export_chrome_trace(const std::string& path) const {
  // Layout (docs/profiler.md, "Reading the trace"): process 0 is the host (a track per thread,
  // memory counters); processes 1, 2, ... are the devices that ran work, in name order (a
  // track per stream). Flow arrows ("ac2g") go from the launch inside the host op to the
  // device slice.
  nlohmann::json trace;
  trace["displayTimeUnit"] = "ms";
  nlohmann::json& list = trace["traceEvents"] = nlohmann::json::array();
  int64_t t0 = INT64_MAX;
  for (const Event& e : events_) t0 = std::min(t0, e.start_ns);
  for (const DeviceEvent& d : device_events_) t0 = std::min({t0, d.start_ns, d.launch_ns});
  for (const MemoryEvent& m : memory_events_) t0 = std::min(t0, m.time_ns);
  if (t0 == INT64_MAX) t0 = 0;
  auto us = [&](int64_t ns) { return static_cast<double>(ns - t0) * 1e-3; };
  auto meta = [&](const char* what, int pid, int64_t tid, const std::string& name) {
    list.push_back({{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
                    {"args", {{"name", name}}}});
  };
  meta("process_name", 0, 0, "host");
  for (const Event& e : events_) {
    nlohmann::json j;
    j["name"] = e.name;
    j["cat"] = e.key == "user" ? "user_annotation" : e.key == "backward" ? "autograd" : "cpu_op";
    j["ph"] = "X";
    j["ts"] = us(e.start_ns);  // microseconds
    j["dur"] = static_cast<double>(e.duration_ns()) * 1e-3;
    j["pid"] = 0;
    j["tid"] = e.thread;
    j["args"]["dispatch key"] = e.key;
    j["args"]["id"] = e.id;
    if (!e.input_shapes.empty()) {
      j["args"]["input shapes"] = e.input_shapes;
      j["args"]["input dtypes"] = e.input_dtypes;
    }
    list.push_back(std::move(j));
  }
  std::map<std::string, int> pid_of;  // devices in name order: xpu:0 is 1, xpu:1 is 2, ...
  for (const DeviceEvent& d : device_events_) pid_of[d.device] = 0;
  {
    int next = 1;
    for (auto& [device, pid] : pid_of) {
      pid = next++;
      meta("process_name", pid, 0, device);
    }
  }
  std::set<std::pair<int, int>> named_stream;
  for (size_t i = 0; i < device_events_.size(); ++i) {
    const DeviceEvent& d = device_events_[i];
    const int pid = pid_of[d.device];
    if (named_stream.insert({pid, d.stream}).second)
      meta("thread_name", pid, d.stream, fmt::format("stream {}", d.stream));
    nlohmann::json j;
    j["name"] = d.name;
    j["cat"] = d.kind == "kernel" ? "kernel" : "gpu_" + d.kind;
    j["ph"] = "X";
    j["ts"] = us(d.start_ns);
    j["dur"] = static_cast<double>(d.duration_ns()) * 1e-3;
    j["pid"] = pid;
    j["tid"] = d.stream;
    j["args"]["device"] = d.device;
    j["args"]["stream"] = d.stream;
    j["args"]["correlation"] = d.correlation;
    if (d.kind == "kernel") {
      j["args"]["global size"] = d.global_size;
      j["args"]["local size"] = d.local_size;
    } else {
      j["args"]["bytes"] = d.bytes;
    }
    list.push_back(std::move(j));
    if (d.correlation == 0) continue;
    list.push_back({{"name", "ac2g"}, {"cat", "ac2g"}, {"ph", "s"}, {"id", i},
                    {"pid", 0}, {"tid", d.thread}, {"ts", us(d.launch_ns)}});
    list.push_back({{"name", "ac2g"}, {"cat", "ac2g"}, {"ph", "f"}, {"bp", "e"}, {"id", i},
                    {"pid", pid}, {"tid", d.stream}, {"ts", us(d.start_ns)}});
  }
  for (const MemoryEvent& m : memory_events_) {
    list.push_back({{"name", "[memory]"}, {"ph", "i"}, {"s", "t"}, {"pid", 0},
                    {"tid", m.thread}, {"ts", us(m.time_ns)},
                    {"args", {{"Device", m.device}, {"Bytes", m.bytes},
                              {"Total Allocated", m.total_allocated}, {"Addr", m.address}}}});
    list.push_back({{"name", "Memory " + m.device}, {"ph", "C"}, {"pid", 0},
                    {"ts", us(m.time_ns)}, {"args", {{"allocated bytes", m.total_allocated}}}});
  }
  std::ofstream f(path);
  XTEN_CHECK(f.good(), ValueError, "export_chrome_trace", "cannot write '{}'", path);
  f << trace.dump();
  XTEN_CHECK(f.good(), ValueError, "export_chrome_trace", "writing '{}' failed", path);
}

RecordFunction::RecordFunction(std::string name) : range_(std::move(name)) {}

}  // namespace xten::profiler
