#pragma once
// Every public op, as a free function. Each goes through the Dispatcher (dispatch/ops.cpp
// declares the schemas and holds these front ends); Tensor methods and operators forward
// here. Kernels: kernels/cpu/<family>.cpp, device-independent ones kernels/composite/.
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <xten/core/tensor.h>
#include <xten/dispatch/op_table.h>

namespace xten {

// ---- factories --------------------------------------------------------------------------
// An uninitialized tensor.
Tensor empty(IntArrayRef size, TensorOptions options = {});
Tensor empty(IntArrayRef size, ScalarType dtype, Device device);
// Filled with 0, 1 or `value` (dtype: options', else the value's: bool, int64 or float32).
Tensor zeros(IntArrayRef size, TensorOptions options = {});
Tensor zeros(IntArrayRef size, ScalarType dtype, Device device);
Tensor ones(IntArrayRef size, TensorOptions options = {});
Tensor ones(IntArrayRef size, ScalarType dtype, Device device);
Tensor full(IntArrayRef size, const Scalar& value, TensorOptions options = {});
// [0, end), [start, end) by step; int64 if every bound is integral, else float32.
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1,
              TensorOptions options = {});
// `steps` values evenly from start to end inclusive.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
// n x m identity (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions options = {});
// Uniform [0, 1), standard normal, and integers in [low, high): see docs/random.md.
Tensor rand(IntArrayRef size, TensorOptions options = {});
Tensor randn(IntArrayRef size, TensorOptions options = {});
Tensor randint(int64_t high, IntArrayRef size, TensorOptions options = kLong);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions options = kLong);
// num_samples category indices per row of `self` (1-d: one distribution, 2-d: one per row) of
// non-negative weights, drawn from the generator; without replacement each index at most once.
Tensor multinomial(const Tensor& self, int64_t num_samples, bool replacement = false);
// Same shape (and by default dtype and device) as `self`.
Tensor empty_like(const Tensor& self, std::optional<TensorOptions> options = std::nullopt);
Tensor zeros_like(const Tensor& self, std::optional<TensorOptions> options = std::nullopt);
Tensor ones_like(const Tensor& self, std::optional<TensorOptions> options = std::nullopt);
Tensor full_like(const Tensor& self, const Scalar& value,
                 std::optional<TensorOptions> options = std::nullopt);
Tensor rand_like(const Tensor& self, std::optional<TensorOptions> options = std::nullopt);
Tensor randn_like(const Tensor& self, std::optional<TensorOptions> options = std::nullopt);
// Wraps memory the caller owns (no copy; the caller keeps it alive). CPU only.
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype);
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype);

// A tensor holding a copy of `values`, of shape `shape` (default: 1-D of values.size()).
// Its dtype follows libtorch's `torch::tensor`: int and int64_t values give int64, float and
// double values the default dtype float32, other types (bool, uint8_t, int8_t, int16_t, Half,
// BFloat16) their own; a dtype in `options` wins (the values are converted once).
template <class T>
Tensor tensor(const std::vector<T>& values, std::optional<IntArrayRef> shape = std::nullopt,
              TensorOptions options = {});
template <class T>
Tensor tensor(const std::vector<T>& values, TensorOptions options) {
  return tensor(values, std::nullopt, options);
}
template <class T>
Tensor tensor(std::initializer_list<T> values, std::optional<IntArrayRef> shape = std::nullopt,
              TensorOptions options = {}) {
  return tensor(std::vector<T>(values), shape, options);
}
template <class T>
Tensor tensor(std::initializer_list<T> values, TensorOptions options) {
  return tensor(std::vector<T>(values), std::nullopt, options);
}
// A zero-dim tensor.
Tensor scalar_tensor(const Scalar& value, TensorOptions options = {});

// Seeds the generators of every device: every random op is reproducible after this.
void manual_seed(uint64_t seed);

// ---- views ------------------------------------------------------------------------------
Tensor view(const Tensor& self, IntArrayRef size);
Tensor reshape(const Tensor& self, IntArrayRef shape);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);
Tensor expand(const Tensor& self, IntArrayRef size);
Tensor expand_as(const Tensor& self, const Tensor& other);
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
std::vector<Tensor> unbind(const Tensor& self, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim = 0);
// Views of consecutive pieces of the given sizes along dim; the sizes must sum to its size.
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim = 0);
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor contiguous(const Tensor& self);
Tensor contiguous(const Tensor& self, MemoryFormat format);
Tensor clone(const Tensor& self);
Tensor clone(const Tensor& self, MemoryFormat format);
Tensor detach(const Tensor& self);

