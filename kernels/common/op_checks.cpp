#include <xten/kernels/common/op_checks.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/meta.h>
#include <xten/core/parallel.h>
#include <xten/dispatch/ops.h>
#include <xten/kernels/common/window.h>

namespace xten {

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b, const char* an,
                      const char* bn) {
  XTEN_CHECK(a.dtype() == b.dtype(), TypeError, op,
             "expected {} and {} to have the same dtype, but got {} and {}", an, bn,
             to_string(a.dtype()), to_string(b.dtype()));
}

void check_nll_loss(const char* op, const Tensor& input, const Tensor& target,
                    const std::optional<Tensor>& weight, const std::string& reduction) {
  XTEN_CHECK(input.dim() >= 1, ValueError, op,
             "expected an input of at least 1 dim, but got a zero-dim tensor");
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, op,
             "not implemented for dtype {} (the input holds log-probabilities)",
             to_string(input.dtype()));
  XTEN_CHECK(target.dtype() == kLong, TypeError, op,
             "expected a target of class indices of dtype Long, but got {}",
             to_string(target.dtype()));
  DimVector want(input.sizes());
  if (input.dim() >= 2)
    want.erase(1);
  else
    want = DimVector();
  XTEN_CHECK(target.sizes() == IntArrayRef(want), ValueError, op,
             "target shape {} does not fit input shape {} (expected {})", target.sizes(),
             input.sizes(), want);
  const int64_t classes = input.size(input.dim() == 1 ? 0 : 1);
  if (weight && weight->defined())
    XTEN_CHECK(weight->dim() == 1 && weight->size(0) == classes, ValueError, op,
               "weight must have shape ({}), but got {}", classes, weight->sizes());
  check_loss_reduction(op, reduction);
  if (weight && weight->defined())
    check_same_device(op, {&input, &target, &*weight});
  else
    check_same_device(op, {&input, &target});
}

void check_nll_loss_grad(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                         const std::string& reduction) {
  const IntArrayRef want = reduction == "none" ? target.sizes() : IntArrayRef();
  XTEN_CHECK(grad_output.sizes() == want, ValueError, "nll_loss_backward",
             "grad_output must have shape {} for reduction '{}', but got {}", want, reduction,
             grad_output.sizes());
  XTEN_CHECK(is_floating_type(grad_output.dtype()), TypeError, "nll_loss_backward",
             "grad_output must be floating, but got {}", to_string(grad_output.dtype()));
  check_same_device("nll_loss_backward", {&grad_output, &input});
}

void check_pointwise_backward(const char* op, const Tensor& grad, const Tensor& other,
                              const char* other_name) {
  XTEN_CHECK(grad.sizes() == other.sizes(), ValueError, op,
             "grad_output and {} must have one shape, but got {} and {}", other_name, grad.sizes(),
             other.sizes());
  check_same_dtype(op, grad, other, "grad_output", other_name);
  check_same_device(op, {&grad, &other});
  XTEN_CHECK(is_floating_type(grad.dtype()), NotImplementedError, op,
             "not implemented for dtype {}", to_string(grad.dtype()));
}

void check_leaky_relu_backward(const Tensor& grad, const Tensor& self, const Scalar& slope,
                               bool self_is_result) {
  check_pointwise_backward("leaky_relu_backward", grad, self);
  XTEN_CHECK(!self_is_result || slope.to<double>() >= 0, ValueError, "leaky_relu_backward",
             "the derivative from the result needs a nonnegative slope, but got {}",
             slope.to<double>());
}

void check_floating_loss(const char* op, const Tensor& input, const Tensor& target) {
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, op,
             "not implemented for input dtype {}", to_string(input.dtype()));
  XTEN_CHECK(is_floating_type(target.dtype()), TypeError, op,
             "expected a floating target, but got {}", to_string(target.dtype()));
}

void check_loss_reduction(const char* op, const std::string& reduction) {
  XTEN_CHECK(reduction == "none" || reduction == "mean" || reduction == "sum", ValueError, op,
             "reduction must be 'none', 'mean' or 'sum', but got '{}'", reduction);
}

