// XPU reductions over the rows of kernels/common/reduce_rows.h (the same layout as the
// CPU's): sum, mean, prod, amax/amin, max/min as two passes of reduce.cl; max.dim/min.dim/
// argmax/argmin as a work-group per row (per chunk and a second pass for long rows); all/any
// through amin/amax of x != 0; var/std and norm composed of these; cumsum/cumprod as a blocked scan
// per row.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/common/reduce_rows.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

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
  // after the other; Note [One work-item per element] in kernels/xpu/spirv/common.h).
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

// The sums of the columns of contiguous `self` seen as [rows, numel / rows] (reduce.cl's
// reduce_sum_cols), divided by `divisor`: the kept dims' values.
Tensor column_sums(const char* name, const Tensor& self, int64_t rows, double divisor) {
  const ScalarType t = self.dtype();
  const int64_t cols = self.numel() / rows;
  // Parts of 64 rows: enough work-items for any device, each a short strided walk.
  const int64_t per = 64, parts = (rows + per - 1) / per;
  Tensor partial = empty({parts * cols}, acc_dtype(t), self.device());
  Tensor out = empty({cols}, t, self.device());
  const int d = device_of(self);
  const std::string family = family_for("reduce", {t}), tag = dtype_tag(t);
  const Stream s = stream_of(self);
  launch(s, get_kernel(d, name, family, "reduce_sum_cols_" + tag), partial.numel(),
         partial.data_ptr(), self.data_ptr(), rows, cols, per, partial.numel());
  Kernel& k2 = get_kernel(d, name, family, "reduce_sum_cols_finish_" + tag);
  if (t == kDouble)
    launch(s, k2, cols, out.data_ptr(), partial.data_ptr(), cols, parts, divisor);
  else
    launch(s, k2, cols, out.data_ptr(), partial.data_ptr(), cols, parts,
           static_cast<float>(divisor));
  return out;
}

