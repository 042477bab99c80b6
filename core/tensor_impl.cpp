#include <xten/core/tensor_impl.h>

#include <xten/core/error.h>

namespace xten {

static_assert(kNumDeviceTypeKeyRows == kNumDeviceTypes,
              "every device type needs its row of dispatch keys (dispatch/dispatch_key.h)");

TensorImpl::TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
                       int64_t storage_offset)
    : storage_(std::move(storage)),
      sizes_(sizes),
      strides_(strides),
      storage_offset_(storage_offset),
      dtype_(dtype),
      device_(storage_.device()),
      key_set_(key_set_for_device_type(static_cast<int>(device_.type()))) {
  XTEN_ASSERT(sizes.size() == strides.size(), "sizes {} and strides {}", sizes, strides);
  refresh();
}

void TensorImpl::set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  XTEN_ASSERT(sizes.size() == strides.size(), "sizes {} and strides {}", sizes, strides);
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  storage_offset_ = storage_offset;
  refresh();
}

// numel and contiguity are cached: they are read on every op.
void TensorImpl::refresh() {
  numel_ = 1;
  for (int64_t s : sizes_) numel_ *= s;
  is_contiguous_ = true;
  if (numel_ == 0) return;
  int64_t expected = 1;
  for (size_t i = sizes_.size(); i-- > 0;) {
    if (sizes_[i] == 1) continue;
    if (strides_[i] != expected) {
      is_contiguous_ = false;
      return;
    }
    expected *= sizes_[i];
  }
}

}  // namespace xten