double mse_loss_backward_norm(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const std::string& reduction) {
  constexpr const char* op = "mse_loss_backward";
  check_floating_loss(op, self, target);
  XTEN_CHECK(is_floating_type(grad_output.dtype()), TypeError, op,
             "expected a floating grad_output, but got {}", to_string(grad_output.dtype()));
  check_same_device(op, {&grad_output, &self, &target});
  check_loss_reduction(op, reduction);
  const DimVector both = broadcast_shapes(op, self.sizes(), target.sizes());
  (void)broadcast_shapes(op, both, grad_output.sizes());
  if (reduction != "mean") return 2.0;
  int64_t n = 1;
  for (int64_t s : both) n *= s;
  return 2.0 / static_cast<double>(n);  // n = 0: no element reads it
}

void check_threshold_backward(const Tensor& grad, const Tensor& self) {
  check_pointwise_backward("threshold_backward", grad, self);
}

void check_mm(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 2 && b.dim() == 2, ValueError, "mm",
             "expected 2-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  XTEN_CHECK(a.size(1) == b.size(0), ValueError, "mm",
             "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", a.size(0), a.size(1),
             b.size(0), b.size(1));
  check_same_dtype("mm", a, b, "mat1", "mat2");
  check_same_device("mm", {&a, &b});
  XTEN_CHECK(a.dtype() != kBool, NotImplementedError, "mm", "not implemented for dtype Bool");
}

void check_bmm(const Tensor& a, const Tensor& b) {
  XTEN_CHECK(a.dim() == 3 && b.dim() == 3, ValueError, "bmm",
             "expected 3-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  XTEN_CHECK(a.size(0) == b.size(0), ValueError, "bmm", "batch sizes differ: {} and {}", a.size(0),
             b.size(0));
  XTEN_CHECK(a.size(2) == b.size(1), ValueError, "bmm",
             "batch1 and batch2 shapes cannot be multiplied ({}x{}x{} and {}x{}x{})", a.size(0),
             a.size(1), a.size(2), b.size(0), b.size(1), b.size(2));
  check_same_dtype("bmm", a, b, "batch1", "batch2");
  check_same_device("bmm", {&a, &b});
  XTEN_CHECK(a.dtype() != kBool, NotImplementedError, "bmm", "not implemented for dtype Bool");
}

void check_add_sub(const char* name, ScalarType t, const Scalar& alpha, bool negate) {
  XTEN_CHECK(!(negate && t == kBool), TypeError, name,
             "subtraction of bool tensors is not supported; use logical_xor() or bitwise_xor()");
  XTEN_CHECK(is_floating_type(t) || alpha.is_integral(true), TypeError, name,
             "for integral input tensors, alpha must not be a floating point number (got {})",
             alpha.to_string());
  XTEN_CHECK(t != kBool || alpha.is_boolean() || alpha.to_long() == 1, TypeError, name,
             "for bool tensors, alpha must be a bool (got {})", alpha.to_string());
}

void check_neg(const char* name, ScalarType t) {
  XTEN_CHECK(t != kBool, NotImplementedError, name,
             "negation of a bool tensor is not supported; to invert a mask use logical_not() or ~");
}

ScalarType mean_dtype(const Tensor& self, std::optional<ScalarType> dtype) {
  const ScalarType out = dtype.value_or(self.dtype());
  XTEN_CHECK(is_floating_type(out), TypeError, "mean",
             "could not infer the output dtype: input dtype {} is not floating; pass a floating "
             "dtype",
             to_string(out));
  return out;
}

ScalarType softmax_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype) {
  const ScalarType out = dtype.value_or(self.dtype());
  XTEN_CHECK(is_floating_type(out), NotImplementedError, op,
             "not implemented for dtype {} (pass a floating dtype)", to_string(out));
  return out;
}

int64_t softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output,
                              int64_t dim, ScalarType input_dtype) {
  XTEN_CHECK(grad_output.sizes() == output.sizes(), ValueError, op,
             "grad_output of shape {} does not match the output's shape {}", grad_output.sizes(),
             output.sizes());
  XTEN_CHECK(grad_output.device() == output.device(), DeviceError, op,
             "grad_output is on {} but the output on {}", grad_output.device().str(),
             output.device().str());
  for (ScalarType t : {grad_output.dtype(), output.dtype(), input_dtype})
    XTEN_CHECK(is_floating_type(t), NotImplementedError, op, "not implemented for dtype {}",
               to_string(t));
  return output.dim() == 0 ? wrap_dim(op, dim, 1) : wrap_dim(op, dim, output.dim());
}

