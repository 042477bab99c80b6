#include <xten/core/memory_format.h>

#include <algorithm>

#include <xten/core/error.h>
#include <xten/core/meta.h>

namespace xten {

const char* to_string(MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return "contiguous_format";
    case MemoryFormat::ChannelsLast:
      return "channels_last";
    case MemoryFormat::Preserve:
      return "preserve_format";
  }
  return "?";
}

DimVector dense_strides(IntArrayRef sizes, IntArrayRef order) {
  XTEN_ASSERT(order.size() == sizes.size(), "order {} for sizes {}", order, sizes);
  DimVector strides(sizes.size(), 1);
  int64_t next = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[order[i]] = next;
    next *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return strides;
}

DimVector strides_for_format(const char* op, IntArrayRef sizes, MemoryFormat f) {
  XTEN_CHECK(f != MemoryFormat::Preserve, ValueError, op,
             "preserve_format names no layout of its own here; pass contiguous_format or "
             "channels_last");
  if (f == MemoryFormat::Contiguous) return contiguous_strides(sizes);
  XTEN_CHECK(sizes.size() == 4, ValueError, op,
             "channels_last needs a 4-d tensor [N, C, H, W], but got sizes {}", sizes);
  return dense_strides(sizes, {0, 2, 3, 1});
}

}  // namespace xten
