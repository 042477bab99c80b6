// Driver, devices, contexts and memory of the ze_opencl driver.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "ze_opencl.h"

namespace ze_opencl {

uint64_t monotonic_raw_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);  // PoCL's profiling clock
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

uint64_t parse_bytes(const char* s) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  double mult = 1;
  if (end && *end) {
    switch (*end) {
      case 'k':
      case 'K':
        mult = 1024.0;
        break;
      case 'm':
      case 'M':
        mult = 1024.0 * 1024;
        break;
      case 'g':
      case 'G':
        mult = 1024.0 * 1024 * 1024;
        break;
      default:
        break;
    }
  }
  return v > 0 ? static_cast<uint64_t>(v * mult) : 0;
}

Settings read_settings() {
  Settings s;
  if (const char* v = std::getenv("ZE_OPENCL_DEVICE_MEMORY")) s.memory_cap = parse_bytes(v);
  if (const char* v = std::getenv("ZE_OPENCL_DEVICES"))
    s.device_copies = static_cast<uint32_t>(std::clamp(std::atoi(v), 1, 8));
  if (const char* v = std::getenv("ZE_OPENCL_CACHE_DIR")) {
    s.cache_dir = v;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME")) {
    s.cache_dir = std::string(x) + "/ze_opencl";
  } else if (const char* h = std::getenv("HOME")) {
    s.cache_dir = std::string(h) + "/.cache/ze_opencl";
  }
  if (const char* v = std::getenv("ZE_OPENCL_SPIRV_TRANSLATOR")) s.translator = v;
  if (const char* v = std::getenv("ZE_OPENCL_FP64")) s.hide_fp64 = std::string(v) == "0";
  return s;
}