namespace {

// The input and grad_output of a normalization's backward, and a per-statistic tensor `what`.
void check_norm_input(const char* op, const Tensor& grad_output, const Tensor& input) {
  XTEN_CHECK(is_floating_type(input.dtype()) && is_floating_type(grad_output.dtype()),
             NotImplementedError, op, "not implemented for dtypes {} (input) and {} (grad_output)",
             to_string(input.dtype()), to_string(grad_output.dtype()));
  XTEN_CHECK(grad_output.sizes() == input.sizes(), ValueError, op,
             "grad_output of shape {} does not match the input's shape {}", grad_output.sizes(),
             input.sizes());
  XTEN_CHECK(grad_output.device() == input.device(), DeviceError, op,
             "grad_output is on {} but the input on {}", grad_output.device().str(),
             input.device().str());
}
void check_norm_param(const char* op, const char* what, const std::optional<Tensor>& t,
                      const Tensor& input, IntArrayRef shape) {
  if (!t || !t->defined()) return;
  XTEN_CHECK(t->sizes() == shape, ValueError, op, "{} must have shape {}, but got {}", what, shape,
             t->sizes());
  XTEN_CHECK(is_floating_type(t->dtype()), NotImplementedError, op,
             "{} of dtype {} is not supported (expected a floating dtype)", what,
             to_string(t->dtype()));
  XTEN_CHECK(t->device() == input.device(), DeviceError, op, "{} is on {} but the input on {}",
             what, t->device().str(), input.device().str());
}
// layer_norm's view of its input: rows of the elements normalized_shape covers, which must be
// the input's last dims.
NormMeta normalized_rows(const char* op, const Tensor& input, IntArrayRef normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  XTEN_CHECK(
      k >= 1 && k <= input.dim() && input.sizes().slice(input.dim() - k, k) == normalized_shape,
      ValueError, op, "normalized_shape {} must match the last dims of the input's shape {}",
      normalized_shape, input.sizes());
  NormMeta m;
  m.channels = 1;
  m.inner = 1;
  for (int64_t s : normalized_shape) m.inner *= s;
  m.outer = m.inner == 0 ? 0 : input.numel() / m.inner;
  return m;
}

}  // namespace

NormMeta layer_norm_meta(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias) {
  const char* op = "layer_norm";
  const NormMeta m = normalized_rows(op, input, normalized_shape);
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, op,
             "not implemented for dtype {}", to_string(input.dtype()));
  check_norm_param(op, "weight", weight, input, normalized_shape);
  check_norm_param(op, "bias", bias, input, normalized_shape);
  return m;
}

NormMeta group_norm_meta(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias) {
  const char* op = "group_norm";
  XTEN_CHECK(input.dim() >= 2, ValueError, op,
             "expected an input of at least 2 dims (N, C, ...), but got shape {}", input.sizes());
  XTEN_CHECK(is_floating_type(input.dtype()), NotImplementedError, op,
             "not implemented for dtype {}", to_string(input.dtype()));
  const int64_t n = input.size(0), c = input.size(1);
  XTEN_CHECK(groups > 0 && c % groups == 0, ValueError, op,
             "the number of channels ({}) must be divisible by num_groups ({})", c, groups);
  const IntArrayRef channels(c);
  check_norm_param(op, "weight", weight, input, channels);
  check_norm_param(op, "bias", bias, input, channels);
  NormMeta m;
  m.outer = n;
  m.channels = groups;
  m.inner = n * c == 0 ? 0 : input.numel() / (n * groups);
  return m;
}

NormMeta batch_norm_backward_meta(const Tensor& grad_output, const Tensor& input,
                                  const std::optional<Tensor>& weight,
                                  const std::optional<Tensor>& running_mean,
                                  const std::optional<Tensor>& running_var, bool training) {
  const char* op = "batch_norm_backward";
  XTEN_CHECK(input.dim() >= 2, ValueError, op,
             "expected an input of at least 2 dims (N, C, ...), but got shape {}", input.sizes());
  check_norm_input(op, grad_output, input);
  NormMeta m;
  m.outer = input.size(0);
  m.channels = input.size(1);
  m.inner = m.outer * m.channels == 0 ? 0 : input.numel() / (m.outer * m.channels);
  const IntArrayRef c(m.channels);
  check_norm_param(op, "weight", weight, input, c);
  check_norm_param(op, "running_mean", running_mean, input, c);
  check_norm_param(op, "running_var", running_var, input, c);
  XTEN_CHECK(training ||
                 (running_mean && running_mean->defined() && running_var && running_var->defined()),
             ValueError, op,
             "running_mean and running_var must be given in evaluation mode (training=false)");
  return m;
}

