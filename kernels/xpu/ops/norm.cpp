// XPU layer_norm and group_norm forward, batch_norm_backward and layer_norm_backward (norm.cl),
// with the CPU kernels' checks and
// results (kernels/cpu/norm.cpp): the input and its gradient in the input's dtype, the weight and
// running statistics, and the weight and bias gradients, in opmath (float, or double for
// float64).
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

#include <xten/kernels/common/op_checks.h>
#include <xten/kernels/xpu/ops/xpu_ops.h>

namespace xten::xpu {
namespace {

// Rows of at most this many elements take a work-item each (Note [Short rows] in norm.cl).
constexpr int64_t kShortRow = 128;

// A contiguous opmath copy of an optional per-statistic tensor; absent, a 1-element stand-in
// (kernels take a valid pointer and a flag).
Tensor opmath_or_dummy(const std::optional<Tensor>& t, ScalarType m, const Tensor& input) {
  return t && t->defined() ? t->to(m).contiguous() : empty({1}, m, input.device());
}

TensorTriple batch_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        const std::optional<Tensor>& weight,
                                        const std::optional<Tensor>& running_mean,
                                        const std::optional<Tensor>& running_var, bool training,
                                        double eps) {
  const char* op = "batch_norm_backward";
  const NormMeta m =
      batch_norm_backward_meta(grad_output, input, weight, running_mean, running_var, training);
  const ScalarType t = input.dtype(), mt = t == kDouble ? kDouble : kFloat;
  // A channels-last batch is [n*h*w, c] rows: the kernel's (outer, channels, inner) with inner
  // 1, read and written as it lies.
  const MemoryFormat layout = input.suggest_memory_format();
  const bool cl = layout == MemoryFormat::ChannelsLast;
  const Tensor x = input.contiguous(layout), g = grad_output.to(t).contiguous(layout);
  const int64_t outer = cl ? m.outer * m.inner : m.outer, inner = cl ? 1 : m.inner;
  const Tensor w = opmath_or_dummy(weight, mt, x);
  const Tensor rm = opmath_or_dummy(training ? std::nullopt : running_mean, mt, x);
  const Tensor rv = opmath_or_dummy(training ? std::nullopt : running_var, mt, x);
  Tensor dx = empty_tensor(x.sizes(), x.strides(), t, x.device());
  Tensor dw = empty({m.channels}, mt, x.device()), db = empty({m.channels}, mt, x.device());
  if (m.channels > 0) {
    Kernel& k = get_kernel(device_of(x), op, family_for("norm", {t}),
                           std::string("batch_norm_backward_") + dtype_tag(t));
    const int32_t tr = training ? 1 : 0, has_w = weight && weight->defined() ? 1 : 0;
    if (mt == kDouble) {
      launch_groups(stream_of(x), k, static_cast<uint64_t>(m.channels), dx.data_ptr(),
                    dw.data_ptr(), db.data_ptr(), g.data_ptr(), x.data_ptr(), w.data_ptr(),
                    rm.data_ptr(), rv.data_ptr(), outer, m.channels, inner, tr, has_w, eps);
    } else {
      launch_groups(stream_of(x), k, static_cast<uint64_t>(m.channels), dx.data_ptr(),
                    dw.data_ptr(), db.data_ptr(), g.data_ptr(), x.data_ptr(), w.data_ptr(),
                    rm.data_ptr(), rv.data_ptr(), outer, m.channels, inner, tr, has_w,
                    static_cast<float>(eps));
    }
  }
  return norm_backward_results(input, weight, dx, dw, db);
}

TensorTriple layer_norm_backward_kernel(const Tensor& grad_output, const Tensor& input,
                                        IntArrayRef normalized_shape,
                                        const std::optional<Tensor>& weight, double eps) {
  const char* op = "layer_norm_backward";
  const NormMeta m = layer_norm_backward_meta(grad_output, input, normalized_shape, weight);
  const ScalarType t = input.dtype(), mt = t == kDouble ? kDouble : kFloat;
  const Tensor x = input.contiguous(), g = grad_output.to(t).contiguous();
  const Tensor w = opmath_or_dummy(weight, mt, x);
  Tensor dx = empty(x.sizes(), t, x.device());
  Tensor dw = empty(normalized_shape, mt, x.device()), db = empty(normalized_shape, mt, x.device());
  if (m.inner > 0 && m.outer > 0) {
    Tensor mean = empty({m.outer}, mt, x.device()), rstd = empty({m.outer}, mt, x.device());
    const std::string family = family_for("norm", {t});
    const bool short_rows = m.inner <= kShortRow;  // Note [Short rows] (norm.cl)
    Kernel& rows =
        get_kernel(device_of(x), op, family,
                   std::string(short_rows ? "layer_norm_backward_rows_" : "layer_norm_backward_") +
                       dtype_tag(t));
    Kernel& cols = get_kernel(device_of(x), op, family,
                              std::string("layer_norm_backward_affine_") + dtype_tag(t));
    Kernel& finish = get_kernel(device_of(x), op, family,
                                std::string("layer_norm_backward_affine_finish_") + dtype_tag(t));
    // Parts of 64 rows (norm.cl's LAYER_NORM_BACKWARD_AFFINE).
    const int64_t per = 64, parts = (m.outer + per - 1) / per;
    Tensor pw = empty({parts * m.inner}, mt, x.device()),
           pb = empty({parts * m.inner}, mt, x.device());
    const int32_t has_w = weight && weight->defined() ? 1 : 0;
    auto run = [&](auto eps_m) {
      if (short_rows)
        launch(stream_of(x), rows, m.outer, dx.data_ptr(), mean.data_ptr(), rstd.data_ptr(),
               g.data_ptr(), x.data_ptr(), w.data_ptr(), m.inner, has_w, eps_m, m.outer);
      else
        launch_groups(stream_of(x), rows, static_cast<uint64_t>(m.outer), dx.data_ptr(),
                      mean.data_ptr(), rstd.data_ptr(), g.data_ptr(), x.data_ptr(), w.data_ptr(),
                      m.inner, has_w, eps_m);
      launch(stream_of(x), cols, pw.numel(), pw.data_ptr(), pb.data_ptr(), g.data_ptr(),
             x.data_ptr(), mean.data_ptr(), rstd.data_ptr(), m.outer, m.inner, per, pw.numel());
      launch(stream_of(x), finish, m.inner, dw.data_ptr(), db.data_ptr(), pw.data_ptr(),
             pb.data_ptr(), m.inner, parts);
    };
    if (mt == kDouble) {
      run(eps);
    } else {
      run(static_cast<float>(eps));
    }
  } else {
    dw.zero_();
    db.zero_();
  }
  return norm_backward_results(input, weight, dx, dw, db);
}

// The forward kernels: one work-group per row (layer_norm's normalized slice, group_norm's
// (sample, group) block), as the CPU's normalize_rows.
Tensor layer_norm_kernel(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                         double eps) {
  const NormMeta m = layer_norm_meta(input, normalized_shape, weight, bias);
  const ScalarType t = input.dtype(), mt = t == kDouble ? kDouble : kFloat;
  const Tensor x = input.contiguous();
  Tensor y = empty(input.sizes(), t, input.device());
  if (m.outer == 0 || m.inner == 0) return y;
  const Tensor w = opmath_or_dummy(weight, mt, x), b = opmath_or_dummy(bias, mt, x);
  const bool short_rows = m.inner <= kShortRow;  // Note [Short rows] (norm.cl)
  Kernel& k =
      get_kernel(device_of(x), "layer_norm", family_for("norm", {t}),
                 std::string(short_rows ? "layer_norm_rows_" : "layer_norm_") + dtype_tag(t));
  const int32_t has_w = weight && weight->defined() ? 1 : 0, has_b = bias && bias->defined();
  auto run = [&](auto eps_m) {
    if (short_rows)
      launch(stream_of(x), k, m.outer, y.data_ptr(), x.data_ptr(), w.data_ptr(), b.data_ptr(),
             m.inner, has_w, has_b, eps_m, m.outer);
    else
      launch_groups(stream_of(x), k, static_cast<uint64_t>(m.outer), y.data_ptr(), x.data_ptr(),
                    w.data_ptr(), b.data_ptr(), m.inner, has_w, has_b, eps_m);
  };
  if (mt == kDouble)
    run(eps);
  else
    run(static_cast<float>(eps));
  return y;
}

Tensor group_norm_kernel(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias, double eps) {
  const NormMeta m = group_norm_meta(input, groups, weight, bias);
  const ScalarType t = input.dtype(), mt = t == kDouble ? kDouble : kFloat;
  // A channels-last batch is read and written as it lies (GROUP_AT in norm.cl).
  const MemoryFormat layout = input.suggest_memory_format();
  const Tensor x = input.contiguous(layout);
  Tensor y = empty_tensor(x.sizes(), x.strides(), t, input.device());
  if (m.outer * m.channels == 0 || m.inner == 0) return y;
  const int64_t spatial = m.inner / (input.size(1) / groups);
  const Tensor w = opmath_or_dummy(weight, mt, x), b = opmath_or_dummy(bias, mt, x);
  Kernel& k = get_kernel(device_of(x), "group_norm", family_for("norm", {t}),
                         std::string("group_norm_") + dtype_tag(t));
  const int32_t has_w = weight && weight->defined() ? 1 : 0, has_b = bias && bias->defined();
  auto run = [&](auto eps_m) {
    launch_groups(stream_of(x), k, static_cast<uint64_t>(m.outer * groups), y.data_ptr(),
                  x.data_ptr(), w.data_ptr(), b.data_ptr(), m.inner, groups, spatial, has_w, has_b,
                  eps_m, static_cast<int32_t>(layout == MemoryFormat::ChannelsLast));
  };
  if (mt == kDouble)
    run(eps);
  else
    run(static_cast<float>(eps));
  return y;
}

// batch_norm's training statistics: one work-group per channel (batch_norm_stats_<t>), reading a
// channels-last batch as it lies.
TensorPair batch_norm_stats_kernel(const Tensor& input) {
  const ScalarType t = input.dtype(), mt = t == kDouble ? kDouble : kFloat;
  const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  const Tensor x = input.contiguous(input.suggest_memory_format());
  const int64_t c = x.size(1), n = x.size(0), inner = x.numel() / std::max<int64_t>(1, n * c);
  Tensor mean = empty({c}, mt, x.device()), var = empty({c}, mt, x.device());
  Kernel& k = get_kernel(device_of(x), "batch_norm_stats", family_for("norm", {t}),
                         std::string("batch_norm_stats_") + dtype_tag(t));
  launch_groups(stream_of(x), k, static_cast<uint64_t>(c), mean.data_ptr(), var.data_ptr(),
                x.data_ptr(), n, c, inner, static_cast<int32_t>(cl));
  return {mean, var};
}

// batch_norm: the statistics and per-channel scale and shift as every backend forms them
// (batch_norm_scale_shift), then one pointwise kernel in the input's layout. The composite's
// broadcast addcmul walked the strided geometry (49-193x the CPU in the XPU sweep).
Tensor batch_norm_kernel(const Tensor& input, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias,
                         const std::optional<Tensor>& running_mean,
                         const std::optional<Tensor>& running_var, bool training, double momentum,
                         double eps) {
  const auto [scale, shift] = batch_norm_scale_shift(input, weight, bias, running_mean, running_var,
                                                     training, momentum, eps);
  const ScalarType t = input.dtype();
  const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  const Tensor x = input.contiguous(input.suggest_memory_format());
  Tensor y = empty_tensor(x.sizes(), x.strides(), t, x.device());
  const int64_t c = x.size(1), n = x.size(0);
  const int64_t inner = cl ? 1 : x.numel() / std::max<int64_t>(1, n * c);
  const Tensor sc = scale.contiguous(), sh = shift.contiguous();
  Kernel& k = get_kernel(device_of(x), "batch_norm", family_for("norm", {t}),
                         std::string("batch_norm_apply_") + dtype_tag(t));
  launch(stream_of(x), k, x.numel(), y.data_ptr(), x.data_ptr(), sc.data_ptr(), sh.data_ptr(), c,
         inner, x.numel());
  return y;
}

}  // namespace

LIBRARY_IMPL(xten, XPU, m) {
  m.impl("batch_norm", batch_norm_kernel);
  m.impl("norms::batch_norm_stats", batch_norm_stats_kernel);
  m.impl("layer_norm", layer_norm_kernel);
  m.impl("group_norm", group_norm_kernel);
  m.impl("batch_norm_backward", batch_norm_backward_kernel);
  m.impl("layer_norm_backward", layer_norm_backward_kernel);
}

}  // namespace xten::xpu
