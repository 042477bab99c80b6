#pragma once
// TensorImpl: what a Tensor handle points at. Sizes, strides (in elements) and an offset
// into a Storage, the dtype, device and the dispatch keys the tensor contributes.
#include <xten/core/array_ref.h>
#include <xten/core/scalar_type.h>
#include <xten/core/storage.h>
#include <xten/dispatch/dispatch_key.h>

namespace xten {

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
  const Storage& storage() const { return storage_; }
  // The address of element 0 (storage data + offset).
  void* data() const {
    return static_cast<char*>(storage_.data()) +
           storage_offset_ * static_cast<int64_t>(element_size(dtype_));
  }

  bool requires_grad() const { return requires_grad_; }
  void set_requires_grad(bool r) { requires_grad_ = r; }
  // A zero-dim tensor made from a Scalar: it promotes as a Scalar does (core/meta.h).
  bool is_wrapped_number() const { return is_wrapped_number_; }
  void set_wrapped_number(bool w) { is_wrapped_number_ = w; }

  // Re-points this impl at new geometry (as_strided_, resize of an empty output).
  void set_geometry(IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset);

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
  bool requires_grad_ = false;
  bool is_wrapped_number_ = false;
};

}  // namespace xten