NormMeta layer_norm_backward_meta(const Tensor& grad_output, const Tensor& input,
                                  IntArrayRef normalized_shape,
                                  const std::optional<Tensor>& weight) {
  const char* op = "layer_norm_backward";
  const NormMeta m = normalized_rows(op, input, normalized_shape);
  check_norm_input(op, grad_output, input);
  check_norm_param(op, "weight", weight, input, normalized_shape);
  return m;
}

std::tuple<Tensor, Tensor, Tensor> norm_backward_results(const Tensor& input,
                                                         const std::optional<Tensor>& weight,
                                                         const Tensor& dx, const Tensor& dw,
                                                         const Tensor& db) {
  const ScalarType wt = weight && weight->defined() ? weight->dtype() : input.dtype();
  return {in_layout_of(dx.to(input.dtype()), input), dw.to(wt), db.to(wt)};
}

void check_softplus_beta(const Scalar& beta) {
  XTEN_CHECK(beta.to<double>() != 0, ValueError, "softplus", "beta must be nonzero");
}

void check_elementwise_out(const char* op, const Tensor& out, IntArrayRef shape,
                           ScalarType result) {
  XTEN_CHECK(out.sizes() == shape, ValueError, op,
             "output with shape {} doesn't match the broadcast shape {}", out.sizes(), shape);
  XTEN_CHECK(can_cast(result, out.dtype()), TypeError, op,
             "result type {} can't be cast to the desired output type {}", to_string(result),
             to_string(out.dtype()));
  check_no_internal_overlap(op, out);
}

void check_clamp(const char* name, const Tensor& self, bool has_lo, bool has_hi) {
  XTEN_CHECK(has_lo || has_hi, ValueError, name, "at least one of min and max must be given");
  XTEN_CHECK(self.dtype() != kBool, NotImplementedError, name, "not implemented for dtype Bool");
}

void check_lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  XTEN_CHECK(self.dtype() == end.dtype(), TypeError, "lerp",
             "expected end of dtype {} (self's), but got {}", to_string(self.dtype()),
             to_string(end.dtype()));
  XTEN_CHECK(is_wrapped_number(weight) || weight.dtype() == self.dtype(), TypeError, "lerp",
             "expected weight of dtype {} (self's), but got {}", to_string(self.dtype()),
             to_string(weight.dtype()));
}

void check_where_condition(const Tensor& cond) {
  XTEN_CHECK(cond.dtype() == kBool, TypeError, "where",
             "expected the condition to be a bool tensor, but got {}", to_string(cond.dtype()));
}

void check_rounding_mode(const char* name, const std::string& mode) {
  XTEN_CHECK(mode == "trunc" || mode == "floor", ValueError, name,
             "rounding_mode must be None, 'trunc' or 'floor', but got '{}'", mode);
}

void check_int_pow_exponent(const char* name, ScalarType t, const Tensor& exp) {
  if (is_integral_type(t, false) && is_wrapped_number(exp))
    XTEN_CHECK(exp.item<int64_t>() >= 0, ValueError, name,
               "integers to negative integer powers are not allowed (exponent {})",
               exp.item<int64_t>());
}

void check_gelu_approximate(const std::string& approximate, const char* op) {
  XTEN_CHECK(approximate == "none" || approximate == "tanh", ValueError, op,
             "approximate must be 'none' or 'tanh', but got '{}'", approximate);
}

void check_gelu_backward(const Tensor& grad, const Tensor& self, const std::string& approximate) {
  check_gelu_approximate(approximate, "gelu_backward");
  check_pointwise_backward("gelu_backward", grad, self);
}

void check_var_dtype(const char* op, const Tensor& self) {
  XTEN_CHECK(is_floating_type(self.dtype()), NotImplementedError, op,
             "not implemented for dtype {} (var and std need a floating dtype)",
             to_string(self.dtype()));
}

void check_norm_dtype(const Tensor& self) {
  XTEN_CHECK(is_floating_type(self.dtype()), NotImplementedError, "norm",
             "not implemented for dtype {} (norm needs a floating dtype)", to_string(self.dtype()));
}

void check_index_dtype(const char* op, const Tensor& index) {
  XTEN_CHECK(index.dtype() == kLong || index.dtype() == kInt, TypeError, op,
             "expected an int64 or int32 index tensor, but got {}", to_string(index.dtype()));
}

