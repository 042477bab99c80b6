#pragma once
// Argument checks that every backend's kernel of an op makes, with one message each, so that
// the same bad input gives the same error on every device (test/test_xpu_parity.cpp checks).
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xten/core/dtype_dispatch.h>
#include <xten/core/tensor.h>

namespace xten {

// TypeError "expected <an> and <bn> to have the same dtype, but got ..." unless they do.
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b, const char* an,
                      const char* bn);

// nll_loss and nll_loss_backward: a floating input [N, C, d...] or [C]; a Long target of the
// input's shape without the class dim; weight [C] if given; reduction 'none', 'mean' or 'sum'.
// (Target values are checked where they are read: "target 5 is out of bounds for 3 classes".)
void check_nll_loss(const char* op, const Tensor& input, const Tensor& target,
                    const std::optional<Tensor>& weight, const std::string& reduction);
// nll_loss_backward's grad_output: of the target's shape for 'none', zero-dim otherwise, floating,
// on the input's device.
void check_nll_loss_grad(const Tensor& grad_output, const Tensor& input, const Tensor& target,
                         const std::string& reduction);

// threshold_backward: grad and self of one shape and one floating dtype.
void check_threshold_backward(const Tensor& grad, const Tensor& self);

// mm: 2-D operands whose inner sizes agree, one dtype, one device, not bool.
void check_mm(const Tensor& a, const Tensor& b);
// bmm: the same for 3-D operands with equal batch sizes.
void check_bmm(const Tensor& a, const Tensor& b);

// add/sub in compute dtype t: no bool subtraction; alpha integral for integral t, a bool (or
// 1) for bool t.
void check_add_sub(const char* name, ScalarType t, const Scalar& alpha, bool negate);
// neg: no bool.
void check_neg(const char* name, ScalarType t);

// The output dtype of mean: the given one or the input's; it must be floating.
ScalarType mean_dtype(const Tensor& self, std::optional<ScalarType> dtype);
// The output dtype of softmax/log_softmax: the given one or the input's; it must be floating.
ScalarType softmax_dtype(const char* op, const Tensor& self, std::optional<ScalarType> dtype);
void check_softplus_beta(const Scalar& beta);
// _softmax_backward_data / _log_softmax_backward_data: grad_output and output of one shape and
// floating dtypes, a floating input_dtype; returns the dim wrapped (0 for 0-d tensors).
int64_t softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output,
                              int64_t dim, ScalarType input_dtype);

// A normalization sees its input as [outer, channels, inner]. The backward of batch_norm and
// layer_norm keeps one set of statistics per channel: batch_norm [N, C, H*W...], layer_norm
// [rows, 1, normalized elements]. The checks: a floating input of at least 2 dims (batch_norm)
// or ending in normalized_shape (layer_norm), grad_output of its shape, weight (and running
// statistics) of the statistics' shape on the input's device, running statistics given in
// evaluation.
struct NormMeta {
  int64_t outer = 0, channels = 0, inner = 0;
};
// The forwards' checks, shared by the composites and the CPU kernels: a floating input ending in
// normalized_shape, weight and bias of that shape (layer_norm: [rows, 1, normalized elements]);
// an input of at least 2 dims whose channels `groups` divides, weight and bias of shape [C]
// (group_norm: [N, groups, elements per group]).
NormMeta layer_norm_meta(const Tensor& input, IntArrayRef normalized_shape,
                         const std::optional<Tensor>& weight, const std::optional<Tensor>& bias);
NormMeta group_norm_meta(const Tensor& input, int64_t groups, const std::optional<Tensor>& weight,
                         const std::optional<Tensor>& bias);
NormMeta batch_norm_backward_meta(const Tensor& grad_output, const Tensor& input,
                                  const std::optional<Tensor>& weight,
                                  const std::optional<Tensor>& running_mean,
                                  const std::optional<Tensor>& running_var, bool training);
