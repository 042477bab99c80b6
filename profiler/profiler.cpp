// The profiler's recording and its reports (docs/profiler.md). Each thread appends its closed
// ranges to a buffer of its own (registered once per thread, locked only by that thread and by
// stop()), so recording never contends across threads.
#include <xten/profiler/profiler.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <xten/dispatch/dispatch_key.h>
#include <xten/dispatch/operator_entry.h>

namespace xten::profiler {
namespace detail {

std::atomic<bool> g_recording{false};
std::atomic<bool> g_record_shapes{false};

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct RawEvent {
  const OperatorEntry* op;
  std::string user_name;
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
  int depth = 0;  // ranges open on the thread (only the thread touches it)
};

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;  // every thread that recorded
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

}  // namespace

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

Range::Range(std::string user_name) : user_name_(std::move(user_name)) {
  open();
}

void Range::open() {
  if (!recording()) return;
  active_ = true;
  ++this_thread_buffer().depth;
  start_ns_ = now_ns();
}

Range::~Range() {
  if (!active_) return;
  const int64_t end = now_ns();
  ThreadBuffer& b = this_thread_buffer();
  const int depth = --b.depth;
  if (!recording()) return;  // stopped meanwhile: the range is not part of the session
  std::lock_guard<std::mutex> lock(b.mutex);
  b.events.push_back(RawEvent{op_, std::move(user_name_), key_, start_ns_, end, depth,
                              std::move(shapes_), std::move(dtypes_)});
}

}  // namespace detail

// ---- the profiler -----------------------------------------------------------------------
Profiler::Profiler(ProfilerOptions options) : options_(std::move(options)) {}

Profiler::~Profiler() {
  if (recording_) stop();
}

void Profiler::start() {
  XTEN_CHECK(!recording_, ValueError, "profiler", "this profiler is already recording");
  bool expected = false;
  XTEN_CHECK(detail::g_recording.compare_exchange_strong(expected, true), ValueError, "profiler",
             "another profiler is recording (one at a time)");
  {
    std::lock_guard<std::mutex> lock(detail::registry().mutex);
    for (auto& b : detail::registry().buffers) {
      std::lock_guard<std::mutex> block(b->mutex);
      b->events.clear();
    }
  }
  events_.clear();
  detail::g_record_shapes = options_.record_shapes();
  recording_ = true;
}

void Profiler::stop() {
  XTEN_CHECK(recording_, ValueError, "profiler", "stop() without start()");
  detail::g_record_shapes = false;
  detail::g_recording = false;
  recording_ = false;
  std::lock_guard<std::mutex> lock(detail::registry().mutex);
  for (auto& b : detail::registry().buffers) {
    std::lock_guard<std::mutex> block(b->mutex);
    for (auto& r : b->events) {
      Event e;
      e.name = r.op ? "xten::" + std::string(r.op->error_name()) : std::move(r.user_name);
      e.key = r.op ? to_string(r.key) : "user";
      e.start_ns = r.start_ns;
      e.end_ns = r.end_ns;
      e.thread = b->thread;
      e.depth = r.depth;
      e.input_shapes = std::move(r.shapes);
      e.input_dtypes = std::move(r.dtypes);
      events_.push_back(std::move(e));
    }
    b->events.clear();
  }
  std::stable_sort(events_.begin(), events_.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
}

Averages Profiler::key_averages() const {
  // Per thread, in start order, a stack of open ranges gives each range its parent.
  std::map<std::string, Average> by_name;
  std::map<uint64_t, std::vector<const Event*>> open;
  std::map<const Event*, int64_t> children_ns;
  auto close_until = [&](std::vector<const Event*>& stack, int64_t t) {
    while (!stack.empty() && stack.back()->end_ns <= t) stack.pop_back();
  };
  std::vector<std::pair<const Event*, const Event*>> parent_of;  // (event, parent or null)
  for (const Event& e : events_) {
    auto& stack = open[e.thread];
    close_until(stack, e.start_ns);
    const Event* parent = stack.empty() ? nullptr : stack.back();
    parent_of.emplace_back(&e, parent);
    if (parent) children_ns[parent] += e.duration_ns();
    stack.push_back(&e);
  }
  for (auto [e, parent] : parent_of) {
    Average& a = by_name[e->name];
    a.name = e->name;
    a.self_ns += e->duration_ns() - children_ns[e];
    if (!parent || parent->name != e->name) {
      ++a.calls;
      a.total_ns += e->duration_ns();
    }
  }
  Averages out;
  for (auto& [name, a] : by_name) out.rows.push_back(a);
  std::sort(out.rows.begin(), out.rows.end(), [](const Average& a, const Average& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
  });
  return out;
}

std::string Averages::table(size_t limit) const {
  int64_t all_self = 0;
  for (const auto& r : rows) all_self += r.self_ns;
  std::string s = fmt::format("{:<36} {:>8} {:>14} {:>8} {:>14}\n", "Name", "Calls",
                              "Self CPU (ms)", "Self %", "CPU total (ms)");
  s += std::string(84, '-') + "\n";
  for (size_t i = 0; i < rows.size() && i < limit; ++i) {
    const Average& r = rows[i];
    s += fmt::format("{:<36} {:>8} {:>14.3f} {:>7.1f}% {:>14.3f}\n", r.name, r.calls,
                     r.self_ns * 1e-6, all_self ? 100.0 * r.self_ns / all_self : 0.0,
                     r.total_ns * 1e-6);
  }
  s += fmt::format("Self CPU time total: {:.3f} ms\n", all_self * 1e-6);
  return s;
}

void Profiler::export_chrome_trace(const std::string& path) const {
  nlohmann::json trace;
  trace["displayTimeUnit"] = "ms";
  nlohmann::json& list = trace["traceEvents"] = nlohmann::json::array();
  const int64_t t0 = events_.empty() ? 0 : events_.front().start_ns;
  for (const Event& e : events_) {
    nlohmann::json j;
    j["name"] = e.name;
    j["cat"] = e.key == "user" ? "user_annotation" : "cpu_op";
    j["ph"] = "X";
    j["ts"] = static_cast<double>(e.start_ns - t0) * 1e-3;  // microseconds
    j["dur"] = static_cast<double>(e.duration_ns()) * 1e-3;
    j["pid"] = 0;
    j["tid"] = e.thread;
    j["args"]["dispatch key"] = e.key;
    if (!e.input_shapes.empty()) {
      j["args"]["input shapes"] = e.input_shapes;
      j["args"]["input dtypes"] = e.input_dtypes;
    }
    list.push_back(std::move(j));
  }
  std::ofstream f(path);
  XTEN_CHECK(f.good(), ValueError, "export_chrome_trace", "cannot write '{}'", path);
  f << trace.dump();
  XTEN_CHECK(f.good(), ValueError, "export_chrome_trace", "writing '{}' failed", path);
}

RecordFunction::RecordFunction(std::string name) : range_(std::move(name)) {}

}  // namespace xten::profiler
