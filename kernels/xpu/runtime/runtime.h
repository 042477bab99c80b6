#pragma once
// Internals of the XPU runtime shared by the runtime files and the XPU op files
// (kernels/xpu/ops): Level Zero handles per device, error checking, stream access, kernel
// lookup and launch. Not installed; users see xpu.h.
#include <level_zero/ze_api.h>

#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <xten/core/error.h>
#include <xten/kernels/xpu/runtime/xpu.h>

namespace xten::xpu {

// Level Zero result name, for messages.
const char* ze_result_name(ze_result_t r);

// Throws DeviceError naming the call and the result unless it succeeded.
#define XTEN_ZE_CHECK(call)                                                                 \
  do {                                                                                      \
    const ze_result_t xten_ze_r_ = (call);                                                  \
    XTEN_CHECK(xten_ze_r_ == ZE_RESULT_SUCCESS, DeviceError, "xpu", "{} failed: {}", #call, \
               ::xten::xpu::ze_result_name(xten_ze_r_));                                    \
  } while (0)

struct DeviceState;
// The device's state; DeviceError if there is no XPU, IndexError if out of range. -1: current.
DeviceState& device_state(int device = -1);
ze_context_handle_t ze_context(int device);
ze_device_handle_t ze_device(int device);
int normalize_device(int device);  // -1 -> current; checks the range
// Seeds the generators of the devices found so far (none before the runtime has started).
void seed_started_devices(uint64_t seed);

struct StreamImpl {
  int device;
  int id;
  ze_command_list_handle_t list = nullptr;  // an immediate, in-order command list
  std::mutex mutex;                         // command lists are not thread-safe
};

// Events from per-device pools, reused (host-visible; `timing` ones carry kernel timestamps).
ze_event_handle_t acquire_event(int device, bool timing);
void release_event(int device, ze_event_handle_t e, bool timing);
// Appends to the stream a barrier that signals a fresh (non-timing) event, and returns it:
// the marker that synchronize, query, the exit drain and the allocator's frees wait on. The
// caller releases it once it has passed.
ze_event_handle_t append_marker(StreamImpl* st);

// A kernel of an embedded family, built for `device` on first use. `family` is the module
// name ("copy", "copy_f64"); asking for an _f64 family on a device without fp64 raises
// TypeError naming `op` and the device's missing capability.
struct Kernel {
  ze_kernel_handle_t handle;
  std::string name;  // the kernel's, for the profiler
  std::once_flag indirect_once;  // zeKernelSetIndirectAccess, for kernels that need it
  std::mutex mutex;  // argument setting + append is not thread-safe in Level Zero
};
Kernel& get_kernel(int device, const char* op, const std::string& family, const std::string& name);

// Kernels run in work-groups of 256 (kGroupSize, declared by each kernel). Arguments are
// passed by value, pointers as pointers, vectors (long8) as std::array<int64_t, 8>.
//
// launch(): for elementwise kernels over n items (Note [One work-item per element] in
// kernels/xpu/spirv/common.h): one work-item per item (up to 2^32 groups).
// launch_groups(): exactly `groups` work-groups, for kernels that give each group its part.
constexpr uint32_t kGroupSize = 256;
// Appends k (its arguments set, `kernel_lock` holding k.mutex) to the stream.
void launch_prepared(const Stream& stream, Kernel& k, uint64_t groups,
                     std::unique_lock<std::mutex>& kernel_lock);
uint64_t grid_stride_groups(int64_t n);

template <class... Args>
void launch_groups(const Stream& stream, Kernel& k, uint64_t groups, const Args&... args) {
  if (groups == 0) return;
  std::unique_lock<std::mutex> lock(k.mutex);
  uint32_t index = 0;
  auto set = [&](const auto& a) {
    XTEN_ZE_CHECK(zeKernelSetArgumentValue(k.handle, index++, sizeof(a), &a));
  };
  (set(args), ...);
  launch_prepared(stream, k, groups, lock);
}

template <class... Args>
void launch(const Stream& stream, Kernel& k, int64_t n, const Args&... args) {
  if (n > 0) launch_groups(stream, k, grid_stride_groups(n), args...);
}

// Strided geometry of up to 8 dims in the form kernels take (sizes, strides as long8).
using Long8 = std::array<int64_t, 8>;

// Note [Device activity] (docs/profiler.md, profiling.cpp): while a profiler records the
// device, work appended to a stream signals a timing event of its own. Made before the append
// (event() is what it signals; null when no profiler records the device), commit() after it
// succeeded hands the record to the profiler; one never committed returns its event.
class ProfiledWork {
 public:
  ProfiledWork() = default;
  ProfiledWork(StreamImpl* st, std::string name, const char* kind, uint64_t global_size,
               uint64_t bytes);
  ~ProfiledWork();
  ProfiledWork(ProfiledWork&& o) noexcept { swap(o); }
  ProfiledWork& operator=(ProfiledWork&& o) noexcept {
    swap(o);
    return *this;
  }
  ze_event_handle_t event() const { return event_; }
  void commit();

 private:
  void swap(ProfiledWork& o) noexcept;
  StreamImpl* stream_ = nullptr;
  ze_event_handle_t event_ = nullptr;
  std::string name_;
  const char* kind_ = nullptr;
  uint64_t global_size_ = 0, bytes_ = 0;
  int64_t launch_ns_ = 0;
  uint64_t correlation_ = 0, thread_ = 0;
};
// The name of a copy by the memory it reads and writes: "Memcpy HtoD", "DtoH", "DtoD".
std::string copy_name(int device, const void* dst, const void* src);

// Copies between host and device memory on `stream` and waits for it.
void memcpy_blocking(const Stream& stream, void* dst, const void* src, size_t nbytes);
void memcpy_async(const Stream& stream, void* dst, const void* src, size_t nbytes);
void memset_async(const Stream& stream, void* dst, const void* pattern, size_t pattern_size,
                  size_t nbytes);

// Note [Exit with work in flight] (docs/xpu_runtime.md). drain_for_exit() runs once, from
// atexit, first of the exit handlers (the main thread's thread-local destructor registers it):
// it finishes every module build and every stream's work before the statics of the driver,
// PoCL and LLVM are destroyed. Work appended afterwards by a thread other than the exiting one
// parks that thread until the process ends: park_if_draining() releases `held` (and `also`)
// first, so the exiting thread never waits on it.
void drain_for_exit() noexcept;
void register_drain_for_exit();
void park_if_draining(std::unique_lock<std::mutex>& held,
                      std::unique_lock<std::mutex>* also = nullptr);

// The caching allocator (allocator.cpp).
Allocator* caching_allocator();

}  // namespace xten::xpu
