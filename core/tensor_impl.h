#pragma once
// TensorImpl: what a Tensor handle points at. Sizes, strides (in elements) and an offset
// into a Storage, the dtype, device and the dispatch keys the tensor contributes.
#include <memory>

#include <xten/core/array_ref.h>
#include <xten/core/autograd_meta_interface.h>
#include <xten/core/scalar_type.h>
#include <xten/core/storage.h>
#include <xten/dispatch/dispatch_key.h>

namespace xten {

struct Quantizer;  // core/quantizer.h

class TensorImpl {
 public:
  TensorImpl(Storage storage, ScalarType dtype, IntArrayRef sizes, IntArrayRef strides,
             int64_t storage_offset);

  IntArrayRef sizes() const { return sizes_; }
  IntArrayRef strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return device_; }
  DispatchKeySet key_set() const { return key_set_; }
  bool is_contiguous() const { return is_contiguous_; }
  // 4-d and dense in NHWC order (size-1 dims ignored, as for is_contiguous).
  bool is_channels_last_contiguous() const { return is_channels_last_; }
  const Storage& storage() const { return storage_; }
  // The address of element 0 (storage data + offset).
  void* data() const {
    return static_cast<char*>(storage_.data()) +
           storage_offset_ * static_cast<int64_t>(element_size(dtype_));
  }

  // Autograd's state (Note [Autograd meta], docs/autograd.md): null for a tensor autograd never
  // touched. requires_grad is true for a leaf that asked for it and for every result of a
  // recorded op.
  bool requires_grad() const { return autograd_meta_ && autograd_meta_->requires_grad(); }
  void set_requires_grad(bool r);  // through autograd's meta (checks leaf and dtype)
  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  // The meta, made by autograd's factory if the tensor has none yet.
  AutogradMetaInterface* ensure_autograd_meta();
  // Only tensors in the graph carry the Autograd key of their device, so a call on tensors that
  // need no gradient never reaches the autograd layer (Note [Autograd key], docs/autograd.md).
  void set_autograd_key(bool on);

  // A view (made by a view op) remembers the tensor that owns its memory: the base of every view
  // of a view is the first non-view tensor. Null for a tensor that is not a view.
  const std::shared_ptr<TensorImpl>& view_base() const { return view_base_; }
  void set_view_base(std::shared_ptr<TensorImpl> base) { view_base_ = std::move(base); }
  // The storage's version counter: shared by a tensor and its views (core/storage.h).
  uint32_t version() const { return storage_.version(); }
  void bump_version() const { storage_.bump_version(); }
  // A zero-dim tensor made from a Scalar: it promotes as a Scalar does (core/meta.h).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool w) { is_wrapped_number_ = w; }

  // A quantized tensor's quantizer (core/quantizer.h); null for every other dtype. A tensor of a
  // quantized dtype carries its device's Quantized key, not its backend and autocast keys.
  const std::shared_ptr<const Quantizer>& quantizer() const { return quantizer_; }
  void set_quantizer(std::shared_ptr<const Quantizer> q) { quantizer_ = std::move(q); }

  // Re-points this impl at new geometry (as_strided_, resize of an empty output).
  void set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);
  // Takes src's data (storage, dtype, device, geometry) and keeps this impl's identity and
  // autograd state: how nn::Module::to moves a parameter that optimizers and users hold
  // (PyTorch's set_data).
  void set_data(const TensorImpl& src);

 private:
  void refresh();

  Storage storage_;
  DimVector sizes_;
  DimVector strides_;
  int64_t storage_offset_ = 0;
  int64_t numel_ = 1;
  ScalarType dtype_;
  Device device_;
  DispatchKeySet key_set_;
  bool is_contiguous_ = true;
  bool is_channels_last_ = false;
  bool is_wrapped_number_ = false;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
  std::shared_ptr<TensorImpl> view_base_;
  std::shared_ptr<const Quantizer> quantizer_;
};

}  // namespace xten
