// Finding XPU devices through the Level Zero loader, their properties, the current device,
// event pools and the per-device generators. Note [Finding devices] in docs/xpu_runtime.md.
#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <memory>

#include <xten/kernels/xpu/runtime/device_state.h>

namespace xten::xpu {

const char* ze_result_name(ze_result_t r) {
  switch (r) {
#define XTEN_ZE_CASE(x) \
  case x:               \
    return #x;
    XTEN_ZE_CASE(ZE_RESULT_SUCCESS)
    XTEN_ZE_CASE(ZE_RESULT_NOT_READY)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_DEVICE_LOST)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_UNINITIALIZED)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_SIZE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    XTEN_ZE_CASE(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
#undef XTEN_ZE_CASE
    default:
      return "ZE_RESULT_ERROR_UNKNOWN";
  }
}

namespace {

constexpr const char* kBundledExtension = "ZE_experimental_xten_opencl_driver";

std::string bundled_driver_path() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&device_count), &info) || !info.dli_fname) return {};
  std::string self = info.dli_fname;
  const size_t slash = self.rfind('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) +
         "/libze_opencl.so";
}

bool is_bundled(ze_driver_handle_t d) {
  uint32_t n = 0;
  if (zeDriverGetExtensionProperties(d, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0) return false;
  std::vector<ze_driver_extension_properties_t> ext(n);
  if (zeDriverGetExtensionProperties(d, &n, ext.data()) != ZE_RESULT_SUCCESS) return false;
  for (const auto& e : ext)
    if (std::strcmp(e.name, kBundledExtension) == 0) return true;
  return false;
}

DeviceProperties read_properties(ze_device_handle_t dev, bool bundled) {
  DeviceProperties p;
  ze_device_properties_t dp{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  XTEN_ZE_CHECK(zeDeviceGetProperties(dev, &dp));
  p.name = dp.name;
  p.max_compute_units = dp.numSlices * dp.numSubslicesPerSlice * dp.numEUsPerSubslice;
  ze_device_compute_properties_t cp{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  XTEN_ZE_CHECK(zeDeviceGetComputeProperties(dev, &cp));
  p.max_work_group_size = cp.maxTotalGroupSize;
  ze_device_module_properties_t mp{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
  XTEN_ZE_CHECK(zeDeviceGetModuleProperties(dev, &mp));
  p.has_fp16 = (mp.flags & ZE_DEVICE_MODULE_FLAG_FP16) != 0;
  p.has_fp64 = (mp.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
  uint32_t n = 0;
  XTEN_ZE_CHECK(zeDeviceGetMemoryProperties(dev, &n, nullptr));
  std::vector<ze_device_memory_properties_t> mem(n, {ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES});
  XTEN_ZE_CHECK(zeDeviceGetMemoryProperties(dev, &n, mem.data()));
  for (const auto& m : mem) p.total_memory += m.totalSize;
  p.driver =
      bundled ? "ze_opencl (bundled Level Zero driver over OpenCL)" : "Level Zero vendor driver";
  return p;
}

struct Runtime;
// Set once discovery is done: manual_seed reaches started devices only (seeding must not start
// the runtime; devices found later take the CPU generator's seed).
std::atomic<Runtime*> started_runtime{nullptr};

struct Runtime {
  std::vector<std::unique_ptr<DeviceState>> devices;
  std::string searched;  // what was looked for, for the no-device error
};

Runtime* discover() {
  auto* rt = new Runtime;  // never destroyed: Level Zero objects must outlive static destructors
  const char* mode_env = std::getenv("XTEN_XPU_DRIVER");
  const std::string mode = mode_env ? mode_env : "auto";
  if (mode != "auto" && mode != "vendor" && mode != "bundled") {
    rt->searched = fmt::format("XTEN_XPU_DRIVER='{}' is not one of auto, vendor, bundled", mode);
    return rt;
  }
  const std::string bundled = bundled_driver_path();
  struct stat st;
  const bool have_bundled = !bundled.empty() && stat(bundled.c_str(), &st) == 0;
  const char* user_alt = std::getenv("ZE_ENABLE_ALT_DRIVERS");
  if (!user_alt && mode != "vendor" && have_bundled) {
    // Listing the vendor's driver keeps a real Intel GPU visible (docs/xpu_runtime.md, Note
    // [Finding devices]).
    const std::string alt = mode == "bundled" ? bundled : "libze_intel_gpu.so.1," + bundled;
    setenv("ZE_ENABLE_ALT_DRIVERS", alt.c_str(), 0);
  }
  rt->searched = fmt::format(
      "looked for {} through the Level Zero loader (XTEN_XPU_DRIVER={}, ZE_ENABLE_ALT_DRIVERS={})",
      mode == "vendor" ? "Intel GPUs"
      : mode == "bundled"
          ? "the bundled OpenCL driver " + bundled
          : "Intel GPUs, then the bundled OpenCL driver " +
                (have_bundled ? bundled : std::string("(not found next to libxten)")),
      mode, std::getenv("ZE_ENABLE_ALT_DRIVERS") ? std::getenv("ZE_ENABLE_ALT_DRIVERS") : "unset");
  if (const ze_result_t r = zeInit(0); r != ZE_RESULT_SUCCESS) {
    rt->searched += fmt::format("; zeInit: {}", ze_result_name(r));
    return rt;
  }
  uint32_t ndrv = 0;
  zeDriverGet(&ndrv, nullptr);
  std::vector<ze_driver_handle_t> drivers(ndrv);
  if (ndrv) zeDriverGet(&ndrv, drivers.data());
  struct Found {
    ze_driver_handle_t driver;
    std::vector<ze_device_handle_t> devices;
  };
  std::vector<Found> vendor, ours;
  for (ze_driver_handle_t d : drivers) {
    const bool b = is_bundled(d);
    uint32_t n = 0;
    zeDeviceGet(d, &n, nullptr);
    std::vector<ze_device_handle_t> devs(n);
    if (n) zeDeviceGet(d, &n, devs.data());
    Found f{d, {}};
    for (ze_device_handle_t dev : devs) {
      ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
      if (zeDeviceGetProperties(dev, &p) != ZE_RESULT_SUCCESS) continue;
      if (b || p.type == ZE_DEVICE_TYPE_GPU) f.devices.push_back(dev);
    }
    if (!f.devices.empty()) (b ? ours : vendor).push_back(f);
  }
  const std::vector<Found>& chosen = mode == "bundled"                       ? ours
                                     : (!vendor.empty() || mode == "vendor") ? vendor
                                                                             : ours;
  const bool chosen_bundled = &chosen == &ours;
  if (chosen.empty() && have_bundled && mode != "vendor") {
    // The loader loaded the bundled driver: it can say why it offers no device.
    if (void* h = dlopen(bundled.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
      using StatusFn = const char* (*)();
      if (auto fn = reinterpret_cast<StatusFn>(dlsym(h, "zeOpenclDriverStatus")); fn && *fn())
        rt->searched += fmt::format("; the bundled driver: {}", fn());
      dlclose(h);
    }
  }
  for (const Found& f : chosen) {
    ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC};
    ze_context_handle_t ctx = nullptr;
    XTEN_ZE_CHECK(zeContextCreate(f.driver, &cd, &ctx));
    for (ze_device_handle_t dev : f.devices) {
      auto s = std::make_unique<DeviceState>();
      s->index = static_cast<int>(rt->devices.size());
      s->driver = f.driver;
      s->device = dev;
      s->context = ctx;
      s->props = read_properties(dev, chosen_bundled);
      // A manual_seed before the runtime started must reach this generator too.
      s->generator.manual_seed(default_cpu_generator().seed());
      rt->devices.push_back(std::move(s));
    }
  }
  started_runtime.store(rt, std::memory_order_release);
  // After zeInit loaded the driver, PoCL and LLVM: the drain runs before their exit handlers.
  if (!rt->devices.empty()) register_drain_for_exit();
  return rt;
}

Runtime& runtime() {
  static Runtime* rt = discover();
  return *rt;
}

thread_local int t_current_device = 0;

}  // namespace

int device_count() {
  return static_cast<int>(runtime().devices.size());
}

void seed_started_devices(uint64_t seed) {
  if (Runtime* rt = started_runtime.load(std::memory_order_acquire))
    for (auto& d : rt->devices) d->generator.manual_seed(seed);
}
bool is_available() {
  return device_count() > 0;
}

int normalize_device(int device) {
  const int n = device_count();
  XTEN_CHECK(n > 0, DeviceError, "xpu", "no XPU device found: {}", runtime().searched);
  if (device < 0) device = t_current_device;
  XTEN_CHECK(device < n, IndexError, "xpu", "device index must be in [0, {}), but got {}", n,
             device);
  return device;
}

DeviceState& device_state(int device) {
  return *runtime().devices[static_cast<size_t>(normalize_device(device))];
}
ze_context_handle_t ze_context(int device) {
  return device_state(device).context;
}
ze_device_handle_t ze_device(int device) {
  return device_state(device).device;
}

int current_device() {
  normalize_device(-1);
  return t_current_device;
}

void set_device(int index) {
  const int n = device_count();
  XTEN_CHECK(n > 0, DeviceError, "set_device", "no XPU device found: {}", runtime().searched);
  XTEN_CHECK(index >= 0 && index < n, IndexError, "set_device",
             "device index must be in [0, {}), but got {}", n, index);
  t_current_device = index;
}

const DeviceProperties& get_device_properties(int device) {
  return device_state(device).props;
}

DeviceGuard::DeviceGuard(int index) : previous_(current_device()) {
  if (index >= 0) set_device(index);
}
DeviceGuard::~DeviceGuard() {
  t_current_device = previous_;
}

Generator& default_generator(int device) {
  return device_state(device).generator;
}

ze_event_handle_t acquire_event(int device, bool timing) {
  DeviceState& s = device_state(device);
  std::lock_guard<std::mutex> lock(s.event_mutex);
  auto& free = s.free_events[timing];
  if (free.empty()) {
    constexpr uint32_t kPoolSize = 64;
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC};
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE | (timing ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0);
    pd.count = kPoolSize;
    ze_event_pool_handle_t pool = nullptr;
    XTEN_ZE_CHECK(zeEventPoolCreate(s.context, &pd, 1, &s.device, &pool));
    for (uint32_t i = 0; i < kPoolSize; ++i) {
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC};
      ed.index = i;
      ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
      ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
      ze_event_handle_t e = nullptr;
      XTEN_ZE_CHECK(zeEventCreate(pool, &ed, &e));
      free.push_back(e);
    }
  }
  ze_event_handle_t e = free.back();
  free.pop_back();
  return e;
}

void release_event(int device, ze_event_handle_t e, bool timing) {
  DeviceState& s = device_state(device);
  XTEN_ZE_CHECK(zeEventHostReset(e));
  std::lock_guard<std::mutex> lock(s.event_mutex);
  s.free_events[timing].push_back(e);
}

}  // namespace xten::xpu
