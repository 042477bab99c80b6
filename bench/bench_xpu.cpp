// XPU runtime figures (issue: XPU runtime), each beside a reference measured in the same run:
// - a tiny XPU op (fill of a 1-element tensor + stream synchronize) against a raw OpenCL
//   fill + clFinish on the same PoCL device: goal <= 1.3x;
// - 64 MiB host->device and device->host copies against memcpy of the same bytes;
// - the caching allocator's malloc+free of a cached block: goal <= 100 ns.
// On a machine without an Intel GPU the XPU is the bundled driver over PoCL on these cores.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <cstring>
#include <vector>

#include <xten/kernels/xpu/runtime/runtime.h>

#include "bench_util.h"

using namespace xten;

namespace {

constexpr size_t kCopyBytes = 64u << 20;

void BM_xpu_tiny_fill_sync(benchmark::State& s) {
  Tensor x = empty({1}, TensorOptions().device(Device("xpu")));
  const xpu::Stream st = xpu::get_current_stream();
  for (auto _ : s) {
    x.fill_(1.0);
    st.synchronize();
  }
}

// The same work straight on OpenCL: one SVM fill of 4 bytes and clFinish.
void BM_opencl_tiny_fill_finish(benchmark::State& s) {
  cl_platform_id p;
  cl_device_id d;
  clGetPlatformIDs(1, &p, nullptr);
  clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, nullptr);
  cl_context ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, nullptr);
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, nullptr, nullptr);
  void* buf = clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, 64, 64);
  const float one = 1.0f;
  for (auto _ : s) {
    clEnqueueSVMMemFill(q, buf, &one, sizeof(one), sizeof(one), 0, nullptr, nullptr);
    clFinish(q);
  }
  clSVMFree(ctx, buf);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
}

void BM_host_to_device(benchmark::State& s) {
  Tensor h = ones({static_cast<int64_t>(kCopyBytes / 4)});
  Tensor x = empty({static_cast<int64_t>(kCopyBytes / 4)}, TensorOptions().device(Device("xpu")));
  for (auto _ : s) x.copy_(h);
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * kCopyBytes));
}

void BM_device_to_host(benchmark::State& s) {
  Tensor x = ones({static_cast<int64_t>(kCopyBytes / 4)}, TensorOptions().device(Device("xpu")));
  Tensor h = empty({static_cast<int64_t>(kCopyBytes / 4)});
  for (auto _ : s) h.copy_(x);
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * kCopyBytes));
}