// ---- copy and cast ----------------------------------------------------------------------
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy = false);
// The options' dtype and device where given, self's otherwise; the options' memory format
// (Preserve if unset: a channels-last tensor stays channels-last).
Tensor to(const Tensor& self, const TensorOptions& options, bool copy = false);
Tensor& fill_(Tensor& self, const Scalar& value);
Tensor& zero_(Tensor& self);

// ---- binary (broadcasting, type promotion) ----------------------------------------------
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor mul(const Tensor& self, const Tensor& other);
Tensor mul(const Tensor& self, const Scalar& other);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, const Scalar& other);
// True division (integers give float32); rounding_mode "trunc" or "floor" keeps the dtype.
Tensor div(const Tensor& self, const Tensor& other);
Tensor div(const Tensor& self, const Scalar& other);
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Scalar& other);
Tensor& div_(Tensor& self, const Tensor& other, std::optional<std::string> rounding_mode);
// Python's %: the result has the divisor's sign.
Tensor remainder(const Tensor& self, const Tensor& other);
Tensor remainder(const Tensor& self, const Scalar& other);
// C's fmod: the result has the dividend's sign.
Tensor fmod(const Tensor& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Scalar& other);
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Tensor& self, const Scalar& exponent);
Tensor pow(const Scalar& self, const Tensor& exponent);
Tensor& pow_(Tensor& self, const Tensor& exponent);
Tensor& pow_(Tensor& self, const Scalar& exponent);
// Elementwise max/min; NaN propagates.
Tensor maximum(const Tensor& self, const Tensor& other);
Tensor minimum(const Tensor& self, const Tensor& other);
Tensor atan2(const Tensor& self, const Tensor& other);

// Note [Float binary functions]: a pointwise function of two tensors in floating point (kind
// FLOAT2 or FLOAT2_M in dispatch/op_table.h) is declared here from its row, with the row's
// comment as its documentation; its CPU and XPU kernels are generated too
// (docs/adding_an_op.md). Hand-written declarations above may add documentation.
#define XTEN_DECLARE_FLOAT2_ROW(kind, name, id, schema, Ret, params, args) \
  XTEN_DECLARE_FLOAT2_##kind(name, Ret, params)
#define XTEN_DECLARE_FLOAT2_FLOAT2(name, Ret, params) Ret name params;
#define XTEN_DECLARE_FLOAT2_FLOAT2_M(name, Ret, params) Ret name params;
#define XTEN_DECLARE_FLOAT2_FN(name, Ret, params)
#define XTEN_DECLARE_FLOAT2_FN_M(name, Ret, params)
#define XTEN_DECLARE_FLOAT2_IN(name, Ret, params)
#define XTEN_DECLARE_FLOAT2_IN_M(name, Ret, params)
#define XTEN_DECLARE_FLOAT2_CUSTOM(name, Ret, params)
XTEN_FORALL_OPS(XTEN_DECLARE_FLOAT2_ROW)
#undef XTEN_DECLARE_FLOAT2_ROW
#undef XTEN_DECLARE_FLOAT2_FLOAT2
#undef XTEN_DECLARE_FLOAT2_FLOAT2_M
#undef XTEN_DECLARE_FLOAT2_FN
#undef XTEN_DECLARE_FLOAT2_FN_M
#undef XTEN_DECLARE_FLOAT2_IN
#undef XTEN_DECLARE_FLOAT2_IN_M
#undef XTEN_DECLARE_FLOAT2_CUSTOM
// Comparisons give bool.
Tensor eq(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Scalar& other);
Tensor ne(const Tensor& self, const Tensor& other);
Tensor ne(const Tensor& self, const Scalar& other);
Tensor lt(const Tensor& self, const Tensor& other);
Tensor lt(const Tensor& self, const Scalar& other);
Tensor le(const Tensor& self, const Tensor& other);
Tensor le(const Tensor& self, const Scalar& other);
Tensor gt(const Tensor& self, const Tensor& other);
Tensor gt(const Tensor& self, const Scalar& other);
Tensor ge(const Tensor& self, const Tensor& other);
Tensor ge(const Tensor& self, const Scalar& other);
Tensor logical_and(const Tensor& self, const Tensor& other);
Tensor logical_or(const Tensor& self, const Tensor& other);
Tensor logical_xor(const Tensor& self, const Tensor& other);
// Integer and bool tensors only.
Tensor bitwise_and(const Tensor& self, const Tensor& other);
Tensor bitwise_or(const Tensor& self, const Tensor& other);
Tensor bitwise_xor(const Tensor& self, const Tensor& other);
// condition ? self : other, elementwise; condition must be bool.
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other);
// Bounds each element to [min, max]; at least one bound must be given.
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min,
               const std::optional<Scalar>& max = std::nullopt);
