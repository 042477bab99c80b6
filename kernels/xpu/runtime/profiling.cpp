// Device activity for the profiler: Note [Device activity] in docs/profiler.md.
// While a profiler records the XPU, each kernel, copy and fill appended to a stream signals a
// timing event of its own; the event and what the host knew at the append (name, sizes, the
// op range that launched it) wait here until the profiler collects them, then the event's
// kernel timestamps are put on the host clock:
// - the device clock is sampled against the host clock (zeDeviceGetGlobalTimestamps between
//   two host reads, the tightest of three) when a device's first work of a session is recorded
//   and again at collect(); a timestamp maps linearly between the two samples, so drift between
//   the clocks over the session is corrected, not only their offset;
// - kernel timestamps keep only kernelTimestampValidBits bits on some devices: each is unwrapped
//   to the latest full value not after the collect-time sample (work has finished by then);
// - so that a long session does not hold thousands of events, every kHarvestEvery records the
//   finished ones are read and their events returned to the pool.
#include <algorithm>
#include <deque>
#include <map>

#include <xten/kernels/xpu/runtime/device_state.h>
#include <xten/profiler/record.h>

namespace xten::xpu {
namespace {

namespace prof = ::xten::profiler;

constexpr size_t kHarvestEvery = 1024;

struct ClockSample {
  int64_t host_ns = 0;    // the profiler's clock
  int64_t device_ns = 0;  // device ticks scaled to ns
};

struct DeviceClock {
  double ns_per_tick = 1.0;
  uint64_t valid_mask = ~0ull;  // kernelTimestampValidBits
  bool have_start = false;
  ClockSample start;
};

ClockSample sample_clock(int device, double ns_per_tick) {
  ClockSample best;
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    uint64_t host = 0, dev = 0;
    const int64_t before = prof::detail::now_ns();
    XTEN_ZE_CHECK(zeDeviceGetGlobalTimestamps(ze_device(device), &host, &dev));
    const int64_t after = prof::detail::now_ns();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, static_cast<int64_t>(dev * ns_per_tick)};
    }
  }
  return best;
}

struct Work {
  prof::DeviceEvent info;
  int device = 0;
  ze_event_handle_t event = nullptr;  // null once read (harvested)
  uint64_t start_ticks = 0, end_ticks = 0;
};

class XpuActivity final : public prof::detail::DeviceActivitySource {
 public:
  void add(Work w) {
    std::lock_guard<std::mutex> lock(mutex_);
    DeviceClock& c = clock(w.device);
    if (!c.have_start) {
      // The first sample of the session: before this work could have started.
      c.start = sample_clock(w.device, c.ns_per_tick);
      c.have_start = true;
    }
    work_.push_back(std::move(w));
    if (work_.size() % kHarvestEvery == 0) harvest(false);
  }

  std::vector<prof::DeviceEvent> collect() override {
    std::lock_guard<std::mutex> lock(mutex_);
    harvest(true);
    // Per device that ran work: device ticks -> host ns, linear between the session's first
    // sample and one taken now.
    struct Mapping {
      ClockSample a;
      double slope;
      uint64_t ref;  // device ticks now
      uint64_t mask;
      double ns_per_tick;
      int64_t operator()(uint64_t ticks) const {
        const uint64_t full = ref - ((ref - ticks) & mask);  // unwrapped, <= ref
        const double dev_ns = static_cast<double>(full) * ns_per_tick;
        return a.host_ns + static_cast<int64_t>((dev_ns - a.device_ns) * slope);
      }
    };
    std::map<int, Mapping> mapping;
    for (const Work& w : work_) {
      if (mapping.count(w.device)) continue;
      const DeviceClock& c = clock(w.device);
      const ClockSample b = sample_clock(w.device, c.ns_per_tick), &a = c.start;
      const double slope = b.device_ns - a.device_ns > 1000000
                               ? static_cast<double>(b.host_ns - a.host_ns) /
                                     static_cast<double>(b.device_ns - a.device_ns)
                               : 1.0;
      mapping[w.device] = Mapping{a, slope, static_cast<uint64_t>(b.device_ns / c.ns_per_tick),
                                  c.valid_mask, c.ns_per_tick};
    }
    std::vector<prof::DeviceEvent> out;
    for (Work& w : work_) {
      const Mapping& to_host = mapping.at(w.device);
      w.info.start_ns = to_host(w.start_ticks);
      w.info.end_ns = to_host(w.end_ticks);
      out.push_back(std::move(w.info));
    }
    work_.clear();
    for (auto& [d, c] : clocks_) c.have_start = false;
    return out;
  }