Tensor index_as_long(const char* op, const Tensor& index) {
  check_index_dtype(op, index);
  return index.to(kLong).contiguous();
}

void check_index_range(const char* op, const Tensor& index_long, int64_t size, int64_t dim) {
  const int64_t n = index_long.numel();
  const int64_t* p = static_cast<const int64_t*>(index_long.data_ptr());
  // Threads over chunks (max_pool2d's gradient reads 1.6M indices; one thread took most of its
  // time); the error names the first bad index in order, as a serial loop would.
  std::atomic<int64_t> first_bad{n};
  parallel_for(n, kParallelGrain, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      if (p[k] < -size || p[k] >= size) {
        int64_t seen = first_bad.load();
        while (k < seen && !first_bad.compare_exchange_weak(seen, k)) {
        }
        return;
      }
    }
  });
  if (first_bad.load() < n) raise_index_out_of_range(op, p[first_bad.load()], dim, size);
}

void raise_index_out_of_range(const char* op, int64_t value, int64_t dim, int64_t size) {
  XTEN_CHECK(false, IndexError, op, "index {} is out of range for dim {} of size {}", value, dim,
             size);
  std::abort();  // not reached
}

std::vector<int64_t> index_values(const char* op, const Tensor& index, int64_t size, int64_t dim) {
  const Tensor flat = index_as_long(op, index);
  check_index_range(op, flat, size, dim);
  const int64_t* p = static_cast<const int64_t*>(flat.data_ptr());
  std::vector<int64_t> v(p, p + flat.numel());
  for (int64_t& i : v) i += i < 0 ? size : 0;
  return v;
}

void check_index_select_index(const Tensor& index) {
  XTEN_CHECK(index.dim() <= 1, ValueError, "index_select",
             "index must be 0-D or 1-D, but got shape {}", index.sizes());
}

void check_gather_shapes(const char* op, const Tensor& self, int64_t d, const Tensor& index,
                         const Tensor* src) {
  XTEN_CHECK(index.dim() == self.dim(), ValueError, op,
             "index ({}-D) must have as many dims as self ({}-D)", index.dim(), self.dim());
  XTEN_CHECK(!src || src->dim() == self.dim(), ValueError, op,
             "src ({}-D) must have as many dims as self ({}-D)", src ? src->dim() : 0, self.dim());
  for (int64_t i = 0; i < self.dim(); ++i) {
    XTEN_CHECK(i == d || index.size(i) <= self.size(i), ValueError, op,
               "index {} is larger than self {} outside dim {} (dim {})", index.sizes(),
               self.sizes(), d, i);
    if (src)
      XTEN_CHECK(index.size(i) <= src->size(i), ValueError, op,
                 "index {} is larger than src {} at dim {}", index.sizes(), src->sizes(), i);
  }
}

void check_scatter_src(const char* op, const Tensor& self, const Tensor& src) {
  XTEN_CHECK(src.dtype() == self.dtype(), TypeError, op,
             "expected src of dtype {} (self's), but got {}", to_string(self.dtype()),
             to_string(src.dtype()));
}

void check_scatter_add_dtype(const Tensor& self) {
  XTEN_CHECK(self.dtype() != kBool, NotImplementedError, "scatter_add",
             "not implemented for dtype Bool");
}

void check_masked_select_mask(const Tensor& mask) {
  XTEN_CHECK(mask.dtype() == kBool, TypeError, "masked_select", "expected a bool mask, but got {}",
             to_string(mask.dtype()));
}

void check_topk_k(const char* op, int64_t k, int64_t n, int64_t d) {
  XTEN_CHECK(k >= 0 && k <= n, ValueError, op, "k ({}) must be in [0, {}] (the size of dim {})", k,
             n, d);
}

ScalarType clamp_compute_dtype(const Tensor& self, const std::optional<Scalar>& lo,
                               const std::optional<Scalar>& hi) {
  ResultType rt;
  rt.add(self);
  if (lo) rt.add(*lo);
  if (hi) rt.add(*hi);
  return rt.get();
}

