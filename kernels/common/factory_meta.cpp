#include <xten/kernels/common/factory_meta.h>

#include <xten/core/dtype_dispatch.h>

namespace xten {

void check_empty_dtype(ScalarType dtype) {
  XTEN_CHECK(dtype != ScalarType::Undefined, TypeError, "empty", "dtype is undefined");
  XTEN_CHECK(!is_quantized_type(dtype), TypeError, "empty",
             "dtype {} is quantized and needs a scale and zero point: make quantized tensors with "
             "quantize_per_tensor / quantize_per_channel",
             dtype_name(dtype));
}

ArangeMeta arange_meta(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                       Device device) {
  ArangeMeta m;
  m.spec = arange_spec(start, end, step);
  visit_dtype<dtypes::kAllButBool>("arange", dtype, [](auto) {});
  m.out = empty_tensor({m.spec.length}, dtype, device);
  return m;
}

LinspaceMeta linspace_meta(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype,
                           Device device) {
  XTEN_CHECK(steps >= 0, ValueError, "linspace", "number of steps must be non-negative, but got {}",
             steps);
  visit_dtype<dtypes::kAllButBool>("linspace", dtype, [](auto) {});
  LinspaceMeta m;
  m.start = start.to<double>();
  m.end = end.to<double>();
  m.step = steps > 1 ? (m.end - m.start) / static_cast<double>(steps - 1) : 0.0;
  m.half = (steps + 1) / 2;
  m.out = empty_tensor({steps}, dtype, device);
  return m;
}

Tensor random_meta(const char* op, IntArrayRef size, ScalarType dtype, Device device) {
  visit_dtype<dtypes::kFloating>(op, dtype, [](auto) {});
  return empty_tensor(size, dtype, device);
}

Tensor randint_meta(int64_t low, int64_t high, IntArrayRef size, ScalarType dtype, Device device) {
  check_randint_bounds(low, high, dtype);
  visit_dtype<dtypes::kAllButBool>("randint", dtype, [](auto) {});
  return empty_tensor(size, dtype, device);
}

}  // namespace xten