  void discard() override {
    std::lock_guard<std::mutex> lock(mutex_);
    harvest(true);
    work_.clear();
    for (auto& [d, c] : clocks_) c.have_start = false;
  }

 private:
  DeviceClock& clock(int device) {
    auto it = clocks_.find(device);
    if (it != clocks_.end()) return it->second;
    DeviceClock c;
    ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
    XTEN_ZE_CHECK(zeDeviceGetProperties(ze_device(device), &p));
    c.ns_per_tick = static_cast<double>(p.timerResolution);  // ns per tick for this stype
    const uint32_t bits = p.kernelTimestampValidBits;
    c.valid_mask = bits >= 64 || bits == 0 ? ~0ull : (1ull << bits) - 1;
    return clocks_.emplace(device, c).first->second;
  }

  // Reads the timestamps of finished work (all of it, waiting, with `wait`) and returns the
  // events to the pool.
  void harvest(bool wait) {
    for (Work& w : work_) {
      if (!w.event) continue;
      if (wait) {
        XTEN_ZE_CHECK(zeEventHostSynchronize(w.event, UINT64_MAX));
      } else if (zeEventQueryStatus(w.event) != ZE_RESULT_SUCCESS) {
        continue;
      }
      ze_kernel_timestamp_result_t ts{};
      XTEN_ZE_CHECK(zeEventQueryKernelTimestamp(w.event, &ts));
      w.start_ticks = ts.global.kernelStart;
      w.end_ticks = ts.global.kernelEnd;
      release_event(w.device, w.event, true);
      w.event = nullptr;
    }
  }

  std::mutex mutex_;
  std::deque<Work> work_;
  std::map<int, DeviceClock> clocks_;
};

XpuActivity& activity() {
  static XpuActivity* a = [] {
    auto* s = new XpuActivity;  // never destroyed, like the runtime
    prof::detail::register_device_source(s);
    return s;
  }();
  return *a;
}

}  // namespace

ProfiledWork::ProfiledWork(StreamImpl* st, std::string name, const char* kind,
                           uint64_t global_size, uint64_t bytes)
    : stream_(st),
      event_(acquire_event(st->device, true)),
      name_(std::move(name)),
      kind_(kind),
      global_size_(global_size),
      bytes_(bytes),
      launch_ns_(prof::detail::now_ns()),
      correlation_(prof::detail::current_range_id()),
      thread_(prof::detail::current_thread_number()) {}

ProfiledWork::~ProfiledWork() {
  if (event_) release_event(stream_->device, event_, true);  // never appended
}

void ProfiledWork::swap(ProfiledWork& o) noexcept {
  std::swap(stream_, o.stream_);
  std::swap(event_, o.event_);
  std::swap(name_, o.name_);
  std::swap(kind_, o.kind_);
  std::swap(global_size_, o.global_size_);
  std::swap(bytes_, o.bytes_);
  std::swap(launch_ns_, o.launch_ns_);
  std::swap(correlation_, o.correlation_);
  std::swap(thread_, o.thread_);
}

void ProfiledWork::commit() {
  if (!event_) return;
  Work w;
  w.device = stream_->device;
  w.event = event_;
  prof::DeviceEvent& info = w.info;
  info.name = std::move(name_);
  info.kind = kind_;
  info.device = "xpu:" + std::to_string(stream_->device);
  info.stream = stream_->id;
  if (info.kind == "kernel") {
    info.global_size = global_size_;
    info.local_size = kGroupSize;
  }
  info.bytes = bytes_;
  info.launch_ns = launch_ns_;
  info.correlation = correlation_;
  info.thread = thread_;
  event_ = nullptr;  // the record owns it now
  activity().add(std::move(w));
}

std::string copy_name(int device, const void* dst, const void* src) {
  auto side = [&](const void* p) {
    ze_memory_allocation_properties_t props{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    XTEN_ZE_CHECK(zeMemGetAllocProperties(ze_context(device), p, &props, nullptr));
    return props.type == ZE_MEMORY_TYPE_UNKNOWN ? "H" : "D";
  };
  return std::string("Memcpy ") + side(src) + "to" + side(dst);
}

}  // namespace xten::xpu