// A string property of an OpenCL object through its clGet*Info function (size, then text).
template <class Handle, class Info>
std::string info_string(cl_int (*get)(Handle, Info, size_t, void*, size_t*), Handle h, Info what) {
  size_t n = 0;
  get(h, what, 0, nullptr, &n);
  std::string s(n, '\0');
  get(h, what, n, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  return info_string(clGetDeviceInfo, d, what);
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

std::once_flag g_init_once;
ze_result_t g_init_result = ZE_RESULT_SUCCESS;
std::unique_ptr<_ze_driver_handle_t> g_driver;  // null when OpenCL offers no device
std::string g_status;                           // why there is no driver (zeOpenclDriverStatus)

std::string platform_name(cl_platform_id p) {
  return info_string(clGetPlatformInfo, p, static_cast<cl_platform_info>(CL_PLATFORM_NAME));
}

void init_once() {
  settings();
  cl_uint nplat = 0;
  if (const cl_int r = clGetPlatformIDs(0, nullptr, &nplat); r != CL_SUCCESS || nplat == 0) {
    const char* vendors = std::getenv("OCL_ICD_VENDORS");
    g_status = "no OpenCL platform (clGetPlatformIDs returned " + std::to_string(r) +
               "; is an OpenCL ICD such as pocl-opencl-icd installed? OCL_ICD_VENDORS=" +
               (vendors ? vendors : "unset") + ")";
    return;
  }
  std::vector<cl_platform_id> plats(nplat);
  clGetPlatformIDs(nplat, plats.data(), nullptr);
  g_status = "no OpenCL device with fine-grained buffer SVM on the " + std::to_string(nplat) +
             " platform(s):";
  for (cl_platform_id p : plats) {
    cl_device_id dev = nullptr;
    cl_uint ndev = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, &ndev) != CL_SUCCESS || ndev == 0) {
      g_status += " '" + platform_name(p) + "' (no device)";
      continue;
    }
    // Buffer SVM carries every allocation kind (Note [Memory] in docs/level_zero_driver.md).
    const auto svm = device_value<cl_device_svm_capabilities>(dev, CL_DEVICE_SVM_CAPABILITIES);
    if (!(svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) {
      g_status += " '" + platform_name(p) + "' (no fine-grained buffer SVM)";
      continue;
    }
    auto drv = std::make_unique<_ze_driver_handle_t>();
    drv->platform = p;
    drv->cl_device = dev;
    const std::string cl_name = device_string(dev, CL_DEVICE_NAME);
    const std::string version = device_string(dev, CL_DEVICE_VERSION);
    const uint64_t global = device_value<cl_ulong>(dev, CL_DEVICE_GLOBAL_MEM_SIZE);
    const uint64_t total = settings().memory_cap ? std::min(settings().memory_cap, global) : global;
    for (uint32_t i = 0; i < settings().device_copies; ++i) {
      auto d = std::make_unique<_ze_device_handle_t>();
      d->driver = drv.get();
      d->cl = dev;
      d->ordinal = i;
      d->name = "OpenCL CPU device via ze_opencl: " + cl_name + " (" + version + ")";
      d->total_memory = total;
      d->max_alloc =
          std::min<uint64_t>(total, device_value<cl_ulong>(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
      d->fp16_config = device_value<cl_device_fp_config>(dev, CL_DEVICE_HALF_FP_CONFIG);
      d->fp32_config = device_value<cl_device_fp_config>(dev, CL_DEVICE_SINGLE_FP_CONFIG);
      d->fp64_config = settings().hide_fp64
                           ? 0
                           : device_value<cl_device_fp_config>(dev, CL_DEVICE_DOUBLE_FP_CONFIG);
      d->fp64 = d->fp64_config != 0;
      drv->devices.push_back(std::move(d));
    }
    g_driver = std::move(drv);
    g_status.clear();
    return;
  }
}

ze_device_fp_flags_t fp_flags(cl_device_fp_config c) {
  ze_device_fp_flags_t f = 0;
  if (c & CL_FP_DENORM) f |= ZE_DEVICE_FP_FLAG_DENORM;
  if (c & CL_FP_INF_NAN) f |= ZE_DEVICE_FP_FLAG_INF_NAN;
  if (c & CL_FP_ROUND_TO_NEAREST) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
  if (c & CL_FP_ROUND_TO_ZERO) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO;
  if (c & CL_FP_ROUND_TO_INF) f |= ZE_DEVICE_FP_FLAG_ROUND_TO_INF;
  if (c & CL_FP_FMA) f |= ZE_DEVICE_FP_FLAG_FMA;
  if (c & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) f |= ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
  if (c & CL_FP_SOFT_FLOAT) f |= ZE_DEVICE_FP_FLAG_SOFT_FLOAT;
  return f;
}

void copy_name(char* dst, size_t cap, const std::string& s) {
  const size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void fill_uuid(uint8_t* id, size_t n, const std::string& seed, uint32_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (size_t i = 0; i < n; ++i) {
    for (char c : seed) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    h = (h ^ i) * 1099511628211ull;
    id[i] = static_cast<uint8_t>(h >> 32);
  }
}

}  // namespace

const Settings& settings() {
  static const Settings s = read_settings();
  return s;
}

ze_result_t from_cl(cl_int err) {
  switch (err) {
    case CL_SUCCESS:
      return ZE_RESULT_SUCCESS;
    case CL_OUT_OF_HOST_MEMORY:
      return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
      return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
      return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    case CL_INVALID_KERNEL_ARGS:
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    case CL_INVALID_ARG_SIZE:
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
    case CL_INVALID_ARG_INDEX:
      return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
    case CL_INVALID_KERNEL_NAME:
      return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_INVALID_BINARY:
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    default:
      return ZE_RESULT_ERROR_UNKNOWN;
  }
}

}  // namespace ze_opencl

using namespace ze_opencl;

// Why the driver offers no device ("" when it does, or before zeInit): the one export beside
// the proc-address tables, read by xten for its no-device error (docs/level_zero_driver.md).
extern "C" ZE_DLLEXPORT const char* zeOpenclDriverStatus() {
  return g_status.c_str();
}

// ---- driver ------------------------------------------------------------------------------
// The loader calls zeInit more than once; the work happens on the first call.
ze_result_t zoInit(ze_init_flags_t flags) {
  if (flags & ~(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY))
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  std::call_once(g_init_once, init_once);
  return g_init_result;
}

ze_result_t zoDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::call_once(g_init_once, init_once);
  const uint32_t n = g_driver ? 1 : 0;
  if (*count == 0 || !drivers) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, n);
  if (*count) drivers[0] = g_driver.get();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDriverGetApiVersion(ze_driver_handle_t d, ze_api_version_t* v) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!v) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *v = ZE_API_VERSION_CURRENT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDriverGetProperties(ze_driver_handle_t d, ze_driver_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  fill_uuid(p->uuid.id, ZE_MAX_DRIVER_UUID_SIZE, "ze_opencl driver", 0);
  p->driverVersion = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDriverGetIpcProperties(ze_driver_handle_t d, ze_driver_ipc_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->flags = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDriverGetExtensionProperties(ze_driver_handle_t d, uint32_t* count,
                                           ze_driver_extension_properties_t* props) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !props) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  copy_name(props[0].name, ZE_MAX_EXTENSION_NAME, kExtensionName);
  props[0].version = 1;
  return ZE_RESULT_SUCCESS;
}