// self + weight * (end - self); floating dtypes, self and end of one dtype.
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);
// self + value * tensor1 * tensor2, elementwise, the three broadcast together and promoted.
Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2,
               const Scalar& value = 1);

// ---- unary ------------------------------------------------------------------------------
// (name): each has `Tensor name(const Tensor&)`; the in-place list also `Tensor& name_(Tensor&)`.
// As PyTorch: relu and the other activations give NaN for NaN; sign(NaN) is 0.
// clang-format off
#define XTEN_UNARY_INPLACE_OPS(_)                                                                  \
  _(neg) _(abs) _(sign) _(exp) _(exp2) _(log) _(log2) _(log10) _(log1p) _(expm1) _(sqrt)           \
  _(rsqrt) _(reciprocal) _(sin) _(cos) _(tan) _(tanh) _(sigmoid) _(relu) _(silu) _(erf)            \
  _(floor) _(ceil) _(round) _(trunc) _(logical_not) _(bitwise_not)
// clang-format on
#define XTEN_UNARY_OUT_OF_PLACE_OPS(_) _(isnan) _(isinf) _(isfinite)

#define XTEN_DECLARE_UNARY(name) Tensor name(const Tensor& self);
#define XTEN_DECLARE_UNARY_INPLACE(name) Tensor& name##_(Tensor& self);
XTEN_UNARY_INPLACE_OPS(XTEN_DECLARE_UNARY)
XTEN_UNARY_INPLACE_OPS(XTEN_DECLARE_UNARY_INPLACE)
XTEN_UNARY_OUT_OF_PLACE_OPS(XTEN_DECLARE_UNARY)
#undef XTEN_DECLARE_UNARY
#undef XTEN_DECLARE_UNARY_INPLACE

// approximate: "none" (erf) or "tanh".
Tensor gelu(const Tensor& self, const std::string& approximate = "none");
// NaN -> nan, +Inf -> posinf, -Inf -> neginf (defaults: 0, the dtype's max, lowest).
Tensor nan_to_num(const Tensor& self, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

// ---- reductions -------------------------------------------------------------------------
// Sum over `dim` (all dims if empty); integer and bool inputs sum in int64.
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim = false,
           std::optional<ScalarType> dtype = std::nullopt);
// Mean over `dim` (all dims if empty); floating dtypes (or pass dtype).
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);

// Product over `dim` (all if empty); integer and bool inputs multiply in int64.
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
// Largest / smallest values over `dim` (all if empty); NaN propagates.
Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
// The largest element (zero-dim); with dim: (values, indices) along it.
Tensor max(const Tensor& self);
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& self);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
// Index of the first largest / smallest element (of the flattened tensor without dim).
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Whether all / any elements are nonzero, over `dim` (all if empty); bool result.
Tensor all(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor any(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
// Variance / standard deviation over `dim` (all if empty), dividing by N - correction.
Tensor var(const Tensor& self, IntArrayRef dim = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& self, IntArrayRef dim = {}, double correction = 1, bool keepdim = false);
// Vector p-norm over `dim` (all if empty): p = 0, 1, 2, inf, -inf or any other number.
Tensor norm(const Tensor& self, const Scalar& p = 2, IntArrayRef dim = {}, bool keepdim = false);
// p = "fro" (the 2-norm over dim).
Tensor norm(const Tensor& self, const std::string& p, IntArrayRef dim = {}, bool keepdim = false);
inline Tensor norm(const Tensor& self, const char* p, IntArrayRef dim = {}, bool keepdim = false) {
  return norm(self, std::string(p), dim, keepdim);
}
// A numeric p given as a C++ number: an exact match, so that norm(t, 0) does not take the
// literal 0 for a null const char*, and norm(t, -INFINITY) stays a float.
template <class P, std::enable_if_t<std::is_arithmetic_v<P>, int> = 0>
Tensor norm(const Tensor& self, P p, IntArrayRef dim = {}, bool keepdim = false) {
  return norm(self, Scalar(p), dim, keepdim);
}
// log(sum(exp(self))) over `dim`, computed without overflow.
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim = false);
// Running sum / product along `dim`; integer and bool inputs give int64.
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);

