#pragma once
// Which library runs the CPU's matrix products (mm, bmm, matmul, addmm, baddbmm, linear) and
// convolutions (conv1d/2d, conv_transpose2d, and so their gradients): oneDNN by default, where
// it supports the case (dtype and the machine's instructions), Eigen otherwise and as the
// reference (docs/cpu_kernels.md).
#include <cstdint>
#include <string>

#include <xten/core/scalar_type.h>

namespace xten {

enum class CpuGemm { Eigen, OneDnn };

// The default is oneDNN, or what XTEN_CPU_GEMM=eigen|onednn says (read once; another value is
// a ValueError at the first product). set_cpu_gemm overrides it for the whole process.
void set_cpu_gemm(CpuGemm backend);
CpuGemm cpu_gemm();
const char* to_string(CpuGemm backend);

// How many products and convolutions each library has run: which path ran, for tests and
// debugging (a case oneDNN does not support counts as Eigen's).
struct CpuGemmCounts {
  int64_t onednn = 0, eigen = 0;
  int64_t owned_rows = 0;  // of onednn's: float32 products cut by owned_rows (core/parallel.h)
  int64_t sgemm = 0;       // of onednn's: float32 products run by one dnnl_sgemm call
};
CpuGemmCounts cpu_gemm_counts();

// What oneDNN does on this machine (docs/cpu_kernels.md, "What each machine runs"): the
// instruction set its JIT kernels use ("sse41", "avx2", "avx512_core", "avx512_core_bf16",
// "avx512_core_amx", ...), capped by DNNL_MAX_CPU_ISA or by a forced XTEN_CPU_CAPABILITY; and
// whether it builds a matrix product of `dtype` here (asked once per dtype: oneDNN 2.6 has
// bfloat16 products from avx512_core up and float16 ones only with AVX512-FP16). Where it does
// not, that dtype's products and convolutions run on Eigen. Tests ask these instead of assuming
// the machine.
std::string onednn_cpu_isa();
bool onednn_takes(ScalarType dtype);
void count_cpu_gemm(CpuGemm ran);  // the CPU kernels call this
void count_cpu_gemm_owned_rows();  // and this for a product cut by owned_rows
void count_cpu_gemm_sgemm();       // and this for one run by one dnnl_sgemm call

// Note [CPU capability]: the hot CPU kernels (elementwise, reductions, softmax, norms, pooling,
// im2col and Eigen's GEMM, the fused optimizer steps) are compiled once per level below and the
// level is chosen once, when the library loads: the best the CPU (and its operating system)
// supports, or a lower one that XTEN_CPU_CAPABILITY=default|avx2|avx512 asks for. A value that is
// not a level, or a level above what the CPU runs, is reported on stderr and the best level is
// used. Forcing a level also caps oneDNN's instructions at it (default: SSE4.1, avx2: AVX2,
// avx512: AVX-512 without its bf16/AMX extensions), unless DNNL_MAX_CPU_ISA or
// ONEDNN_MAX_CPU_ISA sets oneDNN's cap itself. docs/cpu_kernels.md.
enum class CpuCapability {
  Default,  // x86-64 baseline (SSE2)
  Avx2,     // x86-64-v3: AVX2, FMA, F16C, BMI
  Avx512,   // x86-64-v4: AVX-512 F, BW, CD, DQ, VL
};
CpuCapability cpu_capability();              // the level whose kernels run
CpuCapability cpu_capability_supported();    // the best level this CPU runs
bool cpu_capability_forced();                // chosen by XTEN_CPU_CAPABILITY
const char* to_string(CpuCapability level);  // "default", "avx2", "avx512"
// Whether the avx512 kernels may use AVX-512 BF16's float -> bfloat16 conversion
// (vcvtne2ps2bf16): the CPU has it, the avx512 level runs, and no level was forced (a forced
// avx512 is AVX-512 without its bf16 extensions, as for oneDNN above), so that a test can run
// either form on the same machine.
bool cpu_has_avx512_bf16();
// Whether the avx2/avx512 kernels gather with vpgatherdd (the 16-bit unary ops' table lookups,
// Note [16-bit unary ops by table]): where Linux reports no microcode mitigation of Gather Data
// Sampling (/sys/devices/system/cpu/vulnerabilities/gather_data_sampling reads "Not affected" or
// "Vulnerable"). The mitigation makes a gather several times slower than its loads one by one
// (Intel's Skylake to Ice Lake / Tiger Lake), and a kernel too old to report is taken as
// mitigated. XTEN_CPU_GATHER=0|1 or set_cpu_gather (for tests and comparisons) override it.
bool cpu_gather();
void set_cpu_gather(bool on);
// One line for logs and the examples' headers, e.g. "avx512 kernels, oneDNN (avx512_core_amx) for
// GEMM and convolution" or "avx2 kernels (XTEN_CPU_CAPABILITY; the CPU runs avx512), Eigen for GEMM
// ...".
std::string cpu_backend_summary();

}  // namespace xten
