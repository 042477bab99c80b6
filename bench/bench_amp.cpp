// Automatic mixed precision against float32, on CPU (autocast bfloat16) and XPU (autocast
// float16): mm 1024 and the ResNet-18 forward pass (models::resnet18) (batch 1, 224x224).
// Inputs and weights are float32 and the timed region includes autocast's casts, as a user's
// program sees it. Prints Google Benchmark's table, then AMP time / float32 time per device.
#include <cstdio>
#include <optional>

#include <xten/models/resnet.h>
#include "bench_util.h"

using namespace xten;

namespace {

Device device_of(bool xpu) {
  return Device(xpu ? "xpu" : "cpu");
}

// Runs f under autocast (or not) for the device, synchronizing the XPU after each call.
template <class F>
void timed(benchmark::State& s, bool xpu, bool amp, const F& f) {
  auto once = [&] {
    std::optional<autocast::AutocastGuard> guard;
    if (amp) guard.emplace(xpu ? kXPU : kCPU);
    Tensor r = f();
    if (xpu) xpu::get_current_stream().synchronize();
  };
  once();  // warm-up: builds the device's kernels
  for (auto _ : s) once();
}

template <bool kXpu, bool kAmp>
void BM_mm_1024(benchmark::State& s) {
  const TensorOptions o = TensorOptions().device(device_of(kXpu));
  const Tensor a = randn({1024, 1024}, o), b = randn({1024, 1024}, o);
  timed(s, kXpu, kAmp, [&] { return mm(a, b); });
  s.counters["GFLOPS"] = benchmark::Counter(2.0 * 1024 * 1024 * 1024 * s.iterations() / 1e9,
                                            benchmark::Counter::kIsRate);
}

template <bool kXpu, bool kAmp>
void BM_resnet18(benchmark::State& s) {
  manual_seed(0);
  models::ResNet net = models::resnet18(1000);
  net->eval();
  net->to(device_of(kXpu));
  const Tensor images = randn({1, 3, 224, 224}).to(device_of(kXpu));
  NoGradGuard no_grad;
  timed(s, kXpu, kAmp, [&] { return net(images); });
}

const char* kDevices[] = {"cpu", "xpu"};

}  // namespace

int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("mm_1024/cpu/fp32", BM_mm_1024<false, false>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mm_1024/cpu/amp", BM_mm_1024<false, true>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mm_1024/xpu/fp32", BM_mm_1024<true, false>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("mm_1024/xpu/amp", BM_mm_1024<true, true>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("resnet18/cpu/fp32", BM_resnet18<false, false>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("resnet18/cpu/amp", BM_resnet18<false, true>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("resnet18/xpu/fp32", BM_resnet18<true, false>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("resnet18/xpu/amp", BM_resnet18<true, true>)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  std::printf("XPU device: %s\n", xpu::get_device_properties(0).name.c_str());
  bench::Collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  std::printf("\nAMP time / float32 time (CPU autocast bfloat16, XPU autocast float16):\n");
  for (const char* op : {"mm_1024", "resnet18"})
    for (const char* d : kDevices) {
      const std::string fp32 = std::string(op) + "/" + d + "/fp32/real_time",
                        amp = std::string(op) + "/" + d + "/amp/real_time";
      if (c.has(fp32) && c.has(amp))
        std::printf("  %-9s %s: float32 %.2f ms, AMP %.2f ms, ratio %.2f\n", op, d, c.time(fp32),
                    c.time(amp), c.time(amp) / c.time(fp32));
    }
  return 0;
}
