// The XPU runtime (kernels/xpu/runtime): devices, streams, events, the caching allocator, the
// generator, the module cache; through the validation layer on the bundled driver with two
// 1 GiB devices (xpu_test_env.h).
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <thread>

#include <xten/core/device_interface.h>
#include <xten/kernels/xpu/runtime/module_cache.h>
#include <xten/kernels/xpu/runtime/runtime.h>

#include "test_util.h"
#include "xpu_test_env.h"

extern char** environ;

using namespace xten;
using namespace xten::testing;

namespace {

const bool kEnv = set_xpu_test_env("1G") &&
                  (std::getenv("XTEN_TEST_NO_FP64") ? setenv("ZE_OPENCL_FP64", "0", 1) == 0 : true);

const TensorOptions kXpu = TensorOptions().device(Device("xpu"));

TEST(XpuDevice, CountPropertiesAndCurrentDevice) {
  ASSERT_EQ(xpu::device_count(), 2);
  EXPECT_TRUE(xpu::is_available());
  const auto& p = xpu::get_device_properties(0);
  EXPECT_NE(p.name.find("via ze_opencl"), std::string::npos) << p.name;
  EXPECT_NE(p.driver.find("bundled"), std::string::npos) << p.driver;
  EXPECT_EQ(p.total_memory, 1ull << 30);
  EXPECT_GE(p.max_work_group_size, 256u);
  EXPECT_TRUE(p.has_fp64);
  EXPECT_EQ(xpu::current_device(), 0);
  xpu::set_device(1);
  EXPECT_EQ(xpu::current_device(), 1);
  EXPECT_EQ(empty({2}, kXpu).device().str(), "xpu:1");  // "xpu" means the current device
  std::thread([] { EXPECT_EQ(xpu::current_device(), 0); }).join();  // per thread
  {
    xpu::DeviceGuard g(0);
    EXPECT_EQ(xpu::current_device(), 0);
  }
  EXPECT_EQ(xpu::current_device(), 1);
  xpu::set_device(0);
  EXPECT_THROW_MSG(xpu::set_device(2), IndexError,
                   "[set_device] device index must be in [0, 2), but got 2");
  EXPECT_THROW_MSG(xpu::set_device(-1), IndexError, "must be in [0, 2), but got -1");
  EXPECT_THROW_MSG(zeros({1}, TensorOptions().device(Device("xpu:5"))), IndexError,
                   "must be in [0, 2), but got 5");
  EXPECT_THROW_MSG(xpu::get_device_properties(7), IndexError, "but got 7");
}

TEST(XpuStream, PoolCurrentAndGuard) {
  const xpu::Stream def = xpu::get_default_stream(0);
  EXPECT_EQ(def.id(), 0);
  EXPECT_EQ(xpu::get_current_stream(0), def);
  std::set<int> ids;
  for (int i = 0; i < xpu::kStreamsPerDevice - 1; ++i) {
    const xpu::Stream s = xpu::get_stream_from_pool(0);
    EXPECT_NE(s.id(), 0);
    EXPECT_EQ(s.device_index(), 0);
    ids.insert(s.id());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(xpu::kStreamsPerDevice - 1));  // round robin
  const xpu::Stream s1 = xpu::get_stream_from_pool(1);
  {
    xpu::StreamGuard g(s1);
    EXPECT_EQ(xpu::current_device(), 1);
    EXPECT_EQ(xpu::get_current_stream(), s1);
    EXPECT_EQ(xpu::get_current_stream(0), def);  // per device
    std::thread([&] { EXPECT_EQ(xpu::get_current_stream(1), xpu::get_default_stream(1)); }).join();
  }
  EXPECT_EQ(xpu::current_device(), 0);
  EXPECT_EQ(xpu::get_current_stream(1), xpu::get_default_stream(1));
}

TEST(XpuStream, SynchronizeAndQuery) {
  const xpu::Stream s = xpu::get_stream_from_pool(0);
  xpu::StreamGuard g(s);
  Tensor x = rand({1 << 22}, kXpu);
  s.synchronize();
  EXPECT_TRUE(s.query());
  xpu::synchronize();
  EXPECT_TRUE(xpu::get_default_stream().query());
}

TEST(XpuEvent, RecordWaitSynchronizeElapsed) {
  const xpu::Stream a = xpu::get_stream_from_pool(0), b = xpu::get_stream_from_pool(0);
  xpu::Event start(true), end(true), ready;
  EXPECT_TRUE(ready.query());  // never recorded
  Tensor x;
  {
    xpu::StreamGuard g(a);
    start.record();
    x = rand({1 << 20}, kXpu);
    end.record();
    ready.record(a);
  }
  ready.wait(b);  // b's next work runs after x is written
  Tensor y;
  {
    xpu::StreamGuard g(b);
    y = empty({1 << 20}, kXpu);
    y.copy_(x);
  }
  b.synchronize();
  EXPECT_TRUE(ready.query());
  EXPECT_TRUE(same_bytes(x, y));
  end.synchronize();
  EXPECT_GE(start.elapsed_time(end), 0.0);
  EXPECT_THROW_MSG(ready.elapsed_time(end), ValueError, "enable_timing=true");
  xpu::Event unrecorded(true);
  EXPECT_THROW_MSG(start.elapsed_time(unrecorded), ValueError, "recorded first");
}

// Note [Backend seam]: the XPU runtime through the one device interface.
TEST(XpuDeviceInterface, AllocatorDevicesStreamsEventsSeed) {
  DeviceInterface& x = device_interface(kXPU);
  EXPECT_EQ(x.type(), kXPU);
  EXPECT_EQ(x.allocator(), allocator_for(kXPU));
  EXPECT_EQ(x.default_autocast_dtype(), kHalf);
  EXPECT_EQ(autocast::get_autocast_dtype(kXPU), kHalf);  // autocast's default is the backend's
  EXPECT_EQ(x.device_count(), xpu::device_count());
  {
    DeviceIndexGuard g(Device("xpu:1"));
    EXPECT_EQ(x.current_device(), 1);
    EXPECT_EQ(xpu::current_device(), 1);
  }
  EXPECT_EQ(x.current_device(), 0);
  EXPECT_THROW_MSG(x.set_current_device(7), IndexError, "must be in [0, 2), but got 7");
  {
    xpu::StreamGuard s(xpu::get_stream_from_pool(0));
    EXPECT_EQ(x.current_stream_id(0), xpu::get_current_stream(0).id());
    EXPECT_NE(x.current_stream_id(0), 0);
  }
  Tensor t = zeros({1 << 16}, TensorOptions().device(Device("xpu")));
  auto start = x.record_event(0);
  t.add_(1);
  auto end = x.record_event(0);
  x.wait_event(*end, 0);
  end->synchronize();
  EXPECT_GE(start->elapsed_ms(*end), 0.0);
  x.synchronize(-1);
  EXPECT_EQ(t.sum().item<float>(), float(1 << 16));
  // manual_seed reaches the XPU generators through the interface.
  manual_seed(9);
  const Tensor r = rand({8}, TensorOptions().device(Device("xpu"))).to(kCPU);
  x.manual_seed(9);
  EXPECT_TRUE(same_bytes(r, rand({8}, TensorOptions().device(Device("xpu"))).to(kCPU)));
}

TEST(XpuAllocator, RoundingReuseSplitMergeAndStats) {
  xpu::synchronize();
  xpu::empty_cache();
  ASSERT_EQ(xpu::memory_allocated(0), 0u) << "a tensor outlived its test";
  EXPECT_EQ(xpu::memory_reserved(0), 0u);
  xpu::reset_peak_memory_stats(0);
  const int64_t allocs = xpu::memory_stats(0)["num_allocs"];
  Tensor a = empty({1000}, kXpu);  // 4000 bytes -> 4096
  EXPECT_EQ(xpu::memory_allocated(0), 4096u);
  EXPECT_EQ(xpu::memory_reserved(0), 2u << 20);  // one small segment
  Tensor b = empty({256}, kXpu);                 // 1024 bytes, split off the same segment
  EXPECT_EQ(static_cast<char*>(b.data_ptr()), static_cast<char*>(a.data_ptr()) + 4096);
  EXPECT_EQ(xpu::memory_allocated(0), 5120u);
  void* pa = a.data_ptr();
  a = Tensor();
  EXPECT_EQ(xpu::memory_allocated(0), 1024u);
  Tensor c = empty({1000}, kXpu);
  EXPECT_EQ(c.data_ptr(), pa);  // reused at once on the same stream
  // A large request gets its own segment, rounded to 2 MiB; the 1 MiB left over is too small
  // to split off a large block, so the block (and the allocated count) is the whole 4 MiB.
  Tensor big = empty({3 << 18}, kXpu);  // 3 MiB
  EXPECT_EQ(xpu::memory_reserved(0), (2u << 20) + (4u << 20));
  EXPECT_EQ(xpu::max_memory_allocated(0), 4096u + 1024u + (4u << 20));
  auto stats = xpu::memory_stats(0);
  EXPECT_EQ(stats["num_allocs"] - allocs, 4);
  EXPECT_EQ(stats["segments.current"], 2);
  EXPECT_EQ(stats["active_blocks.current"], 3);
  // Freed blocks merge: the whole small segment is free again, so empty_cache returns it.
  b = Tensor();
  c = Tensor();
  big = Tensor();
  EXPECT_EQ(xpu::memory_allocated(0), 0u);
  EXPECT_EQ(xpu::memory_reserved(0), 6u << 20);  // cached
  xpu::empty_cache();
  EXPECT_EQ(xpu::memory_reserved(0), 0u);
  EXPECT_EQ(xpu::max_memory_reserved(0), 6u << 20);
  xpu::reset_peak_memory_stats(0);
  EXPECT_EQ(xpu::max_memory_reserved(0), 0u);
  // Zero bytes allocate nothing.
  Tensor z = empty({0, 4}, kXpu);
  EXPECT_EQ(xpu::memory_allocated(0), 0u);
}

TEST(XpuAllocator, RecordStreamDelaysReuseUntilTheOtherStreamIsDone) {
  const xpu::Stream s1 = xpu::get_stream_from_pool(1), s2 = xpu::get_stream_from_pool(1);
  xpu::StreamGuard g(s1);
  Tensor t = empty({1 << 16}, kXpu);
  void* p = t.data_ptr();
  xpu::record_stream(t, s2);
  {
    xpu::StreamGuard g2(s2);
    t.fill_(1.0);  // s2 uses the memory
  }
  t = Tensor();
  EXPECT_EQ(xpu::memory_stats(1)["pending_frees"], 1);  // not back in the pool yet
  s2.synchronize();
  Tensor u = empty({1 << 16}, kXpu);  // the next allocation collects it
  EXPECT_EQ(xpu::memory_stats(1)["pending_frees"], 0);
  EXPECT_EQ(u.data_ptr(), p);
  EXPECT_THROW_MSG(xpu::record_stream(ones({2}), s2), ValueError, "expected an XPU tensor");
  EXPECT_THROW_MSG(xpu::record_stream(u, xpu::get_default_stream(0)), ValueError,
                   "stream is on xpu:0 but the tensor on xpu:1");
}

TEST(XpuAllocator, OutOfMemoryFreesTheCacheRetriesThenRaises) {
  xpu::synchronize();
  xpu::empty_cache();
  const int64_t retries = xpu::memory_stats(0)["num_alloc_retries"];
  {
    Tensor a = empty({600ll << 18}, TensorOptions().device(Device("xpu:0")));
  }  // 600 MiB now cached
  EXPECT_EQ(xpu::memory_reserved(0), 600u << 20);
  Tensor b = empty({700ll << 18},
                   TensorOptions().device(Device("xpu:0")));  // fits only after the cache is freed
  EXPECT_EQ(xpu::memory_stats(0)["num_alloc_retries"], retries + 1);
  EXPECT_EQ(xpu::memory_reserved(0), 700u << 20);
  EXPECT_THROW_MSG(empty({500ll << 18}, TensorOptions().device(Device("xpu:0"))), OutOfMemoryError,
                   "out of memory on xpu:0: tried to allocate 524288000 bytes");
  try {
    empty({500ll << 18}, TensorOptions().device(Device("xpu:0")));
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("734003200 bytes allocated"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("device total 1073741824 bytes"), std::string::npos)
        << e.what();
  }
  EXPECT_GE(xpu::memory_stats(0)["num_ooms"], 2);
  b = Tensor();
  xpu::empty_cache();
  Tensor c = empty({500ll << 18}, TensorOptions().device(Device("xpu:0")));  // fine again
}

TEST(XpuGenerator, SameNumbersAsTheCpuForTheSameSeed) {
  for (ScalarType t : float_dtypes()) {
    manual_seed(1234);
    const Tensor cpu1 = rand({1000}, t), cpu2 = rand({1000}, t);
    manual_seed(1234);
    const Tensor x1 = rand({1000}, kXpu.dtype(t)), x2 = rand({1000}, kXpu.dtype(t));
    EXPECT_TRUE(same_bytes(cpu1, x1)) << to_string(t);
    EXPECT_TRUE(same_bytes(cpu2, x2)) << to_string(t);  // the offset advances alike
    EXPECT_FALSE(same_bytes(x1, x2));
    manual_seed(99);
    const Tensor cn = randn({2000}, t);
    manual_seed(99);
    const Tensor xn = randn({2000}, kXpu.dtype(t)).to(kCPU);
    if (t == kDouble) {  // log/cos of each device's math library: within a few ulp
      EXPECT_LE((xn - cn).abs().max().item<double>(), 8e-12);
    } else {  // the float mapping is one source on both devices (docs/random.md): same bits
      EXPECT_TRUE(same_bytes(cn, xn)) << to_string(t);
    }
  }
  for (ScalarType t : {kByte, kChar, kShort, kInt, kLong, kHalf, kBFloat16, kFloat, kDouble}) {
    manual_seed(7);
    const Tensor c = randint(-3 * (t != kByte), 100, {777}, TensorOptions().dtype(t));
    manual_seed(7);
    const Tensor x = randint(-3 * (t != kByte), 100, {777}, kXpu.dtype(t));
    EXPECT_TRUE(same_bytes(c, x)) << to_string(t);
  }
  // Each device has its own generator; manual_seed reaches all of them.
  manual_seed(5);
  const Tensor d0 = rand({10}, TensorOptions().device(Device("xpu:0")));
  const Tensor d1 = rand({10}, TensorOptions().device(Device("xpu:1")));
  EXPECT_TRUE(same_bytes(d0, d1));
  EXPECT_EQ(xpu::default_generator(1).seed(), 5u);
}

TEST(XpuThreads, EightThreadsEachOnItsOwnStream) {
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &bad] {
      xpu::StreamGuard g(xpu::get_stream_from_pool(t % 2));
      for (int i = 0; i < 20; ++i) {
        Tensor x = full({4096}, t * 100 + i, kXpu.dtype(kInt));
        Tensor y = arange(0, 4096, 1, kXpu.dtype(kLong));
        Tensor h = x.to(kCPU), hy = y.to(kCPU);
        if (h.data_ptr<int32_t>()[4095] != t * 100 + i || hy.data_ptr<int64_t>()[4095] != 4095)
          ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

// Runs this program's test `name` again in a child process with `env` added; true if it passed.
bool run_in_child(const std::string& name, const std::string& env) {
  std::vector<std::string> args = {"/proc/self/exe", "--gtest_filter=" + name};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) envs.emplace_back(*e);
  envs.push_back("XTEN_TEST_CHILD=1");
  envs.push_back(env);
  std::vector<char*> envp;
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0)
    return false;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool in_child() {
  return std::getenv("XTEN_TEST_CHILD") != nullptr;
}

TEST(XpuModule, Float64NeedsTheDeviceCapability) {
  if (!in_child()) {  // again, in a child process with fp64 hidden (as on an Intel Arc GPU)
    EXPECT_TRUE(run_in_child("XpuModule.Float64NeedsTheDeviceCapability", "XTEN_TEST_NO_FP64=1"));
    return;
  }
  EXPECT_FALSE(xpu::get_device_properties(0).has_fp64);
  EXPECT_THROW_MSG(rand({3}, kXpu.dtype(kDouble)), TypeError,
                   "[rand] float64 is not supported on xpu:0");
  EXPECT_THROW_MSG(ones({3}, kXpu).to(kDouble), TypeError, "reports no fp64 capability");
  // Programs that use no float64 never reach float64 code.
  const Tensor a = arange(0, 2, 0.5, kXpu);
  EXPECT_TRUE(same_bytes(a, arange(0, 2, 0.5)));
  EXPECT_TRUE(same_bytes(ones({3}, kXpu).to(kHalf), ones({3}, kHalf)));
  // Ops whose CPU kernels accumulate in double (linspace, var, norm, cumsum) compute in float
  // here, and the float32 work of a small network reaches no float64 kernel either.
  EXPECT_NEAR(linspace(0, 1, 5, kXpu).select(0, 1).item<float>(), 0.25f, 1e-7);
  const Tensor x = randn({2, 3, 8, 8}, kXpu), w = randn({4, 3, 3, 3}, kXpu);
  Tensor y = max_pool2d(conv2d(x, w, std::nullopt, {1, 1}, {1, 1}).relu(), {2});
  y = batch_norm(y, std::nullopt, std::nullopt, std::nullopt, std::nullopt, true);
  y = cumsum(y, 1) + var(y, {1}, 1, true) + norm(y, 2, {3}, true);
  const Tensor probs = softmax(adaptive_avg_pool2d(y, {1, 1}).flatten(1), 1);
  EXPECT_EQ(std::get<1>(sort(probs, 1)).dtype(), kLong);
  EXPECT_EQ(scatter_add(zeros({4}, kXpu), 0, argmax(probs, 1), probs.select(1, 0)).dtype(), kFloat);
  EXPECT_NEAR(probs.sum().item<float>(), 2.0f, 1e-5);
}

TEST(XpuModule, BuildFailureRaisesDeviceErrorWithTheLog) {
  static const unsigned char garbage[64] = {3, 2, 35, 7};  // SPIR-V magic, version 0: invalid
  xpu::register_spirv_module("test_garbage", garbage, sizeof(garbage));
  EXPECT_THROW_MSG(xpu::get_kernel(0, "test_op", "test_garbage", "k"), DeviceError,
                   "[test_op] building kernel module 'test_garbage' for xpu:0 failed "
                   "(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE): ze_opencl: SPIR-V translation failed");
  EXPECT_THROW_MSG(xpu::get_kernel(0, "test_op", "copy", "no_such_kernel"), NotImplementedError,
                   "kernel 'no_such_kernel' is not in module 'copy'");
}

TEST(XpuDevice, NoDeviceIsADeviceErrorSayingWhatWasLookedFor) {
  if (!in_child()) {  // no Intel GPU here: asking for vendor devices only finds none
    EXPECT_TRUE(run_in_child("XpuDevice.NoDeviceIsADeviceErrorSayingWhatWasLookedFor",
                             "XTEN_XPU_DRIVER=vendor"));
    return;
  }
  EXPECT_EQ(xpu::device_count(), 0);
  EXPECT_FALSE(xpu::is_available());
  EXPECT_THROW_MSG(zeros({2}, kXpu), DeviceError,
                   "no XPU device found: looked for Intel GPUs through the Level Zero loader");
  EXPECT_THROW_MSG(xpu::set_device(0), DeviceError, "XTEN_XPU_DRIVER=vendor");
}

TEST(XpuDevice, RunsUnderTheValidationLayer) {
  ASSERT_GT(xpu::device_count(), 0);
  std::ifstream maps("/proc/self/maps");
  const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("libze_validation_layer"), std::string::npos);
  EXPECT_NE(all.find("libze_opencl.so"), std::string::npos);
}

}  // namespace
