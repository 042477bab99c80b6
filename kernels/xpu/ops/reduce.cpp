// XPU reductions: sum, mean, prod, amax/amin, max/min over any set of dims, as two passes of
// reduce.cl over the rows of kernels/common/reduce_rows.h (the same layout as the CPU's).
#include <algorithm>
#include <limits>
#include <type_traits>

#include <xten/core/dtype_dispatch.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include "../../common/op_checks.h"
#include "../../common/reduce_rows.h"
#include "xpu_ops.h"

namespace xten::xpu {
namespace {

// The accumulator type of a dtype, as reduce.cl declares it.
ScalarType acc_dtype(ScalarType t) {
  if (t == kDouble) return kDouble;
  if (is_floating_type(t)) return kFloat;
  return kLong;
}

// Rows of `r` reduced by `op` into a new tensor of r.in's dtype; `divisor` for mean.
Tensor reduce_rows(const char* opname, const char* op, const Rows& r, double divisor) {
  const ScalarType t = r.in.dtype();
  Tensor out = empty(r.out_shape, t, r.in.device());
  if (r.outer == 0) return out;
  const int d = device_of(r.in);
  const std::string family = family_for("reduce", {t});
  const std::string tag = dtype_tag(t);
  // Rows are cut into chunks of about 4096 elements, one work-group each: enough groups to
  // fill any device, and each group's data stays in cache (PoCL runs a group's work-items one
  // after the other; Note [Grid-stride loops] in kernels/xpu/spirv/common.h).
  const int64_t chunks = std::clamp<int64_t>((r.inner + 4095) / 4096, 1, 65536);
  const int64_t chunk = (r.inner + chunks - 1) / chunks;
  Tensor partial = empty({r.outer * chunks}, acc_dtype(t), r.in.device());
  const Stream s = stream_of(r.in);
  Kernel& k1 = get_kernel(d, opname, family, std::string("reduce_") + op + "_" + tag);
  launch_groups(s, k1, static_cast<uint64_t>(r.outer * chunks), partial.data_ptr(), r.in.data_ptr(),
                r.inner, chunk, chunks);
  Kernel& k2 = get_kernel(d, opname, family, std::string("reduce_") + op + "_finish_" + tag);
  // The divisor in the accumulator's type (1 for integer sums, products and extremes).
  visit_dtype<dtype_bit(kFloat) | dtype_bit(kDouble) | dtype_bit(kLong)>(
      opname, acc_dtype(t), [&](auto tag) {
        using A = typename decltype(tag)::type;
        launch(s, k2, r.outer, out.data_ptr(), partial.data_ptr(), r.outer, chunks,
               std::is_integral_v<A> ? A{1} : static_cast<A>(divisor));
      });
  return out;
}

Tensor sum_impl(const char* name, const Tensor& self, IntArrayRef dims, bool keepdim,
                ScalarType out_dtype, bool mean) {
  visit_dtype<dtypes::kAll>(name, out_dtype, [](auto) {});
  const Rows r = make_rows(name, self, dims, out_dtype);
  const double divisor = mean ? static_cast<double>(r.inner) : 1.0;
  if (r.inner == 0) {  // an empty sum is 0; an empty mean is NaN (0 / 0), as on the CPU
    Tensor out = zeros(r.out_shape, out_dtype, self.device());
    if (mean) out.fill_(std::numeric_limits<double>::quiet_NaN());
    return finish(out, self, r, keepdim);
  }
  return finish(reduce_rows(name, "sum", r, divisor), self, r, keepdim);
}

Tensor sum_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                  std::optional<ScalarType> dtype) {
  return sum_impl("sum", self, dims, keepdim, sum_dtype(self, dtype), false);
}

Tensor mean_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const ScalarType out = mean_dtype(self, dtype);
  return sum_impl("mean", self, dims, keepdim, out, true);
}

Tensor prod_kernel(const Tensor& self, IntArrayRef dims, bool keepdim,
                   std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = sum_dtype(self, dtype);
  visit_dtype<dtypes::kAll>("prod", out_dtype, [](auto) {});
  const Rows r = make_rows("prod", self, dims, out_dtype);
  if (r.inner == 0) return finish(ones(r.out_shape, out_dtype, self.device()), self, r, keepdim);
  return finish(reduce_rows("prod", "prod", r, 1.0), self, r, keepdim);
}

Tensor extreme(const char* name, const char* op, const Tensor& self, IntArrayRef dims,
               bool keepdim) {
  const Rows r = make_rows(name, self, dims, self.dtype());
  check_nonempty(name, self, r);
  return finish(reduce_rows(name, op, r, 1.0), self, r, keepdim);
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("sum.dim_IntList", sum_kernel);
  m.impl("mean.dim", mean_kernel);
  m.impl("prod.dim_IntList", prod_kernel);
  m.impl("amax", [](const Tensor& s, IntArrayRef dims, bool keepdim) {
    return extreme("amax", "amax", s, dims, keepdim);
  });
  m.impl("amin", [](const Tensor& s, IntArrayRef dims, bool keepdim) {
    return extreme("amin", "amin", s, dims, keepdim);
  });
  m.impl("max", [](const Tensor& s) { return extreme("max", "amax", s, {}, false); });
  m.impl("min", [](const Tensor& s) { return extreme("min", "amin", s, {}, false); });
}

}  // namespace xten::xpu
