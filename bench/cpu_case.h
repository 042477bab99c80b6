#pragma once
// One measurement of bench_cpu's list (bench/README.md, "bench_cpu"): a name, the work of one
// call and its unit, how many calls bench_cpu times, and the call. The list is built once per
// library, by xten_cpu_cases() (cpu_cases.h) and libtorch_cpu_cases()
// (reference/libtorch_cpu_cases.h), in the same order, and read by bench_cpu / libtorch_cpu
// (one timed run each) and by the interleaved comparison (reference/interleaved_cpu.cpp).
// Standard C++ only: both libraries' translation units include it.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "reference/block_timing.h"  // seconds_per_call

struct CpuCase {
  enum Unit { kFlops, kBytes, kMilliseconds };
  std::string name;
  double work;  // per call, in `unit`; for kMilliseconds the images a call takes (0: none)
  Unit unit;
  int calls;  // timed by bench_cpu after calls / 5 + 1 warm-up calls
  std::function<void()> call;

  // The figure for `ms` milliseconds a call: "1234 GFLOP/s", "56 GB/s", "7.89 ms" or
  // "41.3 ms (194 images/s)".
  std::string figure(double ms) const {
    char buf[64];
    if (unit == kMilliseconds && work > 0)
      std::snprintf(buf, sizeof buf, "%.1f ms (%.0f images/s)", ms, work * 1e3 / ms);
    else if (unit == kMilliseconds)
      std::snprintf(buf, sizeof buf, "%.2f ms", ms);
    else
      std::snprintf(buf, sizeof buf, "%.0f %s", work / ms / 1e6,
                    unit == kFlops ? "GFLOP/s" : "GB/s");
    return buf;
  }
};

// Milliseconds per call of `f`: the mean over n calls after n / 5 + 1 warm-up calls.
template <class F>
double ms_per_call(F&& f, int n) {
  for (int i = 0; i < n / 5 + 1; ++i) f();
  return seconds_per_call(f, n) * 1e3;
}

// bench_cpu's lines for a list: "name: figure" per case.
inline void print_cases(const std::vector<CpuCase>& cases) {
  for (const CpuCase& c : cases)
    std::printf("%s: %s\n", c.name.c_str(), c.figure(ms_per_call(c.call, c.calls)).c_str());
}