Tensor sum_impl(const char* name, const Tensor& self, IntArrayRef dims, bool keepdim,
                ScalarType out_dtype, bool mean) {
  visit_dtype<dtypes::kAll>(name, out_dtype, [](auto) {});
  // Note [Reduction layout]: a permuted dense input as it lies in memory, and reduced dims
  // that lead it as column sums, as on the CPU.
  if (std::optional<Tensor> r = reduce_in_memory_order(
          name, self, dims, keepdim, [&](const Tensor& view, IntArrayRef mdims) {
            return sum_impl(name, view, mdims, true, out_dtype, mean);
          }))
    return *r;
  if (const int64_t k = leading_dims_reduction(name, self, dims, out_dtype)) {
    int64_t rows = 1;
    for (int64_t d = 0; d < k; ++d) rows *= self.size(d);
    DimVector kept(self.sizes()), out_shape;
    for (int64_t d = 0; d < k; ++d) kept[d] = 1;
    for (int64_t d = k; d < self.dim(); ++d) out_shape.push_back(self.size(d));
    const Tensor out =
        column_sums(name, self, rows, mean ? static_cast<double>(rows) : 1.0).view(out_shape);
    return keepdim ? out.view(kept) : out;
  }
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

// Values and indices of the extreme of each row (reduce.cl's <op>_index kernels): a work-group
// per row, or for long rows a work-group per chunk of kArgChunk and a second pass over the
// chunks' (value, index) partials.
constexpr int64_t kArgChunk = 16 * kGroupSize;

void launch_extreme(const char* name, const char* op, const Tensor& values, const Tensor& indices,
                    const Tensor& in, const Tensor* in_idx, int64_t rows, int64_t inner,
                    int64_t chunk) {
  const int64_t chunks = (inner + chunk - 1) / chunk;
  Kernel& k = get_kernel(device_of(in), name, family_for("reduce", {in.dtype()}),
                         std::string(op) + "_index_" + dtype_tag(in.dtype()));
  launch_groups(stream_of(in), k, static_cast<uint64_t>(rows * chunks), values.data_ptr(),
                indices.data_ptr(), in.data_ptr(), (in_idx ? *in_idx : indices).data_ptr(),
                static_cast<int32_t>(in_idx ? 1 : 0), inner, chunk, chunks);
}

std::tuple<Tensor, Tensor, Rows> extremes(const char* name, const char* op, const Tensor& self,
                                          IntArrayRef dims) {
  Rows r = make_rows(name, self, dims, self.dtype());
  check_nonempty(name, self, r);
  Tensor values = empty(r.out_shape, self.dtype(), self.device());
  Tensor indices = empty(r.out_shape, kLong, self.device());
  if (r.outer > 0 && r.inner <= kArgChunk) {
    launch_extreme(name, op, values, indices, r.in, nullptr, r.outer, r.inner, r.inner);
  } else if (r.outer > 0) {
    const int64_t chunks = (r.inner + kArgChunk - 1) / kArgChunk;
    const Tensor pv = empty({r.outer * chunks}, self.dtype(), self.device());
    const Tensor pi = empty({r.outer * chunks}, kLong, self.device());
    launch_extreme(name, op, pv, pi, r.in, nullptr, r.outer, r.inner, kArgChunk);
    launch_extreme(name, op, values, indices, pv, &pi, r.outer, chunks, chunks);
  }
  return {values, indices, std::move(r)};
}

std::tuple<Tensor, Tensor> max_dim(const char* name, const char* op, const Tensor& self,
                                   int64_t dim, bool keepdim) {
  auto [values, indices, r] = extremes(name, op, self, {dim});
  return {finish(values, self, r, keepdim), finish(indices, self, r, keepdim)};
}

Tensor argmax(const char* name, const char* op, const Tensor& self, std::optional<int64_t> dim,
              bool keepdim) {
  if (!dim) {  // over the flattened tensor
    auto [values, indices, r] = extremes(name, op, self.reshape({-1}), {});
    if (!keepdim) return indices;
    return indices.view(DimVector(static_cast<size_t>(self.dim()), 1));
  }
  auto [values, indices, r] = extremes(name, op, self, {*dim});
  return finish(indices, self, r, keepdim);
}

// all: every x != 0 (the minimum of the bools); any: some (the maximum). Empty rows: all is
// true, any false.
Tensor all_any(const char* name, const Tensor& self, IntArrayRef dims, bool keepdim, bool all) {
  const Rows r = make_rows(name, ne(self, 0), dims, kBool);
  if (r.inner == 0)
    return finish(full(r.out_shape, all, TensorOptions().dtype(kBool).device(self.device())), self,
                  r, keepdim);
  return finish(reduce_rows(name, all ? "amin" : "amax", r, 1.0), self, r, keepdim);
}

// var/std: the mean, then the mean-free sum of squares (two passes, as on the CPU), in float
// (double for float64: a device without fp64 never needs it).
Tensor var_std(const char* name, const Tensor& self, IntArrayRef dims, double correction,
               bool keepdim, bool take_sqrt) {
  check_var_dtype(name, self);
  const ScalarType acc = self.dtype() == kDouble ? kDouble : kFloat;
  const Rows r = make_rows(name, self, dims, acc);
  const Tensor x = r.in.view({r.outer, r.inner});
  const Tensor d = x - x.sum({1}, true) / static_cast<double>(std::max<int64_t>(r.inner, 1));
  Tensor v = (d * d).sum({1}) / std::max(0.0, static_cast<double>(r.inner) - correction);
  if (take_sqrt) v = sqrt(v);
  return finish(v.view(r.out_shape).to(self.dtype()), self, r, keepdim);
}

// The p-norm of each row, in opmath, as the CPU computes it.
Tensor norm_impl(const Tensor& self, const Scalar& p_scalar, IntArrayRef dims, bool keepdim) {
  check_norm_dtype(self);
  const double p = p_scalar.to<double>();
  const ScalarType acc = self.dtype() == kDouble ? kDouble : kFloat;
  const Rows r = make_rows("norm", self, dims, acc);
  Tensor v;
  if (r.inner == 0) {  // the CPU's empty partial (+inf for p = -inf, else 0), then its root
    v = full(r.out_shape, std::isinf(p) && p < 0 ? INFINITY : 0.0,
             TensorOptions().dtype(acc).device(self.device()));
    if (!std::isinf(p) && p != 0 && p != 1 && p != 2) v = pow(v, 1.0 / p);
  } else {
    // The magnitudes, for the norms other than 1 and 2 (reduce.cl's one-pass sums of
    // magnitudes and squares take the input itself).
    auto magnitudes = [&] { return abs(r.in.view({r.outer, r.inner})); };
    if (std::isinf(p))
      v = p > 0 ? amax(magnitudes(), {1}) : amin(magnitudes(), {1});
    else if (p == 0)
      v = ne(r.in.view({r.outer, r.inner}), 0).sum({1}, false, acc);
    else if (p == 1)
      v = reduce_rows("norm", "asum", r, 1.0).view({r.outer});
    else if (p == 2)
      v = sqrt(reduce_rows("norm", "sumsq", r, 1.0).view({r.outer}));
    else
      v = pow(pow(magnitudes(), p).sum({1}), 1.0 / p);
    v = v.view(r.out_shape);
  }
  return finish(v.to(self.dtype()), self, r, keepdim);
}

// cumsum/cumprod along dim: the dim moved last and made contiguous, one scan per row.
Tensor scan(const char* name, const char* op, const Tensor& self, int64_t dim,
            std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = sum_dtype(self, dtype);
  if (self.dim() == 0) return self.to(out_dtype, /*copy=*/true);
  const int64_t d = wrap_dim(name, dim, self.dim());
  visit_dtype<dtypes::kAllButBool>(name, out_dtype, [](auto) {});
  const Tensor moved = self.to(out_dtype).transpose(d, -1).contiguous();
  Tensor out = empty(moved.sizes(), out_dtype, self.device());
  const int64_t n = moved.size(-1), rows = n ? moved.numel() / n : 0;
  if (rows > 0) {
    Kernel& k = get_kernel(device_of(moved), name, family_for("reduce", {out_dtype}),
                           std::string("scan_") + op + "_" + dtype_tag(out_dtype));
    launch_groups(stream_of(moved), k, static_cast<uint64_t>(rows), out.data_ptr(),
                  moved.data_ptr(), n);
  }
  return out.transpose(d, -1).contiguous();
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("max.dim", [](const Tensor& s, int64_t dim, bool keepdim) {
    return max_dim("max", "max", s, dim, keepdim);
  });
  m.impl("min.dim", [](const Tensor& s, int64_t dim, bool keepdim) {
    return max_dim("min", "min", s, dim, keepdim);
  });
  m.impl("argmax", [](const Tensor& s, std::optional<int64_t> dim, bool keepdim) {
    return argmax("argmax", "max", s, dim, keepdim);
  });
  m.impl("argmin", [](const Tensor& s, std::optional<int64_t> dim, bool keepdim) {
    return argmax("argmin", "min", s, dim, keepdim);
  });
  m.impl("all.dims", [](const Tensor& s, IntArrayRef dims, bool keepdim) {
    return all_any("all", s, dims, keepdim, true);
  });
  m.impl("any.dims", [](const Tensor& s, IntArrayRef dims, bool keepdim) {
    return all_any("any", s, dims, keepdim, false);
  });
  m.impl("var.correction", [](const Tensor& s, IntArrayRef dims, double correction, bool keepdim) {
    return var_std("var", s, dims, correction, keepdim, false);
  });
  m.impl("std.correction", [](const Tensor& s, IntArrayRef dims, double correction, bool keepdim) {
    return var_std("std", s, dims, correction, keepdim, true);
  });
  m.impl("norm.ScalarOpt_dim", norm_impl);
  m.impl("cumsum", [](const Tensor& s, int64_t dim, std::optional<ScalarType> dtype) {
    return scan("cumsum", "sum", s, dim, dtype);
  });
  m.impl("cumprod", [](const Tensor& s, int64_t dim, std::optional<ScalarType> dtype) {
    return scan("cumprod", "prod", s, dim, dtype);
  });
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
