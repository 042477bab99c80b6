#pragma once
// Helpers shared by the host side of XPU kernels (kernels/xpu/ops/*.cpp).
#include <xten/core/tensor.h>

#include <xten/kernels/xpu/runtime/runtime.h>

namespace xten::xpu {

// The dtype's tag in kernel names (add_f32, copy_i64_bf16): docs/xpu_kernels.md.
const char* dtype_tag(ScalarType t);

// The module holding a kernel for these dtypes: "<family>_f64" if any is float64, else
// "<family>_int" if any is integral or bool and the family is split by dtype kind.
std::string family_for(const char* family, std::initializer_list<ScalarType> dtypes);

// A strided iteration space of at most 8 dims over up to 4 operands (element strides), with
// size-1 dims dropped and mergeable neighbours merged. NotImplementedError beyond 8 dims.
struct Geometry {
  static constexpr int kMaxOperands = 4;
  int32_t ndim = 1;
  Long8 sizes{};
  std::array<Long8, kMaxOperands> st{};  // per operand
  int64_t numel = 0;
};
Geometry geometry(const char* op, IntArrayRef sizes, std::initializer_list<IntArrayRef> strides);

// The XPU device index of a tensor, and its current stream. A kernel reached with a tensor
// of another device (only possible by forcing the XPU key) is a DeviceError, never a launch.
inline int device_of(const Tensor& t) {
  XTEN_CHECK(t.device().type() == kXPU, DeviceError, "xpu", "an XPU kernel got a tensor on {}",
             t.device().str());
  return t.device().index();
}
inline Stream stream_of(const Tensor& t) {
  return get_current_stream(device_of(t));
}

// out[b] = a[b] @ b[b] for a [B, n, k], b [B, k, m], out [B, n, m] (any strides, one
// dtype, one device; not checked here), with linalg.cl's tiled kernel.
void bmm_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b);

// dst = src (same shape, any dtypes, any strides), both on the same XPU device.
void device_copy(const Tensor& dst, const Tensor& src);

}  // namespace xten::xpu