double finite_max(ScalarType t) {
  switch (t) {
    case kHalf:
      return 65504.0;
    case kBFloat16:
      return 3.3895313892515355e38;
    case kFloat:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// ---- binary ops' meta steps (Note [Binary meta]) ----
namespace {
template <uint32_t Set>
ScalarType supported(const char* op, ScalarType t) {
  visit_dtype<Set>(op, t, [](auto) {});
  return t;
}
ScalarType float_promoted(const Tensor& a, const Tensor& b) {
  const ScalarType t = result_type(a, b);
  return is_floating_type(t) ? t : kFloat;
}
}  // namespace

ScalarType add_sub_meta(const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        bool negate) {
  const ScalarType t = result_type(a, b);
  check_add_sub(name, t, alpha, negate);
  return supported<dtypes::kAll>(name, t);
}
ScalarType true_div_meta(const char* name, const Tensor& a, const Tensor& b) {
  return supported<dtypes::kFloating>(name, float_promoted(a, b));
}
ScalarType div_mode_meta(const char* name, const Tensor& a, const Tensor& b,
                         const std::string& mode) {
  check_rounding_mode(name, mode);
  return supported<dtypes::kAllButBool>(name, result_type(a, b));
}
ScalarType remainder_fmod_meta(const char* name, const Tensor& a, const Tensor& b) {
  return supported<dtypes::kAllButBool>(name, result_type(a, b));
}
ScalarType pow_meta(const char* name, const Tensor& base, const Tensor& exp) {
  const ScalarType t = result_type(base, exp);
  check_int_pow_exponent(name, t, exp);
  return supported<dtypes::kAllButBool>(name, t);
}
ScalarType float_binary_meta(const char* name, const Tensor& a, const Tensor& b) {
  return supported<dtypes::kFloating>(name, float_promoted(a, b));
}
ScalarType bitwise_meta(const char* name, const Tensor& a, const Tensor& b) {
  return supported<dtypes::kIntegralAndBool>(name, result_type(a, b));
}
ScalarType clamp_meta(const char* name, const Tensor& self, const std::optional<Scalar>& lo,
                      const std::optional<Scalar>& hi) {
  check_clamp(name, self, lo.has_value(), hi.has_value());
  return supported<dtypes::kAllButBool>(name, clamp_compute_dtype(self, lo, hi));
}
CatMeta cat_meta(const std::vector<Tensor>& tensors, int64_t dim) {
  XTEN_CHECK(!tensors.empty(), ValueError, "cat", "expected a non-empty list of tensors");
  CatMeta m;
  ResultType rt;
  for (const Tensor& t : tensors) {
    rt.add(t);
    if (!(t.dim() == 1 && t.numel() == 0)) m.parts.push_back(&t);
  }
  m.dtype = rt.get();
  m.device = tensors[0].device();
  if (m.parts.empty()) {
    m.shape = {0};
    return m;
  }
  const Tensor& ref = *m.parts[0];
  m.device = ref.device();
  XTEN_CHECK(ref.dim() > 0, ValueError, "cat", "zero-dim tensors cannot be concatenated");
  const int64_t d = m.dim = wrap_dim("cat", dim, ref.dim());
  m.shape = DimVector(ref.sizes());
  m.shape[d] = 0;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    const Tensor& t = *m.parts[i];
    XTEN_CHECK(t.dim() == ref.dim(), ValueError, "cat",
               "tensor {} has {} dims, but tensor 0 has {}", i, t.dim(), ref.dim());
    for (int64_t k = 0; k < ref.dim(); ++k)
      XTEN_CHECK(k == d || t.size(k) == ref.size(k), ValueError, "cat",
                 "sizes must match except in dim {}: tensor 0 has {}, tensor {} has {}", d,
                 ref.sizes(), i, t.sizes());
    check_same_device("cat", {&ref, &t});
    m.shape[d] += t.size(d);
  }
  return m;
}

Tensor cat_by_copies(const CatMeta& m) {
  Tensor out = empty(m.shape, m.dtype, m.device);
  int64_t offset = 0;
  for (const Tensor* t : m.parts) {
    out.narrow(m.dim, offset, t->size(m.dim)).copy_(*t);
    offset += t->size(m.dim);
  }
  return out;
}

ScalarType addcmul_meta(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                        const Scalar& value) {
  constexpr const char* op = "addcmul";
  const ScalarType t = ResultType().add(self).add(tensor1).add(tensor2).get();
  XTEN_CHECK(is_floating_type(t) || value.is_integral(false), TypeError, op,
             "for integral input tensors, value must not be a floating point number (got {})",
             value.to_string());
  return supported<dtypes::kAllButBool>(op, t);
}

ScalarType lerp_meta(const Tensor& self, const Tensor& end, const Tensor& weight) {
  check_lerp(self, end, weight);
  return supported<dtypes::kFloating>("lerp", self.dtype());
}

namespace {
// Element i of a multi-tensor op's list `what`: defined; dense.
void check_defined(const char* op, const char* what, size_t i, const Tensor& t) {
  XTEN_CHECK(t.defined(), ValueError, op, "{}[{}] is an undefined tensor", what, i);
}
// The multi-tensor kernels walk each tensor's elements in memory order, so a tensor must be
// dense -- contiguous, or channels-last for a 4-d one (a channels-last model's weights) -- and
// every list's tensor in the same order as self's (docs/optim.md).
void check_dense(const char* op, const char* what, size_t i, const Tensor& t) {
  XTEN_CHECK(t.is_contiguous() || t.is_contiguous(MemoryFormat::ChannelsLast), ValueError, op,
             "{}[{}] is neither contiguous nor channels-last (sizes {}, strides {}): the "
             "multi-tensor ops take dense tensors",
             what, i, t.sizes(), t.strides());
}
void check_same_order(const char* op, const char* what, size_t i, const Tensor& t,
                      const Tensor& self) {
  const bool same = (t.is_contiguous() && self.is_contiguous()) ||
                    (t.is_contiguous(MemoryFormat::ChannelsLast) &&
                     self.is_contiguous(MemoryFormat::ChannelsLast));
  XTEN_CHECK(same, ValueError, op,
             "{}[{}] has strides {} and self[{}] strides {}: their elements must lie in the same "
             "order (both contiguous or both channels-last)",
             what, i, t.strides(), i, self.strides());
}
}  // namespace

void check_tensor_list(const char* op, const char* what, const std::vector<Tensor>& list,
                       Device device) {
  std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) of each tensor's bytes
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    check_defined(op, what, i, t);
    XTEN_CHECK(t.device() == device, DeviceError, op, "{}[{}] is on {}, expected {}", what, i,
               t.device().str(), device.str());
    XTEN_CHECK(is_floating_type(t.dtype()), NotImplementedError, op,
               "{}[{}] has dtype {}: only floating dtypes", what, i, to_string(t.dtype()));
    check_dense(op, what, i, t);
    if (t.numel() == 0) continue;
    const auto b = reinterpret_cast<uintptr_t>(t.data_ptr());
    spans.emplace_back(b, b + static_cast<uintptr_t>(t.nbytes()));
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i)
    XTEN_CHECK(spans[i].first >= spans[i - 1].second, ValueError, op,
               "two tensors of {} share memory: each must be written once", what);
}