void BM_memcpy_64MiB(benchmark::State& s) {
  std::vector<char> a(kCopyBytes, 1), b(kCopyBytes, 0);
  for (auto _ : s) {
    std::memcpy(b.data(), a.data(), kCopyBytes);
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(static_cast<int64_t>(s.iterations() * kCopyBytes));
}

void BM_allocator_cached_malloc_free(benchmark::State& s) {
  Allocator* a = xpu::caching_allocator();
  const Device d(kXPU, 0);
  { DataPtr warm = a->allocate(4096, d); }  // the block is cached from here on
  for (auto _ : s) {
    DataPtr p = a->allocate(4096, d);
    benchmark::DoNotOptimize(p.get());
  }
}

// Op figures (issue: XPU kernels): the same op on XPU and on CPU in the same run. The XPU here
// is OpenCL on the same cores, so the ratio measures kernel quality.
template <bool kXpu>
void BM_add_16M(benchmark::State& s) {
  const TensorOptions o = TensorOptions().device(Device(kXpu ? "xpu" : "cpu"));
  const Tensor a = ones({bench::kBig}, o), b = ones({bench::kBig}, o);
  Tensor warm = a + b;  // first use builds the kernels: not measured
  for (auto _ : s) {
    Tensor c = a + b;
    if (kXpu) xpu::get_current_stream().synchronize();
  }
  s.SetBytesProcessed(s.iterations() * bench::kBig * 4 * 3);
}
template <bool kXpu>
void BM_sum_16M(benchmark::State& s) {
  const Tensor a = ones({bench::kBig}, TensorOptions().device(Device(kXpu ? "xpu" : "cpu")));
  a.sum().item<float>();  // warm-up
  for (auto _ : s) benchmark::DoNotOptimize(a.sum().item<float>());
  s.SetBytesProcessed(s.iterations() * bench::kBig * 4);
}
template <bool kXpu>
void BM_softmax_4096(benchmark::State& s) {
  const Tensor a = randn({4096, 4096}, TensorOptions().device(Device(kXpu ? "xpu" : "cpu")));
  Tensor warm = softmax(a, 1);
  for (auto _ : s) {
    Tensor c = softmax(a, 1);
    if (kXpu) xpu::get_current_stream().synchronize();
  }
}
template <bool kXpu>
void BM_mm_1024(benchmark::State& s) {
  const TensorOptions o = TensorOptions().device(Device(kXpu ? "xpu" : "cpu"));
  const Tensor a = randn({1024, 1024}, o), b = randn({1024, 1024}, o);
  Tensor warm = mm(a, b);
  for (auto _ : s) {
    Tensor c = mm(a, b);
    if (kXpu) xpu::get_current_stream().synchronize();
  }
  s.counters["GFLOPS"] = benchmark::Counter(2.0 * 1024 * 1024 * 1024 * s.iterations() / 1e9,
                                            benchmark::Counter::kIsRate);
}

template <bool kXpu>
void BM_conv2d(benchmark::State& s) {  // 8x64x56x56, 64 filters of 3x3, padding 1
  const TensorOptions o = TensorOptions().device(Device(kXpu ? "xpu" : "cpu"));
  const Tensor x = randn({8, 64, 56, 56}, o), w = randn({64, 64, 3, 3}, o);
  Tensor warm = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
  for (auto _ : s) {
    Tensor c = conv2d(x, w, std::nullopt, {1, 1}, {1, 1});
    if (kXpu) xpu::get_current_stream().synchronize();
  }
  s.counters["GFLOPS"] = benchmark::Counter(2.0 * 8 * 64 * 64 * 9 * 56 * 56 * s.iterations() / 1e9,
                                            benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  BENCHMARK_TEMPLATE(BM_add_16M, false)
      ->Name("BM_add_16M_cpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_add_16M, true)
      ->Name("BM_add_16M_xpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_sum_16M, false)
      ->Name("BM_sum_16M_cpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_sum_16M, true)
      ->Name("BM_sum_16M_xpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_softmax_4096, false)
      ->Name("BM_softmax_4096_cpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_softmax_4096, true)
      ->Name("BM_softmax_4096_xpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_mm_1024, false)
      ->Name("BM_mm_1024_cpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_mm_1024, true)
      ->Name("BM_mm_1024_xpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_conv2d, false)
      ->Name("BM_conv2d_cpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_conv2d, true)
      ->Name("BM_conv2d_xpu")
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK(BM_xpu_tiny_fill_sync)->UseRealTime()->Unit(benchmark::kMicrosecond);
  BENCHMARK(BM_opencl_tiny_fill_finish)->UseRealTime()->Unit(benchmark::kMicrosecond);
  BENCHMARK(BM_host_to_device)->UseRealTime()->Unit(benchmark::kMillisecond);
  BENCHMARK(BM_device_to_host)->UseRealTime()->Unit(benchmark::kMillisecond);
  BENCHMARK(BM_memcpy_64MiB)->UseRealTime()->Unit(benchmark::kMillisecond);
  BENCHMARK(BM_allocator_cached_malloc_free)->UseRealTime()->Unit(benchmark::kNanosecond);
  benchmark::Initialize(&argc, argv);
  std::printf("XPU device: %s\n", xpu::get_device_properties(0).name.c_str());
  bench::Collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  std::printf("\nGoals (ratios against references measured above):\n");
  auto have = [&](const char* n) { return c.has(n); };
  if (have("BM_xpu_tiny_fill_sync/real_time") && have("BM_opencl_tiny_fill_finish/real_time"))
    std::printf(
        "  tiny XPU fill + synchronize: %.2f us = %.2f x raw OpenCL fill + finish (%.2f us)   goal "
        "<= 1.3\n",
        c.time("BM_xpu_tiny_fill_sync/real_time"),
        c.time("BM_xpu_tiny_fill_sync/real_time") / c.time("BM_opencl_tiny_fill_finish/real_time"),
        c.time("BM_opencl_tiny_fill_finish/real_time"));
  for (const char* n : {"BM_host_to_device/real_time", "BM_device_to_host/real_time"})
    if (have(n) && have("BM_memcpy_64MiB/real_time"))
      std::printf("  %-28s %.2f GB/s = %.2f x memcpy (%.2f GB/s)\n", n, c.gbps(n),
                  c.gbps(n) / c.gbps("BM_memcpy_64MiB/real_time"),
                  c.gbps("BM_memcpy_64MiB/real_time"));
  for (const char* op : {"add_16M", "sum_16M", "softmax_4096", "mm_1024", "conv2d"}) {
    const std::string x = std::string("BM_") + op + "_xpu/real_time",
                      cpu = std::string("BM_") + op + "_cpu/real_time";
    if (have(x.c_str()) && have(cpu.c_str()))
      std::printf("  %-8s XPU %.2f ms, CPU %.2f ms: XPU/CPU time %.2f   goal <= %s\n", op,
                  c.time(x), c.time(cpu), c.time(x) / c.time(cpu),
                  std::string(op) == "mm_1024" || std::string(op) == "conv2d"
                      ? "3.3 (>= 30% of CPU GFLOP/s)"
                      : "1.5");
  }
  if (have("BM_allocator_cached_malloc_free/real_time"))
    std::printf("  allocator malloc+free of a cached block: %.1f ns   goal <= 100 ns\n",
                c.time("BM_allocator_cached_malloc_free/real_time"));
  return 0;
}
