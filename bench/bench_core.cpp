// The spine's performance goals (issue "Spine"): per-op overhead, elementwise bandwidth
// against memcpy, and the cost of a chain of views. Run: build/bench/bench_core
// Figures and what limits them: bench/README.md.
#include <string>

#include "bench_util.h"

using namespace xten;

namespace {

using bench::kBig;

// --- per-op overhead ------------------------------------------------------------------------
void BM_tiny_add(benchmark::State& s) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : s) benchmark::DoNotOptimize(a + b);
}
BENCHMARK(BM_tiny_add);

// The same while a profiler records it (docs/profiler.md): range 0 host events only, 1 with
// memory events too. A fixed count of iterations bounds what the profiler keeps.
void BM_tiny_add_recorded(benchmark::State& s) {
  Tensor a = ones({1}), b = ones({1});
  profiler::Profiler p(profiler::ProfilerOptions()
                           .activities({profiler::ProfilerActivity::CPU})
                           .profile_memory(s.range(0) != 0));
  p.start();
  for (auto _ : s) benchmark::DoNotOptimize(a + b);
  p.stop();
}
BENCHMARK(BM_tiny_add_recorded)->Arg(0)->Arg(1)->Iterations(300000);

void BM_view_chain(benchmark::State& s) {
  Tensor a = ones({64, 32});
  for (auto _ : s) benchmark::DoNotOptimize(a.t().reshape({32, 64}).narrow(0, 2, 16));
}
BENCHMARK(BM_view_chain);

// --- bandwidth: bytes counted as read + written ---------------------------------------------
void BM_memcpy(benchmark::State& s) {
  bench::memcpy_reference(s, static_cast<int>(s.range(0)));
}

template <bool kMul>
void BM_binary_inplace(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  Tensor a = ones({kBig}), b = ones({kBig});
  for (auto _ : s) {
    if (kMul)
      a.mul_(b);
    else
      a.add_(b);
  }
  s.SetBytesProcessed(s.iterations() * kBig * 4 * 3);
}

template <bool kMul>
void BM_binary_alloc(benchmark::State& s) {
  set_num_threads(static_cast<int>(s.range(0)));
  Tensor a = ones({kBig}), b = ones({kBig});
  for (auto _ : s) benchmark::DoNotOptimize(kMul ? a * b : a + b);
  s.SetBytesProcessed(s.iterations() * kBig * 4 * 3);
}

}  // namespace

int main(int argc, char** argv) {
  const int all = get_num_threads();
  BENCHMARK(BM_memcpy)->Arg(1)->Arg(all)->UseRealTime()->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_binary_inplace, false)
      ->Name("BM_add_inplace")
      ->Arg(1)
      ->Arg(all)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_binary_inplace, true)
      ->Name("BM_mul_inplace")
      ->Arg(1)
      ->Arg(all)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_binary_alloc, false)
      ->Name("BM_add_alloc")
      ->Arg(1)
      ->Arg(all)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  BENCHMARK_TEMPLATE(BM_binary_alloc, true)
      ->Name("BM_mul_alloc")
      ->Arg(1)
      ->Arg(all)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);

  benchmark::Initialize(&argc, argv);
  bench::Collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  set_num_threads(all);

  std::printf("\nGoals (ratios against references measured above, %d threads = all):\n", all);
  auto have = [&](const std::string& n) { return c.has(n); };
  if (have("BM_tiny_add"))
    std::printf("  tiny add (1 element, output allocated): %.3f us   goal <= 0.3 us\n",
                c.time("BM_tiny_add") / 1e3);
  for (int m : {0, 1}) {
    const std::string n = "BM_tiny_add_recorded/" + std::to_string(m) + "/iterations:300000";
    if (have(n) && have("BM_tiny_add"))
      std::printf("  tiny add while profiled%s: %.3f us = +%.3f us per op   goal <= +1 us\n",
                  m ? " with memory" : "            ", c.time(n) / 1e3,
                  (c.time(n) - c.time("BM_tiny_add")) / 1e3);
  }
  if (have("BM_view_chain"))
    std::printf("  view chain t/reshape/narrow:           %.3f us   goal <= 0.5 us\n",
                c.time("BM_view_chain") / 1e3);
  for (const char* op : {"add", "mul"}) {
    for (int t : {1, all}) {
      const std::string ref = "BM_memcpy/" + std::to_string(t) + "/real_time";
      for (const char* kind : {"inplace", "alloc"}) {
        const std::string n =
            std::string("BM_") + op + "_" + kind + "/" + std::to_string(t) + "/real_time";
        if (!have(n) || !have(ref)) continue;
        std::printf(
            "  %s %-7s 16M f32, %2d thread(s): %6.2f GB/s = %.2f x memcpy (%.2f GB/s)   goal >= "
            "0.80\n",
            op, kind, t, c.gbps(n), c.gbps(n) / c.gbps(ref), c.gbps(ref));
      }
    }
  }
  return 0;
}
