// The ze_opencl driver through the system Level Zero loader, using only <level_zero/ze_api.h>.
// It runs with the validation layer on, two devices and a 256 MiB cap per device
// (xpu_test_env.h).
#include <level_zero/ze_api.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "xpu_test_env.h"

namespace {

const bool kEnv = xten::testing::set_xpu_test_env("256M") &&
                  setenv("ZE_ENABLE_ALT_DRIVERS", XTEN_TEST_DRIVER, 0) == 0;

#define ZE(call) ASSERT_EQ((call), ZE_RESULT_SUCCESS) << #call

struct Env {
  ze_driver_handle_t driver = nullptr;
  std::vector<ze_device_handle_t> devices;
  ze_context_handle_t context = nullptr;
  std::vector<uint8_t> spirv;
};

Env& env() {
  static Env* e = [] {
    auto* e = new Env;
    EXPECT_EQ(zeInit(0), ZE_RESULT_SUCCESS);
    uint32_t n = 0;
    EXPECT_EQ(zeDriverGet(&n, nullptr), ZE_RESULT_SUCCESS);
    std::vector<ze_driver_handle_t> drivers(n);
    zeDriverGet(&n, drivers.data());
    for (ze_driver_handle_t d : drivers) {  // ours advertises its extension
      uint32_t ne = 0;
      zeDriverGetExtensionProperties(d, &ne, nullptr);
      std::vector<ze_driver_extension_properties_t> ext(ne);
      zeDriverGetExtensionProperties(d, &ne, ext.data());
      for (auto& x : ext)
        if (std::string(x.name) == "ZE_experimental_xten_opencl_driver") e->driver = d;
    }
    if (!e->driver) return e;
    uint32_t nd = 0;
    zeDeviceGet(e->driver, &nd, nullptr);
    e->devices.resize(nd);
    zeDeviceGet(e->driver, &nd, e->devices.data());
    ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    zeContextCreate(e->driver, &cd, &e->context);
    std::ifstream f(XTEN_TEST_SPIRV, std::ios::binary);
    e->spirv.assign(std::istreambuf_iterator<char>(f), {});
    return e;
  }();
  return *e;
}

ze_command_list_handle_t immediate(ze_device_handle_t dev) {
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
  ze_command_list_handle_t l = nullptr;
  EXPECT_EQ(zeCommandListCreateImmediate(env().context, dev, &qd, &l), ZE_RESULT_SUCCESS);
  return l;
}

void* device_alloc(size_t n, ze_device_handle_t dev = nullptr) {
  ze_device_mem_alloc_desc_t d{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void* p = nullptr;
  EXPECT_EQ(zeMemAllocDevice(env().context, &d, n, 64, dev ? dev : env().devices[0], &p),
            ZE_RESULT_SUCCESS);
  return p;
}

ze_result_t build(const void* data, size_t size, const char* flags, ze_module_handle_t* m,
                  std::string* log) {
  ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC};
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = size;
  md.pInputModule = static_cast<const uint8_t*>(data);
  md.pBuildFlags = flags;
  ze_module_build_log_handle_t lh = nullptr;
  const ze_result_t r = zeModuleCreate(env().context, env().devices[0], &md, m, &lh);
  if (lh) {
    size_t n = 0;
    zeModuleBuildLogGetString(lh, &n, nullptr);
    std::string s(n, '\0');
    zeModuleBuildLogGetString(lh, &n, s.data());
    if (log) *log = s.c_str();
    zeModuleBuildLogDestroy(lh);
  }
  return r;
}

ze_module_handle_t test_module() {
  static ze_module_handle_t m = [] {
    ze_module_handle_t m = nullptr;
    EXPECT_EQ(build(env().spirv.data(), env().spirv.size(), "", &m, nullptr), ZE_RESULT_SUCCESS);
    return m;
  }();
  return m;
}

ze_kernel_handle_t kernel(const char* name) {
  ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
  kd.pKernelName = name;
  ze_kernel_handle_t k = nullptr;
  EXPECT_EQ(zeKernelCreate(test_module(), &kd, &k), ZE_RESULT_SUCCESS);
  return k;
}

struct EventPool {
  ze_event_pool_handle_t pool = nullptr;
  explicit EventPool(uint32_t n, bool timestamps = false) {
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC};
    pd.flags =
        ZE_EVENT_POOL_FLAG_HOST_VISIBLE | (timestamps ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0);
    pd.count = n;
    EXPECT_EQ(zeEventPoolCreate(env().context, &pd, 0, nullptr, &pool), ZE_RESULT_SUCCESS);
  }
  ~EventPool() { zeEventPoolDestroy(pool); }
  ze_event_handle_t event(uint32_t i) {
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC};
    ed.index = i;
    ze_event_handle_t e = nullptr;
    EXPECT_EQ(zeEventCreate(pool, &ed, &e), ZE_RESULT_SUCCESS);
    return e;
  }
};

