#pragma once
// Tensor: a refcounted handle to a TensorImpl. Copying a Tensor copies the handle, never the
// data. The accessors below are defined in core/tensor.cpp; the op methods (add, view, ...)
// forward to the free functions of dispatch/ops.h: most are generated from the op table
// (dispatch/op_table.h, kinds FN_M and IN_M) in dispatch/tensor_methods.cpp, which fails to
// compile if a declaration here and its row disagree; so core/ itself knows nothing of
// dispatch.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <xten/core/array_ref.h>
#include <xten/core/error.h>
#include <xten/core/quantizer.h>
#include <xten/core/scalar.h>
#include <xten/core/tensor_impl.h>
#include <xten/core/tensor_options.h>

namespace xten {

namespace autograd {
class Node;
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- accessors -------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  IntArrayRef sizes() const { return impl_->sizes(); }
  IntArrayRef strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return impl_->dim(); }
  int64_t ndimension() const { return dim(); }
  int64_t numel() const { return impl_->numel(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_xpu() const { return device().is_xpu(); }
  bool is_floating_point() const { return is_floating_type(dtype()); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  // Dense in the order `format` names (docs/memory_format.md); Preserve is an error.
  bool is_contiguous(MemoryFormat format) const;
  // ChannelsLast for a 4-d tensor whose strides order its dims as NHWC does (dense or not) and
  // not also as NCHW; Contiguous otherwise. What Preserve keeps.
  MemoryFormat suggest_memory_format() const;
  int64_t storage_offset() const { return impl_->storage_offset(); }
  size_t element_size() const { return xten::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const Storage& storage() const { return impl_->storage(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  DispatchKeySet key_set() const { return impl_->key_set(); }
  bool requires_grad() const { return impl_->requires_grad(); }
  Tensor& set_requires_grad(bool r) { return requires_grad_(r); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  long use_count() const { return impl_.use_count(); }

  // The address of element 0; data_ptr<T>() checks that T is the dtype's C++ type.
  void* data_ptr() const { return impl_->data(); }
  template <class T>
  T* data_ptr() const;
  // The single element, converted to T; synchronizes a device tensor. Errors unless numel()==1.
  template <class T>
  T item() const;
  Scalar item() const;

  std::string toString() const;

  // --- views (share storage) ---------------------------------------------------------------
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor expand(IntArrayRef size) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  // t[i]: libtorch's indexing operator, select(0, i) (a view; negative i counts from the end).
  // The index is an integer, an integral Scalar, or a 0-dim integral tensor (its value); a
  // floating index is a compile error (float, double) or a TypeError (Scalar, Tensor). Advanced
  // indexing with index tensors is index({...}).
  Tensor operator[](int64_t index) const;
  Tensor operator[](const Scalar& index) const;
  Tensor operator[](const Tensor& index) const;
  template <class F, std::enable_if_t<std::is_floating_point_v<F>, int> = 0>
  Tensor operator[](F index) const = delete;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor as_strided(IntArrayRef size, IntArrayRef stride,
                    std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor contiguous() const;
  // This tensor if it is dense in `format`, else a copy that is (differentiable).
  Tensor contiguous(MemoryFormat format) const;
  // A copy; clone() is clone(Preserve): the layout is kept (channels-last, or the order of a
  // transposed or permuted tensor's dims: docs/memory_format.md).
  Tensor clone() const;
  Tensor clone(MemoryFormat format) const;
  Tensor detach() const;

  // --- quantized tensors (docs/quantization.md; int_repr and dequantize are ops of
  // quantization/, the accessors read the quantizer and raise TypeError naming themselves for
  // a tensor that is not quantized or not of that scheme) -----------------------------------
  bool is_quantized() const { return is_quantized_type(dtype()); }
  QScheme qscheme() const;
  double q_scale() const;
  int64_t q_zero_point() const;
  Tensor q_per_channel_scales() const;       // float64 [C]
  Tensor q_per_channel_zero_points() const;  // int64 [C]
  int64_t q_per_channel_axis() const;
  Tensor int_repr() const;    // the integers, as uint8 / int8 / int32 (a copy)
  Tensor dequantize() const;  // float32

  // --- autograd (autograd/tensor_autograd.cpp, docs/autograd.md) -------------------------
  // Asks for a gradient: only a leaf of a floating dtype can.
  Tensor& requires_grad_(bool requires_grad = true);
  // The gradient accumulated by backward() (undefined until one reaches this tensor): assignable
  // (`t.grad() = xten::Tensor()` clears it).
  Tensor& grad() const;
  Tensor& mutable_grad() const { return grad(); }
  // A leaf: made by the user, not by a recorded op (every tensor that does not require grad).
  bool is_leaf() const;
  // The node that made this tensor (null for leaves); name() reads like "MulBackward".
  std::shared_ptr<autograd::Node> grad_fn() const;
  int64_t output_nr() const;
  // Keeps the gradient of a non-leaf in grad() when backward() passes through it.
  void retain_grad() const;
  bool retains_grad() const;
  // Cuts this tensor off its history (in place): it becomes a leaf that does not require grad.
  Tensor& detach_();
  // Takes new_data's values, dtype, device and shape in place: every handle to this tensor sees
  // them, and its autograd state (requires_grad, grad) stays (nn::Module::to moves parameters so).
  void set_data(const Tensor& new_data) const;
  // Computes the gradient of this tensor with respect to the graph's leaves and accumulates it
  // in their grad(). `gradient` is needed unless this tensor has one element.
  void backward(const Tensor& gradient = Tensor(), std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  // A function of this tensor's gradient, run when the gradient is computed; it may return a
  // replacement (or an undefined tensor to keep the gradient). Returns a handle for remove_hook.
  int64_t register_hook(std::function<Tensor(const Tensor&)> hook) const;
  // For a leaf that requires grad: `hook(leaf)` runs after each backward pass has accumulated
  // into leaf.grad() (PyTorch's register_post_accumulate_grad_hook; DDP starts its reductions
  // so). Returns a handle for remove_hook.
  int64_t register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void remove_hook(int64_t handle) const;
  // The version counter shared with the views of this tensor (bumped by every in-place op).
  uint32_t _version() const { return impl_->version(); }

  // --- copy and cast -----------------------------------------------------------------------
  Tensor& copy_(const Tensor& src);
  Tensor to(ScalarType dtype, bool copy = false) const;
  Tensor to(Device device, bool copy = false) const;
  Tensor to(Device device, ScalarType dtype, bool copy = false) const;
  Tensor to(const char* device, bool copy = false) const { return to(Device(device), copy); }
  Tensor to(DeviceType type, bool copy = false) const { return to(Device(type), copy); }
  Tensor to(const TensorOptions& options, bool copy = false) const;
  // contiguous(format), or a copy in this tensor's own layout for Preserve when `copy`.
  Tensor to(MemoryFormat format, bool copy = false) const;
  Tensor& fill_(const Scalar& value);
  Tensor& zero_();

  // --- binary ------------------------------------------------------------------------------
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1);
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1);
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1);
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const Scalar& other);
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor div(const Tensor& other, std::optional<std::string> rounding_mode) const;
  Tensor& div_(const Tensor& other);
  Tensor& div_(const Scalar& other);
  Tensor& div_(const Tensor& other, std::optional<std::string> rounding_mode);
  Tensor remainder(const Tensor& other) const;
  Tensor remainder(const Scalar& other) const;
  Tensor fmod(const Tensor& other) const;
  Tensor fmod(const Scalar& other) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor& pow_(const Tensor& exponent);
  Tensor& pow_(const Scalar& exponent);
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor atan2(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor logical_xor(const Tensor& other) const;
  Tensor bitwise_and(const Tensor& other) const;
  Tensor bitwise_or(const Tensor& other) const;
  Tensor bitwise_xor(const Tensor& other) const;
  Tensor clamp(const std::optional<Scalar>& min,
               const std::optional<Scalar>& max = std::nullopt) const;
  Tensor& clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max = std::nullopt);
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor addcmul(const Tensor& tensor1, const Tensor& tensor2, const Scalar& value = 1) const;

  // --- unary (the op table's unary rows, dispatch/op_table.h) -------------------------------
  Tensor neg() const;
  Tensor& neg_();
  Tensor abs() const;
  Tensor& abs_();
  Tensor sign() const;
  Tensor& sign_();
  Tensor exp() const;
  Tensor& exp_();
  Tensor exp2() const;
  Tensor& exp2_();
  Tensor log() const;
  Tensor& log_();
  Tensor log2() const;
  Tensor& log2_();
  Tensor log10() const;
  Tensor& log10_();
  Tensor log1p() const;
  Tensor& log1p_();
  Tensor expm1() const;
  Tensor& expm1_();
  Tensor sqrt() const;
  Tensor& sqrt_();
  Tensor rsqrt() const;
  Tensor& rsqrt_();
  Tensor reciprocal() const;
  Tensor& reciprocal_();
  Tensor sin() const;
  Tensor& sin_();
  Tensor cos() const;
  Tensor& cos_();
  Tensor tan() const;
  Tensor& tan_();
  Tensor tanh() const;
  Tensor& tanh_();
  Tensor sigmoid() const;
  Tensor& sigmoid_();
  Tensor relu() const;
  Tensor& relu_();
  Tensor silu() const;
  Tensor& silu_();
  Tensor erf() const;
  Tensor& erf_();
  Tensor floor() const;
  Tensor& floor_();
  Tensor ceil() const;
  Tensor& ceil_();
  Tensor round() const;
  Tensor& round_();
  Tensor trunc() const;
  Tensor& trunc_();
  Tensor logical_not() const;
  Tensor& logical_not_();
  Tensor bitwise_not() const;
  Tensor& bitwise_not_();
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor gelu(const std::string& approximate = "none") const;
  Tensor nan_to_num(std::optional<double> nan = std::nullopt,
                    std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;

  // --- reductions --------------------------------------------------------------------------
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false,
             std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;

  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor all(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor any(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor var(IntArrayRef dim = {}, double correction = 1, bool keepdim = false) const;
  Tensor std(IntArrayRef dim = {}, double correction = 1, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2, IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // --- linear algebra, activations, indexing (see dispatch/ops.h) -------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& mat2) const;
  Tensor bmm(const Tensor& mat2) const;
  Tensor dot(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor outer(const Tensor& vec2) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value);
  Tensor masked_select(const Tensor& mask) const;
  Tensor index(const std::vector<Tensor>& indices) const;
  Tensor& index_put_(const std::vector<Tensor>& indices, const Tensor& values,
                     bool accumulate = false);
  Tensor nonzero() const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;

  // --- operators ---------------------------------------------------------------------------
  Tensor operator-() const { return neg(); }
  Tensor operator~() const { return bitwise_not(); }
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }

 private:
  void check_item(const char* op) const;
  std::shared_ptr<TensorImpl> impl_;
};

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

template <class T>
T* Tensor::data_ptr() const {
  XTEN_CHECK(defined(), ValueError, "data_ptr", "the tensor is undefined");
  XTEN_CHECK(scalar_type_of_v<T> == dtype(), TypeError, "data_ptr",
             "expected a tensor of dtype {} for data_ptr<{}>, but the tensor has dtype {}",
             to_string(scalar_type_of_v<T>), to_string(scalar_type_of_v<T>), to_string(dtype()));
  return static_cast<T*>(data_ptr());
}

template <class T>
T Tensor::item() const {
  return item().to<T>();
}

}  // namespace xten
