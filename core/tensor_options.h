#pragma once
#include <optional>

#include <xten/core/device.h>
#include <xten/core/memory_format.h>
#include <xten/core/scalar_type.h>

namespace xten {

// How to make a tensor: dtype (default float32), device (default cpu), requires_grad, and the
// memory format (empty, to and the *_like factories read it; docs/memory_format.md).
// Implicit from a ScalarType or a Device so that `zeros({2}, kInt)` and
// `zeros({2}, Device("xpu"))` read naturally.
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}            // NOLINT
  TensorOptions(Device d) : device_(d) {}               // NOLINT
  TensorOptions(DeviceType d) : device_(Device(d)) {}   // NOLINT
  TensorOptions(const char* d) : device_(Device(d)) {}  // NOLINT
  // `{kHalf, Device("xpu")}`: every factory takes (dtype, device) this way.
  TensorOptions(ScalarType t, Device d) : dtype_(t), device_(d) {}

  TensorOptions dtype(ScalarType t) const {
    TensorOptions o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool r) const {
    TensorOptions o = *this;
    o.requires_grad_ = r;
    return o;
  }

  TensorOptions memory_format(MemoryFormat f) const {
    TensorOptions o = *this;
    o.memory_format_ = f;
    return o;
  }

  ScalarType dtype() const { return dtype_.value_or(kFloat); }
  Device device() const { return device_.value_or(Device(kCPU)); }
  bool requires_grad() const { return requires_grad_; }
  bool has_dtype() const { return dtype_.has_value(); }
  bool has_device() const { return device_.has_value(); }
  // Unset: each factory's default (Contiguous for empty, Preserve for to and *_like).
  std::optional<MemoryFormat> memory_format_opt() const { return memory_format_; }

 private:
  std::optional<ScalarType> dtype_;
  std::optional<Device> device_;
  bool requires_grad_ = false;
  std::optional<MemoryFormat> memory_format_;
};

inline TensorOptions dtype(ScalarType t) {
  return TensorOptions().dtype(t);
}
inline TensorOptions device(Device d) {
  return TensorOptions().device(d);
}
inline TensorOptions memory_format(MemoryFormat f) {
  return TensorOptions().memory_format(f);
}

}  // namespace xten