TEST(Driver, FoundThroughTheLoaderWithProperties) {
  ASSERT_NE(env().driver, nullptr) << "the loader did not load libze_opencl.so";
  ASSERT_EQ(env().devices.size(), 2u);  // ZE_OPENCL_DEVICES=2
  ze_api_version_t v;
  ZE(zeDriverGetApiVersion(env().driver, &v));
  EXPECT_EQ(ZE_MAJOR_VERSION(v), 1u);
  ze_device_properties_t p{ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  ZE(zeDeviceGetProperties(env().devices[0], &p));
  EXPECT_EQ(p.type, ZE_DEVICE_TYPE_CPU);
  EXPECT_NE(std::string(p.name).find("OpenCL CPU device via ze_opencl"), std::string::npos)
      << p.name;
  EXPECT_GT(p.numSlices, 0u);
  ze_device_compute_properties_t cp{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
  ZE(zeDeviceGetComputeProperties(env().devices[0], &cp));
  EXPECT_GE(cp.maxTotalGroupSize, 256u);
  EXPECT_GT(cp.maxSharedLocalMemory, 0u);
  ze_device_module_properties_t mp{ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
  ZE(zeDeviceGetModuleProperties(env().devices[0], &mp));
  EXPECT_GE(mp.spirvVersionSupported, ZE_MAKE_VERSION(1, 0));
  uint32_t n = 0;
  ZE(zeDeviceGetMemoryProperties(env().devices[0], &n, nullptr));
  ASSERT_EQ(n, 1u);
  ze_device_memory_properties_t mem{ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES};
  ZE(zeDeviceGetMemoryProperties(env().devices[0], &n, &mem));
  EXPECT_EQ(mem.totalSize, 256ull << 20);  // ZE_OPENCL_DEVICE_MEMORY=256M
  n = 0;
  ZE(zeDeviceGetCommandQueueGroupProperties(env().devices[0], &n, nullptr));
  ASSERT_EQ(n, 1u);
  ze_command_queue_group_properties_t qg{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES};
  ZE(zeDeviceGetCommandQueueGroupProperties(env().devices[0], &n, &qg));
  EXPECT_TRUE(qg.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE);
  EXPECT_GE(qg.maxMemoryFillPatternSize, 8u);
  // Through the validation layer (ZE_ENABLE_VALIDATION_LAYER=1).
  std::ifstream maps("/proc/self/maps");
  const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("libze_validation_layer"), std::string::npos);
  // A second zeInit is harmless.
  EXPECT_EQ(zeInit(0), ZE_RESULT_SUCCESS);
}

TEST(Driver, MemoryKindsPropertiesAndRanges) {
  void* d = device_alloc(1000);
  ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *h = nullptr, *s = nullptr, *big = nullptr;
  ZE(zeMemAllocHost(env().context, &hd, 100, 0, &h));
  ZE(zeMemAllocShared(env().context, &dd, &hd, 100, 0, env().devices[1], &s));
  ZE(zeMemAllocDevice(env().context, &dd, 100, 4096, env().devices[0], &big));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 4096, 0u);
  struct Case {
    void* p;
    ze_memory_type_t type;
    ze_device_handle_t dev;
  };
  for (const Case& c :
       {Case{d, ZE_MEMORY_TYPE_DEVICE, env().devices[0]}, Case{h, ZE_MEMORY_TYPE_HOST, nullptr},
        Case{s, ZE_MEMORY_TYPE_SHARED, env().devices[1]}}) {
    ze_memory_allocation_properties_t p{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
    ze_device_handle_t dev = nullptr;
    ZE(zeMemGetAllocProperties(env().context, static_cast<char*>(c.p) + 10, &p, &dev));
    EXPECT_EQ(p.type, c.type);
    EXPECT_EQ(dev, c.dev);
  }
  void* base = nullptr;
  size_t size = 0;
  ZE(zeMemGetAddressRange(env().context, static_cast<char*>(d) + 999, &base, &size));
  EXPECT_EQ(base, d);
  EXPECT_EQ(size, 1000u);
  int on_stack = 0;
  ze_memory_allocation_properties_t p{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES};
  ZE(zeMemGetAllocProperties(env().context, &on_stack, &p, nullptr));
  EXPECT_EQ(p.type, ZE_MEMORY_TYPE_UNKNOWN);
  // Bad requests.
  void* bad = nullptr;
  EXPECT_EQ(zeMemAllocDevice(env().context, &dd, 0, 0, env().devices[0], &bad),
            ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
  EXPECT_EQ(zeMemAllocDevice(env().context, &dd, 64, 3, env().devices[0], &bad),
            ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
  EXPECT_NE(zeMemFree(env().context, &on_stack), ZE_RESULT_SUCCESS);
  for (void* q : {d, h, s, big}) ZE(zeMemFree(env().context, q));
}

TEST(Driver, MemoryCapGivesOutOfDeviceMemory) {
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  void *a = nullptr, *b = nullptr;
  ZE(zeMemAllocDevice(env().context, &dd, 200u << 20, 0, env().devices[0], &a));
  EXPECT_EQ(zeMemAllocDevice(env().context, &dd, 100u << 20, 0, env().devices[0], &b),
            ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
  // The cap is per device, and freeing gives the memory back.
  ZE(zeMemAllocDevice(env().context, &dd, 100u << 20, 0, env().devices[1], &b));
  ZE(zeMemFree(env().context, b));
  ZE(zeMemFree(env().context, a));
  ZE(zeMemAllocDevice(env().context, &dd, 250u << 20, 0, env().devices[0], &a));
  ZE(zeMemFree(env().context, a));
}

TEST(Driver, ImmediateListFillCopyLaunch) {
  ze_command_list_handle_t l = immediate(env().devices[0]);
  constexpr size_t n = 1024;
  auto* x = static_cast<float*>(device_alloc(n * 4));
  const float two = 2.0f;
  ZE(zeCommandListAppendMemoryFill(l, x, &two, sizeof(two), n * 4, nullptr, 0, nullptr));
  ze_kernel_handle_t k = kernel("scale_add");
  const float a = 3.0f, b = 1.0f;
  ZE(zeKernelSetArgumentValue(k, 0, sizeof(x), &x));
  ZE(zeKernelSetArgumentValue(k, 1, sizeof(a), &a));
  ZE(zeKernelSetArgumentValue(k, 2, sizeof(b), &b));
  uint32_t gx, gy, gz;
  ZE(zeKernelSuggestGroupSize(k, n, 1, 1, &gx, &gy, &gz));
  EXPECT_EQ(n % gx, 0u);
  EXPECT_EQ(gx & (gx - 1), 0u);  // a power of two: few distinct sizes
  ZE(zeKernelSetGroupSize(k, gx, 1, 1));
  ze_group_count_t groups{static_cast<uint32_t>(n / gx), 1, 1};
  ZE(zeCommandListAppendLaunchKernel(l, k, &groups, nullptr, 0, nullptr));
  // Arguments are captured at append: changing them now does not change that launch.
  const float zero = 0.0f;
  ZE(zeKernelSetArgumentValue(k, 1, sizeof(zero), &zero));
  std::vector<float> host(n);
  EventPool pool(1);
  ze_event_handle_t done = pool.event(0);
  ZE(zeCommandListAppendMemoryCopy(l, host.data(), x, n * 4, done, 0, nullptr));
  ZE(zeEventHostSynchronize(done, UINT64_MAX));
  for (float v : host) ASSERT_EQ(v, 7.0f);
  ze_kernel_properties_t kp{ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES};
  ZE(zeKernelGetProperties(k, &kp));
  EXPECT_EQ(kp.numKernelArgs, 3u);
  size_t len = 0;
  ZE(zeKernelGetName(k, &len, nullptr));
  std::string name(len, '\0');
  ZE(zeKernelGetName(k, &len, name.data()));
  EXPECT_STREQ(name.c_str(), "scale_add");
  zeEventDestroy(done);
  zeKernelDestroy(k);
  zeMemFree(env().context, x);
  zeCommandListDestroy(l);
}

TEST(Driver, LocalMemoryArgument) {
  ze_command_list_handle_t l = immediate(env().devices[1]);
  constexpr int n = 256, group = 64;
  auto* in = static_cast<int*>(device_alloc(n * 4, env().devices[1]));
  auto* out = static_cast<int*>(device_alloc(n * 4, env().devices[1]));
  std::vector<int> h(n);
  for (int i = 0; i < n; ++i) h[static_cast<size_t>(i)] = i;
  ZE(zeCommandListAppendMemoryCopy(l, in, h.data(), n * 4, nullptr, 0, nullptr));
  ze_kernel_handle_t k = kernel("reverse_groups");
  ZE(zeKernelSetArgumentValue(k, 0, sizeof(in), &in));
  ZE(zeKernelSetArgumentValue(k, 1, sizeof(out), &out));
  ZE(zeKernelSetArgumentValue(k, 2, group * sizeof(int), nullptr));
  ZE(zeKernelSetGroupSize(k, group, 1, 1));
  ze_group_count_t groups{n / group, 1, 1};
  ZE(zeCommandListAppendLaunchKernel(l, k, &groups, nullptr, 0, nullptr));
  EventPool pool(1);
  ze_event_handle_t done = pool.event(0);
  ZE(zeCommandListAppendMemoryCopy(l, h.data(), out, n * 4, done, 0, nullptr));
  ZE(zeEventHostSynchronize(done, UINT64_MAX));
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(h[static_cast<size_t>(i)], (i / group) * group + group - 1 - i % group);
  zeEventDestroy(done);
  zeKernelDestroy(k);
  zeMemFree(env().context, in);
  zeMemFree(env().context, out);
  zeCommandListDestroy(l);
}

TEST(Driver, RegularListQueueAndFence) {
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
  ze_command_queue_handle_t q = nullptr;
  ZE(zeCommandQueueCreate(env().context, env().devices[0], &qd, &q));
  ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC};
  ze_command_list_handle_t l = nullptr;
  ZE(zeCommandListCreate(env().context, env().devices[0], &ld, &l));
  auto* x = static_cast<int*>(device_alloc(64 * 4));
  std::vector<int> host(64, 0);
  const int seven = 7;
  ZE(zeCommandListAppendMemoryFill(l, x, &seven, 4, 64 * 4, nullptr, 0, nullptr));
  ZE(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE(zeCommandListAppendMemoryCopy(l, host.data(), x, 64 * 4, nullptr, 0, nullptr));
  EXPECT_EQ(host[0], 0);  // recorded, not run
  // Executing an open list is an error.
  EXPECT_NE(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr), ZE_RESULT_SUCCESS);
  ZE(zeCommandListClose(l));
  ze_fence_desc_t fd{ZE_STRUCTURE_TYPE_FENCE_DESC};
  ze_fence_handle_t f = nullptr;
  ZE(zeFenceCreate(q, &fd, &f));
  for (int round = 0; round < 2; ++round) {  // a closed list runs as often as it is executed
    std::fill(host.begin(), host.end(), 0);
    ZE(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    ZE(zeFenceHostSynchronize(f, UINT64_MAX));
    EXPECT_EQ(zeFenceQueryStatus(f), ZE_RESULT_SUCCESS);
    for (int v : host) ASSERT_EQ(v, 7);
    ZE(zeFenceReset(f));
  }
  ZE(zeCommandQueueSynchronize(q, UINT64_MAX));
  zeFenceDestroy(f);
  zeCommandListDestroy(l);
  zeCommandQueueDestroy(q);
  zeMemFree(env().context, x);
}

TEST(Driver, EventsWaitedOnBeforeTheyAreSignalled) {
  ze_command_list_handle_t a = immediate(env().devices[0]), b = immediate(env().devices[0]);
  EventPool pool(3);
  ze_event_handle_t gate = pool.event(0), done = pool.event(1), host_gate = pool.event(2);
  auto* x = static_cast<int*>(device_alloc(4));
  const int one = 1, two = 2;
  // List a waits on `gate`, which nothing has signalled yet, then writes 2.
  ZE(zeCommandListAppendWaitOnEvents(a, 1, &gate));
  ZE(zeCommandListAppendMemoryFill(a, x, &two, 4, 4, done, 0, nullptr));
  EXPECT_EQ(zeEventQueryStatus(done), ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeEventHostSynchronize(done, 1000000), ZE_RESULT_NOT_READY);  // 1 ms: still blocked
  // List b writes 1 and signals the gate; only then does a run.
  ZE(zeCommandListAppendMemoryFill(b, x, &one, 4, 4, gate, 0, nullptr));
  ZE(zeEventHostSynchronize(done, UINT64_MAX));
  int v = 0;
  ZE(zeCommandListAppendMemoryCopy(b, &v, x, 4, host_gate, 0, nullptr));
  ZE(zeEventHostSynchronize(host_gate, UINT64_MAX));
  EXPECT_EQ(v, 2);
  // The host can signal, a command can wait on a host signal, and reset re-arms.
  ZE(zeEventHostReset(gate));
  EXPECT_EQ(zeEventQueryStatus(gate), ZE_RESULT_NOT_READY);
  ZE(zeEventHostReset(done));
  ZE(zeCommandListAppendBarrier(a, done, 1, &gate));
  std::thread t([&] { zeEventHostSignal(gate); });
  ZE(zeEventHostSynchronize(done, UINT64_MAX));
  t.join();
  for (ze_event_handle_t e : {gate, done, host_gate}) ZE(zeEventDestroy(e));
  zeMemFree(env().context, x);
  zeCommandListDestroy(a);
  zeCommandListDestroy(b);
}

TEST(Driver, KernelTimestamps) {
  ze_command_list_handle_t l = immediate(env().devices[0]);
  EventPool pool(1, /*timestamps=*/true);
  ze_event_handle_t e = pool.event(0);
  auto* x = static_cast<int*>(device_alloc(256 * 4));
  ze_kernel_handle_t k = kernel("spin");
  const int iters = 20000;
  ZE(zeKernelSetArgumentValue(k, 0, sizeof(x), &x));
  ZE(zeKernelSetArgumentValue(k, 1, sizeof(iters), &iters));
  ZE(zeKernelSetGroupSize(k, 64, 1, 1));
  ze_group_count_t g{4, 1, 1};
  ZE(zeCommandListAppendLaunchKernel(l, k, &g, e, 0, nullptr));
  ZE(zeEventHostSynchronize(e, UINT64_MAX));
  ze_kernel_timestamp_result_t ts;
  ZE(zeEventQueryKernelTimestamp(e, &ts));
  EXPECT_GT(ts.global.kernelEnd, ts.global.kernelStart);
  zeEventDestroy(e);
  zeKernelDestroy(k);
  zeMemFree(env().context, x);
  zeCommandListDestroy(l);
}

TEST(Driver, BadModulesFailWithALog) {
  ze_module_handle_t m = nullptr;
  std::string log;
  const uint8_t garbage[64] = {1, 2, 3, 4};
  EXPECT_EQ(build(garbage, sizeof(garbage), "", &m, &log), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
  EXPECT_NE(log.find("not a SPIR-V module"), std::string::npos) << log;
  // The right magic number, then nonsense: the translator (a child process) rejects it.
  std::vector<uint8_t> truncated(env().spirv.begin(), env().spirv.begin() + 40);
  truncated.resize(64, 0xff);
  EXPECT_EQ(build(truncated.data(), truncated.size(), "", &m, &log),
            ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
  EXPECT_NE(log.find("SPIR-V translation failed"), std::string::npos) << log;
  // A valid module with an option the compiler does not know.
  EXPECT_EQ(build(env().spirv.data(), env().spirv.size(), "-no-such-option", &m, &log),
            ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
  EXPECT_FALSE(log.empty());
  // The process is alive, and good modules still build.
  uint32_t n = 0;
  ZE(zeModuleGetKernelNames(test_module(), &n, nullptr));
  EXPECT_EQ(n, 3u);
}

TEST(Driver, BadKernelArguments) {
  ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC};
  kd.pKernelName = "no_such_kernel";
  ze_kernel_handle_t bad = nullptr;
  EXPECT_EQ(zeKernelCreate(test_module(), &kd, &bad), ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
  ze_kernel_handle_t k = kernel("scale_add");
  const float a = 1;
  const double wide = 1;
  EXPECT_EQ(zeKernelSetArgumentValue(k, 3, sizeof(a), &a),
            ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
  EXPECT_EQ(zeKernelSetArgumentValue(k, 1, sizeof(wide), &wide),
            ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  EXPECT_EQ(zeKernelSetArgumentValue(k, 0, 4, &a), ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
  EXPECT_EQ(zeKernelSetGroupSize(k, 1 << 20, 1, 1), ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
  // Launching with arguments unset is refused, not run.
  ze_command_list_handle_t l = immediate(env().devices[0]);
  ze_group_count_t g{1, 1, 1};
  EXPECT_NE(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
  zeKernelDestroy(k);
  zeCommandListDestroy(l);
}

TEST(Driver, IndirectAccessFlagsAreKept) {
  ze_kernel_handle_t k = kernel("scale_add");
  ze_kernel_indirect_access_flags_t f = 7;
  ZE(zeKernelGetIndirectAccess(k, &f));
  EXPECT_EQ(f, 0u);
  ZE(zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE));
  ZE(zeKernelGetIndirectAccess(k, &f));
  EXPECT_EQ(f, static_cast<ze_kernel_indirect_access_flags_t>(ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE));
  EXPECT_NE(zeKernelSetIndirectAccess(k, 0x100), ZE_RESULT_SUCCESS);  // no such flag
  zeKernelDestroy(k);
}

TEST(Driver, ManyThreadsLaunchingAtOnce) {
  constexpr int kThreads = 8, kLaunches = 50, n = 256;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  ze_kernel_handle_t shared = kernel("scale_add");  // one kernel object for all threads
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ze_command_list_handle_t l = immediate(env().devices[static_cast<size_t>(t % 2)]);
      auto* x = static_cast<float*>(device_alloc(n * 4));
      const float zero = 0;
      zeCommandListAppendMemoryFill(l, x, &zero, 4, n * 4, nullptr, 0, nullptr);
      static std::mutex m;  // Level Zero kernels are not thread-safe: set + append under a lock
      for (int i = 0; i < kLaunches; ++i) {
        std::lock_guard<std::mutex> lock(m);
        const float one = 1, b = static_cast<float>(t);
        zeKernelSetArgumentValue(shared, 0, sizeof(x), &x);
        zeKernelSetArgumentValue(shared, 1, sizeof(one), &one);
        zeKernelSetArgumentValue(shared, 2, sizeof(b), &b);
        zeKernelSetGroupSize(shared, 64, 1, 1);
        ze_group_count_t g{n / 64, 1, 1};
        if (zeCommandListAppendLaunchKernel(l, shared, &g, nullptr, 0, nullptr) !=
            ZE_RESULT_SUCCESS)
          ++failures;
      }
      std::vector<float> h(n);
      EventPool pool(1);
      ze_event_handle_t e = pool.event(0);
      zeCommandListAppendMemoryCopy(l, h.data(), x, n * 4, e, 0, nullptr);
      zeEventHostSynchronize(e, UINT64_MAX);
      for (float v : h)
        if (v != static_cast<float>(t * kLaunches)) ++failures;
      zeEventDestroy(e);
      zeMemFree(env().context, x);
      zeCommandListDestroy(l);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  zeKernelDestroy(shared);
}

}  // namespace
