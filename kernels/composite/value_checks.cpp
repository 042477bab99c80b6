// Note [Checks as ops]
// A check of tensor values (index bounds, class targets, probabilities) reads them back to the
// host. Made inside a composite kernel, those reads would be graph breaks of a compiled program,
// and a replay of the graph would skip the check. As an op with a backend kernel of its own
// (`checks::values_in_range`), the check is one node of the graph that every run executes, the
// reads inside its kernel, and it raises on a compiled call as the eager call does
// (docs/compile.md, "Training steps").
#include <xten/kernels/composite/value_checks.h>

#include <algorithm>

#include <fmt/format.h>

#include <xten/autograd/derivative.h>
#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

using ValuesInRange = void(const Tensor&, double, double, const std::string&, const std::string&,
                           bool);

// Raises unless [low, high], the values' least and greatest, lies within [lo, hi].
void check_bounds(double low, double high, const Tensor& values, double lo, double hi,
                  const std::string& op, const std::string& message, bool index_error) {
  if (low >= lo && high <= hi) return;
  const double bad = low < lo ? low : high;
  const std::string text = is_floating_type(values.dtype())
                               ? fmt::format(fmt::runtime(message), bad)
                               : fmt::format(fmt::runtime(message), static_cast<int64_t>(bad));
  if (index_error) throw IndexError(detail::error_message(op.c_str(), text));
  throw ValueError(detail::error_message(op.c_str(), text));
}

void values_in_range_kernel(const Tensor& values, double lo, double hi, const std::string& op,
                            const std::string& message, bool index_error) {
  if (!values.numel()) return;
  check_bounds(values.amin().item<double>(), values.amax().item<double>(), values, lo, hi, op,
               message, index_error);
}

// On CPU, integer values (indices, class targets) of up to kSerialValues elements are read in
// one loop on the calling thread: amin and amax were two parallel reductions, each starting the
// thread team, about 10% of embedding's time for 8,192 indices at 16 threads on the host.
constexpr int64_t kSerialValues = int64_t{1} << 16;
void values_in_range_cpu(const Tensor& values, double lo, double hi, const std::string& op,
                         const std::string& message, bool index_error) {
  if (values.numel() > kSerialValues || !is_integral_type(values.dtype(), false))
    return values_in_range_kernel(values, lo, hi, op, message, index_error);
  if (!values.numel()) return;
  const Tensor v = values.contiguous();
  visit_dtype<dtypes::kIntegral>("values_in_range", v.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(v.data_ptr());
    const auto [low, high] = std::minmax_element(p, p + v.numel());
    check_bounds(static_cast<double>(*low), static_cast<double>(*high), values, lo, hi, op, message,
                 index_error);
  });
}

}  // namespace

void check_values_in_range(const Tensor& values, double lo, double hi, const char* op,
                           const std::string& message, bool index_error) {
  static const auto check =
      Dispatcher::singleton().find("checks::values_in_range").typed<ValuesInRange>();
  check.call(values, lo, hi, op, message, index_error);
}

LIBRARY(checks, m) {
  m.def<ValuesInRange>(
      "values_in_range(Tensor values, float lo, float hi, str op, str message, bool index_error) "
      "-> ()");
}
LIBRARY_IMPL(checks, CPU, m) {
  m.impl("values_in_range", values_in_range_cpu);
}
LIBRARY_IMPL(checks, XPU, m) {
  m.impl("values_in_range", values_in_range_kernel);
}
LIBRARY_IMPL(checks, Autograd, m) {
  autograd::Derivatives d(m);
  d.nondifferentiable({"values_in_range"});
}

}  // namespace xten
