// Pooling written with other ops (valid on every backend).
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

// The values of max_pool2d_with_indices: one kernel per backend serves both ops.
Tensor max_pool2d_kernel(const Tensor& input, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(max_pool2d_with_indices(input, kernel, stride, padding, dilation, ceil_mode));
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("max_pool2d", max_pool2d_kernel);
}

}  // namespace xten
