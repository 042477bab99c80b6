// The declaration of every op (its schema), and the front ends of dispatch/ops.h.
// A front end finds its op once (a function-local static) and calls through the Dispatcher.
// Scalar overloads wrap the Scalar as a zero-dim "wrapped number" tensor (core/meta.h),
// which promotes as a Scalar, and call the Tensor op.
#include <xten/dispatch/ops.h>

#include <xten/core/generator.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>

namespace xten {

LIBRARY(xten, m) {
  // factories (kernels/cpu/factory.cpp; composites in kernels/composite/factory.cpp)
  m.def("empty(int[] size, ScalarType dtype, Device device) -> Tensor");
  m.def("full(int[] size, Scalar fill_value, ScalarType dtype, Device device) -> Tensor");
  m.def("arange(Scalar start, Scalar end, Scalar step, ScalarType dtype, Device device) -> Tensor");
  m.def("linspace(Scalar start, Scalar end, int steps, ScalarType dtype, Device device) -> Tensor");
  m.def("eye(int n, int m, ScalarType dtype, Device device) -> Tensor");
  m.def("rand(int[] size, ScalarType dtype, Device device) -> Tensor");
  m.def("randn(int[] size, ScalarType dtype, Device device) -> Tensor");
  m.def("randint(int low, int high, int[] size, ScalarType dtype, Device device) -> Tensor");
  // views (kernels/composite/view.cpp)
  m.def("view(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("reshape(Tensor(a) self, int[] shape) -> Tensor(a)");
  m.def("flatten(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)");
  m.def("squeeze(Tensor(a) self) -> Tensor(a)");
  m.def("squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("t(Tensor(a) self) -> Tensor(a)");
  m.def("expand(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)");
  m.def(
      "slice(Tensor(a) self, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor(a)");
  m.def("select(Tensor(a) self, int dim, int index) -> Tensor(a)");
  m.def("unbind(Tensor(a) self, int dim=0) -> Tensor(a)[]");
  m.def("split(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]");
  m.def("split_with_sizes(Tensor(a) self, int[] split_sizes, int dim=0) -> Tensor(a)[]");
  m.def("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]");
  m.def(
      "as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> "
      "Tensor(a)");
  m.def("contiguous(Tensor(a) self) -> Tensor(a)");
  m.def("clone(Tensor self) -> Tensor");
  m.def("detach(Tensor(a) self) -> Tensor(a)");
  // copy and cast (kernels/cpu/copy.cpp)
  m.def("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)");
  m.def("to(Tensor(a) self, Device device, ScalarType dtype, bool copy=False) -> Tensor(a)");
  m.def("fill_(Tensor(a!) self, Scalar value) -> Tensor(a!)");
  // binary (kernels/cpu/binary.cpp)
  m.def("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  m.def("sub_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  m.def("mul.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("div.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor");
  m.def("div_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  m.def("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode) -> Tensor(a!)");
  m.def("remainder.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("fmod.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor");
  m.def("pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)");
  m.def("maximum(Tensor self, Tensor other) -> Tensor");
  m.def("minimum(Tensor self, Tensor other) -> Tensor");
  m.def("atan2(Tensor self, Tensor other) -> Tensor");
  m.def("eq.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ne.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("lt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("le.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("gt.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("ge.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("logical_and(Tensor self, Tensor other) -> Tensor");
  m.def("logical_or(Tensor self, Tensor other) -> Tensor");
  m.def("logical_xor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor");
  m.def("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
  m.def("clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
  m.def("clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)");
  m.def("lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor");
  // unary (kernels/cpu/unary.cpp)
#define XTEN_DEF_UNARY(name) m.def(#name "(Tensor self) -> Tensor");
#define XTEN_DEF_UNARY_INPLACE(name) m.def(#name "_(Tensor(a!) self) -> Tensor(a!)");
  XTEN_UNARY_INPLACE_OPS(XTEN_DEF_UNARY)
  XTEN_UNARY_INPLACE_OPS(XTEN_DEF_UNARY_INPLACE)
  XTEN_UNARY_OUT_OF_PLACE_OPS(XTEN_DEF_UNARY)
#undef XTEN_DEF_UNARY
#undef XTEN_DEF_UNARY_INPLACE
  m.def("gelu(Tensor self, *, str approximate='none') -> Tensor");
  m.def(
      "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor");
  // reductions (kernels/cpu/reduce.cpp)
  m.def(
      "sum.dim_IntList(Tensor self, int[] dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  m.def(
      "mean.dim(Tensor self, int[] dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  m.def(
      "prod.dim_IntList(Tensor self, int[] dim, bool keepdim=False, *, ScalarType? dtype=None) -> "
      "Tensor");
  m.def("amax(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("amin(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("max(Tensor self) -> Tensor");
  m.def("min(Tensor self) -> Tensor");
  m.def("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  m.def("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  m.def("all.dims(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("any.dims(Tensor self, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def(
      "var.correction(Tensor self, int[] dim=[], float correction=1, bool keepdim=False) -> "
      "Tensor");
  m.def(
      "std.correction(Tensor self, int[] dim=[], float correction=1, bool keepdim=False) -> "
      "Tensor");
  m.def("norm.ScalarOpt_dim(Tensor self, Scalar p, int[] dim=[], bool keepdim=False) -> Tensor");
  m.def("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor");
  m.def("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  m.def("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor");
  // linear algebra (kernels/cpu/linalg.cpp; composites in kernels/composite/linalg.cpp)
  m.def("mm(Tensor self, Tensor mat2) -> Tensor");
  m.def("bmm(Tensor self, Tensor mat2) -> Tensor");
  m.def("matmul(Tensor self, Tensor other) -> Tensor");
  m.def("addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor");
  m.def(
      "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
      "Tensor");
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");
  m.def("dot(Tensor self, Tensor tensor) -> Tensor");
  m.def("mv(Tensor self, Tensor vec) -> Tensor");
  m.def("outer(Tensor self, Tensor vec2) -> Tensor");
  // activations (kernels/cpu/activation.cpp; composites in kernels/composite/activation.cpp)
  m.def("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  m.def("dropout(Tensor input, float p, bool train) -> Tensor");
  m.def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor");
  m.def("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor");
  m.def("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor");
  m.def("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor");
  m.def("hardswish(Tensor self) -> Tensor");
  m.def("prelu(Tensor self, Tensor weight) -> Tensor");
  // convolution and pooling (kernels/cpu/conv.cpp, pool.cpp; composites in composite/conv.cpp)
  m.def(
      "conv2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, int[2] "
      "dilation, int groups) -> Tensor");
  m.def(
      "conv2d.padding(Tensor input, Tensor weight, Tensor? bias, int[2] stride, str padding, "
      "int[2] dilation, int groups) -> Tensor");
  m.def(
      "conv1d(Tensor input, Tensor weight, Tensor? bias, int[1] stride, int[1] padding, int[1] "
      "dilation, int groups) -> Tensor");
  m.def(
      "conv1d.padding(Tensor input, Tensor weight, Tensor? bias, int[1] stride, str padding, "
      "int[1] dilation, int groups) -> Tensor");
  m.def(
      "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias, int[2] stride, int[2] padding, "
      "int[2] output_padding, int groups, int[2] dilation) -> Tensor");
  m.def(
      "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, "
      "bool ceil_mode) -> Tensor");
  m.def(
      "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, "
      "int[2] dilation, bool ceil_mode) -> (Tensor, Tensor)");
  m.def(
      "avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, bool ceil_mode, "
      "bool count_include_pad, int? divisor_override) -> Tensor");
  m.def("adaptive_avg_pool2d(Tensor self, int[2] output_size) -> Tensor");
  m.def("adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)");
  m.def("pad(Tensor self, int[] pad, str mode='constant', float? value=None) -> Tensor");
  // joining and indexing (kernels/cpu/index.cpp; composites in kernels/composite/index.cpp)
  m.def("cat(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("stack(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("index_select(Tensor self, int dim, Tensor index) -> Tensor");
  m.def("gather(Tensor self, int dim, Tensor index) -> Tensor");
  m.def("scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  m.def("scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor");
  m.def("scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  m.def("masked_fill(Tensor self, Tensor mask, Scalar value) -> Tensor");
  m.def("masked_select(Tensor self, Tensor mask) -> Tensor");
  m.def("index.Tensor(Tensor self, Tensor[] indices) -> Tensor");
  m.def(
      "index_put_(Tensor(a!) self, Tensor[] indices, Tensor values, bool accumulate=False) -> "
      "Tensor(a!)");
  m.def(
      "_index_put_rows_(Tensor(a!) self, Tensor index, Tensor values, bool accumulate) -> "
      "Tensor(a!)");
  m.def("nonzero(Tensor self) -> Tensor");
  m.def("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)");
  m.def("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor");
  m.def(
      "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor "
      "values, Tensor indices)");
  m.def("embedding(Tensor weight, Tensor indices, int padding_idx=-1) -> Tensor");
  m.def("one_hot(Tensor self, int num_classes=-1) -> Tensor");
  m.def("repeat(Tensor self, int[] repeats) -> Tensor");
  m.def("flip(Tensor self, int[] dims) -> Tensor");
  m.def("roll(Tensor self, int[] shifts, int[] dims=[]) -> Tensor");
  m.def("tril(Tensor self, int diagonal=0) -> Tensor");
  m.def("triu(Tensor self, int diagonal=0) -> Tensor");
  // normalization and losses (kernels/composite/norm.cpp, loss.cpp)
  m.def(
      "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? "
      "running_var, bool training, float momentum, float eps) -> Tensor");
  m.def(
      "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05) -> Tensor");
  m.def(
      "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float "
      "eps=1e-05) -> Tensor");
  m.def("mse_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor");
  m.def("l1_loss(Tensor self, Tensor target, str reduction='mean') -> Tensor");
  m.def(
      "smooth_l1_loss(Tensor self, Tensor target, str reduction='mean', float beta=1.0) -> Tensor");
  m.def("huber_loss(Tensor self, Tensor target, str reduction='mean', float delta=1.0) -> Tensor");
  m.def(
      "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean') "
      "-> Tensor");
  m.def(
      "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? "
      "pos_weight=None, str reduction='mean') -> Tensor");
  m.def(
      "kl_div(Tensor self, Tensor target, str reduction='mean', *, bool log_target=False) -> "
      "Tensor");
  m.def(
      "nll_loss(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int "
      "ignore_index=-100) -> Tensor");
  m.def(
      "cross_entropy(Tensor self, Tensor target, Tensor? weight=None, str reduction='mean', int "
      "ignore_index=-100, float label_smoothing=0.0) -> Tensor");
}

// Finds the op once per front end; Sig is its C++ signature (checked against the kernels').
#define XTEN_OP(name, ...) \
  static const auto op = Dispatcher::singleton().find("xten::" name).typed<__VA_ARGS__>()

using TT = Tensor(const Tensor&, const Tensor&);  // the common binary signature

// ---- factories --------------------------------------------------------------------------
Tensor empty(IntArrayRef size, ScalarType dtype, Device device) {
  XTEN_OP("empty", Tensor(IntArrayRef, ScalarType, Device));
  return op.call(size, dtype, device);
}
Tensor empty(IntArrayRef size, TensorOptions o) {
  return empty(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
namespace {
Tensor full_impl(IntArrayRef size, const Scalar& value, ScalarType dtype, Device device) {
  XTEN_OP("full", Tensor(IntArrayRef, const Scalar&, ScalarType, Device));
  return op.call(size, value, dtype, device);
}
}  // namespace
Tensor zeros(IntArrayRef size, ScalarType dtype, Device device) {
  return full_impl(size, 0, dtype, device);
}
Tensor zeros(IntArrayRef size, TensorOptions o) {
  return zeros(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor ones(IntArrayRef size, ScalarType dtype, Device device) {
  return full_impl(size, 1, dtype, device);
}
Tensor ones(IntArrayRef size, TensorOptions o) {
  return ones(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor full(IntArrayRef size, const Scalar& value, TensorOptions o) {
  // Like PyTorch: without a dtype, the value's kind picks bool, int64 or the default float.
  const ScalarType dtype = o.has_dtype()               ? o.dtype()
                           : value.is_floating_point() ? kFloat
                                                       : value.type();
  return full_impl(size, value, dtype, o.device()).set_requires_grad(o.requires_grad());
}
Tensor arange(const Scalar& end, TensorOptions o) {
  return arange(0, end, 1, o);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  XTEN_OP("arange", Tensor(const Scalar&, const Scalar&, const Scalar&, ScalarType, Device));
  const bool integral = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
  const ScalarType dtype = o.has_dtype() ? o.dtype() : integral ? kLong : kFloat;
  return op.call(start, end, step, dtype, o.device()).set_requires_grad(o.requires_grad());
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions o) {
  XTEN_OP("linspace", Tensor(const Scalar&, const Scalar&, int64_t, ScalarType, Device));
  return op.call(start, end, steps, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  XTEN_OP("eye", Tensor(int64_t, int64_t, ScalarType, Device));
  return op.call(n, m.value_or(n), o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor rand(IntArrayRef size, TensorOptions o) {
  XTEN_OP("rand", Tensor(IntArrayRef, ScalarType, Device));
  return op.call(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor randn(IntArrayRef size, TensorOptions o) {
  XTEN_OP("randn", Tensor(IntArrayRef, ScalarType, Device));
  return op.call(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor randint(int64_t high, IntArrayRef size, TensorOptions o) {
  return randint(0, high, size, o);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions o) {
  XTEN_OP("randint", Tensor(int64_t, int64_t, IntArrayRef, ScalarType, Device));
  return op.call(low, high, size, o.dtype(), o.device());
}
namespace {
TensorOptions like(const Tensor& self, const std::optional<TensorOptions>& o) {
  TensorOptions r = self.options();
  if (o && o->has_dtype()) r = r.dtype(o->dtype());
  if (o && o->has_device()) r = r.device(o->device());
  return r.requires_grad(o && o->requires_grad());
}
}  // namespace
Tensor empty_like(const Tensor& self, std::optional<TensorOptions> o) {
  return empty(self.sizes(), like(self, o));
}
Tensor zeros_like(const Tensor& self, std::optional<TensorOptions> o) {
  return zeros(self.sizes(), like(self, o));
}
Tensor ones_like(const Tensor& self, std::optional<TensorOptions> o) {
  return ones(self.sizes(), like(self, o));
}
Tensor full_like(const Tensor& self, const Scalar& value, std::optional<TensorOptions> o) {
  return full(self.sizes(), value, like(self, o));
}
Tensor rand_like(const Tensor& self, std::optional<TensorOptions> o) {
  return rand(self.sizes(), like(self, o));
}
Tensor randn_like(const Tensor& self, std::optional<TensorOptions> o) {
  return randn(self.sizes(), like(self, o));
}
Tensor scalar_tensor(const Scalar& value, TensorOptions o) {
  return full({}, value, o);
}

// ---- views ------------------------------------------------------------------------------
Tensor view(const Tensor& self, IntArrayRef size) {
  XTEN_OP("view", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, size);
}
Tensor reshape(const Tensor& self, IntArrayRef shape) {
  XTEN_OP("reshape", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, shape);
}
Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  XTEN_OP("flatten", Tensor(const Tensor&, int64_t, int64_t));
  return op.call(self, start_dim, end_dim);
}
Tensor squeeze(const Tensor& self) {
  XTEN_OP("squeeze", Tensor(const Tensor&));
  return op.call(self);
}
Tensor squeeze(const Tensor& self, int64_t dim) {
  XTEN_OP("squeeze.dim", Tensor(const Tensor&, int64_t));
  return op.call(self, dim);
}
Tensor unsqueeze(const Tensor& self, int64_t dim) {
  XTEN_OP("unsqueeze", Tensor(const Tensor&, int64_t));
  return op.call(self, dim);
}
Tensor permute(const Tensor& self, IntArrayRef dims) {
  XTEN_OP("permute", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, dims);
}
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  XTEN_OP("transpose", Tensor(const Tensor&, int64_t, int64_t));
  return op.call(self, dim0, dim1);
}
Tensor t(const Tensor& self) {
  XTEN_OP("t", Tensor(const Tensor&));
  return op.call(self);
}
Tensor expand(const Tensor& self, IntArrayRef size) {
  XTEN_OP("expand", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, size);
}
Tensor expand_as(const Tensor& self, const Tensor& other) {
  return expand(self, other.sizes());
}
Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  XTEN_OP("narrow", Tensor(const Tensor&, int64_t, int64_t, int64_t));
  return op.call(self, dim, start, length);
}
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start,
             std::optional<int64_t> end, int64_t step) {
  XTEN_OP("slice",
          Tensor(const Tensor&, int64_t, std::optional<int64_t>, std::optional<int64_t>, int64_t));
  return op.call(self, dim, start, end, step);
}
Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  XTEN_OP("select", Tensor(const Tensor&, int64_t, int64_t));
  return op.call(self, dim, index);
}
std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  XTEN_OP("unbind", std::vector<Tensor>(const Tensor&, int64_t));
  return op.call(self, dim);
}
std::vector<Tensor> split(const Tensor& self, int64_t split_size, int64_t dim) {
  XTEN_OP("split", std::vector<Tensor>(const Tensor&, int64_t, int64_t));
  return op.call(self, split_size, dim);
}
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  XTEN_OP("split_with_sizes", std::vector<Tensor>(const Tensor&, IntArrayRef, int64_t));
  return op.call(self, split_sizes, dim);
}
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(self, split_sizes, dim);
}
std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  XTEN_OP("chunk", std::vector<Tensor>(const Tensor&, int64_t, int64_t));
  return op.call(self, chunks, dim);
}
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset) {
  XTEN_OP("as_strided", Tensor(const Tensor&, IntArrayRef, IntArrayRef, std::optional<int64_t>));
  return op.call(self, size, stride, storage_offset);
}
Tensor contiguous(const Tensor& self) {
  XTEN_OP("contiguous", Tensor(const Tensor&));
  return op.call(self);
}
Tensor clone(const Tensor& self) {
  XTEN_OP("clone", Tensor(const Tensor&));
  return op.call(self);
}
Tensor detach(const Tensor& self) {
  XTEN_OP("detach", Tensor(const Tensor&));
  return op.call(self);
}

// ---- copy and cast ----------------------------------------------------------------------
Tensor& copy_(Tensor& self, const Tensor& src) {
  XTEN_OP("copy_", TT);
  op.call(self, src);
  return self;
}
Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy) {
  XTEN_OP("to", Tensor(const Tensor&, Device, ScalarType, bool));
  return op.call(self, device, dtype, copy);
}
Tensor& fill_(Tensor& self, const Scalar& value) {
  XTEN_OP("fill_", Tensor(const Tensor&, const Scalar&));
  op.call(self, value);
  return self;
}
Tensor& zero_(Tensor& self) {
  return fill_(self, 0);
}

// ---- binary -----------------------------------------------------------------------------
using TTS = Tensor(const Tensor&, const Tensor&, const Scalar&);
using TTMode = Tensor(const Tensor&, const Tensor&, std::optional<std::string>);

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  XTEN_OP("add.Tensor", TTS);
  return op.call(self, other, alpha);
}
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add(self, scalar_to_tensor(other), alpha);
}
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  XTEN_OP("add_.Tensor", TTS);
  op.call(self, other, alpha);
  return self;
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha) {
  XTEN_OP("sub.Tensor", TTS);
  return op.call(self, other, alpha);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return sub(self, scalar_to_tensor(other), alpha);
}
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  XTEN_OP("sub_.Tensor", TTS);
  op.call(self, other, alpha);
  return self;
}
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string> mode) {
  XTEN_OP("div.Tensor_mode", TTMode);
  return op.call(self, other, std::move(mode));
}
Tensor& div_(Tensor& self, const Tensor& other, std::optional<std::string> mode) {
  XTEN_OP("div_.Tensor_mode", TTMode);
  op.call(self, other, std::move(mode));
  return self;
}

// Binary ops of the common signature: functional, Scalar overload (and in-place).
#define XTEN_BINARY_FRONT_END(fn, name)                \
  Tensor fn(const Tensor& self, const Tensor& other) { \
    XTEN_OP(name, TT);                                 \
    return op.call(self, other);                       \
  }
#define XTEN_BINARY_SCALAR_FRONT_END(fn)               \
  Tensor fn(const Tensor& self, const Scalar& other) { \
    return fn(self, scalar_to_tensor(other));          \
  }
#define XTEN_BINARY_INPLACE_FRONT_END(fn, name)   \
  Tensor& fn(Tensor& self, const Tensor& other) { \
    XTEN_OP(name, TT);                            \
    op.call(self, other);                         \
    return self;                                  \
  }
XTEN_BINARY_FRONT_END(mul, "mul.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(mul)
XTEN_BINARY_INPLACE_FRONT_END(mul_, "mul_.Tensor")
XTEN_BINARY_FRONT_END(div, "div.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(div)
XTEN_BINARY_INPLACE_FRONT_END(div_, "div_.Tensor")
XTEN_BINARY_FRONT_END(remainder, "remainder.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(remainder)
XTEN_BINARY_FRONT_END(fmod, "fmod.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(fmod)
XTEN_BINARY_FRONT_END(pow, "pow.Tensor_Tensor")
XTEN_BINARY_SCALAR_FRONT_END(pow)
XTEN_BINARY_INPLACE_FRONT_END(pow_, "pow_.Tensor")
XTEN_BINARY_FRONT_END(maximum, "maximum")
XTEN_BINARY_FRONT_END(minimum, "minimum")
XTEN_BINARY_FRONT_END(atan2, "atan2")
XTEN_BINARY_FRONT_END(eq, "eq.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(eq)
XTEN_BINARY_FRONT_END(ne, "ne.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(ne)
XTEN_BINARY_FRONT_END(lt, "lt.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(lt)
XTEN_BINARY_FRONT_END(le, "le.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(le)
XTEN_BINARY_FRONT_END(gt, "gt.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(gt)
XTEN_BINARY_FRONT_END(ge, "ge.Tensor")
XTEN_BINARY_SCALAR_FRONT_END(ge)
XTEN_BINARY_FRONT_END(logical_and, "logical_and")
XTEN_BINARY_FRONT_END(logical_or, "logical_or")
XTEN_BINARY_FRONT_END(logical_xor, "logical_xor")
XTEN_BINARY_FRONT_END(bitwise_and, "bitwise_and.Tensor")
XTEN_BINARY_FRONT_END(bitwise_or, "bitwise_or.Tensor")
XTEN_BINARY_FRONT_END(bitwise_xor, "bitwise_xor.Tensor")
#undef XTEN_BINARY_SCALAR_FRONT_END
#undef XTEN_BINARY_INPLACE_FRONT_END

Tensor pow(const Scalar& self, const Tensor& exponent) {
  return pow(scalar_to_tensor(self), exponent);
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  XTEN_OP("where.self", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(condition, self, other);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other) {
  return where(condition, scalar_to_tensor(self), scalar_to_tensor(other));
}
using ClampSig = Tensor(const Tensor&, const std::optional<Scalar>&, const std::optional<Scalar>&);
Tensor clamp(const Tensor& self, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max) {
  XTEN_OP("clamp", ClampSig);
  return op.call(self, min, max);
}
Tensor& clamp_(Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  XTEN_OP("clamp_", ClampSig);
  op.call(self, min, max);
  return self;
}
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  XTEN_OP("lerp.Tensor", Tensor(const Tensor&, const Tensor&, const Tensor&));
  return op.call(self, end, weight);
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return lerp(self, end, scalar_to_tensor(weight));
}

// ---- unary ------------------------------------------------------------------------------
#define XTEN_UNARY_FRONT_END(name)         \
  Tensor name(const Tensor& self) {        \
    XTEN_OP(#name, Tensor(const Tensor&)); \
    return op.call(self);                  \
  }
#define XTEN_UNARY_INPLACE_FRONT_END(name)     \
  Tensor& name##_(Tensor& self) {              \
    XTEN_OP(#name "_", Tensor(const Tensor&)); \
    op.call(self);                             \
    return self;                               \
  }
XTEN_UNARY_INPLACE_OPS(XTEN_UNARY_FRONT_END)
XTEN_UNARY_INPLACE_OPS(XTEN_UNARY_INPLACE_FRONT_END)
XTEN_UNARY_OUT_OF_PLACE_OPS(XTEN_UNARY_FRONT_END)
#undef XTEN_UNARY_FRONT_END
#undef XTEN_UNARY_INPLACE_FRONT_END

Tensor gelu(const Tensor& self, const std::string& approximate) {
  XTEN_OP("gelu", Tensor(const Tensor&, const std::string&));
  return op.call(self, approximate);
}
Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  XTEN_OP("nan_to_num", Tensor(const Tensor&, std::optional<double>, std::optional<double>,
                               std::optional<double>));
  return op.call(self, nan, posinf, neginf);
}

// ---- reductions -------------------------------------------------------------------------
using ReduceSig = Tensor(const Tensor&, IntArrayRef, bool, std::optional<ScalarType>);
Tensor sum(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  XTEN_OP("sum.dim_IntList", ReduceSig);
  return op.call(self, dim, keepdim, dtype);
}
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return sum(self, {}, false, dtype);
}
Tensor mean(const Tensor& self, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  XTEN_OP("mean.dim", ReduceSig);
  return op.call(self, dim, keepdim, dtype);
}
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return mean(self, {}, false, dtype);
}

// ---- host data in, random state ----------------------------------------------------------
template <class T>
Tensor tensor(const std::vector<T>& values, std::optional<IntArrayRef> shape,
              TensorOptions options) {
  const DimVector sizes =
      shape ? DimVector(*shape) : DimVector{static_cast<int64_t>(values.size())};
  const int64_t numel = check_sizes("tensor", sizes);
  XTEN_CHECK(numel == static_cast<int64_t>(values.size()), ValueError, "tensor",
             "shape {} holds {} elements, but {} values were given", sizes, numel, values.size());
  Tensor out = empty(sizes, scalar_type_of_v<T>, Device(kCPU));
  T* p = out.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];  // vector<bool> has no data()
  ScalarType literal = scalar_type_of_v<T>;
  if (literal == kInt) literal = kLong;
  if (literal == kDouble) literal = kFloat;
  const ScalarType dtype = options.has_dtype() ? options.dtype() : literal;
  return out.to(dtype).to(options.device()).set_requires_grad(options.requires_grad());
}
#define XTEN_INSTANTIATE_TENSOR(T, N) \
  template Tensor tensor<T>(const std::vector<T>&, std::optional<IntArrayRef>, TensorOptions);
XTEN_FORALL_SCALAR_TYPES(XTEN_INSTANTIATE_TENSOR)
#undef XTEN_INSTANTIATE_TENSOR

Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, ScalarType dtype) {
  XTEN_CHECK(sizes.size() == strides.size(), ValueError, "from_blob",
             "sizes {} and strides {} must have the same length", sizes, strides);
  const int64_t numel = check_sizes("from_blob", sizes);
  XTEN_CHECK(data != nullptr || numel == 0, ValueError, "from_blob",
             "data is a null pointer for a tensor of {} elements", numel);
  int64_t extent = numel == 0 ? 0 : 1;
  for (size_t i = 0; i < sizes.size() && numel > 0; ++i) {
    XTEN_CHECK(strides[i] >= 0, ValueError, "from_blob", "strides must be >= 0, but got {}",
               strides);
    extent += (sizes[i] - 1) * strides[i];
  }
  Storage storage(DataPtr(
                      data, nullptr, [](void*) {}, Device(kCPU)),
                  static_cast<size_t>(extent) * element_size(dtype));
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dtype, sizes, strides, 0));
}
Tensor from_blob(void* data, IntArrayRef sizes, ScalarType dtype) {
  return from_blob(data, sizes, contiguous_strides(sizes), dtype);
}

void manual_seed(uint64_t seed) {
  manual_seed_all_generators(seed);
}

using DimsKeepSig = Tensor(const Tensor&, IntArrayRef, bool);
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  XTEN_OP("prod.dim_IntList", ReduceSig);
  return op.call(self, {}, false, dtype);
}
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  XTEN_OP("prod.dim_IntList", ReduceSig);
  return op.call(self, dim, keepdim, dtype);
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  XTEN_OP("amax", DimsKeepSig);
  return op.call(self, dim, keepdim);
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  XTEN_OP("amin", DimsKeepSig);
  return op.call(self, dim, keepdim);
}
Tensor max(const Tensor& self) {
  XTEN_OP("max", Tensor(const Tensor&));
  return op.call(self);
}
Tensor min(const Tensor& self) {
  XTEN_OP("min", Tensor(const Tensor&));
  return op.call(self);
}
using ValuesIndices = std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool);
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  XTEN_OP("max.dim", ValuesIndices);
  return op.call(self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  XTEN_OP("min.dim", ValuesIndices);
  return op.call(self, dim, keepdim);
}
using ArgSig = Tensor(const Tensor&, std::optional<int64_t>, bool);
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  XTEN_OP("argmax", ArgSig);
  return op.call(self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  XTEN_OP("argmin", ArgSig);
  return op.call(self, dim, keepdim);
}
Tensor all(const Tensor& self, IntArrayRef dim, bool keepdim) {
  XTEN_OP("all.dims", DimsKeepSig);
  return op.call(self, dim, keepdim);
}
Tensor any(const Tensor& self, IntArrayRef dim, bool keepdim) {
  XTEN_OP("any.dims", DimsKeepSig);
  return op.call(self, dim, keepdim);
}
using VarSig = Tensor(const Tensor&, IntArrayRef, double, bool);
Tensor var(const Tensor& self, IntArrayRef dim, double correction, bool keepdim) {
  XTEN_OP("var.correction", VarSig);
  return op.call(self, dim, correction, keepdim);
}
Tensor std(const Tensor& self, IntArrayRef dim, double correction, bool keepdim) {
  XTEN_OP("std.correction", VarSig);
  return op.call(self, dim, correction, keepdim);
}
Tensor norm(const Tensor& self, const Scalar& p, IntArrayRef dim, bool keepdim) {
  XTEN_OP("norm.ScalarOpt_dim", Tensor(const Tensor&, const Scalar&, IntArrayRef, bool));
  return op.call(self, p, dim, keepdim);
}
Tensor norm(const Tensor& self, const std::string& p, IntArrayRef dim, bool keepdim) {
  XTEN_CHECK(p == "fro", ValueError, "norm", "p must be a number or 'fro', but got '{}'", p);
  return norm(self, 2, dim, keepdim);
}
Tensor logsumexp(const Tensor& self, IntArrayRef dim, bool keepdim) {
  XTEN_OP("logsumexp", DimsKeepSig);
  return op.call(self, dim, keepdim);
}
using ScanSig = Tensor(const Tensor&, int64_t, std::optional<ScalarType>);
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  XTEN_OP("cumsum", ScanSig);
  return op.call(self, dim, dtype);
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  XTEN_OP("cumprod", ScanSig);
  return op.call(self, dim, dtype);
}

// ---- linear algebra ---------------------------------------------------------------------
XTEN_BINARY_FRONT_END(mm, "mm")
XTEN_BINARY_FRONT_END(bmm, "bmm")
XTEN_BINARY_FRONT_END(matmul, "matmul")
XTEN_BINARY_FRONT_END(dot, "dot")
XTEN_BINARY_FRONT_END(mv, "mv")
XTEN_BINARY_FRONT_END(outer, "outer")
using AddmmSig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Scalar&, const Scalar&);
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta,
             const Scalar& alpha) {
  XTEN_OP("addmm", AddmmSig);
  return op.call(self, m1, m2, beta, alpha);
}
Tensor baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta,
               const Scalar& alpha) {
  XTEN_OP("baddbmm", AddmmSig);
  return op.call(self, b1, b2, beta, alpha);
}
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  XTEN_OP("linear", Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&));
  return op.call(input, weight, bias);
}

// ---- activations ------------------------------------------------------------------------
Tensor softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  XTEN_OP("softmax", ScanSig);
  return op.call(self, dim, dtype);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<ScalarType> dtype) {
  XTEN_OP("log_softmax", ScanSig);
  return op.call(self, dim, dtype);
}
Tensor dropout(const Tensor& self, double p, bool train) {
  XTEN_OP("dropout", Tensor(const Tensor&, double, bool));
  return op.call(self, p, train);
}
Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  XTEN_OP("hardtanh", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op.call(self, min_val, max_val);
}
Tensor leaky_relu(const Tensor& self, const Scalar& slope) {
  XTEN_OP("leaky_relu", Tensor(const Tensor&, const Scalar&));
  return op.call(self, slope);
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale,
           const Scalar& input_scale) {
  XTEN_OP("elu", Tensor(const Tensor&, const Scalar&, const Scalar&, const Scalar&));
  return op.call(self, alpha, scale, input_scale);
}
Tensor softplus(const Tensor& self, const Scalar& beta, const Scalar& threshold) {
  XTEN_OP("softplus", Tensor(const Tensor&, const Scalar&, const Scalar&));
  return op.call(self, beta, threshold);
}
Tensor hardswish(const Tensor& self) {
  XTEN_OP("hardswish", Tensor(const Tensor&));
  return op.call(self);
}
XTEN_BINARY_FRONT_END(prelu, "prelu")

// ---- convolution and pooling --------------------------------------------------------------
namespace {
// (a) -> (a, a): a one-value spatial argument applies to both dims.
DimVector pair_of(IntArrayRef v) {
  return v.size() == 1 ? DimVector{v[0], v[0]} : DimVector(v);
}
}  // namespace
using ConvSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                       IntArrayRef, IntArrayRef, int64_t);
using ConvPadSig = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, IntArrayRef,
                          const std::string&, IntArrayRef, int64_t);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, const ConvPadding& padding, IntArrayRef dilation,
              int64_t groups) {
  if (padding.is_mode()) {
    XTEN_OP("conv2d.padding", ConvPadSig);
    return op.call(input, weight, bias, pair_of(stride), padding.mode(), pair_of(dilation), groups);
  }
  XTEN_OP("conv2d", ConvSig);
  return op.call(input, weight, bias, pair_of(stride), pair_of(padding.values()), pair_of(dilation),
                 groups);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, const ConvPadding& padding, IntArrayRef dilation,
              int64_t groups) {
  if (padding.is_mode()) {
    XTEN_OP("conv1d.padding", ConvPadSig);
    return op.call(input, weight, bias, stride, padding.mode(), dilation, groups);
  }
  XTEN_OP("conv1d", ConvSig);
  return op.call(input, weight, bias, stride, padding.values(), dilation, groups);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  XTEN_OP("conv_transpose2d", Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&,
                                     IntArrayRef, IntArrayRef, IntArrayRef, int64_t, IntArrayRef));
  return op.call(input, weight, bias, pair_of(stride), pair_of(padding), pair_of(output_padding),
                 groups, pair_of(dilation));
}
using PoolSig = Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, IntArrayRef, bool);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  XTEN_OP("max_pool2d", PoolSig);
  return op.call(input, kernel, stride, padding, dilation, ceil_mode);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  XTEN_OP("max_pool2d_with_indices",
          std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef,
                                     IntArrayRef, bool));
  return op.call(input, kernel, stride, padding, dilation, ceil_mode);
}
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  XTEN_OP("avg_pool2d", Tensor(const Tensor&, IntArrayRef, IntArrayRef, IntArrayRef, bool, bool,
                               std::optional<int64_t>));
  return op.call(input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  XTEN_OP("adaptive_avg_pool2d", Tensor(const Tensor&, IntArrayRef));
  return op.call(input, pair_of(output_size));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  XTEN_OP("adaptive_max_pool2d", std::tuple<Tensor, Tensor>(const Tensor&, IntArrayRef));
  return op.call(input, pair_of(output_size));
}
Tensor pad(const Tensor& input, IntArrayRef pad, const std::string& mode,
           std::optional<double> value) {
  XTEN_OP("pad", Tensor(const Tensor&, IntArrayRef, const std::string&, std::optional<double>));
  return op.call(input, pad, mode, value);
}

// ---- joining and indexing ---------------------------------------------------------------
using ListDimSig = Tensor(const std::vector<Tensor>&, int64_t);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  // Checked here too: with no tensor there is no device to dispatch on.
  XTEN_CHECK(!tensors.empty(), ValueError, "cat", "expected a non-empty list of tensors");
  XTEN_OP("cat", ListDimSig);
  return op.call(tensors, dim);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  XTEN_CHECK(!tensors.empty(), ValueError, "stack", "expected a non-empty list of tensors");
  XTEN_OP("stack", ListDimSig);
  return op.call(tensors, dim);
}
using DimIndexSig = Tensor(const Tensor&, int64_t, const Tensor&);
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  XTEN_OP("index_select", DimIndexSig);
  return op.call(self, dim, index);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  XTEN_OP("gather", DimIndexSig);
  return op.call(self, dim, index);
}
using ScatterSig = Tensor(const Tensor&, int64_t, const Tensor&, const Tensor&);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  XTEN_OP("scatter.src", ScatterSig);
  return op.call(self, dim, index, src);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  XTEN_OP("scatter.value", Tensor(const Tensor&, int64_t, const Tensor&, const Scalar&));
  return op.call(self, dim, index, value);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  XTEN_OP("scatter_add", ScatterSig);
  return op.call(self, dim, index, src);
}
Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  XTEN_OP("masked_fill", TTS);
  return op.call(self, mask, value);
}
XTEN_BINARY_FRONT_END(masked_select, "masked_select")
Tensor index(const Tensor& self, const std::vector<Tensor>& indices) {
  XTEN_OP("index.Tensor", Tensor(const Tensor&, const std::vector<Tensor>&));
  return op.call(self, indices);
}
Tensor& index_put_(Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate) {
  XTEN_OP("index_put_", Tensor(const Tensor&, const std::vector<Tensor>&, const Tensor&, bool));
  op.call(self, indices, values, accumulate);
  return self;
}
Tensor nonzero(const Tensor& self) {
  XTEN_OP("nonzero", Tensor(const Tensor&));
  return op.call(self);
}
std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending) {
  XTEN_OP("sort", std::tuple<Tensor, Tensor>(const Tensor&, int64_t, bool));
  return op.call(self, dim, descending);
}
Tensor argsort(const Tensor& self, int64_t dim, bool descending) {
  XTEN_OP("argsort", Tensor(const Tensor&, int64_t, bool));
  return op.call(self, dim, descending);
}
std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted) {
  XTEN_OP("topk", std::tuple<Tensor, Tensor>(const Tensor&, int64_t, int64_t, bool, bool));
  return op.call(self, k, dim, largest, sorted);
}
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  XTEN_OP("embedding", Tensor(const Tensor&, const Tensor&, int64_t));
  return op.call(weight, indices, padding_idx);
}
Tensor one_hot(const Tensor& self, int64_t num_classes) {
  XTEN_OP("one_hot", Tensor(const Tensor&, int64_t));
  return op.call(self, num_classes);
}
Tensor repeat(const Tensor& self, IntArrayRef repeats) {
  XTEN_OP("repeat", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, repeats);
}
Tensor flip(const Tensor& self, IntArrayRef dims) {
  XTEN_OP("flip", Tensor(const Tensor&, IntArrayRef));
  return op.call(self, dims);
}
Tensor roll(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  XTEN_OP("roll", Tensor(const Tensor&, IntArrayRef, IntArrayRef));
  return op.call(self, shifts, dims);
}
Tensor tril(const Tensor& self, int64_t diagonal) {
  XTEN_OP("tril", Tensor(const Tensor&, int64_t));
  return op.call(self, diagonal);
}
Tensor triu(const Tensor& self, int64_t diagonal) {
  XTEN_OP("triu", Tensor(const Tensor&, int64_t));
  return op.call(self, diagonal);
}

