#pragma once
// Shared by the bench programs: the memcpy bandwidth reference, and a reporter that keeps
// every run so that main() can print ratios after Google Benchmark's table.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <xten/xten.h>

namespace xten::bench {

constexpr int64_t kBig = 16 * 1024 * 1024;  // 16M float32 = 64 MiB per buffer

// memcpy of kBig floats split over `threads`; bytes counted as read + written.
inline void memcpy_reference(benchmark::State& s, int threads) {
  std::vector<float> src(kBig, 1.0f), dst(kBig, 0.0f);
  for (auto _ : s) {
    parallel_for(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t chunk = kBig / threads;
        std::memcpy(dst.data() + t * chunk, src.data() + t * chunk, chunk * sizeof(float));
      }
    });
    benchmark::ClobberMemory();
  }
  s.SetBytesProcessed(s.iterations() * kBig * 4 * 2);
}

class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& report) override {
    for (const Run& r : report) runs_[r.benchmark_name()] = r;
    ConsoleReporter::ReportRuns(report);
  }
  bool has(const std::string& n) const { return runs_.count(n) > 0; }
  // Real time per iteration, in the benchmark's time unit.
  double time(const std::string& n) const { return runs_.at(n).GetAdjustedRealTime(); }
  double counter(const std::string& n, const char* c) const {
    return runs_.at(n).counters.at(c).value;
  }
  double gbps(const std::string& n) const { return counter(n, "bytes_per_second") / 1e9; }

 private:
  std::map<std::string, Run> runs_;
};

}  // namespace xten::bench
