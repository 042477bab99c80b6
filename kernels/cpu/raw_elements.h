#pragma once
// Copies that move elements without converting them (gather, the tiled transposing copy) work on
// unsigned integers of the element's size: one instantiation per size, not per dtype.
#include <cstdint>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/error.h>

namespace xten::cpu {

// Calls f(TypeTag<U>) with an unsigned integer type of `size` bytes.
template <class F>
void visit_element_size(const char* op, size_t size, F&& f) {
  switch (size) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
    default:
      XTEN_FAIL(NotImplementedError, op, "elements of {} bytes are not supported", size);
  }
}

}  // namespace xten::cpu
