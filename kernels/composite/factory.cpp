// Factories written with other ops (valid on every backend), and `to`.
#include <algorithm>

#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

Tensor full_kernel(IntArrayRef size, const Scalar& value, ScalarType dtype, Device device) {
  Tensor out = empty(size, dtype, device);
  return fill_(out, value);
}

Tensor eye_kernel(int64_t n, int64_t m, ScalarType dtype, Device device) {
  XTEN_CHECK(n >= 0 && m >= 0, ValueError, "eye",
             "n and m must be non-negative, but got n={}, m={}", n, m);
  Tensor out = zeros({n, m}, dtype, device);
  if (n > 0 && m > 0) as_strided(out, {std::min(n, m)}, {m + 1}, 0).fill_(1);
  return out;
}

Tensor to_kernel(const Tensor& self, Device device, ScalarType dtype, bool copy) {
  const bool same_device =
      self.device().type() == device.type() && (!device.has_index() || !self.device().has_index() ||
                                                self.device().index() == device.index());
  if (!copy && same_device && self.dtype() == dtype) return self;
  // The copy keeps self's layout (Preserve: Note [Preserved layout], dispatch/ops.cpp).
  Tensor out = empty_like(self, TensorOptions(dtype).device(
                                    device.has_index() || !same_device ? device : self.device()));
  return copy_(out, self);
}

}  // namespace

LIBRARY_IMPL(xten, CompositeImplicit, m) {
  m.impl("full", full_kernel);
  m.impl("eye", eye_kernel);
  m.impl("to", to_kernel);
}

}  // namespace xten