namespace {
void check_one_element(const char* op, const char* name, const Tensor& t, ScalarType dtype) {
  XTEN_CHECK(t.defined(), ValueError, op, "{} is an undefined tensor", name);
  XTEN_CHECK(t.numel() == 1 && t.dtype() == dtype, ValueError, op,
             "{} must be a one-element {} tensor, got {} of shape {}", name, dtype_name(dtype),
             dtype_name(t.dtype()), t.sizes());
}
}  // namespace

Device check_amp_unscale(const std::vector<Tensor>& self, const Tensor& found_inf,
                         const Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_one_element(op, "found_inf", found_inf, kFloat);
  check_one_element(op, "inv_scale", inv_scale, kFloat);
  XTEN_CHECK(found_inf.device() == inv_scale.device(), DeviceError, op,
             "found_inf is on {} and inv_scale on {}", found_inf.device().str(),
             inv_scale.device().str());
  check_tensor_list(op, "self", self, found_inf.device());
  return found_inf.device();
}

void check_list_like(const char* op, const char* what, const std::vector<Tensor>& list,
                     const std::vector<Tensor>& self) {
  XTEN_CHECK(list.size() == self.size(), ValueError, op, "{} has {} tensors for {} in self", what,
             list.size(), self.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Tensor& t = list[i];
    check_defined(op, what, i, t);
    XTEN_CHECK(t.device() == self[i].device(), DeviceError, op, "{}[{}] is on {}, self[{}] on {}",
               what, i, t.device().str(), i, self[i].device().str());
    XTEN_CHECK(t.sizes() == self[i].sizes() && t.dtype() == self[i].dtype(), ValueError, op,
               "{}[{}] is {} of shape {}, self[{}] {} of shape {}", what, i, to_string(t.dtype()),
               t.sizes(), i, to_string(self[i].dtype()), self[i].sizes());
    check_dense(op, what, i, t);
    check_same_order(op, what, i, t, self[i]);
  }
}