// batch_norm's forward up to its per-channel affine map, shared by the composite
// (kernels/composite/norm.cpp) and the CPU and XPU kernels: the checks; the statistics (the
// batch's from norms::batch_norm_stats in training, else the running ones); the running
// statistics updated in place in training (momentum, the variance unbiased); and y = x * scale +
// shift's scale and shift per channel, [C] in the statistics' dtype (float32, or float64).
std::pair<Tensor, Tensor> batch_norm_scale_shift(const Tensor& input,
                                                 const std::optional<Tensor>& weight,
                                                 const std::optional<Tensor>& bias,
                                                 const std::optional<Tensor>& running_mean,
                                                 const std::optional<Tensor>& running_var,
                                                 bool training, double momentum, double eps);
// A normalization backward's results as every backend returns them: dx in the input's dtype
// and layout (channels-last for a channels-last input), dweight and dbias in the weight's
// dtype (the input's if there is none).
std::tuple<Tensor, Tensor, Tensor> norm_backward_results(const Tensor& input,
                                                         const std::optional<Tensor>& weight,
                                                         const Tensor& dx, const Tensor& dw,
                                                         const Tensor& db);
NormMeta layer_norm_backward_meta(const Tensor& grad_output, const Tensor& input,
                                  IntArrayRef normalized_shape,
                                  const std::optional<Tensor>& weight);

// A pointwise op's given output: it has the broadcast shape, the result dtype casts to its
// dtype, and no two of its elements share memory.
void check_elementwise_out(const char* op, const Tensor& out, IntArrayRef shape, ScalarType result);

// A clamp bound in the compute type M; out of an integer type's range it saturates (a bound
// of -2 on uint8 is no bound) instead of wrapping into a wrong one.
template <class M>
M clamp_bound(const Scalar& s) {
  if constexpr (std::is_integral_v<M>) {
    const double v = s.to<double>();
    if (v <= static_cast<double>(std::numeric_limits<M>::lowest()))
      return std::numeric_limits<M>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<M>::max()))
      return std::numeric_limits<M>::max();
    return s.is_floating_point() ? static_cast<M>(v) : static_cast<M>(s.to<int64_t>());
  } else {
    return s.to<M>();
  }
}
// clamp's compute dtype: self promoted with the bounds.
ScalarType clamp_compute_dtype(const Tensor& self, const std::optional<Scalar>& lo,
                               const std::optional<Scalar>& hi);
// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double finite_max(ScalarType t);
// clamp: a bound given, no bool input.
void check_clamp(const char* name, const Tensor& self, bool has_lo, bool has_hi);
// lerp: end and weight (unless a wrapped number) of self's dtype.
void check_lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
// where: a bool condition.
void check_where_condition(const Tensor& cond);
// div's rounding_mode: trunc or floor.
void check_rounding_mode(const char* name, const std::string& mode);
// pow of integers: a wrapped-number exponent must not be negative.
void check_int_pow_exponent(const char* name, ScalarType t, const Tensor& exp);
// var/std and norm: a floating input.
void check_var_dtype(const char* op, const Tensor& self);
void check_norm_dtype(const Tensor& self);
// ---- binary ops' meta steps ----
// Note [Binary meta]: each binary op's compute dtype, after its argument checks and its
// dtype set's check (`[op] not implemented for dtype X`), decided once for every backend;
// a backend kernel runs in the dtype its meta returns.
ScalarType add_sub_meta(const char* name, const Tensor& a, const Tensor& b, const Scalar& alpha,
                        bool negate);
ScalarType true_div_meta(const char* name, const Tensor& a, const Tensor& b);  // ints: float32
ScalarType div_mode_meta(const char* name, const Tensor& a, const Tensor& b,
                         const std::string& mode);
