// The declaration of every op (from the op table, dispatch/op_table.h), the ops:: handles,
// and the front ends of dispatch/ops.h: generated from the table where they only forward
// (at the bottom of this file), written here where they compute arguments (options, pairs,
// checks) or overload an op (Scalar arguments wrapped as zero-dim "wrapped number" tensors,
// core/meta.h, which promote as Scalars).
#include <xten/dispatch/ops.h>

#include <xten/core/generator.h>
#include <xten/core/meta.h>
#include <xten/dispatch/library.h>
#include <xten/dispatch/op_handles.h>

namespace xten {

LIBRARY(xten, m) {
#define XTEN_DEF_OP(kind, name, id, schema, Ret, params, args) m.def<ops::id::Sig>(schema);
  XTEN_FORALL_OPS(XTEN_DEF_OP)
#undef XTEN_DEF_OP
}

namespace {
// "add.Tensor(Tensor self, ...) -> Tensor" -> "xten::add.Tensor"
std::string declared_name(const char* schema) {
  const std::string s(schema);
  return "xten::" + s.substr(0, s.find('('));
}
}  // namespace

#define XTEN_DEFINE_OP_HANDLE(kind, name, id, schema, Ret, params, args)                    \
  const TypedOperatorHandle<ops::id::Sig>& ops::id::handle() {                              \
    static const auto h = Dispatcher::singleton().find(declared_name(schema)).typed<Sig>(); \
    return h;                                                                               \
  }
XTEN_FORALL_OPS(XTEN_DEFINE_OP_HANDLE)
#undef XTEN_DEFINE_OP_HANDLE

// ---- factories --------------------------------------------------------------------------
Tensor empty(IntArrayRef size, TensorOptions o) {
  const MemoryFormat format = o.memory_format_opt().value_or(MemoryFormat::Contiguous);
  XTEN_CHECK(format != MemoryFormat::Preserve, ValueError, "empty",
             "preserve_format needs a tensor whose layout to keep: use empty_like");
  Tensor t = empty(size, o.dtype(), o.device());
  if (format == MemoryFormat::ChannelsLast)
    t = restride_fresh(t, strides_for_format("empty", size, format));
  return t.set_requires_grad(o.requires_grad());
}
namespace {
Tensor full_impl(IntArrayRef size, const Scalar& value, ScalarType dtype, Device device) {
  return ops::full::handle().call(size, value, dtype, device);
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
  const bool integral = start.is_integral(true) && end.is_integral(true) && step.is_integral(true);
  const ScalarType dtype = o.has_dtype() ? o.dtype() : integral ? kLong : kFloat;
  return ops::arange::handle()
      .call(start, end, step, dtype, o.device())
      .set_requires_grad(o.requires_grad());
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions o) {
  return ops::linspace::handle()
      .call(start, end, steps, o.dtype(), o.device())
      .set_requires_grad(o.requires_grad());
}
Tensor eye(int64_t n, std::optional<int64_t> m, TensorOptions o) {
  return ops::eye::handle()
      .call(n, m.value_or(n), o.dtype(), o.device())
      .set_requires_grad(o.requires_grad());
}
Tensor rand(IntArrayRef size, TensorOptions o) {
  return ops::rand::handle().call(size, o.dtype(), o.device()).set_requires_grad(o.requires_grad());
}
Tensor randn(IntArrayRef size, TensorOptions o) {
  return ops::randn::handle()
      .call(size, o.dtype(), o.device())
      .set_requires_grad(o.requires_grad());
}
Tensor randint(int64_t high, IntArrayRef size, TensorOptions o) {
  return randint(0, high, size, o);
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, TensorOptions o) {
  return ops::randint::handle().call(low, high, size, o.dtype(), o.device());
}
namespace {
// self's dtype, device and layout (Preserve: a channels-last self gives channels-last) where
// the options leave them unset.
TensorOptions like(const Tensor& self, const std::optional<TensorOptions>& o) {
  TensorOptions r = self.options();
  if (o && o->has_dtype()) r = r.dtype(o->dtype());
  if (o && o->has_device()) r = r.device(o->device());
  MemoryFormat format =
      o ? o->memory_format_opt().value_or(MemoryFormat::Preserve) : MemoryFormat::Preserve;
  if (format == MemoryFormat::Preserve) format = self.suggest_memory_format();
  return r.requires_grad(o && o->requires_grad()).memory_format(format);
}
// Note [Preserved layout]: where the options name no layout, a copy-like result takes self's:
// channels-last where self suggests it (`like`), and otherwise, for a self that is not
// contiguous (transposed, permuted, a slice of one), its dims densely in the order its strides
// give (pointwise_dim_order), as PyTorch's preserve_format keeps a transposed matrix's layout.
// Empty: contiguous or channels-last, which `like` gives.
std::optional<DimVector> preserved_order(const Tensor& self, const std::optional<TensorOptions>& o,
                                         const TensorOptions& r) {
  if ((o && o->memory_format_opt()) || r.memory_format_opt() == MemoryFormat::ChannelsLast ||
      self.dim() < 2 || self.is_contiguous())
    return std::nullopt;
  const DimVector order = pointwise_dim_order(self.sizes(), {&self});
  for (size_t d = 0; d < order.size(); ++d)
    if (order[d] != static_cast<int64_t>(d)) return order;
  return std::nullopt;
}
// empty(...) in the layout Note [Preserved layout] gives.
Tensor empty_like_impl(const Tensor& self, const std::optional<TensorOptions>& o) {
  const TensorOptions r = like(self, o);
  const std::optional<DimVector> order = preserved_order(self, o, r);
  if (!order) return empty(self.sizes(), r);
  const Tensor t = empty(self.sizes(), r.requires_grad(false));
  return restride_fresh(t, dense_strides(self.sizes(), *order))
      .set_requires_grad(r.requires_grad());
}
// full(...) in that layout: the op, or the fill of a fresh channels-last or permuted tensor.
Tensor full_like_impl(const Tensor& self, const Scalar& value,
                      const std::optional<TensorOptions>& o) {
  const TensorOptions r = like(self, o);
  if (r.memory_format_opt() != MemoryFormat::ChannelsLast && !preserved_order(self, o, r))
    return full(self.sizes(), value, r);
  Tensor t = empty_like_impl(
      self, o ? std::optional<TensorOptions>(o->requires_grad(false)) : std::nullopt);
  return t.fill_(value).set_requires_grad(r.requires_grad());
}
}  // namespace
Tensor empty_like(const Tensor& self, std::optional<TensorOptions> o) {
  return empty_like_impl(self, o);
}
Tensor zeros_like(const Tensor& self, std::optional<TensorOptions> o) {
  return full_like_impl(self, 0, o);
}
Tensor ones_like(const Tensor& self, std::optional<TensorOptions> o) {
  return full_like_impl(self, 1, o);
}
Tensor full_like(const Tensor& self, const Scalar& value, std::optional<TensorOptions> o) {
  return full_like_impl(self, value, o);
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
Tensor expand_as(const Tensor& self, const Tensor& other) {
  return expand(self, other.sizes());
}
std::vector<Tensor> split(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(self, split_sizes, dim);
}

// ---- copy and cast ----------------------------------------------------------------------
Tensor to(const Tensor& self, const TensorOptions& options, bool copy) {
  const MemoryFormat format = options.memory_format_opt().value_or(MemoryFormat::Preserve);
  Tensor r = to(self, options.has_device() ? options.device() : self.device(),
                options.has_dtype() ? options.dtype() : self.dtype(),
                copy && format == MemoryFormat::Preserve);
  if (format == MemoryFormat::Preserve) return r;
  // The op keeps self's layout; a different one asked for is one more copy (or the only one).
  return copy && r.is_same(self) ? clone(r, format) : contiguous(r, format);
}
Tensor contiguous(const Tensor& self, MemoryFormat format) {
  XTEN_CHECK(format != MemoryFormat::Preserve, ValueError, "contiguous",
             "preserve_format is not a layout to make a tensor contiguous in; pass "
             "contiguous_format or channels_last");
  if (format == MemoryFormat::Contiguous) return contiguous(self);
  return self.is_contiguous(format) ? self : clone(self, format);
}
Tensor clone(const Tensor& self, MemoryFormat format) {
  if (format == MemoryFormat::Preserve) return clone(self);
  if (self.is_quantized()) {  // the copy shares the quantizer (docs/quantization.md)
    Tensor out = empty_tensor(self.sizes(), strides_for_format("clone", self.sizes(), format),
                              self.dtype(), self.device());
    out.impl()->set_quantizer(self.impl()->quantizer());
    return copy_(out, self);
  }
  Tensor out = empty(self.sizes(), self.options().memory_format(format));
  return copy_(out, self);
}
Tensor& zero_(Tensor& self) {
  return fill_(self, 0);
}

// ---- binary: Scalar overloads -----------------------------------------------------------
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add(self, scalar_to_tensor(other), alpha);
}
Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  return add_(self, scalar_to_tensor(other), alpha);
}
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha) {
  return sub(self, scalar_to_tensor(other), alpha);
}
Tensor& sub_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  return sub_(self, scalar_to_tensor(other), alpha);
}
#define XTEN_SCALAR_OVERLOAD(fn) \
  Tensor fn(const Tensor& self, const Scalar& other) { return fn(self, scalar_to_tensor(other)); }
