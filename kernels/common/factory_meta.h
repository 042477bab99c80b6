#pragma once
// The factories' meta steps, shared by every backend (Note [Pooling meta] in window.h says
// why): each checks its arguments and its dtype set (the same errors on every device) and
// allocates the output on the (resolved) device; the backend then fills it.
#include <xten/core/meta.h>
#include <xten/core/tensor.h>

namespace xten {

struct ArangeMeta {
  ArangeSpec spec;
  Tensor out;  // spec.length elements; every dtype but bool
};
// empty's dtype check, on every backend: a quantized dtype needs a quantizer, which only
// quantization/'s factories give (quantize_per_tensor, ...; docs/quantization.md).
void check_empty_dtype(ScalarType dtype);

ArangeMeta arange_meta(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                       Device device);

// linspace is computed from both ends in double: value i is start + step * i below `half`,
// end - step * (steps - 1 - i) from there, so that the last value is `end` exactly.
struct LinspaceMeta {
  double start = 0, end = 0, step = 0;
  int64_t half = 0;
  Tensor out;  // steps elements; every dtype but bool
};
LinspaceMeta linspace_meta(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype,
                           Device device);

// rand and randn: floating dtypes.
Tensor random_meta(const char* op, IntArrayRef size, ScalarType dtype, Device device);
// randint: values in [low, high) that the dtype holds; every dtype but bool.
Tensor randint_meta(int64_t low, int64_t high, IntArrayRef size, ScalarType dtype, Device device);

}  // namespace xten
