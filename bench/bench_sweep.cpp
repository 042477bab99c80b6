// bench_sweep through xten alone (bench/README.md, "bench_sweep"): milliseconds per call of each
// case of sweep_cases.h at the thread counts given (default 1 and all). The comparison with
// libtorch, in one process and alternating blocks, is reference/interleaved_sweep.cpp
// (compare_interleaved.sh sweep).
//
// `bench_sweep xpu [threads]`: the XPU half (bench/README.md, "The XPU sweep"): each case on the
// XPU (the bundled driver over PoCL, on the same cores) against xten's own CPU, as the ratio of
// their times, sorted worst first. The yardstick is the add's ratio: an XPU kernel far above it
// does much worse than the driver allows. A case the XPU does not run says why.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <xten/core/parallel.h>

#include "reference/block_timing.h"
#include "sweep_xten.h"

namespace {

// Milliseconds per call, over about 0.05 s after one warm-up call (which builds XPU kernels);
// each call waits for the device.
double ms_per_call(const SweepCase& c, bool xpu) {
  auto call = [&] {
    c.call();
    if (xpu) xten::xpu::synchronize();
  };
  call();
  const double first = seconds_per_call(call, 1);
  const int n = std::max(1, static_cast<int>(0.05 / first));
  return seconds_per_call(call, n) * 1e3;
}

int xpu_sweep(int threads) {
  xten::set_num_threads(threads);
  const std::vector<SweepCase> cpu = xten_sweep_cases();
  const std::vector<SweepCase> xpu = xten_sweep_cases(xten::Device("xpu:0"));
  struct Row {
    std::string name, note;
    double cpu_ms = 0, xpu_ms = 0;
  };
  std::vector<Row> rows;
  const char* only = std::getenv("XTEN_SWEEP_ONLY");  // as the CPU sweep's
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (only && cpu[i].name.find(only) == std::string::npos) continue;
    Row r{cpu[i].name, "", ms_per_call(cpu[i], false), 0};
    try {
      r.xpu_ms = ms_per_call(xpu[i], true);
    } catch (const std::exception& e) {
      r.note = e.what();
      r.note = r.note.substr(0, r.note.find('\n')).substr(0, 90);
    }
    std::fprintf(stderr, "%-52s cpu %9.3f ms  xpu %9.3f ms %s\n", r.name.c_str(), r.cpu_ms,
                 r.xpu_ms, r.note.c_str());
    rows.push_back(r);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.note.empty() != b.note.empty()) return a.note.empty();
    return a.xpu_ms / a.cpu_ms > b.xpu_ms / b.cpu_ms;
  });
  std::printf(
      "XPU (PoCL) against xten's CPU, %d threads, worst first (ratio: XPU time / CPU time)\n\n",
      threads);
  std::printf("| case | CPU ms | XPU ms | XPU/CPU |\n| --- | --- | --- | --- |\n");
  for (const Row& r : rows) {
    if (r.note.empty())
      std::printf("| %s | %.3f | %.3f | %.1f |\n", r.name.c_str(), r.cpu_ms, r.xpu_ms,
                  r.xpu_ms / r.cpu_ms);
    else
      std::printf("| %s | %.3f | not run: %s | |\n", r.name.c_str(), r.cpu_ms, r.note.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "xpu") == 0)
    return xpu_sweep(argc > 2 ? std::atoi(argv[2])
                              : static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) threads.push_back(std::atoi(argv[i]));
  if (threads.empty()) threads = {1, static_cast<int>(std::thread::hardware_concurrency())};
  const char* only = std::getenv("XTEN_SWEEP_ONLY");  // as reference/interleaved_sweep.cpp's
  for (int t : threads) {
    xten::set_num_threads(t);
    for (const SweepCase& c : xten_sweep_cases()) {
      if (only && c.name.find(only) == std::string::npos) continue;
      const double first = seconds_per_call(c.call, 1);
      const int n = std::max(1, static_cast<int>(0.05 / first));
      std::printf("%-52s %2d threads: %9.3f ms\n", c.name.c_str(), t,
                  seconds_per_call(c.call, n) * 1e3);
    }
  }
}
