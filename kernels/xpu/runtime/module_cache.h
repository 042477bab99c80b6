#pragma once
// Embedded SPIR-V modules, one per kernel family (and "<family>_f64" for float64 variants),
// registered at load time by the files cmake/embed_spirv.cmake generates, built per device
// on first use. docs/xpu_kernels.md.
#include <cstddef>

namespace xten::xpu {

bool register_spirv_module(const char* family, const unsigned char* data, size_t size);

}  // namespace xten::xpu
