#pragma once
// Which library runs the CPU's matrix products (mm, bmm, matmul, addmm, baddbmm, linear) and
// convolutions (conv1d/2d, conv_transpose2d, and so their gradients): oneDNN by default, where
// it supports the case (dtype and the machine's instructions), Eigen otherwise and as the
// reference (docs/cpu_kernels.md).
#include <cstdint>

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
};
CpuGemmCounts cpu_gemm_counts();
void count_cpu_gemm(CpuGemm ran);  // the CPU kernels call this

}  // namespace xten
