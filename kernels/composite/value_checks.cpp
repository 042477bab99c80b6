// Note [Checks as ops]
// A check of tensor values (index bounds, class targets, probabilities) reads them back to the
// host. Made inside a composite kernel, those reads would be graph breaks of a compiled program,
// and a replay of the graph would skip the check. As an op with a backend kernel of its own
// (`checks::values_in_range`), the check is one node of the graph that every run executes, the
// reads inside its kernel, and it raises on a compiled call as the eager call does
// (docs/compile.md, "Training steps").
#include <xten/kernels/composite/value_checks.h>

#include <fmt/format.h>

#include <xten/autograd/derivative.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

namespace xten {
namespace {

using ValuesInRange = void(const Tensor&, double, double, const std::string&, const std::string&,
                           bool);

void values_in_range_kernel(const Tensor& values, double lo, double hi, const std::string& op,
                            const std::string& message, bool index_error) {
  if (!values.numel()) return;
  const double low = values.amin().item<double>(), high = values.amax().item<double>();
  if (low >= lo && high <= hi) return;
  const double bad = low < lo ? low : high;
  const std::string text = is_floating_type(values.dtype())
                               ? fmt::format(fmt::runtime(message), bad)
                               : fmt::format(fmt::runtime(message), static_cast<int64_t>(bad));
  if (index_error) throw IndexError(detail::error_message(op.c_str(), text));
  throw ValueError(detail::error_message(op.c_str(), text));
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
  m.impl("values_in_range", values_in_range_kernel);
}
LIBRARY_IMPL(checks, XPU, m) {
  m.impl("values_in_range", values_in_range_kernel);
}
LIBRARY_IMPL(checks, Autograd, m) {
  autograd::Derivatives d(m);
  d.nondifferentiable({"values_in_range"});
}

}  // namespace xten
