// Tensor methods and operators (declared in core/tensor.h): each forwards to the free
// function of dispatch/ops.h. The methods of ops in the op table are generated at the bottom
// (kinds FN_M and IN_M, dispatch/op_table.h); here are the others: overloads and item().
#include <xten/core/meta.h>
#include <xten/dispatch/op_handles.h>
#include <xten/dispatch/ops.h>

namespace xten {

// The quantized ops are declared by quantization/ (namespace quantized, docs/quantization.md).
Tensor Tensor::int_repr() const {
  static const auto op =
      Dispatcher::singleton().find("quantized::int_repr").typed<Tensor(const Tensor&)>();
  return op.call(*this);
}
Tensor Tensor::dequantize() const {
  static const auto op =
      Dispatcher::singleton().find("quantized::dequantize").typed<Tensor(const Tensor&)>();
  return op.call(*this);
}

Scalar Tensor::item() const {
  check_item("item");
  // (a Scalar argument the front end wrapped holds the program's own constant, which the graph
  // records as a constant: reading it back depends on no tensor value)
  if (!impl()->is_wrapped_number()) detail::on_graph_break("item");  // Note [Host reads]
  const Tensor host = is_cpu() ? *this : [this] {
    const ExcludeDispatchKeyGuard no_capture(DispatchKey::Capture);  // the read, not a graph op
    return to(Device(kCPU));                                         // a device copy synchronizes
  }();
  const void* p = host.data_ptr();
  switch (dtype()) {
    case kBool:
      return Scalar(*static_cast<const bool*>(p));
    case kByte:
      return Scalar(*static_cast<const uint8_t*>(p));
    case kChar:
      return Scalar(*static_cast<const int8_t*>(p));
    case kShort:
      return Scalar(*static_cast<const int16_t*>(p));
    case kInt:
      return Scalar(*static_cast<const int32_t*>(p));
    case kLong:
      return Scalar(*static_cast<const int64_t*>(p));
    case kHalf:
      return Scalar(*static_cast<const Half*>(p));
    case kBFloat16:
      return Scalar(*static_cast<const BFloat16*>(p));
    case kFloat:
      return Scalar(*static_cast<const float*>(p));
    case kDouble:
      return Scalar(*static_cast<const double*>(p));
    default:
      break;
  }
  XTEN_FAIL(TypeError, "item", "dtype {} has no scalar value", to_string(dtype()));
}

// views
Tensor Tensor::expand_as(const Tensor& o) const {
  return xten::expand_as(*this, o);
}
std::vector<Tensor> Tensor::split(IntArrayRef sizes, int64_t dim) const {
  return xten::split_with_sizes(*this, sizes, dim);
}

// copy and cast
Tensor Tensor::to(ScalarType dtype, bool copy) const {
  return xten::to(*this, TensorOptions(dtype), copy);
}
Tensor Tensor::to(Device device, bool copy) const {
  return xten::to(*this, TensorOptions(device), copy);
}
Tensor Tensor::to(const TensorOptions& o, bool copy) const {
  return xten::to(*this, o, copy);
}
Tensor Tensor::to(MemoryFormat format, bool copy) const {
  return xten::to(*this, TensorOptions().memory_format(format), copy);
}
Tensor Tensor::contiguous(MemoryFormat format) const {
  return xten::contiguous(*this, format);
}
Tensor Tensor::clone(MemoryFormat format) const {
  return xten::clone(*this, format);
}
Tensor& Tensor::zero_() {
  return xten::zero_(*this);
}

// binary
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return xten::add(*this, o, alpha);
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  return xten::add_(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return xten::sub(*this, o, alpha);
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) {
  return xten::sub_(*this, o, alpha);
}
Tensor Tensor::mul(const Scalar& o) const {
  return xten::mul(*this, o);
}
Tensor& Tensor::mul_(const Scalar& o) {
  return xten::mul_(*this, o);
}
Tensor Tensor::div(const Scalar& o) const {
  return xten::div(*this, o);
}
Tensor& Tensor::div_(const Scalar& o) {
  return xten::div_(*this, o);
}
Tensor Tensor::remainder(const Scalar& o) const {
  return xten::remainder(*this, o);
}
Tensor Tensor::fmod(const Scalar& o) const {
  return xten::fmod(*this, o);
}
Tensor Tensor::pow(const Scalar& e) const {
  return xten::pow(*this, e);
}
Tensor& Tensor::pow_(const Scalar& e) {
  return xten::pow_(*this, e);
}
Tensor Tensor::eq(const Scalar& o) const {
  return xten::eq(*this, o);
}
Tensor Tensor::ne(const Scalar& o) const {
  return xten::ne(*this, o);
}
Tensor Tensor::lt(const Scalar& o) const {
  return xten::lt(*this, o);
}
Tensor Tensor::le(const Scalar& o) const {
  return xten::le(*this, o);
}
Tensor Tensor::gt(const Scalar& o) const {
  return xten::gt(*this, o);
}
Tensor Tensor::ge(const Scalar& o) const {
  return xten::ge(*this, o);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const {
  return xten::lerp(*this, end, w);
}

// reductions
Tensor Tensor::sum(std::optional<ScalarType> dtype) const {
  return xten::sum(*this, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const {
  return xten::mean(*this, dtype);
}

Tensor Tensor::prod(std::optional<ScalarType> dtype) const {
  return xten::prod(*this, dtype);
}
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return xten::prod(*this, dim, keepdim, dtype);
}

// linear algebra, activations, indexing
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return xten::masked_fill_(*this, mask, value);
}

// operators
Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator+(const Tensor& a, const Scalar& b) {
  return add(a, b);
}
Tensor operator+(const Scalar& a, const Tensor& b) {
  return add(b, a);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator-(const Tensor& a, const Scalar& b) {
  return sub(a, b);
}
Tensor operator-(const Scalar& a, const Tensor& b) {
  return sub(scalar_to_tensor(a), b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator*(const Tensor& a, const Scalar& b) {
  return mul(a, b);
}
Tensor operator*(const Scalar& a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator/(const Tensor& a, const Scalar& b) {
  return div(a, b);
}
Tensor operator/(const Scalar& a, const Tensor& b) {
  return div(scalar_to_tensor(a), b);
}
Tensor operator==(const Tensor& a, const Tensor& b) {
  return eq(a, b);
}
Tensor operator==(const Tensor& a, const Scalar& b) {
  return eq(a, b);
}
Tensor operator!=(const Tensor& a, const Tensor& b) {
  return ne(a, b);
}
Tensor operator!=(const Tensor& a, const Scalar& b) {
  return ne(a, b);
}
Tensor operator<(const Tensor& a, const Tensor& b) {
  return lt(a, b);
}
Tensor operator<(const Tensor& a, const Scalar& b) {
  return lt(a, b);
}
Tensor operator<=(const Tensor& a, const Tensor& b) {
  return le(a, b);
}
Tensor operator<=(const Tensor& a, const Scalar& b) {
  return le(a, b);
}
Tensor operator>(const Tensor& a, const Tensor& b) {
  return gt(a, b);
}
Tensor operator>(const Tensor& a, const Scalar& b) {
  return gt(a, b);
}
Tensor operator>=(const Tensor& a, const Tensor& b) {
  return ge(a, b);
}
Tensor operator>=(const Tensor& a, const Scalar& b) {
  return ge(a, b);
}
Tensor operator&(const Tensor& a, const Tensor& b) {
  return bitwise_and(a, b);
}
Tensor operator|(const Tensor& a, const Tensor& b) {
  return bitwise_or(a, b);
}
Tensor operator^(const Tensor& a, const Tensor& b) {
  return bitwise_xor(a, b);
}

Tensor Tensor::operator[](int64_t index) const {
  XTEN_CHECK(defined(), ValueError, "operator[]", "the tensor is undefined");
  XTEN_CHECK(dim() > 0, IndexError, "operator[]",
             "a 0-dim tensor cannot be indexed (index {}); use item()", index);
  return select(0, index);
}
Tensor Tensor::operator[](const Scalar& index) const {
  XTEN_CHECK(index.is_integral(false), TypeError, "operator[]",
             "can only index tensors with integral scalars, got {}", index.to_string());
  return (*this)[index.to_long()];
}
Tensor Tensor::operator[](const Tensor& index) const {
  XTEN_CHECK(index.defined(), ValueError, "operator[]", "the index tensor is undefined");
  XTEN_CHECK(index.dim() == 0 && is_integral_type(index.dtype(), false), TypeError, "operator[]",
             "can only index with a 0-dim integral tensor, got dtype {} of shape {} (index() "
             "takes index tensors)",
             dtype_name(index.dtype()), index.sizes());
  return (*this)[index.item<int64_t>()];
}

}  // namespace xten

// ---- the generated methods --------------------------------------------------------------
// Defined with qualified names, so each must match its declaration in core/tensor.h.
// clang-format off
#define XTEN_METHOD(kind, name, id, schema, Ret, params, args) \
  XTEN_METHOD_##kind(name, Ret, params, args)
#define XTEN_METHOD_FN(name, Ret, params, args)
#define XTEN_METHOD_FLOAT2(name, Ret, params, args)
#define XTEN_METHOD_IN(name, Ret, params, args)
#define XTEN_METHOD_CUSTOM(name, Ret, params, args)
#define XTEN_METHOD_FN_M(name, Ret, params, args)              \
  auto xten::Tensor::name(XTEN_DROP_FIRST params) const -> Ret { \
    return xten::name(XTEN_THIS_AND_REST args);                \
  }
#define XTEN_METHOD_FLOAT2_M XTEN_METHOD_FN_M
#define XTEN_METHOD_IN_M(name, Ret, params, args)            \
  auto xten::Tensor::name(XTEN_DROP_FIRST params) -> Tensor& { \
    return xten::name(XTEN_THIS_AND_REST args);              \
  }
// clang-format on
XTEN_FORALL_OPS(XTEN_METHOD)
