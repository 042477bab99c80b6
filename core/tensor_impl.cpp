#include <xten/core/tensor_impl.h>

#include <xten/core/error.h>

namespace xten {

namespace {
// A quantized tensor is seen only by the kernels registered for its device's Quantized key.
DispatchKeySet keys_for(ScalarType dtype, Device device) {
  const int type = static_cast<int>(device.type());
  return is_quantized_type(dtype) ? DispatchKeySet(kDeviceTypeKeys[type][3])
                                  : key_set_for_device_type(type);
}
}  // namespace

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
      key_set_(keys_for(dtype_, device_)) {
  XTEN_ASSERT(sizes.size() == strides.size(), "sizes {} and strides {}", sizes, strides);
  refresh();
}

namespace {
AutogradMetaFactory g_autograd_meta_factory = nullptr;
}
void set_autograd_meta_factory(AutogradMetaFactory factory) {
  g_autograd_meta_factory = factory;
}
AutogradMetaFactory autograd_meta_factory() {
  return g_autograd_meta_factory;
}

AutogradMetaInterface* TensorImpl::ensure_autograd_meta() {
  if (!autograd_meta_) {
    XTEN_ASSERT(g_autograd_meta_factory != nullptr, "autograd is not loaded");
    autograd_meta_ = g_autograd_meta_factory();
  }
  return autograd_meta_.get();
}

void TensorImpl::set_requires_grad(bool r) {
  if (!r && !autograd_meta_) return;
  ensure_autograd_meta()->set_requires_grad(r, this);
}

void TensorImpl::set_autograd_key(bool on) {
  const DispatchKey k = kDeviceTypeKeys[static_cast<int>(device_.type())][1];
  key_set_ = on ? key_set_.add(k) : key_set_.remove(k);
}

void TensorImpl::set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  XTEN_ASSERT(sizes.size() == strides.size(), "sizes {} and strides {}", sizes, strides);
  sizes_ = DimVector(sizes);
  strides_ = DimVector(strides);
  storage_offset_ = storage_offset;
  refresh();
}

void TensorImpl::set_data(const TensorImpl& src) {
  const bool in_graph = key_set_.has(kDeviceTypeKeys[static_cast<int>(device_.type())][1]);
  storage_ = src.storage_;
  dtype_ = src.dtype_;
  device_ = src.device_;
  quantizer_ = src.quantizer_;
  key_set_ = keys_for(dtype_, device_);
  set_autograd_key(in_graph);
  set_geometry(src.sizes_, src.strides_, src.storage_offset_);
}

namespace {
// Whether strides are dense with the dims laid out in `order` (outermost first; empty: in
// their own order, row-major); size-1 dims may have any stride.
bool dense_in_order(IntArrayRef sizes, IntArrayRef strides, IntArrayRef order = {}) {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    const int64_t d = order.empty() ? static_cast<int64_t>(i) : order[i];
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}
}  // namespace

// numel and contiguity are cached: they are read on every op.
void TensorImpl::refresh() {
  numel_ = 1;
  for (int64_t s : sizes_) numel_ *= s;
  is_contiguous_ = true;
  is_channels_last_ = sizes_.size() == 4;
  if (numel_ == 0) return;
  is_contiguous_ = dense_in_order(sizes_, strides_);
  if (is_channels_last_) is_channels_last_ = dense_in_order(sizes_, strides_, {0, 2, 3, 1});
}

}  // namespace xten
