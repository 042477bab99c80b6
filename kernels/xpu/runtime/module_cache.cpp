// Embedded SPIR-V modules, built per device on first use of a family; kernels looked up by
// name. Note [Module cache] in docs/xpu_kernels.md.
#include <xten/kernels/xpu/runtime/module_cache.h>

#include <mutex>
#include <unordered_map>

#include <xten/kernels/xpu/runtime/device_state.h>

namespace xten::xpu {
namespace {

struct Blob {
  const unsigned char* data;
  size_t size;
};
// Filled at load time by the embedded modules and later by xten::compile's generated ones.
std::unordered_map<std::string, Blob>& registry() {
  static auto* r = new std::unordered_map<std::string, Blob>;  // never destroyed
  return *r;
}
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;  // never destroyed
  return *m;
}
Blob find_module(const char* op, const std::string& family) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(family);
  XTEN_CHECK(it != registry().end(), DeviceError, op, "no SPIR-V module '{}'", family);
  return it->second;
}

// Division and sqrt correctly rounded on every device (OpenCL allows 2.5 ulp by default).
constexpr const char* kBuildFlags = "-cl-fp32-correctly-rounded-divide-sqrt";

ze_module_handle_t build_module(DeviceState& s, const char* op, const std::string& family) {
  const Blob blob = find_module(op, family);
  const bool f64 = family.size() > 4 && family.compare(family.size() - 4, 4, "_f64") == 0;
  XTEN_CHECK(!f64 || s.props.has_fp64, TypeError, op,
             "float64 is not supported on xpu:{} ({}): the device reports no fp64 capability",
             s.index, s.props.name);
  ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC};
  desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
  desc.inputSize = blob.size;
  desc.pInputModule = blob.data;
  desc.pBuildFlags = kBuildFlags;
  ze_module_handle_t module = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  const ze_result_t r = zeModuleCreate(s.context, s.device, &desc, &module, &log);
  std::string text;
  if (log) {
    size_t n = 0;
    zeModuleBuildLogGetString(log, &n, nullptr);
    text.resize(n);
    zeModuleBuildLogGetString(log, &n, text.data());
    while (!text.empty() && text.back() == '\0') text.pop_back();
    zeModuleBuildLogDestroy(log);
  }
  XTEN_CHECK(r == ZE_RESULT_SUCCESS, DeviceError, op,
             "building kernel module '{}' for xpu:{} failed ({}): {}", family, s.index,
             ze_result_name(r), text);
  return module;
}

}  // namespace

bool has_spirv_module(const std::string& family) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().count(family) > 0;
}

bool register_spirv_module(const char* family, const unsigned char* data, size_t size) {
  const std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[family] = {data, size};
  return true;
}

Kernel& get_kernel(int device, const char* op, const std::string& family, const std::string& name) {
  DeviceState& s = device_state(device);
  std::unique_lock<std::mutex> lock(s.module_mutex);
  auto k = s.kernels.find(name);
  if (k != s.kernels.end()) return *k->second;
  park_if_draining(lock);  // no module builds once the exit drain began
  auto m = s.modules.find(family);
  if (m == s.modules.end()) {
    m = s.modules.emplace(family, build_module(s, op, family)).first;
    register_drain_for_exit();  // after the statics the build may have made (Note [Exit ...])
  }
  ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
  kd.pKernelName = name.c_str();
  auto kernel = std::make_unique<Kernel>();
  kernel->name = name;
  const ze_result_t r = zeKernelCreate(m->second, &kd, &kernel->handle);
  XTEN_CHECK(r == ZE_RESULT_SUCCESS, NotImplementedError, op,
             "kernel '{}' is not in module '{}' on xpu:{} ({})", name, family, s.index,
             ze_result_name(r));
  XTEN_ZE_CHECK(zeKernelSetGroupSize(kernel->handle, kGroupSize, 1, 1));
  return *s.kernels.emplace(name, std::move(kernel)).first->second;
}

}  // namespace xten::xpu
