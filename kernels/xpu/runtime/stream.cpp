// Streams (immediate in-order command lists), events, copies and kernel launches.
// Note [Streams] in docs/xpu_runtime.md.
#include <xten/kernels/xpu/runtime/device_state.h>

namespace xten::xpu {
namespace {

constexpr int kMaxDevices = 64;
thread_local std::array<StreamImpl*, kMaxDevices> t_current_stream{};

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
  ze_event_handle_t e = acquire_event(st->device, false);
  {
    std::lock_guard<std::mutex> lock(st->mutex);
    XTEN_ZE_CHECK(zeCommandListAppendBarrier(st->list, e, 0, nullptr));
  }
  XTEN_ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
  release_event(st->device, e, false);
}

}  // namespace

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
  ze_event_handle_t e = acquire_event(impl_->device, false);
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    XTEN_ZE_CHECK(zeCommandListAppendBarrier(impl_->list, e, 0, nullptr));
  }
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
  if (!cur) cur = streams_of(device).streams[0].get();  // the default stream, once per thread
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
void memcpy_async(const Stream& stream, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  std::lock_guard<std::mutex> lock(stream.impl()->mutex);
  XTEN_ZE_CHECK(
      zeCommandListAppendMemoryCopy(stream.impl()->list, dst, src, nbytes, nullptr, 0, nullptr));
}

void memcpy_blocking(const Stream& stream, void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  ze_event_handle_t e = acquire_event(stream.device_index(), false);
  {
    std::lock_guard<std::mutex> lock(stream.impl()->mutex);
    XTEN_ZE_CHECK(
        zeCommandListAppendMemoryCopy(stream.impl()->list, dst, src, nbytes, e, 0, nullptr));
  }
  XTEN_ZE_CHECK(zeEventHostSynchronize(e, UINT64_MAX));
  release_event(stream.device_index(), e, false);
}

void memset_async(const Stream& stream, void* dst, const void* pattern, size_t pattern_size,
                  size_t nbytes) {
  if (nbytes == 0) return;
  std::lock_guard<std::mutex> lock(stream.impl()->mutex);
  XTEN_ZE_CHECK(zeCommandListAppendMemoryFill(stream.impl()->list, dst, pattern, pattern_size,
                                              nbytes, nullptr, 0, nullptr));
}

// One work-item per element (Note [One work-item per element]); launch_prepared checks the
// 32-bit bound.
uint64_t grid_stride_groups(int64_t n) {
  return (static_cast<uint64_t>(n) + kGroupSize - 1) / kGroupSize;
}

void launch_prepared(const Stream& stream, Kernel& k, uint64_t groups) {
  XTEN_CHECK(groups <= UINT32_MAX, ValueError, "xpu", "{} work-groups exceed the launch limit",
             groups);
  const ze_group_count_t count{static_cast<uint32_t>(groups), 1, 1};
  std::lock_guard<std::mutex> lock(stream.impl()->mutex);
  XTEN_ZE_CHECK(
      zeCommandListAppendLaunchKernel(stream.impl()->list, k.handle, &count, nullptr, 0, nullptr));
}

}  // namespace xten::xpu