#define XTEN_SCALAR_INPLACE_OVERLOAD(fn) \
  Tensor& fn(Tensor& self, const Scalar& other) { return fn(self, scalar_to_tensor(other)); }
XTEN_SCALAR_OVERLOAD(mul)
XTEN_SCALAR_INPLACE_OVERLOAD(mul_)
XTEN_SCALAR_OVERLOAD(div)
XTEN_SCALAR_INPLACE_OVERLOAD(div_)
XTEN_SCALAR_OVERLOAD(remainder)
XTEN_SCALAR_OVERLOAD(fmod)
XTEN_SCALAR_OVERLOAD(pow)
XTEN_SCALAR_INPLACE_OVERLOAD(pow_)
XTEN_SCALAR_OVERLOAD(eq)
XTEN_SCALAR_OVERLOAD(ne)
XTEN_SCALAR_OVERLOAD(lt)
XTEN_SCALAR_OVERLOAD(le)
XTEN_SCALAR_OVERLOAD(gt)
XTEN_SCALAR_OVERLOAD(ge)
#undef XTEN_SCALAR_OVERLOAD
#undef XTEN_SCALAR_INPLACE_OVERLOAD
Tensor pow(const Scalar& self, const Tensor& exponent) {
  return pow(scalar_to_tensor(self), exponent);
}
Tensor where(const Tensor& condition, const Scalar& self, const Scalar& other) {
  return where(condition, scalar_to_tensor(self), scalar_to_tensor(other));
}
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight) {
  return lerp(self, end, scalar_to_tensor(weight));
}

