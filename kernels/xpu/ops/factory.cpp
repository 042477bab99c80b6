// XPU factories: empty, arange, linspace and the random ones (docs/random.md: the same numbers as
// the CPU kernels for the same seed and shape).
#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>

#include <xten/kernels/common/factory_meta.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// "xpu" means the current XPU device.
Device resolve(Device d) {
  XTEN_CHECK(d.type() == kXPU, DeviceError, "xpu", "an XPU factory was asked for a tensor on {}",
             d.str());
  return Device(kXPU, normalize_device(d.has_index() ? d.index() : -1));
}

Tensor empty_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  check_empty_dtype(dtype);
  return empty_tensor(size, dtype, resolve(device));
}

Tensor arange_kernel(const Scalar& start, const Scalar& end, const Scalar& step, ScalarType dtype,
                     Device device) {
  const ArangeMeta m = arange_meta(start, end, step, dtype, resolve(device));
  const ArangeSpec& spec = m.spec;
  const Tensor& out = m.out;
  const int d = device_of(out);
  const std::string tag = dtype_tag(dtype);
  if (spec.integral) {
    Kernel& k = get_kernel(d, "arange", family_for("factory", {dtype}), "arange_int_" + tag);
    launch(stream_of(out), k, spec.length, out.data_ptr(), spec.length, start.to_long(),
           step.to_long());
  } else if (get_device_properties(d).has_fp64) {  // accumulate in double, as the CPU does
    Kernel& k = get_kernel(d, "arange", "factory_f64", "arange_acc64_" + tag);
    launch(stream_of(out), k, spec.length, out.data_ptr(), spec.length, start.to<double>(),
           step.to<double>());
  } else {
    Kernel& k = get_kernel(d, "arange", "factory", "arange_acc32_" + tag);
    launch(stream_of(out), k, spec.length, out.data_ptr(), spec.length, start.to<float>(),
           step.to<float>());
  }
  return out;
}

// linspace as the CPU computes it (from both ends, in double) where the device has fp64,
// else in float.
Tensor linspace_kernel(const Scalar& start, const Scalar& end, int64_t steps, ScalarType dtype,
                       Device device) {
  const LinspaceMeta m = linspace_meta(start, end, steps, dtype, resolve(device));
  const Tensor& out = m.out;
  const int d = device_of(out);
  const double s = m.start, e = m.end, step = m.step;
  const int64_t half = m.half;
  const std::string tag = dtype_tag(dtype);
  // float64 always takes the f64 module (whose build raises the TypeError on a device
  // without fp64).
  if (get_device_properties(d).has_fp64 || dtype == kDouble) {
    Kernel& k = get_kernel(d, "linspace", "factory_f64", "linspace_acc64_" + tag);
    launch(stream_of(out), k, steps, out.data_ptr(), steps, s, e, step, half);
  } else {
    Kernel& k = get_kernel(d, "linspace", "factory", "linspace_acc32_" + tag);
    launch(stream_of(out), k, steps, out.data_ptr(), steps, static_cast<float>(s),
           static_cast<float>(e), static_cast<float>(step), half);
  }
  return out;
}

Tensor random_kernel(const char* op, IntArrayRef size, ScalarType dtype, Device device) {
  Tensor out = random_meta(op, size, dtype, resolve(device));
  const int d = device_of(out);
  const PhiloxState st = default_generator(d).next();
  Kernel& k =
      get_kernel(d, op, family_for("factory", {dtype}), std::string(op) + "_" + dtype_tag(dtype));
  launch(stream_of(out), k, out.numel(), out.data_ptr(), out.numel(), st.seed, st.offset);
  return out;
}

Tensor rand_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  return random_kernel("rand", size, dtype, device);
}
Tensor randn_kernel(IntArrayRef size, ScalarType dtype, Device device) {
  return random_kernel("randn", size, dtype, device);
}

Tensor randint_kernel(int64_t low, int64_t high, IntArrayRef size, ScalarType dtype,
                      Device device) {
  Tensor out = randint_meta(low, high, size, dtype, resolve(device));
  const int d = device_of(out);
  const PhiloxState st = default_generator(d).next();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Kernel& k = get_kernel(d, "randint", family_for("factory", {dtype}),
                         std::string("randint_") + dtype_tag(dtype));
  launch(stream_of(out), k, out.numel(), out.data_ptr(), out.numel(), st.seed, st.offset, low,
         range);
  return out;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("empty", empty_kernel);
  m.impl("arange", arange_kernel);
  m.impl("linspace", linspace_kernel);
  m.impl("rand", rand_kernel);
  m.impl("randn", randn_kernel);
  m.impl("randint", randint_kernel);
}

}  // namespace xten::xpu