// ---- devices -----------------------------------------------------------------------------
ze_result_t zoDeviceGet(ze_driver_handle_t d, uint32_t* count, ze_device_handle_t* devices) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const uint32_t n = static_cast<uint32_t>(d->devices.size());
  if (*count == 0 || !devices) {
    *count = n;
    return ZE_RESULT_SUCCESS;
  }
  *count = std::min(*count, n);
  for (uint32_t i = 0; i < *count; ++i) devices[i] = d->devices[i].get();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetSubDevices(ze_device_handle_t d, uint32_t* count, ze_device_handle_t*) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetProperties(ze_device_handle_t d, ze_device_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->type = ZE_DEVICE_TYPE_CPU;
  p->vendorId = device_value<cl_uint>(d->cl, CL_DEVICE_VENDOR_ID);
  p->deviceId = 0;
  p->flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
  p->subdeviceId = 0;
  p->coreClockRate = device_value<cl_uint>(d->cl, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  p->maxMemAllocSize = d->max_alloc;
  p->maxHardwareContexts = 1;
  p->maxCommandQueuePriority = 0;
  p->numThreadsPerEU = 1;
  p->physicalEUSimdWidth = 1;
  p->numEUsPerSubslice = 1;
  p->numSubslicesPerSlice = 1;
  p->numSlices = device_value<cl_uint>(d->cl, CL_DEVICE_MAX_COMPUTE_UNITS);
  // ns per tick; the 1.2 layout asks for ticks per second instead
  p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? 1000000000ull : 1;
  p->timestampValidBits = 64;
  p->kernelTimestampValidBits = 64;
  fill_uuid(p->uuid.id, ZE_MAX_DEVICE_UUID_SIZE, d->name, d->ordinal);
  copy_name(p->name, ZE_MAX_DEVICE_NAME, d->name);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetComputeProperties(ze_device_handle_t d, ze_device_compute_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  size_t items[3] = {1, 1, 1};
  clGetDeviceInfo(d->cl, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(items), items, nullptr);
  p->maxTotalGroupSize =
      static_cast<uint32_t>(device_value<size_t>(d->cl, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  p->maxGroupSizeX = static_cast<uint32_t>(items[0]);
  p->maxGroupSizeY = static_cast<uint32_t>(items[1]);
  p->maxGroupSizeZ = static_cast<uint32_t>(items[2]);
  p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = UINT32_MAX;
  p->maxSharedLocalMemory =
      static_cast<uint32_t>(device_value<cl_ulong>(d->cl, CL_DEVICE_LOCAL_MEM_SIZE));
  p->numSubGroupSizes = 1;  // no sub-groups on PoCL's CPU device: each work-item is its own
  std::fill(std::begin(p->subGroupSizes), std::end(p->subGroupSizes), 0u);
  p->subGroupSizes[0] = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetModuleProperties(ze_device_handle_t d, ze_device_module_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 4);
  p->flags = d->fp64 ? ZE_DEVICE_MODULE_FLAG_FP64 : 0;
  if (d->fp16_config) p->flags |= ZE_DEVICE_MODULE_FLAG_FP16;
  p->fp16flags = fp_flags(d->fp16_config);
  p->fp32flags = fp_flags(d->fp32_config);
  p->fp64flags = fp_flags(d->fp64_config);
  p->maxArgumentsSize =
      static_cast<uint32_t>(device_value<size_t>(d->cl, CL_DEVICE_MAX_PARAMETER_SIZE));
  p->printfBufferSize =
      static_cast<uint32_t>(device_value<size_t>(d->cl, CL_DEVICE_PRINTF_BUFFER_SIZE));
  std::memset(p->nativeKernelSupported.id, 0, ZE_MAX_NATIVE_KERNEL_UUID_SIZE);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetCommandQueueGroupProperties(ze_device_handle_t d, uint32_t* count,
                                                   ze_command_queue_group_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !p) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  p[0].flags =
      ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
  p[0].maxMemoryFillPatternSize = 128;
  p[0].numQueues = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetMemoryProperties(ze_device_handle_t d, uint32_t* count,
                                        ze_device_memory_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (*count == 0 || !p) {
    *count = 1;
    return ZE_RESULT_SUCCESS;
  }
  *count = 1;
  p[0].flags = 0;
  p[0].maxClockRate = 0;
  p[0].maxBusWidth = 0;
  p[0].totalSize = d->total_memory;
  copy_name(p[0].name, ZE_MAX_DEVICE_NAME,
            settings().memory_cap ? "host memory (capped)" : "host memory");
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetMemoryAccessProperties(ze_device_handle_t d,
                                              ze_device_memory_access_properties_t* p) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |
                  ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT |
                  ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;
  p->hostAllocCapabilities = p->deviceAllocCapabilities = rw;
  p->sharedSingleDeviceAllocCapabilities = p->sharedCrossDeviceAllocCapabilities = rw;
  p->sharedSystemAllocCapabilities = rw;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetCacheProperties(ze_device_handle_t d, uint32_t* count,
                                       ze_device_cache_properties_t*) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!count) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *count = 0;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetP2PProperties(ze_device_handle_t d, ze_device_handle_t peer,
                                     ze_device_p2p_properties_t* p) {
  if (!d || !peer) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  p->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS | ZE_DEVICE_P2P_PROPERTY_FLAG_ATOMICS;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceCanAccessPeer(ze_device_handle_t d, ze_device_handle_t peer, ze_bool_t* v) {
  if (!d || !peer) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!v) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *v = d->driver == peer->driver;  // every allocation is shared virtual memory
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoDeviceGetStatus(ze_device_handle_t d) {
  return d ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

ze_result_t zoDeviceGetGlobalTimestamps(ze_device_handle_t d, uint64_t* host, uint64_t* dev) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!host || !dev) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *host = *dev = monotonic_raw_ns();
  return ZE_RESULT_SUCCESS;
}

// ---- contexts ----------------------------------------------------------------------------
ze_result_t zoContextCreate(ze_driver_handle_t d, const ze_context_desc_t* desc,
                            ze_context_handle_t* out) {
  if (!d) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(d->platform), 0};
  cl_context ctx = clCreateContext(props, 1, &d->cl_device, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return from_cl(err);
  auto* c = new _ze_context_handle_t;
  c->driver = d;
  c->cl = ctx;
  *out = c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoContextDestroy(ze_context_handle_t c) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  for (auto& entry : c->allocations) {
    const Allocation& a = entry.second;
    if (a.device && a.type != ZE_MEMORY_TYPE_HOST) a.device->used -= a.size;
    clSVMFree(c->cl, a.cl_base);
  }
  clReleaseContext(c->cl);
  delete c;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoContextGetStatus(ze_context_handle_t c) {
  return c ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
}

// ---- memory ------------------------------------------------------------------------------
std::map<uintptr_t, Allocation>::iterator _ze_context_handle_t::find(const void* ptr) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return allocations.end();
  --it;
  return p < it->first + it->second.size ? it : allocations.end();
}

namespace {

ze_result_t allocate(ze_context_handle_t c, ze_memory_type_t type, ze_device_handle_t dev,
                     size_t size, size_t alignment, void** out) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  const bool counted = dev && type != ZE_MEMORY_TYPE_HOST;
  if (counted) {
    if (size > dev->max_alloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    // Reserve against the cap first, so that concurrent allocations cannot overshoot it.
    const uint64_t before = dev->used.fetch_add(size);
    if (before + size > dev->total_memory) {
      dev->used -= size;
      return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    }
  }
  // OpenCL caps SVM alignment at the largest data type (128 bytes): larger alignments
  // over-allocate and align inside.
  const size_t align = std::max<size_t>(alignment, 64);
  const size_t extra = align > 128 ? align : 0;
  void* base = clSVMAlloc(c->cl, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, size + extra,
                          static_cast<cl_uint>(std::min<size_t>(align, 128)));
  void* p = base;
  if (base && extra) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(base);
    p = reinterpret_cast<void*>((b + align - 1) & ~(uintptr_t)(align - 1));
  }
  if (!p) {
    if (counted) dev->used -= size;
    return counted ? ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY : ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  std::lock_guard<std::mutex> lock(c->mutex);
  c->allocations[reinterpret_cast<uintptr_t>(p)] = {size, base, type, dev};
  *out = p;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t zoMemAllocDevice(ze_context_handle_t c, const ze_device_mem_alloc_desc_t* desc,
                             size_t size, size_t alignment, ze_device_handle_t dev, void** out) {
  if (!dev) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return allocate(c, ZE_MEMORY_TYPE_DEVICE, dev, size, alignment, out);
}

ze_result_t zoMemAllocHost(ze_context_handle_t c, const ze_host_mem_alloc_desc_t* desc, size_t size,
                           size_t alignment, void** out) {
  if (!desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return allocate(c, ZE_MEMORY_TYPE_HOST, nullptr, size, alignment, out);
}

ze_result_t zoMemAllocShared(ze_context_handle_t c, const ze_device_mem_alloc_desc_t* ddesc,
                             const ze_host_mem_alloc_desc_t* hdesc, size_t size, size_t alignment,
                             ze_device_handle_t dev, void** out) {
  if (!ddesc || !hdesc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return allocate(c, ZE_MEMORY_TYPE_SHARED, dev, size, alignment, out);
}

ze_result_t zoMemFree(ze_context_handle_t c, void* ptr) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    auto it = c->allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == c->allocations.end()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    a = it->second;
    c->allocations.erase(it);
  }
  clSVMFree(c->cl, a.cl_base);
  if (a.device && a.type != ZE_MEMORY_TYPE_HOST) a.device->used -= a.size;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoMemGetAllocProperties(ze_context_handle_t c, const void* ptr,
                                    ze_memory_allocation_properties_t* p, ze_device_handle_t* dev) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr || !p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(c->mutex);
  auto it = c->find(ptr);
  p->type = it == c->allocations.end() ? ZE_MEMORY_TYPE_UNKNOWN : it->second.type;
  p->id = it == c->allocations.end() ? 0 : it->first;
  p->pageSize = it == c->allocations.end() ? 0 : 4096;
  if (dev) *dev = it == c->allocations.end() ? nullptr : it->second.device;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zoMemGetAddressRange(ze_context_handle_t c, const void* ptr, void** base,
                                 size_t* size) {
  if (!c) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::lock_guard<std::mutex> lock(c->mutex);
  auto it = c->find(ptr);
  if (it == c->allocations.end()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (base) *base = reinterpret_cast<void*>(it->first);
  if (size) *size = it->second.size;
  return ZE_RESULT_SUCCESS;
}