// ---- linear algebra (operands of one dtype; Half/BFloat16 accumulate in float) ------------
Tensor mm(const Tensor& self, const Tensor& mat2);
Tensor bmm(const Tensor& self, const Tensor& mat2);
// PyTorch's matmul: dot, mv, mm, or a broadcast batched product, by the operands' dims.
Tensor matmul(const Tensor& self, const Tensor& other);
// beta * self + alpha * (mat1 @ mat2)
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2,
               const Scalar& beta = 1, const Scalar& alpha = 1);
// input @ weight.t() + bias; weight is [out_features, in_features].
Tensor linear(const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt);
// relu(linear(input, weight, bias)) as one op (nn::Sequential's Linear -> ReLU; the CPU kernel
// adds the bias and applies relu inside the product: docs/cpu_kernels.md, "Fused post-ops").
Tensor _linear_relu(const Tensor& input, const Tensor& weight,
                    const std::optional<Tensor>& bias = std::nullopt);
Tensor dot(const Tensor& self, const Tensor& other);
Tensor mv(const Tensor& self, const Tensor& vec);
Tensor outer(const Tensor& self, const Tensor& vec2);

// ---- activations --------------------------------------------------------------------------
// exp(x) / sum(exp(x)) along dim, computed in the input (or given) floating dtype.
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// Their backward, from the output y and its gradient g along dim (the gradient of an input of
// input_dtype): softmax y * (g - sum(g * y)), log_softmax g - exp(y) * sum(g). Fused kernels on
// CPU and XPU; with create_graph, autograd differentiates their composites (docs/autograd.md).
// relu's backward: grad_output where self > threshold, 0 elsewhere (a NaN in self passes it).
Tensor threshold_backward(const Tensor& grad_output, const Tensor& self, const Scalar& threshold);
// gelu's backward: grad_output * d/dx gelu(self), exact ('none') or the tanh form's.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self,
                     const std::string& approximate = "none");
// sigmoid's and tanh's backward from their output y: grad_output * y * (1 - y) and
// grad_output * (1 - y * y); silu's from its input x: grad_output * s * (1 + x * (1 - s)) with
// s = sigmoid(x).
Tensor sigmoid_backward(const Tensor& grad_output, const Tensor& output);
Tensor tanh_backward(const Tensor& grad_output, const Tensor& output);
Tensor silu_backward(const Tensor& grad_output, const Tensor& self);
// The backward of leaky_relu, elu, softplus and hardswish (PyTorch's schemas): grad_output times
// the derivative at self (elu: at self_or_result, its result where is_result; leaky_relu: the
// result's sign is self's for a positive slope, the only one self_is_result takes).
Tensor leaky_relu_backward(const Tensor& grad_output, const Tensor& self,
                           const Scalar& negative_slope, bool self_is_result);
Tensor elu_backward(const Tensor& grad_output, const Scalar& alpha, const Scalar& scale,
                    const Scalar& input_scale, bool is_result, const Tensor& self_or_result);
Tensor softplus_backward(const Tensor& grad_output, const Tensor& self, const Scalar& beta,
                         const Scalar& threshold);
Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self);
Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                              ScalarType input_dtype);
Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                  ScalarType input_dtype);
// Zeroes elements with probability p and scales the rest by 1/(1-p) when training.
Tensor dropout(const Tensor& self, double p = 0.5, bool train = true);
// softmax(query @ key^T * scale + mask) @ value over [..., L, E] queries and [..., S, E] keys,
// PyTorch's semantics (docs/attention.md): attn_mask boolean (true attends) or additive,
// broadcast to [..., L, S]; is_causal masks key j > query i; scale defaults to 1/sqrt(E);
// enable_gqa lets key and value have fewer heads (dim -3) than the query, a divisor of them.
// The fused flash kernels run where they can, the math path elsewhere (Note [Attention paths]).
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt,
                                    double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false);