// ---- normalization and losses -----------------------------------------------------------
using OptT = std::optional<Tensor>;
Tensor batch_norm(const Tensor& input, const OptT& weight, const OptT& bias,
                  const OptT& running_mean, const OptT& running_var, bool training, double momentum,
                  double eps) {
  XTEN_OP("batch_norm", Tensor(const Tensor&, const OptT&, const OptT&, const OptT&, const OptT&,
                               bool, double, double));
  return op.call(input, weight, bias, running_mean, running_var, training, momentum, eps);
}
Tensor layer_norm(const Tensor& input, IntArrayRef shape, const OptT& weight, const OptT& bias,
                  double eps) {
  XTEN_OP("layer_norm", Tensor(const Tensor&, IntArrayRef, const OptT&, const OptT&, double));
  return op.call(input, shape, weight, bias, eps);
}
Tensor group_norm(const Tensor& input, int64_t groups, const OptT& weight, const OptT& bias,
                  double eps) {
  XTEN_OP("group_norm", Tensor(const Tensor&, int64_t, const OptT&, const OptT&, double));
  return op.call(input, groups, weight, bias, eps);
}
using LossSig = Tensor(const Tensor&, const Tensor&, const std::string&);
Tensor mse_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  XTEN_OP("mse_loss", LossSig);
  return op.call(input, target, reduction);
}
Tensor l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction) {
  XTEN_OP("l1_loss", LossSig);
  return op.call(input, target, reduction);
}
using LossParamSig = Tensor(const Tensor&, const Tensor&, const std::string&, double);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                      double beta) {
  XTEN_OP("smooth_l1_loss", LossParamSig);
  return op.call(input, target, reduction, beta);
}
Tensor huber_loss(const Tensor& input, const Tensor& target, const std::string& reduction,
                  double delta) {
  XTEN_OP("huber_loss", LossParamSig);
  return op.call(input, target, reduction, delta);
}
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const OptT& weight,
                            const std::string& reduction) {
  XTEN_OP("binary_cross_entropy",
          Tensor(const Tensor&, const Tensor&, const OptT&, const std::string&));
  return op.call(input, target, weight, reduction);
}
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const OptT& weight, const OptT& pos_weight,
                                        const std::string& reduction) {
  XTEN_OP("binary_cross_entropy_with_logits",
          Tensor(const Tensor&, const Tensor&, const OptT&, const OptT&, const std::string&));
  return op.call(input, target, weight, pos_weight, reduction);
}
Tensor kl_div(const Tensor& input, const Tensor& target, const std::string& reduction,
              bool log_target) {
  XTEN_OP("kl_div", Tensor(const Tensor&, const Tensor&, const std::string&, bool));
  return op.call(input, target, reduction, log_target);
}
Tensor nll_loss(const Tensor& input, const Tensor& target, const OptT& weight,
                const std::string& reduction, int64_t ignore_index) {
  XTEN_OP("nll_loss",
          Tensor(const Tensor&, const Tensor&, const OptT&, const std::string&, int64_t));
  return op.call(input, target, weight, reduction, ignore_index);
}
Tensor cross_entropy(const Tensor& input, const Tensor& target, const OptT& weight,
                     const std::string& reduction, int64_t ignore_index, double label_smoothing) {
  XTEN_OP("cross_entropy",
          Tensor(const Tensor&, const Tensor&, const OptT&, const std::string&, int64_t, double));
  return op.call(input, target, weight, reduction, ignore_index, label_smoothing);
}

std::string dump_dispatch_table(const std::string& op) {
  return Dispatcher::singleton().dump_table(op.find("::") == std::string::npos ? "xten::" + op
                                                                               : op);
}

}  // namespace xten
