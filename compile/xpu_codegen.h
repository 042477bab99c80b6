#pragma once
// XPU code for fused groups (docs/compile.md, "XPU code"). Each fused group of a graph whose
// tensors live on an XPU device becomes an OpenCL C kernel that computes what the eager XPU
// kernels compute, element by element, with no intermediate in device memory (a group ending in
// layer_norm: one work-group per row). A graph's kernels are one module, compiled to SPIR-V by
// the toolchain the build uses for the embedded kernels (clang-15, opt-15, llvm-spirv-15),
// cached on disk (kernel_cache.h) and loaded through Level Zero like the embedded modules.
// Anything that fails (no compiler, a compiler error, a module the driver rejects) is one
// warning, and those groups run op by op through the eager kernels.
#include <string>
#include <vector>

#include <xten/compile/graph.h>

namespace xten::compiler {

struct XpuKernels {
  std::string source;               // the module's OpenCL C (for the debug folder)
  std::string family;               // the registered module; empty: not built
  std::vector<std::string> kernel;  // per group of the graph: its kernel ("" for a CPU group)
  std::string error;                // why the module could not be built (warned once)
  bool from_cache = false;          // the SPIR-V came from the disk cache
  bool built() const { return !family.empty(); }
};

// Generates, compiles (or loads from the cache) and loads the kernels of g's XPU groups.
XpuKernels build_xpu_kernels(const Graph& g);

// Runs XPU group `gi`: `ins` per group input (float32 with the metadata the graph recorded, or
// 0-d), `outs` per program output (contiguous float32 of the group's shape, on its device);
// with a row epilogue, `norm_out` (and `weight`, `bias` where the group has them). Returns false
// (and launches nothing) when an input's layout differs from the recorded one.
bool run_xpu_group(const XpuKernels& k, const Graph& g, int gi, const std::vector<Tensor>& ins,
                   const std::vector<Tensor>& outs, const Tensor& norm_out, const Tensor& weight,
                   const Tensor& bias);

}  // namespace xten::compiler