// The paths scaled_dot_product_attention may take on this thread (torch.nn.attention's
// sdpa_kernel): by default every path, the flash kernel first.
enum class SdpBackend { kFlash, kMath };
class SdpBackendGuard {
 public:
  explicit SdpBackendGuard(std::initializer_list<SdpBackend> allowed);
  ~SdpBackendGuard();
  SdpBackendGuard(const SdpBackendGuard&) = delete;
  SdpBackendGuard& operator=(const SdpBackendGuard&) = delete;

 private:
  unsigned prev_;
};
// The math path, written with other ops: (output, attention weights [..., L, S]).
std::tuple<Tensor, Tensor> _scaled_dot_product_attention_math(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& attn_mask = std::nullopt, double dropout_p = 0.0,
    bool is_causal = false, std::optional<double> scale = std::nullopt, bool enable_gqa = false);
// The fused kernel over [B, H, L, E] queries and [B, Hk, S, E] keys (H a multiple of Hk), no
// L x S matrix: (output [B, H, L, Ev], logsumexp [B, H, L] in float32, float64 for float64).
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& attn_mask, bool is_causal, double scale);
// Its gradients (query, key, value) from the saved output and logsumexp.
std::tuple<Tensor, Tensor, Tensor> _scaled_dot_product_flash_attention_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& out, const Tensor& logsumexp, const std::optional<Tensor>& attn_mask,
    bool is_causal, double scale);
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1,
           const Scalar& input_scale = 1);
// log(1 + exp(beta x)) / beta; x itself where beta x > threshold.
Tensor softplus(const Tensor& self, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor hardswish(const Tensor& self);
// x > 0 ? x : weight * x, weight one value or one per channel (dim 1).
Tensor prelu(const Tensor& self, const Tensor& weight);

// ---- convolution and pooling (3-D unbatched or 4-D batched inputs, NCHW) -------------------
// A convolution's padding: numbers ({1, 1}, or 1 for every dim) or "same" / "valid".
class ConvPadding {
 public:
  ConvPadding(std::initializer_list<int64_t> v) : values_(IntArrayRef(v)) {}  // NOLINT
  ConvPadding(IntArrayRef v) : values_(v) {}                                  // NOLINT
  ConvPadding(int64_t v) : values_({v}) {}                                    // NOLINT
  ConvPadding(int v) : values_({v}) {}                                        // NOLINT
  ConvPadding(const char* mode) : mode_(mode) {}                              // NOLINT
  ConvPadding(std::string mode) : mode_(std::move(mode)) {}                   // NOLINT
  bool is_mode() const { return !mode_.empty(); }
  const std::string& mode() const { return mode_; }
  IntArrayRef values() const { return values_; }

 private:
  DimVector values_;
  std::string mode_;
};

// A 1-value stride/padding/dilation applies to every spatial dim.
Tensor conv2d(const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt, IntArrayRef stride = {1, 1},
              const ConvPadding& padding = {0, 0}, IntArrayRef dilation = {1, 1},
              int64_t groups = 1);
// The weight gradient of conv2d (batched input [n, c, h, w], grad_output [n, o, ho, wo]), or of
// conv_transpose2d (transposed: input and grad_output its input and output gradient): oneDNN's
// backward-weights on the CPU (conv2d), a convolution over the batch elsewhere and where autograd
// records it (docs/autograd.md).
Tensor conv2d_backward_weight(const Tensor& grad_output, const Tensor& input,
                              IntArrayRef weight_size, IntArrayRef stride, IntArrayRef padding,
                              IntArrayRef dilation, int64_t groups, bool transposed = false);
Tensor conv1d(const Tensor& input, const Tensor& weight,
              const std::optional<Tensor>& bias = std::nullopt, IntArrayRef stride = {1},
              const ConvPadding& padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
// weight: [in_channels, out_channels / groups, kh, kw].
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias = std::nullopt,
                        IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0},
                        IntArrayRef output_padding = {0, 0}, int64_t groups = 1,
                        IntArrayRef dilation = {1, 1});
// stride defaults to kernel_size.
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, IntArrayRef dilation = {1}, bool ceil_mode = false);
// (values, indices): indices are flat positions in each input H x W plane.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {},
                                                   IntArrayRef padding = {0},
                                                   IntArrayRef dilation = {1},
                                                   bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = {0}, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// The input gradients of max_pool2d_with_indices (each gradient added at its index) and of
