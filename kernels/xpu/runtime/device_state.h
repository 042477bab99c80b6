#pragma once
// Per-device state of the XPU runtime (device.cpp owns it; stream.cpp, module_cache.cpp and
// allocator.cpp use it).
#include <atomic>
#include <map>
#include <memory>

#include <xten/kernels/xpu/runtime/runtime.h>

namespace xten::xpu {

struct DeviceState {
  int index = 0;
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  DeviceProperties props;

  std::once_flag streams_once;
  std::array<std::unique_ptr<StreamImpl>, kStreamsPerDevice> streams;
  std::atomic<uint32_t> next_pool_stream{0};

  std::mutex event_mutex;
  std::vector<ze_event_handle_t> free_events[2];  // [timing]

  Generator generator;

  std::mutex module_mutex;
  std::map<std::string, ze_module_handle_t> modules;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
};

}  // namespace xten::xpu
