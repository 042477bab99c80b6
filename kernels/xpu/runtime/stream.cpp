// Streams (immediate in-order command lists), events, copies and kernel launches.
// Note [Streams] in docs/xpu_runtime.md.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <xten/kernels/xpu/runtime/device_state.h>
#include <xten/profiler/record.h>

namespace xten::xpu {
namespace {

constexpr int kMaxDevices = 64;
thread_local std::array<StreamImpl*, kMaxDevices> t_current_stream{};

// Note [Exit with work in flight] in docs/xpu_runtime.md.
std::atomic<bool> g_draining{false};
std::atomic<std::thread::id> g_exiting_thread{};
// The process that started the runtime: a forked child has none of the driver's threads, so
// its exit must not wait for them.
std::atomic<pid_t> g_runtime_pid{0};
// How long the drain waits for one stream before the process exits anyway.
constexpr uint64_t kExitWaitNs = 60'000'000'000ull;

// exit() runs the exiting thread's thread-local destructors before any atexit handler: the
// main thread's registers the drain there, so that it runs first of all the handlers, before
// the statics that PoCL and LLVM made while compiling kernels are destroyed.
struct DrainAtMainThreadExit {
  ~DrainAtMainThreadExit() { register_drain_for_exit(); }
};
void arm_drain_at_main_thread_exit() {
  if (gettid() != getpid()) return;
  thread_local DrainAtMainThreadExit armed;
  (void)armed;
}

// The stream's lock, for appending work (a kernel, a copy, a fill).
std::unique_lock<std::mutex> lock_for_work(StreamImpl* st,
                                           std::unique_lock<std::mutex>* also = nullptr) {
  std::unique_lock<std::mutex> lock(st->mutex);
  park_if_draining(lock, also);
  return lock;
}

DeviceState& streams_of(int device) {
  DeviceState& s = device_state(device);
  std::call_once(s.streams_once, [&s] {
    for (int i = 0; i < kStreamsPerDevice; ++i) {
      auto impl = std::make_unique<StreamImpl>();
      impl->device = s.index;
      impl->id = i;
      ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
      qd.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
      qd.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
      XTEN_ZE_CHECK(zeCommandListCreateImmediate(s.context, s.device, &qd, &impl->list));
      s.streams[static_cast<size_t>(i)] = std::move(impl);
    }
  });
  return s;
}

// Appends a barrier that signals a fresh event and waits for it on the host.
void sync_stream(StreamImpl* st) {
  ze_event_handle_t e = append_marker(st);
  XTEN_ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
  release_event(st->device, e, false);
}

// Work the exiting thread appends after the drain (its static destructors') finishes before
// the call returns.
void settle_if_draining(StreamImpl* st) {
  if (g_draining.load(std::memory_order_acquire)) sync_stream(st);
}

}  // namespace

void park_if_draining(std::unique_lock<std::mutex>& held, std::unique_lock<std::mutex>* also) {
  if (!g_draining.load(std::memory_order_acquire)) return;
  if (g_exiting_thread.load() == std::this_thread::get_id()) return;
  held.unlock();
  if (also) also->unlock();
  for (;;) std::this_thread::sleep_for(std::chrono::hours(24));  // until the process ends
}

void drain_for_exit() noexcept {
  if (g_draining.load()) return;  // registered more than once: the first call drains
  if (getpid() != g_runtime_pid) return;
  g_exiting_thread.store(std::this_thread::get_id());
  g_draining.store(true);
  try {
    for (int d = 0; d < device_count(); ++d) {
      DeviceState& s = streams_of(d);
      { std::lock_guard<std::mutex> builds_done(s.module_mutex); }
      for (auto& st : s.streams) {
        ze_event_handle_t e = append_marker(st.get());
        if (zeEventHostSynchronize(e, kExitWaitNs) != ZE_RESULT_SUCCESS) {
          std::fprintf(stderr, "xten: xpu:%d stream %d still busy at exit after %llu s\n", d,
                       st->id, static_cast<unsigned long long>(kExitWaitNs / 1'000'000'000));
          continue;
        }
        release_event(d, e, false);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xten: draining the XPU at exit failed: %s\n", e.what());
  }
}

ze_event_handle_t append_marker(StreamImpl* st) {
  ze_event_handle_t e = acquire_event(st->device, false);
  std::lock_guard<std::mutex> lock(st->mutex);
  XTEN_ZE_CHECK(zeCommandListAppendBarrier(st->list, e, 0, nullptr));
  return e;
}

void register_drain_for_exit() {
  pid_t none = 0;  // the first registration is the process that started the runtime
  g_runtime_pid.compare_exchange_strong(none, getpid());
  std::atexit(drain_for_exit);
}

int Stream::device_index() const {
  return impl_->device;
}
int Stream::id() const {
  return impl_->id;
}
void Stream::synchronize() const {
  sync_stream(impl_);
}
bool Stream::query() const {
  ze_event_handle_t e = append_marker(impl_);
  // The marker passes an idle stream within microseconds: a short grace, not a wait for work.
  constexpr uint64_t kGraceNs = 200000;
  const ze_result_t r = zeEventHostSynchronize(e, kGraceNs);
  XTEN_CHECK(r == ZE_RESULT_SUCCESS || r == ZE_RESULT_NOT_READY, DeviceError, "xpu",
             "zeEventHostSynchronize failed: {}", ze_result_name(r));
  if (r == ZE_RESULT_NOT_READY)
    XTEN_ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));  // before reuse
  release_event(impl_->device, e, false);
  return r == ZE_RESULT_SUCCESS;
}

Stream get_default_stream(int device) {
  return Stream(streams_of(device).streams[0].get());
}

Stream get_stream_from_pool(int device) {
  DeviceState& s = streams_of(device);
  const uint32_t k = s.next_pool_stream.fetch_add(1, std::memory_order_relaxed);
  return Stream(s.streams[1 + k % (kStreamsPerDevice - 1)].get());
}

Stream get_current_stream(int device) {
  StreamImpl*& cur = t_current_stream[static_cast<size_t>(normalize_device(device))];
  if (!cur) {                                   // once per thread and device
    cur = streams_of(device).streams[0].get();  // the default stream
    arm_drain_at_main_thread_exit();
  }
  return Stream(cur);
}

void set_current_stream(const Stream& stream) {
  t_current_stream[static_cast<size_t>(stream.device_index())] = stream.impl();
}

void synchronize(int device) {
  DeviceState& s = streams_of(device);
  for (auto& st : s.streams) sync_stream(st.get());
}

StreamGuard::StreamGuard(const Stream& stream)
    : previous_stream_(get_current_stream(stream.device_index())),
      previous_device_(current_device()) {
  set_device(stream.device_index());
  set_current_stream(stream);
}
StreamGuard::~StreamGuard() {
  set_current_stream(previous_stream_);
  set_device(previous_device_);
}

// ---- events ----------------------------------------------------------------------------
struct EventImpl {
  int device = -1;
  ze_event_handle_t event = nullptr;
};

Event::Event(bool enable_timing) : timing_(enable_timing) {}
Event::~Event() {
  if (impl_) {
    if (impl_->event) {
      zeEventHostSynchronize(impl_->event, UINT64_MAX);  // no throwing from a destructor
      release_event(impl_->device, impl_->event, timing_);
    }
    delete impl_;
  }
}
Event::Event(Event&& o) noexcept : impl_(o.impl_), timing_(o.timing_) {
  o.impl_ = nullptr;
}
Event& Event::operator=(Event&& o) noexcept {
  std::swap(impl_, o.impl_);
  std::swap(timing_, o.timing_);
  return *this;
}

void Event::record() {
  record(get_current_stream());
}

void Event::record(const Stream& stream) {
  if (!impl_) impl_ = new EventImpl;
  if (impl_->event) {  // re-recording: the old marker is dropped once it has passed
    XTEN_ZE_CHECK(zeEventHostSynchronize(impl_->event, UINT64_MAX));
    release_event(impl_->device, impl_->event, timing_);
  }
  impl_->device = stream.device_index();
  impl_->event = acquire_event(impl_->device, timing_);
  std::lock_guard<std::mutex> lock(stream.impl()->mutex);
  XTEN_ZE_CHECK(zeCommandListAppendBarrier(stream.impl()->list, impl_->event, 0, nullptr));
}

void Event::wait(const Stream& stream) const {
  if (!impl_ || !impl_->event) return;
  std::lock_guard<std::mutex> lock(stream.impl()->mutex);
  XTEN_ZE_CHECK(zeCommandListAppendWaitOnEvents(stream.impl()->list, 1, &impl_->event));
}

void Event::synchronize() const {
  if (impl_ && impl_->event) XTEN_ZE_CHECK(zeEventHostSynchronize(impl_->event, UINT64_MAX));
}

bool Event::query() const {
  if (!impl_ || !impl_->event) return true;
  const ze_result_t r = zeEventQueryStatus(impl_->event);
  XTEN_CHECK(r == ZE_RESULT_SUCCESS || r == ZE_RESULT_NOT_READY, DeviceError, "xpu",
             "zeEventQueryStatus failed: {}", ze_result_name(r));
  return r == ZE_RESULT_SUCCESS;
}

double Event::elapsed_time(const Event& end) const {
  XTEN_CHECK(timing_ && end.timing_, ValueError, "elapsed_time",
             "both events must be created with enable_timing=true");
  XTEN_CHECK(impl_ && impl_->event && end.impl_ && end.impl_->event, ValueError, "elapsed_time",
             "both events must be recorded first");
  XTEN_CHECK(impl_->device == end.impl_->device, ValueError, "elapsed_time",
             "events are on different devices ({} and {})", impl_->device, end.impl_->device);
  synchronize();
  end.synchronize();
  ze_kernel_timestamp_result_t a, b;
  XTEN_ZE_CHECK(zeEventQueryKernelTimestamp(impl_->event, &a));
  XTEN_ZE_CHECK(zeEventQueryKernelTimestamp(end.impl_->event, &b));
  ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  XTEN_ZE_CHECK(zeDeviceGetProperties(ze_device(impl_->device), &p));
  const double ns_per_tick = static_cast<double>(p.timerResolution);
  return (static_cast<double>(b.global.kernelEnd) - static_cast<double>(a.global.kernelEnd)) *
         ns_per_tick * 1e-6;
}

// ---- copies and launches ---------------------------------------------------------------
// Note [Device activity]: a copy's record while a profiler records the device.
namespace {
ProfiledWork profiled_copy(StreamImpl* st, void* dst, const void* src, size_t nbytes) {
  if (!profiler::detail::recording_device()) return {};
  return ProfiledWork(st, copy_name(st->device, dst, src), "memcpy", 0, nbytes);
}
}  // namespace

void memcpy_async(const Stream& stream, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  ProfiledWork profiled = profiled_copy(stream.impl(), dst, src, nbytes);
  {
    auto lock = lock_for_work(stream.impl());
    XTEN_ZE_CHECK(zeCommandListAppendMemoryCopy(stream.impl()->list, dst, src, nbytes,
                                                profiled.event(), 0, nullptr));
  }
  profiled.commit();
  settle_if_draining(stream.impl());
}

void memcpy_blocking(const Stream& stream, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  // Waited on here either way; returned to the pool here only if it is not the profiler's.
  ProfiledWork profiled = profiled_copy(stream.impl(), dst, src, nbytes);
  const bool ours = !profiled.event();
  ze_event_handle_t e = ours ? acquire_event(stream.device_index(), false) : profiled.event();
  {
    auto lock = lock_for_work(stream.impl());
    XTEN_ZE_CHECK(
        zeCommandListAppendMemoryCopy(stream.impl()->list, dst, src, nbytes, e, 0, nullptr));
  }
  profiled.commit();
  XTEN_ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
  if (ours) release_event(stream.device_index(), e, false);
}

void memset_async(const Stream& stream, void* dst, const void* pattern, size_t pattern_size,
                  size_t nbytes) {
  if (nbytes == 0) return;
  ProfiledWork profiled;
  if (profiler::detail::recording_device())
    profiled = ProfiledWork(stream.impl(), "Memset", "memset", 0, nbytes);
  {
    auto lock = lock_for_work(stream.impl());
    XTEN_ZE_CHECK(zeCommandListAppendMemoryFill(stream.impl()->list, dst, pattern, pattern_size,
                                                nbytes, profiled.event(), 0, nullptr));
  }
  profiled.commit();
  settle_if_draining(stream.impl());
}

// One work-item per element (Note [One work-item per element]); launch_prepared checks the
// 32-bit bound.
uint64_t grid_stride_groups(int64_t n) {
  return (static_cast<uint64_t>(n) + kGroupSize - 1) / kGroupSize;
}

void launch_prepared(const Stream& stream, Kernel& k, uint64_t groups,
                     std::unique_lock<std::mutex>& kernel_lock) {
  XTEN_CHECK(groups <= UINT32_MAX, ValueError, "xpu", "{} work-groups exceed the launch limit",
             groups);
  const ze_group_count_t count{static_cast<uint32_t>(groups), 1, 1};
  ProfiledWork profiled;
  if (profiler::detail::recording_device())
    profiled = ProfiledWork(stream.impl(), k.name, "kernel", groups * kGroupSize, 0);
  {
    auto lock = lock_for_work(stream.impl(), &kernel_lock);
    XTEN_ZE_CHECK(zeCommandListAppendLaunchKernel(stream.impl()->list, k.handle, &count,
                                                  profiled.event(), 0, nullptr));
  }
  profiled.commit();
  settle_if_draining(stream.impl());
}

}  // namespace xten::xpu
