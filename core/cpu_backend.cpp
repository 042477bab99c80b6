#include <xten/core/cpu_backend.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <xten/core/error.h>

namespace xten {
namespace {

std::atomic<int> g_choice{-1};  // -1: not chosen yet (read XTEN_CPU_GEMM)
std::atomic<int64_t> g_onednn{0}, g_eigen{0}, g_owned_rows{0}, g_sgemm{0};

int from_environment() {
  const char* v = std::getenv("XTEN_CPU_GEMM");
  if (!v || !*v) return static_cast<int>(CpuGemm::OneDnn);
  const std::string s(v);
  if (s == "onednn") return static_cast<int>(CpuGemm::OneDnn);
  if (s == "eigen") return static_cast<int>(CpuGemm::Eigen);
  XTEN_FAIL(ValueError, "XTEN_CPU_GEMM", "expected 'eigen' or 'onednn', but got '{}'", s);
}

CpuCapability detect_capability() {
  // libgcc's cpuid check also asks the OS (XGETBV) whether it saves the AVX and AVX-512 state.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return CpuCapability::Avx512;
  if (__builtin_cpu_supports("x86-64-v3")) return CpuCapability::Avx2;
  return CpuCapability::Default;
}

struct CapabilityChoice {
  CpuCapability supported;
  CpuCapability chosen;
  bool forced;  // XTEN_CPU_CAPABILITY named the level
};

// Runs while the library loads (the kernel registration asks for the level), where an error
// cannot be thrown to anyone: a bad value is reported on stderr and ignored.
CapabilityChoice choose_capability() {
  const CpuCapability best = detect_capability();
  const char* v = std::getenv("XTEN_CPU_CAPABILITY");
  if (!v || !*v) return {best, best, false};
  const std::string s(v);
  for (CpuCapability level : {CpuCapability::Default, CpuCapability::Avx2, CpuCapability::Avx512}) {
    if (s != to_string(level)) continue;
    if (level > best) {
      std::fprintf(stderr,
                   "xten: XTEN_CPU_CAPABILITY=%s is above what this CPU runs (%s); using %s\n", v,
                   to_string(best), to_string(best));
      return {best, best, false};
    }
    return {best, level, true};
  }
  std::fprintf(stderr,
               "xten: XTEN_CPU_CAPABILITY='%s' is not one of default, avx2, avx512; using %s\n", v,
               to_string(best));
  return {best, best, false};
}

const CapabilityChoice& capability_choice() {
  static const CapabilityChoice choice = choose_capability();
  return choice;
}

}  // namespace

CpuCapability cpu_capability() {
  return capability_choice().chosen;
}

CpuCapability cpu_capability_supported() {
  return capability_choice().supported;
}

bool cpu_capability_forced() {
  return capability_choice().forced;
}

bool cpu_has_avx512_bf16() {
  static const bool has = [] {
    const CapabilityChoice& c = capability_choice();
    __builtin_cpu_init();
    return c.chosen == CpuCapability::Avx512 && !c.forced && __builtin_cpu_supports("avx512bf16");
  }();
  return has;
}

namespace {
int gather_from_system() {
  if (const char* v = std::getenv("XTEN_CPU_GATHER")) {
    const std::string s(v);
    if (s == "0" || s == "1") return s == "1";
    std::fprintf(stderr, "xten: XTEN_CPU_GATHER=%s is not 0 or 1; ignored\n", v);
  }
  std::FILE* f = std::fopen("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling", "r");
  if (!f) return 0;
  char line[128] = {};
  const bool read = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  const std::string s(read ? line : "");
  return s.rfind("Not affected", 0) == 0 || s.rfind("Vulnerable", 0) == 0;
}
std::atomic<int> g_gather{-1};
}  // namespace

bool cpu_gather() {
  const int g = g_gather.load();
  if (g >= 0) return g == 1;
  // Read once, under the function-local static's guard: threads asking first at the same time
  // (a lookup's parallel chunks) read the file and the variable, and warn, once.
  static const bool from_system = gather_from_system() == 1;
  return from_system;
}

void set_cpu_gather(bool on) {
  g_gather = on ? 1 : 0;
}

const char* to_string(CpuCapability level) {
  switch (level) {
    case CpuCapability::Avx512:
      return "avx512";
    case CpuCapability::Avx2:
      return "avx2";
    case CpuCapability::Default:
      break;
  }
  return "default";
}

std::string cpu_backend_summary() {
  const CapabilityChoice& c = capability_choice();
  std::string s = fmt::format("{} kernels", to_string(c.chosen));
  if (cpu_has_avx512_bf16()) s += " (with AVX-512 BF16 conversions)";
  if (c.chosen != CpuCapability::Default && !cpu_gather()) s += " (no vector gathers)";
  if (c.forced) s += fmt::format(" (XTEN_CPU_CAPABILITY; the CPU runs {})", to_string(c.supported));
  return s + (cpu_gemm() == CpuGemm::OneDnn
                  ? fmt::format(", oneDNN ({}) for GEMM and convolution", onednn_cpu_isa())
                  : std::string(", Eigen for GEMM and convolution"));
}

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
  return {g_onednn.load(), g_eigen.load(), g_owned_rows.load(), g_sgemm.load()};
}

void count_cpu_gemm_owned_rows() {
  g_owned_rows.fetch_add(1, std::memory_order_relaxed);
}

void count_cpu_gemm_sgemm() {
  g_sgemm.fetch_add(1, std::memory_order_relaxed);
}

void count_cpu_gemm(CpuGemm ran) {
  (ran == CpuGemm::OneDnn ? g_onednn : g_eigen).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace xten