// ---- reductions -------------------------------------------------------------------------
Tensor sum(const Tensor& self, std::optional<ScalarType> dtype) {
  return sum(self, {}, false, dtype);
}
Tensor mean(const Tensor& self, std::optional<ScalarType> dtype) {
  return mean(self, {}, false, dtype);
}
Tensor prod(const Tensor& self, std::optional<ScalarType> dtype) {
  return ops::prod_dim_IntList::handle().call(self, {}, false, dtype);
}
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  return ops::prod_dim_IntList::handle().call(self, dim, keepdim, dtype);
}
Tensor norm(const Tensor& self, const std::string& p, IntArrayRef dim, bool keepdim) {
  XTEN_CHECK(p == "fro", ValueError, "norm", "p must be a number or 'fro', but got '{}'", p);
  return norm(self, 2, dim, keepdim);
}

// ---- convolution and pooling --------------------------------------------------------------
namespace {
// (a) -> (a, a): a one-value spatial argument applies to both dims.
DimVector pair_of(IntArrayRef v) {
  return v.size() == 1 ? DimVector{v[0], v[0]} : DimVector(v);
}
}  // namespace
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, const ConvPadding& padding, IntArrayRef dilation,
              int64_t groups) {
  if (padding.is_mode())
    return ops::conv2d_padding::handle().call(input, weight, bias, pair_of(stride), padding.mode(),
                                              pair_of(dilation), groups);
  return ops::conv2d::handle().call(input, weight, bias, pair_of(stride), pair_of(padding.values()),
                                    pair_of(dilation), groups);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
              IntArrayRef stride, const ConvPadding& padding, IntArrayRef dilation,
              int64_t groups) {
  if (padding.is_mode())
    return ops::conv1d_padding::handle().call(input, weight, bias, stride, padding.mode(), dilation,
                                              groups);
  return ops::conv1d::handle().call(input, weight, bias, stride, padding.values(), dilation,
                                    groups);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight,
                        const std::optional<Tensor>& bias, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  return ops::conv_transpose2d::handle().call(input, weight, bias, pair_of(stride),
                                              pair_of(padding), pair_of(output_padding), groups,
                                              pair_of(dilation));
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  return ops::adaptive_avg_pool2d::handle().call(input, pair_of(output_size));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return ops::adaptive_max_pool2d::handle().call(input, pair_of(output_size));
}