namespace {
Device list_device(const char* op, const std::vector<Tensor>& self) {
  const Device d = self.empty() || !self[0].defined() ? Device(kCPU) : self[0].device();
  check_tensor_list(op, "self", self, d);
  return d;
}
}  // namespace

Device check_fused_sgd(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& momentum_buffer_list, double momentum) {
  const char* op = "_fused_sgd_";
  const Device d = list_device(op, self);
  check_list_like(op, "grads", grads, self);
  if (momentum != 0) check_list_like(op, "momentum_buffer_list", momentum_buffer_list, self);
  return d;
}

Device check_fused_adam(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                        const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                        const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps,
                        bool amsgrad, const std::optional<Tensor>& found_inf) {
  const char* op = "_fused_adam_";
  const Device d = list_device(op, self);
  const double first = check_found_inf(op, found_inf, d) ? 0 : 1;
  check_list_like(op, "grads", grads, self);
  check_list_like(op, "exp_avgs", exp_avgs, self);
  check_list_like(op, "exp_avg_sqs", exp_avg_sqs, self);
  if (amsgrad) check_list_like(op, "max_exp_avg_sqs", max_exp_avg_sqs, self);
  XTEN_CHECK(state_steps.defined() && state_steps.is_cpu() && state_steps.dtype() == kDouble &&
                 state_steps.dim() == 1 && state_steps.numel() == static_cast<int64_t>(self.size()),
             ValueError, op,
             "state_steps must be a 1-d float64 CPU tensor of {} step counts, got {}", self.size(),
             state_steps.defined()
                 ? fmt::format("{} of shape {} on {}", to_string(state_steps.dtype()),
                               state_steps.sizes(), state_steps.device().str())
                 : std::string("an undefined tensor"));
  const Tensor steps = state_steps.contiguous();
  for (int64_t i = 0; i < steps.numel(); ++i) {
    const double s = static_cast<const double*>(steps.data_ptr())[i];
    XTEN_CHECK(s >= first && std::isfinite(s), ValueError, op,
               "state_steps[{}] is {}: steps count from 1", i, s);
  }
  return d;
}

Device check_fused_rmsprop(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                           const std::vector<Tensor>& square_avgs,
                           const std::vector<Tensor>& grad_avgs,
                           const std::vector<Tensor>& momentum_buffer_list, bool centered,
                           double momentum) {
  const char* op = "_fused_rmsprop_";
  const Device d = list_device(op, self);
  check_list_like(op, "grads", grads, self);
  check_list_like(op, "square_avgs", square_avgs, self);
  if (centered) check_list_like(op, "grad_avgs", grad_avgs, self);
  if (momentum > 0) check_list_like(op, "momentum_buffer_list", momentum_buffer_list, self);
  return d;
}

bool check_found_inf(const char* op, const std::optional<Tensor>& found_inf, Device device) {
  if (!found_inf) return false;
  check_one_element(op, "found_inf", *found_inf, kFloat);
  XTEN_CHECK(found_inf->device() == device, DeviceError, op,
             "found_inf is on {} and the parameters on {}", found_inf->device().str(),
             device.str());
  return true;
}

Device check_amp_update_scale(const Tensor& self, const Tensor& growth_tracker,
                              const Tensor& found_inf, double growth_factor, double backoff_factor,
                              int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_one_element(op, "self", self, kFloat);
  check_one_element(op, "growth_tracker", growth_tracker, kInt);
  check_one_element(op, "found_inf", found_inf, kFloat);
  XTEN_CHECK(growth_tracker.device() == self.device() && found_inf.device() == self.device(),
             DeviceError, op, "self is on {}, growth_tracker on {} and found_inf on {}",
             self.device().str(), growth_tracker.device().str(), found_inf.device().str());
  XTEN_CHECK(growth_factor > 1 && backoff_factor > 0 && backoff_factor < 1 && growth_interval > 0,
             ValueError, op,
             "expected scale_growth_factor > 1, 0 < scale_backoff_factor < 1 and "
             "growth_interval > 0, got {}, {} and {}",
             growth_factor, backoff_factor, growth_interval);
  return self.device();
}

}  // namespace xten
