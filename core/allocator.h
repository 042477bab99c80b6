#pragma once
// Allocator: one per device type, found through allocator_for(). A DataPtr owns its bytes
// and knows how to free them (from_blob gives one that frees nothing).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <xten/core/device.h>

namespace xten {

using DeleterFn = void (*)(void* ctx);

class DataPtr {
 public:
  DataPtr() = default;
  DataPtr(void* data, void* ctx, DeleterFn deleter, Device device)
      : data_(data), ctx_(ctx, deleter), device_(device) {}
  void* get() const { return data_; }
  Device device() const { return device_; }
  // What the deleter receives, and the deleter: an allocator recognises its own blocks by these.
  void* context() const { return ctx_.get(); }
  DeleterFn deleter() const { return ctx_.get_deleter(); }

 private:
  void* data_ = nullptr;
  std::unique_ptr<void, DeleterFn> ctx_{nullptr, [](void*) {}};
  Device device_{kCPU};
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
};

// The allocator of `type`: its backend's (core/device_interface.h) unless overridden; a
// DeviceError if the type has no backend.
Allocator* allocator_for(DeviceType type);
// Overrides (or, with nullptr, restores) the backend's allocator, for tests.
void set_allocator(DeviceType type, Allocator* allocator);

// CPU memory, aligned to kCpuAlignment bytes so that vector loads never split a line.
constexpr size_t kCpuAlignment = 64;
Allocator* cpu_allocator();
// Frees the large CPU blocks kept for reuse (Note [CPU block cache] in allocator.cpp).
void empty_cpu_cache();
// Bytes of CPU memory that tensors hold now (cpu_allocator's blocks in use; its cache of
// freed blocks not counted).
int64_t cpu_memory_allocated();

// Note [Memory reports] (docs/profiler.md): the CPU and XPU allocators report every
// allocation (+bytes) and free (-bytes, when the allocator's count of allocated bytes drops),
// with the device's running total after it, to the observer while one is set (the profiler's
// profile_memory). One relaxed load per allocation when none is. The observer is called on
// the allocating or freeing thread, possibly under the allocator's lock: it must only record.
using MemoryObserver = void (*)(Device device, const void* ptr, int64_t bytes,
                                int64_t total_allocated);
void set_memory_observer(MemoryObserver observer);  // nullptr: none
namespace detail {
extern std::atomic<MemoryObserver> g_memory_observer;
}
inline void report_memory(Device device, const void* ptr, int64_t bytes, int64_t total) {
  if (MemoryObserver f = detail::g_memory_observer.load(std::memory_order_relaxed))
    f(device, ptr, bytes, total);
}

}  // namespace xten