ScalarType remainder_fmod_meta(const char* name, const Tensor& a, const Tensor& b);
ScalarType pow_meta(const char* name, const Tensor& base, const Tensor& exp);
// A float binary function (atan2, ...; Note [Float binary functions] in dispatch/ops.h):
// floating dtypes, integers computed in float32.
ScalarType float_binary_meta(const char* name, const Tensor& a, const Tensor& b);
ScalarType bitwise_meta(const char* name, const Tensor& a, const Tensor& b);
ScalarType clamp_meta(const char* name, const Tensor& self, const std::optional<Scalar>& lo,
                      const std::optional<Scalar>& hi);
ScalarType lerp_meta(const Tensor& self, const Tensor& end, const Tensor& weight);
// cat's meta step, shared by the composite and the CPU kernel: the tensors that take part (a 1-D
// empty tensor is skipped, PyTorch's legacy rule), their promoted dtype, the wrapped dim and the
// output's shape and device; sizes, dims and devices checked. No parts: shape (0).
struct CatMeta {
  std::vector<const Tensor*> parts;
  ScalarType dtype = ScalarType::Undefined;
  int64_t dim = 0;
  DimVector shape;
  Device device{kCPU};
};
CatMeta cat_meta(const std::vector<Tensor>& tensors, int64_t dim);
// The output of cat, each part copied into its slice (copy_: any layout and dtype).
Tensor cat_by_copies(const CatMeta& m);

// addcmul's result dtype (the three promoted; not bool), and an integral one takes an integral
// value.
ScalarType addcmul_meta(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
                        const Scalar& value);

// ---- unary ops' dtype sets ----
// The dtypes each unary op computes in, for every backend's kernel to instantiate over and
// raise the same error outside (the float functions, exp, log, ..., take every dtype and
// compute integers in float32).
namespace unary_dtypes {
constexpr uint32_t kNeg = dtypes::kAllButBool;
constexpr uint32_t kAbs = dtypes::kAllButBool;
constexpr uint32_t kRelu = dtypes::kAllButBool;
constexpr uint32_t kSign = dtypes::kAll;
constexpr uint32_t kSilu = dtypes::kFloating;
constexpr uint32_t kGelu = dtypes::kFloating;
constexpr uint32_t kRounding = dtypes::kFloating;  // floor, ceil, round, trunc; integers copy
constexpr uint32_t kBitwiseNot = dtypes::kIntegralAndBool;
constexpr uint32_t kPredicate = dtypes::kAll;  // isnan, isinf, isfinite, logical_not
}  // namespace unary_dtypes

// ---- indexing ----
// A CPU index tensor's values as int64, each checked against [-size, size) (IndexError naming
// the first bad one) and wrapped; TypeError unless int64 or int32. The XPU kernels check the
// range on the device and call this on a host copy only to raise the same error.
std::vector<int64_t> index_values(const char* op, const Tensor& index, int64_t size, int64_t dim);
// The same checks without the copy, for kernels that read many indices (gather, scatter): the
// index as contiguous int64 (a new tensor only if it was int32 or strided), checked in place by
// check_index_range (the IndexError naming the first bad index), read in place, negatives
// wrapped by wrap_index. A 1 MB copy (zeroed, new pages each call) was a cost of its own.
Tensor index_as_long(const char* op, const Tensor& index);
void check_index_range(const char* op, const Tensor& index_long, int64_t size, int64_t dim);
// The IndexError those checks raise for `value`, an index of dim `dim` (of size `size`).
[[noreturn]] void raise_index_out_of_range(const char* op, int64_t value, int64_t dim,
                                           int64_t size);
// i in [-size, size) wrapped into [0, size).
inline int64_t wrap_index(int64_t i, int64_t size) {
  return i < 0 ? i + size : i;
}
// The index dtype check alone (int64 or int32).
void check_index_dtype(const char* op, const Tensor& index);
void check_index_select_index(const Tensor& index);
// gather/scatter: index has self's dims and fits in self (outside dim d) and src.
void check_gather_shapes(const char* op, const Tensor& self, int64_t d, const Tensor& index,
                         const Tensor* src);
