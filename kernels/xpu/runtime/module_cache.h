#pragma once
// Embedded SPIR-V modules, one per kernel family (and "<family>_f64" for float64 variants,
// "<family>_int" for the integer and bool variants of the large families),
// registered at load time by the files cmake/embed_spirv.cmake generates (and later by
// xten::compile's generated modules, compile/xpu_codegen.cpp), built per device on first use.
// docs/xpu_kernels.md.
#include <cstddef>
#include <string>

namespace xten::xpu {

// `data` must stay valid to the end of the process. Thread-safe.
bool register_spirv_module(const char* family, const unsigned char* data, size_t size);
// Whether a module of that name is embedded (a split family has "<family>_int").
bool has_spirv_module(const std::string& family);

}  // namespace xten::xpu
