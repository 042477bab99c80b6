// XPU softmax and log_softmax (and their backward), logsumexp, and the parameterized pointwise
// activations (activation.cl), with the CPU kernels' dtype rules and errors.
#include <limits>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/common/reduce_rows.h>
#include <xten/kernels/xpu/ops/elementwise.h>

namespace xten::xpu {
namespace {

Tensor softmax_impl(const char* op, bool take_log, const Tensor& self, int64_t dim,
                    std::optional<ScalarType> dtype) {
  const ScalarType out_dtype = softmax_dtype(op, self, dtype);
  if (self.dim() == 0) return softmax_impl(op, take_log, self.reshape({1}), 0, dtype).reshape({});
  const int64_t d = wrap_dim(op, dim, self.dim());
  const Tensor rows_in = self.to(out_dtype).transpose(d, -1).contiguous();
  Tensor out = empty(rows_in.sizes(), out_dtype, rows_in.device());
  const int64_t n = rows_in.size(-1);
  const int64_t rows = n ? rows_in.numel() / n : 0;
  if (rows > 0) {
    Kernel& k = get_kernel(device_of(rows_in), op, family_for("activation", {out_dtype}),
                           std::string("softmax_") + dtype_tag(out_dtype));
    launch_groups(stream_of(rows_in), k, static_cast<uint64_t>(rows), out.data_ptr(),
                  rows_in.data_ptr(), n, int32_t{take_log ? 1 : 0});
  }
  return out.transpose(d, -1).contiguous();
}

// Their backward over rows of y and g (activation.cl's softmax_backward).
Tensor softmax_backward_impl(const char* op, bool take_log, const Tensor& grad_output,
                             const Tensor& output, int64_t dim, ScalarType input_dtype) {
  const int64_t d = softmax_backward_meta(op, grad_output, output, dim, input_dtype);
  if (output.dim() == 0)
    return softmax_backward_impl(op, take_log, grad_output.reshape({1}), output.reshape({1}), 0,
                                 input_dtype)
        .reshape({});
  const ScalarType t = promote_types(grad_output.dtype(), output.dtype());
  const Tensor gr = grad_output.to(t).transpose(d, -1).contiguous();
  const Tensor yr = output.to(t).transpose(d, -1).contiguous();
  Tensor out = empty(yr.sizes(), t, yr.device());
  const int64_t n = yr.size(-1);
  const int64_t rows = n ? yr.numel() / n : 0;
  if (rows > 0) {
    Kernel& k = get_kernel(device_of(yr), op, family_for("activation", {t}),
                           std::string("softmax_backward_") + dtype_tag(t));
    launch_groups(stream_of(yr), k, static_cast<uint64_t>(rows), out.data_ptr(), gr.data_ptr(),
                  yr.data_ptr(), n, int32_t{take_log ? 1 : 0});
  }
  return out.transpose(d, -1).to(input_dtype).contiguous();
}

// logsumexp over the rows kernels/common/reduce_rows.h lays out (activation.cl's logsumexp):
// a work-group per row.
Tensor logsumexp_kernel(const Tensor& self, IntArrayRef dims, bool keepdim) {
  constexpr const char* op = "logsumexp";
  const ScalarType t = is_floating_type(self.dtype()) ? self.dtype() : kFloat;
  visit_dtype<dtypes::kFloating>(op, t, [](auto) {});
  const Rows r = make_rows(op, self, dims, t);
  Tensor out = empty({r.outer}, t, self.device());
  if (r.inner == 0) {  // log of an empty sum
    out.fill_(-std::numeric_limits<double>::infinity());
  } else if (r.outer > 0) {
    Kernel& k = get_kernel(device_of(out), op, family_for("activation", {t}),
                           std::string("logsumexp_") + dtype_tag(t));
    launch_groups(stream_of(out), k, static_cast<uint64_t>(r.outer), out.data_ptr(),
                  r.in.data_ptr(), r.inner);
  }
  return finish(out.view(r.out_shape), self, r, keepdim);
}

// A pointwise activation over floating inputs with parameters p0..p2 (opmath values).
Tensor activation(const char* op, const Tensor& self, const Scalar& p0 = 0, const Scalar& p1 = 0,
                  const Scalar& p2 = 0) {
  Elementwise e(op, Tensor(), {self});
  return visit_dtype<dtypes::kFloating>(op, e.compute(), [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    return e.run(op, "activation", p0.to<M>(), p1.to<M>(), p2.to<M>());
  });
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("leaky_relu",
         [](const Tensor& s, const Scalar& slope) { return activation("leaky_relu", s, slope); });
  m.impl("elu",
         [](const Tensor& s, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
           return activation("elu", s, alpha, scale, input_scale);
         });
  m.impl("softplus", [](const Tensor& s, const Scalar& beta, const Scalar& threshold) {
    check_softplus_beta(beta);
    return activation("softplus", s, beta, threshold);
  });
  m.impl("hardswish", [](const Tensor& s) { return activation("hardswish", s); });
  m.impl("logsumexp", logsumexp_kernel);
  m.impl("softmax", [](const Tensor& s, int64_t dim, std::optional<ScalarType> dtype) {
    return softmax_impl("softmax", false, s, dim, dtype);
  });
  m.impl("log_softmax", [](const Tensor& s, int64_t dim, std::optional<ScalarType> dtype) {
    return softmax_impl("log_softmax", true, s, dim, dtype);
  });
  m.impl("_softmax_backward_data",
         [](const Tensor& g, const Tensor& y, int64_t dim, ScalarType input_dtype) {
           return softmax_backward_impl("_softmax_backward_data", false, g, y, dim, input_dtype);
         });
  m.impl("_log_softmax_backward_data",
         [](const Tensor& g, const Tensor& y, int64_t dim, ScalarType input_dtype) {
           return softmax_backward_impl("_log_softmax_backward_data", true, g, y, dim, input_dtype);
         });
}

}  // namespace xten::xpu
