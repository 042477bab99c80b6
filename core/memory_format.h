#pragma once
// MemoryFormat: the order in which a tensor's elements lie in memory, PyTorch's meaning
// (docs/memory_format.md). Contiguous: row-major (NCHW for an image batch); ChannelsLast: a
// 4-d [N, C, H, W] tensor laid out as NHWC, strides (H*W*C, 1, W*C, C); Preserve: keep the
// source's layout (what clone, to and the *_like factories do by default).
#include <cstdint>

#include <xten/core/array_ref.h>

namespace xten {

enum class MemoryFormat : int8_t { Contiguous, ChannelsLast, Preserve };

const char* to_string(MemoryFormat f);

// The strides of a dense tensor of `sizes` whose dims lie in memory in `order`, outermost first
// (a permutation of the dims).
DimVector dense_strides(IntArrayRef sizes, IntArrayRef order);

// The strides of a dense tensor of `sizes` in format `f` (Contiguous or ChannelsLast; the
// latter needs 4 dims: an error naming `op` otherwise).
DimVector strides_for_format(const char* op, IntArrayRef sizes, MemoryFormat f);

}  // namespace xten