// ---- joining and indexing ---------------------------------------------------------------
// The lists are checked here too: with no tensor there is no device to dispatch on.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  XTEN_CHECK(!tensors.empty(), ValueError, "cat", "expected a non-empty list of tensors");
  return ops::cat::handle().call(tensors, dim);
}
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  XTEN_CHECK(!tensors.empty(), ValueError, "stack", "expected a non-empty list of tensors");
  return ops::stack::handle().call(tensors, dim);
}
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value) {
  return copy_(self, masked_fill(self, mask, value));
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
  Tensor out;
  {
    // Filled by the host, not by an op: while a graph is captured, the filled tensor is what the
    // graph reads, not an `empty` it would replay (Note [Host reads]).
    const ExcludeDispatchKeyGuard not_captured(DispatchKey::Capture);
    out = empty(sizes, scalar_type_of_v<T>, Device(kCPU));
  }
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
  detail::on_graph_break("manual_seed");  // Note [Host reads]
  manual_seed_all_generators(seed);
}

std::string dump_dispatch_table(const std::string& op) {
  return Dispatcher::singleton().dump_table(op.find("::") == std::string::npos ? "xten::" + op
                                                                               : op);
}

}  // namespace xten

// ---- the generated front ends -------------------------------------------------------------
// Defined with qualified names, so each must match its declaration in dispatch/ops.h.
// clang-format off
#define XTEN_FRONT_END(kind, name, id, schema, Ret, params, args) \
  XTEN_FRONT_END_##kind(name, id, Ret, params, args)
#define XTEN_FRONT_END_FN(name, id, Ret, params, args) \
  auto xten::name params -> Ret {                        \
    return ops::id::handle().call args;                \
  }
#define XTEN_FRONT_END_FN_M XTEN_FRONT_END_FN
#define XTEN_FRONT_END_FLOAT2 XTEN_FRONT_END_FN
#define XTEN_FRONT_END_FLOAT2_M XTEN_FRONT_END_FN
#define XTEN_FRONT_END_IN(name, id, Ret, params, args)   \
  auto xten::name(XTEN_INPLACE_PARAMS params) -> Tensor& { \
    ops::id::handle().call args;                         \
    return self;                                         \
  }
#define XTEN_FRONT_END_IN_M XTEN_FRONT_END_IN
#define XTEN_FRONT_END_CUSTOM(name, id, Ret, params, args)
// clang-format on
XTEN_FORALL_OPS(XTEN_FRONT_END)