void check_scatter_src(const char* op, const Tensor& self, const Tensor& src);
void check_scatter_add_dtype(const Tensor& self);
void check_masked_select_mask(const Tensor& mask);
void check_topk_k(const char* op, int64_t k, int64_t n, int64_t d);
// gelu's approximate: none or tanh.
void check_gelu_approximate(const std::string& approximate, const char* op = "gelu");
// A loss's floating input (else NotImplementedError) and floating target (else TypeError).
void check_floating_loss(const char* op, const Tensor& input, const Tensor& target);
// A loss's reduction: 'none', 'mean' or 'sum' (else ValueError).
void check_loss_reduction(const char* op, const std::string& reduction);
// mse_loss_backward's checks (floating self and target, a known reduction, one device, and a
// grad_output that broadcasts with them); returns the factor of (self - target) * grad_output:
// 2, or 2 over the element count of self and target broadcast for 'mean'.
double mse_loss_backward_norm(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const std::string& reduction);

// A pointwise backward's operands (threshold_backward, gelu_backward, sigmoid_backward,
// tanh_backward, silu_backward): grad_output and the other operand (self or output) of one
// shape, dtype and device, and a floating dtype.
void check_pointwise_backward(const char* op, const Tensor& grad, const Tensor& other,
                              const char* other_name = "self");
// leaky_relu_backward's: as above, and from the result (self_is_result) only for a nonnegative
// slope (a negative one flips the result's sign: PyTorch refuses it too).
void check_leaky_relu_backward(const Tensor& grad, const Tensor& self, const Scalar& slope,
                               bool self_is_result);
// gelu_backward's operands: one shape, dtype and device, a floating dtype, a known form.
void check_gelu_backward(const Tensor& grad, const Tensor& self, const std::string& approximate);

// The multi-tensor ops (kernels/cpu/optim.cpp, kernels/xpu/ops/optim.cpp): every tensor of
// `list` (named `what` in messages) defined, on `device`, floating and contiguous.
void check_tensor_list(const char* op, const char* what, const std::vector<Tensor>& list,
                       Device device);
// _amp_foreach_non_finite_check_and_unscale_: found_inf and inv_scale one-element float32
// tensors on one device; the list checked as above. Returns that device.
Device check_amp_unscale(const std::vector<Tensor>& self, const Tensor& found_inf,
                         const Tensor& inv_scale);
// _fused_sgd_, _fused_adam_: `self` checked as above (on its first tensor's device); `list`
// (named `what`) holds, for each tensor of self, a dense tensor of its shape, dtype and device.
void check_list_like(const char* op, const char* what, const std::vector<Tensor>& list,
                     const std::vector<Tensor>& self);
// Both ops' checks; the device of self (CPU if self is empty).
Device check_fused_sgd(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                       const std::vector<Tensor>& momentum_buffer_list, double momentum);
// Adam's step counts count from 1; a count of 0 is taken where found_inf is given (a step
// GradScaler skips: its count was incremented by 0).
Device check_fused_adam(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                        const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                        const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps,
                        bool amsgrad, const std::optional<Tensor>& found_inf);
Device check_fused_rmsprop(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                           const std::vector<Tensor>& square_avgs,
                           const std::vector<Tensor>& grad_avgs,
                           const std::vector<Tensor>& momentum_buffer_list, bool centered,
                           double momentum);
// The fused steps' found_inf, when given: a one-element float32 tensor on `device` (the
// parameters'). Returns whether it was given.
bool check_found_inf(const char* op, const std::optional<Tensor>& found_inf, Device device);
// _amp_update_scale_: the scale and found_inf one-element float32 tensors, growth_tracker a
// one-element int32 tensor, all on one device (returned); the factors and interval as
// GradScaler's options require.
Device check_amp_update_scale(const Tensor& self, const Tensor& growth_tracker,
                              const Tensor& found_inf, double growth_factor, double backoff_factor,
                              int64_t growth_interval);

}  // namespace xten