// avg_pool2d (spread over its window, over its divisor). Of `self` only the sizes, dtype and
// device are read.
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self,
                                        IntArrayRef kernel_size, IntArrayRef stride,
                                        IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices);
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel_size,
                           IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                           bool count_include_pad, std::optional<int64_t> divisor_override);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
// Bilinear resize of [N, C, H, W] to [N, C, output_size] (PyTorch's interpolate with
// mode="bilinear"; Note [Bilinear taps] in kernels/common/window.h).
Tensor upsample_bilinear2d(const Tensor& input, IntArrayRef output_size,
                           bool align_corners = false);
// Pads the last dims: pad = (last_left, last_right, second_last_left, ...); mode "constant"
// (with value, default 0), "reflect" or "replicate".
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode = "constant",
           std::optional<double> value = std::nullopt);

// ---- joining and indexing ----------------------------------------------------------------
// Joins along dim in the promoted dtype (1-D empty tensors are skipped).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins along a new dim; all tensors have one shape.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Elements at `index` (1-D, int64 or int32) along dim.
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
// out[i][j] = self[index[i][j]][j] (dim 0); index has self's number of dims.
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
// A copy of self with self[index[i][j]][j] = src[i][j] (dim 0), or the value; scatter_add adds.
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// self where mask is false, value where it is true (self's dtype).
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value);
// The elements where mask (broadcast) is true, as 1-D.
Tensor masked_select(const Tensor& self, const Tensor& mask);
// Advanced indexing of the leading dims: int64/int32 index tensors (broadcast together) or
// bool masks, e.g. index(t, {rows, cols}) or index(t, {t > 0}).
Tensor index(const Tensor& self, const std::vector<Tensor>& indices);
// self[indices] = values (or += with accumulate; repeated indices then add up).
Tensor& index_put_(Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false);
// Coordinates of the nonzero elements: [count, dims], int64.
Tensor nonzero(const Tensor& self);
// (values, indices) sorted along dim (stable; NaN last ascending, first descending).
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& self, int64_t dim = -1, bool descending = false);
// The k largest (or smallest) along dim, in order when sorted.
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim = -1,
                                bool largest = true, bool sorted = true);
// Rows of weight [num, dim] picked by integer indices; padding_idx only matters for training.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);
// [.., num_classes] int64 with a 1 at each class (num_classes -1: max + 1).
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);
// The tensor tiled repeats[i] times along each dim.
Tensor repeat(const Tensor& self, IntArrayRef repeats);
Tensor flip(const Tensor& self, IntArrayRef dims);
// Shifts elements along dims, wrapping around (no dims: over the flattened tensor).
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims = {});
// The lower / upper triangle of the last two dims (relative to `diagonal`); the rest is 0.
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor triu(const Tensor& self, int64_t diagonal = 0);

// ---- normalization --------------------------------------------------------------------------
// Per-channel (dim 1) normalization. Training: batch statistics, and running_mean/var (if
// given) updated in place with momentum (running_var unbiased). Evaluation: running stats.
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, const std::optional<Tensor>& running_mean,
                  const std::optional<Tensor>& running_var, bool training, double momentum = 0.1,
                  double eps = 1e-5);
// Normalizes over the last dims given by normalized_shape.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
// The gradients (input, weight, bias) of batch_norm and layer_norm for the output gradient
// grad_output, the statistics recomputed from the input (training) or taken from the running
// ones (evaluation). The weight and bias gradients are returned whether or not weight is given.
// Fused kernels on CPU and XPU; with create_graph, autograd differentiates their composites.
std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(const Tensor& grad_output,
                                                       const Tensor& input,
                                                       const std::optional<Tensor>& weight,
                                                       const std::optional<Tensor>& running_mean,
                                                       const std::optional<Tensor>& running_var,
                                                       bool training, double eps = 1e-5);
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward(const Tensor& grad_output,
                                                       const Tensor& input,
                                                       IntArrayRef normalized_shape,
                                                       const std::optional<Tensor>& weight,
                                                       double eps = 1e-5);
Tensor group_norm(const Tensor& input, int64_t num_groups,
                  const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);

// ---- losses (reduction: "none", "mean" or "sum") -----------------------------------------
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
// mse_loss's gradient with respect to `self`: 2 (self - target) grad_output, over the element
// count for "mean"; in the shape self and target broadcast to.
Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::string& reduction = "mean");
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean");
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
// input: probabilities in [0, 1].
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const std::optional<Tensor>& weight = std::nullopt,
                            const std::string& reduction = "mean");
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight = std::nullopt,
                                        const std::optional<Tensor>& pos_weight = std::nullopt,
                                        const std::string& reduction = "mean");
