#pragma once
// ze_opencl: a Level Zero driver implemented on OpenCL (PoCL on the CPU). The system loader
// (libze_loader) loads it through ZE_ENABLE_ALT_DRIVERS and reaches it only through the
// *ProcAddrTable getters in ddi.cpp. docs/level_zero_driver.md maps every object to its
// OpenCL counterpart. Level Zero handle types are opaque struct pointers; this header gives
// those structs their bodies.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <level_zero/ze_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ze_opencl {

// Advertised by zeDriverGetExtensionProperties, so that a runtime can tell this driver apart
// from a vendor's.
inline constexpr const char* kExtensionName = "ZE_experimental_xten_opencl_driver";

// Settings, read once at zeInit (docs/level_zero_driver.md):
//   ZE_OPENCL_DEVICE_MEMORY  caps each device's memory, bytes with optional K/M/G suffix
//   ZE_OPENCL_DEVICES        exposes the OpenCL device as this many Level Zero devices (1..8)
//   ZE_OPENCL_CACHE_DIR      where translated modules are kept (default ~/.cache/ze_opencl)
//   ZE_OPENCL_SPIRV_TRANSLATOR  the llvm-spirv program (default llvm-spirv-15)
//   ZE_OPENCL_FP64=0         hides the device's fp64 support (as on Intel Arc GPUs), for tests
struct Settings {
  bool hide_fp64 = false;
  uint64_t memory_cap = 0;  // 0: the OpenCL device's global memory
  uint32_t device_copies = 1;
  std::string cache_dir;
  std::string translator = "llvm-spirv-15";
};
const Settings& settings();

uint64_t monotonic_raw_ns();

}  // namespace ze_opencl

struct _ze_driver_handle_t;

struct _ze_device_handle_t {
  _ze_driver_handle_t* driver;
  cl_device_id cl;
  uint32_t ordinal;
  std::string name;
  uint64_t total_memory;
  uint64_t max_alloc;
  std::atomic<uint64_t> used{0};  // device + shared bytes, checked against total_memory
  bool fp64;
  cl_device_fp_config fp32_config, fp64_config, fp16_config;
};

struct _ze_driver_handle_t {
  cl_platform_id platform;
  cl_device_id cl_device;
  std::vector<std::unique_ptr<_ze_device_handle_t>> devices;
};

struct Allocation {
  size_t size;
  void* cl_base;  // what clSVMAlloc returned (below the pointer for alignments over 128)
  ze_memory_type_t type;
  ze_device_handle_t device;  // null for host allocations
};

struct _ze_context_handle_t {
  _ze_driver_handle_t* driver;
  cl_context cl;
  std::mutex mutex;
  std::map<uintptr_t, Allocation> allocations;  // keyed by base address
  // The allocation containing ptr, or allocations.end().
  std::map<uintptr_t, Allocation>::iterator find(const void* ptr);
};

struct _ze_event_pool_handle_t {
  ze_context_handle_t context;
  uint32_t count;
  bool timestamps;
};

// Note [Events over OpenCL]: a Level Zero event may be waited on (by a command or the host)
// before the command that signals it is appended. `source` is the OpenCL event of the
// signalling command once there is one; commands that wait before that wait on `early`, an
// OpenCL user event completed from `source`'s completion callback (or by a host signal).
struct _ze_event_handle_t {
  ze_event_pool_handle_t pool;
  std::mutex mutex;
  std::condition_variable cv;
  bool signaled = false;
  cl_event source = nullptr;
  cl_event early = nullptr;
  uint64_t generation = 0;  // bumped by reset: a stale callback must not signal
  uint64_t start_ns = 0, end_ns = 0;
  bool have_timestamps = false;
};

struct _ze_fence_handle_t {
  ze_command_queue_handle_t queue;
  std::mutex mutex;
  cl_event marker = nullptr;
  bool signaled = false;
};

struct KernelArg {
  enum Kind : uint8_t { kUnset, kValue, kPointer, kLocal } kind = kUnset;
  std::vector<uint8_t> bytes;  // kValue
  void* pointer = nullptr;     // kPointer
  size_t local_size = 0;       // kLocal
};

struct _ze_module_handle_t {
  ze_context_handle_t context;
  ze_device_handle_t device;
  cl_program program;
  std::vector<std::string> kernel_names;
  std::map<std::string, std::vector<cl_kernel_arg_address_qualifier>> kernel_params;
};

struct _ze_module_build_log_handle_t {
  std::string text;
};

struct _ze_kernel_handle_t {
  ze_module_handle_t module;
  cl_kernel cl;
  std::string name;
  std::vector<cl_kernel_arg_address_qualifier> address_spaces;
  std::vector<KernelArg> args;
  uint32_t group[3] = {1, 1, 1};
  size_t max_group_size;
  // zeKernelSetIndirectAccess: memory the kernel reaches through pointers it reads from memory
  // (a table of tensor addresses). Every allocation of the driver is SVM that PoCL's devices
  // address directly, so launches need nothing more; the flags are kept and reported.
  ze_kernel_indirect_access_flags_t indirect_access = 0;
  std::mutex mutex;  // cl_kernel argument setting + enqueue is not thread-safe
};

// One recorded command; a regular command list replays these onto a queue, an immediate one
// enqueues each as it is appended.
struct Command {
  enum Kind : uint8_t { kCopy, kFill, kLaunch, kBarrier } kind;
  explicit Command(Kind k) : kind(k) {}
  void* dst = nullptr;
  const void* src = nullptr;
  size_t size = 0;
  std::vector<uint8_t> pattern;
  ze_kernel_handle_t kernel = nullptr;
  std::vector<KernelArg> args;
  size_t global[3] = {1, 1, 1}, local[3] = {1, 1, 1};
  ze_event_handle_t signal = nullptr;
  std::vector<ze_event_handle_t> waits;
};

struct _ze_command_queue_handle_t {
  ze_context_handle_t context;
  ze_device_handle_t device;
  cl_command_queue cl;
  bool synchronous;
  cl_event last = nullptr;  // the last command enqueued (Note [Barriers on in-order queues])
  std::mutex mutex;         // executions from several threads are serialized
};

struct _ze_command_list_handle_t {
  ze_context_handle_t context;
  ze_device_handle_t device;
  cl_command_queue immediate = nullptr;  // set for immediate lists
  cl_event last = nullptr;               // of `immediate`: Note [Barriers on in-order queues]
  bool synchronous = false;
  bool closed = false;
  std::vector<Command> commands;
};

namespace ze_opencl {
// Enqueues `c`; `last` is the queue's last command, read and updated.
ze_result_t enqueue(cl_command_queue queue, const Command& c, cl_event* last);
cl_command_queue create_queue(ze_context_handle_t context, ze_device_handle_t device);
ze_result_t from_cl(cl_int err);
}  // namespace ze_opencl
