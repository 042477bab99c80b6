#include <xten/core/cpu_backend.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include <xten/core/error.h>

namespace xten {
namespace {

std::atomic<int> g_choice{-1};  // -1: not chosen yet (read XTEN_CPU_GEMM)
std::atomic<int64_t> g_onednn{0}, g_eigen{0};

int from_environment() {
  const char* v = std::getenv("XTEN_CPU_GEMM");
  if (!v || !*v) return static_cast<int>(CpuGemm::OneDnn);
  const std::string s(v);
  if (s == "onednn") return static_cast<int>(CpuGemm::OneDnn);
  if (s == "eigen") return static_cast<int>(CpuGemm::Eigen);
  XTEN_FAIL(ValueError, "XTEN_CPU_GEMM", "expected 'eigen' or 'onednn', but got '{}'", s);
}

}  // namespace

void set_cpu_gemm(CpuGemm backend) {
  g_choice = static_cast<int>(backend);
}

CpuGemm cpu_gemm() {
  int c = g_choice.load();
  if (c < 0) {
    c = from_environment();
    g_choice = c;
  }
  return static_cast<CpuGemm>(c);
}

const char* to_string(CpuGemm backend) {
  return backend == CpuGemm::OneDnn ? "onednn" : "eigen";
}

CpuGemmCounts cpu_gemm_counts() {
  return {g_onednn.load(), g_eigen.load()};
}

void count_cpu_gemm(CpuGemm ran) {
  (ran == CpuGemm::OneDnn ? g_onednn : g_eigen).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace xten