// input: log-probabilities; reduction may also be "batchmean".
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction = "mean",
              bool log_target = false);
// input: log-probabilities [N, C, ...] or [C]; target: int64 class indices.
Tensor nll_loss(const Tensor& input, const Tensor& target,
                const std::optional<Tensor>& weight = std::nullopt,
                const std::string& reduction = "mean", int64_t ignore_index = -100);
// nll_loss's gradient with respect to `self` (its input), given the gradient of its output.
Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight = std::nullopt,
                         const std::string& reduction = "mean", int64_t ignore_index = -100);
// input: logits [N, C, ...] or [C]; target: int64 class indices, or class probabilities of input's
// shape.
Tensor cross_entropy(const Tensor& input, const Tensor& target,
                     const std::optional<Tensor>& weight = std::nullopt,
                     const std::string& reduction = "mean", int64_t ignore_index = -100,
                     double label_smoothing = 0.0);

// ---- multi-tensor ops of the optimizers and GradScaler -----------------------------------
// PyTorch's: multiplies every tensor of `self` by inv_scale in place and sets found_inf to 1
// if any value was inf or NaN. found_inf and inv_scale: one-element float32 tensors on the
// tensors' device; the tensors: floating, non-overlapping and dense (contiguous), any mix of
// dtypes. One parallel loop on the CPU, one kernel launch per dtype on the XPU.
void _amp_foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& self,
                                                const Tensor& found_inf, const Tensor& inv_scale);
// GradScaler's scale update (PyTorch's, on the scale's device; no value comes back to the host):
// if found_inf[0] is not 0, self (the scale) *= scale_backoff_factor and growth_tracker = 0;
// else growth_tracker + 1, and when that reaches growth_interval, self *= scale_growth_factor
// (kept only if finite) and growth_tracker = 0. self, found_inf: one-element float32 tensors;
// growth_tracker: a one-element int32 tensor; all on one device.
void _amp_update_scale_(const Tensor& self, const Tensor& growth_tracker, const Tensor& found_inf,
                        double scale_growth_factor, double scale_backoff_factor,
                        int64_t growth_interval);
// PyTorch's fused SGD step over `self` (the parameters) with their gradients and, when
// momentum != 0, their momentum buffers (is_first_step: the buffers start as the gradient).
// The update of optim::SGD (docs/optim.md); the tensors as for the op above, each gradient and
// buffer of its parameter's shape and dtype. The fused steps below take GradScaler's found_inf
// (a one-element float32 tensor on the parameters' device): where its value is not 0 the
// kernel changes nothing, read on the device (docs/optim.md, "GradScaler").
void _fused_sgd_(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& momentum_buffer_list, double weight_decay,
                 double momentum, double lr, double dampening, bool nesterov, bool maximize,
                 bool is_first_step, const std::optional<Tensor>& found_inf = std::nullopt);
// The fused Adam (decoupled: AdamW) step: state_steps is a float64 CPU tensor with each
// parameter's step count (already incremented); max_exp_avg_sqs is empty unless amsgrad.
void _fused_adam_(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& exp_avgs, const std::vector<Tensor>& exp_avg_sqs,
                  const std::vector<Tensor>& max_exp_avg_sqs, const Tensor& state_steps, double lr,
                  double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                  bool maximize, bool decoupled,
                  const std::optional<Tensor>& found_inf = std::nullopt);
// The fused RMSprop step (xten's; PyTorch has only its foreach form): grad_avgs when centered,
// momentum_buffer_list when momentum > 0, each empty otherwise.
void _fused_rmsprop_(const std::vector<Tensor>& self, const std::vector<Tensor>& grads,
                     const std::vector<Tensor>& square_avgs, const std::vector<Tensor>& grad_avgs,
                     const std::vector<Tensor>& momentum_buffer_list, double lr, double alpha,
                     double eps, double weight_decay, double momentum, bool centered, bool maximize,
                     const std::optional<Tensor>& found_inf = std::nullopt);

// ---- dispatcher introspection -----------------------------------------------------------
// The dispatch table of an op ("add.Tensor") as text: each key's kernel and where it came from.
std::string dump_dispatch_table(const std::string& op);

}  // namespace xten
